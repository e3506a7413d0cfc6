# A depth-aware JSON scanner for the hook's no-interpreter fast path.
#
# TWIN OF aipager/proto/jsonlite.py:
#   js_parse = loads
#
# Everything here is C-typed, `noexcept nogil` and allocation-free, so it runs
# before (and without) any CPython initialisation: the hook ELF links no
# libpython.  Reusable by every `include`r (hook.pyx, the policy files,
# policy_ext.pyx).
#
# SEMANTICS (kept identical to the pure-Python twin, aipager/proto/jsonlite.py,
# which uses CPython's `_json` with strict=True on the strict-UTF-8 text):
# - RFC 8259 grammar; whitespace is exactly space, \t, \n, \r.
# - Strings: raw bytes < 0x20 are invalid; escapes \" \\ \/ \b \f \n \r \t
#   \uXXXX only; non-ASCII bytes must be strict UTF-8 (no overlongs, no
#   encoded surrogates, <= U+10FFFF), as `bytes.decode("utf-8")` demands.
# - Numbers: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?
# - NaN / Infinity / -Infinity (which Python accepts) and nesting deeper than
#   JS_MAX_DEPTH are reported as invalid here: callers DECLINE on any -1, and
#   the Python twin then decides, so the two never disagree.
# - Duplicate keys: js_find_key returns the LAST occurrence, as a Python dict
#   built from the same text would hold (a decoy earlier duplicate can never
#   hide the value Python would see).
#
# API (all indices are byte offsets; a JSpan points into the caller's buffer):
#   js_parse(buf, n, &top)            whole buffer is one value (+ whitespace)
#                                     -> 0 ok, -1 invalid.  Validates fully.
#   js_find_key(&obj, key, keylen, &out)
#                                     -> 1 found (out = value), 0 absent or
#                                     obj is not an object, -1 invalid.
#   js_find_path(&obj, "a.b.c", &out) nested lookup through objects only;
#                                     a non-object on the way means absent.
#   js_object_next(&obj, &pos, &key, &val)   iterate members: start with
#                                     pos = 0; -> 1 member, 0 end, -1 invalid.
#   js_array_next(&arr, &pos, &item)  iterate items likewise.
#   js_decode(&str, buf, cap)         decode a JS_STRING span into UTF-8 in
#                                     buf (NUL-terminated); -> decoded length
#                                     or -1 (not a string, cap too small,
#                                     lone surrogate).  The result may hold NUL
#                                     bytes (from \u0000): use js_decode_cstr
#                                     when a C string is needed.
#   js_decode_cstr(&str, buf, cap)    same, but -1 if the text holds a NUL.
#   js_string_eq(&str, s, slen)       decoded string == s (escapes handled).
#   js_is_number(&v) / js_to_double(&v, &d)  number tokens (strtod, C locale).
#
# A span's kind is one of JS_OBJECT .. JS_NULL; p/n cover the raw token (for
# strings including the quotes), so a value can be copied verbatim into an
# outgoing datagram.

from libc.string cimport memcmp, memcpy, memchr, strlen
from libc.stdlib cimport strtod

cdef enum:
    JS_NONE = 0
    JS_OBJECT = 1
    JS_ARRAY = 2
    JS_STRING = 3
    JS_NUMBER = 4
    JS_TRUE = 5
    JS_FALSE = 6
    JS_NULL = 7
    # deeper documents are declined to the Python twin (whose own limit is
    # CPython's recursion limit, ~1000)
    JS_MAX_DEPTH = 256

ctypedef struct JSpan:
    const char* p
    size_t n
    int kind


cdef inline bint js_ws(unsigned char c) noexcept nogil:
    return c == 32 or c == 9 or c == 10 or c == 13


cdef inline size_t js_skip_ws(const unsigned char* s, size_t n, size_t i) noexcept nogil:
    while i < n and js_ws(s[i]):
        i += 1
    return i


cdef inline int js_hex(unsigned char c) noexcept nogil:
    if c >= c'0' and c <= c'9':
        return c - c'0'
    if c >= c'a' and c <= c'f':
        return c - c'a' + 10
    if c >= c'A' and c <= c'F':
        return c - c'A' + 10
    return -1


cdef inline long js_hex4(const unsigned char* s, size_t n, size_t i) noexcept nogil:
    """The 16-bit value of 4 hex digits at s[i:i+4], or -1."""
    cdef long v = 0
    cdef int h
    cdef size_t k
    if i + 4 > n:
        return -1
    for k in range(4):
        h = js_hex(s[i + k])
        if h < 0:
            return -1
        v = v * 16 + h
    return v


