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
