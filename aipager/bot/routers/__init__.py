"""Update handlers by concern: ``commands``, ``taps`` (buttons), ``messages`` (plain text)."""
