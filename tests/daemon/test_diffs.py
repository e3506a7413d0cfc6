"""An edit's real diff against the file on disk (``daemon.diffs``), as a permission request
carries it (the chat's rendering: tests/bot/test_request_diff.py)."""

from __future__ import annotations

import pytest
from aipager.daemon import diffs


def test_an_edit_diffs_against_the_file(tmp_path):
    f = tmp_path / "app.py"
    f.write_text("import os\n\ndef main():\n    print('hi')\n\nmain()\n")
    diff = diffs.unified("Edit", {"file_path": str(f), "old_string": "print('hi')",
                                  "new_string": "print('hello')"}, "/", diffs.read_text)
    assert f"--- a{f}" in diff and f"+++ b{f}" in diff
    assert "-    print('hi')\n+    print('hello')\n" in diff
    assert " def main():\n" in diff  # context from the file itself


def test_multiedit_applies_in_order_and_replace_all(tmp_path):
    f = tmp_path / "a.txt"
    f.write_text("x x\ny\n")
    diff = diffs.unified("MultiEdit", {"file_path": "a.txt", "edits": [
        {"old_string": "x", "new_string": "z", "replace_all": True},
        {"old_string": "z z", "new_string": "w"}]}, str(tmp_path), diffs.read_text)
    assert "-x x\n+w\n" in diff


def test_a_new_file_and_a_file_without_a_final_newline(tmp_path):
    new = diffs.unified("Write", {"file_path": str(tmp_path / "n.txt"), "content": "one\ntwo"},
                        "/", diffs.read_text)
    assert new.startswith("--- /dev/null") and "+one\n+two\n\\ No newline at end of file\n" in new


@pytest.mark.parametrize("setup", ["binary", "big", "missing-old", "unchanged", "symlink"])
def test_what_cannot_be_diffed_gives_nothing(tmp_path, setup):
    f = tmp_path / "f"
    edit = {"file_path": str(f), "old_string": "a", "new_string": "b"}
    if setup == "binary":
        f.write_bytes(b"a\xff\xfe")
    elif setup == "big":
        f.write_text("a" * (diffs.READ_MAX + 1))
    elif setup == "missing-old":
        f.write_text("zzz")
    elif setup == "unchanged":
        f.write_text("a")
        edit["new_string"] = "a"
    else:
        (tmp_path / "real").write_text("a")
        f.symlink_to(tmp_path / "real")  # never followed
    assert diffs.unified("Edit", edit, "/", diffs.read_text) == ""


# -- made off the event loop (``daemon.ordered``) ---------------------------------------


def _edit_events(path: str) -> tuple[dict, dict, dict]:
    def ev(name: str, **kw) -> dict:
        return {"hook_event_name": name, "session": "claude-jim", "prompt_id": "p1", **kw}

    edit = {"file_path": path, "old_string": "line 10\n", "new_string": "line ten\n"}
    return (ev("UserPromptSubmit", prompt="go"),
            ev("PermissionRequest", tool_name="Edit", tool_input=edit, tool_use_id="t1"),
            ev("PostToolUse", tool_name="Edit", tool_input=edit, tool_use_id="t1"))


async def test_a_big_diff_is_made_off_the_loop_and_its_request_keeps_its_place(tmp_path):
    """The diff of a file of nearly 512 KB is made in a thread: a task on the loop runs
    while it is being made (the reader waits for that task: on the loop it would wait for
    ever), and the request's closing, handled meanwhile, still comes after the request."""
    import asyncio
    import threading

    from aipager.daemon import ordered
    from aipager.daemon.core import DaemonCore
    from aipager.port.outputs import RecordingNotifier

    big = tmp_path / "big.txt"
    big.write_text("".join(f"line {i}\n" for i in range(60_000))[: diffs.READ_MAX])
    loop_ran = threading.Event()
    readers: list[str] = []

    def read_after_the_loop_ran(path: str) -> str | None:
        readers.append(threading.current_thread().name)
        assert loop_ran.wait(10), "the loop did not run while the diff was made"
        return diffs.read_text(path)

    out = RecordingNotifier()
    core = DaemonCore(out, read_text=read_after_the_loop_ran)
    tasks: set = set()
    core.outputs.runner = ordered.thread_runner(asyncio.get_running_loop(), tasks)
    prompt, request, done = _edit_events(str(big))
    core.feed(prompt)
    core.feed(request)
    core.feed(done)  # handled at once: the registry does not wait
    assert core.registry.get("claude-jim").requests == []
    # nothing about the request has gone out yet, the closing included
    assert not out.of("permission") and not out.of("request_closed")
    assert core.outputs.waiting == 2

    async def on_the_loop() -> None:
        loop_ran.set()

    await on_the_loop()
    while tasks:
        await asyncio.sleep(0.01)
    assert readers and readers[0] != threading.main_thread().name
    kinds = [o.kind for o in out.outputs if o.kind in ("permission", "request_closed")]
    assert kinds == ["permission", "request_closed"]
    (permission,) = out.of("permission")
    assert "-line 10\n+line ten\n" in permission.data["diff"]
    assert core.outputs.waiting == 0


async def test_a_diff_that_fails_still_sends_its_request_in_its_place(tmp_path):
    import asyncio

    from aipager.daemon import ordered
    from aipager.daemon.core import DaemonCore
    from aipager.port.outputs import RecordingNotifier

    def broken(path: str) -> str | None:
        raise OSError("disk gone")

    out = RecordingNotifier()
    core = DaemonCore(out, read_text=broken)
    tasks: set = set()
    core.outputs.runner = ordered.thread_runner(asyncio.get_running_loop(), tasks)
    for event in _edit_events(str(tmp_path / "f.txt")):
        core.feed(event)
    while tasks:
        await asyncio.sleep(0.01)
    kinds = [o.kind for o in out.outputs if o.kind in ("permission", "request_closed")]
    assert kinds == ["permission", "request_closed"]
    assert out.of("permission")[0].data["diff"] == ""
    assert "line ten" in out.of("permission")[0].data["preview"]
