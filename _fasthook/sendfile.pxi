# SendUserFile checks of the compiled hook: the C twin of
# aipager/policy/sendfile.py (check, check_file, _file_problem,
# refusal_text) and hookside._send_files.
#
# TWIN OF aipager/policy/sendfile.py:
#   sf_send_floor = send_floor
#   sf_requested = requested_files
#   sf_under = _under
#   sf_own_homes = own_homes
#   sf_other_home = _other_home
#   sf_check_file = check_file
#   sf_file_problem = _file_problem
#
# TWIN OF aipager/policy/hookside.py:
#   sf_send_files = _send_files
#
# Runs after pol_decide allowed the call, for every task (owner and
# terminal included).  Same order as Python: per file, per path form, the
# send floor, then other users' homes, then the secret-shaped names, then
# the task's no-access globs; then (a task not the owner's nor typed at the
# terminal) the resolved file must lie in the resolved cwd; then the file
# itself.  The reasons name the form or the name, never the glob, so only
# the set of globs matters here.  Declines (no effect yet) on what this
# side cannot spell exactly: non-ASCII or NUL in a path, the cwd or HOME
# (as written or resolved), an item that is neither a string nor
# null/true/false/an integer, a relative path without an absolute cwd, more
# than SF_MAX_FILES files, output over HOOK_OUT_CAP.

from posix.stat cimport stat

# sendfile.SECRET_NAMES and sendfile.SEND_GLOBS (floor.CREDENTIAL_PATHS +
# SYSTEM_SECRETS + SEND_ONLY) as JSON, and sendfile's REASON_* as printf
# formats: generated from the Python side by setup.py (write_generated).
cdef extern from "policy_literals.h":
    const char SF_SECRET_NAMES[]
    const char SF_SEND_GLOBS[]
    const char SF_REASON_PROTECTED[]
    const char SF_REASON_OTHER_HOME[]
    const char SF_REASON_SECRET_NAME[]
    const char SF_REASON_TASK_RULES[]
    const char SF_REASON_OUTSIDE[]
    const char SF_REASON_NO_FOLDER[]

cdef enum:
    SF_MAX_FILES = 256


cdef bint sf_glob_any(const PolList* globs, const char* subject) noexcept nogil:
    cdef int i
    for i in range(globs.n):
        if fnmatch(globs.items[i], subject, FNM_NOESCAPE) == 0:
            return True
    return False


cdef bint sf_secret_name(const char* name) noexcept nogil:
    cdef JSpan names
    cdef char glob[POL_PAT_CAP]
    cdef size_t pos = 0
    if js_parse(SF_SECRET_NAMES, strlen(SF_SECRET_NAMES), &names) < 0:
        return True  # cannot happen: a literal; stay on the safe side
    while pol_next_str(&names, &pos, glob, POL_PAT_CAP) == 1:
        if fnmatch(glob, name, FNM_NOESCAPE) == 0:
            return True
    return False


cdef int sf_send_floor(const HookCtx* ctx, const char* home, PolList* lists, PolList* globs) noexcept nogil:
    """sendfile.send_floor into globs (lists is scratch for the floor):
    0, or -1 to decline."""
    cdef JSpan extra
    cdef char item[POL_PAT_CAP]
    cdef size_t pos = 0
    cdef int i
    if pol_floor_lists(ctx, home, lists) < 0:
        return -1
    for i in range(lists[2].n):
        if pol_list_add(globs, lists[2].items[i], True) < 0:
            return -1
    if js_parse(SF_SEND_GLOBS, strlen(SF_SEND_GLOBS), &extra) < 0:
        return -1
    while pol_next_str(&extra, &pos, item, POL_PAT_CAP) == 1:
        if pol_glob_add(globs, item, home) < 0:
            return -1
    return 0


cdef int sf_forms(const char* value, const char* cwd, const char* home, char* lex, char* real,
                  const char** forms) noexcept nogil:
    """_match_py.path_forms (as pol_check_path builds them): how many, or -1."""
    cdef char full[PATH_CAP]
    cdef int n = 1
    if strlen(value) >= PATH_CAP or pol_expand(value, cwd, home, full) < 0:
        return -1
    if pol_collapse(full, lex, PATH_CAP) < 0 or pol_realpath_tail(full, real, PATH_CAP) < 0:
        return -1
    if not pol_ascii(real):
        return -1
    forms[0] = value
    if strcmp(lex, value) != 0:
        forms[n] = lex
        n += 1
    if strcmp(real, value) != 0 and strcmp(real, lex) != 0:
        forms[n] = real
        n += 1
    return n


