// Interop checks of ioredis and redlock against one Redis-compatible target.
//
//   node test_interop.js --target ours --out results-ours.json redis://127.0.0.1:P1/ [P2 P3 urls]
//
// Every check asserts what the client must see; values whose exact form matters are recorded
// and written to --out so interop/compare.py can diff our server against real Redis. The first
// URL is the main target; the other two (optional) are independent masters for the quorum check.
"use strict";

const assert = require("node:assert/strict");
const fs = require("node:fs");
const { setTimeout: sleep } = require("node:timers/promises");
const Redis = require("ioredis");
const RedlockModule = require("redlock");
const Redlock = RedlockModule.default;
const { ExecutionError } = RedlockModule;

const WAIT = 5000; // upper bound of every wait for something that must happen (ms)

function parseArgs(argv) {
  const out = { urls: [], k: "" };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === "--target") out.target = argv[++i];
    else if (argv[i] === "--out") out.out = argv[++i];
    else if (argv[i] === "-k") out.k = argv[++i];
    else out.urls.push(argv[i]);
  }
  assert.ok(out.target && out.out && out.urls.length, "usage: --target T --out F url...");
  return out;
}

class Ctx {
  constructor(urls) {
    this.urls = urls;
    this.obs = {};
    this.test = "";
    this.clients = [];
  }
  client(opts = {}, url = this.urls[0]) {
    const c = new Redis(url, { maxRetriesPerRequest: 1, lazyConnect: false, ...opts });
    this.clients.push(c);
    return c;
  }
  record(name, value) {
    this.obs[`${this.test}.${name}`] = normalise(value);
  }
  async close() {
    for (const c of this.clients) c.disconnect();
    this.clients = [];
  }
}

function normalise(v) {
  if (v instanceof Error) return { error: v.name, text: v.message };
  if (Buffer.isBuffer(v)) return { bytes: v.toString("latin1") };
  if (v instanceof Set) return { set: [...v].map(normalise).sort() };
  if (v instanceof Map) return { map: [...v.entries()].map(([k, x]) => [normalise(k), normalise(x)]) };
  if (Array.isArray(v)) return v.map(normalise);
  if (v && typeof v === "object") {
    const o = {};
    for (const k of Object.keys(v).sort()) o[k] = normalise(v[k]);
    return o;
  }
  if (typeof v === "number" && !Number.isInteger(v)) return { float: String(v) };
  return v === undefined ? null : v;
}

async function errorOf(promise) {
  try {
    await promise;
  } catch (e) {
    return e;
  }
  throw new assert.AssertionError({ message: "expected an error" });
}

async function waitUntil(pred, what) {
  const deadline = Date.now() + WAIT;
  while (Date.now() < deadline) {
    if (await pred()) return;
    await sleep(10);
  }
  throw new Error(`timed out waiting for ${what}`);
}

function collect(emitter, event, n, map) {
  return new Promise((resolve, reject) => {
    const got = [];
    const timer = setTimeout(() => reject(new Error(`got ${got.length} of ${n} '${event}': ${JSON.stringify(got)}`)), WAIT);
    const on = (...args) => {
      got.push(map(...args));
      if (got.length === n) {
        clearTimeout(timer);
        emitter.off(event, on);
        resolve(got);
      }
    };
    emitter.on(event, on);
  });
}

// ---------------------------------------------------------------- checks

