# The compiled permission-note pick-up: hookside.prompt_submitted for a
# prompt while notes are outstanding -- the C twin of notes.pickup,
# hookside.task_rules, hookside.joined and hookside._context.
#
# TWIN OF aipager/policy/notes.py:
#   pk_list_notes = list_notes
#   pk_prompt_with_notes = pickup
#
# TWIN OF aipager/policy/hookside.py:
#   pk_author = _author
#   pk_task_rules = task_rules
#   pk_joined = joined
#   pk_context = _context
#
# TWIN OF aipager/policy/floor.py:
#   pk_person = uploads_person
#
# TWINS: the same contract as match.pxi.  Everything is worked out before
# the first effect (unlinking notes, writing the snapshot and the mark,
# sending queue_pickup), so a decline leaves the files as they were and the
# Python twin does the whole step.  This side declines on anything that is
# not a well-formed note the daemon wrote (a file it cannot read or parse, a
# note Python would find unusable, a name without a digits prefix), on
# strings it cannot spell exactly (non-ASCII rule strings, NUL in a text,
# floats among the authors), on a command pattern whose needles neither the
# notes nor the built-in floor carry (Python would run the dialect parser),
# on a prompt made of notes only once Claude Code's <pasted_content> tags
# are taken off (notes.unwrap_pastes: a long message), on a terminal
# prompt joining an open non-terminal task (Python rewrites
# the old snapshot with its float time stamp), and on more than PK_MAX_NOTES
# notes.  tests/policy/test_pickup_twins.py holds the twins together.
#
# Text is UTF-8 throughout: js_parse has checked it strictly and js_decode
# never produces a lone surrogate, so a byte search finds exactly what
# str.find finds and code points can be counted by lead bytes.

from libc.time cimport tm, time_t, gmtime_r, strftime
from libc.stdlib cimport calloc
from libc.string cimport strchr

cdef enum:
    # more notes at once than this: the Python twin does the step
    PK_MAX_NOTES = 64
    # snapshot origins
    PK_TERMINAL = 0
    PK_TELEGRAM = 1
    PK_UNATTRIBUTED = 2
    # hookside._context: the quoted message is cut to this many characters
    PK_QUOTE_CHARS = 60

ctypedef struct PkNote:
    char name[256]
    # the file (malloc'd); top and every span taken from it point into it
    char* data
    JSpan top
    # decoded "text" (malloc'd); text[strip_a:strip_b] is text.strip()
    char* text
    size_t text_len
    size_t strip_a
    size_t strip_b
    int expired
    int consumed
    # a note of another aipager version (Note.usable false on "v"): never
    # taken, counted as waiting, as notes.pickup counts it
    int foreign

ctypedef struct PkSet:
    # a rule set built by rules.stricter in place, plus what a snapshot adds
    PolList lists[POL_NKEYS]
    # needles JSON (malloc'd) per pattern of lists[4] / lists[5], set last
    char* needles[2][POL_FLOOR_ITEMS]
    int exempt
    int origin
    # the authors' JSON objects, comma-separated, no brackets
    Buf authors


# --- text ----------------------------------------------------------------------

cdef size_t pk_cp(const unsigned char* s, size_t i, unsigned int* cp) noexcept nogil:
    """The code point at s[i] (valid UTF-8) and its length in bytes."""
    cdef unsigned char c = s[i]
    if c < 0x80:
        cp[0] = c
        return 1
    if c < 0xE0:
        cp[0] = ((c & 0x1F) << 6) | (s[i + 1] & 0x3F)
        return 2
    if c < 0xF0:
        cp[0] = ((c & 0x0F) << 12) | ((s[i + 1] & 0x3F) << 6) | (s[i + 2] & 0x3F)
        return 3
    cp[0] = ((c & 0x07) << 18) | ((s[i + 1] & 0x3F) << 12) | ((s[i + 2] & 0x3F) << 6) | (s[i + 3] & 0x3F)
    return 4


cdef bint pk_space(unsigned int c) noexcept nogil:
    """str.isspace: what str.strip drops."""
    if c < 0x80:
        return c == 32 or (c >= 9 and c <= 13) or (c >= 28 and c <= 31)
    return (c == 0x85 or c == 0xA0 or c == 0x1680 or (c >= 0x2000 and c <= 0x200A)
            or c == 0x2028 or c == 0x2029 or c == 0x202F or c == 0x205F or c == 0x3000)


cdef size_t pk_skip_space(const char* text, size_t n, size_t i) noexcept nogil:
    """notes._skip_space: the first index at or after i that is not a space."""
    cdef unsigned int c
    cdef size_t k
    while i < n:
        k = pk_cp(<const unsigned char*>text, i, &c)
        if not pk_space(c):
            break
        i += k
    return i


cdef void pk_strip(const char* text, size_t n, size_t* a, size_t* b) noexcept nogil:
    """text[a:b] is text.strip()."""
    cdef const unsigned char* s = <const unsigned char*>text
    cdef unsigned int c
    cdef size_t i = 0
    cdef size_t j = n
    cdef size_t k
    cdef size_t start
    while i < n:
        k = pk_cp(s, i, &c)
        if not pk_space(c):
            break
        i += k
    while j > i:
        start = j - 1
        while start > i and (s[start] & 0xC0) == 0x80:
            start -= 1
        pk_cp(s, start, &c)
        if not pk_space(c):
            break
        j = start
    a[0] = i
    b[0] = j


