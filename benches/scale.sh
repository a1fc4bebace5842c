#!/usr/bin/env bash
set -u
# free_port, body, ticks, rps (sourced before any cd: the path is relative to the caller).
. "$(dirname "$0")/common.sh"
# Flat cost with scale (issue 16, goal 4): the same pipelined commands against a keyspace of
# 10^3 keys and one of 10^6, on a fresh server each, ours and redis-server alternating.
# Usage: cargo build --release -p locksmith-server && bash benches/scale.sh
# For each keyspace size K: SET -r K fills about 95 % of K names (3K pipelined SETs), then
# `redis-benchmark -c 50 -P 16 -r K -n N` runs SET, GET and Redisson's acquire (EVALSHA, lock
# names drawn from K), printing req/s and the server's CPU per request. At 10^6 names that
# acquire mostly creates locks, where at 10^3 it re-enters held ones: so 3K more acquires then
# take about every name, and "acquire held" runs the same re-entry at both sizes (2K keys in
# all). ROUNDS (default 1), N (default 1000000), SIZES (default "1000 1000000").
# The locks' lease is 10 minutes (LEASE_MS), not Redisson's 30 s: on a slow host the fill and
# the runs at 10^6 names take longer than 30 s, and the held acquire then ran while the first
# locks expired (active expiry deleting hundreds of thousands of keys, the acquire creating
# them again), which measured the host's speed, not the lookup at scale.
cd "$(dirname "$0")/.."
OURS=$(realpath "${LOCKSMITH_SERVER_BIN:-target/release/locksmith-server}")
ROUNDS=${ROUNDS:-1}; N=${N:-1000000}; SIZES=${SIZES:-1000 1000000}
SCRATCH=$(mktemp -d); trap 'rm -rf "$SCRATCH"' EXIT
ACQ=$(body ACQUIRE)
LEASE_MS=${LEASE_MS:-600000}
O=58c62432-bb74-4d14-8a00-9908cc8b828f:1
# run PORT PID ARGS...: one redis-benchmark run; prints req/s and ns of server CPU per request.
run() {
  local port=$1 pid=$2; shift 2
  local t0 t1 r
  t0=$(ticks "$pid")
  r=$(redis-benchmark -p "$port" -c 50 -n "$N" -P 16 -q "$@" | rps)
  t1=$(ticks "$pid")
  echo "$r req/s $(( (t1 - t0) * 10000000 / N )) ns"
}
for round in $(seq "$ROUNDS"); do
  for K in $SIZES; do
    for name in ours redis; do
      P=$(free_port)
      if [ $name = ours ]; then
        (cd "$SCRATCH" && exec "$OURS" --port "$P" --loglevel warning) >/dev/null 2>&1 & PID=$!
      else
        redis-server --port "$P" --bind 127.0.0.1 --dir "$SCRATCH" --save '' --appendonly no \
          --loglevel warning >/dev/null 2>&1 & PID=$!
      fi
      for _ in $(seq 50); do redis-cli -p "$P" ping >/dev/null 2>&1 && break; sleep 0.1; done
      redis-benchmark -p "$P" -c 50 -P 64 -t set -r "$K" -n $((3 * K)) -q >/dev/null 2>&1
      A=$(redis-cli -p "$P" SCRIPT LOAD "$ACQ")
      echo "### round $round, $name, $(redis-cli -p "$P" dbsize) keys, load $(cut -d' ' -f1 /proc/loadavg)"
      echo "SET:     $(run "$P" "$PID" -t set -r "$K")"
      echo "GET:     $(run "$P" "$PID" -t get -r "$K")"
      echo "acquire: $(run "$P" "$PID" -r "$K" EVALSHA "$A" 1 lock:__rand_int__ $LEASE_MS $O)"
      redis-benchmark -p "$P" -c 50 -P 64 -r "$K" -n $((3 * K)) -q \
        EVALSHA "$A" 1 lock:__rand_int__ $LEASE_MS $O >/dev/null 2>&1
      echo "acquire held: $(run "$P" "$PID" -r "$K" EVALSHA "$A" 1 lock:__rand_int__ $LEASE_MS $O)"
      kill "$PID"; wait "$PID" 2>/dev/null
    done
  done
done
