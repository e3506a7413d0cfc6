# Policy steps of the compiled hook: the C twin of aipager/policy/hookside.py
# and aipager/policy/_match_py.py.
#
# TWINS: pol_decide follows _match_py.decide statement by statement (same
# order of checks, same reason strings, same constants).  A change to one
# lands in the other in the same commit; tests/cases/policy_cases.json and
# tests/policy/test_fuzz_twins.py hold them together.  Where this side cannot
# be exact it DECLINES and the Python twin decides: a byte >= 0x80 or a NUL
# in any subject or rule, a rule glibc will not compile, a snapshot of an
# unusual shape, a published floor file beyond the built-in commands or
# with non-ASCII strings; and in the steps of their own files what they
# cannot read exactly: SendUserFile (sendfile.pxi), the prompt's notes
# (pickup.pxi), PreModelSwitch's marker (marker.pxi).
# Cost: regcomp dominates, so a command regex is only compiled when the
# subject holds one of its required literals (the snapshot's
# commands_needles, computed by dialect.required_literals; same prefilter in
# _match_py.may_match).
#
# SEAM.  For every event of a session aipager started, hook.pyx runs
#
#     r = policy_before(&ctx, &out)   # may ctx.send() own datagrams first
#     forward the event               # never for PreModelSwitch
#     r = policy_after(&ctx, &out)    # e.g. the PreToolUse decision
#     write(1, out.buf, out.len); exit(out.exit_code)
#
# Inputs (HookCtx, hookctx.pxi): raw/raw_len, top (json.pxi span), event,
# session, session_dir, control_dir, envp, debug, send(send_state, buf, n).
# Output (HookOut): buf/len (stdout), exit_code, reason (for declines).
# A payload no step can use that may be a PreToolUse (forward.pxi unusable:
# $HOOK_EVENT or "hook_event_name": "PreToolUse" in the raw bytes) goes to
# policy_unusable(&ctx, &out) instead, with ctx.top unusable (kind JS_NONE).
# Return STEP_OK, STEP_PRINT (out filled) or STEP_DECLINE.  A decline from
# policy_before runs the whole hook in Python; from policy_after only
# after_forward (the event was already forwarded).  Steps have no side
# effects before they decline.
#
# Rules for code here: `noexcept nogil`, C types only, no module-level state
# (module init never runs in the ELF), constants as C literals; every
# reachable CPython symbol breaks the no-libpython link (that is the guard).

cdef extern from "<dirent.h>" nogil:
    ctypedef struct DIR:
        pass
    struct dirent:
        char d_name[256]
    DIR* opendir(const char* name)
    dirent* readdir(DIR* d)
    int closedir(DIR* d)
from libc.string cimport strrchr, strncmp, strstr
from posix.stat cimport lstat, fchmod
from posix.unistd cimport getuid

cdef extern from "<string.h>" nogil:
    void* memmem(const void* hay, size_t hn, const void* needle, size_t nn)

cdef extern from "<regex.h>" nogil:
    ctypedef struct regex_t:
        pass
    ctypedef struct regmatch_t:
        pass
    enum:
        REG_EXTENDED
        REG_NOSUB
        REG_ICASE
    int regcomp(regex_t* preg, const char* regex, int cflags)
    int regexec(const regex_t* preg, const char* string, size_t nmatch, regmatch_t* pmatch, int eflags)
    void regfree(regex_t* preg)

cdef extern from "<fnmatch.h>" nogil:
    enum:
        FNM_NOESCAPE
    int fnmatch(const char* pattern, const char* string, int flags)

cdef extern from "<stdlib.h>" nogil:
    char* realpath(const char* path, char* resolved)

cdef extern from "<stdio.h>" nogil:
    int rename(const char* oldpath, const char* newpath)

# The literals this file shares with the Python policy, generated from it by setup.py
# (write_generated): _match_py.REASON_HALTED, hookside.SAFETY_PREFIX and REASON_UNUSABLE,
# floor.FLOOR_COMMANDS and their needles (floor.KNOWN_NEEDLES) as JSON -- the floor's
# command part, which no env changes.
cdef extern from "policy_literals.h":
    const char POL_REASON_HALTED[]
    const char POL_SAFETY_PREFIX[]
    const char POL_REASON_UNUSABLE[]
    const char POL_FLOOR_COMMANDS[]
    const char POL_FLOOR_NEEDLES[]

cdef enum:
    POL_ALLOW = 0
    POL_DENY = 1
    POL_DECLINE = 2
    # longest rule string (dialect.MAX_PATTERN is 1024)
    POL_PAT_CAP = 4096
    POL_REASON_CAP = 16384
    POL_TOOL_CAP = 256
    # snapshot.MAX_READ
    POL_MAX_SNAPSHOT = 1048576
    POL_MAX_COMPS = 2048
    # rule-set lists of the floor (built-in + published) this side builds
    POL_FLOOR_ITEMS = 1024
    POL_NKEYS = 6

ctypedef struct PolList:
    # decoded ASCII strings (malloc'd); n < 0: the list is null (allowed_tools)
    int n
    char* items[POL_FLOOR_ITEMS]

ctypedef struct PolSnap:
    int halted
    int terminal
    int exempt
    int has_allowed
    JSpan allowed
    JSpan denied
    JSpan no_access
    JSpan no_write
    JSpan commands
    JSpan commands_i
    # _match_py.may_match prefilters, aligned with commands / commands_i;
    # kind JS_NONE when absent or not aligned (then every regex runs)
    JSpan needles
    JSpan needles_i


# --- small helpers -----------------------------------------------------------

cdef bint pol_ascii(const char* s) noexcept nogil:
    """True when s has no byte >= 0x80 (the exactness guard)."""
    cdef const unsigned char* p = <const unsigned char*>s
    while p[0]:
        if p[0] >= 0x80:
            return False
        p += 1
    return True


cdef void pol_lower(const char* s, char* dst) noexcept nogil:
    """_match_py.ascii_lower."""
    while s[0]:
        dst[0] = <char>(s[0] + 32) if (s[0] >= c'A' and s[0] <= c'Z') else s[0]
        s += 1
        dst += 1
    dst[0] = 0


cdef bint pol_in(const char* s, const char* const* items, int n) noexcept nogil:
    cdef int i
    for i in range(n):
        if strcmp(s, items[i]) == 0:
            return True
    return False


cdef bint pol_is_write_tool(const char* tool) noexcept nogil:
    """_match_py.WRITE_TOOLS."""
    cdef const char* items[5]
    items[0] = "write"
    items[1] = "edit"
    items[2] = "multiedit"
    items[3] = "notebookedit"
    items[4] = "apply_patch"
    return pol_in(tool, items, 5)


cdef bint pol_is_search_tool(const char* tool) noexcept nogil:
    """_match_py.SEARCH_TOOLS."""
    cdef const char* items[4]
    items[0] = "glob"
    items[1] = "grep"
    items[2] = "ls"
    items[3] = "list"
    return pol_in(tool, items, 4)


cdef const char* pol_path_key(int i) noexcept nogil:
    """_match_py.PATH_KEYS[i], NULL past the end."""
    if i == 0:
        return "file_path"
    if i == 1:
        return "filePath"
    if i == 2:
        return "notebook_path"
    if i == 3:
        return "path"
    return NULL


