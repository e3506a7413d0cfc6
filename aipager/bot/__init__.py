"""The Telegram chat (aiogram 3): what the phone shows and what its taps and messages do.

``service.ChatBot`` puts it together and runs as a daemon service; ``outbox`` is
the only sender; ``notify`` turns the daemon's outputs into messages;
``routers/`` hold the handlers by concern; ``view`` and ``markdown`` are pure.
"""
