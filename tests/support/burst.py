"""N hooks firing at once: forked senders released together, each sending like the hook.

Run as a script (``python burst.py SOCKET SPOOL_DIR N SIZE [TAG]``) so the senders
are other processes than the daemon under test; prints ``{"sent", "spooled",
"lost"}`` as JSON.  Each datagram is a PreToolUse of session ``claude-burst``
with ``tool_use_id`` ``<TAG><i>``, padded to about SIZE bytes.
"""

from __future__ import annotations

import json
import os
import socket
import sys


#: one byte per child on the result pipe
CODES = {"sent": b"S", "spooled": b"P", "lost": b"L"}


def payload(i: int, size: int, tag: str = "b") -> bytes:
    ev = {"hook_event_name": "PreToolUse", "session": "claude-burst", "tool_name": "Bash",
          "tool_use_id": f"{tag}{i}", "prompt_id": "burst", "tool_input": {"command": "x"}}
    raw = json.dumps(ev).encode()
    pad = max(0, size - len(raw) - 12)
    ev["tool_input"]["command"] = "x" * pad
    return json.dumps(ev).encode()


def burst(address: str, spool_dir: str, n: int, size: int, tag: str = "b") -> dict[str, int]:
    from aipager.daemon.spool import send_or_spool

    go_r, go_w = os.pipe()
    res_r, res_w = os.pipe()
    pids = []
    for i in range(n):
        pid = os.fork()
        if pid == 0:
            os.close(go_w)
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            sock.setblocking(False)
            data = payload(i, size, tag)
            os.read(go_r, 1)  # the barrier: every child is ready before any sends
            outcome = send_or_spool(sock, address, spool_dir, data)
            os.write(res_w, CODES[outcome])
            os._exit(0)
        pids.append(pid)
    os.close(go_r)
    os.write(go_w, b"x" * n)
    for pid in pids:
        os.waitpid(pid, 0)
    os.close(res_w)
    codes = b""
    while chunk := os.read(res_r, 4096):
        codes += chunk
    return {name: codes.count(code) for name, code in CODES.items()}


if __name__ == "__main__":
    address, spool_dir, n, size = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    tag = sys.argv[5] if len(sys.argv) > 5 else "b"
    print(json.dumps(burst(address, spool_dir, n, size, tag)))
