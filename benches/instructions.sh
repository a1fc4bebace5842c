#!/usr/bin/env bash
set -u
# Instructions, cache misses and mispredicted branches per request, under callgrind, of our
# release binary and redis-server serving the same pipelined `redis-benchmark` run over a Unix
# socket (no TCP stack on either side). Unlike throughput on a shared machine these counts do
# not move with the load: a change to the request path shows in them at once.
#
# Usage: cargo build --release -p locksmith-server && bash benches/instructions.sh
# TESTS (default "get,set,incr,hset"; any of redis-benchmark's -t tests, and "acquire":
# Redisson's lock acquire by EVALSHA on 100 000 random names, as benches/compare.sh runs it),
# N requests per test (default 200000), SERVERS (default "ours redis"; a path to another
# locksmith-server binary is a server too, for before/after).
# Needs valgrind. Each line: Ir (instructions), L1m (first-level instruction and data misses),
# LLm (last-level misses), Bm (mispredicted conditional and indirect branches), each per
# request (the whole process's count divided by N, start-up included, about 1 %), and CEst,
# callgrind's cycle estimate Ir + 10 L1m + 100 LLm + 10 Bm. L1m depends on how the server's
# threads interleave and moves by a few misses a request between runs; Ir by about 2 %.
# body (Redisson's scripts), sourced before the cd: the path is relative to the caller.
. "$(dirname "$0")/common.sh"
cd "$(dirname "$0")/.."
OURS=${LOCKSMITH_SERVER_BIN:-target/release/locksmith-server}
TESTS=${TESTS:-get,set,incr,hset}
N=${N:-200000}
SERVERS=${SERVERS:-ours redis}
command -v valgrind >/dev/null || { echo "valgrind not on PATH" >&2; exit 1; }
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT
for server in $SERVERS; do
  for t in ${TESTS//,/ }; do
    sock=$DIR/s.sock out=$DIR/cg.out
    rm -f "$sock" "$out"
    case $server in
      redis) cmd=(redis-server --port 0 --unixsocket "$sock" --save '' --appendonly no) ;;
      ours) cmd=("$OURS" --port 0 --unixsocket "$sock" --loglevel warning) ;;
      *) cmd=("$server" --port 0 --unixsocket "$sock" --loglevel warning) ;;
    esac
    valgrind --tool=callgrind --cache-sim=yes --branch-sim=yes --callgrind-out-file="$out" \
      "${cmd[@]}" >/dev/null 2>&1 &
    pid=$!
    for _ in $(seq 150); do
      [ -S "$sock" ] && redis-cli -s "$sock" ping >/dev/null 2>&1 && break
      sleep 0.2
    done
    callgrind_load "$t" "$N" -s "$sock"
    kill -INT "$pid"; wait "$pid" 2>/dev/null
    callgrind_totals "$out" "$server" "$t" "$N"
  done
done
