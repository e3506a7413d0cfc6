#!/bin/sh
# Install (or upgrade) this checkout of aipager for the current user, then run
# `aipager start`.  Works with the python3 a Debian or Ubuntu machine ships,
# whose pip refuses to install anywhere but a virtual environment (PEP 668,
# "externally-managed-environment"): aipager gets a venv of its own.
#
#   sh scripts/install.sh             install or upgrade, then `aipager start`
#   sh scripts/install.sh --no-start  install or upgrade only (a running daemon
#                                     or service keeps the old code until it restarts)
#
# Where it goes, the same folders every time:
#   ${XDG_DATA_HOME:-~/.local/share}/aipager/venv   aipager, aipager-hook, aipager-statusline
#   ~/.local/bin/aipager                            a link to the venv's aipager
# An upgrade reinstalls into the same venv, so the absolute hook paths written
# into ~/.claude/settings.json stay valid (the wiring finds the hook programs in
# the scripts folder of the venv aipager runs from; aipager/wiring.py).  When
# settings.json names aipager-hook already (an install made another way), it is
# repointed at this venv with `aipager config rewire`.
#
# Knobs: PYTHON (interpreter the venv is made from; default python3),
# AIPAGER_VENV (another venv folder).  Without python3's venv module (Debian:
# the python3-venv package) uv makes the venv when it is on PATH.
set -eu

start=1
for arg in "$@"; do
    case $arg in
        --no-start) start=0 ;;
        -h|--help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "install.sh: unknown argument: $arg (try --help)" >&2; exit 2 ;;
    esac
done

here=$(cd "$(dirname "$0")/.." && pwd)
if [ ! -f "$here/pyproject.toml" ] || [ ! -d "$here/aipager" ]; then
    echo "install.sh: $here is not an aipager checkout" >&2
    exit 2
fi
if [ -z "${HOME:-}" ]; then
    echo "install.sh: HOME is not set" >&2
    exit 2
fi
python=${PYTHON:-python3}
# XDG: a relative XDG_DATA_HOME is invalid and ignored (as aipager/proto/paths.py does).
case ${XDG_DATA_HOME:-} in
    /*) data=$XDG_DATA_HOME ;;
    *) data=$HOME/.local/share ;;
esac
venv=${AIPAGER_VENV:-$data/aipager/venv}
bindir=$HOME/.local/bin

say() { echo "install.sh: $*"; }

# A venv whose interpreter no longer runs (the system python was upgraded
# under it) is made again; anything that is not a venv is never removed.
if [ -e "$venv" ] && ! "$venv/bin/python" -c '' 2>/dev/null; then
    if [ -f "$venv/pyvenv.cfg" ]; then
        say "the venv in $venv no longer works; making it again"
        rm -rf "$venv"
    else
        echo "install.sh: $venv exists and is not a virtual environment; move it away" >&2
        exit 1
    fi
fi

use_uv=0
if [ ! -e "$venv" ]; then
    if ! command -v "$python" >/dev/null 2>&1; then
        echo "install.sh: $python not found (set PYTHON to a python3 >= 3.11)" >&2
        exit 1
    fi
    if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
        echo "install.sh: aipager needs Python >= 3.11; $python is older (set PYTHON)" >&2
        exit 1
    fi
    mkdir -p "$(dirname "$venv")"
    if "$python" -c 'import ensurepip, venv' 2>/dev/null; then
        say "making the venv $venv"
        "$python" -m venv "$venv"
    elif command -v uv >/dev/null 2>&1; then
        say "making the venv $venv (uv; $python has no venv module)"
        uv venv --quiet --python "$python" "$venv"
        use_uv=1
    else
        echo "install.sh: $python cannot make a virtual environment (no venv/ensurepip module)." >&2
        echo "  Debian/Ubuntu: sudo apt install python3-venv   (or install uv), then run this again." >&2
        exit 1
    fi
elif [ ! -x "$venv/bin/pip" ] && command -v uv >/dev/null 2>&1; then
    use_uv=1  # a venv uv made earlier has no pip of its own
fi

say "installing $here into $venv"
if [ "$use_uv" = 1 ]; then
    uv pip install --quiet --python "$venv/bin/python" --reinstall-package aipager "$here"
else
    "$venv/bin/python" -m pip install --quiet --upgrade "$here"
fi

mkdir -p "$bindir"
link=$bindir/aipager
if [ -L "$link" ] || [ ! -e "$link" ]; then
    ln -sfn "$venv/bin/aipager" "$link"
    say "linked $link -> $venv/bin/aipager"
else
    say "warning: $link exists and is not a link; left alone (run $venv/bin/aipager, or remove $link and run this again)"
fi
run=aipager
case ":${PATH:-}:" in
    *":$bindir:"*) ;;
    *)
        # the exact line for the person's shell, so the next steps work in a new terminal
        case "${SHELL:-}" in
            */zsh) add="echo 'export PATH=\"\$HOME/.local/bin:\$PATH\"' >> ~/.zshrc" ;;
            */fish) add="fish_add_path ~/.local/bin" ;;
            */bash) add="echo 'export PATH=\"\$HOME/.local/bin:\$PATH\"' >> ~/.bashrc" ;;
            *) add="echo 'export PATH=\"\$HOME/.local/bin:\$PATH\"' >> ~/.profile" ;;
        esac
        say "note: $bindir is not on PATH. Add it with this line, then open a new terminal:"
        echo "    $add"
        run=$link
        ;;
esac

settings=$HOME/.claude/settings.json
if [ -f "$settings" ] && grep -q 'aipager-hook' "$settings" 2>/dev/null; then
    "$venv/bin/aipager" config rewire
fi

if [ "$start" = 1 ]; then
    exec "$venv/bin/aipager" start
fi
say "done; start it with: $run start"
