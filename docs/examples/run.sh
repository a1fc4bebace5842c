#!/usr/bin/env bash
# Runs the examples of this directory against our binaries, as CI does after interop/run.sh (whose
# Python venv and node_modules they reuse, with their pinned ioredis and redlock): the GitHub
# Actions job's steps, the pytest fixture, and the Node tests (node redlock on a
# `locksmith-harness --masters 3` topology among them). A language whose toolchain or packages are missing is skipped with one line.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
HERE="$ROOT/docs/examples"
if [ -z "${LOCKSMITH_SERVER_BIN:-}" ]; then
    (cd "$ROOT" && cargo build -p locksmith-server --locked --quiet)
    export LOCKSMITH_SERVER_BIN="${CARGO_TARGET_DIR:-$ROOT/target}/debug/locksmith-server"
fi
if [ -z "${LOCKSMITH_HARNESS_BIN:-}" ]; then
    (cd "$ROOT" && cargo build -p locksmith-harness --locked --quiet)
    export LOCKSMITH_HARNESS_BIN="${CARGO_TARGET_DIR:-$ROOT/target}/debug/locksmith-harness"
fi
WORK=$(mktemp -d)
# A server already gone (killed below, and reaped) is no error: under `set -e` a failed `kill`
# here made the script exit 1 after every example had passed.
trap 'if [ -f "$WORK/pid" ]; then kill "$(cat "$WORK/pid")" 2>/dev/null || true; fi; rm -rf "$WORK"' EXIT

echo "examples: the GitHub Actions job's steps"
PORT=$(LOCKSMITH_PID_FILE="$WORK/pid" "$HERE/start-locksmith.sh" "$LOCKSMITH_SERVER_BIN")
REPLY=$(redis-cli -u "redis://127.0.0.1:$PORT/" PING)
[ "$REPLY" = PONG ] || { echo "examples: PING answered '$REPLY'"; exit 1; }
kill "$(cat "$WORK/pid")"
rm -f "$WORK/pid"

PY="$ROOT/interop/python/.venv/bin/python"
if [ -x "$PY" ] && "$PY" -c 'import pytest' 2>/dev/null; then
    echo "examples: pytest fixture"
    (cd "$HERE/python" && "$PY" -m pytest -q -p no:cacheprovider)
else
    echo "examples: skipping pytest (no interop venv with pytest; run interop/run.sh first)"
fi

if command -v node >/dev/null && [ -d "$ROOT/interop/node/node_modules/ioredis" ]; then
    echo "examples: node tests (a plain client; redlock on three masters under a restart)"
    NODE_PATH="$ROOT/interop/node/node_modules" node --test "$HERE/node/example.test.js" \
        "$HERE/node/redlock.test.js"
else
    echo "examples: skipping node (no node or no interop node_modules; run interop/run.sh first)"
fi
echo "examples: ok"
