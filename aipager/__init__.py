"""aipager: Telegram remote control for Claude Code.

Only the version lives here: the hook twin, `aipager --help` and the daemon all
import this package, and anything imported here taxes every one of them.
"""

__version__ = "0.1.0"
