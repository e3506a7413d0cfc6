# The structs the hook hands to its policy steps (see hookside.pxi for the seam).
#
# Shared by hook.pyx (the glibc-only ELF) and policy_ext.pyx (the importable
# extension aipager._policy_c used for differential tests), so it must stay
# plain C types: no Python objects, nothing set at module init.

cdef enum:
    # the step is done; carry on (nothing added to stdout)
    STEP_OK = 0
    # the step filled HookOut (stdout text and/or exit code); carry on, the
    # hook prints HookOut at the end -- the last step that returns PRINT wins
    STEP_PRINT = 1
    # the step cannot decide here: hand the event to the Python twin
    # (stage 2).  From policy_before nothing has happened yet; from
    # policy_after the event WAS forwarded, and stage 2 runs after_forward only.
    STEP_DECLINE = 2

    # room for a step's stdout (a decision JSON, extra context)
    HOOK_OUT_CAP = 65536

ctypedef int (*hook_send_fn)(void* state, const char* buf, size_t n) noexcept nogil

ctypedef struct HookCtx:
    # the event exactly as read from stdin, NUL-terminated after raw_len
    const char* raw
    size_t raw_len
    # the parsed top-level object (a span into raw; see json.pxi)
    JSpan top
    # hook_event_name (from the JSON, else $HOOK_EVENT for AX Code)
    const char* event
    # validated CLAUDE_DTACH_SESSION, e.g. "claude-jim"
    const char* session
    # paths.session_dir / paths.control_dir (no trailing slash)
    const char* session_dir
    const char* control_dir
    # the process environment (getenv works too; this is for completeness)
    char** envp
    # 1 when AIPAGER_DEBUG=1: a step may write diagnostics to fd 2
    int debug
    # send one extra datagram (a complete JSON object) to the daemon; never
    # blocks; spools when the daemon's queue is full.  0 sent/spooled, -1 lost.
    hook_send_fn send
    void* send_state

ctypedef struct HookOut:
    # what the hook prints on stdout at the end (not NUL-terminated)
    char buf[HOOK_OUT_CAP]
    size_t len
    # the hook's exit code (2 = Claude Code's refusal for PreToolUse)
    int exit_code
    # a static string naming why a step declined (AIPAGER_DEBUG output only)
    const char* reason
