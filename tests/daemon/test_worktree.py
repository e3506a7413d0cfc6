"""/diff's reading of a work tree: real git in a real repository, nothing run that the
project's own files name, and only the files the asker may read."""

from __future__ import annotations

import os
import subprocess

import pytest

from aipager.daemon import worktree


def git(cwd, *args):
    subprocess.run(["git", "-c", "user.email=t@example.invalid", "-c", "user.name=t", *args],
                   cwd=cwd, check=True, capture_output=True)


@pytest.fixture
def repo(tmp_path):
    root = tmp_path / "proj"
    root.mkdir()
    git(root, "init", "-q")
    (root / "a.txt").write_text("one\ntwo\n")
    (root / "gone.txt").write_text("bye\n")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "first")
    return root


def everything(_path):
    return True


def test_changed_new_and_deleted_files_are_shown_against_the_last_commit(repo):
    (repo / "a.txt").write_text("one\nTWO\n")
    (repo / "new.txt").write_text("fresh\n")
    (repo / "gone.txt").unlink()
    (repo / "sub").mkdir()
    got = worktree.changes(str(repo / "sub"), everything)  # from a folder inside it
    assert got.repo and not got.cut and got.hidden == 0
    assert set(got.files) == {"a.txt", "gone.txt", "new.txt"}
    assert "-two\n+TWO\n" in got.diff
    assert "-bye\n" in got.diff
    assert "+fresh\n" in got.diff


def test_nothing_changed_and_no_repository(repo, tmp_path):
    assert worktree.changes(str(repo), everything) == worktree.Diff()
    plain = tmp_path / "plain"
    plain.mkdir()
    assert worktree.changes(str(plain), everything) == worktree.Diff(repo=False)


def test_a_repository_without_a_commit_shows_its_files_as_new(tmp_path):
    root = tmp_path / "fresh"
    root.mkdir()
    git(root, "init", "-q")
    (root / "x.py").write_text("print(1)\n")
    got = worktree.changes(str(root), everything)
    assert got.files == ("x.py",) and "+print(1)\n" in got.diff


def test_files_the_asker_may_not_read_are_counted_never_shown(repo):
    (repo / "a.txt").write_text("secret change\n")
    (repo / "new.txt").write_text("fresh\n")
    got = worktree.changes(str(repo), lambda path: not path.endswith("a.txt"))
    assert got.files == ("new.txt",) and got.hidden == 1
    assert "secret" not in got.diff and "a.txt" not in got.diff


def test_a_long_diff_is_cut_at_a_line(repo):
    (repo / "a.txt").write_text("".join(f"line {i}\n" for i in range(5000)))
    got = worktree.changes(str(repo), everything, cap=2000)
    assert got.cut and len(got.diff) <= 2000 and got.diff.endswith("\n")


def test_nothing_the_projects_files_name_is_run(repo, tmp_path):
    """A task may have written the repository's config and attributes: reading the diff
    runs no textconv, external diff or fsmonitor program of theirs."""
    ran = tmp_path / "ran"
    tool = tmp_path / "tool.sh"
    tool.write_text(f"#!/bin/sh\ntouch {ran}\necho converted\n")
    tool.chmod(0o755)
    with open(repo / ".git" / "config", "a") as f:
        f.write(f'[diff "evil"]\n\ttextconv = {tool}\n\tcommand = {tool}\n'
                f"[diff]\n\texternal = {tool}\n[core]\n\tfsmonitor = {tool}\n")
    (repo / ".gitattributes").write_text("* diff=evil\n")
    (repo / "a.txt").write_text("one\nchanged\n")
    (repo / "b.txt").write_text("new\n")
    got = worktree.changes(str(repo), everything)
    assert "+changed\n" in got.diff and "+new\n" in got.diff
    assert "converted" not in got.diff
    assert not ran.exists()


def test_odd_file_names_are_those_files(repo):
    for name in ("-p", ":(glob)*", "spaced name.txt"):
        (repo / name).write_text("x\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "odd")
    for name in ("-p", ":(glob)*", "spaced name.txt"):
        (repo / name).write_text("y\n")
    got = worktree.changes(str(repo), lambda p: os.path.basename(p) != "a.txt")
    assert set(got.files) == {"-p", ":(glob)*", "spaced name.txt"}
    assert got.diff.count("+y\n") == 3
