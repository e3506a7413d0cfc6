"""The aipager daemon: datagram ingest, session registry, event handlers.

Heavy pieces (asyncio lifecycle) live in ``app``; importing this package
costs nothing so ``aipager status`` can read ``persist.load_state`` quickly.
"""