cdef int pol_next_str(const JSpan* arr, size_t* pos, char* buf, size_t cap) noexcept nogil:
    """Next item of a string array, decoded: 1, 0 at the end, -1 not usable here."""
    cdef JSpan item
    cdef int r = js_array_next(arr, pos, &item)
    if r <= 0:
        return r
    if item.kind != JS_STRING or js_decode_cstr(&item, buf, cap) < 0 or not pol_ascii(buf):
        return -1
    return 1


cdef int pol_list_check(const JSpan* arr) noexcept nogil:
    """0 when every item is an ASCII string this side can use, else -1."""
    cdef char buf[POL_PAT_CAP]
    cdef size_t pos = 0
    cdef int r
    while True:
        r = pol_next_str(arr, &pos, buf, POL_PAT_CAP)
        if r <= 0:
            return r


cdef int pol_list_has(const JSpan* arr, const char* s) noexcept nogil:
    """1 when s is an item of the (checked) string array, 0 if not, -1 bad."""
    cdef char buf[POL_PAT_CAP]
    cdef size_t pos = 0
    cdef int r
    while True:
        r = pol_next_str(arr, &pos, buf, POL_PAT_CAP)
        if r <= 0:
            return r
        if strcmp(buf, s) == 0:
            return 1


cdef int pol_reason(char* reason, size_t cap, const char* fmt, const char* a, const char* b) noexcept nogil:
    """snprintf a deny reason: POL_DENY, or POL_DECLINE if it would not fit."""
    cdef int k = snprintf(reason, cap, fmt, a, b)
    if k < 0 or <size_t>k >= cap:
        return POL_DECLINE
    return POL_DENY


# --- snapshot ----------------------------------------------------------------

cdef int pol_list_field(const JSpan* top, const char* key, JSpan* out) noexcept nogil:
    if js_find_key(top, key, strlen(key), out) != 1 or out.kind != JS_ARRAY:
        return -1
    return pol_list_check(out)


cdef int pol_snap_load(const JSpan* top, PolSnap* s) noexcept nogil:
    """snapshot.normalise: 0 when usable here, -1 to decline."""
    cdef JSpan v
    cdef double d
    cdef char buf[POL_PAT_CAP]
    cdef long k
    if top.kind != JS_OBJECT:
        return -1
    if js_find_key(top, "v", 1, &v) != 1 or js_to_double(&v, &d) != 0 or d != 1.0:
        return -1
    if js_find_key(top, "origin", 6, &v) != 1 or v.kind != JS_STRING:
        return -1
    s.terminal = js_string_eq(&v, "terminal", 8)
    if not (s.terminal or js_string_eq(&v, "telegram", 8) or js_string_eq(&v, "unattributed", 12)):
        return -1
    if js_find_key(top, "exempt", 6, &v) != 1 or (v.kind != JS_TRUE and v.kind != JS_FALSE):
        return -1
    s.exempt = v.kind == JS_TRUE
    s.halted = 0
    k = js_find_key(top, "halted", 6, &v)
    if k < 0:
        return -1
    if k == 1 and v.kind != JS_NULL:
        if v.kind != JS_STRING:
            return -1
        k = js_decode(&v, buf, POL_PAT_CAP)
        if k < 0:
            return -1
        s.halted = k > 0
    k = js_find_key(top, "allowed_tools", 13, &s.allowed)
    if k < 0:
        return -1
    s.has_allowed = 0
    if k == 1 and s.allowed.kind != JS_NULL:
        if s.allowed.kind != JS_ARRAY or pol_list_check(&s.allowed) < 0:
            return -1
        s.has_allowed = 1
    if (pol_list_field(top, "denied_tools", &s.denied) < 0
            or pol_list_field(top, "no_access", &s.no_access) < 0
            or pol_list_field(top, "no_write", &s.no_write) < 0
            or pol_list_field(top, "commands", &s.commands) < 0
            or pol_list_field(top, "commands_i", &s.commands_i) < 0):
        return -1
    pol_needles_field(top, "commands_needles", &s.commands, &s.needles)
    pol_needles_field(top, "commands_i_needles", &s.commands_i, &s.needles_i)
    return 0


cdef long pol_count(const JSpan* arr) noexcept nogil:
    cdef size_t pos = 0
    cdef JSpan item
    cdef long n = 0
    cdef int r
    while True:
        r = js_array_next(arr, &pos, &item)
        if r < 0:
            return -1
        if r == 0:
            return n
        n += 1


cdef void pol_needles_field(const JSpan* top, const char* key, const JSpan* pats, JSpan* out) noexcept nogil:
    """The needles array when it is aligned with pats, else kind JS_NONE."""
    if (js_find_key(top, key, strlen(key), out) != 1 or out.kind != JS_ARRAY
            or pol_count(out) != pol_count(pats)):
        out.kind = JS_NONE


# --- paths -------------------------------------------------------------------

cdef int pol_collapse(const char* src, char* dst, size_t cap) noexcept nogil:
    """_match_py.collapse: 0, or -1 when it does not fit."""
    cdef size_t n = strlen(src)
    cdef size_t i = 0
    cdef size_t o = 0
    cdef size_t start
    cdef size_t k
    while i < n:
        while i < n and src[i] == c'/':
            i += 1
        start = i
        while i < n and src[i] != c'/':
            i += 1
        k = i - start
        if k == 0:
            break
        if k == 1 and src[start] == c'.':
            continue
        if k == 2 and src[start] == c'.' and src[start + 1] == c'.':
            while o > 0 and dst[o - 1] != c'/':
                o -= 1
            if o > 0:
                o -= 1
            continue
        if o + 1 + k + 1 > cap:
            return -1
        dst[o] = c'/'
        memcpy(dst + o + 1, src + start, k)
        o += 1 + k
    if o == 0:
        dst[0] = c'/'
        o = 1
    dst[o] = 0
    return 0


cdef int pol_realpath_tail(const char* path, char* dst, size_t cap) noexcept nogil:
    """_match_py.realpath_tail: resolve the longest existing prefix (kernel
    symlink semantics), apply the rest lexically.  0, or -1 to decline."""
    cdef size_t starts[POL_MAX_COMPS]
    cdef size_t lens[POL_MAX_COMPS]
    cdef int count = 0
    cdef size_t n = strlen(path)
    cdef size_t i = 0
    cdef size_t o
    cdef int k
    cdef int j
    cdef char head[PATH_CAP]
    cdef char real[PATH_CAP]
    cdef char joined[PATH_CAP]
    while i < n:
        while i < n and path[i] == c'/':
            i += 1
        if i >= n:
            break
        if count >= POL_MAX_COMPS:
            return -1
        starts[count] = i
        while i < n and path[i] != c'/':
            i += 1
        lens[count] = i - starts[count]
        count += 1
    k = count
    while k >= 0:
        o = 0
        head[0] = c'/'
        o = 1
        for j in range(k):
            if o + lens[j] + 2 > PATH_CAP:
                return -1
            if j > 0:
                head[o] = c'/'
                o += 1
            memcpy(head + o, path + starts[j], lens[j])
            o += lens[j]
        head[o] = 0
        if realpath(head, real) != NULL:
            o = strlen(real)
            if o + 1 >= PATH_CAP:
                return -1
            memcpy(joined, real, o)
            joined[o] = c'/'
            o += 1
            for j in range(k, count):
                if o + lens[j] + 2 > PATH_CAP:
                    return -1
                if j > k:
                    joined[o] = c'/'
                    o += 1
                memcpy(joined + o, path + starts[j], lens[j])
                o += lens[j]
            joined[o] = 0
            return pol_collapse(joined, dst, cap)
        k -= 1
    return pol_collapse(path, dst, cap)


