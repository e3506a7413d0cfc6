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


def _plant(repo, tmp_path):
    """Every way a repository's own files can name a program git would run while
    diffing: a clean filter (runs when git hashes a work-tree file), a textconv and a
    diff driver, an external diff, fsmonitor, a hooks folder, a pager.  Each would write
    a file and print a secret."""
    ran = tmp_path / "ran"
    secret = tmp_path / "id_secret"
    secret.write_text("SECRET-KEY-CANARY\n")
    tool = tmp_path / "tool.sh"
    tool.write_text(f"#!/bin/sh\necho $0 $@ >> {ran}\ncat {secret}\n")
    tool.chmod(0o755)
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    for hook in ("post-index-change", "reference-transaction", "fsmonitor-watchman"):
        (hooks / hook).write_text(f"#!/bin/sh\necho {hook} >> {ran}\n")
        (hooks / hook).chmod(0o755)
    with open(repo / ".git" / "config", "a") as f:
        f.write(f'[filter "evil"]\n\tclean = {tool}\n\tsmudge = {tool}\n\tprocess = {tool}\n'
                f'\trequired = true\n'
                f'[diff "evil"]\n\ttextconv = {tool}\n\tcommand = {tool}\n'
                f"[diff]\n\texternal = {tool}\n"
                f"[core]\n\tfsmonitor = {tool}\n\thooksPath = {hooks}\n\tpager = {tool}\n"
                f"\tuntrackedCache = true\n"
                f"[include]\n\tpath = {tmp_path / 'more.config'}\n")
    (tmp_path / "more.config").write_text(f"[core]\n\tfsmonitor = {tool}\n")
    (repo / ".gitattributes").write_text("* filter=evil diff=evil\n")
    return ran


def test_a_planted_clean_filter_textconv_fsmonitor_and_hooks_never_run(repo, tmp_path):
    """The attack of a member who had the model write .git/config and .gitattributes:
    /diff runs none of it, shows no secret, and still shows the real change."""
    ran = _plant(repo, tmp_path)
    (repo / "a.txt").write_text("one\nchanged\n")
    (repo / "b.txt").write_text("new\n")
    got = worktree.changes(str(repo), everything)
    assert "+changed\n" in got.diff and "+new\n" in got.diff
    assert "SECRET-KEY-CANARY" not in got.diff
    assert not ran.exists()
    assert {"a.txt", "b.txt", ".gitattributes"} <= set(got.files)


def test_a_planted_filter_in_a_repository_the_task_made(tmp_path):
    """No repository at first: the task's writes made .git/ themselves (init by hand)."""
    root = tmp_path / "made"
    root.mkdir()
    git(root, "init", "-q")
    ran = _plant(root, tmp_path)
    (root / "x.txt").write_text("hello\n")
    got = worktree.changes(str(root), everything)
    assert "+hello\n" in got.diff and "SECRET-KEY-CANARY" not in got.diff
    assert not ran.exists()


def test_a_git_file_and_a_linked_worktree_are_read_as_git_reads_them(repo, tmp_path):
    git(repo, "branch", "side")
    other = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", str(other), "side")
    git(repo, "pack-refs", "--all")  # the branch now lives in packed-refs only
    (other / "a.txt").write_text("one\nfrom the worktree\n")
    got = worktree.changes(str(other), everything)
    assert got.files == ("a.txt",) and "+from the worktree\n" in got.diff


def test_symlinks_show_their_target_name_never_its_content(repo, tmp_path):
    secret = tmp_path / "outside"
    secret.write_text("OUTSIDE-CANARY\n")
    os.symlink(secret, repo / "link")
    got = worktree.changes(str(repo), everything)
    assert got.files == ("link",) and str(secret) in got.diff
    assert "OUTSIDE-CANARY" not in got.diff


def test_mode_binary_and_missing_newline_as_git_shows_them(repo):
    (repo / "a.txt").chmod(0o755)
    (repo / "bin.dat").write_bytes(b"\0\1\2")
    (repo / "gone.txt").write_text("bye")  # the newline taken away
    got = worktree.changes(str(repo), everything)
    assert "old mode 100644\nnew mode 100755\n" in got.diff
    assert "Binary files /dev/null and b/bin.dat differ" in got.diff
    assert "+bye\n\\ No newline at end of file\n" in got.diff


def test_the_same_diff_as_git_itself_for_plain_changes(repo):
    """Against the real git (no config planted), the lines added and removed agree."""
    (repo / "a.txt").write_text("zero\none\nTWO\nthree\n")
    ours = worktree.changes(str(repo), everything).diff
    theirs = subprocess.run(["git", "diff", "HEAD", "--", "a.txt"], cwd=repo, check=True,
                            capture_output=True, text=True).stdout
    pick = lambda text: [ln for ln in text.splitlines() if ln[:1] in "+-" and ln[:3] not in ("+++", "---")]  # noqa: E731
    assert pick(ours) == pick(theirs)
