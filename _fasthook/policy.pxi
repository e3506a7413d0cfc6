# Policy steps of the compiled hook: the C twin of aipager/policy/hookside.py.
#
# SEAM (stub: both steps return STEP_OK until the safety-policy issue fills
# them in).  For every event of a session aipager started, hook.pyx runs
#
#     r = policy_before(&ctx, &out)   # may ctx.send() own datagrams first
#     forward the event               # never for PreModelSwitch
#     r = policy_after(&ctx, &out)    # e.g. the PreToolUse decision
#     write(1, out.buf, out.len); exit(out.exit_code)
#
# Inputs (HookCtx, hookctx.pxi): raw/raw_len (stdin bytes, NUL-terminated),
# top (the parsed top-level object: use json.pxi's js_find_key /
# js_find_path / js_decode_cstr / js_array_next on it), event, session,
# session_dir, control_dir, envp, debug, send(send_state, buf, n).
# Output (HookOut): buf/len (stdout), exit_code, reason (for declines).
#
# Return STEP_OK, STEP_PRINT (out filled; the last PRINT wins) or
# STEP_DECLINE.  DECLINE hands the event to the Python twin:
# - from policy_before: nothing has been forwarded; stage 2 runs the whole
#   hook (before_forward, forward, after_forward) in Python;
# - from policy_after: the event was already forwarded; stage 2 runs
#   after_forward only (hookpy gets --forwarded), so it is never sent twice.
# Decline whenever a field is present but cannot be handled exactly (NUL,
# non-ASCII subject, rule outside the portable dialect, unreadable policy):
# never fail open.  Steps must not have side effects before they decline.
#
# Rules for code here: `noexcept nogil`, C types only, no module-level state
# (module init never runs in the ELF), constants as C literals; every
# reachable CPython symbol breaks the no-libpython link (that is the guard).
#
# Fail-closed seam: hook.pyx calls policy_fail_exit(&ctx) to pick the exit
# code when stage 2 cannot be started or the input is unusable; it returns 0
# here, the safety issue makes it 2 for PreToolUse.

cdef int policy_before(HookCtx* ctx, HookOut* out) noexcept nogil:
    return STEP_OK


cdef int policy_after(HookCtx* ctx, HookOut* out) noexcept nogil:
    return STEP_OK


cdef int policy_fail_exit(const char* event) noexcept nogil:
    """Exit code when the hook cannot run its steps (event may be NULL)."""
    return 0
