#!/usr/bin/env bash
set -u
# free_port, body, ticks, rps (sourced before any cd: the path is relative to the caller).
. "$(dirname "$0")/common.sh"
# Flat cost with scale (issue 16, goal 4): the same pipelined commands against a keyspace of
# 10^3 keys and one of 10^6, ours and redis-server.
# Usage: cargo build --release -p locksmith-server && bash benches/scale.sh
#
# The four servers (ours and Redis, each at both sizes) are alive at once, and each test runs
# on the four one after the other, ROUNDS times: a ratio is taken between runs seconds apart.
# (Run minutes apart, as this script did first, the host's own speed moved the ratios by up
# to 0.3 between rounds.) Each server is first filled by SET -r K over about 95 % of K names
# (3K pipelined SETs). Then `redis-benchmark -c 50 -P 16 -r K -n N` runs SET and GET, and
# Redisson's acquire by EVALSHA on lock names drawn from K: "acquire" mostly creates locks
# at 10^6 names, where at 10^3 it re-enters held ones (each round starts from the same
# state: FLUSHALL and the SET fill again); so for "acquire held" 3K acquires after the fill
# take about every lock name, and the rounds run the same re-entry at both sizes (2K keys
# in all). Each run prints req/s and the server's CPU per request; the summary gives
# the median over the rounds of throughput at 10^6 over throughput at 10^3, per server.
# ROUNDS (default 3), N (default 1000000), SIZES (default "1000 1000000", the first is the
# base the others are compared with), TESTS (default "set get acquire held").
# The locks' lease is 10 minutes (LEASE_MS), not Redisson's 30 s: on a slow host the fill and
# the runs at 10^6 names take longer than 30 s, and the held acquire then ran while the first
# locks expired (active expiry deleting hundreds of thousands of keys, the acquire creating
# them again), which measured the host's speed, not the lookup at scale.
cd "$(dirname "$0")/.."
OURS=$(realpath "${LOCKSMITH_SERVER_BIN:-target/release/locksmith-server}")
ROUNDS=${ROUNDS:-3}; N=${N:-1000000}; SIZES=${SIZES:-1000 1000000}
TESTS=${TESTS:-set get acquire held}
SCRATCH=$(mktemp -d)
PIDS=()
trap 'kill "${PIDS[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$SCRATCH"' EXIT
ACQ=$(body ACQUIRE)
LEASE_MS=${LEASE_MS:-600000}
O=58c62432-bb74-4d14-8a00-9908cc8b828f:1
declare -A PORT PID SHA
for name in ours redis; do
  for K in $SIZES; do
    P=$(free_port)
    if [ $name = ours ]; then
      (cd "$SCRATCH" && exec "$OURS" --port "$P" --loglevel warning) >/dev/null 2>&1 &
    else
      redis-server --port "$P" --bind 127.0.0.1 --dir "$SCRATCH" --save '' --appendonly no \
        --loglevel warning >/dev/null 2>&1 &
    fi
    PID[$name$K]=$!; PORT[$name$K]=$P; PIDS+=($!)
    for _ in $(seq 50); do redis-cli -p "$P" ping >/dev/null 2>&1 && break; sleep 0.1; done
    SHA[$name$K]=$(redis-cli -p "$P" SCRIPT LOAD "$ACQ")
  done
done
# fill SERVER K: empties the server and sets about 95 % of K names (scripts stay loaded).
fill() {
  redis-cli -p "${PORT[$1$2]}" flushall >/dev/null
  redis-benchmark -p "${PORT[$1$2]}" -c 50 -P 64 -t set -r "$2" -n $((3 * $2)) -q >/dev/null 2>&1
}
for name in ours redis; do
  for K in $SIZES; do
    fill $name "$K"
    echo "$name: $(redis-cli -p "${PORT[$name$K]}" dbsize) keys"
  done
done
# run SERVER K TEST: one redis-benchmark run; prints "req/s ns-of-CPU-per-request".
run() {
  local s=$1$2 K=$2 t=$3 t0 t1 rate args
  case $t in
    set | get) args=(-t "$t") ;;
    acquire | held) args=(EVALSHA "${SHA[$s]}" 1 "lock:__rand_int__" "$LEASE_MS" "$O") ;;
  esac
  t0=$(ticks "${PID[$s]}")
  rate=$(redis-benchmark -p "${PORT[$s]}" -c 50 -n "$N" -P 16 -q -r "$K" "${args[@]}" | rps)
  t1=$(ticks "${PID[$s]}")
  echo "$rate $(((t1 - t0) * 10000000 / N))"
}
RESULTS=$SCRATCH/results
for t in $TESTS; do
  if [ "$t" = held ]; then
    # Every lock name taken, at each size, before the held runs.
    for name in ours redis; do
      for K in $SIZES; do
        fill $name "$K"
        redis-benchmark -p "${PORT[$name$K]}" -c 50 -P 64 -r "$K" -n $((3 * K)) -q \
          EVALSHA "${SHA[$name$K]}" 1 "lock:__rand_int__" "$LEASE_MS" "$O" >/dev/null 2>&1
      done
    done
  fi
  for r in $(seq "$ROUNDS"); do
    line="$t round $r, load $(cut -d' ' -f1 /proc/loadavg):"
    for name in ours redis; do
      for K in $SIZES; do
        [ "$t" = acquire ] && fill $name "$K"
        read -r rate ns < <(run $name "$K" "$t")
        echo "$t $r $name $K $rate" >>"$RESULTS"
        line="$line  $name@$K $rate req/s $ns ns"
      done
    done
    echo "$line"
  done
done
# Median over the rounds of (rate at size K) / (rate at the first size), per test and server.
BASE=${SIZES%% *}
echo "median of throughput at K over throughput at $BASE keys, and ours / redis at K:"
for t in $TESTS; do
  for K in ${SIZES#"$BASE"}; do
    line="$t K=$K:"
    for name in ours redis; do
      m=$(awk -v t="$t" -v n="$name" -v b="$BASE" -v k="$K" '
        $1 == t && $3 == n && $4 == b { base[$2] = $5 }
        $1 == t && $3 == n && $4 == k { at[$2] = $5 }
        END { for (r in at) if (base[r] > 0) printf "%.3f\n", at[r] / base[r] }' "$RESULTS" |
        median)
      line="$line $name $m"
    done
    m=$(awk -v t="$t" -v k="$K" '
      $1 == t && $4 == k && $3 == "ours" { o[$2] = $5 }
      $1 == t && $4 == k && $3 == "redis" { r[$2] = $5 }
      END { for (i in o) if (r[i] > 0) printf "%.3f\n", o[i] / r[i] }' "$RESULTS" |
      median)
    echo "$line  (ours / redis at K: $m)"
  done
done
