#!/usr/bin/env bash
set -u
# free_port, body, ticks, rps (sourced before any cd: the path is relative to the caller).
. "$(dirname "$0")/common.sh"
# Side-by-side redis-benchmark of our release binary and redis-server on loopback.
# Usage: cargo build --release -p locksmith-server && bash benches/compare.sh
# ROUNDS (default 3) alternates the two servers that many times for the Redisson scripts, as
# single runs on a shared machine move by ±15 %; the server's CPU time per request (user +
# system, from /proc) is printed beside each throughput. NAMES (default 10000) is the number of
# random lock names of the `names` runs (issue 16's goal 2 uses 100000).
cd "$(dirname "$0")/.."
OURS=${LOCKSMITH_SERVER_BIN:-target/release/locksmith-server}
ROUNDS=${ROUNDS:-3}
PO=$(free_port); PR=$(free_port)
"$OURS" --port "$PO" --loglevel warning >/dev/null 2>&1 & OPID=$!
redis-server --port $PR --bind 127.0.0.1 --save '' --appendonly no >/dev/null 2>&1 & RPID=$!
trap 'kill "$OPID" "$RPID" 2>/dev/null' EXIT
for _ in $(seq 50); do
  redis-cli -p "$PO" ping >/dev/null 2>&1 && redis-cli -p "$PR" ping >/dev/null 2>&1 && break
  sleep 0.1
done
ACQ=$(body ACQUIRE); REL=$(body RELEASE)
O=58c62432-bb74-4d14-8a00-9908cc8b828f:1
N=200000
# run NAME PORT PID PIPELINE ARGS...: one redis-benchmark run; prints req/s and ns of server CPU per request.
run() {
  local name=$1 port=$2 pid=$3 pp=$4; shift 4
  local t0 t1 r
  t0=$(ticks "$pid")
  r=$(redis-benchmark -p "$port" -c 50 -n $N -P "$pp" -q "$@" | rps)
  t1=$(ticks "$pid")
  echo "$r req/s $(( (t1 - t0) * 10000000 / N )) ns"
}
for name in ours redis; do
  if [ $name = ours ]; then P=$PO; else P=$PR; fi
  echo "### $name plain commands, load $(cut -d' ' -f1 /proc/loadavg)"
  redis-benchmark -p $P -t ping,set,get,hset,incr -n $N -q -c 50 | tr '\r' '\n' | grep "requests per second"
  redis-benchmark -p $P -t ping,set,get,hset,incr -n 1000000 -q -c 50 -P 16 | tr '\r' '\n' | grep "requests per second"
done
for round in $(seq "$ROUNDS"); do
  for name in ours redis; do
    if [ $name = ours ]; then P=$PO; PID=$OPID; else P=$PR; PID=$RPID; fi
    A=$(redis-cli -p $P SCRIPT LOAD "$ACQ"); R=$(redis-cli -p $P SCRIPT LOAD "$REL")
    echo "### round $round $name, load $(cut -d' ' -f1 /proc/loadavg)"
    for PP in 1 16; do
      echo "acquire -P $PP ${NAMES:-10000} names: $(run $name $P $PID $PP -r ${NAMES:-10000} EVALSHA $A 1 lock:__rand_int__ 30000 $O)"
      echo "release -P $PP ${NAMES:-10000} names: $(run $name $P $PID $PP -r ${NAMES:-10000} EVALSHA $R 2 lock:__rand_int__ 'redisson_lock__channel:{lock:__rand_int__}' 0 30000 $O)"
      echo "acquire -P $PP one name:  $(run $name $P $PID $PP EVALSHA $A 1 lock 30000 $O)"
      echo "release -P $PP one name:  $(run $name $P $PID $PP EVALSHA $R 2 lock 'redisson_lock__channel:{lock}' 0 30000 $O)"
    done
  done
done
