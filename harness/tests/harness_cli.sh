#!/usr/bin/env bash
# Scenario 9, driven purely over the wire with redis-cli: start a topology with the binary,
# take a plain SET NX PX lock through the front address, fail the master with an admin command
# before the lagging replica got the lock, and take the same lock again: the double grant.
# Usage: harness_cli.sh path/to/locksmith-harness
set -euo pipefail
BIN=${1:?usage: harness_cli.sh path/to/locksmith-harness}
OUT=$(mktemp)
"$BIN" --port 0 --replicas 2 --replication-delay-ms 2000 --sentinel-port 0 --seed 9 --keep-data-window-ms 5000 >"$OUT" 2>/dev/null &
PID=$!
trap 'kill $PID 2>/dev/null || true; rm -f "$OUT"' EXIT

for _ in $(seq 1 100); do
  grep -q '^sentinel ' "$OUT" && break
  sleep 0.1
done
FRONT=$(awk '/^front /{split($2,a,":"); print a[2]}' "$OUT")
SENTINEL=$(awk '/^sentinel /{split($2,a,":"); print a[2]}' "$OUT")
N1=$(awk '/^node n1 /{split($3,a,":"); print a[2]}' "$OUT")
[ -n "$FRONT" ] && [ -n "$SENTINEL" ] && [ -n "$N1" ] || { echo "topology did not start"; cat "$OUT"; exit 1; }
cli() { redis-cli -p "$1" "${@:2}"; }
expect() { # expect <want> <got> <what>
  if [ "$1" != "$2" ]; then echo "FAIL: $3: want '$1', got '$2'"; exit 1; fi
  echo "ok: $3"
}

expect PONG "$(cli "$FRONT" PING)" "front address answers"
expect OK "$(cli "$FRONT" SET lock client-a NX PX 30000)" "client A takes the lock"
expect "" "$(cli "$N1" GET lock)" "the replica has not received it yet"
expect n1 "$(cli "$FRONT" LOCKSMITH.FAILOVER)" "LOCKSMITH.FAILOVER promotes n1"
expect "$N1" "$(cli "$SENTINEL" SENTINEL get-master-addr-by-name mymaster | tail -1)" "Sentinel reports the new master"
expect OK "$(cli "$FRONT" SET lock client-b NX PX 30000)" "client B takes the same lock: double grant"
expect client-b "$(cli "$FRONT" GET lock)" "the new master holds B's lock"
cli "$FRONT" LOCKSMITH.TOPOLOGY | grep -qx down && echo "ok: LOCKSMITH.TOPOLOGY shows the dead master"
expect OK "$(cli "$FRONT" LOCKSMITH.RESTART n0)" "LOCKSMITH.RESTART brings n0 back"
expect OK "$(cli "$FRONT" LOCKSMITH.REPLDELAY 0)" "LOCKSMITH.REPLDELAY changes the delay"
expect 1 "$(cli "$FRONT" WAIT 1 5000 | tr -d '\r')" "WAIT sees a replica acknowledge"
expect OK "$(cli "$FRONT" LOCKSMITH.RESTART n1 KEEP-DATA)" "LOCKSMITH.RESTART KEEP-DATA restarts the master with its data"
expect client-b "$(cli "$FRONT" GET lock)" "the restarted master kept B's lock"
expect "ERR cannot keep data: losing the last 6000 ms reaches beyond the keep-data window of 5000 ms" \
  "$(cli "$FRONT" LOCKSMITH.RESTART n1 KEEP-DATA LOSE-LAST-MS 6000)" "LOSE-LAST-MS beyond --keep-data-window-ms is refused"
expect "-1000" "$(cli "$FRONT" LOCKSMITH.CLOCK n2 -1000)" "LOCKSMITH.CLOCK jumps a clock"
expect OK "$(cli "$FRONT" LOCKSMITH.PARTITION n1 n2)" "LOCKSMITH.PARTITION"
expect OK "$(cli "$FRONT" LOCKSMITH.HEAL)" "LOCKSMITH.HEAL"
expect OK "$(cli "$FRONT" LOCKSMITH.PAUSE n2 100)" "LOCKSMITH.PAUSE"
expect OK "$(cli "$FRONT" LOCKSMITH.KILL n2)" "LOCKSMITH.KILL"
echo "all admin commands worked over the wire"