cdef bint sf_under(const char* path, const char* folder) noexcept nogil:
    """sendfile._under: path is folder or lies in it."""
    cdef size_t n = strlen(folder)
    if strcmp(folder, "/") == 0:
        return True
    return strncmp(path, folder, n) == 0 and (path[n] == 0 or path[n] == c'/')


cdef int sf_own_homes(const char* home, char* lex, char* real, const char** homes) noexcept nogil:
    """sendfile.own_homes into homes (lex, real: PATH_CAP buffers): how
    many, or -1 to decline."""
    if home[0] != c'/':
        return 0
    if strlen(home) >= PATH_CAP or not pol_ascii(home) or pol_collapse(home, lex, PATH_CAP) < 0:
        return -1
    if pol_realpath_tail(lex, real, PATH_CAP) < 0 or not pol_ascii(real):
        return -1
    homes[0] = lex
    if strcmp(real, lex) == 0:
        return 1
    homes[1] = real
    return 2


cdef bint sf_other_home(const char* form, const char* const* homes, int nhomes) noexcept nogil:
    """sendfile._other_home: form lies in /root or /home/<name> but not in
    the user's own home."""
    cdef char root[PATH_CAP]
    cdef const char* cut
    cdef size_t n
    cdef int i
    if strcmp(form, "/root") == 0 or strncmp(form, "/root/", 6) == 0:
        n = 5
    elif strncmp(form, "/home/", 6) == 0:
        cut = strchr(form + 6, c'/')
        n = strlen(form) if cut == NULL else <size_t>(cut - form)
        if n == 6:
            return False  # "/home//x": its collapsed form is checked too
    else:
        return False
    # forms are shorter than PATH_CAP
    memcpy(root, form, n)
    root[n] = 0
    for i in range(nhomes):
        if sf_under(homes[i], root) and sf_under(form, homes[i]):
            return False
    return True


cdef int sf_check_file(const char* path, const char* cwd, const char* home, const char* folder,
                       const char* const* homes, int nhomes, const PolList* send_globs, const PolSnap* task,
                       Buf* files, Buf* text) noexcept nogil:
    """sendfile.check_file for one ASCII path: 0 may go, 1 refused (its
    record appended to files, its "path: reason" to text), -1 to decline.
    folder is cwd resolved ("" when cwd is not absolute), homes
    sendfile.own_homes(HOME): both computed once by the caller."""
    cdef char lex[PATH_CAP]
    cdef char real[PATH_CAP]
    cdef char reason[2 * PATH_CAP + 64]
    cdef const char* forms[3]
    cdef const char* code = NULL
    cdef const char* name
    cdef int n
    cdef int i
    cdef int r
    if path[0] == 0:
        code = "unchecked"
        snprintf(reason, sizeof(reason), "not a file path")
    else:
        n = sf_forms(path, cwd, home, lex, real, forms)
        if n < 0:
            return -1
        for i in range(n):
            if sf_glob_any(send_globs, forms[i]):
                code = "floor"
                snprintf(reason, sizeof(reason), SF_REASON_PROTECTED, forms[i])
                break
            if sf_other_home(forms[i], homes, nhomes):
                code = "floor"
                snprintf(reason, sizeof(reason), SF_REASON_OTHER_HOME, forms[i])
                break
            name = strrchr(forms[i], c'/')
            name = forms[i] if name == NULL else name + 1
            if sf_secret_name(name):
                code = "floor"
                snprintf(reason, sizeof(reason), SF_REASON_SECRET_NAME, name)
                break
            if task != NULL:
                r = pol_check_form(task, forms[i], &task.no_access, "%s%s", reason, sizeof(reason))
                if r == POL_DECLINE:
                    return -1
                if r == POL_DENY:
                    code = "turn_rules"
                    snprintf(reason, sizeof(reason), SF_REASON_TASK_RULES, forms[i])
                    break
        if code == NULL and task != NULL:
            # the resolved file, in the session's folder resolved
            if folder[0] == 0:
                code = "outside"
                snprintf(reason, sizeof(reason), "%s", SF_REASON_NO_FOLDER)
            elif not sf_under(forms[n - 1], folder):
                code = "outside"
                snprintf(reason, sizeof(reason), SF_REASON_OUTSIDE, forms[n - 1], folder)
        if code == NULL:
            # sendfile._file_problem on the last form
            code = sf_file_problem(forms[n - 1], reason, sizeof(reason))
            if code == NULL:
                return 0
    sf_record(files, text, path, code, reason)
    return 1


