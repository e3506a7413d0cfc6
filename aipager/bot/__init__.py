"""The Telegram chat (aiogram 3): what the phone shows and what its taps and messages do.

``service.ChatBot`` puts it together and runs as a daemon service; ``outbox`` is
the only sender; ``notify`` turns the daemon's outputs into messages;
``routers/`` hold the handlers by concern; ``view`` and ``markdown`` are pure.

aiogram is imported here first, with its models built as they are used rather
than all at import (``aipager.lazyaiogram``; its cost is the README's figure, from
``python -m bench --only bot``), before any module of the chat imports it.
"""

from aipager import lazyaiogram as _lazyaiogram

_lazyaiogram.import_aiogram()
