// node redlock (with ioredis) on three independent masters started by `locksmith-harness
// --masters 3 --observe 'lock:*'`: a master restarted without its data loses A's key and a
// second client B gets a quorum; `LOCKSMITH.CHECK` reports exactly that double grant, and an
// empty array when nothing failed. The harness comes from $LOCKSMITH_HARNESS_BIN (default:
// `locksmith-harness` on the PATH). Run: node --test redlock.test.js
'use strict';
const { test } = require('node:test');
const assert = require('node:assert');
const { spawn } = require('node:child_process');
const readline = require('node:readline');
const Redis = require('ioredis');
const RedlockModule = require('redlock');
const Redlock = RedlockModule.default;
const { ExecutionError } = RedlockModule;

const LEASE_MS = 30000;

// Starts the harness; resolves to { proc, nodes: [url of n0, n1, n2] } once it is ready. Its
// stdout says `node n0 127.0.0.1:PORT Master` for each node, then `ready HOST:PORT`.
async function harness(...extra) {
  const bin = process.env.LOCKSMITH_HARNESS_BIN || 'locksmith-harness';
  const args = ['--port', '0', '--loglevel', 'warning', '--masters', '3', '--observe', 'lock:*', ...extra];
  const proc = spawn(bin, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  const lines = readline.createInterface({ input: proc.stdout });
  const nodes = [];
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('locksmith-harness did not start within 20 s')), 20000);
    proc.once('exit', (code) => { clearTimeout(timer); reject(new Error(`locksmith-harness exited (${code})`)); });
    lines.on('line', (line) => {
      const node = line.match(/^node n\d+ (\S+) /);
      if (node) nodes.push(`redis://${node[1]}/`);
      if (line.startsWith('ready ')) { clearTimeout(timer); resolve(); }
    });
  });
  return { proc, nodes };
}

// Stops the harness and waits for it to exit (it writes --timeline-file on the way out).
function stop(proc) {
  return new Promise((resolve) => {
    proc.once('exit', resolve);
    proc.kill('SIGTERM');
  });
}

// A client of one master. `enableOfflineQueue: false`: a command to a master that is down fails
// at once (a vote against) instead of waiting for it to come back.
function client(url) {
  const c = new Redis(url, { enableOfflineQueue: false, maxRetriesPerRequest: 0 });
  c.on('error', () => {});
  return c;
}

async function ready(c) {
  if (c.status !== 'ready') await new Promise((resolve) => c.once('ready', resolve));
  return c;
}

// LOCKSMITH.CHECK's violations, each a { field: value } object (nested arrays joined by `|`).
async function check(admin) {
  const reply = await admin.call('LOCKSMITH.CHECK');
  return reply.map((record) => {
    const out = {};
    for (let i = 0; i < record.length; i += 2) {
      const v = record[i + 1];
      out[record[i]] = Array.isArray(v) ? v.join('|') : v;
    }
    return out;
  });
}

// The masters whose `key` holds `value`.
async function holders(clients, key, value) {
  const got = await Promise.all(clients.map((c) => c.get(key).catch(() => null)));
  return got.map((v, i) => (v === value ? i : -1)).filter((i) => i >= 0);
}

// redlock settles once a quorum has answered: wait (bounded) until `expected` masters hold it.
async function settled(clients, key, value, expected) {
  for (let i = 0; i < 100; i++) {
    const now = await holders(clients, key, value);
    if (JSON.stringify(now) === JSON.stringify(expected)) return now;
    await new Promise((r) => setTimeout(r, 20));
  }
  return holders(clients, key, value);
}

test('a master restarted without its data lets a second client get a quorum', async () => {
  const timeline = process.env.REDLOCK_TIMELINE_FILE;
  const { proc, nodes } = await harness(...(timeline ? ['--timeline-file', timeline] : []));
  const a = nodes.map(client);
  const b = [];
  const admin = await ready(client(nodes[0]));
  try {
    // n2 is down while A locks: A gets n0 and n1, two of three, a quorum.
    await admin.call('LOCKSMITH.KILL', 'n2');
    await Promise.all([ready(a[0]), ready(a[1])]);
    const redlockA = new Redlock(a, { retryCount: 0 });
    const lockA = await redlockA.acquire(['lock:orders'], LEASE_MS);
    assert.deepStrictEqual(await settled(a.slice(0, 2), 'lock:orders', lockA.value, [0, 1]), [0, 1]);
    await admin.call('LOCKSMITH.MARK', 'A holds lock:orders');
    // n2 comes back (empty: it was down); n1 restarts without saving, losing A's key.
    await admin.call('LOCKSMITH.RESTART', 'n2');
    await admin.call('LOCKSMITH.RESTART', 'n1');

    for (const url of nodes) b.push(await ready(client(url)));
    const redlockB = new Redlock(b, { retryCount: 0 });
    const lockB = await redlockB.acquire(['lock:orders'], LEASE_MS);
    assert.deepStrictEqual(await settled(b, 'lock:orders', lockB.value, [1, 2]), [1, 2]);
    await admin.call('LOCKSMITH.MARK', 'B holds lock:orders too');

    const violations = await check(admin);
    assert.strictEqual(violations.length, 1, JSON.stringify(violations));
    const v = violations[0];
    assert.strictEqual(v.kind, 'double-grant');
    assert.strictEqual(v.key, 'lock:orders');
    assert.strictEqual(v['first-owner'], lockA.value);
    assert.strictEqual(v['second-owner'], lockB.value);
    assert.match(v.faults, /restart n1/);
  } finally {
    for (const c of [...a, ...b, admin]) c.disconnect();
    await stop(proc);
  }
});

test('without the restart the second client gets no quorum and nothing is reported', async () => {
  const { proc, nodes } = await harness();
  const a = await Promise.all(nodes.map((url) => ready(client(url))));
  const b = await Promise.all(nodes.map((url) => ready(client(url))));
  try {
    const lockA = await new Redlock(a, { retryCount: 0 }).acquire(['lock:orders'], LEASE_MS);
    assert.deepStrictEqual(await settled(a, 'lock:orders', lockA.value, [0, 1, 2]), [0, 1, 2]);
    await assert.rejects(new Redlock(b, { retryCount: 0 }).acquire(['lock:orders'], LEASE_MS), ExecutionError);
    await lockA.release();
    assert.deepStrictEqual(await check(a[0]), []);
  } finally {
    for (const c of [...a, ...b]) c.disconnect();
    await stop(proc);
  }
});