cdef void pk_json_text(Buf* b, const char* text, size_t n) noexcept nogil:
    """A quoted JSON string as json.dumps (ensure_ascii) spells valid UTF-8."""
    cdef const unsigned char* s = <const unsigned char*>text
    cdef char esc[16]
    cdef unsigned int c
    cdef size_t i = 0
    cdef size_t run
    buf_add(b, "\"", 1)
    while i < n:
        run = i
        while run < n and s[run] >= 0x20 and s[run] < 0x7F and s[run] != c'"' and s[run] != c'\\':
            run += 1
        if run > i:
            buf_add(b, text + i, run - i)
            i = run
            continue
        i += pk_cp(s, i, &c)
        if c == c'"':
            buf_add(b, "\\\"", 2)
        elif c == c'\\':
            buf_add(b, "\\\\", 2)
        elif c == c'\n':
            buf_add(b, "\\n", 2)
        elif c == c'\r':
            buf_add(b, "\\r", 2)
        elif c == c'\t':
            buf_add(b, "\\t", 2)
        elif c == 8:
            buf_add(b, "\\b", 2)
        elif c == 12:
            buf_add(b, "\\f", 2)
        elif c < 0x10000:
            snprintf(esc, sizeof(esc), "\\u%04x", c)
            buf_add(b, esc, 6)
        else:
            c -= 0x10000
            snprintf(esc, sizeof(esc), "\\u%04x\\u%04x", 0xD800 | (c >> 10), 0xDC00 | (c & 0x3FF))
            buf_add(b, esc, 12)
    buf_add(b, "\"", 1)


cdef bint pk_int_token(const JSpan* v) noexcept nogil:
    """A JSON integer spelled as Python's str(int) spells it (not -0)."""
    cdef size_t i = 1 if v.p[0] == c'-' else 0
    if v.kind != JS_NUMBER or i == v.n or (v.n == 2 and i == 1 and v.p[1] == c'0'):
        return False
    while i < v.n:
        if v.p[i] < c'0' or v.p[i] > c'9':
            return False
        i += 1
    return True


cdef char* pk_decode(const JSpan* v, size_t* n) noexcept nogil:
    """A JS_STRING decoded into a malloc'd buffer (NULs kept), or NULL."""
    cdef char* out
    cdef long k
    if v.kind != JS_STRING:
        return NULL
    out = <char*>malloc(v.n + 1)
    if out == NULL:
        return NULL
    k = js_decode(v, out, v.n + 1)
    if k < 0:
        free(out)
        return NULL
    n[0] = <size_t>k
    return out


cdef int pk_canon(Buf* b, const JSpan* v) noexcept nogil:
    """Append what dumps(loads(v)) gives: 0, or -1 where this side cannot be
    exact (a float, -0, an object with a repeated key)."""
    cdef JSpan key
    cdef JSpan val
    cdef JSpan other
    cdef JSpan oval
    cdef size_t pos = 0
    cdef size_t pos2
    cdef size_t n
    cdef size_t n2
    cdef size_t i
    cdef char* text
    cdef char* text2
    cdef int r
    cdef int first = 1
    if v.kind == JS_NULL:
        buf_adds(b, "null")
    elif v.kind == JS_TRUE:
        buf_adds(b, "true")
    elif v.kind == JS_FALSE:
        buf_adds(b, "false")
    elif v.kind == JS_NUMBER:
        if not pk_int_token(v):
            return -1
        buf_add(b, v.p, v.n)
    elif v.kind == JS_STRING:
        text = pk_decode(v, &n)
        if text == NULL:
            return -1
        pk_json_text(b, text, n)
        free(text)
    elif v.kind == JS_ARRAY:
        buf_add(b, "[", 1)
        while True:
            r = js_array_next(v, &pos, &val)
            if r < 0:
                return -1
            if r == 0:
                break
            if not first:
                buf_add(b, ",", 1)
            first = 0
            if pk_canon(b, &val) < 0:
                return -1
        buf_add(b, "]", 1)
    elif v.kind == JS_OBJECT:
        buf_add(b, "{", 1)
        while True:
            r = js_object_next(v, &pos, &key, &val)
            if r < 0:
                return -1
            if r == 0:
                break
            # a repeated key: Python keeps the first place and the last value
            text = pk_decode(&key, &n)
            if text == NULL:
                return -1
            pos2 = pos
            while True:
                r = js_object_next(v, &pos2, &other, &oval)
                if r <= 0:
                    break
                text2 = pk_decode(&other, &n2)
                if text2 == NULL:
                    r = -1
                    break
                r = -1 if n2 == n and memcmp(text, text2, n) == 0 else 0
                free(text2)
                if r < 0:
                    break
            free(text)
            if r < 0:
                return -1
            if not first:
                buf_add(b, ",", 1)
            first = 0
            if pk_canon(b, &key) < 0:
                return -1
            buf_add(b, ":", 1)
            if pk_canon(b, &val) < 0:
                return -1
        buf_add(b, "}", 1)
    else:
        return -1
    return -1 if b.oom else 0


cdef int pk_canon_key(Buf* b, const JSpan* obj, const char* key) noexcept nogil:
    """dumps(obj.get(key)) for an object span (null when absent): 0 or -1."""
    cdef JSpan v
    cdef int r = js_find_key(obj, key, strlen(key), &v)
    if r < 0:
        return -1
    if r == 0:
        buf_adds(b, "null")
        return 0
    return pk_canon(b, &v)


# --- notes ---------------------------------------------------------------------

cdef char* pk_read(const char* path, size_t* n) noexcept nogil:
    """_fsio.read_own into a malloc'd buffer (NUL-terminated), or NULL for
    anything else (absent, foreign, a symlink, over MAX_READ, growing)."""
    cdef int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
    cdef struct_stat st
    cdef char* data = NULL
    cdef size_t size
    cdef size_t got = 0
    cdef ssize_t r
    if fd < 0:
        return NULL
    if (fstat(fd, &st) == 0 and S_ISREG(st.st_mode) and st.st_uid == geteuid()
            and st.st_size <= FSIO_MAX_READ):
        size = <size_t>st.st_size
        data = <char*>malloc(size + 2)
        while data != NULL:
            r = read(fd, data + got, size + 1 - got)
            if r < 0 and errno == EINTR:
                continue
            if r < 0 or got + <size_t>r > size:
                free(data)
                data = NULL
                break
            if r == 0:
                data[got] = 0
                n[0] = got
                break
            got += <size_t>r
    close(fd)
    return data