cdef void pol_literal_prefix(const char* glob, char* dst) noexcept nogil:
    """_match_py.literal_prefix (dst has room for strlen(glob) + 1)."""
    while glob[0] and glob[0] != c'*' and glob[0] != c'?' and glob[0] != c'[':
        dst[0] = glob[0]
        dst += 1
        glob += 1
    dst[0] = 0


cdef void pol_glob_dir(const char* pattern, char* dst) noexcept nogil:
    """_match_py.glob_dir."""
    cdef size_t k
    cdef char* cut
    if not (pattern[0] == c'/' or strcmp(pattern, "~") == 0
            or (pattern[0] == c'~' and pattern[1] == c'/')):
        dst[0] = 0
        return
    pol_literal_prefix(pattern, dst)
    cut = strrchr(dst, c'/')
    if cut != NULL:
        cut[1] = 0


cdef int pol_prefix_cwd(char* dst, const char* cwd) noexcept nogil:
    """dst = cwd + "/" + dst, in place: 0, or -1 when it does not fit."""
    cdef size_t lc = strlen(cwd)
    cdef size_t ld = strlen(dst)
    if lc + 1 + ld + 1 > PATH_CAP:
        return -1
    memmove(dst + lc + 1, dst, ld + 1)
    memcpy(dst, cwd, lc)
    dst[lc] = c'/'
    return 0


cdef int pol_expand(const char* path, const char* cwd, const char* home, char* dst) noexcept nogil:
    """_match_py.expand into dst[PATH_CAP]: 0, -1 to decline (BadInput or too long)."""
    cdef int k
    if home[0] and (strcmp(path, "~") == 0 or (path[0] == c'~' and path[1] == c'/')):
        k = snprintf(dst, PATH_CAP, "%s%s", home, path + 1)
    else:
        k = snprintf(dst, PATH_CAP, "%s", path)
    if k < 0 or k >= PATH_CAP:
        return -1
    if dst[0] != c'/':
        if cwd[0] != c'/':
            return -1
        return pol_prefix_cwd(dst, cwd)
    return 0


cdef int pol_check_form(const PolSnap* s, const char* form, const JSpan* globs,
                        const char* fmt, char* reason, size_t cap) noexcept nogil:
    cdef char glob[POL_PAT_CAP]
    cdef size_t pos = 0
    cdef int r
    while True:
        r = pol_next_str(globs, &pos, glob, POL_PAT_CAP)
        if r < 0:
            return POL_DECLINE
        if r == 0:
            return POL_ALLOW
        if fnmatch(glob, form, FNM_NOESCAPE) == 0:
            return pol_reason(reason, cap, fmt, form, glob)


cdef int pol_check_search(const PolSnap* s, const char* form, char* reason, size_t cap) noexcept nogil:
    cdef char glob[POL_PAT_CAP]
    cdef char lit[POL_PAT_CAP]
    cdef char root[PATH_CAP + 1]
    cdef size_t pos = 0
    cdef size_t n = strlen(form)
    cdef int r
    memcpy(root, form, n + 1)
    if n == 0 or form[n - 1] != c'/':
        root[n] = c'/'
        root[n + 1] = 0
        n += 1
    while True:
        r = pol_next_str(&s.no_access, &pos, glob, POL_PAT_CAP)
        if r < 0:
            return POL_DECLINE
        if r == 0:
            return POL_ALLOW
        pol_literal_prefix(glob, lit)
        if strncmp(lit, root, n) == 0:
            return pol_reason(reason, cap, "searching %s would reach protected %s", form, glob)


cdef int pol_check_path(const PolSnap* s, const char* value, const char* cwd, const char* home,
                        bint write, bint search, char* reason, size_t cap) noexcept nogil:
    """_match_py.check_path for a decoded ASCII value."""
    cdef char full[PATH_CAP]
    cdef char lex[PATH_CAP]
    cdef char real[PATH_CAP]
    cdef const char* forms[3]
    cdef int nforms = 1
    cdef int i
    cdef int r
    if strlen(value) >= PATH_CAP:
        return POL_DECLINE
    if pol_expand(value, cwd, home, full) < 0:
        return POL_DECLINE
    if pol_collapse(full, lex, PATH_CAP) < 0 or pol_realpath_tail(full, real, PATH_CAP) < 0:
        return POL_DECLINE
    if not pol_ascii(real):
        return POL_DECLINE  # a symlink led somewhere this side cannot judge
    forms[0] = value
    if strcmp(lex, value) != 0:
        forms[nforms] = lex
        nforms += 1
    if strcmp(real, value) != 0 and strcmp(real, lex) != 0:
        forms[nforms] = real
        nforms += 1
    for i in range(nforms):
        r = pol_check_form(s, forms[i], &s.no_access, "%s is protected (no access: %s)", reason, cap)
        if r != POL_ALLOW:
            return r
    if write:
        for i in range(nforms):
            r = pol_check_form(s, forms[i], &s.no_write,
                               "%s is read-only for this task (no write: %s)", reason, cap)
            if r != POL_ALLOW:
                return r
    if search:
        for i in range(nforms):
            r = pol_check_search(s, forms[i], reason, cap)
            if r != POL_ALLOW:
                return r
    return POL_ALLOW


# --- commands ----------------------------------------------------------------

cdef bint pol_may_match(const JSpan* need, const char* subject) noexcept nogil:
    """_match_py.may_match: False only when subject holds none of the needles."""
    cdef char buf[POL_PAT_CAP]
    cdef size_t pos = 0
    cdef int r
    cdef bint any_item = False
    if need.kind != JS_ARRAY:
        return True
    while True:
        r = pol_next_str(need, &pos, buf, POL_PAT_CAP)
        if r < 0:
            return True
        if r == 0:
            return not any_item
        any_item = True
        if buf[0] == 0 or strstr(subject, buf) != NULL:
            return True


cdef int pol_regex_list(const JSpan* pats, const JSpan* needles, int icase, const char* raw,
                        const char* stripped, const char* raw_f, const char* stripped_f,
                        char* reason, size_t cap) noexcept nogil:
    cdef char pat[POL_PAT_CAP]
    cdef regex_t rx
    cdef size_t pos = 0
    cdef size_t npos = 0
    cdef JSpan need
    cdef int r
    cdef int hit
    cdef bint try_raw
    cdef bint try_stripped
    while True:
        r = pol_next_str(pats, &pos, pat, POL_PAT_CAP)
        if r < 0:
            return POL_DECLINE
        if r == 0:
            return POL_ALLOW
        need.kind = JS_NONE
        if needles.kind == JS_ARRAY and js_array_next(needles, &npos, &need) != 1:
            need.kind = JS_NONE
        try_raw = pol_may_match(&need, raw_f if icase else raw)
        try_stripped = stripped != NULL and pol_may_match(&need, stripped_f if icase else stripped)
        if not try_raw and not try_stripped:
            continue
        if regcomp(&rx, pat, REG_EXTENDED | REG_NOSUB | (REG_ICASE if icase else 0)) != 0:
            return POL_DECLINE
        hit = try_raw and regexec(&rx, raw, 0, NULL, 0) == 0
        if not hit and try_stripped:
            hit = regexec(&rx, stripped, 0, NULL, 0) == 0
        regfree(&rx)
        if hit:
            return pol_reason(reason, cap, "command matches denied pattern %s%s", pat, "")


