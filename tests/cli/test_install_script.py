"""scripts/install.sh, the README's first command.

Its logic runs against stand-ins for python3, the venv's python and uv (fast,
every run); ``test_real_install_then_upgrade`` installs a copy of this checkout
for real into a throwaway HOME (a venv and a full pip install, about a minute),
with a stock Debian/Ubuntu python3 when there is one.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "install.sh")

#: python3 and, copied into the venv, the venv's python: each call is logged
FAKE_PYTHON = r"""#!/bin/sh
echo "python $0 $*" >> "$STUB_LOG"
case $1 in
  -c) case $2 in *ensurepip*) [ -z "${STUB_NO_ENSUREPIP:-}" ]; exit $? ;; esac; exit 0 ;;
  -m) case $2 in
        venv) mkdir -p "$3/bin"; cp "$0" "$3/bin/python"; : > "$3/pyvenv.cfg"
              printf '#!/bin/sh\n' > "$3/bin/pip"; chmod +x "$3/bin/pip"; exit 0 ;;
        pip) bin=$(dirname "$0")
             printf '#!/bin/sh\necho "aipager $*" >> "$STUB_LOG"\n' > "$bin/aipager"
             chmod +x "$bin/aipager"; exit 0 ;;
      esac ;;
esac
exit 1
"""

FAKE_UV = r"""#!/bin/sh
echo "uv $*" >> "$STUB_LOG"
case "$1 $2" in
  "venv --quiet") dir=$5; mkdir -p "$dir/bin"; cp "$STUB_PYTHON" "$dir/bin/python"
                  : > "$dir/pyvenv.cfg"; exit 0 ;;
  "pip install") bin=$(dirname "$5")
                 printf '#!/bin/sh\necho "aipager $*" >> "$STUB_LOG"\n' > "$bin/aipager"
                 chmod +x "$bin/aipager"; exit 0 ;;
