#!/usr/bin/env bash
set -u
# free_port, body, ticks, rps (sourced before any cd: the path is relative to the caller).
. "$(dirname "$0")/common.sh"
# Keyspace at scale (issue 16): each server started fresh on a free loopback port, the servers
# alternating ROUNDS times (default 2), every measurement printed as one line of JSON.
#   memory   RSS growth per key over 10^6 keys of each shape in SHAPES (default: string lock
#            hash10), each shape on a fresh server               (keyspace_scale.py memory)
#   returned RSS at start, loaded, after FLUSHALL, FLUSHALL ASYNC and DEL of 90 % of the keys,
#            for each shape in SHAPES (default: string)          (keyspace_scale.py returned)
#   scan     SCAN/HSCAN/SSCAN/ZSCAN 0 COUNT 10, full iterations (keyspace_scale.py scan)
#   expiry   10^6 keys expiring together (PXAT) and with PX 1000 (keyspace_scale.py expiry)
#   setget   redis-benchmark -t set -P 16 -n 2000000 -r KEYSPACE, then -t get -n 4000000, with
#            the server's CPU time (user + system, clock ticks) for each
# Usage: bash benches/keyspace_scale.sh WHAT NAME=BINARY... [redis]
# e.g.   bash benches/keyspace_scale.sh memory before=/tmp/old/locksmith-server \
#            after=target/release/locksmith-server redis
# Servers run in a scratch directory, so neither loads a dump.rdb from the caller's directory.
WHAT=${1:?memory, returned, scan, expiry or setget}; shift
ROUNDS=${ROUNDS:-2}; N=${N:-1000000}; KEYSPACE=${KEYSPACE:-1000000}
TOOL=$(cd "$(dirname "$0")" && pwd)/keyspace_scale.py
SCRATCH=$(mktemp -d); trap 'rm -rf "$SCRATCH"' EXIT; cd "$SCRATCH" || exit 1
run_one() { # name binary-or-redis
  local P PID; P=$(free_port)
  if [ "$2" = redis ]; then
    redis-server --port "$P" --bind 127.0.0.1 --dir "$SCRATCH" --save '' --appendonly no \
      --loglevel warning >/dev/null 2>&1 & PID=$!
  else
    "$2" --port "$P" --loglevel warning >/dev/null 2>&1 & PID=$!
  fi
  for _ in $(seq 50); do redis-cli -p "$P" ping >/dev/null 2>&1 && break; sleep 0.1; done
  [ "$(redis-cli -p "$P" dbsize)" = 0 ] || { echo "$1: not an empty server on $P" >&2; kill "$PID"; return; }
  case $WHAT in
    memory|returned) echo "$1 $(python3 "$TOOL" "$WHAT" "$P" "$PID" "$N" "$SHAPE")" ;;
    scan) echo "$1 $(python3 "$TOOL" scan "$P" "$N" "${SAMPLES:-200}" "${FULL:-yes}")" ;;
    expiry) echo "$1 $(python3 "$TOOL" expiry "$P" "$PID" "$N" "${MODE:-pxat}")" ;;
    setget)
      local c0 c1 c2 set get
      c0=$(ticks "$PID")
      set=$(redis-benchmark -p "$P" -t set -P 16 -n 2000000 -r "$KEYSPACE" -q 2>/dev/null | rps)
      c1=$(ticks "$PID")
      get=$(redis-benchmark -p "$P" -t get -P 16 -n 4000000 -r "$KEYSPACE" -q 2>/dev/null | rps)
      c2=$(ticks "$PID")
      echo "$1 SET $set req/s, cpu $((c1 - c0)) ticks; GET $get req/s, cpu $((c2 - c1)) ticks" ;;
  esac
  kill "$PID"; wait "$PID" 2>/dev/null
}
case $WHAT in
  memory) SHAPES=${SHAPES:-string lock hash10} ;;
  *) SHAPES=${SHAPES:-string} ;;
esac
for round in $(seq "$ROUNDS"); do
  for SHAPE in $SHAPES; do
    for spec in "$@"; do
      case $spec in
        redis) run_one redis redis ;;
        *=*) run_one "${spec%%=*}" "${spec#*=}" ;;
      esac
    done
  done
done
