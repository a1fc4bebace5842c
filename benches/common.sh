# Helpers the benchmark scripts share: each sources it with `. "$(dirname "$0")/common.sh"`.
BENCHES_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# A free loopback port.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
# body NAME: the Lua of Redisson's script NAME (ACQUIRE, RELEASE...) as benches/scripts.rs holds it.
body() { python3 -c "import re;s=open('$BENCHES_DIR/scripts.rs').read();m=re.search(r'const $1: &str =\s*\"((?:[^\"\\\\]|\\\\.)*)\"',s);print(m.group(1).encode().decode('unicode_escape'))"; }
# ticks PID: the process's CPU time so far (user + system, clock ticks).
ticks() { awk '{print $14+$15}' "/proc/$1/stat"; }
# The last requests-per-second figure of `redis-benchmark -q` output on stdin.
rps() { tr '\r' '\n' | grep 'per second' | tail -1 | sed 's/.*: \([0-9]*\)\.[0-9]* requests per second.*/\1/'; }
# median: the median of the numbers on stdin, one a line.
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# callgrind_load TEST N CONNECTION...: the pipelined redis-benchmark run the instruction-count
# scripts measure, to the server at CONNECTION (`-p PORT` or `-s SOCKET`): TEST is one of
# redis-benchmark's -t tests, or "acquire" (Redisson's lock acquire by EVALSHA on 100 000
# random names).
callgrind_load() {
  local t=$1 n=$2; shift 2
  if [ "$t" = acquire ]; then
    local sha
    sha=$(redis-cli "$@" SCRIPT LOAD "$(body ACQUIRE)")
    redis-benchmark "$@" -c 50 -n "$n" -P 16 -q -r 100000 EVALSHA "$sha" 1 \
      lock:__rand_int__ 30000 58c62432-bb74-4d14-8a00-9908cc8b828f:1 >/dev/null 2>&1
  else
    redis-benchmark "$@" -c 50 -n "$n" -P 16 -q -t "$t" >/dev/null 2>&1
  fi
}
# callgrind_totals OUT LABEL TEST N: one line of per-request counts from callgrind's output
# file OUT: Ir, L1m, LLm, Bm and callgrind's cycle estimate CEst (see benches/instructions.sh).
callgrind_totals() {
  callgrind_annotate --show=Ir,I1mr,D1mr,D1mw,ILmr,DLmr,DLmw,Bcm,Bim "$1" 2>/dev/null \
    | grep 'PROGRAM TOTALS' | tr -d ',' \
    | awk -v s="$2" -v t="$3" -v n="$4" '{
        ir = $1; l1 = $3 + $5 + $7; ll = $9 + $11 + $13; bm = $15 + $17
        printf "%s %s: Ir %d, L1m %.1f, LLm %.2f, Bm %.1f, CEst %d per request\n",
               s, t, ir / n, l1 / n, ll / n, bm / n, (ir + 10 * l1 + 100 * ll + 10 * bm) / n }'
}
