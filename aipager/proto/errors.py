"""One error tree for everything aipager raises on purpose.

    AipagerError
    ├── ConfigError              config file missing, unreadable or invalid
    │   └── HubRefused           the hub's broker refused this host's credential (revoked)
    ├── SettingsError            ~/.claude/settings.json cannot be read or written safely
    ├── PolicyError              a policy file or rule is unusable
    │   ├── PolicySchemaError    the document does not match policy/schema.json
    │   └── PatternError         a pattern is outside the portable dialect
    ├── DaemonError
    │   ├── DaemonUnavailable    nobody listens on the control socket
    │   └── DaemonAlreadyRunning the single-instance lock is held
    ├── SessionError
    │   ├── InvalidSessionName   not letters, digits, '-', '_'; or new and starting with '-'
    │   └── SessionNotFound      no live dtach socket for that name
    ├── TelegramError
    │   ├── TokenRejected        getMe answered 401/404
    │   ├── TelegramUnreachable  no answer from the Bot API
    │   └── ChatUnreachable      the chat never talked to the bot / is unknown
    ├── ServiceError             systemctl is missing or refused a command
    └── UnsafePath               a shared path is another user's, a symlink or too open

Each error carries a message meant for a person; the CLI prints it without a
traceback and maps the class to an exit code (``exit_code``).  Boundaries
translate foreign exceptions into these with ``raise X(msg) from exc``.
"""

from __future__ import annotations


class AipagerError(Exception):
    """Base of every error aipager raises deliberately."""

    #: exit code the CLI uses when this error ends a command
    exit_code = 1


class ConfigError(AipagerError):
    exit_code = 3


class HubRefused(ConfigError):
    """The broker answered "Authorization Violation": the hub revoked this host (or never
    invited this credential).  Trying again every second cannot help."""


class SettingsError(AipagerError):
    exit_code = 3


class PolicyError(AipagerError):
    exit_code = 3


class PolicySchemaError(PolicyError):
    pass


class PatternError(PolicyError):
    pass


class DaemonError(AipagerError):
    pass


class DaemonUnavailable(DaemonError):
    exit_code = 7


class DaemonAlreadyRunning(DaemonError):
    exit_code = 9


class SessionError(AipagerError):
    pass


class InvalidSessionName(SessionError):
    exit_code = 2


class SessionNotFound(SessionError):
    exit_code = 4


class TelegramError(AipagerError):
    pass


class TokenRejected(TelegramError):
    exit_code = 4


class TelegramUnreachable(TelegramError):
    exit_code = 7


class ChatUnreachable(TelegramError):
    exit_code = 5


class ServiceError(AipagerError):
    exit_code = 6


class UnsafePath(AipagerError):
    """A path aipager would trust (private folder, socket) belongs to another user,
    is a symlink or is open to others: possibly an attack; never used."""

    exit_code = 8
