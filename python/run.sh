#!/usr/bin/env bash
# Builds the `locksmith` wheel from the release binaries, installs it into a fresh virtual
# environment (with redis-py, pottery and pytest at the interop suite's versions) and runs the
# pytest example of docs/examples/wheel against it: what a Python team without Rust would do.
# Without python3's venv or the package registry, says so in one line and skips.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
(cd "$ROOT" && cargo build --release --locked --quiet -p locksmith-server -p locksmith-harness)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
WHEEL=$(python3 "$ROOT/python/build_wheel.py" --bin-dir "$TARGET/release" --out-dir "$WORK/dist")
echo "wheel: built $(basename "$WHEEL") ($(du -h "$WHEEL" | cut -f1))"
if ! python3 -m venv "$WORK/venv" >/dev/null 2>&1; then
    echo "wheel: skipping the install test: python3 cannot make a virtual environment"
    exit 0
fi
PY="$WORK/venv/bin/python"
# The example's own dependencies, pinned as interop/python/requirements.txt pins them.
deps=$(grep -E '^(redis|pottery|mmh3|typing_extensions|pytest|iniconfig|packaging|pluggy)==' \
    "$ROOT/interop/python/requirements.txt")
# shellcheck disable=SC2086
if ! "$PY" -m pip install -q --disable-pip-version-check "$WHEEL" $deps >"$WORK/pip.log" 2>&1; then
    if [ "${CI:-}" = true ]; then
        cat "$WORK/pip.log" >&2
        exit 1
    fi
    echo "wheel: skipping the install test: pip install failed ($(tail -1 "$WORK/pip.log"))"
    exit 0
fi
# Nothing of the checkout on the path: the plugin and the binaries come from the wheel.
unset LOCKSMITH_BIN_DIR LOCKSMITH_SERVER_BIN
cd "$WORK"
PATH="$WORK/venv/bin:$PATH" "$PY" -m pytest -q -p no:cacheprovider "$ROOT/docs/examples/wheel"
echo "wheel: ok"
