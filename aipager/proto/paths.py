"""Where every aipager file lives, as pure functions of an environment mapping.

The compiled hook (`_fasthook/paths.pxi`) resolves the same names in C; the
shared table in ``tests/cases/paths.json`` keeps the two in step.  Nothing here
touches the file system, so callers (and tests) pass the environment they mean.

Layout:
- private folder: ``/tmp/aipager-<uid>``, the default home of everything
  below that has no folder of its own.  It is never a shared name: it is made
  0700 by whoever needs it first and refused when it exists with another
  owner, another mode or as a symlink (``aipager.proto.trust``).
- control folder: the folder of the control socket.  It holds the socket,
  the spool of events the socket could not take, and model-switch markers.
- session folder: ``$AIPAGER_INSTANCE_DIR`` or the private folder.
  Per-session files the hook and Claude Code's status line read and write
  (status, task rules, permission notes, dtach sockets).
- config/state/data folders follow XDG with ``HOME`` as the base.
"""

from __future__ import annotations

import posix

# typing imports re; the pure-Python hook twin imports this module on its hot
# path, so the annotation-only import stays out of the runtime.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Mapping

SOCKET_NAME = "aipager.sock"
SPOOL_NAME = "aipager-spool"
#: a PermissionRequest's reply socket: <control folder>/aipager-reply-<request id>.sock
REPLY_PREFIX = "aipager-reply-"
SESSION_PREFIX = "claude-"
#: the private folder is PRIVATE_PREFIX + the uid (_fasthook/paths.pxi spells it out too)
PRIVATE_PREFIX = "/tmp/aipager-"


# ``import os`` alone costs the pure-Python hook twin ~1.2x python's own start
# (stat, _collections_abc, posixpath): the hot-path names below join and split
# with these copies of posixpath.join/dirname (same results for str; anything
# else goes to os.path), and os is imported only where a name needs more.


def _join(a, *parts):
    if type(a) is not str or any(type(b) is not str for b in parts):
        import os

        return os.path.join(a, *parts)
    path = a
    for b in parts:
        if b.startswith("/"):
            path = b
        elif not path or path.endswith("/"):
            path += b
        else:
            path += "/" + b
    return path


def _isabs(p) -> bool:
    if type(p) is not str:
        import os

        return os.path.isabs(p)
    return p.startswith("/")


def _dirname(p):
    if type(p) is not str:
        import os

        return os.path.dirname(p)
    head = p[:p.rfind("/") + 1]
    if head and head != "/" * len(head):
        head = head.rstrip("/")
    return head


def private_dir() -> str:
    """The user's private folder, ``/tmp/aipager-<uid>`` (no environment variable moves it)."""
    return f"{PRIVATE_PREFIX}{posix.getuid()}"


def socket_path(env: Mapping[str, str]) -> str:
    """The control socket, first match of the documented order."""
    inst = env.get("AIPAGER_INSTANCE_DIR")
    if inst:
        return _join(inst, SOCKET_NAME)
    explicit = env.get("AIPAGER_SOCKET_PATH")
    if explicit:
        return explicit
    runtime = env.get("XDG_RUNTIME_DIR")
    if runtime:
        return _join(runtime, SOCKET_NAME)
    return _join(private_dir(), SOCKET_NAME)


def control_dir(env: Mapping[str, str]) -> str:
    return _dirname(socket_path(env)) or "."


def spool_dir(env: Mapping[str, str]) -> str:
    """Events the hook could not send (queue full) wait here for the daemon."""
    return _join(control_dir(env), SPOOL_NAME)


def reply_socket(env: Mapping[str, str], request_id: str) -> str:
    """The socket a PermissionRequest hook waits on for the daemon's decision."""
    return _join(control_dir(env), f"{REPLY_PREFIX}{request_id}.sock")


def session_dir(env: Mapping[str, str]) -> str:
    return env.get("AIPAGER_INSTANCE_DIR") or private_dir()


def _session_file(pattern: str) -> Callable[[Mapping[str, str], str], str]:
    """A session's file in the session folder: ``pattern`` with the session's name."""

    def where(env: Mapping[str, str], session: str) -> str:
        return _join(session_dir(env), pattern.format(session))

    return where


status_file = _session_file("claude-status-{}.json")
#: the current task's rules, written at UserPromptSubmit, read at PreToolUse
policy_file = _session_file("claude-policy-{}.json")
#: exists while a task is open (UserPromptSubmit until Stop)
task_mark = _session_file("claude-policy-{}.open")
#: one permission note per chat message the daemon typed into the session
notes_dir = _session_file("claude-notes-{}")
#: exists while the daemon types a chat message into the session: a crash in that
#: window leaves it, and the next start clears the input box
typing_mark = _session_file("claude-typing-{}.json")


