#!/usr/bin/env bash
set -u
# Side-by-side redis-benchmark of our release binary and redis-server on loopback.
# Usage: cargo build --release -p locksmith-server && bash benches/compare.sh
cd "$(dirname "$0")/.."
OURS=${LOCKSMITH_SERVER_BIN:-target/release/locksmith-server}
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
PO=$(free_port); PR=$(free_port)
"$OURS" --port "$PO" --loglevel warning >/dev/null 2>&1 & OPID=$!
redis-server --port $PR --bind 127.0.0.1 --save '' --appendonly no >/dev/null 2>&1 & RPID=$!
for _ in $(seq 50); do
  redis-cli -p "$PO" ping >/dev/null 2>&1 && redis-cli -p "$PR" ping >/dev/null 2>&1 && break
  sleep 0.1
done
ACQ=$(python3 -c "import re;s=open('server/benches/scripts.rs').read();m=re.search(r'const ACQUIRE: &str =\s*\"((?:[^\"\\\\]|\\\\.)*)\"',s);print(m.group(1).encode().decode('unicode_escape'))")
REL=$(python3 -c "import re;s=open('server/benches/scripts.rs').read();m=re.search(r'const RELEASE: &str =\s*\"((?:[^\"\\\\]|\\\\.)*)\"',s);print(m.group(1).encode().decode('unicode_escape'))")
O=58c62432-bb74-4d14-8a00-9908cc8b828f:1
for name in ours redis; do
  if [ $name = ours ]; then P=$PO; else P=$PR; fi
  echo "### $name load $(cut -d' ' -f1 /proc/loadavg)"
  redis-benchmark -p $P -t ping,set,get,hset,incr -n 200000 -q -c 50 | tr '\r' '\n' | grep "requests per second"
  redis-benchmark -p $P -t ping,set,get,hset,incr -n 1000000 -q -c 50 -P 16 | tr '\r' '\n' | grep "requests per second"
  A=$(redis-cli -p $P SCRIPT LOAD "$ACQ"); R=$(redis-cli -p $P SCRIPT LOAD "$REL")
  for PP in 1 16; do
    echo "acquire -P $PP: $(redis-benchmark -p $P -c 50 -n 200000 -r 10000 -P $PP -q EVALSHA $A 1 lock:__rand_int__ 30000 $O | tr '\r' '\n' | grep 'per second' | tail -1)"
    echo "release -P $PP: $(redis-benchmark -p $P -c 50 -n 200000 -r 10000 -P $PP -q EVALSHA $R 2 lock:__rand_int__ 'redisson_lock__channel:{lock:__rand_int__}' 0 30000 $O | tr '\r' '\n' | grep 'per second' | tail -1)"
  done
done
kill "$OPID" "$RPID"
