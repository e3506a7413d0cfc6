"""The fakes' one way to serve: an aiohttp app on an ephemeral 127.0.0.1 port, run by its
own event loop in a daemon thread, so a test (or a real client in another process) reaches
it over HTTP while the test's code stays synchronous."""

from __future__ import annotations

import asyncio
import threading

from aiohttp import web


class ThreadedApp:
    """Mixin: ``start()`` / ``stop()`` around the routes ``add_routes(app)`` adds.

    The class using it sets ``port``, ``_loop``, ``_runner`` and ``_thread`` (to 0/None) in
    its ``__init__`` and names itself in ``what`` (for the start-up error)."""

    what = "fake API"
    port: int
    _loop: asyncio.AbstractEventLoop | None
    _runner: web.AppRunner | None
    _thread: threading.Thread | None

    def add_routes(self, app: web.Application) -> None:
        raise NotImplementedError

    def start(self) -> None:
        """Serve on an ephemeral 127.0.0.1 port from a daemon thread."""
        ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, args=(ready,), daemon=True)
        self._thread.start()
        if not ready.wait(10):
            msg = f"{self.what} did not start within 10 s"
            raise RuntimeError(msg)

    def stop(self) -> None:
        loop, runner = self._loop, self._runner
        if loop is None or runner is None:
            return
        asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join(10)

    def _serve(self, ready: threading.Event) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        app = web.Application(client_max_size=64 * 1024 * 1024)
        self.add_routes(app)
        runner = web.AppRunner(app, access_log=None)
        loop.run_until_complete(runner.setup())
        site = web.TCPSite(runner, "127.0.0.1", 0)
        loop.run_until_complete(site.start())
        self._runner = runner
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        ready.set()
        loop.run_forever()
        loop.close()