cdef const char* sf_file_problem(const char* real, char* reason, size_t cap) noexcept nogil:
    """sendfile._file_problem: the code (reason filled), or NULL when the
    file may go."""
    cdef struct_stat st
    cdef const char* code
    cdef const char* why
    if stat(real, &st) != 0:
        code = "missing"
        why = "the file does not exist"
    elif not S_ISREG(st.st_mode):
        code = "not_file"
        why = "not a regular file"
    elif st.st_nlink > 1:
        code = "hard_link"
        why = "the file has other hard links"
    elif st.st_size == 0:
        code = "empty"
        why = "the file is empty"
    elif st.st_size > SENDFILE_MAX_BYTES:
        code = "too_big"
        why = "larger than 50 MB"
    elif access(real, R_OK) != 0:
        code = "unreadable"
        why = "the file cannot be read"
    else:
        return NULL
    snprintf(reason, cap, "%s", why)
    return code


cdef void sf_record(Buf* files, Buf* text, const char* path, const char* code, const char* reason) noexcept nogil:
    """One refused file: {"path","code","reason"} and "path: reason"."""
    if files.n:
        buf_add(files, ",", 1)
        buf_add(text, "; ", 2)
    buf_adds(files, "{\"path\":")
    pk_json_text(files, path, strlen(path))
    buf_adds(files, ",\"code\":\"")
    buf_adds(files, code)
    buf_adds(files, "\",\"reason\":")
    pk_json_text(files, reason, strlen(reason))
    buf_adds(files, "}")
    buf_adds(text, path if path[0] else <const char*>"(none)")
    buf_adds(text, ": ")
    buf_adds(text, reason)


cdef int sf_item_path(const JSpan* item, char* dst, size_t cap, int* usable) noexcept nogil:
    """One requested path: an ASCII string (usable=1), or str() of null,
    true, false or an integer (usable=0: "not a file path"); -1 to decline."""
    cdef long k
    usable[0] = 0
    if item.kind == JS_STRING:
        k = js_decode_cstr(item, dst, cap)
        if k < 0 or not pol_ascii(dst):
            return -1
        usable[0] = k > 0
        return 0
    if item.kind == JS_NULL:
        snprintf(dst, cap, "None")
    elif item.kind == JS_TRUE:
        snprintf(dst, cap, "True")
    elif item.kind == JS_FALSE:
        snprintf(dst, cap, "False")
    elif item.n < cap and pk_int_token(item):
        memcpy(dst, item.p, item.n)
        dst[item.n] = 0
    else:
        return -1
    return 0


cdef void sf_path_of(JSpan* item) noexcept nogil:
    """An object item stands for item.get("path", item.get("file_path"))."""
    cdef JSpan sub
    if item.kind != JS_OBJECT:
        return
    if js_find_key(item, "path", 4, &sub) != 1 and js_find_key(item, "file_path", 9, &sub) != 1:
        sub.kind = JS_NULL
    item[0] = sub


cdef int sf_requested(const JSpan* tin, JSpan* items, int* n) noexcept nogil:
    """sendfile.requested_files as value spans (an object item gives its
    "path", else its "file_path", else null): 0, or -1 to decline."""
    cdef const char* keys[5]
    cdef JSpan v
    cdef JSpan item
    cdef size_t pos
    cdef int k
    cdef int r
    keys[0] = "files"
    keys[1] = "paths"
    keys[2] = "file_paths"
    keys[3] = "file_path"
    keys[4] = "path"
    n[0] = 0
    if tin.kind != JS_OBJECT:
        return -1
    for k in range(5):
        r = js_find_key(tin, keys[k], strlen(keys[k]), &v)
        if r < 0:
            return -1
        if r == 0 or v.kind == JS_NULL:
            continue
        if k >= 3 or v.kind != JS_ARRAY:
            item = v
            if k < 3:
                sf_path_of(&item)
            if n[0] >= SF_MAX_FILES:
                return -1
            items[n[0]] = item
            n[0] += 1
            continue
        pos = 0
        while True:
            r = js_array_next(&v, &pos, &item)
            if r < 0:
                return -1
            if r == 0:
                break
            sf_path_of(&item)
            if n[0] >= SF_MAX_FILES:
                return -1
            items[n[0]] = item
            n[0] += 1
    return 0