esac
exit 1
"""


def _program(path, text: str):
    path.write_text(text)
    path.chmod(0o755)
    return path


@pytest.fixture
def stub(tmp_path):
    """A throwaway HOME, the stand-ins, and a runner for the script."""
    tools, home, log = tmp_path / "tools", tmp_path / "home", tmp_path / "log"
    for folder in (tools, home):
        folder.mkdir()
    log.touch()
    python = _program(tools / "python3", FAKE_PYTHON)

    class Stub:
        def __init__(self):
            self.home, self.log, self.tools = home, log, tools
            self.venv = home / ".local" / "share" / "aipager" / "venv"

        def run(self, *args, **extra):
            env = {"HOME": str(home), "PATH": f"{tools}:/usr/bin:/bin", "PYTHON": str(python),
                   "STUB_LOG": str(log), "STUB_PYTHON": str(python), **extra}
            return subprocess.run(["sh", SCRIPT, *args], env=env, capture_output=True,
                                  text=True, timeout=60)

        def calls(self):
            lines = log.read_text().splitlines()
            log.write_text("")
            return lines

        def add_uv(self):
            _program(tools / "uv", FAKE_UV)

    return Stub()


def test_first_install_makes_the_venv_links_aipager_and_starts_it(stub):
    done = stub.run()
    assert done.returncode == 0, done.stderr
    calls = stub.calls()
    assert f"python {stub.tools}/python3 -m venv {stub.venv}" in calls
    assert f"python {stub.venv}/bin/python -m pip install --quiet --upgrade {ROOT}" in calls
    assert calls[-1] == "aipager start"  # last, in the foreground (exec)
    link = stub.home / ".local" / "bin" / "aipager"
    assert os.readlink(link) == f"{stub.venv}/bin/aipager"
    assert "is not on PATH" in done.stdout
    # the exact line to add, for the shell the person uses
    assert "    echo 'export PATH=\"$HOME/.local/bin:$PATH\"' >> ~/." in done.stdout


def test_the_path_line_fits_the_shell_and_the_next_step_works_without_it(stub):
    done = stub.run("--no-start", SHELL="/usr/bin/zsh")
    assert done.returncode == 0, done.stderr
    assert "    echo 'export PATH=\"$HOME/.local/bin:$PATH\"' >> ~/.zshrc" in done.stdout
    link = stub.home / ".local" / "bin" / "aipager"
    assert f"start it with: {link} start" in done.stdout
    fish = stub.run("--no-start", SHELL="/usr/bin/fish")
    assert "    fish_add_path ~/.local/bin" in fish.stdout


def test_an_upgrade_reinstalls_into_the_same_venv(stub):
    """The hook paths in settings.json point into the venv: it must stay where it is."""
    assert stub.run().returncode == 0
    (stub.venv / "kept").write_text("")
    stub.calls()
    settings = stub.home / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text('{"statusLine": {"command": "/old/place/aipager-statusline"}, "hooks":'
                        ' {"Stop": [{"hooks": [{"command": "/old/place/aipager-hook"}]}]}}')
    done = stub.run("--no-start")
    assert done.returncode == 0, done.stderr
    calls = stub.calls()
    assert not [c for c in calls if " -m venv " in c] and (stub.venv / "kept").exists()
    assert f"python {stub.venv}/bin/python -m pip install --quiet --upgrade {ROOT}" in calls
    # wired by an install made another way: repointed at this venv; nothing started
    assert calls[-1] == "aipager config rewire"
    assert "aipager start" in done.stdout


def test_xdg_data_home_is_honoured_and_a_relative_one_ignored(stub, tmp_path):
    data = tmp_path / "data"
    assert stub.run("--no-start", XDG_DATA_HOME=str(data)).returncode == 0
    assert (data / "aipager" / "venv" / "pyvenv.cfg").exists()
    assert stub.run("--no-start", XDG_DATA_HOME="rel/data").returncode == 0
    assert (stub.venv / "pyvenv.cfg").exists()


def test_a_broken_venv_is_made_again_and_a_foreign_folder_left_alone(stub):
    assert stub.run("--no-start").returncode == 0
    (stub.venv / "bin" / "python").unlink()  # the system python was upgraded under it
    stub.calls()
    assert stub.run("--no-start").returncode == 0
    assert any(" -m venv " in c for c in stub.calls())
    shutil.rmtree(stub.venv)
    stub.venv.mkdir()
    (stub.venv / "notes.txt").write_text("mine")
    done = stub.run("--no-start")
    assert done.returncode == 1 and "not a virtual environment" in done.stderr
    assert (stub.venv / "notes.txt").read_text() == "mine"


def test_an_aipager_that_is_not_a_link_is_left_alone(stub):
    own = stub.home / ".local" / "bin" / "aipager"
    own.parent.mkdir(parents=True)
    own.write_text("#!/bin/sh\n")
    done = stub.run("--no-start")
    assert done.returncode == 0 and "left alone" in done.stdout
    assert own.read_text() == "#!/bin/sh\n" and not own.is_symlink()


def test_without_a_venv_module_uv_makes_it_or_the_fix_is_named(stub):
    done = stub.run(STUB_NO_ENSUREPIP="1")
    assert done.returncode == 1
    assert "sudo apt install python3-venv" in done.stderr and not stub.venv.exists()
    stub.calls()
    stub.add_uv()
    done = stub.run(STUB_NO_ENSUREPIP="1")
    assert done.returncode == 0, done.stderr
    calls = stub.calls()
    assert f"uv venv --quiet --python {stub.tools}/python3 {stub.venv}" in calls
    assert (f"uv pip install --quiet --python {stub.venv}/bin/python "
            f"--reinstall-package aipager {ROOT}") in calls
    assert calls[-1] == "aipager start"


def test_unknown_arguments_and_help(stub):
    assert stub.run("--bogus").returncode == 2
    shown = stub.run("--help")
    assert shown.returncode == 0 and "--no-start" in shown.stdout and not stub.venv.exists()


# --------------------------------------------------------------------- for real


def _python_for_the_real_test() -> tuple[str, bool]:
    """(interpreter, whether its pip refuses to install outside a venv: PEP 668)."""
    for candidate in ("/usr/bin/python3", sys.executable):
        if not os.path.exists(candidate):
            continue
        probe = ("import os, sys, sysconfig; assert sys.version_info >= (3, 11);"
                 "print(os.path.exists(os.path.join(sysconfig.get_path('stdlib'),"
                 " 'EXTERNALLY-MANAGED')))")
        done = subprocess.run([candidate, "-I", "-c", probe], capture_output=True, text=True)
        if done.returncode == 0:
            return candidate, done.stdout.strip() == "True"
    pytest.skip("no python3 >= 3.11 to install with")


def _copy_checkout(dest: str) -> None:
    """The files git knows (and new ones it does not ignore): no venv, no build."""
    listed = subprocess.run(["git", "-C", ROOT, "ls-files", "-co", "--exclude-standard", "-z"],
                            capture_output=True, check=False)
    if listed.returncode != 0:
        pytest.skip("not a git checkout")
    for rel in filter(None, listed.stdout.decode().split("\0")):
        src = os.path.join(ROOT, rel)
        if os.path.isfile(src):
            os.makedirs(os.path.dirname(os.path.join(dest, rel)), exist_ok=True)
            shutil.copy2(src, os.path.join(dest, rel))


def test_real_install_then_upgrade(tmp_path):
    python, managed = _python_for_the_real_test()
    src, home = str(tmp_path / "src"), tmp_path / "home"
    home.mkdir()
    _copy_checkout(src)
    env = {"HOME": str(home), "PATH": "/usr/local/bin:/usr/bin:/bin", "PYTHON": python,
           "LANG": "C.UTF-8"}
    env.update({k: v for k, v in os.environ.items()
                if k.startswith(("PIP_", "UV_")) or k.lower().endswith("_proxy")})
    if managed:  # the README's old command, refused on a stock Debian/Ubuntu python3
        old = subprocess.run([python, "-m", "pip", "install", "--dry-run", src], env=env,
                             capture_output=True, text=True, timeout=120)
        assert old.returncode != 0 and "externally-managed-environment" in old.stderr

    def install(*args: str) -> subprocess.CompletedProcess:
        done = subprocess.run(["sh", os.path.join(src, "scripts", "install.sh"), *args],
                              env=env, capture_output=True, text=True, timeout=600)
        assert b"Traceback" not in done.stderr.encode(), done.stderr
        return done

    # As the README says it; on an unset-up machine `start` serves the web page at once
    # (Telegram comes later with `aipager setup`): the installed program prints its link.
    out_path = tmp_path / "first-install.out"
    with open(out_path, "w") as out:
        first = subprocess.Popen(
            ["sh", os.path.join(src, "scripts", "install.sh")], stdout=out,
            stderr=subprocess.STDOUT, env={**env, "AIPAGER_WEB_PORT": "0",
                                           "AIPAGER_INSTANCE_DIR": str(tmp_path / "inst")})
    try:
        deadline = time.monotonic() + 600
        while "Open http://127.0.0.1:" not in out_path.read_text():
            assert first.poll() is None, out_path.read_text()
            assert time.monotonic() < deadline, out_path.read_text()
            time.sleep(0.5)
    finally:
        first.send_signal(signal.SIGTERM)
        first.wait(60)
    printed = out_path.read_text()
    assert first.returncode == 0, printed
    assert "aipager setup" in printed and "Traceback" not in printed
    venv = home / ".local" / "share" / "aipager" / "venv"
    aipager = home / ".local" / "bin" / "aipager"
    assert os.path.realpath(aipager) == os.path.realpath(venv / "bin" / "aipager")

    wire = subprocess.run([str(aipager), "config", "rewire"], env=env, capture_output=True,
                          text=True, timeout=60)
    assert wire.returncode == 0, wire.stderr
    settings = home / ".claude" / "settings.json"
    wired = settings.read_text()
    assert f'"{venv}/bin/aipager-hook"' in wired and f'"{venv}/bin/aipager-statusline"' in wired

    # Upgrade: a newer checkout, installed the same way; the wired paths stay valid.
    init = os.path.join(src, "aipager", "__init__.py")
    with open(init, encoding="utf-8") as fh:
        text = fh.read()
    with open(init, "w", encoding="utf-8") as fh:
        fh.write(re.sub(r'__version__ = "[^"]*"', '__version__ = "99.0"', text))
    second = install("--no-start")
    assert second.returncode == 0, second.stdout + second.stderr
    assert "already wired" in second.stdout and settings.read_text() == wired
    version = subprocess.run([str(aipager), "--version"], env=env, capture_output=True,
                             text=True, timeout=60)
    assert version.stdout.strip() == "aipager 99.0"
    hook = subprocess.run([f"{venv}/bin/aipager-hook"], input=b'{"hook_event_name":"Stop"}',
                          env={**env, "CLAUDE_DTACH_SESSION": "claude-x",
                               "AIPAGER_INSTANCE_DIR": str(tmp_path)},
                          capture_output=True, timeout=60)
    assert hook.returncode == 0, hook.stderr
