#!/usr/bin/env bash
# Install/build the benchmark peer servers (official MCP SDKs) into bench/peers/.build/.
# Idempotent: re-running only redoes what is missing or out of date.
#   bash bench/peers/install.sh            # everything
#   bash bench/peers/install.sh python ts  # a subset of: python ts rmcp
# Env: PYTHON (default python3), CARGO_JOBS (default 2).
set -euo pipefail

MCP_PY_VERSION=2.3.0   # PyPI `mcp`; rmcp and @modelcontextprotocol/sdk are pinned in their manifests

PEERS="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BUILD="$PEERS/.build"
mkdir -p "$BUILD"
SELECTED=" ${*:-python ts rmcp} "
want() { [[ "$SELECTED" == *" $1 "* ]]; }

if want python; then
  echo "== python: mcp==$MCP_PY_VERSION in $BUILD/venv"
  [ -x "$BUILD/venv/bin/python" ] || "${PYTHON:-python3}" -m venv "$BUILD/venv"
  have="$("$BUILD/venv/bin/python" -c 'import importlib.metadata as m; print(m.version("mcp"))' 2>/dev/null || true)"
  if [ "$have" != "$MCP_PY_VERSION" ]; then
    "$BUILD/venv/bin/pip" install --disable-pip-version-check -q "mcp==$MCP_PY_VERSION"
  fi
fi

if want ts; then
  echo "== typescript: npm ci from ts/package-lock.json in $BUILD/ts"
  mkdir -p "$BUILD/ts"
  stamp="$(cat "$PEERS/ts/package.json" "$PEERS/ts/package-lock.json" | sha256sum | cut -d' ' -f1)"
  if [ ! -d "$BUILD/ts/node_modules" ] || [ "$(cat "$BUILD/ts/.stamp" 2>/dev/null)" != "$stamp" ]; then
    cp "$PEERS/ts/package.json" "$PEERS/ts/package-lock.json" "$BUILD/ts/"
    (cd "$BUILD/ts" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
    echo "$stamp" > "$BUILD/ts/.stamp"
  fi
  # server.mjs resolves its imports through ts/node_modules (gitignored symlink).
  ln -sfn ../.build/ts/node_modules "$PEERS/ts/node_modules"
fi

if want rmcp; then
  echo "== rust: rmcp peer in $BUILD/rmcp-target"
  cargo build --release --locked -j "${CARGO_JOBS:-2}" \
    --manifest-path "$PEERS/rmcp/Cargo.toml" --target-dir "$BUILD/rmcp-target"
fi

echo
echo "Peers (argv relative to the repo root, from bench/peers/peers.json):"
python3 - "$PEERS/peers.json" <<'EOF'
import json, shlex, sys
for p in json.load(open(sys.argv[1])):
    print(f"  {p['name']:<12} {shlex.join(p['argv'])}")
EOF
echo "Smoke test: python3 bench/peers/smoke.py"