cdef int pk_name_time(const char* name, double* q) noexcept nogil:
    """notes._queued_at from the name: int(name.split("-", 1)[0]) / 1e6 for
    a plain digits prefix (exact in a double): 0, or -1 to decline."""
    cdef const char* dash = strchr(name, c'-')
    cdef const char* p = name
    cdef double v = 0.0
    cdef int digits = 0
    if dash == NULL or dash == name:
        return -1
    while p < dash:
        if p[0] < c'0' or p[0] > c'9':
            return -1
        if digits or p[0] != c'0':
            digits += 1
        v = v * 10.0 + (p[0] - c'0')
        p += 1
    if digits > 15:
        return -1
    q[0] = v / 1000000.0
    return 0


cdef int pk_load_note(const char* folder, PkNote* note, double now) noexcept nogil:
    """Read one note and classify it as notes.pickup does (expired, of
    another version, or usable with its stripped text): 0, or -1 to decline."""
    cdef char path[PATH_CAP]
    cdef JSpan v
    cdef JSpan rules_
    cdef double d
    cdef size_t n
    cdef int r
    cdef int k
    if snprintf(path, PATH_CAP, "%s/%s", folder, note.name) >= PATH_CAP:
        return -1
    note.data = pk_read(path, &n)
    if note.data == NULL or js_parse(note.data, n, &note.top) < 0 or note.top.kind != JS_OBJECT:
        return -1
    r = js_find_key(&note.top, "queued_at", 9, &v)
    if r < 0:
        return -1
    if r == 1 and v.kind == JS_NUMBER:
        if js_to_double(&v, &d) < 0 or not isfinite(d) or d > 1e15 or d < -1e15:
            return -1
    elif pk_name_time(note.name, &d) < 0:
        return -1
    if now - d > NOTES_TTL_SECONDS:
        # still read whole: an expired note is matched like the others, and taken when
        # the prompt is made of it (notes.pickup), else deleted and reported
        note.expired = 1
    # Note.usable.  A note of another version (no "v", or one Python finds
    # unequal to 1: left by an older or newer aipager) stays waiting in
    # Python and is never taken: read so here, so such leftovers keep the
    # compiled path.  Any other unusable note: decline.
    r = js_find_key(&note.top, "v", 1, &v)
    if r < 0 or (r == 1 and v.kind == JS_TRUE):
        return -1  # true == 1 to Python: the rest of usable() decides
    if r == 0 or v.kind != JS_NUMBER:
        note.foreign = 1
        return 0
    if js_to_double(&v, &d) < 0:
        return -1
    if d != 1.0:
        note.foreign = 1
        return 0
    if js_find_key(&note.top, "text", 4, &v) != 1:
        return -1
    note.text = pk_decode(&v, &note.text_len)
    if note.text == NULL or memchr(note.text, 0, note.text_len) != NULL:
        return -1
    pk_strip(note.text, note.text_len, &note.strip_a, &note.strip_b)
    if note.strip_a == note.strip_b:
        return -1
    if js_find_key(&note.top, "rules", 5, &rules_) != 1 or rules_.kind != JS_OBJECT:
        return -1
    for k in range(POL_NKEYS):
        r = js_find_key(&rules_, pol_rule_key(k), strlen(pol_rule_key(k)), &v)
        if r < 0 or (r == 0 and k != 0):
            return -1
        if r == 1 and not (k == 0 and v.kind == JS_NULL) and not pol_strings_shape(&v):
            return -1
    if js_find_key(&note.top, "author", 6, &v) != 1 or v.kind != JS_OBJECT:
        return -1
    return 0


cdef int pk_list_notes(const char* folder, PkNote* notes, int* count) noexcept nogil:
    """notes.list_notes: the *.json names, sorted: 0, or -1 to decline."""
    cdef DIR* d = opendir(folder)
    cdef dirent* e
    cdef PkNote tmp
    cdef size_t k
    cdef int n = 0
    cdef int i
    cdef int j
    if d == NULL:
        return -1
    while True:
        e = readdir(d)
        if e == NULL:
            break
        k = strlen(e.d_name)
        if k < 5 or strcmp(e.d_name + k - 5, ".json") != 0:
            continue
        # Python sorts str: the same order as bytes only for ASCII names
        if n >= PK_MAX_NOTES or not pol_ascii(e.d_name):
            closedir(d)
            return -1
        memcpy(notes[n].name, e.d_name, k + 1)
        n += 1
    closedir(d)
    for i in range(1, n):
        j = i
        while j > 0 and strcmp(notes[j - 1].name, notes[j].name) > 0:
            memcpy(&tmp, &notes[j], sizeof(PkNote))
            memcpy(&notes[j], &notes[j - 1], sizeof(PkNote))
            memcpy(&notes[j - 1], &tmp, sizeof(PkNote))
            j -= 1
    count[0] = n
    return 0


# --- rule sets -----------------------------------------------------------------

cdef void pk_set_init(PkSet* s, int origin) noexcept nogil:
    cdef int k
    for k in range(POL_NKEYS):
        s.lists[k].n = -1 if k == 0 else 0
    s.exempt = 0
    s.origin = origin
    s.authors.p = NULL
    s.authors.n = 0
    s.authors.cap = 0
    s.authors.oom = 0


cdef void pk_set_free(PkSet* s) noexcept nogil:
    cdef int i
    cdef int c
    for c in range(2):
        for i in range(s.lists[4 + c].n):
            free(s.needles[c][i])
    pol_lists_free(s.lists)
    buf_free(&s.authors)


cdef int pk_stricter(PolList* a, const PolList* b) noexcept nogil:
    """a = rules.stricter(a, b): 0, or -1 (too many items, no memory)."""
    cdef int k
    cdef int i
    cdef int j
    cdef int kept = 0
    for k in range(1, POL_NKEYS):
        for i in range(b[k].n):
            if pol_list_add(&a[k], b[k].items[i], True) < 0:
                return -1
    if b[0].n < 0:
        return 0
    if a[0].n < 0:
        a[0].n = 0
        for i in range(b[0].n):
            if pol_list_add(&a[0], b[0].items[i], False) < 0:
                return -1
        return 0
    # an empty intersection stays an (empty) allow list
    for i in range(a[0].n):
        for j in range(b[0].n):
            if strcmp(a[0].items[i], b[0].items[j]) == 0:
                break
        else:
            free(a[0].items[i])
            continue
        a[0].items[kept] = a[0].items[i]
        kept += 1
    a[0].n = kept
    return 0


