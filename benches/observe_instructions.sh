#!/usr/bin/env bash
set -u
# The cost of lock observation on, in instructions per request under callgrind: the release
# `locksmith-harness` (one master) serving the same pipelined `redis-benchmark` run over TCP
# with observation off and on, straight to the master's own address (the front's proxy is left
# out). Observation on means `--observe 'lock:*'`: Redisson's acquire on `lock:<random>` is a
# grant the observer records (every request), a `SET key:<random>` is a write whose key it
# matches against the pattern and skips. Counts are of the whole process (harness, node,
# observer), start-up included; they do not move with the machine's load.
#
# Usage: cargo build --release -p locksmith-harness && bash benches/observe_instructions.sh
# TESTS (default "acquire,set"), N requests per test (default 20000), MODES (default
# "off on"; "all" observes every key, so each SET is a string-lock grant too).
# Needs valgrind, redis-benchmark and redis-cli. Each line: Ir per request, and the same
# split of misses and branches as benches/instructions.sh.
. "$(dirname "$0")/common.sh"
cd "$(dirname "$0")/.."
HARNESS=${LOCKSMITH_HARNESS_BIN:-target/release/locksmith-harness}
TESTS=${TESTS:-acquire,set}
N=${N:-20000}
MODES=${MODES:-off on}
command -v valgrind >/dev/null || { echo "valgrind not on PATH" >&2; exit 1; }
[ -x "$HARNESS" ] || { echo "no harness binary at $HARNESS" >&2; exit 1; }
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT
for mode in $MODES; do
  case $mode in
    off) observe=() ;;
    on) observe=(--observe 'lock:*') ;;
    all) observe=(--observe '*') ;;
    *) echo "unknown mode $mode (off, on, all)" >&2; exit 2 ;;
  esac
  for t in ${TESTS//,/ }; do
    out=$DIR/cg.out log=$DIR/stdout
    rm -f "$out" "$log"
    valgrind --tool=callgrind --cache-sim=yes --branch-sim=yes --callgrind-out-file="$out" \
      "$HARNESS" --port 0 --loglevel warning --keep-data-window-ms 10000 "${observe[@]}" \
      >"$log" 2>/dev/null &
    pid=$!
    port=""
    for _ in $(seq 300); do
      port=$(sed -n 's/^node n0 127\.0\.0\.1:\([0-9]*\) .*/\1/p' "$log" 2>/dev/null)
      [ -n "$port" ] && redis-cli -p "$port" ping >/dev/null 2>&1 && break
      sleep 0.2
    done
    [ -n "$port" ] || { echo "the harness did not start" >&2; kill "$pid"; exit 1; }
    callgrind_load "$t" "$N" -p "$port"
    kill -INT "$pid"; wait "$pid" 2>/dev/null
    callgrind_totals "$out" "observe-$mode" "$t" "$N"
  done
done
