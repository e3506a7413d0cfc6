# The policy's decision in the compiled hook: the C twin of aipager/policy/_match_py.py.
#
# TWIN OF aipager/policy/_match_py.py:
#   pol_lower = ascii_lower
#   pol_collapse = collapse
#   pol_realpath_tail = realpath_tail
#   pol_literal_prefix = literal_prefix
#   pol_glob_dir = glob_dir
#   pol_expand = expand
#   pol_check_path = check_path
#   pol_check_command = check_command
#   pol_may_match = may_match
#   pol_decide = decide
#
# pol_decide follows _match_py.decide statement by statement (same order of
# checks, same reason strings, same constants).  A change to one lands in the
# other in the same commit; tests/cases/policy_cases.json and
# tests/policy/test_fuzz_twins.py hold them together.  Where this side cannot
# be exact it DECLINES and the Python twin decides: a byte >= 0x80 or a NUL in
# any subject or rule, a rule glibc will not compile, a snapshot of an unusual
# shape.  Cost: regcomp dominates, so a command regex is only compiled when the
# subject holds one of its required literals (the snapshot's commands_needles,
# computed by dialect.required_literals; same prefilter in _match_py.may_match).
#
# This file also holds the declarations the policy files share (included
# first: match.pxi, floor.pxi, hookside.pxi, then pickup/sendfile/marker).
#
# Rules for code here and in the other policy files: `noexcept nogil`, C types
# only, no module-level state (module init never runs in the ELF), constants as
# C literals; every reachable CPython symbol breaks the no-libpython link (that
# is the guard).

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
# (write_generated): _match_py.REASON_HALTED, hookside.SAFETY_PREFIX, REASON_UNUSABLE and
# ENCODED_PREFIX,
# floor.FLOOR_COMMANDS and their needles (floor.KNOWN_NEEDLES) as JSON -- the floor's
# command part, which no env changes -- and floor.SECRET_GLOBS (JSON, ``~`` unexpanded).
cdef extern from "policy_literals.h":
    const char POL_REASON_HALTED[]
    const char POL_SAFETY_PREFIX[]
    const char POL_REASON_UNUSABLE[]
    const char POL_ENCODED_PREFIX[]
    const char POL_FLOOR_COMMANDS[]
    const char POL_FLOOR_NEEDLES[]
    const char POL_FLOOR_SECRETS[]
    const char POL_FLOOR_NO_WRITE[]
    const char POL_FILES_COMMAND[]
    const char POL_UPLOADS_PREFIX[]

cdef enum:
    POL_ALLOW = 0
    POL_DENY = 1
    POL_DECLINE = 2
    # longest rule string (dialect.MAX_PATTERN is 1024)
    POL_PAT_CAP = 4096
    POL_REASON_CAP = 16384
    POL_TOOL_CAP = 256
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
