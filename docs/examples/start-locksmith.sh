#!/usr/bin/env bash
# Starts locksmith-server on a free loopback port in the background and prints that port once
# the server accepts connections (its `ready <host>:<port>` line; the port file is written just
# before it). Used by the GitHub Actions example; any CI can call it the same way.
#
#   PORT=$(docs/examples/start-locksmith.sh [path/to/locksmith-server]) || exit 1
#
# The server's pid goes to $LOCKSMITH_PID_FILE (default: locksmith.pid in the working directory).
set -euo pipefail
BIN=${1:-${LOCKSMITH_SERVER_BIN:-locksmith-server}}
PORT_FILE=$(mktemp)
rm -f "$PORT_FILE"
"$BIN" --port 0 --port-file "$PORT_FILE" --loglevel warning >/dev/null 2>&1 &
echo $! >"${LOCKSMITH_PID_FILE:-locksmith.pid}"
for _ in $(seq 1 100); do
    if [ -s "$PORT_FILE" ]; then
        cat "$PORT_FILE"
        rm -f "$PORT_FILE"
        exit 0
    fi
    sleep 0.1
done
echo "locksmith-server did not start within 10 s" >&2
exit 1
