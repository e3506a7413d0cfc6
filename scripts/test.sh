#!/usr/bin/env bash
# The whole test suite on a fresh machine: builds aipager as `pip install .`
# does (native hook required), installs the real Claude Code from npm, runs
# pytest.  Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=${AIPAGER_TEST_VENV:-.venv}
CLAUDE_VERSION=2.1.328
CLAUDE_CACHE=${AIPAGER_CLAUDE_CACHE:-$HOME/.cache/aipager-test/claude-code-$CLAUDE_VERSION}

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

# espeak-ng speaks the voice tests' sentences (Debian's package; CI runs as root).
if ! command -v espeak-ng >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq espeak-ng >/dev/null
    else
        echo "test.sh: espeak-ng is missing: the voice tests fail without it (Debian: apt-get install espeak-ng)" >&2
    fi
fi

# Absolute: AIPAGER_TEST_VENV may be given relative or absolute.
export PATH="$(cd "$VENV" && pwd)/bin:$PATH"
exec "$VENV/bin/pytest" "$@"
