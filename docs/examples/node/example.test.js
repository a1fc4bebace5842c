// A Node.js test (node:test, no framework) against locksmith-server: the binary comes from
// $LOCKSMITH_SERVER_BIN (default: `locksmith-server` on the PATH), started with `--port 0`; its
// first line, `ready <host>:<port>`, says where it listens. Run: node --test example.test.js
'use strict';
const { test, before, after } = require('node:test');
const assert = require('node:assert');
const { spawn } = require('node:child_process');
const readline = require('node:readline');
const Redis = require('ioredis');

let server;
let url;

before(async () => {
  const bin = process.env.LOCKSMITH_SERVER_BIN || 'locksmith-server';
  server = spawn(bin, ['--port', '0', '--loglevel', 'warning'], { stdio: ['ignore', 'pipe', 'ignore'] });
  const lines = readline.createInterface({ input: server.stdout });
  const line = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('locksmith-server did not start within 10 s')), 10000);
    lines.once('line', (l) => { clearTimeout(timer); resolve(l); });
    server.once('exit', (code) => { clearTimeout(timer); reject(new Error(`locksmith-server exited (${code})`)); });
  });
  assert.match(line, /^ready /);
  url = `redis://${line.slice('ready '.length)}/`;
});

after(() => {
  server.kill('SIGTERM');
});

test('commands', async () => {
  const redis = new Redis(url);
  try {
    assert.strictEqual(await redis.set('greeting', 'hello'), 'OK');
    assert.strictEqual(await redis.get('greeting'), 'hello');
  } finally {
    redis.disconnect();
  }
});

test('a script runs as on Redis', async () => {
  const redis = new Redis(url);
  try {
    const reply = await redis.eval("return redis.call('incrby', KEYS[1], ARGV[1])", 1, 'n', 5);
    assert.strictEqual(reply, 5);
  } finally {
    redis.disconnect();
  }
});