def floor_file(env: Mapping[str, str]) -> str:
    """The effective safety floor the daemon publishes for the hook."""
    return _join(session_dir(env), f"claude-policy-.floor-{posix.getuid()}.json")


def modelswitch_marker(env: Mapping[str, str], session: str) -> str:
    return _join(control_dir(env), f"aipager-modelswitch-{session}.json")


def dtach_socket(env: Mapping[str, str], session: str) -> str:
    """dtach socket of session ``claude-NAME``: ``claude-dtach-NAME.sock``."""
    name = session[len(SESSION_PREFIX):] if session.startswith(SESSION_PREFIX) else session
    return _join(session_dir(env), f"claude-dtach-{name}.sock")


def home(env: Mapping[str, str]) -> str:
    found = env.get("HOME")
    if found:
        return found
    import os

    return os.path.expanduser("~")


def _xdg(env: Mapping[str, str], var: str, default: str) -> str:
    value = env.get(var)
    # XDG says relative values are invalid and must be ignored.
    if value and _isabs(value):
        return value
    return _join(home(env), default)


def config_dir(env: Mapping[str, str]) -> str:
    return _join(_xdg(env, "XDG_CONFIG_HOME", ".config"), "aipager")


def state_dir(env: Mapping[str, str]) -> str:
    return _join(_xdg(env, "XDG_STATE_HOME", ".local/state"), "aipager")


def data_dir(env: Mapping[str, str]) -> str:
    return _join(_xdg(env, "XDG_DATA_HOME", ".local/share"), "aipager")


def file_in(folder: Callable[[Mapping[str, str]], str],
            name: str) -> Callable[[Mapping[str, str]], str]:
    """The file (or folder) ``name`` in the folder ``folder`` gives for an environment:
    a location as a function of the environment, as every one here is."""

    def where(env: Mapping[str, str]) -> str:
        return _join(folder(env), name)

    return where


config_file = file_in(config_dir, "config.json")
#: the owner's own policy additions (roles, floor additions)
policy_user_file = file_in(config_dir, "policy.json")
daemon_state_file = file_in(state_dir, "daemon-state.json")
#: what the daemon accepted since its last saved state (``daemon.journal``)
journal_file = file_in(state_dir, "daemon-journal.bin")
#: the bot's own state: message ids of cards, reply routing, unsent messages
chat_state_file = file_in(state_dir, "chat-state.json")
#: Telegram updates received and not yet handled and saved (``bot.inbox``)
updates_journal_file = file_in(state_dir, "chat-updates.jsonl")
#: sign-in links to the page that ``aipager page`` made (owner-only: ``web.links``)
page_links_dir = file_in(state_dir, "page-links")
#: what the page keeps across a restart: its signed-in browsers (hashes) and conversations
page_state_file = file_in(state_dir, "page-state.json")
audit_log = file_in(state_dir, "audit.jsonl")
#: open invitations to the team, by their codes' hashes (``daemon.invites``)
invites_file = file_in(state_dir, "invites.json")
log_file = file_in(state_dir, "daemon.log")


def files_dir(env: Mapping[str, str]) -> str:
    """Files moving between the chat and sessions (owner-only): under the runtime
    folder when there is one, else the cache; never a shared /tmp name."""
    runtime = env.get("XDG_RUNTIME_DIR")
    if runtime and _isabs(runtime):
        return _join(runtime, "aipager", "files")
    return _join(_xdg(env, "XDG_CACHE_HOME", ".cache"), "aipager", "files")


#: a person's uploads are kept in ``<files>/<UPLOADS_PREFIX><their user id>``: the floor
#: keeps the files folder from every task but the owner's, and opens only this folder, to
#: that person's own tasks (``policy.floor.own_uploads``)
UPLOADS_PREFIX = "in/u"


def uploads_dir(env: Mapping[str, str], user_id: int) -> str:
    """Where the files ``user_id`` sent from the phone are kept (``aipager.files``)."""
    return _join(files_dir(env), f"{UPLOADS_PREFIX}{int(user_id)}")


#: the hub a host joined and the credential file it joins with, as ``aipager start --join``
#: (or ``service install --join``) was given them: the floor keeps that file from every
#: task but the owner's (``policy.model.config_secrets``)
joined_hub_file = file_in(state_dir, "hub-join.json")


def lock_file(env: Mapping[str, str]) -> str:
    inst = env.get("AIPAGER_INSTANCE_DIR")
    if inst:
        return _join(inst, "daemon.lock")
    return _join(data_dir(env), "daemon.lock")


def claude_settings(env: Mapping[str, str]) -> str:
    return _join(home(env), ".claude", "settings.json")


def ax_code_hooks(project: str) -> str:
    """AX Code's hook file of the project in ``project``."""
    import os

    return os.path.join(os.path.abspath(project), ".ax-code", "hooks.json")