cdef int pk_lists_of(const JSpan* rules_, PolList* out) noexcept nogil:
    """A rule-set object (shape checked) as lists, items as they are: 0 or -1."""
    cdef char item[POL_PAT_CAP]
    cdef JSpan v
    cdef size_t pos
    cdef int k
    cdef int r
    for k in range(POL_NKEYS):
        out[k].n = -1 if k == 0 else 0
    for k in range(POL_NKEYS):
        if js_find_key(rules_, pol_rule_key(k), strlen(pol_rule_key(k)), &v) != 1 or v.kind == JS_NULL:
            continue
        out[k].n = 0
        pos = 0
        while True:
            r = pol_next_str(&v, &pos, item, POL_PAT_CAP)
            if r < 0 or (r == 1 and pol_list_add(&out[k], item, False) < 0):
                return -1
            if r == 0:
                break
    return 0


cdef int pk_merge_spans(PkSet* s, const JSpan* rules_) noexcept nogil:
    """s = rules.stricter(s, the rule-set object): 0 or -1."""
    cdef PolList b[POL_NKEYS]
    cdef int r = pk_lists_of(rules_, b)
    if r == 0:
        r = pk_stricter(s.lists, b)
    pol_lists_free(b)
    return r


cdef int pk_merge_floor(const HookCtx* ctx, PkSet* s, const char* keep, const char* cmd) noexcept nogil:
    """s = rules.stricter(s, floor.load_floor(env)), the floor opened to one
    person's uploads when keep (their folder) is not NULL (floor.own_uploads;
    cmd: pol_all_but_command of keep): 0 or -1."""
    cdef PolList f[POL_NKEYS]
    cdef const char* home = getenv("HOME")
    cdef int r = -1
    cdef int k
    for k in range(POL_NKEYS):
        f[k].n = -1 if k == 0 else 0
    if (home != NULL and home[0] != 0 and pol_floor_lists(ctx, home, f) == 0
            and (keep == NULL or pol_own_uploads(f, home, keep, cmd) == 0)):
        r = pk_stricter(s.lists, f)
    pol_lists_free(f)
    return r


# --- needles -------------------------------------------------------------------

cdef bint pk_needle_shape(const JSpan* v) noexcept nogil:
    """snapshot._needle_shape: null or a list of strings."""
    return v.kind == JS_NULL or pol_strings_shape(v) == 1


cdef int pk_needle_in(const JSpan* pats, const JSpan* needles, const char* pattern, JSpan* found) noexcept nogil:
    """needles_of for one doc: 1 the last well-formed needles of pattern
    (found), 0 none, -1 unusable."""
    cdef char item[POL_PAT_CAP]
    cdef JSpan need
    cdef size_t pp = 0
    cdef size_t np = 0
    cdef int hit = 0
    cdef int r
    if (pats.kind != JS_ARRAY or needles.kind != JS_ARRAY
            or pol_count(pats) != pol_count(needles)):
        return 0
    while True:
        r = pol_next_str(pats, &pp, item, POL_PAT_CAP)
        if r <= 0:
            return hit if r == 0 else -1
        if js_array_next(needles, &np, &need) != 1:
            return -1
        if strcmp(item, pattern) == 0 and pk_needle_shape(&need):
            found[0] = need
            hit = 1


cdef int pk_rules_needles(const JSpan* doc, int icase, const char* pattern, JSpan* found) noexcept nogil:
    """pk_needle_in for the commands of a snapshot or a note's rules."""
    cdef JSpan pats
    cdef JSpan needles
    if (js_find_key(doc, "commands_i" if icase else "commands", 10 if icase else 8, &pats) != 1
            or js_find_key(doc, "commands_i_needles" if icase else "commands_needles",
                           18 if icase else 16, &needles) != 1):
        return 0
    return pk_needle_in(&pats, &needles, pattern, found)


cdef int pk_floor_needles(int icase, const char* pattern, JSpan* found) noexcept nogil:
    """floor.KNOWN_NEEDLES (case-sensitive built-in commands only)."""
    cdef JSpan pats
    cdef JSpan needles
    if icase:
        return 0
    if (js_parse(POL_FLOOR_COMMANDS, strlen(POL_FLOOR_COMMANDS), &pats) < 0
            or js_parse(POL_FLOOR_NEEDLES, strlen(POL_FLOOR_NEEDLES), &needles) < 0):
        return -1
    return pk_needle_in(&pats, &needles, pattern, found)


cdef int pk_set_needle(PkSet* s, int c, int i, const JSpan* need) noexcept nogil:
    cdef Buf b
    b.p = NULL
    b.n = 0
    b.cap = 0
    b.oom = 0
    if pk_canon(&b, need) < 0:
        buf_free(&b)
        return -1
    s.needles[c][i] = b.p
    return 0


cdef int pk_task_needles(PkSet* s, PkNote* notes, int count, const char* uploads_cmd) noexcept nogil:
    """hookside.task_rules' needles: the built-in floor's, else those of the
    pattern opening one person's uploads (uploads_cmd, floor.own_uploads_needles),
    else the latest granting note's (taken or waiting); -1 where Python would
    need the dialect parser."""
    cdef char files_needles[256]
    cdef JSpan need
    cdef JSpan rules_
    cdef JSpan author
    cdef JSpan uid
    cdef int c
    cdef int i
    cdef int j
    cdef int r
    for c in range(2):
        for i in range(s.lists[4 + c].n):
            s.needles[c][i] = NULL
        for i in range(s.lists[4 + c].n):
            r = pk_floor_needles(c, s.lists[4 + c].items[i], &need)
            if r == 0 and c == 0 and uploads_cmd != NULL and strcmp(s.lists[4].items[i], uploads_cmd) == 0:
                # every match holds the files folder's pattern, as for the one it replaces
                if snprintf(files_needles, sizeof(files_needles), "[\"%s\"]", POL_FILES_COMMAND) >= <int>sizeof(files_needles):
                    return -1
                r = 1 if js_parse(files_needles, strlen(files_needles), &need) == 0 else -1
            j = count - 1
            while r == 0 and j >= 0:
                if not notes[j].foreign:
                    js_find_key(&notes[j].top, "author", 6, &author)
                    if (js_find_key(&author, "user_id", 7, &uid) == 1 and uid.kind != JS_NULL
                            and js_find_key(&notes[j].top, "rules", 5, &rules_) == 1):
                        r = pk_rules_needles(&rules_, c, s.lists[4 + c].items[i], &need)
                j -= 1
            if r != 1 or pk_set_needle(s, c, i, &need) < 0:
                return -1
    return 0