cdef int pol_check_command(const PolSnap* s, const JSpan* cmd, char* reason, size_t cap) noexcept nogil:
    """_match_py.check_command for a JSON string span."""
    cdef size_t n = cmd.n + 1
    cdef char* mem = <char*>malloc(4 * n)
    cdef char* raw = mem
    cdef char* stripped = mem + n
    cdef char* raw_f = mem + 2 * n
    cdef char* stripped_f = mem + 3 * n
    cdef size_t i
    cdef size_t o = 0
    cdef int r = POL_DECLINE
    if mem == NULL:
        return POL_DECLINE
    if js_decode_cstr(cmd, raw, n) >= 0 and pol_ascii(raw):
        i = 0
        while raw[i]:
            if raw[i] != c'"' and raw[i] != c"'" and raw[i] != c'\\':
                stripped[o] = raw[i]
                o += 1
            i += 1
        stripped[o] = 0
        pol_lower(raw, raw_f)
        pol_lower(stripped, stripped_f)
        r = pol_regex_list(&s.commands, &s.needles, 0, raw, stripped if o != i else NULL,
                           raw_f, stripped_f, reason, cap)
        if r == POL_ALLOW:
            r = pol_regex_list(&s.commands_i, &s.needles_i, 1, raw, stripped if o != i else NULL,
                               raw_f, stripped_f, reason, cap)
    free(mem)
    return r


# --- the decision ------------------------------------------------------------

cdef int pol_decide(const PolSnap* s, const JSpan* event, const char* home,
                    char* reason, size_t cap) noexcept nogil:
    """_match_py.decide: POL_ALLOW, POL_DENY (reason filled) or POL_DECLINE."""
    cdef JSpan v
    cdef JSpan tin
    cdef char tool_name[POL_TOOL_CAP]
    cdef char tool[POL_TOOL_CAP]
    cdef char cwd[PATH_CAP]
    cdef char value[PATH_CAP]
    cdef char gdir[PATH_CAP]
    cdef bint search
    cdef bint write
    cdef bint seen = False
    cdef int i
    cdef int r
    cdef const char* key
    if s.halted:
        return pol_reason(reason, cap, "%s%s", POL_REASON_HALTED, "")
    if s.terminal or s.exempt:
        return POL_ALLOW
    if js_find_key(event, "tool_name", 9, &v) != 1 or v.kind != JS_STRING:
        return POL_DECLINE
    if js_decode_cstr(&v, tool_name, POL_TOOL_CAP) < 0 or not pol_ascii(tool_name):
        return POL_DECLINE
    if js_find_key(event, "tool_input", 10, &tin) != 1 or tin.kind != JS_OBJECT:
        return POL_DECLINE
    if not pol_ascii(home):
        return POL_DECLINE
    pol_lower(tool_name, tool)
    if s.has_allowed:
        r = pol_list_has(&s.allowed, tool)
        if r < 0:
            return POL_DECLINE
        if r == 0:
            return pol_reason(reason, cap, "tool %s is not allowed for this task%s", tool_name, "")
    r = pol_list_has(&s.denied, tool)
    if r < 0:
        return POL_DECLINE
    if r == 1:
        return pol_reason(reason, cap, "tool %s is denied for this task%s", tool_name, "")
    if strcmp(tool, "apply_patch") == 0:
        # _match_py.PATCH_TOOL: parsing the patch envelope is Python-only
        return POL_DECLINE
    search = pol_is_search_tool(tool)
    write = pol_is_write_tool(tool)
    cwd[0] = 0
    r = js_find_key(event, "cwd", 3, &v)
    if r < 0:
        return POL_DECLINE
    if r == 1 and v.kind == JS_STRING:
        if js_decode_cstr(&v, cwd, PATH_CAP) < 0 or not pol_ascii(cwd):
            return POL_DECLINE
    for i in range(4):
        key = pol_path_key(i)
        r = js_find_key(&tin, key, strlen(key), &v)
        if r < 0:
            return POL_DECLINE
        if r == 0 or v.kind == JS_NULL:
            continue
        seen = True
        if v.kind != JS_STRING or js_decode_cstr(&v, value, PATH_CAP) < 0 or not pol_ascii(value):
            return POL_DECLINE
        r = pol_check_path(s, value, cwd, home, write, search, reason, cap)
        if r != POL_ALLOW:
            return r
    if search and not seen:
        r = pol_check_path(s, cwd, cwd, home, write, True, reason, cap)
        if r != POL_ALLOW:
            return r
    if strcmp(tool, "glob") == 0:
        r = js_find_key(&tin, "pattern", 7, &v)
        if r < 0:
            return POL_DECLINE
        if r == 1 and v.kind == JS_STRING:
            if js_decode_cstr(&v, value, PATH_CAP) < 0 or not pol_ascii(value):
                return POL_DECLINE
            pol_glob_dir(value, gdir)
            if gdir[0]:
                r = pol_check_path(s, gdir, cwd, home, write, True, reason, cap)
                if r != POL_ALLOW:
                    return r
    r = js_find_key(&tin, "command", 7, &v)
    if r < 0:
        return POL_DECLINE
    if r == 1 and v.kind != JS_NULL:
        if v.kind != JS_STRING:
            return POL_DECLINE
        r = pol_check_command(s, &v, reason, cap)
        if r != POL_ALLOW:
            return r
    return POL_ALLOW


# --- output ------------------------------------------------------------------

cdef long pol_json_str(const char* s, char* dst, size_t cap) noexcept nogil:
    """A quoted JSON string as json.dumps (ensure_ascii) writes it; length or -1."""
    cdef size_t o = 0
    cdef unsigned char c
    cdef int k
    if cap < 3:
        return -1
    dst[o] = c'"'
    o += 1
    while s[0]:
        c = <unsigned char>s[0]
        if o + 8 >= cap:
            return -1
        if c == c'"' or c == c'\\':
            dst[o] = c'\\'
            dst[o + 1] = <char>c
            o += 2
        elif c == c'\n':
            memcpy(dst + o, "\\n", 2)
            o += 2
        elif c == c'\r':
            memcpy(dst + o, "\\r", 2)
            o += 2
        elif c == c'\t':
            memcpy(dst + o, "\\t", 2)
            o += 2
        elif c == 8:
            memcpy(dst + o, "\\b", 2)
            o += 2
        elif c == 12:
            memcpy(dst + o, "\\f", 2)
            o += 2
        elif c < 0x20 or c >= 0x7f:
            k = snprintf(dst + o, cap - o, "\\u%04x", <unsigned int>c)
            if k != 6:
                return -1
            o += 6
        else:
            dst[o] = <char>c
            o += 1
        s += 1
    dst[o] = c'"'
    o += 1
    dst[o] = 0
    return <long>o


