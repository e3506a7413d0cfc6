# The safety floor in the compiled hook: the C twin of aipager/policy/floor.py
# (and snapshot.for_floor), used when no task snapshot was recorded.
#
# TWIN OF aipager/policy/floor.py:
#   pol_builtin_floor = builtin_floor
#   pol_floor_lists = load_floor
#   pol_glob_add = expand_all
#   pol_own_uploads = own_uploads
#   pol_all_but_globs = all_but_globs
#   pol_all_but_command = all_but_command
#
# TWIN OF aipager/policy/snapshot.py:
#   pol_floor_doc = for_floor

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


cdef int pol_files_dir(char* dst, const char* home) noexcept nogil:
    """paths.files_dir into dst (PATH_CAP): under $XDG_RUNTIME_DIR when it is
    absolute, else under the cache folder ($XDG_CACHE_HOME when absolute, else
    ~/.cache): 0, or -1."""
    cdef char base[PATH_CAP]
    cdef const char* v = getenv("XDG_RUNTIME_DIR")
    if v == NULL or v[0] != c'/':
        v = getenv("XDG_CACHE_HOME")
        if v == NULL or v[0] != c'/':
            v = NULL
            if path_join(base, PATH_CAP, home, ".cache") < 0:
                return -1
    if v != NULL and path_copy(base, PATH_CAP, v) < 0:
        return -1
    return path_join(dst, PATH_CAP, base, "aipager/files")


cdef int pol_files_glob(PolList* l, const char* home) noexcept nogil:
    """paths.files_dir + "/**", expanded."""
    cdef char dir_[PATH_CAP]
    cdef char g[PATH_CAP]
    if pol_files_dir(dir_, home) < 0 or path_join(g, PATH_CAP, dir_, "**") < 0:
        return -1
    return pol_glob_add(l, g, home)


cdef int pol_all_but_globs(PolList* l, const char* folder, const char* keep) noexcept nogil:
    """floor.all_but_globs, each added to l (unique): 0, or -1."""
    cdef char g[PATH_CAP]
    cdef size_t m = strlen(keep)
    cdef size_t i
    cdef char ch
    if pol_list_add(l, folder, True) < 0:
        return -1
    for i in range(m + 1):
        ch = keep[i] if i < m else c'/'
        if i < m:
            if (snprintf(g, PATH_CAP, "%s/%.*s", folder, <int>i, keep) >= PATH_CAP
                    or pol_list_add(l, g, True) < 0):
                return -1
        if (snprintf(g, PATH_CAP, "%s/%.*s[!%c]*", folder, <int>i, keep, ch) >= PATH_CAP
                or pol_list_add(l, g, True) < 0):
            return -1
    return 0


cdef int pol_all_but_command(char* dst, size_t cap, const char* keep) noexcept nogil:
    """floor.all_but_command into dst: 0, or -1 when it does not fit."""
    cdef size_t m = strlen(keep)
    cdef size_t n
    cdef size_t i
    cdef char ch
    if snprintf(dst, cap, "%s", POL_FILES_COMMAND) >= <int>cap:
        return -1
    for i in range(m + 1):
        ch = c'/' if i == 0 else keep[i - 1]
        n = strlen(dst)
        if snprintf(dst + n, cap - n, "($|[^%c]|%c", ch, ch) >= <int>(cap - n):
            return -1
    n = strlen(dst)
    if snprintf(dst + n, cap - n, "($|[^/])") >= <int>(cap - n):
        return -1
    for i in range(m + 1):
        n = strlen(dst)
        if n + 2 > cap:
            return -1
        dst[n] = c')'
        dst[n + 1] = 0
    return 0


cdef int pol_own_uploads(PolList* lists, const char* home, const char* keep, const char* cmd) noexcept nogil:
    """floor.own_uploads on the floor's lists, in place (keep: the person's folder
    under the files folder, cmd: pol_all_but_command of it): 0, or -1."""
    cdef PolList* out
    cdef char folder[PATH_CAP]
    cdef char whole[PATH_CAP]
    cdef size_t k
    cdef char* item
    cdef int has_folder = 0
    cdef int has_whole = 0
    cdef int i
    cdef int r = 0
    if pol_files_dir(folder, home) < 0 or snprintf(whole, PATH_CAP, "%s/*", folder) >= PATH_CAP:
        return -1
    for i in range(lists[2].n):
        if strcmp(lists[2].items[i], folder) == 0:
            has_folder = 1
        elif strcmp(lists[2].items[i], whole) == 0:
            has_whole = 1
    if not (has_folder and has_whole):
        return 0
    out = <PolList*>malloc(sizeof(PolList))
    if out == NULL:
        return -1
    out.n = 0
    for i in range(lists[2].n):
        if r < 0 or strcmp(lists[2].items[i], whole) == 0:
            continue
        if strcmp(lists[2].items[i], folder) == 0:
            r = pol_all_but_globs(out, folder, keep)
        else:
            r = pol_list_add(out, lists[2].items[i], True)
    for i in range(lists[2].n):
        free(lists[2].items[i])
    memcpy(&lists[2], out, sizeof(PolList))
    free(out)
    if r < 0:
        return -1
    for i in range(lists[4].n):
        if strcmp(lists[4].items[i], POL_FILES_COMMAND) == 0:
            k = strlen(cmd)
            item = <char*>malloc(k + 1)
            if item == NULL:
                return -1
            memcpy(item, cmd, k + 1)
            free(lists[4].items[i])
            lists[4].items[i] = item
    return 0


cdef int pol_builtin_floor(const HookCtx* ctx, const char* home, PolList* lists) noexcept nogil:
    """floor.builtin_floor without its commands: 0, or -1 to decline."""
    cdef char g[PATH_CAP]
    cdef char item[POL_PAT_CAP]
    cdef JSpan secrets
    cdef size_t pos = 0
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
            or pol_xdg_glob(&lists[2], "XDG_DATA_HOME", ".local/share", home) < 0
            or pol_files_glob(&lists[2], home) < 0):
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
    if js_parse(POL_FLOOR_SECRETS, strlen(POL_FLOOR_SECRETS), &secrets) < 0:
        return -1
    while pol_next_str(&secrets, &pos, item, POL_PAT_CAP) == 1:
        if pol_glob_add(&lists[2], item, home) < 0:
            return -1
    pos = 0
    if js_parse(POL_FLOOR_NO_WRITE, strlen(POL_FLOOR_NO_WRITE), &secrets) < 0:
        return -1
    while pol_next_str(&secrets, &pos, item, POL_PAT_CAP) == 1:
        if pol_glob_add(&lists[3], item, home) < 0:
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
    data = <char*>malloc(FSIO_MAX_READ + 1)
    if data == NULL:
        return -1
    n = pol_read_own(path, data, FSIO_MAX_READ + 1)
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