cdef int pk_joined_needles(PkSet* s, const PkSet* new, const JSpan* current, bint mixed) noexcept nogil:
    """hookside.joined's needles: the floor's (when it was merged in), else
    the new task's, else the current snapshot's."""
    cdef JSpan need
    cdef const char* pat
    cdef size_t k
    cdef int c
    cdef int i
    cdef int j
    cdef int r
    for c in range(2):
        for i in range(s.lists[4 + c].n):
            s.needles[c][i] = NULL
        for i in range(s.lists[4 + c].n):
            pat = s.lists[4 + c].items[i]
            r = pk_floor_needles(c, pat, &need) if mixed else 0
            if r < 0:
                return -1
            if r == 1:
                if pk_set_needle(s, c, i, &need) < 0:
                    return -1
                continue
            for j in range(new.lists[4 + c].n):
                if strcmp(new.lists[4 + c].items[j], pat) == 0:
                    k = strlen(new.needles[c][j])
                    s.needles[c][i] = <char*>malloc(k + 1)
                    if s.needles[c][i] == NULL:
                        return -1
                    memcpy(s.needles[c][i], new.needles[c][j], k + 1)
                    break
            else:
                if pk_rules_needles(current, c, pat, &need) != 1 or pk_set_needle(s, c, i, &need) < 0:
                    return -1
    return 0


# --- the task ------------------------------------------------------------------

cdef int pk_author(Buf* b, const PkNote* note) noexcept nogil:
    """hookside._author as JSON: 0 or -1."""
    cdef JSpan author
    if js_find_key(&note.top, "author", 6, &author) != 1:
        return -1
    buf_adds(b, "{\"user_id\":")
    if pk_canon_key(b, &author, "user_id") < 0:
        return -1
    buf_adds(b, ",\"label\":")
    if pk_canon_key(b, &author, "label") < 0:
        return -1
    buf_adds(b, ",\"role\":")
    if pk_canon_key(b, &author, "role") < 0:
        return -1
    buf_adds(b, ",\"msg_id\":")
    if pk_canon_key(b, &note.top, "msg_id") < 0:
        return -1
    buf_adds(b, ",\"chat_id\":")
    if pk_canon_key(b, &note.top, "chat_id") < 0:
        return -1
    buf_adds(b, "}")
    return 0


cdef int pk_person(PkNote* notes, int count, char* person, size_t cap) noexcept nogil:
    """floor.uploads_person of the notes that may have written the prompt (taken
    and waiting): 1 (person: the user id's digits), 0 nobody, -1 to decline."""
    cdef JSpan author
    cdef JSpan uid
    cdef JSpan v
    cdef int found = 0
    cdef int i
    for i in range(count):
        if notes[i].foreign:
            continue
        js_find_key(&notes[i].top, "author", 6, &author)
        if js_find_key(&author, "user_id", 7, &uid) != 1 or uid.kind == JS_NULL:
            return 0
        # notes.note_rules' exemption (the owner's note)
        if js_find_key(&notes[i].top, "exempt", 6, &v) == 1 and v.kind == JS_TRUE:
            continue
        # a positive int (type(user_id) is int and user_id > 0)
        if not pk_int_token(&uid) or uid.p[0] == c'-' or (uid.n == 1 and uid.p[0] == c'0'):
            return 0
        if uid.n + 1 > cap:
            return -1
        if found and (strlen(person) != uid.n or memcmp(person, uid.p, uid.n) != 0):
            return 0
        memcpy(person, uid.p, uid.n)
        person[uid.n] = 0
        found = 1
    return found


cdef bint pk_exempt(PkNote* note) noexcept nogil:
    """notes.note_rules(note)[0]: exempt is true and the author has a user id."""
    cdef JSpan author
    cdef JSpan uid
    cdef JSpan v
    if js_find_key(&note.top, "exempt", 6, &v) != 1 or v.kind != JS_TRUE:
        return 0
    if js_find_key(&note.top, "author", 6, &author) != 1 or author.kind != JS_OBJECT:
        return 0
    return js_find_key(&author, "user_id", 7, &uid) == 1 and uid.kind != JS_NULL


cdef int pk_task_rules(const HookCtx* ctx, PkSet* s, PkNote* notes, int count, int remaining) noexcept nogil:
    """hookside.task_rules into s: 0, or -1 to decline."""
    cdef JSpan author
    cdef JSpan uid
    cdef JSpan v
    cdef JSpan rules_
    cdef char person[32]
    cdef char keep[64]
    cdef char cmd[1024]
    cdef const char* keep_p = NULL
    cdef const char* cmd_p = NULL
    cdef int consumed = 0
    cdef int who
    cdef int i
    for i in range(count):
        consumed += notes[i].consumed
    if consumed == 0 and remaining == 0:
        pk_set_init(s, PK_TERMINAL)
        return 0
    # every usable note waiting is a possible author: its rules count too
    pk_set_init(s, PK_TELEGRAM if consumed else PK_UNATTRIBUTED)
    s.exempt = 1 if consumed else 0
    for i in range(count):
        if notes[i].foreign:
            continue
        js_find_key(&notes[i].top, "author", 6, &author)
        if js_find_key(&author, "user_id", 7, &uid) != 1 or uid.kind == JS_NULL:
            # no user id: the floor only (notes.note_rules)
            s.exempt = 0
        else:
            if js_find_key(&notes[i].top, "exempt", 6, &v) != 1 or v.kind != JS_TRUE:
                s.exempt = 0
            js_find_key(&notes[i].top, "rules", 5, &rules_)
            if pk_merge_spans(s, &rules_) < 0:
                return -1
        if not notes[i].consumed:
            continue
        if s.authors.n:
            buf_add(&s.authors, ",", 1)
        if pk_author(&s.authors, &notes[i]) < 0:
            return -1
    if s.exempt:
        return pk_task_needles(s, notes, count, NULL)
    # a task that is one person's alone reads that person's uploads
    # (floor.uploads_person, floor.own_uploads); with nothing taken, nobody's
    who = pk_person(notes, count, person, sizeof(person)) if consumed else 0
    if who < 0:
        return -1
    if who:
        if (snprintf(keep, sizeof(keep), "%s%s", POL_UPLOADS_PREFIX, person) >= <int>sizeof(keep)
                or pol_all_but_command(cmd, sizeof(cmd), keep) < 0):
            return -1
        keep_p = keep
        cmd_p = cmd
    if pk_merge_floor(ctx, s, keep_p, cmd_p) < 0:
        return -1
    return pk_task_needles(s, notes, count, cmd_p)