cdef size_t js_utf8_len(const unsigned char* s, size_t n, size_t i) noexcept nogil:
    """Length of the strict UTF-8 sequence starting at s[i] (>= 0x80), 0 if invalid."""
    cdef unsigned char c = s[i]
    cdef unsigned char c1
    if c >= 0xC2 and c <= 0xDF:
        if i + 1 < n and (s[i + 1] & 0xC0) == 0x80:
            return 2
        return 0
    if c >= 0xE0 and c <= 0xEF:
        if i + 2 >= n:
            return 0
        c1 = s[i + 1]
        if (c1 & 0xC0) != 0x80 or (s[i + 2] & 0xC0) != 0x80:
            return 0
        if c == 0xE0 and c1 < 0xA0:
            return 0  # overlong
        if c == 0xED and c1 >= 0xA0:
            return 0  # encoded surrogate
        return 3
    if c >= 0xF0 and c <= 0xF4:
        if i + 3 >= n:
            return 0
        c1 = s[i + 1]
        if (c1 & 0xC0) != 0x80 or (s[i + 2] & 0xC0) != 0x80 or (s[i + 3] & 0xC0) != 0x80:
            return 0
        if c == 0xF0 and c1 < 0x90:
            return 0  # overlong
        if c == 0xF4 and c1 >= 0x90:
            return 0  # above U+10FFFF
        return 4
    return 0


cdef long js_skip_string(const unsigned char* s, size_t n, size_t i) noexcept nogil:
    """s[i] is the opening quote; index just past the closing quote, or -1."""
    cdef unsigned char c
    cdef size_t k
    i += 1
    while i < n:
        c = s[i]
        if c == c'"':
            return <long>(i + 1)
        if c == c'\\':
            if i + 1 >= n:
                return -1
            c = s[i + 1]
            if c == c'u':
                if js_hex4(s, n, i + 2) < 0:
                    return -1
                i += 6
            elif (c == c'"' or c == c'\\' or c == c'/' or c == c'b' or c == c'f'
                  or c == c'n' or c == c'r' or c == c't'):
                i += 2
            else:
                return -1
        elif c < 0x20:
            return -1
        elif c >= 0x80:
            k = js_utf8_len(s, n, i)
            if k == 0:
                return -1
            i += k
        else:
            i += 1
    return -1


cdef long js_skip_number(const unsigned char* s, size_t n, size_t i) noexcept nogil:
    cdef size_t start
    if i < n and s[i] == c'-':
        i += 1
    if i >= n:
        return -1
    if s[i] == c'0':
        i += 1
    elif s[i] >= c'1' and s[i] <= c'9':
        while i < n and s[i] >= c'0' and s[i] <= c'9':
            i += 1
    else:
        return -1
    if i < n and s[i] == c'.':
        i += 1
        start = i
        while i < n and s[i] >= c'0' and s[i] <= c'9':
            i += 1
        if i == start:
            return -1
    if i < n and (s[i] == c'e' or s[i] == c'E'):
        i += 1
        if i < n and (s[i] == c'+' or s[i] == c'-'):
            i += 1
        start = i
        while i < n and s[i] >= c'0' and s[i] <= c'9':
            i += 1
        if i == start:
            return -1
    return <long>i


cdef inline bint js_lit(const unsigned char* s, size_t n, size_t i, const char* lit, size_t k) noexcept nogil:
    return i + k <= n and memcmp(s + i, lit, k) == 0


cdef long js_skip_value(const unsigned char* s, size_t n, size_t i, int depth, int* kind) noexcept nogil:
    """Validate the value starting at s[i] (no leading whitespace); index past it or -1."""
    cdef unsigned char c
    cdef long r
    cdef int sub
    if i >= n or depth > JS_MAX_DEPTH:
        return -1
    c = s[i]
    if c == c'"':
        kind[0] = JS_STRING
        return js_skip_string(s, n, i)
    if c == c'{':
        kind[0] = JS_OBJECT
        i = js_skip_ws(s, n, i + 1)
        if i < n and s[i] == c'}':
            return <long>(i + 1)
        while True:
            if i >= n or s[i] != c'"':
                return -1
            r = js_skip_string(s, n, i)
            if r < 0:
                return -1
            i = js_skip_ws(s, n, <size_t>r)
            if i >= n or s[i] != c':':
                return -1
            i = js_skip_ws(s, n, i + 1)
            r = js_skip_value(s, n, i, depth + 1, &sub)
            if r < 0:
                return -1
            i = js_skip_ws(s, n, <size_t>r)
            if i >= n:
                return -1
            if s[i] == c'}':
                return <long>(i + 1)
            if s[i] != c',':
                return -1
            i = js_skip_ws(s, n, i + 1)
    if c == c'[':
        kind[0] = JS_ARRAY
        i = js_skip_ws(s, n, i + 1)
        if i < n and s[i] == c']':
            return <long>(i + 1)
        while True:
            r = js_skip_value(s, n, i, depth + 1, &sub)
            if r < 0:
                return -1
            i = js_skip_ws(s, n, <size_t>r)
            if i >= n:
                return -1
            if s[i] == c']':
                return <long>(i + 1)
            if s[i] != c',':
                return -1
            i = js_skip_ws(s, n, i + 1)
    if c == c't':
        kind[0] = JS_TRUE
        return <long>(i + 4) if js_lit(s, n, i, "true", 4) else -1
    if c == c'f':
        kind[0] = JS_FALSE
        return <long>(i + 5) if js_lit(s, n, i, "false", 5) else -1
    if c == c'n':
        kind[0] = JS_NULL
        return <long>(i + 4) if js_lit(s, n, i, "null", 4) else -1
    kind[0] = JS_NUMBER
    return js_skip_number(s, n, i)


