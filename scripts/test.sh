#!/usr/bin/env bash
# The whole test suite on a fresh machine: builds aipager as `pip install .`
# does (native hook required), installs the real Claude Code and Codex CLI from npm and
# Debian's chromium and espeak-ng (for the page's and voice tests), runs pytest.  Extra
# arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=${AIPAGER_TEST_VENV:-.venv}
CLAUDE_VERSION=2.1.328
CLAUDE_CACHE=${AIPAGER_CLAUDE_CACHE:-$HOME/.cache/aipager-test/claude-code-$CLAUDE_VERSION}
CODEX_VERSION=0.169.0
CODEX_CACHE=${AIPAGER_CODEX_CACHE:-$HOME/.cache/aipager-test/codex-$CODEX_VERSION}

if [ ! -x "$VENV/bin/python" ]; then
    python3 -m venv "$VENV"
fi
# CI must never pass on the slow fallback: a missing native build is an error.
AIPAGER_REQUIRE_NATIVE=1 "$VENV/bin/pip" install --quiet '.[test]'

# The real Claude Code CLI, cached between runs (it ships a ~370 MB binary).
CLAUDE_BIN="$CLAUDE_CACHE/node_modules/.bin/claude"
if ! "$CLAUDE_BIN" --version 2>/dev/null | grep -q "^$CLAUDE_VERSION"; then
    mkdir -p "$CLAUDE_CACHE"
    npm install --prefix "$CLAUDE_CACHE" --no-audit --no-fund --loglevel=error \
        "@anthropic-ai/claude-code@$CLAUDE_VERSION"
fi
export AIPAGER_TEST_CLAUDE="$CLAUDE_BIN"

# The real Codex CLI, cached the same way (its package pulls in a native binary).
CODEX_BIN="$CODEX_CACHE/node_modules/.bin/codex"
if ! "$CODEX_BIN" --version 2>/dev/null | grep -q "^codex-cli $CODEX_VERSION\$"; then
    mkdir -p "$CODEX_CACHE"
    npm install --prefix "$CODEX_CACHE" --no-audit --no-fund --loglevel=error \
        "@openai/codex@$CODEX_VERSION"
fi
export AIPAGER_TEST_CODEX="$CODEX_BIN"

# Debian packages the tests drive (CI is a fresh machine, as root): chromium for the web
# page's browser tests through Playwright (its own browser download is not used), an emoji
# font for its screenshots, espeak-ng to speak the voice tests' sentences.
missing=""
[ -x /usr/bin/chromium ] || missing="chromium fonts-noto-color-emoji"
command -v espeak-ng >/dev/null 2>&1 || missing="$missing espeak-ng"
if [ -n "$missing" ]; then
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    if ! { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
            $SUDO apt-get install -y -qq --no-install-recommends $missing; } >/dev/null; then
        echo "scripts/test.sh: could not install Debian's $missing (apt-get failed);" \
             "the web page's browser tests and the voice tests need them" >&2
        exit 1
    fi
fi
export AIPAGER_TEST_CHROMIUM=/usr/bin/chromium

# Absolute: AIPAGER_TEST_VENV may be given relative or absolute.
export PATH="$(cd "$VENV" && pwd)/bin:$PATH"
# Several workers (pytest-xdist): most tests wait on real processes, sockets and Telegram's
# pace rather than on the CPU, so even a 2-core machine runs three at once well (four made
# the real Claude Code sessions of the end-to-end tests slow to draw).
# AIPAGER_TEST_WORKERS=0 runs everything in this one process.
# worksteal: an idle worker takes tests queued on a busy one (a few end-to-end tests take
# minutes).
exec "$VENV/bin/pytest" -n "${AIPAGER_TEST_WORKERS:-3}" --dist worksteal "$@"