cdef int pk_joined(const HookCtx* ctx, PkSet* out, const PkSet* new, const JSpan* cur) noexcept nogil:
    """hookside.joined(current, new) into out, for a non-terminal current
    and new: 0, or -1 to decline."""
    cdef PolList c[POL_NKEYS]
    cdef JSpan v
    cdef JSpan origin
    cdef size_t pos = 0
    cdef int cur_exempt
    cdef int r
    cdef bint mixed
    pk_set_init(out, PK_UNATTRIBUTED)
    # rules.stricter reads current["allowed_tools"]: a KeyError in Python
    if js_find_key(cur, "allowed_tools", 13, &v) != 1:
        return -1
    # rules.stricter(current, new) starts from list(current[key]): the
    # current lists exactly as they are, repeats included
    if pk_lists_of(cur, c) < 0:
        pol_lists_free(c)
        return -1
    memcpy(out.lists, c, sizeof(c))
    if pk_stricter(out.lists, new.lists) < 0:
        return -1
    js_find_key(cur, "exempt", 6, &v)
    cur_exempt = v.kind == JS_TRUE
    out.exempt = cur_exempt and new.exempt
    mixed = not out.exempt and (cur_exempt or new.exempt)
    if mixed and pk_merge_floor(ctx, out, NULL, NULL) < 0:
        return -1
    js_find_key(cur, "origin", 6, &origin)
    if new.origin == PK_TELEGRAM or js_string_eq(&origin, "telegram", 8):
        out.origin = PK_TELEGRAM
    # list(current.get("authors") or []) + new's
    r = js_find_key(cur, "authors", 7, &v)
    if r < 0 or (r == 1 and v.kind != JS_NULL and v.kind != JS_FALSE and v.kind != JS_ARRAY):
        return -1
    if r == 1 and v.kind == JS_ARRAY:
        while True:
            r = js_array_next(&v, &pos, &origin)
            if r < 0:
                return -1
            if r == 0:
                break
            if out.authors.n:
                buf_add(&out.authors, ",", 1)
            if pk_canon(&out.authors, &origin) < 0:
                return -1
    if new.authors.n:
        if out.authors.n:
            buf_add(&out.authors, ",", 1)
        buf_add(&out.authors, new.authors.p, new.authors.n)
    if out.authors.oom:
        return -1
    return pk_joined_needles(out, new, cur, mixed)


cdef int pk_snapshot_json(Buf* b, const PkSet* s, const char* stamp) noexcept nogil:
    """snapshot.make(...) as snapshot.write spells it: 0 or -1."""
    cdef int k
    cdef int c
    cdef int i
    buf_adds(b, "{\"v\":1,\"origin\":\"")
    buf_adds(b, "terminal" if s.origin == PK_TERMINAL else "telegram" if s.origin == PK_TELEGRAM else "unattributed")
    buf_adds(b, "\",\"exempt\":")
    buf_adds(b, "true" if s.exempt else "false")
    for k in range(POL_NKEYS):
        buf_adds(b, ",\"")
        buf_adds(b, pol_rule_key(k))
        buf_adds(b, "\":")
        if pol_add_list_json(b, &s.lists[k]) < 0:
            return -1
    for c in range(2):
        buf_adds(b, ",\"commands_i_needles\":[" if c else ",\"commands_needles\":[")
        for i in range(s.lists[4 + c].n):
            if i:
                buf_add(b, ",", 1)
            buf_adds(b, s.needles[c][i])
        buf_adds(b, "]")
    buf_adds(b, ",\"authors\":[")
    if s.authors.n:
        buf_add(b, s.authors.p, s.authors.n)
    buf_adds(b, "],\"written_at\":")
    buf_adds(b, stamp)
    buf_adds(b, "}")
    return -1 if b.oom else 0


# --- what Claude and the daemon are told ---------------------------------------

cdef int pk_part_new(Buf* ctx_text, const char* part, size_t n, Buf* seen) noexcept nogil:
    """Append a style part unless an equal part is already there: 0 or -1.
    seen holds each part as <size_t length><bytes> so equality is exact."""
    cdef size_t pos = 0
    cdef size_t k
    while pos < seen.n:
        memcpy(&k, seen.p + pos, sizeof(size_t))
        pos += sizeof(size_t)
        if k == n and memcmp(seen.p + pos, part, n) == 0:
            return 0
        pos += k
    buf_add(seen, <const char*>&n, sizeof(size_t))
    buf_add(seen, part, n)
    if ctx_text.n:
        buf_add(ctx_text, "\n\n", 2)
    buf_add(ctx_text, part, n)
    return -1 if seen.oom or ctx_text.oom else 0