cdef int js_parse(const char* buf, size_t n, JSpan* top) noexcept nogil:
    """The whole of buf[0:n] is one JSON value surrounded by whitespace: 0, else -1."""
    cdef const unsigned char* s = <const unsigned char*>buf
    cdef size_t i = js_skip_ws(s, n, 0)
    cdef int kind = JS_NONE
    cdef long end = js_skip_value(s, n, i, 0, &kind)
    if end < 0:
        return -1
    if js_skip_ws(s, n, <size_t>end) != n:
        return -1
    top.p = buf + i
    top.n = <size_t>end - i
    top.kind = kind
    return 0


cdef int js_object_next(const JSpan* obj, size_t* pos, JSpan* key, JSpan* val) noexcept nogil:
    """Next member of an object span: 1 (key/val set), 0 at the end, -1 invalid.

    Start with pos[0] = 0; pos is an opaque cursor afterwards.
    """
    cdef const unsigned char* s = <const unsigned char*>obj.p
    cdef size_t n = obj.n
    cdef size_t i = pos[0]
    cdef long r
    cdef int kind = JS_NONE
    if obj.kind != JS_OBJECT:
        return -1
    if i == 0:
        i = js_skip_ws(s, n, 1)
    else:
        i = js_skip_ws(s, n, i)
        if i >= n:
            return -1
        if s[i] == c',':
            i = js_skip_ws(s, n, i + 1)
    if i >= n:
        return -1
    if s[i] == c'}':
        pos[0] = i
        return 0
    if s[i] != c'"':
        return -1
    r = js_skip_string(s, n, i)
    if r < 0:
        return -1
    key.p = obj.p + i
    key.n = <size_t>r - i
    key.kind = JS_STRING
    i = js_skip_ws(s, n, <size_t>r)
    if i >= n or s[i] != c':':
        return -1
    i = js_skip_ws(s, n, i + 1)
    r = js_skip_value(s, n, i, 1, &kind)
    if r < 0:
        return -1
    val.p = obj.p + i
    val.n = <size_t>r - i
    val.kind = kind
    pos[0] = <size_t>r
    return 1


cdef int js_array_next(const JSpan* arr, size_t* pos, JSpan* item) noexcept nogil:
    """Next item of an array span: 1 (item set), 0 at the end, -1 invalid.

    Start with pos[0] = 0.
    """
    cdef const unsigned char* s = <const unsigned char*>arr.p
    cdef size_t n = arr.n
    cdef size_t i = pos[0]
    cdef long r
    cdef int kind = JS_NONE
    if arr.kind != JS_ARRAY:
        return -1
    if i == 0:
        i = js_skip_ws(s, n, 1)
    else:
        i = js_skip_ws(s, n, i)
        if i >= n:
            return -1
        if s[i] == c',':
            i = js_skip_ws(s, n, i + 1)
    if i >= n:
        return -1
    if s[i] == c']':
        pos[0] = i
        return 0
    r = js_skip_value(s, n, i, 1, &kind)
    if r < 0:
        return -1
    item.p = arr.p + i
    item.n = <size_t>r - i
    item.kind = kind
    pos[0] = <size_t>r
    return 1


