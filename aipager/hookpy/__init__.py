"""Pure-Python twins of the compiled ``aipager-hook`` and ``aipager-statusline``.

They run as stage 2 when the compiled fast path declines an event, and as the
installed executables when no compiler was available.  Both start under
``python -S -I`` inside a process Claude Code waits on, so every module here
imports builtins only (``_json``, ``_socket``, ``posix``/``os``, ``errno``,
``resource``): never ``json``, ``re``, ``socket``, ``typing`` or orjson.
"""