async function checkCommands(ctx, protocol) {
  const r = ctx.client({ protocol, connectionName: `node-${protocol}` });
  assert.equal(await r.ping(), "PONG");
  assert.equal(await r.client("GETNAME"), `node-${protocol}`);
  ctx.record("set", [await r.set("s", "v"), await r.get("s"), await r.set("s", "w", "NX"), await r.set("s", "w", "GET")]);
  ctx.record("incr", [await r.incr("n"), await r.incrby("n", 5), await r.incrbyfloat("f", "1.5")]);
  ctx.record("mget", await r.mget("s", "missing", "n"));
  assert.equal(await r.set("t", "1", "PX", 60000), "OK");
  const ttl = await r.pttl("t");
  assert.ok(ttl > 59000 && ttl <= 60000, String(ttl));
  ctx.record("hash", [await r.hset("h", { a: "1", b: "2" }), await r.hgetall("h"), await r.hincrby("h", "a", 2),
    await r.hmget("h", "a", "zz"), await r.hdel("h", "b")]);
  ctx.record("list", [await r.rpush("l", "a", "b", "c"), await r.lrange("l", 0, -1), await r.lpop("l"), await r.llen("l")]);
  ctx.record("set_members", [await r.sadd("st", "b", "a"), (await r.smembers("st")).sort(), await r.sismember("st", "a")]);
  ctx.record("zset", [await r.zadd("z", 1, "a", 2.5, "b"), await r.zscore("z", "b"), await r.zrange("z", 0, -1, "WITHSCORES"),
    await r.zincrby("z", 1, "a")]);
  ctx.record("keys", [(await r.keys("*")).sort(), await r.type("h"), await r.exists("s", "nope"), await r.del("s", "missing")]);
  ctx.record("wrongtype", await errorOf(r.lpush("z", "x")));
  ctx.record("unknown", await errorOf(r.call("NOSUCHCMD", "a")));
  ctx.record("buffer", await r.getBuffer("missing"));
  await r.set(Buffer.from([0, 255, 13, 10]), Buffer.from([1, 2, 3]));
  ctx.record("binary", await r.getBuffer(Buffer.from([0, 255, 13, 10])));
  const info = await r.info("server");
  assert.match(info, /redis_version:7\./);
  const db3 = ctx.client({ protocol, db: 3 });
  ctx.record("select", [await db3.set("in3", "1"), await r.exists("in3"), await db3.dbsize()]);
}

async function t_commands_resp2(ctx) {
  await checkCommands(ctx, 2);
}

async function t_commands_resp3(ctx) {
  await checkCommands(ctx, 3);
}

async function t_auth_handshake(ctx) {
  const admin = ctx.client();
  await admin.config("SET", "requirepass", "s3cret");
  try {
    for (const protocol of [2, 3]) {
      // RESP3: HELLO 3 AUTH default s3cret; RESP2: AUTH s3cret. Then CLIENT SETINFO, SELECT.
      const r = ctx.client({ protocol, password: "s3cret", db: 2 });
      assert.equal(await r.ping(), "PONG");
      assert.equal(await r.set("k", "v"), "OK");
    }
  } finally {
    await admin.config("SET", "requirepass", "");
  }
}

async function t_pipeline_multi(ctx) {
  for (const protocol of [2, 3]) {
    const r = ctx.client({ protocol });
    await r.flushdb();
    const p = r.pipeline();
    for (let i = 0; i < 200; i++) p.set(`k${i}`, i);
    p.get("k7").incr("k7").hset("h", "f", 1).lpush("h", 1).get("k199");
    const res = await p.exec();
    assert.equal(res.length, 205);
    ctx.record(`tail_${protocol}`, res.slice(200));
    ctx.record(`multi_${protocol}`, await r.multi().set("a", 1).incr("a").lpush("a", 1).get("a").exec());
    const aborted = await errorOf(r.multi().set("b", 1).call("NOSUCHCMD").exec());
    ctx.record(`exec_abort_${protocol}`, [aborted.message, (aborted.previousErrors || []).map((e) => e.message)]);
    assert.equal(await r.exists("b"), 0);
    // WATCH: another client's write between WATCH and EXEC aborts the transaction (null reply).
    const other = ctx.client();
    await r.watch("w");
    await other.set("w", "x");
    ctx.record(`watch_${protocol}`, await r.multi().set("w", "mine").exec());
    assert.equal(await r.get("w"), "x");
  }
}

async function t_define_command(ctx) {
  for (const protocol of [2, 3]) {
    const r = ctx.client({ protocol });
    await r.script("FLUSH");
    r.defineCommand("incrEcho", {
      numberOfKeys: 1,
      lua: "return {KEYS[1], ARGV[1], redis.call('incrby', KEYS[1], ARGV[1]), 1.5, false}",
    });
    // First call: EVALSHA gets NOSCRIPT, ioredis falls back to EVAL (which caches the script).
    ctx.record(`first_${protocol}`, await r.incrEcho("cnt", 2));
    ctx.record(`cached_${protocol}`, await r.script("EXISTS", "0".repeat(40)));
    ctx.record(`second_${protocol}`, await r.incrEcho("cnt", 3));
    await r.script("FLUSH");
    ctx.record(`pipeline_${protocol}`, await r.pipeline().incrEcho("cnt", 1).get("cnt").exec());
    ctx.record(`error_${protocol}`, await errorOf(r.eval("return redis.error_reply('MY err')", 0)));
    ctx.record(`nosha_${protocol}`, await errorOf(r.evalsha("0".repeat(40), 0)));
  }
}

