"""Event families, one router each.  ``ROUTERS`` is the order they see an event.

Order matters where two families subscribe to the same key: ``subagents``
runs first so an agent exists (or continues) before ``tools`` counts its tool
call, and ``permissions`` runs after ``tools`` so a question or a closed request
lands on a card that already has the row.
"""

from __future__ import annotations

from aipager.daemon.events import (
    compaction,
    display,
    files,
    forms,
    own,
    permissions,
    prompts,
    session,
    statusline,
    subagents,
    tools,
)

ROUTERS = (
    session.router,
    prompts.router,
    subagents.router,
    tools.router,
    permissions.router,
    forms.router,
    compaction.router,
    display.router,
    statusline.router,
    files.router,
    own.router,
)