cdef int sf_send_files(const HookCtx* ctx, const PolSnap* s, const char* home, HookOut* out) noexcept nogil:
    """hookside._send_files: STEP_OK (every file may go), STEP_PRINT (the
    refusal printed, send_files_refused sent) or STEP_DECLINE."""
    cdef PolList lists[POL_NKEYS]
    cdef PolList globs
    cdef JSpan tin
    cdef JSpan v
    cdef JSpan* items
    cdef char cwd[PATH_CAP]
    cdef char folder[PATH_CAP]
    cdef char home_lex[PATH_CAP]
    cdef char home_real[PATH_CAP]
    cdef const char* homes[2]
    cdef int nhomes
    cdef char path[PATH_CAP]
    cdef Buf files
    cdef Buf text
    cdef Buf msg
    cdef Buf printed
    cdef int n = 0
    cdef int refused = 0
    cdef int usable
    cdef int i
    cdef int r = 0
    cwd[0] = 0
    if js_find_key(&ctx.top, "cwd", 3, &v) == 1 and v.kind == JS_STRING:
        if js_decode_cstr(&v, cwd, PATH_CAP) < 0 or not pol_ascii(cwd):
            return STEP_DECLINE
    if js_find_key(&ctx.top, "tool_input", 10, &tin) != 1:
        return STEP_DECLINE
    # sendfile.check_file's folder (cwd resolved) and own_homes, once
    folder[0] = 0
    if cwd[0] == c'/' and (pol_realpath_tail(cwd, folder, PATH_CAP) < 0 or not pol_ascii(folder)):
        return STEP_DECLINE
    nhomes = sf_own_homes(home, home_lex, home_real, homes)
    if nhomes < 0:
        return STEP_DECLINE
    items = <JSpan*>malloc(SF_MAX_FILES * sizeof(JSpan))
    if items == NULL:
        return STEP_DECLINE
    files.p = text.p = msg.p = printed.p = NULL
    files.n = text.n = msg.n = printed.n = 0
    files.cap = text.cap = msg.cap = printed.cap = 0
    files.oom = text.oom = msg.oom = printed.oom = 0
    globs.n = 0
    for i in range(POL_NKEYS):
        lists[i].n = -1 if i == 0 else 0
    if sf_requested(&tin, items, &n) < 0 or sf_send_floor(ctx, home, lists, &globs) < 0:
        r = -1
    if r == 0 and n == 0:
        sf_record(&files, &text, "", "unchecked", "no file named")
        refused = 1
    for i in range(n):
        if r < 0:
            break
        r = sf_item_path(&items[i], path, PATH_CAP, &usable)
        if r < 0:
            break
        if not usable:
            sf_record(&files, &text, path, "unchecked", "not a file path")
            refused += 1
            continue
        r = sf_check_file(path, cwd, home, folder, homes, nhomes, &globs,
                          NULL if (s.terminal or s.exempt) else s, &files, &text)
        if r > 0:
            refused += 1
            r = 0
    if r == 0 and refused:
        buf_adds(&msg, "{\"hook_event_name\":\"")
        buf_adds(&msg, WIRE_SEND_FILES_REFUSED)
        buf_adds(&msg, "\",\"session\":")
        pk_json_text(&msg, ctx.session, strlen(ctx.session))
        buf_adds(&msg, ",\"tool_use_id\":")
        r = pk_canon_key(&msg, &ctx.top, "tool_use_id")
        buf_adds(&msg, ",\"files\":[")
        buf_add(&msg, files.p, files.n)
        buf_adds(&msg, "]}")
        # sendfile.refusal_text, as hookside.deny_output prints it
        buf_adds(&printed, "{\"hookSpecificOutput\":{\"hookEventName\":\"PreToolUse\","
                           "\"permissionDecision\":\"deny\",\"permissionDecisionReason\":")
        sf_json_prefixed(&printed, "aipager will not send this file: " if refused == 1
                         else "aipager will not send these files: ", text.p, text.n)
        buf_adds(&printed, "}}")
        if msg.oom or printed.oom or printed.n > HOOK_OUT_CAP:
            r = -1
    free(items)
    pol_lists_free(lists)
    for i in range(globs.n):
        free(globs.items[i])
    if r == 0 and refused:
        memcpy(out.buf, printed.p, printed.n)
        out.len = printed.n
        out.exit_code = 0
        ctx.send(ctx.send_state, msg.p, msg.n)
    buf_free(&files)
    buf_free(&text)
    buf_free(&msg)
    buf_free(&printed)
    if r < 0:
        out.reason = "policy: SendUserFile needs the Python twin"
        return STEP_DECLINE
    return STEP_PRINT if refused else STEP_OK


cdef void sf_json_prefixed(Buf* b, const char* head, const char* text, size_t n) noexcept nogil:
    """A JSON string of head + text[0:n]."""
    cdef Buf joined
    joined.p = NULL
    joined.n = joined.cap = 0
    joined.oom = 0
    buf_adds(&joined, head)
    if n:
        buf_add(&joined, text, n)
    if joined.oom:
        b.oom = 1
    else:
        pk_json_text(b, joined.p, joined.n)
    buf_free(&joined)