cdef long js_decode(const JSpan* st, char* buf, size_t cap) noexcept nogil:
    """Decode a JS_STRING span into UTF-8 in buf (NUL-terminated); length or -1."""
    cdef const unsigned char* s = <const unsigned char*>st.p
    cdef size_t n = st.n
    cdef size_t i = 1
    cdef size_t o = 0
    cdef unsigned char c
    cdef long u
    cdef long lo
    if st.kind != JS_STRING or n < 2 or cap == 0:
        return -1
    n -= 1  # stop before the closing quote
    while i < n:
        c = s[i]
        if c != c'\\':
            if o + 1 >= cap:
                return -1
            buf[o] = <char>c
            o += 1
            i += 1
            continue
        c = s[i + 1]
        if c != c'u':
            if o + 1 >= cap:
                return -1
            if c == c'n':
                buf[o] = c'\n'
            elif c == c't':
                buf[o] = c'\t'
            elif c == c'r':
                buf[o] = c'\r'
            elif c == c'b':
                buf[o] = c'\b'
            elif c == c'f':
                buf[o] = c'\f'
            else:
                buf[o] = <char>c  # " \ /
            o += 1
            i += 2
            continue
        u = js_hex4(s, n, i + 2)
        if u < 0:
            return -1
        i += 6
        if u >= 0xD800 and u <= 0xDBFF:
            # a high surrogate must be followed by an escaped low one
            if i + 6 > n or s[i] != c'\\' or s[i + 1] != c'u':
                return -1
            lo = js_hex4(s, n, i + 2)
            if lo < 0xDC00 or lo > 0xDFFF:
                return -1
            i += 6
            u = 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00)
        elif u >= 0xDC00 and u <= 0xDFFF:
            return -1
        if u < 0x80:
            if o + 1 >= cap:
                return -1
            buf[o] = <char>u
            o += 1
        elif u < 0x800:
            if o + 2 >= cap:
                return -1
            buf[o] = <char>(0xC0 | (u >> 6))
            buf[o + 1] = <char>(0x80 | (u & 0x3F))
            o += 2
        elif u < 0x10000:
            if o + 3 >= cap:
                return -1
            buf[o] = <char>(0xE0 | (u >> 12))
            buf[o + 1] = <char>(0x80 | ((u >> 6) & 0x3F))
            buf[o + 2] = <char>(0x80 | (u & 0x3F))
            o += 3
        else:
            if o + 4 >= cap:
                return -1
            buf[o] = <char>(0xF0 | (u >> 18))
            buf[o + 1] = <char>(0x80 | ((u >> 12) & 0x3F))
            buf[o + 2] = <char>(0x80 | ((u >> 6) & 0x3F))
            buf[o + 3] = <char>(0x80 | (u & 0x3F))
            o += 4
    buf[o] = 0
    return <long>o


cdef long js_decode_cstr(const JSpan* st, char* buf, size_t cap) noexcept nogil:
    """js_decode, but -1 when the decoded text holds a NUL (never fail open on it)."""
    cdef long k = js_decode(st, buf, cap)
    if k < 0:
        return -1
    if memchr(buf, 0, <size_t>k) != NULL:
        return -1
    return k


cdef bint js_string_eq(const JSpan* st, const char* key, size_t keylen) noexcept nogil:
    """The decoded string equals key[0:keylen] (escaped spellings included)."""
    cdef char tmp[256]
    cdef long k
    if st.kind != JS_STRING or st.n < 2:
        return False
    if memchr(st.p, c'\\', st.n) == NULL:
        return st.n - 2 == keylen and memcmp(st.p + 1, key, keylen) == 0
    if keylen >= sizeof(tmp):
        return False
    k = js_decode(st, tmp, keylen + 1)
    return k == <long>keylen and memcmp(tmp, key, keylen) == 0


cdef int js_find_key(const JSpan* obj, const char* key, size_t keylen, JSpan* out) noexcept nogil:
    """Value of the LAST member named key: 1 found, 0 absent / not an object, -1 invalid."""
    cdef size_t pos = 0
    cdef JSpan k
    cdef JSpan v
    cdef int r
    cdef int found = 0
    if obj.kind != JS_OBJECT:
        return 0
    while True:
        r = js_object_next(obj, &pos, &k, &v)
        if r < 0:
            return -1
        if r == 0:
            return found
        if js_string_eq(&k, key, keylen):
            out[0] = v
            found = 1


cdef int js_find_path(const JSpan* obj, const char* dotted, JSpan* out) noexcept nogil:
    """Nested lookup, e.g. "tool_input.command": 1 found, 0 absent, -1 invalid."""
    cdef JSpan cur = obj[0]
    cdef JSpan nxt
    cdef const char* seg = dotted
    cdef const char* dot
    cdef size_t seglen
    cdef int r
    while True:
        dot = <const char*>memchr(seg, c'.', strlen(seg))
        seglen = <size_t>(dot - seg) if dot != NULL else strlen(seg)
        r = js_find_key(&cur, seg, seglen, &nxt)
        if r <= 0:
            return r
        cur = nxt
        if dot == NULL:
            out[0] = cur
            return 1
        seg = dot + 1


cdef inline bint js_is_number(const JSpan* v) noexcept nogil:
    return v.kind == JS_NUMBER


cdef int js_to_double(const JSpan* v, double* d) noexcept nogil:
    """Parse a JS_NUMBER span with strtod (the C locale is in force): 0 or -1."""
    cdef char tmp[64]
    if v.kind != JS_NUMBER or v.n >= sizeof(tmp):
        return -1
    memcpy(tmp, v.p, v.n)
    tmp[v.n] = 0
    d[0] = strtod(tmp, NULL)
    return 0