cdef int pk_context(Buf* text, PkNote* notes, int count) noexcept nogil:
    """hookside._context: 0, or -1 to decline."""
    cdef Buf seen
    cdef Buf part
    cdef JSpan v
    cdef JSpan reply
    cdef char stamp[64]
    cdef tm when_tm
    cdef time_t when_t
    cdef double when
    cdef char* s
    cdef size_t n
    cdef size_t a
    cdef size_t b
    cdef size_t cut
    cdef unsigned int cp
    cdef int chars
    cdef int i
    cdef int r = 0
    seen.p = NULL
    seen.n = seen.cap = 0
    seen.oom = 0
    part.p = NULL
    part.n = part.cap = 0
    part.oom = 0
    for i in range(count):
        if not notes[i].consumed or r < 0:
            continue
        if js_find_key(&notes[i].top, "style", 5, &v) == 1 and v.kind == JS_STRING:
            s = pk_decode(&v, &n)
            if s == NULL:
                r = -1
                continue
            pk_strip(s, n, &a, &b)
            if a < b:
                r = pk_part_new(text, s + a, b - a, &seen)
            free(s)
        if (r < 0 or js_find_key(&notes[i].top, "reply_to", 8, &reply) != 1 or reply.kind != JS_OBJECT
                or js_find_key(&reply, "text", 4, &v) != 1 or v.kind != JS_STRING):
            continue
        s = pk_decode(&v, &n)
        if s == NULL:
            r = -1
            continue
        stamp[0] = 0
        if js_find_key(&reply, "sent_at", 7, &v) == 1 and v.kind == JS_NUMBER:
            if js_to_double(&v, &when) < 0:
                r = -1
            elif when >= 0 and when < 253402300800.0:  # hookside._MAX_STAMP
                when_t = <time_t>when
                if gmtime_r(&when_t, &when_tm) == NULL:
                    r = -1
                else:
                    memcpy(stamp, " (sent ", 7)
                    cut = strftime(stamp + 7, sizeof(stamp) - 9, "%Y-%m-%d %H:%M UTC", &when_tm)
                    stamp[7 + cut] = c')'
                    stamp[8 + cut] = 0
        # doc["text"][:60]: the first 60 code points
        cut = 0
        chars = 0
        while cut < notes[i].text_len and chars < PK_QUOTE_CHARS:
            cut += pk_cp(<const unsigned char*>notes[i].text, cut, &cp)
            chars += 1
        part.n = 0
        buf_adds(&part, "The message \"")
        buf_add(&part, notes[i].text, cut)
        buf_adds(&part, "\" replies to an earlier message")
        buf_adds(&part, stamp)
        buf_adds(&part, ":\n")
        buf_add(&part, s, n)
        free(s)
        if r == 0 and not part.oom:
            if text.n:
                buf_add(text, "\n\n", 2)
            buf_add(text, part.p, part.n)
            # a later style equal to this whole part is not repeated
            buf_add(&seen, <const char*>&part.n, sizeof(size_t))
            buf_add(&seen, part.p, part.n)
        elif part.oom:
            r = -1
    buf_free(&seen)
    buf_free(&part)
    return -1 if r < 0 or text.oom else 0


cdef int pk_summary(Buf* b, const PkNote* note) noexcept nogil:
    """Note.summary as JSON: 0 or -1."""
    cdef JSpan author
    buf_adds(b, "{\"note\":")
    pk_json_text(b, note.name, strlen(note.name))
    buf_adds(b, ",\"msg_id\":")
    if pk_canon_key(b, &note.top, "msg_id") < 0:
        return -1
    buf_adds(b, ",\"chat_id\":")
    if pk_canon_key(b, &note.top, "chat_id") < 0:
        return -1
    buf_adds(b, ",\"author_user_id\":")
    if js_find_key(&note.top, "author", 6, &author) == 1 and author.kind == JS_OBJECT:
        if pk_canon_key(b, &author, "user_id") < 0:
            return -1
    else:
        buf_adds(b, "null")
    buf_adds(b, "}")
    return 0


cdef int pk_queue_pickup(Buf* b, const HookCtx* ctx, PkNote* notes, int count) noexcept nogil:
    """The queue_pickup datagram, keys in hookside's order: 0 or -1."""
    cdef int want
    cdef int i
    cdef int first
    buf_adds(b, "{\"hook_event_name\":\"")
    buf_adds(b, WIRE_QUEUE_PICKUP)
    buf_adds(b, "\",\"session\":")
    pk_json_text(b, ctx.session, strlen(ctx.session))
    for want in range(2):
        buf_adds(b, ",\"expired\":[" if want else ",\"consumed\":[")
        first = 1
        for i in range(count):
            if (notes[i].expired if want else notes[i].consumed):
                if not first:
                    buf_add(b, ",", 1)
                first = 0
                if pk_summary(b, &notes[i]) < 0:
                    return -1
        buf_adds(b, "]")
    buf_adds(b, "}")
    return -1 if b.oom else 0


# --- the step ------------------------------------------------------------------