async function pubsub(ctx, protocol) {
  const sub = ctx.client({ protocol });
  const pub = ctx.client();
  const pmessages = collect(sub, "pmessage", 1, (p, c, m) => [p, c, m]);
  const messages = collect(sub, "message", 2, (c, m) => [c, m]);
  const buffers = collect(sub, "messageBuffer", 2, (c, m) => [c.toString(), m.toString("latin1")]);
  ctx.record("subscribe", await sub.subscribe("ch1", "ch2"));
  ctx.record("psubscribe", await sub.psubscribe("news.*"));
  ctx.record("numsub", [await pub.pubsub("NUMSUB", "ch1", "nope"), await pub.pubsub("NUMPAT")]);
  assert.equal(await pub.publish("ch1", "hello"), 1);
  assert.equal(await pub.publish("news.tech", "pattern"), 1);
  assert.equal(await pub.publish("ch2", Buffer.from([0, 255])), 1);
  ctx.record("messages", await messages);
  ctx.record("pmessages", await pmessages);
  ctx.record("buffers", await buffers);
  ctx.record("unsubscribe", [await sub.unsubscribe("ch1"), await sub.punsubscribe("news.*")]);
  assert.equal(await pub.publish("ch1", "gone"), 0);
  ctx.record("after", await pub.pubsub("NUMSUB", "ch1", "ch2"));
}

async function t_pubsub_resp2(ctx) {
  await pubsub(ctx, 2);
}

async function t_pubsub_resp3(ctx) {
  await pubsub(ctx, 3);
}

async function t_resubscribe_and_scan(ctx) {
  // ioredis reconnects and resubscribes after the server kills its subscriber connection.
  const sub = ctx.client({ retryStrategy: () => 20, connectionName: "node-sub" });
  const pub = ctx.client();
  await sub.subscribe("rs");
  await sub.psubscribe("rs.*");
  const clients = (await pub.client("LIST")).split("\n").filter((l) => l.includes("name=node-sub"));
  assert.equal(clients.length, 1, String(clients));
  const id = /id=(\d+)/.exec(clients[0])[1];
  ctx.record("kill", await pub.client("KILL", "ID", id));
  await waitUntil(async () => (await pub.pubsub("NUMSUB", "rs"))[1] === 1 && (await pub.pubsub("NUMPAT")) === 1, "resubscription");
  const got = collect(sub, "message", 1, (c, m) => [c, m]);
  assert.equal(await pub.publish("rs", "back"), 1);
  ctx.record("after_reconnect", await got);
  // scanStream walks the keyspace with SCAN cursors until 0.
  const r = ctx.client();
  const p = r.pipeline();
  for (let i = 0; i < 300; i++) p.set(`scan:${i}`, i);
  await p.exec();
  const keys = new Set();
  await new Promise((resolve, reject) => {
    const stream = r.scanStream({ match: "scan:*", count: 50 });
    stream.on("data", (batch) => batch.forEach((k) => keys.add(k)));
    stream.on("end", resolve);
    stream.on("error", reject);
  });
  ctx.record("scanned", keys.size);
}

async function t_redlock_single(ctx) {
  const r = ctx.client();
  const redlock = new Redlock([r], { retryCount: 0 });
  const lock = await redlock.acquire(["res"], 10000);
  ctx.record("value_len", (await r.get("res")).length);
  assert.equal(await r.get("res"), lock.value);
  let ttl = await r.pttl("res");
  assert.ok(ttl > 9000 && ttl <= 10000, String(ttl));
  const extended = await lock.extend(30000);
  ttl = await r.pttl("res");
  assert.ok(ttl > 29000 && ttl <= 30000, String(ttl));
  const busy = await errorOf(redlock.acquire(["res"], 10000));
  assert.ok(busy instanceof ExecutionError, String(busy));
  ctx.record("busy", [busy.message, busy.attempts.length]);
  // Contention: a retrying waiter gets the lock once the holder releases.
  const waiterLock = new Redlock([ctx.client()], { retryCount: 100, retryDelay: 20, retryJitter: 5 });
  const waiting = waiterLock.acquire(["res"], 10000);
  await sleep(150);
  await extended.release();
  const second = await waiting;
  assert.equal(await r.get("res"), second.value);
  await second.release();
  assert.equal(await r.exists("res"), 0);
  // Expiry: a holder that never releases; the waiter gets the lock after the lease.
  await redlock.acquire(["exp"], 300);
  const t0 = Date.now();
  const after = await waiterLock.acquire(["exp"], 5000);
  assert.ok(Date.now() - t0 > 100);
  await after.release();
  // Multi-resource lock: all keys or none.
  await r.set("m2", "someone");
  ctx.record("multi_resource_busy", (await errorOf(redlock.acquire(["m1", "m2"], 1000))).message);
  assert.equal(await r.exists("m1"), 0);
  // `using` extends the lease automatically while the routine runs.
  await redlock.using(["auto"], 600, { automaticExtensionThreshold: 400 }, async (signal) => {
    await sleep(900);
    assert.ok(!signal.aborted);
    assert.ok((await r.exists("auto")) === 1);
  });
  assert.equal(await r.exists("auto"), 0);
}

