"""The files Claude sends, checked and copied once by the daemon (``daemon.sendfiles``) and
handed to every surface: each names the copy its own as the output reaches it, the
daemon's own name goes right after, and one surface removing its name (the chat, once
uploaded) leaves the other's (the page's download) whole."""

from __future__ import annotations

import os

from aipager import files
from aipager.daemon import sendfiles
from aipager.daemon.ordered import OrderedOutputs
from aipager.port.outputs import FanoutNotifier, Files, Output


class Surface:
    """A surface as the chat and the page take a ``Files`` output: a name of its own."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def emit(self, out: Output) -> None:
        if isinstance(out, Files):
            self.names += [files.own_name(c.path) for c in out.copies]


def test_one_checked_copy_reaches_two_surfaces_and_the_daemons_name_is_gone(tmp_path):
    env = dict(os.environ)
    report = tmp_path / "report.md"
    report.write_bytes(b"# all good\n")
    secret = tmp_path / ".env"
    secret.write_text("TOKEN=abc\n")
    chat, page = Surface(), Surface()
    outputs = OrderedOutputs(FanoutNotifier([chat, page]), after=sendfiles.drop)
    fields = sendfiles.take(env, "claude-jim", [str(report), str(secret)], str(tmp_path))
    (copy,) = fields["copies"]
    assert copy.filename == "report.md" and not copy.photo
    assert [r.path for r in fields["refused"]] == [str(secret)]
    outputs.emit(Files(session="claude-jim", files=[str(report), str(secret)],
                       cwd=str(tmp_path), **fields))
    assert not os.path.exists(copy.path)  # the daemon's name: dropped once handed on
    (chats,), (pages,) = chat.names, page.names
    assert chats != pages and os.path.dirname(chats) == files.outbox_dir(env)
    report.write_bytes(b"swapped after the tool ran")  # too late: the copy was taken
    os.unlink(chats)  # the chat uploaded its own
    with open(pages, "rb") as fh:
        assert fh.read() == b"# all good\n"
    assert os.stat(pages).st_mode & 0o777 == 0o600


def test_a_files_folder_that_cannot_be_used_refuses_every_file_and_says_so(tmp_path):
    env = dict(os.environ)
    outbox = files.outbox_dir(env)
    os.makedirs(os.path.dirname(outbox), mode=0o700, exist_ok=True)
    os.symlink(str(tmp_path), outbox)  # a planted link where the copies go
    report = tmp_path / "report.md"
    report.write_bytes(b"x")
    fields = sendfiles.take(env, "claude-jim", [str(report)], str(tmp_path))
    assert fields.get("copies", []) == []
    assert [r.path for r in fields["refused"]] == [str(report)]
    assert os.listdir(tmp_path) == ["report.md"]  # nothing written through the link


def test_a_copy_gone_before_a_surface_named_it_is_said_not_sent(tmp_path):
    from aipager.clients.sentfiles import own_copies

    env = dict(os.environ)
    report = tmp_path / "report.md"
    report.write_bytes(b"x")
    fields = sendfiles.take(env, "claude-jim", [str(report)], str(tmp_path))
    out = Files(session="claude-jim", files=[str(report)], cwd=str(tmp_path), **fields)
    sendfiles.drop(out)  # (the daemon's name went before this surface took its own)
    mine, refused = own_copies(out)
    assert mine == [] and [(r.path, r.code) for r in refused] == [("report.md", "gone")]
    assert "the checked copy is gone" in refused[0].reason
