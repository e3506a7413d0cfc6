"""What every client of the daemon's port shares: the chat and the web page.

- ``people``: who acts (``Sender``) and what their role lets them do here (``refusal``).
- ``members``: the config's people and the policy's roles → a ``Sender``.
- ``prompts``: how a person's message becomes a prompt: checked, held or typed with its
  permission note, audited.

Nothing here imports aiogram or aiohttp, nor any client: a client imports this, never
the other client.
"""