async function t_redlock_quorum(ctx) {
  if (ctx.urls.length < 3) throw new Skip("needs three targets");
  const masters = ctx.urls.slice(0, 3).map((u) => ctx.client({}, u));
  for (const m of masters.slice(1)) await m.flushall();
  const redlock = new Redlock(masters, { retryCount: 0 });
  // redlock settles once a quorum has answered; the last master may answer a moment later.
  const holders = (value) => Promise.all(masters.map((m) => m.get("q").then((v) => v === value)));
  const settled = async (value, expected, what) => {
    await waitUntil(async () => JSON.stringify(await holders(value)) === JSON.stringify(expected), what);
    return expected;
  };
  const lock = await redlock.acquire(["q"], 10000);
  ctx.record("held_on", await settled(lock.value, [true, true, true], "the lock on all three"));
  await lock.extend(20000);
  for (const m of masters) await waitUntil(async () => (await m.pttl("q")) > 19000, "the extension");
  await lock.release();
  await waitUntil(async () => (await Promise.all(masters.map((m) => m.exists("q")))).every((n) => n === 0), "release");
  // One master held by someone else: 2 of 3 is still a quorum.
  await masters[0].set("q", "someone", "PX", 10000);
  const minority = await redlock.acquire(["q"], 10000);
  ctx.record("with_one_busy", await settled(minority.value, [false, true, true], "the lock on two"));
  await minority.release();
  await waitUntil(async () => (await masters[2].exists("q")) === 0, "release");
  // Two masters held by someone else: no quorum, and the one it got is rolled back.
  await masters[1].set("q", "someone", "PX", 10000);
  const failed = await errorOf(redlock.acquire(["q"], 10000));
  assert.ok(failed instanceof ExecutionError);
  ctx.record("no_quorum", failed.message);
  await waitUntil(async () => (await masters[2].exists("q")) === 0, "the rollback");
}

class Skip extends Error {}

// ---------------------------------------------------------------- runner

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const ctx = new Ctx(args.urls);
  const tests = { t_commands_resp2, t_commands_resp3, t_auth_handshake, t_pipeline_multi, t_define_command,
    t_pubsub_resp2, t_pubsub_resp3, t_resubscribe_and_scan, t_redlock_single, t_redlock_quorum };
  let passed = 0;
  let failed = 0;
  const failures = [];
  for (const [name, fn] of Object.entries(tests)) {
    if (!name.includes(args.k)) continue;
    ctx.test = name.slice(2);
    const t0 = Date.now();
    try {
      const admin = ctx.client();
      await admin.flushall();
      await fn(ctx);
      passed++;
      console.log(`ok   node/${args.target} ${ctx.test} (${((Date.now() - t0) / 1000).toFixed(2)}s)`);
    } catch (e) {
      if (e instanceof Skip) {
        console.log(`skip node/${args.target} ${ctx.test}: ${e.message}`);
      } else {
        failed++;
        failures.push(ctx.test);
        console.log(`FAIL node/${args.target} ${ctx.test}: ${e.stack}`);
      }
    } finally {
      await ctx.close();
    }
  }
  const versions = {};
  for (const pkg of ["ioredis", "redlock"]) {
    const manifest = `${__dirname}/node_modules/${pkg}/package.json`;
    versions[pkg] = JSON.parse(fs.readFileSync(manifest, "utf8")).version;
  }
  fs.writeFileSync(args.out, JSON.stringify({ suite: `node/${args.target}`, passed, failed, failures, versions, obs: ctx.obs }, null, 1));
  return failed ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (e) => {
    console.error(e);
    process.exit(2);
  },
);
