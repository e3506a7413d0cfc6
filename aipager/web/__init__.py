"""The local web page and Telegram Mini App: the chat's views in a browser, served by the daemon.

One aiohttp application (``routes.make_app``) on 127.0.0.1 (``service``): a page of
plain ES modules (``static/``) and the small JSON API under ``/api/`` it uses, with
a live stream of the daemon's outputs (``live``).  It reaches the daemon only
through its port (``aipager.port.backend``), as the chat does, and shares the
chat's rules (``aipager.clients``); it never imports the chat.

- ``auth``: pure checks: Telegram's initData, one-time login tokens and cookie
  sessions, Host and Origin.
- ``gate``: the middlewares that apply them (and the security headers) to every request.
- ``views``: sessions, requests and the conversation as JSON (pure).
- ``live``: ``WebNotifier`` (the daemon's outputs → the live stream and the conversation).
- ``actions``: what a person does from the page, through the port.
- ``routes``: the handlers and the application.
- ``service``: settings, binding, the printed link.
"""
