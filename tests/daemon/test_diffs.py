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
