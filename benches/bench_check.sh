#!/usr/bin/env bash
set -u
# free_port, body, ticks, rps (sourced before any cd: the path is relative to the caller).
. "$(dirname "$0")/common.sh"
# Checks locksmith-bench's numbers against redis-benchmark on the same workload: EVALSHA of
# Redisson's acquire script (tryLockInnerAsync, as lock/src/scripts.rs) on 10k random names,
# 50 clients, pipeline 1 and 16, against our release binary and a real redis-server, both on
# free loopback ports. ROUNDS (default 5) repeats every run, the two tools back to back on the
# same server, swapping which goes first each round (on a shared 2-core machine single runs
# move by ±15 %); the summary gives each tool's median and the ratio of the medians.
# Usage: cargo build --release -p locksmith-server -p locksmith-bench && bash benches/bench_check.sh
cd "$(dirname "$0")/.."
BIN=${BIN:-target/release}
ROUNDS=${ROUNDS:-5}
PO=$(free_port); PR=$(free_port)
"$BIN/locksmith-server" --port "$PO" --loglevel warning >/dev/null 2>&1 & OPID=$!
redis-server --port "$PR" --bind 127.0.0.1 --save '' --appendonly no >/dev/null 2>&1 & RPID=$!
WORK=$(mktemp -d)
trap 'kill "$OPID" "$RPID" 2>/dev/null; rm -rf "$WORK"' EXIT
for _ in $(seq 50); do
  redis-cli -p "$PO" ping >/dev/null 2>&1 && redis-cli -p "$PR" ping >/dev/null 2>&1 && break
  sleep 0.1
done
# The acquire body, as locksmith-bench's `acquire` scenario sends it.
"$BIN/locksmith-bench" --list --json | python3 -c 'import json,sys; print(next(s["body"] for w in json.load(sys.stdin) if w["name"]=="acquire" for s in w["scripts"] if s["name"]=="acquire"), end="")' > "$WORK/acquire.lua"
O=58c62432-bb74-4d14-8a00-9908cc8b828f:1
run_rb() { redis-benchmark -p "$1" -c 50 -n "$3" -P "$2" -r 10000 -q EVALSHA "$SHA" 1 lock:__rand_int__ 30000 $O | rps; }
run_lb() {
  "$BIN/locksmith-bench" --target "redis://127.0.0.1:$1/" --script "$WORK/acquire.lua" \
    --keys 'lock:{rand}' --args 30000 $O --keyspace 10000 --clients 50 --pipeline "$2" \
    --requests "$3" --warmup 0 --json -q |
    python3 -c 'import json,sys; t=json.load(sys.stdin)["targets"][0]; assert t["error_count"]==0, t["errors"]; print("%d" % t["throughput"])'
}
for round in $(seq "$ROUNDS"); do
  for PP in 1 16; do
    N=$(( PP == 1 ? 200000 : 1000000 ))
    for name in ours redis; do
      if [ $name = ours ]; then P=$PO; else P=$PR; fi
      SHA=$(redis-cli -p "$P" SCRIPT LOAD "$(cat "$WORK/acquire.lua")")
      if [ $((round % 2)) = 1 ]; then RB=$(run_rb $P $PP $N); LB=$(run_lb $P $PP $N)
      else LB=$(run_lb $P $PP $N); RB=$(run_rb $P $PP $N); fi
      echo "round $round -P $PP $name redis-benchmark $RB locksmith-bench $LB load $(cut -d' ' -f1 /proc/loadavg)" | tee -a "$WORK/runs"
    done
  done
done
python3 - "$WORK/runs" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    w = line.split()
    rows.setdefault((w[4], w[3]), []).append((int(w[6]), int(w[8])))
print("| server | pipeline | redis-benchmark, median req/s | locksmith-bench, median req/s | median of the paired ratios (min-max) |")
print("|---|---:|---:|---:|---:|")
for (name, pp), runs in sorted(rows.items(), key=lambda kv: (kv[0][0], int(kv[0][1]))):
    rb = statistics.median(r for r, _ in runs); lb = statistics.median(l for _, l in runs)
    ratios = [l / r for r, l in runs]
    print(f"| {name} | {pp} | {rb:,.0f} | {lb:,.0f} | {statistics.median(ratios):.3f} ({min(ratios):.2f}-{max(ratios):.2f}) |")
PY
