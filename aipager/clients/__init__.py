"""What every client of the daemon's port shares: the chat and the web page.

- ``people``: who acts (``Sender``) and what their role lets them do here (``refusal``).
- ``members``: the config's people and the policy's roles → a ``Sender``.
- ``words``: a command's result as the one sentence every surface shows.
- ``asking``: a permission request as both show it: its words, its change, its answers.
- ``prompts``: a person's message as both show it (``words``: without its encoding).
- ``files``: the files people send, and the copies of what the agent sends, on disk.

Nothing here imports aiogram or aiohttp, nor any client: a client imports this, never
the other client.
"""