cdef int pol_snapshot_path(const HookCtx* ctx, char* dst) noexcept nogil:
    """paths.policy_file."""
    cdef int k = snprintf(dst, PATH_CAP, "%s/claude-policy-%s.json", ctx.session_dir, ctx.session)
    return 0 if 0 < k < PATH_CAP else -1


cdef long pol_read_own(const char* path, char* buf, size_t cap) noexcept nogil:
    """_fsio.read_own into buf (NUL-terminated): length, -1 absent, -2 unusable."""
    cdef int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
    cdef struct_stat st
    cdef size_t n = 0
    cdef ssize_t r
    if fd < 0:
        return -1 if errno == ENOENT else -2
    if fstat(fd, &st) != 0 or not S_ISREG(st.st_mode) or st.st_uid != geteuid() or <size_t>st.st_size >= cap:
        close(fd)
        return -2
    while n < cap - 1:
        r = read(fd, buf + n, cap - 1 - n)
        if r < 0:
            if errno == EINTR:
                continue
            close(fd)
            return -2
        if r == 0:
            break
        n += <size_t>r
    close(fd)
    if n >= cap - 1:
        return -2
    buf[n] = 0
    return <long>n


cdef void pol_record_halt(const char* path, const char* snap, size_t n, const char* reason) noexcept nogil:
    """snapshot.record_halt for a snapshot that starts with '{' and has no "halted"."""
    cdef char tmp[PATH_CAP]
    cdef char esc[POL_REASON_CAP * 6 + 3]
    cdef long elen = pol_json_str(reason, esc, sizeof(esc))
    cdef int fd
    cdef int k
    while n > 0 and js_ws(<unsigned char>snap[n - 1]):
        n -= 1
    if elen < 0 or n < 2 or snap[n - 1] != c'}':
        return
    n -= 1
    while n > 0 and js_ws(<unsigned char>snap[n - 1]):
        n -= 1
    k = snprintf(tmp, PATH_CAP, "%s.tmp%d-c", path, <int>getpid())
    if k < 0 or k >= PATH_CAP:
        return
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
    if fd < 0:
        return
    write_all(fd, snap, n)
    if snap[n - 1] != c'{':
        write_all(fd, ",", 1)
    write_all(fd, "\"halted\":", 9)
    write_all(fd, esc, <size_t>elen)
    write_all(fd, "}", 1)
    close(fd)
    if rename(tmp, path) != 0:
        unlink(tmp)


cdef int pol_deny_out(HookOut* out, const char* reason) noexcept nogil:
    """hookside.deny_output(SAFETY_PREFIX + reason) into out; 0 or -1."""
    cdef char full[POL_REASON_CAP + 64]
    cdef char esc[HOOK_OUT_CAP]
    cdef long elen
    cdef int k
    snprintf(full, sizeof(full), "%s%s", POL_SAFETY_PREFIX, reason)
    elen = pol_json_str(full, esc, sizeof(esc))
    if elen < 0:
        return -1
    k = snprintf(out.buf, HOOK_OUT_CAP,
                 "{\"hookSpecificOutput\":{\"hookEventName\":\"PreToolUse\","
                 "\"permissionDecision\":\"deny\",\"permissionDecisionReason\":%s}}", esc)
    if k < 0 or k >= HOOK_OUT_CAP:
        return -1
    out.len = <size_t>k
    out.exit_code = 0
    return 0


cdef void pol_send_blocked(const HookCtx* ctx, const char* tool, const char* reason) noexcept nogil:
    """The safety_blocked datagram, keys in hookside's order."""
    cdef char esc_session[1024]
    cdef char esc_tool[POL_TOOL_CAP * 6 + 3]
    cdef char esc_reason[POL_REASON_CAP * 6 + 3]
    cdef char* msg
    cdef size_t cap
    cdef int k
    if (pol_json_str(ctx.session, esc_session, sizeof(esc_session)) < 0
            or pol_json_str(tool, esc_tool, sizeof(esc_tool)) < 0
            or pol_json_str(reason, esc_reason, sizeof(esc_reason)) < 0):
        return
    cap = strlen(esc_session) + strlen(esc_tool) + strlen(esc_reason) + 128
    msg = <char*>malloc(cap)
    if msg == NULL:
        return
    k = snprintf(msg, cap, "{\"hook_event_name\":\"safety_blocked\",\"session\":%s,\"tool\":%s,\"reason\":%s}",
                 esc_session, esc_tool, esc_reason)
    if 0 < k < <int>cap:
        ctx.send(ctx.send_state, msg, <size_t>k)
    free(msg)


# --- the steps ---------------------------------------------------------------

cdef int pol_notes_state(const HookCtx* ctx) noexcept nogil:
    """notes.outstanding: 1 some *.json in the session's notes folder, 0 none
    (or no folder, or a file in its place), -1 the folder cannot be read."""
    cdef char path[PATH_CAP]
    cdef DIR* d
    cdef dirent* e
    cdef size_t k
    cdef int found = 0
    cdef int n = snprintf(path, PATH_CAP, "%s/claude-notes-%s", ctx.session_dir, ctx.session)
    if n < 0 or n >= PATH_CAP:
        return -1
    d = opendir(path)
    if d == NULL:
        # not a folder (a file another aipager version left): no notes, as
        # listdir's NotADirectoryError is to Python
        return 0 if errno == ENOENT or errno == ENOTDIR else -1
    while True:
        e = readdir(d)
        if e == NULL:
            break
        k = strlen(e.d_name)
        if k >= 5 and strcmp(e.d_name + k - 5, ".json") == 0:
            found = 1
            break
    closedir(d)
    return found


cdef bint pol_notes_outstanding(const HookCtx* ctx) noexcept nogil:
    """notes.outstanding (an unreadable folder holds none, as in Python)."""
    return pol_notes_state(ctx) == 1


cdef void pol_clear_mark(const HookCtx* ctx) noexcept nogil:
    """snapshot.clear_mark (paths.task_mark)."""
    cdef char path[PATH_CAP]
    if pol_mark_path(ctx, path) == 0:
        unlink(path)


cdef long pol_load(const char* path, char* snap, JSpan* top, PolSnap* s) noexcept nogil:
    """Read the snapshot into snap[POL_MAX_SNAPSHOT + 1] and load it: its
    length when usable here, -1 absent, -2 not our own regular file (Python
    reads both the same way), -3 not usable here (decline)."""
    cdef long n = pol_read_own(path, snap, POL_MAX_SNAPSHOT + 1)
    if n < 0:
        return n
    if snap[0] == c'{' and js_parse(snap, <size_t>n, top) == 0 and pol_snap_load(top, s) == 0:
        return n
    return -3


cdef int pol_mark_path(const HookCtx* ctx, char* dst) noexcept nogil:
    """paths.task_mark."""
    cdef int k = snprintf(dst, PATH_CAP, "%s/claude-policy-%s.open", ctx.session_dir, ctx.session)
    return 0 if 0 < k < PATH_CAP else -1


