# What the compiled side shares with Python: the numbers, names and field tables
# setup.py generates into wire_constants.h from aipager/proto/wire.py and the
# hook-side modules that own a limit (setup.py WIRE_CONSTANTS, wire_constants_h).
# Nothing here is a value: each name below is declared only, and the value
# is whatever the Python source said at build time.  Never spell one of these
# values in a .pxi/.pyx; add it to WIRE_CONSTANTS and declare it here.
#
# Plain C only (macros and static tables): included by hook.pyx, policy_ext.pyx,
# drain_ext.pyx and drain_exe.pyx; nothing is set at module init.

cdef extern from "wire_constants.h" nogil:
    enum:
        # aipager.proto.wire: the largest datagram the hook sends; what a receiver
        # reads at most (MAX_DATAGRAM plus slack); the reply wait's limits
        WIRE_MAX_DATAGRAM
        WIRE_RECV_MAX
        WIRE_REPLY_MAX
        WIRE_MAX_BRACKETS
        # aipager.hookpy.reply: DEFAULT_MS, MIN_MS, MAX_MS, SUN_PATH_MAX,
        # ELICITATION_DEFAULT_MS, ELICITATION_MAX_MS
        REPLY_DEFAULT_MS
        REPLY_MIN_MS
        REPLY_MAX_MS
        REPLY_SUN_PATH_MAX
        REPLY_ELICITATION_DEFAULT_MS
        REPLY_ELICITATION_MAX_MS
        # aipager.hookpy.hook.STATUS_MAX: status files above it are ignored
        HOOK_STATUS_MAX
        # aipager.hookpy.common.MEMORY_CAP: the RLIMIT_AS soft limit
        COMMON_MEMORY_CAP
        # aipager.proto.spoolfile.TRIES: spool names tried, one nanosecond apart
        SPOOLFILE_TRIES
        # aipager.daemon.drain: MAX_BACKLOG (bytes held before the socket is left
        # unread) and PIPE_SIZE (F_SETPIPE_SZ on the pipe to the daemon)
        DRAIN_MAX_BACKLOG
        DRAIN_PIPE_SIZE
        # aipager.proto.fsio.MAX_READ: the largest policy file read (snapshot, floor)
        FSIO_MAX_READ
        # aipager.policy.marker.MAX_MARKER, notes.TTL_SECONDS, sendfile.MAX_BYTES
        MARKER_MAX_MARKER
        NOTES_TTL_SECONDS
        SENDFILE_MAX_BYTES
        # rows in the tables below
        WIRE_SL_TOKENS_N
        WIRE_STATUSLINE_FIELDS_N
        AXCODE_TOOL_EVENTS_N
        AXCODE_TOOL_NAMES_N

    # aipager.policy.marker.TTL_SECONDS
    const double MARKER_TTL_SECONDS

    # aipager.proto.wire: aipager's own datagrams (hook_event_name or type)
    const char WIRE_QUEUE_PICKUP[]
    const char WIRE_SAFETY_BLOCKED[]
    const char WIRE_SEND_FILES_REFUSED[]
    const char WIRE_PERMISSION_REPLY_TIMEOUT[]
    const char WIRE_STATUSLINE[]
    const char WIRE_HOOK_MEMORY_CAP_HIT[]
    const char WIRE_REPORT_ERROR[]

    # aipager.hookpy.reply: PERMISSION_VAR, ELICITATION_VAR (each event's deadline variable)
    const char REPLY_PERMISSION_VAR[]
    const char REPLY_ELICITATION_VAR[]

    # aipager.proto.wire.HOOK_EVENTS (those the C side names), NOT_FORWARDED[0], NO_SL_TOKENS[0]
    const char WIRE_EVENT_SESSION_START[]
    const char WIRE_EVENT_USER_PROMPT_SUBMIT[]
    const char WIRE_EVENT_PRE_TOOL_USE[]
    const char WIRE_EVENT_PERMISSION_REQUEST[]
    const char WIRE_EVENT_ELICITATION[]
    const char WIRE_EVENT_STOP[]
    const char WIRE_EVENT_STOP_FAILURE[]
    const char WIRE_EVENT_PRE_MODEL_SWITCH[]
    const char WIRE_NOT_FORWARDED[]
    const char WIRE_NO_SL_TOKENS[]

    # aipager.proto.paths: SOCKET_NAME, SPOOL_NAME, REPLY_PREFIX, SESSION_PREFIX, PRIVATE_PREFIX
    const char PATHS_SOCKET_NAME[]
    const char PATHS_SPOOL_NAME[]
    const char PATHS_REPLY_PREFIX[]
    const char PATHS_SESSION_PREFIX[]
    const char PATHS_PRIVATE_PREFIX[]

    # aipager.hookpy.common.STATUS_PATHS (the ones read on their own), dotted
    const char STATUS_PATH_MODEL_NAME[]
    const char STATUS_PATH_MODEL_ID[]
    const char STATUS_PATH_CONTEXT_PCT[]
    const char STATUS_PATH_COST_USD[]

    # One JSON object member per row: ``before`` is the text up to its value
    # (a comma first, but in row 0), ``path`` the value's dotted path in
    # Claude Code's status JSON (json.pxi js_find_path).
    ctypedef struct wire_field:
        const char* before
        const char* path
    # sl_tokens: aipager.proto.wire.SL_TOKEN_KEYS at aipager.hookpy.common.STATUS_PATHS
    const wire_field WIRE_SL_TOKENS[]
    # the statusline datagram after "session": every STATUS_PATHS entry
    const wire_field WIRE_STATUSLINE_FIELDS[]

    # aipager.hookpy.axcode.TOOL_EVENTS
    const char* const AXCODE_TOOL_EVENTS[]
    # aipager.hookpy.axcode.TOOL_NAMES: AX Code's tool id -> Claude Code's name
    ctypedef struct axcode_tool_name:
        const char* ax
        const char* claude
    const axcode_tool_name AXCODE_TOOL_NAMES[]
    # aipager.hookpy.axcode.REFUSED
    const char AXCODE_REFUSED[]

    # every value above as JSON, "aipager-wire:{...}" (main.c keeps it in the
    # executables, policy_ext.pyx returns it): the tests compare it with Python
    const char WIRE_STAMP[]

# Spellings composed from the values above by the C preprocessor (string
# literals joined at compile time: nothing more to do at run time).
cdef extern from *:
    """
    #include "wire_constants.h"
    /* "PreToolUse" with its quotes, as it appears in the raw event */
    #define WIRE_PRE_TOOL_USE_QUOTED "\\"" WIRE_EVENT_PRE_TOOL_USE "\\""
    """
    const char WIRE_PRE_TOOL_USE_QUOTED[]
