#!/usr/bin/env bash
set -u
# free_port, body, ticks, rps (sourced before any cd: the path is relative to the caller).
. "$(dirname "$0")/common.sh"
# Before/after on the lock path: the same Redisson acquire/release EVALSHA runs and pipelined
# SETs against two builds of locksmith-server, one after the other on a free port, ROUNDS
# times (default 3) alternating.
# Usage: bash benches/before_after.sh OLD_BINARY NEW_BINARY
# e.g. git worktree add /tmp/old <commit> && (cd /tmp/old && CARGO_TARGET_DIR=/tmp/old-target \
#      cargo build --release -p locksmith-server) && cargo build --release -p locksmith-server &&
#      bash benches/before_after.sh /tmp/old-target/release/locksmith-server target/release/locksmith-server
cd "$(dirname "$0")/.."
OLD=${1:?old binary}; NEW=${2:?new binary}; ROUNDS=${ROUNDS:-3}
ACQ=$(body ACQUIRE); REL=$(body RELEASE)
O=58c62432-bb74-4d14-8a00-9908cc8b828f:1
for round in $(seq "$ROUNDS"); do
  for name in old new; do
    if [ $name = old ]; then BIN=$OLD; else BIN=$NEW; fi
    P=$(free_port)
    "$BIN" --port "$P" --loglevel warning >/dev/null 2>&1 & PID=$!
    for _ in $(seq 50); do redis-cli -p "$P" ping >/dev/null 2>&1 && break; sleep 0.1; done
    A=$(redis-cli -p "$P" SCRIPT LOAD "$ACQ"); R=$(redis-cli -p "$P" SCRIPT LOAD "$REL")
    a1=$(redis-benchmark -p "$P" -c 50 -n 200000 -q -r 10000 EVALSHA "$A" 1 lock:__rand_int__ 30000 $O | rps)
    a16=$(redis-benchmark -p "$P" -c 50 -n 400000 -P 16 -q EVALSHA "$A" 1 lock 30000 $O | rps)
    r1=$(redis-benchmark -p "$P" -c 50 -n 200000 -q -r 10000 EVALSHA "$R" 2 lock:__rand_int__ 'redisson_lock__channel:{lock:__rand_int__}' 0 30000 $O | rps)
    s16=$(redis-benchmark -p "$P" -c 50 -n 1000000 -P 16 -q -t set | rps)
    echo "round $round $name: acquire 10k names $a1, acquire one name -P16 $a16, release 10k names $r1, SET -P16 $s16"
    kill "$PID"; wait "$PID" 2>/dev/null
  done
done