cdef int pol_write_atomic(const char* path, const char* data, size_t n) noexcept nogil:
    """_fsio.write_atomic (mode 0600): 0, or -1 with nothing left behind."""
    cdef char tmp[PATH_CAP]
    cdef timespec ts
    cdef ssize_t w
    cdef int fd
    cdef int ok = 1
    clock_gettime(CLOCK_REALTIME, &ts)
    fd = snprintf(tmp, PATH_CAP, "%s.tmp%d-c%09ld", path, <int>getpid(), <long>ts.tv_nsec)
    if fd < 0 or fd >= PATH_CAP:
        return -1
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
    if fd < 0:
        return -1
    while n > 0 and ok:
        w = write(fd, data, n)
        if w < 0:
            ok = errno == EINTR
            continue
        data += w
        n -= <size_t>w
    ok = ok and fchmod(fd, 0o600) == 0
    close(fd)
    if not ok or rename(tmp, path) != 0:
        unlink(tmp)
        return -1
    return 0


cdef int pol_prompt_kind(const JSpan* top) noexcept nogil:
    """1 a <task-notification> prompt (notes.TASK_NOTIFICATION after leading
    whitespace), 0 another prompt, -1 decline: no string prompt, or its first
    character after ASCII whitespace is not ASCII (it may be a space to
    Python's lstrip)."""
    cdef JSpan v
    cdef char* buf
    cdef long k
    cdef long i = 0
    cdef int r = -1
    if js_find_key(top, "prompt", 6, &v) != 1 or v.kind != JS_STRING:
        return -1
    buf = <char*>malloc(v.n + 1)
    if buf == NULL:
        return -1
    k = js_decode(&v, buf, v.n + 1)
    if k >= 0:
        while i < k and <unsigned char>buf[i] < 0x80 and pk_space(<unsigned char>buf[i]):
            i += 1
        if i == k or <unsigned char>buf[i] < 0x80:
            r = 1 if k - i >= 19 and memcmp(buf + i, "<task-notification>", 19) == 0 else 0
    free(buf)
    return r


