#!/usr/bin/env bash
set -u
# Plain commands pipelined (issue 16 goal 3), servers alternating: our release binary,
# redis-server, and `null_server` (benches/src/bin/null_server.rs, which answers +OK to every
# request and does no work: the most this client can get from any server on this machine).
# Each line: requests per second, the server's CPU per request (user, system; from /proc) and
# redis-benchmark's own (from /usr/bin/time).
#
# Usage: cargo build --release -p locksmith-server -p locksmith-benches --bin null_server &&
#        bash benches/plain.sh
# TESTS (default "get,set,incr,hset"), N requests per run (default 2000000), ROUNDS (default 3),
# TRANSPORT (unix, the default: no TCP stack; or tcp, on loopback), P pipeline (default 16),
# R: when set, the keys are drawn from R names (`redis-benchmark -r R`) and each server is
# first filled by 3R pipelined SETs over them (about 95 % of the names); unset, every request
# names the same key, as redis-benchmark does by default.
. "$(dirname "$0")/common.sh"
cd "$(dirname "$0")/.."
OURS=${LOCKSMITH_SERVER_BIN:-target/release/locksmith-server}
NULL=${NULL_SERVER_BIN:-target/release/null_server}
TESTS=${TESTS:-get,set,incr,hset}
N=${N:-2000000}
ROUNDS=${ROUNDS:-3}
TRANSPORT=${TRANSPORT:-unix}
P=${P:-16}
R=${R:-}
RANDOM_KEYS=()
[ -n "$R" ] && RANDOM_KEYS=(-r "$R")
for bin in "$OURS" "$NULL" /usr/bin/time; do
  [ -x "$bin" ] || { echo "$bin is missing (see Usage)" >&2; exit 1; }
done
DIR=$(mktemp -d)
PID=
trap '[ -n "$PID" ] && kill "$PID" 2>/dev/null; rm -rf "$DIR"' EXIT
TCK=$(getconf CLK_TCK)
# ns SECONDS: nanoseconds per request; ticks_ns TICKS: the same for clock ticks.
ns() { echo "$1 * 1000000000 / $N" | bc; }
ticks_ns() { echo "$1 * 1000000000 / $TCK / $N" | bc; }
for round in $(seq "$ROUNDS"); do
  for t in ${TESTS//,/ }; do
    for server in null ours redis; do
      sock=$DIR/s.sock; port=$(free_port)
      if [ "$TRANSPORT" = unix ]; then listen_null=(--unixsocket "$sock"); conn=(-s "$sock")
      else listen_null=(--port "$port"); conn=(-p "$port"); fi
      case $server in
        null) "$NULL" "${listen_null[@]}" >/dev/null 2>&1 & PID=$! ;;
        ours) "$OURS" --port "$port" --unixsocket "$sock" --loglevel warning >/dev/null 2>&1 & PID=$! ;;
        redis) redis-server --port "$port" --bind 127.0.0.1 --unixsocket "$sock" --save '' \
                 --appendonly no >/dev/null 2>&1 & PID=$! ;;
      esac
      for _ in $(seq 100); do
        if [ "$TRANSPORT" = unix ]; then [ -S "$sock" ] && break
        else (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; fi
        sleep 0.05
      done
      if [ -n "$R" ] && [ $server != null ]; then
        redis-benchmark "${conn[@]}" -c 50 -P 64 -t set -r "$R" -n $((3 * R)) -q >/dev/null 2>&1
      fi
      read -r u0 s0 < <(awk '{print $14, $15}' "/proc/$PID/stat")
      r=$(/usr/bin/time -f "%U %S" -o "$DIR/client" \
          redis-benchmark "${conn[@]}" -c 50 -n "$N" -P "$P" "${RANDOM_KEYS[@]}" -q -t "$t" 2>/dev/null | rps)
      read -r u1 s1 < <(awk '{print $14, $15}' "/proc/$PID/stat")
      read -r cu cs < "$DIR/client"
      printf "round %s %-4s %-5s %8s req/s  server user %4s sys %4s ns  client user %4s sys %4s ns\n" \
        "$round" "$t" "$server" "$r" \
        "$(ticks_ns "($u1 - $u0)")" "$(ticks_ns "($s1 - $s0)")" "$(ns "$cu")" "$(ns "$cs")" |
        tee -a "$DIR/results"
      kill "$PID" 2>/dev/null; wait "$PID" 2>/dev/null; PID=
      rm -f "$sock"
    done
  done
done
# Per test, the median over the rounds of each ratio to Redis within a round: throughput of
# ours and of null_server (the client's ceiling), and our server's CPU (user + system).
echo "median over $ROUNDS rounds, to redis in the same round:"
for t in ${TESTS//,/ }; do
  # ratio NAME WHAT: NAME's WHAT (rps, or cpu: server user + system ns) over Redis's.
  ratio() {
    awk -v t="$t" -v n="$1" -v what="$2" '
      $3 == t { x = (what == "cpu") ? $9 + $11 : $5; if ($4 == n) v[$2] = x; if ($4 == "redis") r[$2] = x }
      END { for (i in v) if (r[i] > 0) printf "%.3f\n", v[i] / r[i] }' "$DIR/results" | median
  }
  echo "$t: ours $(ratio ours rps)  null_server $(ratio null rps)  server cpu ours $(ratio ours cpu)"
done
