"""What installs aipager into its surroundings, used by the CLI at setup time: Claude Code's
settings (``claude_code``), AX Code's hooks (``ax_code``), the systemd user unit
(``systemd``) and the check of a bot token and chat against the Bot API
(``telegram_check``).  Nothing here runs on an event's path."""