cdef int pk_decide(const HookCtx* ctx, PkNote* notes, int* count, double now,
                   const char* snap_path, const char* mark_path, const char* stamp,
                   Buf* snap_json, Buf* pickup, Buf* context) noexcept nogil:
    """Everything hookside.prompt_submitted works out before its first
    effect: 0, or -1 to decline (nothing has changed on disk)."""
    cdef char folder[PATH_CAP]
    cdef struct_stat st
    cdef JSpan prompt_v
    cdef JSpan ctop
    cdef PolSnap cs
    cdef PkSet* new = NULL
    cdef PkSet* joined = NULL
    cdef char* prompt
    cdef char* snap
    cdef size_t plen
    cdef size_t pos = 0
    cdef long n
    cdef int remaining = 0
    cdef int use_joined = 0
    cdef int i
    cdef int r = -1
    if snprintf(folder, PATH_CAP, "%s/claude-notes-%s", ctx.session_dir, ctx.session) >= PATH_CAP:
        return -1
    if js_find_key(&ctx.top, "prompt", 6, &prompt_v) != 1:
        return -1
    prompt = pk_decode(&prompt_v, &plen)
    if prompt == NULL:
        return -1
    if pk_list_notes(folder, notes, count) < 0:
        free(prompt)
        return -1
    # notes.pickup: the prompt must be exactly the notes' texts, in order,
    # with only white space around them (notes._exact); expired notes too
    pos = pk_skip_space(prompt, plen, 0)
    for i in range(count[0]):
        if pk_load_note(folder, &notes[i], now) < 0:
            free(prompt)
            return -1
        if notes[i].foreign:
            continue
        n = <long>(notes[i].strip_b - notes[i].strip_a)
        if <long>(plen - pos) >= n and memcmp(prompt + pos, notes[i].text + notes[i].strip_a, n) == 0:
            notes[i].consumed = 1
            pos = pk_skip_space(prompt, plen, pos + <size_t>n)
    if pos != plen:
        # not made of notes alone: nothing is taken; a long paste's tags are
        # the Python twin's to take off (notes.unwrap_pastes)
        for i in range(count[0]):
            notes[i].consumed = 0
        if memmem(prompt, plen, "<pasted_content id=\"", 20) != NULL:
            free(prompt)
            return -1
    for i in range(count[0]):
        # expired notes that were not taken are deleted and reported, and
        # count as waiting for this prompt (notes.pickup, hookside.task_rules)
        if not notes[i].consumed:
            remaining += 1
        else:
            notes[i].expired = 0
    if remaining == count[0]:
        # nothing taken while a member's note waits (not expired, not the
        # owner's): the prompt is blocked (hookside._unmatched), which the
        # Python twin does; a claimed message declined already (pol_prompt_kind)
        for i in range(count[0]):
            if not notes[i].foreign and not notes[i].expired and not pk_exempt(&notes[i]):
                free(prompt)
                return -1
    free(prompt)
    new = <PkSet*>calloc(1, sizeof(PkSet))
    joined = <PkSet*>calloc(1, sizeof(PkSet))
    snap = <char*>malloc(FSIO_MAX_READ + 1)
    if new == NULL or joined == NULL or snap == NULL:
        free(new)
        free(joined)
        free(snap)
        return -1
    pk_set_init(joined, PK_TERMINAL)
    if pk_task_rules(ctx, new, notes, count[0], remaining) == 0:
        r = 0
        if lstat(mark_path, &st) == 0:
            # an open task: the prompt joins it (hookside.joined); a foreign
            # or missing snapshot reads as none
            n = pol_load(snap_path, snap, &ctop, &cs)
            if n == -3:
                r = -1
            elif n >= 0 and not cs.terminal:
                r = -1 if new.origin == PK_TERMINAL else pk_joined(ctx, joined, new, &ctop)
                use_joined = 1
        if r == 0:
            r = pk_snapshot_json(snap_json, joined if use_joined else new, stamp)
        if r == 0:
            r = pk_context(context, notes, count[0])
        for i in range(count[0]):
            if r == 0 and (notes[i].consumed or notes[i].expired):
                r = pk_queue_pickup(pickup, ctx, notes, count[0])
                break
    pk_set_free(new)
    pk_set_free(joined)
    free(new)
    free(joined)
    free(snap)
    return r


cdef void pk_notes_free(PkNote* notes, int count) noexcept nogil:
    cdef int i
    for i in range(count):
        free(notes[i].data)
        free(notes[i].text)


cdef int pk_prompt_with_notes(const HookCtx* ctx, HookOut* out, const char* snap_path,
                              const char* mark_path) noexcept nogil:
    """hookside.prompt_submitted while notes are outstanding (hookside.pxi's
    pol_prompt_submitted hands over here).  STEP_OK, STEP_PRINT (extra
    context in out) or STEP_DECLINE."""
    cdef char folder[PATH_CAP]
    cdef char path[PATH_CAP]
    cdef char stamp[64]
    cdef char mark[80]
    cdef timespec ts
    cdef PkNote* notes
    cdef Buf snap_json
    cdef Buf pickup
    cdef Buf context
    cdef Buf printed
    cdef double now
    cdef int count = 0
    cdef int i
    cdef int k
    cdef int r
    notes = <PkNote*>calloc(PK_MAX_NOTES, sizeof(PkNote))
    if notes == NULL:
        return STEP_DECLINE
    snap_json.p = pickup.p = context.p = printed.p = NULL
    snap_json.n = pickup.n = context.n = printed.n = 0
    snap_json.cap = pickup.cap = context.cap = printed.cap = 0
    snap_json.oom = pickup.oom = context.oom = printed.oom = 0
    clock_gettime(CLOCK_REALTIME, &ts)
    now = <double>ts.tv_sec + <double>ts.tv_nsec / 1e9
    snprintf(stamp, sizeof(stamp), "%ld.%06ld", <long>ts.tv_sec, <long>(ts.tv_nsec // 1000))
    r = pk_decide(ctx, notes, &count, now, snap_path, mark_path, stamp, &snap_json, &pickup, &context)
    if r == 0 and context.n:
        buf_adds(&printed, "{\"hookSpecificOutput\":{\"hookEventName\":\"UserPromptSubmit\",\"additionalContext\":")
        pk_json_text(&printed, context.p, context.n)
        buf_adds(&printed, "}}")
        if printed.oom or printed.n > HOOK_OUT_CAP:
            r = -1
    out.reason = "policy: the notes need the Python twin"
    if r == 0:
        # the effects, in hookside's order
        snprintf(folder, PATH_CAP, "%s/claude-notes-%s", ctx.session_dir, ctx.session)
        for k in range(2):
            for i in range(count):
                if (notes[i].expired if k else notes[i].consumed):
                    if snprintf(path, PATH_CAP, "%s/%s", folder, notes[i].name) < PATH_CAP:
                        unlink(path)
        # the notes are gone: the daemon learns which messages Claude took
        # even if the task's rules cannot be written
        if pickup.n:
            ctx.send(ctx.send_state, pickup.p, pickup.n)
        k = snprintf(mark, sizeof(mark), "%s\n", stamp)
        if pol_write_atomic(snap_path, snap_json.p, snap_json.n) < 0:
            unlink(snap_path)
        elif pol_write_atomic(mark_path, mark, <size_t>k) < 0:
            unlink(snap_path)
        else:
            if printed.n:
                memcpy(out.buf, printed.p, printed.n)
                out.len = printed.n
                out.exit_code = 0
                r = 1
    pk_notes_free(notes, count)
    free(notes)
    buf_free(&snap_json)
    buf_free(&pickup)
    buf_free(&context)
    buf_free(&printed)
    if r < 0:
        return STEP_DECLINE
    return STEP_PRINT if r == 1 else STEP_OK