cdef int pol_prompt_submitted(const HookCtx* ctx, HookOut* out) noexcept nogil:
    """hookside.prompt_submitted: a <task-notification> (the same task goes
    on: the mark only); a prompt while no note is outstanding (typed at the
    terminal: the terminal snapshot and the mark, no queue_pickup, no extra
    context); with notes outstanding, pk_prompt_with_notes (pickup.pxi).
    Declines when anything is unusual.  A failed write drops the snapshot
    (hookside.before_forward: the floor applies) and the event goes on."""
    cdef char snap_path[PATH_CAP]
    cdef char mark_path[PATH_CAP]
    cdef char doc[512]
    cdef char stamp[64]
    cdef timespec ts
    cdef struct_stat st
    cdef JSpan top
    cdef PolSnap s
    cdef char* snap
    cdef long n
    cdef int k
    cdef int kind = pol_prompt_kind(&ctx.top)
    out.reason = "policy: unusual prompt"
    if kind < 0 or pol_snapshot_path(ctx, snap_path) < 0 or pol_mark_path(ctx, mark_path) < 0:
        return STEP_DECLINE
    if kind == 0:
        out.reason = "policy: the notes folder cannot be read"
        k = pol_notes_state(ctx)
        if k < 0:
            return STEP_DECLINE
        if k == 1:
            # a chat message's note is outstanding: pickup.pxi
            return pk_prompt_with_notes(ctx, out, snap_path, mark_path)
        if lstat(mark_path, &st) == 0:
            # an open task: the terminal prompt joins it (hookside.joined);
            # only a terminal task (or none readable) gives the terminal rules
            out.reason = "policy: the prompt joins an open task"
            snap = <char*>malloc(POL_MAX_SNAPSHOT + 1)
            if snap == NULL:
                return STEP_DECLINE
            n = pol_load(snap_path, snap, &top, &s)
            free(snap)
            if n == -3 or (n >= 0 and not s.terminal):
                return STEP_DECLINE
    clock_gettime(CLOCK_REALTIME, &ts)
    snprintf(stamp, sizeof(stamp), "%ld.%06ld", <long>ts.tv_sec, <long>(ts.tv_nsec // 1000))
    if kind == 0:
        # snapshot.make("terminal", False, rules.empty()), keys in its order
        k = snprintf(doc, sizeof(doc),
                     "{\"v\":1,\"origin\":\"terminal\",\"exempt\":false,\"allowed_tools\":null,"
                     "\"denied_tools\":[],\"no_access\":[],\"no_write\":[],\"commands\":[],"
                     "\"commands_i\":[],\"commands_needles\":[],\"commands_i_needles\":[],"
                     "\"authors\":[],\"written_at\":%s}", stamp)
        if k < 0 or <size_t>k >= sizeof(doc) or pol_write_atomic(snap_path, doc, <size_t>k) < 0:
            unlink(snap_path)
            return STEP_OK
    k = snprintf(doc, sizeof(doc), "%s\n", stamp)
    if pol_write_atomic(mark_path, doc, <size_t>k) < 0:
        unlink(snap_path)
    return STEP_OK


cdef int policy_before(HookCtx* ctx, HookOut* out) noexcept nogil:
    """hookside.before_forward."""
    cdef JSpan v
    if strcmp(ctx.event, "UserPromptSubmit") == 0:
        return pol_prompt_submitted(ctx, out)
    if strcmp(ctx.event, "PreModelSwitch") == 0:
        return mk_model_switch(ctx, out)
    if strcmp(ctx.event, "Stop") == 0 or strcmp(ctx.event, "StopFailure") == 0:
        if not pol_notes_outstanding(ctx):
            pol_clear_mark(ctx)
        return STEP_OK
    if strcmp(ctx.event, "SessionStart") == 0:
        if js_find_key(&ctx.top, "source", 6, &v) == 1 and (
                js_string_eq(&v, "startup", 7) or js_string_eq(&v, "clear", 5)):
            pol_clear_mark(ctx)
    return STEP_OK



# --- the floor, when no task was recorded ------------------------------------
#
# hookside.current_rules without a snapshot: snapshot.for_floor(
# floor.load_floor(env)) -- the built-in floor (floor.builtin_floor) made
# stricter by the file the daemon publishes (paths.floor_file; missing,
# foreign or corrupt: built-in only).  Built here as snapshot JSON, then read
# like any snapshot.  Declines when the published file holds what this side
# cannot reproduce: non-ASCII or NUL strings, commands beyond the built-in
# ones (their needles need the dialect parser), odd JSON.

cdef const char* pol_rule_key(int i) noexcept nogil:
    """rules.RULE_KEYS[i]."""
    if i == 0:
        return "allowed_tools"
    if i == 1:
        return "denied_tools"
    if i == 2:
        return "no_access"
    if i == 3:
        return "no_write"
    if i == 4:
        return "commands"
    return "commands_i"


cdef void pol_lists_free(PolList* lists) noexcept nogil:
    cdef int k
    cdef int i
    for k in range(POL_NKEYS):
        for i in range(lists[k].n):
            free(lists[k].items[i])
        lists[k].n = -1 if k == 0 else 0


cdef int pol_list_add(PolList* l, const char* s, bint unique) noexcept nogil:
    """Append a copy of s (skipped when unique and present): 0, or -1."""
    cdef int i
    cdef size_t k = strlen(s)
    if l.n < 0:
        l.n = 0
    if unique:
        for i in range(l.n):
            if strcmp(l.items[i], s) == 0:
                return 0
    if l.n >= POL_FLOOR_ITEMS:
        return -1
    l.items[l.n] = <char*>malloc(k + 1)
    if l.items[l.n] == NULL:
        return -1
    memcpy(l.items[l.n], s, k + 1)
    l.n += 1
    return 0


cdef int pol_glob_add(PolList* l, const char* glob, const char* home) noexcept nogil:
    """floor.expand_all for one glob (rules.expand_glob): 0, or -1."""
    cdef char g[PATH_CAP]
    cdef size_t h = strlen(home)
    cdef size_t n
    cdef int k
    if h and (strcmp(glob, "~") == 0 or (glob[0] == c'~' and glob[1] == c'/')):
        while h > 0 and home[h - 1] == c'/':
            h -= 1
        k = snprintf(g, PATH_CAP, "%.*s%s", <int>h, home, glob + 1)
    else:
        k = snprintf(g, PATH_CAP, "%s", glob)
    if k < 0 or k >= PATH_CAP:
        return -1
    n = <size_t>k
    if n > 3 and strcmp(g + n - 3, "/**") == 0:
        g[n - 3] = 0
        if pol_list_add(l, g, True) < 0:
            return -1
        g[n - 3] = c'/'
        g[n - 1] = 0
    return pol_list_add(l, g, True)


cdef int pol_xdg_glob(PolList* l, const char* var, const char* dflt, const char* home) noexcept nogil:
    """paths.config_dir / state_dir / data_dir + "/**", expanded."""
    cdef char base[PATH_CAP]
    cdef char dir_[PATH_CAP]
    cdef const char* v = getenv(var)
    if v != NULL and v[0] == c'/':
        if path_copy(base, PATH_CAP, v) < 0:
            return -1
    elif path_join(base, PATH_CAP, home, dflt) < 0:
        return -1
    if path_join(dir_, PATH_CAP, base, "aipager") < 0 or path_join(base, PATH_CAP, dir_, "**") < 0:
        return -1
    return pol_glob_add(l, base, home)


cdef int pol_builtin_floor(const HookCtx* ctx, const char* home, PolList* lists) noexcept nogil:
    """floor.builtin_floor without its commands: 0, or -1 to decline."""
    cdef char g[PATH_CAP]
    cdef const char* kinds[7]
    cdef const char* folders[2]
    cdef int f
    cdef int i
    kinds[0] = "policy"
    kinds[1] = "notes"
    kinds[2] = "status"
    kinds[3] = "reply"
    kinds[4] = "dtach"
    kinds[5] = "bgjob"
    kinds[6] = "exit"
    folders[0] = ctx.session_dir
    folders[1] = "/tmp"
    if (pol_glob_add(&lists[2], "~/.claude/**", home) < 0
            or pol_glob_add(&lists[2], "~/.claude.json*", home) < 0
            or pol_xdg_glob(&lists[2], "XDG_CONFIG_HOME", ".config", home) < 0
            or pol_xdg_glob(&lists[2], "XDG_STATE_HOME", ".local/state", home) < 0
            or pol_xdg_glob(&lists[2], "XDG_DATA_HOME", ".local/share", home) < 0):
        return -1
    for f in range(2):
        if f == 1 and strcmp(folders[0], folders[1]) == 0:
            break
        for i in range(7):
            if snprintf(g, PATH_CAP, "%s/claude-%s-*", folders[f], kinds[i]) >= PATH_CAP:
                return -1
            if pol_glob_add(&lists[2], g, home) < 0:
                return -1
    if snprintf(g, PATH_CAP, "%s/aipager*", ctx.control_dir) >= PATH_CAP or pol_glob_add(&lists[2], g, home) < 0:
        return -1
    if pol_glob_add(&lists[3], "*/.claude/**", home) < 0 or pol_glob_add(&lists[3], "*/.mcp.json", home) < 0:
        return -1
    return 0


cdef int pol_strings_shape(const JSpan* arr) noexcept nogil:
    """rules._strings: 1 a list of strings, 0 not."""
    cdef size_t pos = 0
    cdef JSpan item
    cdef int r
    if arr.kind != JS_ARRAY:
        return 0
    while True:
        r = js_array_next(arr, &pos, &item)
        if r < 0:
            return 0
        if r == 0:
            return 1
        if item.kind != JS_STRING:
            return 0


cdef int pol_published_floor(const HookCtx* ctx, PolList* lists) noexcept nogil:
    """floor.load_floor's merge of paths.floor_file into lists (built-in):
    0 merged or ignored (as Python ignores it), -1 to decline."""
    cdef char path[PATH_CAP]
    cdef JSpan top
    cdef JSpan v
    cdef double d
    cdef char* data
    cdef long n
    cdef int r
    cdef int builtin_commands = lists[4].n
    if snprintf(path, PATH_CAP, "%s/claude-policy-.floor-%d.json", ctx.session_dir, <int>getuid()) >= PATH_CAP:
        return -1
    data = <char*>malloc(POL_MAX_SNAPSHOT + 1)
    if data == NULL:
        return -1
    n = pol_read_own(path, data, POL_MAX_SNAPSHOT + 1)
    r = 0
    if n >= 0:
        r = -1
        if js_parse(data, <size_t>n, &top) == 0:
            r = 0
            if top.kind == JS_OBJECT and js_find_key(&top, "v", 1, &v) == 1:
                if v.kind == JS_TRUE:
                    r = -1  # True == 1 in Python
                elif js_to_double(&v, &d) == 0 and d == 1.0:
                    r = pol_merge_published(&top, lists, builtin_commands)
    free(data)
    return r


cdef int pol_merge_published(const JSpan* top, PolList* lists, int builtin_commands) noexcept nogil:
    """rules.check_shape then rules.stricter(built-in, published): 0 or -1."""
    cdef char item[POL_PAT_CAP]
    cdef JSpan rules_
    cdef JSpan v[POL_NKEYS]
    cdef size_t pos
    cdef int k
    cdef int r
    if js_find_key(top, "rules", 5, &rules_) != 1 or rules_.kind != JS_OBJECT:
        return 0
    for k in range(POL_NKEYS):
        r = js_find_key(&rules_, pol_rule_key(k), strlen(pol_rule_key(k)), &v[k])
        if r < 0:
            return -1
        if r == 0:
            v[k].kind = JS_NULL
        if k == 0 and v[k].kind == JS_NULL:
            continue
        if not pol_strings_shape(&v[k]):
            return 0  # not a rule set: Python keeps the built-in floor
    for k in range(POL_NKEYS):
        if v[k].kind == JS_NULL:
            continue
        if k == 0:
            lists[0].n = 0  # built-in allows any tool: the published list, as is
        pos = 0
        while True:
            r = pol_next_str(&v[k], &pos, item, POL_PAT_CAP)
            if r < 0:
                return -1
            if r == 0:
                break
            if pol_list_add(&lists[k], item, k != 0) < 0:
                return -1
    # commands beyond the built-in ones need the dialect parser's needles
    return -1 if lists[4].n != builtin_commands or lists[5].n != 0 else 0


cdef int pol_add_list_json(Buf* b, const PolList* l) noexcept nogil:
    cdef char esc[POL_PAT_CAP * 6 + 3]
    cdef int i
    if l.n < 0:
        buf_adds(b, "null")
        return 0
    buf_adds(b, "[")
    for i in range(l.n):
        if pol_json_str(l.items[i], esc, sizeof(esc)) < 0:
            return -1
        if i:
            buf_adds(b, ",")
        buf_adds(b, esc)
    buf_adds(b, "]")
    return 0


cdef int pol_floor_lists(const HookCtx* ctx, const char* home, PolList* lists) noexcept nogil:
    """floor.load_floor(env) as lists (initialised here; the caller frees
    them even on failure): 0, or -1 to decline."""
    cdef JSpan cmds
    cdef char item[POL_PAT_CAP]
    cdef size_t pos = 0
    cdef int k
    cdef int i
    for k in range(POL_NKEYS):
        lists[k].n = -1 if k == 0 else 0
    if js_parse(POL_FLOOR_COMMANDS, strlen(POL_FLOOR_COMMANDS), &cmds) < 0:
        return -1
    while pol_next_str(&cmds, &pos, item, POL_PAT_CAP) == 1:
        if pol_list_add(&lists[4], item, True) < 0:
            return -1
    if pol_builtin_floor(ctx, home, lists) < 0 or pol_published_floor(ctx, lists) < 0:
        return -1
    # HOME or a folder from the environment may hold non-ASCII bytes, which
    # pol_json_str cannot write as Python does
    for k in range(POL_NKEYS):
        for i in range(lists[k].n):
            if not pol_ascii(lists[k].items[i]):
                return -1
    return 0


cdef int pol_floor_doc(const HookCtx* ctx, const char* home, Buf* b) noexcept nogil:
    """snapshot.for_floor(floor.load_floor(env)) as JSON text in b: 0, or -1."""
    cdef PolList lists[POL_NKEYS]
    cdef char stamp[64]
    cdef timespec ts
    cdef int k
    cdef int r = -1
    if pol_floor_lists(ctx, home, lists) == 0:
        clock_gettime(CLOCK_REALTIME, &ts)
        snprintf(stamp, sizeof(stamp), "%ld.%06ld", <long>ts.tv_sec, <long>(ts.tv_nsec // 1000))
        buf_adds(b, "{\"v\":1,\"origin\":\"unattributed\",\"exempt\":false")
        r = 0
        for k in range(POL_NKEYS):
            buf_adds(b, ",\"")
            buf_adds(b, pol_rule_key(k))
            buf_adds(b, "\":")
            if pol_add_list_json(b, &lists[k]) < 0:
                r = -1
        buf_adds(b, ",\"commands_needles\":")
        buf_adds(b, POL_FLOOR_NEEDLES)
        buf_adds(b, ",\"commands_i_needles\":[],\"authors\":[],\"written_at\":")
        buf_adds(b, stamp)
        buf_adds(b, "}")
        if b.oom:
            r = -1
    pol_lists_free(lists)
    return r


cdef int policy_after(HookCtx* ctx, HookOut* out) noexcept nogil:
    """hookside.after_forward: the PreToolUse decision."""
    cdef JSpan v
    cdef JSpan top
    cdef PolSnap s
    cdef char tool_name[POL_TOOL_CAP]
    cdef char tool[POL_TOOL_CAP]
    cdef char path[PATH_CAP]
    cdef char reason[POL_REASON_CAP]
    cdef char* snap
    cdef Buf fb
    cdef long n
    cdef int r
    cdef const char* home
    if strcmp(ctx.event, "PreToolUse") != 0:
        return STEP_OK
    out.reason = "policy: unusual input"
    if js_find_key(&ctx.top, "tool_name", 9, &v) != 1 or v.kind != JS_STRING:
        return STEP_DECLINE
    if js_decode_cstr(&v, tool_name, POL_TOOL_CAP) < 0 or not pol_ascii(tool_name):
        return STEP_DECLINE
    pol_lower(tool_name, tool)
    home = getenv("HOME")
    if home == NULL or home[0] == 0 or pol_snapshot_path(ctx, path) < 0:
        return STEP_DECLINE
    snap = <char*>malloc(POL_MAX_SNAPSHOT + 1)
    if snap == NULL:
        return STEP_DECLINE
    n = pol_load(path, snap, &top, &s)
    if n == -1:
        # no task recorded: the floor, built here (hookside.current_rules)
        free(snap)
        fb.p = NULL
        fb.n = 0
        fb.cap = 0
        fb.oom = 0
        snap = NULL
        if pol_floor_doc(ctx, home, &fb) == 0 and js_parse(fb.p, fb.n, &top) == 0 and pol_snap_load(&top, &s) == 0:
            snap = fb.p
            n = <long>fb.n
        else:
            buf_free(&fb)
            n = -3
    r = POL_DECLINE
    if n >= 0:
        # a "halted" key we did not act on (null, empty, inside a label)
        # would make the splice ambiguous: let Python rewrite the file
        if s.halted or memmem(snap, <size_t>n, "\"halted\"", 8) == NULL:
            r = pol_decide(&s, &ctx.top, home, reason, POL_REASON_CAP)
    if r == POL_DECLINE:
        free(snap)
        out.reason = "policy: declined to the Python twin"
        return STEP_DECLINE
    if r == POL_ALLOW:
        # SendUserFile: the file checks, for every task (sendfile.pxi)
        r = sf_send_files(ctx, &s, home, out) if strcmp(tool, "senduserfile") == 0 else STEP_OK
        free(snap)
        return r
    if pol_deny_out(out, reason) < 0:
        free(snap)
        return STEP_DECLINE
    pol_send_blocked(ctx, tool_name, reason)
    if not s.halted:
        # without a snapshot file this writes the floor it decided by, halted
        # (snapshot.record_halt's fallback)
        pol_record_halt(path, snap, <size_t>n, reason)
    free(snap)
    return STEP_PRINT


cdef int policy_unusable(const HookCtx* ctx, HookOut* out) noexcept nogil:
    """hookside.unusable_pre_tool_use: a PreToolUse whose payload cannot be
    read (ctx.top is not usable).  Allow (STEP_OK) only for a readable,
    unhalted terminal-typed or owner-exempt task; else deny (STEP_PRINT)."""
    cdef char path[PATH_CAP]
    cdef JSpan top
    cdef PolSnap s
    cdef char* snap
    cdef long n
    out.reason = "policy: unusual snapshot"
    if pol_snapshot_path(ctx, path) < 0:
        return STEP_DECLINE
    snap = <char*>malloc(POL_MAX_SNAPSHOT + 1)
    if snap == NULL:
        return STEP_DECLINE
    n = pol_load(path, snap, &top, &s)
    free(snap)
    if n == -3:
        return STEP_DECLINE
    if n >= 0 and not s.halted and (s.terminal or s.exempt):
        return STEP_OK
    if pol_deny_out(out, POL_REASON_UNUSABLE) < 0:
        return STEP_DECLINE
    return STEP_PRINT


cdef int policy_fail_exit(const char* event) noexcept nogil:
    """Exit code when the hook cannot run its steps (event may be NULL):
    2 (Claude Code's refusal) for PreToolUse, fail closed; 0 elsewhere."""
    if event != NULL and strcmp(event, "PreToolUse") == 0:
        return 2
    return 0
