#!/usr/bin/env python3
"""FUNCTION LOAD cost as the number of libraries grows (issue 37): loads N one-function
libraries in pipelined batches of 1000, printing microseconds per load for some batches, then
times 50 FUNCTION LOAD REPLACE of one library and 50 FUNCTION DELETE. Flushes the functions
first.

usage: python3 benches/function_libraries.py PORT [N=20000]
"""
import socket, sys, time
port = int(sys.argv[1])
total = int(sys.argv[2]) if len(sys.argv) > 2 else 20000
batch = 1000
s = socket.create_connection(('127.0.0.1', port))
f = s.makefile('rb')
def enc(*args):
    out = b'*%d\r\n' % len(args)
    for a in args:
        a = a.encode() if isinstance(a, str) else a
        out += b'$%d\r\n%s\r\n' % (len(a), a)
    return out
def read():
    line = f.readline()
    if line[:1] == b'$':
        n = int(line[1:]); return f.read(n + 2) if n >= 0 else None
    if line[:1] == b'-': raise RuntimeError(line)
    return line
def code(i): return "#!lua name=lib%d\nredis.register_function('f%d', function() return 1 end)" % (i, i)
s.sendall(enc('FUNCTION', 'FLUSH')); read()
for start in range(0, total, batch):
    t = time.time()
    s.sendall(b''.join(enc('FUNCTION', 'LOAD', code(i)) for i in range(start, start + batch)))
    for _ in range(batch): read()
    us = (time.time() - t) / batch * 1e6
    if start % (total // 5) == 0 or start + batch >= total:
        print('libraries %6d..%6d: %7.1f us/load' % (start, start + batch, us))
def timed(cmd, n=50):
    t = time.time()
    for _ in range(n):
        s.sendall(cmd); read()
    return (time.time() - t) / n * 1e6
mid = total // 2
print('REPLACE at %d: %.1f us' % (total, timed(enc('FUNCTION', 'LOAD', 'REPLACE', code(mid)))))
t = time.time()
for i in range(50):
    s.sendall(enc('FUNCTION', 'DELETE', 'lib%d' % i)); read()
print('DELETE at %d: %.1f us' % (total, (time.time() - t) / 50 * 1e6))
