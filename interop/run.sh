#!/usr/bin/env bash
# Interop suite: real Python and Node.js clients and lock libraries against our
# `locksmith-server` binary AND a real `redis-server` (three of each, for the quorum checks),
# the same scripts on both targets, then the replies each client saw are compared.
#
#   bash interop/run.sh
#
# Dependencies go into interop/python/.venv and interop/node/node_modules (their download
# caches into interop/.cache); nothing is installed globally. A language whose toolchain or
# package registry is unavailable is skipped with one line. Without redis-server on the PATH,
# only our server is checked. Env: LOCKSMITH_SERVER_BIN (use this binary instead of building),
# INTEROP_SUITE_TIMEOUT (seconds per suite run, default 240), INTEROP_RESULTS_DIR (keep each
# suite's recorded replies and the server logs there).
# The last line is `N passed, M failed`; the exit status is non-zero on any failure.
set -uo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
INTEROP="$ROOT/interop"
SUITE_TIMEOUT="${INTEROP_SUITE_TIMEOUT:-240}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/locksmith-interop.XXXXXX")"
PIDS=()

cleanup() {
    local pid
    for pid in "${PIDS[@]}"; do
        kill "$pid" 2>/dev/null
    done
    for pid in "${PIDS[@]}"; do
        wait "$pid" 2>/dev/null
    done
    if [ -n "${INTEROP_RESULTS_DIR:-}" ]; then
        mkdir -p "$INTEROP_RESULTS_DIR" && cp "$WORK"/*.json "$WORK"/*.log "$INTEROP_RESULTS_DIR"/ 2>/dev/null
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

die() {
    echo "interop: $*" >&2
    echo "0 passed, 1 failed"
    exit 1
}

command -v python3 >/dev/null || die "python3 is required (free ports, comparison)"

# ---------------------------------------------------------------- the binary

if [ -n "${LOCKSMITH_SERVER_BIN:-}" ]; then
    BIN="$LOCKSMITH_SERVER_BIN"
else
    (cd "$ROOT" && cargo build -p locksmith-server --locked --quiet) || die "cargo build failed"
    TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
    BIN="$TARGET_DIR/debug/locksmith-server"
fi
[ -x "$BIN" ] || die "no server binary at $BIN"

# ---------------------------------------------------------------- servers

# Six distinct free loopback ports (held open together so they differ).
read -r -a PORTS <<<"$(python3 -c '
import socket
socks = [socket.socket() for _ in range(6)]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in socks))
for s in socks:
    s.close()
')"
[ "${#PORTS[@]}" -eq 6 ] || die "could not find free ports"

wait_ready() { # port log: PING until PONG, at most 10 s
    python3 - "$1" <<'EOF' || { echo "interop: server on port $1 did not start:" >&2; tail -20 "$2" >&2; return 1; }
import socket, sys, time
port = int(sys.argv[1])
deadline = time.monotonic() + 10
while time.monotonic() < deadline:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
            s.sendall(b"PING\r\n")
            if s.recv(64).startswith(b"+PONG"):
                sys.exit(0)
    except OSError:
        pass
    time.sleep(0.05)
sys.exit(1)
EOF
}

OURS_URLS=()
for i in 0 1 2; do
    port="${PORTS[$i]}"
    "$BIN" --port "$port" --bind 127.0.0.1 >"$WORK/ours-$i.log" 2>&1 &
    PIDS+=($!)
    wait_ready "$port" "$WORK/ours-$i.log" || die "locksmith-server did not start"
    OURS_URLS+=("redis://127.0.0.1:$port/")
done
echo "interop: locksmith-server ($BIN) on ports ${PORTS[*]:0:3}"

REDIS_URLS=()
if command -v redis-server >/dev/null; then
    for i in 0 1 2; do
        port="${PORTS[$((i + 3))]}"
        redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no \
            --daemonize no >"$WORK/redis-$i.log" 2>&1 &
        PIDS+=($!)
        wait_ready "$port" "$WORK/redis-$i.log" || die "redis-server did not start"
        REDIS_URLS+=("redis://127.0.0.1:$port/")
    done
    echo "interop: $(redis-server --version | cut -d' ' -f1-3) on ports ${PORTS[*]:3:3}"
else
    echo "interop: redis-server not on the PATH; checking our server only, no comparison"
fi

# ---------------------------------------------------------------- suites

RESULTS=()
COMPARE=()

# run_on_targets lang: runs `suite_<lang> target out urls...` on ours, then on redis-server.
run_on_targets() {
    local lang="$1"
    local ours="$WORK/$lang-ours.json" theirs="$WORK/$lang-redis.json"
    echo "interop: $lang against locksmith-server"
    bounded "suite_$lang" ours "$ours" "${OURS_URLS[@]}"
    if [ -f "$ours" ]; then RESULTS+=("$ours"); else RESULTS+=("--missing=$lang/ours"); fi
    if [ "${#REDIS_URLS[@]}" -gt 0 ]; then
        echo "interop: $lang against redis-server"
        bounded "suite_$lang" redis "$theirs" "${REDIS_URLS[@]}"
        if [ -f "$theirs" ]; then RESULTS+=("$theirs"); else RESULTS+=("--missing=$lang/redis"); fi
        if [ -f "$ours" ] && [ -f "$theirs" ]; then COMPARE+=(--pair "$ours" "$theirs"); fi
    fi
}

# `timeout` runs a program, not a shell function: export the suites and run them in bash.
suite_python() { "$INTEROP/python/.venv/bin/python" "$INTEROP/python/test_interop.py" --target "$1" --out "$2" --urls "${@:3}"; }
suite_node() { node "$INTEROP/node/test_interop.js" --target "$1" --out "$2" "${@:3}"; }
export -f suite_python suite_node
export INTEROP
bounded() { timeout "$SUITE_TIMEOUT" bash -c '"$@"' _ "$@"; }

mkdir -p "$INTEROP/.cache"

# Python: a venv inside the checkout, rebuilt only when requirements.txt changes.
setup_python() {
    local venv="$INTEROP/python/.venv" req="$INTEROP/python/requirements.txt"
    python3 -m venv --help >/dev/null 2>&1 || { echo "interop: skipping python: python3 venv is unavailable"; return 1; }
    if [ -x "$venv/bin/python" ] && cmp -s "$req" "$venv/requirements.installed"; then
        return 0
    fi
    rm -rf "$venv"
    if ! python3 -m venv "$venv" >"$WORK/venv.log" 2>&1; then
        echo "interop: skipping python: could not create a venv ($(tail -1 "$WORK/venv.log"))"
        return 1
    fi
    if ! PIP_CACHE_DIR="$INTEROP/.cache/pip" "$venv/bin/pip" install --disable-pip-version-check -q \
        -r "$req" >"$WORK/pip.log" 2>&1; then
        echo "interop: skipping python: pip install failed ($(tail -1 "$WORK/pip.log"))"
        rm -rf "$venv"
        return 1
    fi
    cp "$req" "$venv/requirements.installed"
}

# Node: `npm ci` from package-lock.json into interop/node/node_modules.
setup_node() {
    local dir="$INTEROP/node"
    if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
        echo "interop: skipping node: node/npm not on the PATH"
        return 1
    fi
    if [ -d "$dir/node_modules" ] && cmp -s "$dir/package-lock.json" "$dir/node_modules/.package-lock.installed"; then
        return 0
    fi
    if ! (cd "$dir" && npm_config_cache="$INTEROP/.cache/npm" npm ci --no-audit --no-fund \
        --loglevel=error >"$WORK/npm.log" 2>&1); then
        echo "interop: skipping node: npm ci failed ($(grep -v '^npm warn' "$WORK/npm.log" | tail -1))"
        return 1
    fi
    cp "$dir/package-lock.json" "$dir/node_modules/.package-lock.installed"
}

if setup_python; then
    run_on_targets python
fi
if setup_node; then
    run_on_targets node
fi

if [ "${#RESULTS[@]}" -eq 0 ]; then
    echo "interop: no language toolchain available; nothing checked"
    echo "0 passed, 0 failed"
    exit 0
fi

echo "interop: results"
python3 "$INTEROP/compare.py" "${RESULTS[@]}" "${COMPARE[@]}"
status=$?
if [ "$status" -ne 0 ]; then
    for log in "$WORK"/ours-*.log; do
        if [ -s "$log" ]; then
            echo "--- $(basename "$log") (last lines)"
            tail -20 "$log"
        fi
    done
    compare_line="$(python3 "$INTEROP/compare.py" "${RESULTS[@]}" "${COMPARE[@]}" | tail -1)"
    echo "$compare_line"
fi
exit "$status"
