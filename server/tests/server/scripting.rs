//! Lua scripting compared with real Redis 7: conversions (one row per rule), the sandbox, the
//! `redis` API and libraries, EVAL/EVALSHA/SCRIPT errors, Redisson's lock scripts from the
//! seeds in realistic sequences, MONITOR's `[0 lua]` lines, BUSY and SCRIPT KILL, and EVALSHA
//! with NOSCRIPT fallback through the `redis` crate's `Script`.

use locksmith_testkit as support;

use std::time::Duration;
use support::{patient_conn, Pair};

/// Whether our server has PUBLISH yet (the pub/sub family lands separately): the Redisson
/// release scripts publish, so their comparisons wait for it.
async fn has_publish(pair: &mut Pair) -> bool {
    let reply = support::run(
        &mut pair.ours_con,
        &["EVAL", "return redis.call('publish', 'probe', 'x')", "0"],
    )
    .await;
    if reply.contains("Unknown Redis command") {
        eprintln!("PUBLISH not available yet: skipping the Redisson release comparisons");
        return false;
    }
    true
}

/// Runs `EVAL script 0` on both servers and asserts the same reply.
async fn eval0(pair: &mut Pair, script: &str) -> String {
    pair.same(&["EVAL", script, "0"]).await
}

#[tokio::test]
async fn conversions_match_redis_one_row_per_rule() {
    let mut pair = Pair::start().await;
    pair.same(&["SET", "str", "v"]).await;
    let rows: &[(&str, &str)] = &[
        ("lua number -> integer, truncated", "return 3.99"),
        ("negative number truncates toward zero", "return -3.99"),
        ("huge number -> LLONG_MIN", "return 2^63"),
        ("inf -> LLONG_MIN", "return 1/0"),
        ("nan -> LLONG_MIN", "return 0/0"),
        ("string -> bulk", "return 'hello'"),
        ("true -> 1", "return true"),
        ("false -> nil", "return false"),
        ("nil -> nil", "return nil"),
        ("table -> array", "return {1, 'a', {2, 'b'}}"),
        ("array stops at the first nil", "return {1, 2, nil, 3}"),
        ("{ok=...} -> status", "return {ok='fine'}"),
        ("status newlines become spaces", "return {ok='a\\r\\nb'}"),
        ("{err=...} -> error", "return {err='MYERR custom'}"),
        ("err must be a string", "return {err=5}"),
        (
            "mixed array",
            "return {1,'a',true,false,3.9,-3.9,{ok='x'},{err='y'}}",
        ),
        (
            "integer reply -> number",
            "return type(redis.call('strlen', 'str'))",
        ),
        ("bulk reply -> string", "return redis.call('get', 'str')"),
        (
            "nil bulk -> false",
            "return type(redis.call('get', 'nokey'))",
        ),
        (
            "status reply -> {ok=}",
            "return redis.call('set', 'k2', 'v').ok",
        ),
        ("status reply returned as is", "return redis.call('ping')"),
        (
            "error reply -> {err=} via pcall",
            "return redis.pcall('hget', 'str', 'f').err",
        ),
        (
            "error reply returned from pcall",
            "return redis.pcall('hget', 'str', 'f')",
        ),
        (
            "array reply -> table",
            "return redis.call('mget', 'str', 'nokey', 'str')",
        ),
        (
            "nil inside array -> false",
            "return type(redis.call('mget', 'nokey')[1])",
        ),
        (
            "resp3 nil bulk -> nil",
            "redis.setresp(3) return type(redis.call('get', 'nokey'))",
        ),
        (
            "resp3 true -> #t (1 for RESP2 clients)",
            "redis.setresp(3) return true",
        ),
        (
            "resp3 false -> #f (0 for RESP2 clients)",
            "redis.setresp(3) return false",
        ),
        ("{double=} -> double", "return {double=3.5}"),
        ("{map=} -> map", "return {map={a=1}}"),
        ("{set=} -> set", "return {set={a=true}}"),
        (
            "{big_number=} -> big number",
            "return {big_number='12345678901234567890'}",
        ),
        (
            "lua args: numbers as %.17g",
            "return redis.call('set', 'fk', 0.1) and redis.call('get', 'fk')",
        ),
        (
            "lua args: integers",
            "return redis.call('set', 'ik', 42) and redis.call('get', 'ik')",
        ),
    ];
    for (rule, script) in rows {
        let reply = eval0(&mut pair, script).await;
        eprintln!("{rule}: {reply}");
    }
}

#[tokio::test]
async fn sandbox_escapes_fail_with_redis_errors() {
    let mut pair = Pair::start().await;
    for script in [
        "return x",
        "x = 5",
        "_G.x = 1",
        "rawset(_G, 'x', 1)",
        "setmetatable(_G, nil)",
        "redis.call = 1",
        "string.x = 1",
        "cjson.x = 1",
        "local t = getmetatable('') t.__index = nil",
        "loadstring('x=1')()",
        "return os.execute('ls')",
        "return io.open('/etc/passwd')",
        "return loadfile('/etc/passwd')",
        "return dofile('/etc/passwd')",
        "return require('os')",
        "return module('x')",
        "return setfenv(1, {})",
        "return getfenv(1)",
        "return print('x')",
        "return debug.getinfo(1)",
        "return newproxy()",
        "return package.loaded",
        "local f, e = loadstring(string.dump(function() return 1 end)) return {tostring(f), tostring(e)}",
        "return type(getmetatable(''))",
        "return tostring(getmetatable(_G) ~= nil)",
        "return loadstring('return 7')()",
        "return load('return 8')()",
        // Library functions write with lua_rawseti/lua_rawset, past any __newindex: the
        // tables themselves are read-only, so nothing leaks into the next script.
        "table.insert(string, 'x') return 1",
        "return string[1]",
        "table.insert(redis, 'x') return #redis",
        "rawset(cjson, 'x', 1) return cjson.x",
        "table.sort(math) return 1",
        "setmetatable(string, {}) return 1",
        "return type(getmetatable(string))",
        "return type(getmetatable(getmetatable('')))",
        "local n = 0 for _ in pairs(_G) do n = n + 1 end return n",
        "return #_G",
    ] {
        eval0(&mut pair, script).await;
    }
}

#[tokio::test]
async fn redis_api_matches_redis() {
    let mut pair = Pair::start().await;
    for script in [
        "return redis.sha1hex('')",
        "return redis.sha1hex(1)",
        "return redis.sha1hex()",
        "return redis.REDIS_VERSION",
        "return redis.REDIS_VERSION_NUM",
        "return {redis.LOG_DEBUG, redis.LOG_VERBOSE, redis.LOG_NOTICE, redis.LOG_WARNING}",
        "return {redis.REPL_NONE, redis.REPL_AOF, redis.REPL_SLAVE, redis.REPL_REPLICA, redis.REPL_ALL}",
        "return redis.replicate_commands()",
        "return redis.set_repl(redis.REPL_ALL)",
        "return redis.set_repl(9)",
        "return redis.set_repl()",
        "return redis.setresp(4)",
        "return redis.setresp()",
        "return redis.log(redis.LOG_WARNING, 'hello from a script', 3)",
        "return redis.log(99, 'x')",
        "return redis.log(1)",
        "return redis.breakpoint()",
        "return redis.debug('x')",
        "return redis.error_reply('My Error')",
        "return redis.error_reply('-My Error')",
        "return redis.error_reply()",
        "return redis.status_reply('fine')",
        "return redis.status_reply()",
        "return redis.acl_check_cmd('get', 'x')",
        "return redis.acl_check_cmd('nosuch')",
        "local r = {} for k in pairs(redis) do r[#r + 1] = k end table.sort(r) return r",
        "return {math.random(), math.random(10), math.random(5, 8)}",
        "return tostring(math.random())",
        "return math.random(0)",
        "math.randomseed(7) return math.random(1000)",
        "return redis.call('nosuch')",
        "return redis.call()",
        "return redis.call('get')",
        "return redis.call('get', {})",
        "return redis.call('quit')",
        "return cjson.encode(redis.pcall('nosuch'))",
        "return cjson.encode(redis.pcall())",
        "error('boom')",
        "error({err='CUSTOM table error'})",
        // Redis 7.0's global pcall turns an error table with a string `err` into that string;
        // xpcall and coroutine.resume hand over the table itself.
        "local ok, e = pcall(redis.call, 'nosuch') return {tostring(ok), type(e), e}",
        "local ok, e = pcall(redis.call, 'set', 'k', {}) return {type(e), e}",
        "local ok, e = pcall(function() error({err='x'}) end) return {type(e), e}",
        "local ok, e = pcall(function() error({err=7}) end) return {type(e), e}",
        "local ok, e = pcall(function() error({nothing=1}) end) return type(e)",
        "local ok, e = pcall(function() error('plain') end) return e",
        "local ok, e = pcall(error) return {tostring(ok), type(e)}",
        "return {pcall(function() return 1, 2 end)}",
        "local ok, e = xpcall(function() return redis.call('nosuch') end, function(m) return m end) return type(e)",
        "local co = coroutine.create(function() return redis.call('nosuch') end) local ok, e = coroutine.resume(co) return type(e)",
        "return 1 +",
        "local a = nil\nreturn a.b",
    ] {
        eval0(&mut pair, script).await;
    }
}

#[tokio::test]
async fn bundled_libraries_match_redis() {
    let mut pair = Pair::start().await;
    for script in [
        "return cjson.encode({1, 2, 'a/b', {x = 1.5}, cjson.null, 1e20, 123456789012345})",
        "return cjson.encode({})",
        "return cjson.encode('\\1\\127\\200\"\\\\')",
        "return cjson.encode({a = {b = {c = 'd'}}})",
        "return cjson.encode({[1] = 1, [100] = 2})",
        "return cjson.encode({[true] = 1})",
        "return cjson.encode(function() end)",
        "return cjson.encode(0/0)",
        "return cjson.encode()",
        "return cjson.decode('{\"a\":[1,2,{\"b\":null}]}').a[2]",
        "return cjson.encode(cjson.decode('{\"a\":[1,2.5,\"x\\\\u00e9\\\\n\",true,false,null]}'))",
        "return cjson.decode('[1,2')",
        "return cjson.decode('{1:2}')",
        "return cjson.decode('')",
        "return cjson.decode('[1] x')",
        "return cjson.decode('{\"a\" 1}')",
        "return cjson.decode('\"\\\\q\"')",
        "return bit.tohex(65535, -4)",
        "return bit.tohex(-1)",
        "return {bit.band(0xff, 0x0f), bit.bor(1, 2, 4), bit.bxor(3, 1), bit.lshift(1, 31), bit.rshift(-1, 28), bit.arshift(-16, 2), bit.rol(1, 33), bit.ror(1, 1), bit.bswap(0x12345678), bit.tobit(2^32 + 5), bit.bnot(0)}",
        "return bit.band()",
        "return struct.pack('>HiBc3', 258, -2, 7, 'abc')",
        "return {struct.unpack('>HiB', struct.pack('>HiB', 258, -2, 7))}",
        "return {struct.unpack('<d', struct.pack('<d', 1.25))}",
        "return struct.size('>!4bih')",
        "return struct.pack('q', 1)",
        "return {struct.unpack('s', 'ab')}",
        "return {struct.unpack('bc0', struct.pack('bc0', 3, 'xyz'))}",
        "return cmsgpack.pack({1, 2, 3}, 'x', {a = 1}, 1.5, -100, 70000, true)",
        "return {cmsgpack.unpack(cmsgpack.pack({1, 2, {k = 'v'}}, 'x', -5, 3.25))}",
        "return cmsgpack.unpack('\\193')",
        "return cmsgpack.unpack('\\205\\1')",
        "return cmsgpack.pack()",
        "local t = {} for i = 1, 20 do t[i] = i end return cmsgpack.pack(t)",
        "return cmsgpack.pack(string.rep('x', 40), 2^40, -2^40, 0.1)",
        // The configuration functions; their settings last across scripts, so each row
        // restores what it changed.
        "return {cjson.encode_keep_buffer(), cjson.encode_keep_buffer(false), cjson.encode_keep_buffer('on')}",
        "return cjson.encode_keep_buffer('bad')",
        "return cjson.encode_keep_buffer(1)",
        "return cjson.encode_keep_buffer(1, 2)",
        "return {cjson.encode_max_depth(), cjson.encode_max_depth(0)}",
        "return cjson.encode_max_depth('x')",
        "cjson.encode_max_depth(1) local ok, e = pcall(cjson.encode, {a = {1}}) cjson.encode_max_depth(1000) return e",
        "local r = {cjson.encode_invalid_numbers('null'), cjson.encode({1/0, 0/0, -1/0})} cjson.encode_invalid_numbers(false) return r",
        "local r = {cjson.encode_invalid_numbers(true), cjson.encode({1/0, 0/0, -1/0})} cjson.encode_invalid_numbers(false) return r",
        "local r = {cjson.encode_number_precision(3), cjson.encode({3.14159, 1234567})} cjson.encode_number_precision(14) return r",
        "local r = {cjson.encode_sparse_array(true), cjson.encode({[1] = 1, [20] = 2})} cjson.encode_sparse_array(false) return r",
        "local r = {cjson.encode_sparse_array(false, 0), cjson.encode({[1] = 1, [20] = 2})} cjson.encode_sparse_array(false, 2, 10) return r",
        "cjson.decode_invalid_numbers(false) local r = {pcall(cjson.decode, '[0x10]'), pcall(cjson.decode, '[nan]'), pcall(cjson.decode, '[01]')} cjson.decode_invalid_numbers(true) return r",
        "return cjson.decode('[0x10, 01]')",
        "cjson.decode_max_depth(1) local ok, e = pcall(cjson.decode, '[[1]]') cjson.decode_max_depth(1000) return e",
    ] {
        eval0(&mut pair, script).await;
    }
}

#[tokio::test]
async fn eval_evalsha_and_script_commands_match_redis() {
    let mut pair = Pair::start().await;
    pair.all_same(&[
        &[
            "EVAL",
            "return {KEYS[1], KEYS[2], ARGV[1]}",
            "2",
            "a",
            "b",
            "c",
        ],
        &["EVAL", "return 1", "-1"],
        &["EVAL", "return 1", "2", "a"],
        &["EVAL", "return 1", "x"],
        &["EVAL", "return 1"],
        &["EVALSHA", "abc", "0"],
        &["EVALSHA", "ffffffffffffffffffffffffffffffffffffffff", "0"],
        &["SCRIPT", "LOAD", "return 'loaded'"],
        &["EVALSHA", "3f9e7e1e4e5b40e7e8b0a85e1d3a9d0b8f2c8e11", "0"],
        &[
            "SCRIPT",
            "EXISTS",
            "ffffffffffffffffffffffffffffffffffffffff",
        ],
        &["SCRIPT", "LOAD", "return 1 +"],
        &["SCRIPT", "FLUSH", "BAD"],
        &["SCRIPT", "NOPE"],
        &["SCRIPT", "HELP"],
        &["SCRIPT", "KILL"],
        &["EVAL_RO", "return redis.call('set', 'k', 1)", "0"],
        &["EVAL_RO", "return redis.call('get', 'k')", "0"],
        &[
            "EVAL",
            "#!lua flags=no-writes\nreturn redis.call('set', 'k', 1)",
            "0",
        ],
        &["EVAL_RO", "#!lua\nreturn 1", "0"],
        &["EVAL_RO", "#!lua flags=no-writes\nreturn 1", "0"],
        &["EVAL", "#!lua flags=bad\nreturn 1", "0"],
        &["EVAL", "#!py\nreturn 1", "0"],
        &["EVAL", "#!lua x=1\nreturn 1", "0"],
        &["EVAL", "#!lua", "0"],
        &["EVAL", "#!lua\n\nerror('line three')", "0"],
        &[
            "EVAL",
            "return redis.call('select', '1') and redis.call('set', 'in1', 'x')",
            "0",
        ],
        &["EXISTS", "in1"],
        &["SELECT", "1"],
        &["GET", "in1"],
        &["SELECT", "0"],
    ])
    .await;
    pair.same(&["SCRIPT", "LOAD", "return ARGV[1]"]).await;
    let upper = sha1_of("return ARGV[1]").to_ascii_uppercase();
    pair.same(&["EVALSHA", &upper, "0", "x"]).await;
    pair.same(&["SCRIPT", "EXISTS", &sha1_of("return ARGV[1]"), "nope"])
        .await;
    pair.same(&["SCRIPT", "FLUSH"]).await;
    pair.same(&["SCRIPT", "FLUSH", "ASYNC"]).await;
}

const ACQUIRE: &str = "if (redis.call('exists', KEYS[1]) == 0) then redis.call('hincrby', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then redis.call('hincrby', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; return redis.call('pttl', KEYS[1]);";
const ACQUIRE_HSET: &str = "if (redis.call('exists', KEYS[1]) == 0) then redis.call('hset', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then redis.call('hincrby', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; return redis.call('pttl', KEYS[1]);";
const RELEASE: &str = "if (redis.call('exists', KEYS[1]) == 0) then redis.call('publish', KEYS[2], ARGV[1]); return 1; end;if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then return nil;end; local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1); if (counter > 0) then redis.call('pexpire', KEYS[1], ARGV[2]); return 0; else redis.call('del', KEYS[1]); redis.call('publish', KEYS[2], ARGV[1]); return 1; end; return nil;";
const RENEW: &str = "if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then redis.call('pexpire', KEYS[1], ARGV[1]); return 1; end; return 0;";
const READ_LOCK: &str = "local mode = redis.call('hget', KEYS[1], 'mode'); if (mode == false) then redis.call('hset', KEYS[1], 'mode', 'read'); redis.call('hset', KEYS[1], ARGV[2], 1); redis.call('set', KEYS[2] .. ':1', 1); redis.call('pexpire', KEYS[2] .. ':1', ARGV[1]); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; if (mode == 'read') or (mode == 'write' and redis.call('hexists', KEYS[1], ARGV[3]) == 1) then local ind = redis.call('hincrby', KEYS[1], ARGV[2], 1); local key = KEYS[2] .. ':' .. ind;redis.call('set', key, 1); redis.call('pexpire', key, ARGV[1]); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end;return redis.call('pttl', KEYS[1]);";
const READ_UNLOCK: &str = "local mode = redis.call('hget', KEYS[1], 'mode'); if (mode == false) then redis.call('publish', KEYS[2], ARGV[1]); return 1; end; local lockExists = redis.call('hexists', KEYS[1], ARGV[2]); if (lockExists == 0) then return nil;end; local counter = redis.call('hincrby', KEYS[1], ARGV[2], -1); if (counter == 0) then redis.call('hdel', KEYS[1], ARGV[2]); end;redis.call('del', KEYS[3] .. ':' .. (counter+1)); if (redis.call('hlen', KEYS[1]) > 1) then local maxRemainTime = -3; local keys = redis.call('hkeys', KEYS[1]); for n, key in ipairs(keys) do counter = tonumber(redis.call('hget', KEYS[1], key)); if type(counter) == 'number' then for i=counter, 1, -1 do local remainTime = redis.call('pttl', KEYS[4] .. ':' .. key .. ':rwlock_timeout:' .. i); maxRemainTime = math.max(remainTime, maxRemainTime);end; end; end; if maxRemainTime > 0 then redis.call('pexpire', KEYS[1], maxRemainTime); return 0; end;if mode == 'write' then return 0;end; end; redis.call('del', KEYS[1]); redis.call('publish', KEYS[2], ARGV[1]); return 1; ";
const WRITE_LOCK: &str = "local mode = redis.call('hget', KEYS[1], 'mode'); if (mode == false) then redis.call('hset', KEYS[1], 'mode', 'write'); redis.call('hset', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; if (mode == 'write') then if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then redis.call('hincrby', KEYS[1], ARGV[2], 1); local currentExpire = redis.call('pttl', KEYS[1]); redis.call('pexpire', KEYS[1], currentExpire + ARGV[1]); return nil; end; end;return redis.call('pttl', KEYS[1]);";
const WRITE_UNLOCK: &str = "local mode = redis.call('hget', KEYS[1], 'mode'); if (mode == false) then redis.call('publish', KEYS[2], ARGV[1]); return 1; end;if (mode == 'write') then local lockExists = redis.call('hexists', KEYS[1], ARGV[3]); if (lockExists == 0) then return nil; else local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1); if (counter > 0) then redis.call('pexpire', KEYS[1], ARGV[2]); return 0; else redis.call('hdel', KEYS[1], ARGV[3]); if (redis.call('hlen', KEYS[1]) == 1) then redis.call('del', KEYS[1]); redis.call('publish', KEYS[2], ARGV[1]); else redis.call('hset', KEYS[1], 'mode', 'read'); end; return 1; end; end; end; return nil;";
const CAS_DELETE: &str = "if redis.call(\"get\", KEYS[1]) == ARGV[1] then\n    return redis.call(\"del\",KEYS[1])\nelse\n    return 0\nend";

const OWNER_A: &str = "58c62432-bb74-4d14-8a00-9908cc8b828f:1";
const OWNER_B: &str = "58c62432-bb74-4d14-8a00-9908cc8b828f:26";
const LOCK: &str = "my_first_lock_name";
const CHANNEL: &str = "redisson_lock__channel:{my_first_lock_name}";

#[tokio::test]
async fn redisson_reentrant_lock_scripts_match_redis() {
    let mut pair = Pair::start().await;
    if !has_publish(&mut pair).await {
        return;
    }
    let acq = |owner: &'static str| ["EVAL", ACQUIRE, "1", LOCK, "30000", owner];
    let acq_hset = |owner: &'static str| ["EVAL", ACQUIRE_HSET, "1", LOCK, "600000", owner];
    let rel = |owner: &'static str| ["EVAL", RELEASE, "2", LOCK, CHANNEL, "0", "30000", owner];
    // First acquire, re-entry, contention (replies the PTTL), renew, partial and final release.
    pair.same(&acq_hset(OWNER_A)).await;
    pair.same(&["HGETALL", LOCK]).await;
    pair.close(&["PTTL", LOCK], 100).await;
    pair.same(&acq(OWNER_A)).await;
    pair.same(&["HGET", LOCK, OWNER_A]).await;
    pair.close(&["PTTL", LOCK], 100).await;
    let ours: i64 = support::cmd(&acq(OWNER_B))
        .query_async(&mut pair.ours_con)
        .await
        .unwrap();
    if let Some(real) = &mut pair.real_con {
        let theirs: i64 = support::cmd(&acq(OWNER_B)).query_async(real).await.unwrap();
        assert!(
            (ours - theirs).abs() <= 100,
            "contention PTTL {ours} vs {theirs}"
        );
    }
    assert!(ours > 29_000 && ours <= 30_000);
    pair.same(&["EVAL", RENEW, "1", LOCK, "30000", OWNER_A])
        .await;
    pair.same(&["EVAL", RENEW, "1", LOCK, "30000", OWNER_B])
        .await;
    pair.same(&rel(OWNER_B)).await;
    pair.same(&rel(OWNER_A)).await;
    pair.same(&["HGETALL", LOCK]).await;
    pair.close(&["PTTL", LOCK], 100).await;
    pair.same(&rel(OWNER_A)).await;
    pair.same(&["EXISTS", LOCK]).await;
    pair.same(&rel(OWNER_A)).await;
    // The script is cached: EVALSHA of its SHA runs it.
    let sha = pair.same(&["SCRIPT", "LOAD", ACQUIRE]).await;
    assert!(sha.contains(&sha1_of(ACQUIRE)));
    pair.same(&["EVALSHA", &sha1_of(ACQUIRE), "1", LOCK, "30000", OWNER_B])
        .await;
    pair.same(&["HGETALL", LOCK]).await;
}

#[tokio::test]
async fn redisson_read_write_lock_scripts_match_redis() {
    let mut pair = Pair::start().await;
    if !has_publish(&mut pair).await {
        return;
    }
    let name = "rw";
    let timeout_prefix = "{rw}:58c62432-bb74-4d14-8a00-9908cc8b828f:1:rwlock_timeout";
    let key_prefix = "{rw}";
    let ch = "redisson_rwlock:{rw}";
    let write_owner = "58c62432-bb74-4d14-8a00-9908cc8b828f:1:write";
    let read = [
        "EVAL",
        READ_LOCK,
        "2",
        name,
        timeout_prefix,
        "30000",
        OWNER_A,
        write_owner,
    ];
    pair.same(&read).await;
    pair.same(&read).await;
    pair.same(&["HGETALL", name]).await;
    pair.same(&["GET", &format!("{timeout_prefix}:2")]).await;
    pair.close(&["PTTL", &format!("{timeout_prefix}:1")], 100)
        .await;
    let write_b = ["EVAL", WRITE_LOCK, "1", name, "30000", "other:write"];
    let pttl_ours: i64 = support::cmd(&write_b)
        .query_async(&mut pair.ours_con)
        .await
        .unwrap();
    assert!(pttl_ours > 29_000);
    if let Some(real) = &mut pair.real_con {
        let _: i64 = support::cmd(&write_b).query_async(real).await.unwrap();
    }
    let read_unlock = [
        "EVAL",
        READ_UNLOCK,
        "4",
        name,
        ch,
        timeout_prefix,
        key_prefix,
        "0",
        OWNER_A,
    ];
    pair.same(&read_unlock).await;
    pair.same(&["HGETALL", name]).await;
    pair.close(&["PTTL", name], 100).await;
    pair.same(&read_unlock).await;
    pair.same(&["EXISTS", name]).await;
    pair.same(&read_unlock).await;
    // Write lock: acquire, re-enter (PTTL + lease), unlock twice.
    let write = ["EVAL", WRITE_LOCK, "1", name, "30000", write_owner];
    pair.same(&write).await;
    pair.same(&write).await;
    pair.same(&["HGETALL", name]).await;
    pair.close(&["PTTL", name], 200).await;
    let write_unlock = [
        "EVAL",
        WRITE_UNLOCK,
        "2",
        name,
        ch,
        "0",
        "30000",
        write_owner,
    ];
    pair.same(&write_unlock).await;
    pair.same(&["HGETALL", name]).await;
    pair.same(&write_unlock).await;
    pair.same(&["EXISTS", name]).await;
    pair.same(&write_unlock).await;
}

#[tokio::test]
async fn set_nx_compare_and_delete_matches_redis() {
    let mut pair = Pair::start().await;
    pair.all_same(&[
        &["SET", "lock", "token-1", "NX", "PX", "30000"],
        &["SET", "lock", "token-2", "NX", "PX", "30000"],
        &["EVAL", CAS_DELETE, "1", "lock", "token-2"],
        &["GET", "lock"],
        &["EVAL", CAS_DELETE, "1", "lock", "token-1"],
        &["EXISTS", "lock"],
        &["EVAL", CAS_DELETE, "1", "lock", "token-1"],
    ])
    .await;
}

fn sha1_of(s: &str) -> String {
    use sha1::{Digest, Sha1};
    hex::encode(Sha1::digest(s.as_bytes()))
}

#[tokio::test]
async fn release_publish_reaches_a_subscriber_after_the_script() {
    let server = support::start().await;
    let mut probe = support::conn(&server.url()).await;
    if support::run(&mut probe, &["SUBSCRIBE"])
        .await
        .contains("unknown command")
    {
        eprintln!("SUBSCRIBE not available yet: skipping");
        return;
    }
    let client = support::client(&server.url());
    let mut sub = client.get_async_pubsub().await.unwrap();
    sub.subscribe(CHANNEL).await.unwrap();
    let mut con = support::conn(&server.url()).await;
    let _: () = support::cmd(&["EVAL", ACQUIRE, "1", LOCK, "30000", OWNER_A])
        .query_async(&mut con)
        .await
        .unwrap();
    let released: i64 = support::cmd(&["EVAL", RELEASE, "2", LOCK, CHANNEL, "0", "30000", OWNER_A])
        .query_async(&mut con)
        .await
        .unwrap();
    assert_eq!(released, 1);
    use futures::StreamExt;
    let msg = tokio::time::timeout(Duration::from_secs(5), sub.on_message().next())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(msg.get_channel_name(), CHANNEL);
    assert_eq!(msg.get_payload::<String>().unwrap(), "0");
}

#[tokio::test]
async fn monitor_shows_scripts_and_their_lua_lines() {
    let server = support::start().await;
    let addr = server.addr();
    let mut mon = tokio::net::TcpStream::connect(addr).await.unwrap();
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    mon.write_all(b"MONITOR\r\n").await.unwrap();
    let mut buf = vec![0u8; 5];
    mon.read_exact(&mut buf).await.unwrap();
    assert_eq!(&buf, b"+OK\r\n");
    let mut con = support::conn(&server.url()).await;
    let _: () = support::cmd(&["EVAL", ACQUIRE_HSET, "1", LOCK, "600000", OWNER_A])
        .query_async(&mut con)
        .await
        .unwrap();
    let mut text = String::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    // Connection set-up (CLIENT SETINFO from redis-rs) is monitored too; count script lines.
    let script_lines = |t: &str| {
        t.lines()
            .filter(|l| l.contains("\"EVAL\"") || l.contains("[0 lua]"))
            .count()
    };
    while script_lines(&text) < 4 && tokio::time::Instant::now() < deadline {
        let mut chunk = [0u8; 4096];
        let n = tokio::time::timeout(Duration::from_secs(5), mon.read(&mut chunk))
            .await
            .unwrap()
            .unwrap();
        text.push_str(&String::from_utf8_lossy(&chunk[..n]));
    }
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("\"EVAL\"") || l.contains("[0 lua]"))
        .collect();
    let local = con_addr_hint(&lines);
    assert!(
        lines[0].contains(&format!("[0 {local}] \"EVAL\"")),
        "{text}"
    );
    assert!(
        lines[1].ends_with(&format!("[0 lua] \"exists\" \"{LOCK}\"")),
        "{text}"
    );
    assert!(
        lines[2].ends_with(&format!("[0 lua] \"hset\" \"{LOCK}\" \"{OWNER_A}\" \"1\"")),
        "{text}"
    );
    assert!(
        lines[3].ends_with(&format!("[0 lua] \"pexpire\" \"{LOCK}\" \"600000\"")),
        "{text}"
    );
    for line in &lines {
        let stamp = line.trim_start_matches('+').split(' ').next().unwrap();
        let (secs, micros) = stamp.split_once('.').unwrap();
        assert!(secs.parse::<u64>().is_ok() && micros.len() == 6, "{line}");
    }
}

/// The `ip:port` shown in the first MONITOR line.
fn con_addr_hint<'a>(lines: &[&'a str]) -> &'a str {
    let first = lines[0];
    let start = first.find("[0 ").unwrap() + 3;
    let end = first[start..].find(']').unwrap() + start;
    assert!(first[start..end].starts_with("127.0.0.1:"), "{first}");
    &first[start..end]
}

#[tokio::test]
async fn infinite_loop_is_busy_for_others_and_script_kill_frees_the_node() {
    busy_loop_then_script_kill().await;
}

// On a multi-thread runtime scripts run inline on the connection's worker: a long one must
// hand the worker's other tasks over, also when it is the only worker.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn infinite_loop_is_busy_for_others_on_two_workers() {
    busy_loop_then_script_kill().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn infinite_loop_is_busy_for_others_on_a_single_worker() {
    busy_loop_then_script_kill().await;
}

async fn busy_loop_then_script_kill() {
    busy_script_then_script_kill("while true do end").await;
}

// Loops Redis's hook still stops: inside coroutines (which inherit the instruction hook), and
// loops that catch the kill error with pcall, xpcall or coroutine.resume (after a kill the hook
// fires on every instruction, so the error is raised again outside the protected call).
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn loops_in_coroutines_and_protected_calls_are_busy_and_killable() {
    for script in [
        "coroutine.wrap(function() while true do end end)() return 1",
        "while true do pcall(function() while true do end end) end",
        "while true do xpcall(function() while true do end end, function(e) return e end) end",
        "while true do coroutine.resume(coroutine.create(function() while true do end end)) end",
        "local co = coroutine.wrap(function() while true do pcall(function() while true do end end) end end) co()",
    ] {
        busy_script_then_script_kill(script).await;
    }
}

async fn busy_script_then_script_kill(script: &'static str) {
    let server = locksmith_server::Server::builder()
        .busy_reply_threshold(Duration::from_millis(100))
        .start()
        .await
        .unwrap();
    let url = server.url();
    let mut looping = patient_conn(&url).await;
    let spinner = tokio::spawn(async move {
        let r: redis::RedisResult<()> = support::cmd(&["EVAL", script, "0"])
            .query_async(&mut looping)
            .await;
        r.unwrap_err()
    });
    let mut other = support::conn(&url).await;
    // Poll (bounded) until the node answers BUSY.
    let mut busy = String::new();
    for _ in 0..200 {
        busy = support::run(&mut other, &["GET", "x"]).await;
        if busy.starts_with("ERROR BUSY") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        busy,
        "ERROR BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.",
        "{script}"
    );
    assert_eq!(support::run(&mut other, &["SCRIPT", "KILL"]).await, "ok");
    let err = tokio::time::timeout(Duration::from_secs(10), spinner)
        .await
        .unwrap()
        .unwrap();
    let text = support::error_text(&err);
    assert!(
        text.starts_with("ERR Script killed by user with SCRIPT KILL... script: ")
            && text.ends_with(", on @user_script:1."),
        "{text}"
    );
    assert!(support::run(&mut other, &["PING"]).await.contains("PONG"));
    assert_eq!(
        support::run(&mut other, &["SCRIPT", "KILL"]).await,
        "ERROR NOTBUSY No scripts in execution right now."
    );
}

// Redis refuses plain SHUTDOWN during a busy script but stops on SHUTDOWN NOSAVE, also when
// the script wrote (it cannot be killed otherwise), closing the connection without a reply.
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn shutdown_nosave_stops_the_node_during_a_script_that_wrote() {
    let server = locksmith_server::Server::builder()
        .busy_reply_threshold(Duration::from_millis(100))
        .start()
        .await
        .unwrap();
    let url = server.url();
    let mut looping = patient_conn(&url).await;
    let spinner = tokio::spawn(async move {
        let script = "redis.call('set', 'x', '1') while true do end";
        let r: redis::RedisResult<()> = support::cmd(&["EVAL", script, "0"])
            .query_async(&mut looping)
            .await;
        r
    });
    let mut other = support::conn(&url).await;
    let mut reply = String::new();
    for _ in 0..200 {
        reply = support::run(&mut other, &["SCRIPT", "KILL"]).await;
        if reply.starts_with("ERROR UNKILLABLE") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(reply.starts_with("ERROR UNKILLABLE"), "{reply}");
    assert_eq!(
        support::run(&mut other, &["SHUTDOWN"]).await,
        "ERROR BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."
    );
    let mut wire = support::Wire::connect(server.addr()).await;
    wire.send(&[&["SHUTDOWN", "NOSAVE"]]).await;
    // No reply: the connection just closes.
    let closed = wire.drain_to_eof(Duration::from_secs(10)).await;
    assert_eq!(closed, Some(0), "SHUTDOWN NOSAVE replied or did not close");
    tokio::time::timeout(Duration::from_secs(10), server.stopped())
        .await
        .expect("the node did not stop");
    tokio::time::timeout(Duration::from_secs(10), server.shutdown())
        .await
        .expect("shutdown did not finish");
    // The script was stopped, not left spinning on a thread.
    let ended = tokio::time::timeout(Duration::from_secs(10), spinner).await;
    assert!(ended.is_ok(), "the script still runs after the shutdown");
}

// An embedded server's shutdown stops whatever runs: an unkillable script and DEBUG SLEEP.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_stops_a_looping_script_and_debug_sleep() {
    for command in [
        &["EVAL", "redis.call('set', 'x', '1') while true do end", "0"][..],
        &["DEBUG", "SLEEP", "3600"][..],
    ] {
        let server = locksmith_server::Server::builder()
            .busy_reply_threshold(Duration::from_millis(100))
            .enable_debug_command(locksmith_server::EnableCommand::Yes)
            .start()
            .await
            .unwrap();
        let mut stuck = patient_conn(&server.url()).await;
        let mut other = support::conn(&server.url()).await;
        let args: Vec<String> = command.iter().map(|s| s.to_string()).collect();
        let runner = tokio::spawn(async move {
            let r: redis::RedisResult<redis::Value> =
                support::cmd(&args.iter().map(String::as_str).collect::<Vec<_>>())
                    .query_async(&mut stuck)
                    .await;
            r
        });
        // Wait (bounded) until the script is busy; DEBUG SLEEP answers nobody, so just let it
        // take the lock.
        for _ in 0..200 {
            if command[0] == "DEBUG"
                || support::run(&mut other, &["PING"])
                    .await
                    .starts_with("ERROR BUSY")
            {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        tokio::time::timeout(Duration::from_secs(10), server.shutdown())
            .await
            .unwrap_or_else(|_| panic!("shutdown hung during {command:?}"));
        let ended = tokio::time::timeout(Duration::from_secs(10), runner).await;
        assert!(ended.is_ok(), "{command:?} still runs after the shutdown");
    }
}

// DEBUG is refused unless enable-debug-command allows it, with Redis 7's text.
#[tokio::test]
async fn debug_is_refused_by_default_as_in_redis() {
    let mut pair = support::Pair::start().await;
    let refused = pair.same(&["DEBUG", "SLEEP", "0"]).await;
    assert!(
        refused.starts_with("ERROR ERR DEBUG command not allowed."),
        "{refused}"
    );
    pair.same(&["CONFIG", "GET", "enable-debug-command"]).await;
    // Inside MULTI the refusal flags the transaction, as an unknown command does.
    pair.all_same(&[&["MULTI"], &["DEBUG", "SLEEP", "0"], &["EXEC"]])
        .await;
    let allowed = locksmith_server::Server::builder()
        .enable_debug_command(locksmith_server::EnableCommand::Local)
        .start()
        .await
        .unwrap();
    let mut con = support::conn(&allowed.url()).await;
    assert_eq!(support::run(&mut con, &["DEBUG", "SLEEP", "0"]).await, "ok");
}

// Redis's Lua hashes every character of a string; stock Lua 5.1 hashes ~32 of a long one, and
// this script (long strings differing in their last characters) then took 40 s, BUSY for all.
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn long_strings_differing_at_the_end_hash_apart() {
    let server = support::start().await;
    let mut con = patient_conn(&server.url()).await;
    let script =
        "local t = {} for i = 1, 100000 do t[i] = string.rep('x', 1000) .. i end return #t";
    let n: i64 = tokio::time::timeout(
        Duration::from_secs(30),
        support::cmd(&["EVAL", script, "0"]).query_async(&mut con),
    )
    .await
    .expect("hang guard")
    .unwrap();
    assert_eq!(n, 100_000);
}

#[tokio::test]
async fn script_that_wrote_is_unkillable() {
    let server = locksmith_server::Server::builder()
        .busy_reply_threshold(Duration::from_millis(100))
        .start()
        .await
        .unwrap();
    let url = server.url();
    let mut looping = patient_conn(&url).await;
    let spinner = tokio::spawn(async move {
        let script =
            "redis.call('set', 'w', 1) local n = 0 while n < 40000000 do n = n + 1 end return n";
        let r: redis::RedisResult<i64> = support::cmd(&["EVAL", script, "0"])
            .query_async(&mut looping)
            .await;
        r
    });
    let mut other = support::conn(&url).await;
    // Poll until the script is seen busy (bounded; it runs for seconds).
    let mut reply = String::new();
    for _ in 0..2000 {
        reply = support::run(&mut other, &["SCRIPT", "KILL"]).await;
        if !reply.starts_with("ERROR NOTBUSY") || spinner.is_finished() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(
        reply,
        "ERROR UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command."
    );
    let done = tokio::time::timeout(Duration::from_secs(60), spinner)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(done.unwrap(), 40_000_000);
}

#[tokio::test]
async fn evalsha_with_noscript_fallback_through_redis_script() {
    let server = support::start().await;
    let mut con = support::conn(&server.url()).await;
    let script = redis::Script::new(ACQUIRE);
    // First invocation: EVALSHA fails with NOSCRIPT, the crate loads and retries.
    let first: Option<i64> = script
        .key(LOCK)
        .arg(30000)
        .arg(OWNER_A)
        .invoke_async(&mut con)
        .await
        .unwrap();
    assert_eq!(first, None);
    let exists: Vec<i64> = support::cmd(&["SCRIPT", "EXISTS", script.get_hash()])
        .query_async(&mut con)
        .await
        .unwrap();
    assert_eq!(exists, vec![1]);
    let contended: Option<i64> = script
        .key(LOCK)
        .arg(30000)
        .arg(OWNER_B)
        .invoke_async(&mut con)
        .await
        .unwrap();
    assert!(contended.unwrap() > 29_000);
    let _: () = support::cmd(&["SCRIPT", "FLUSH"])
        .query_async(&mut con)
        .await
        .unwrap();
    let again: Option<i64> = script
        .key(LOCK)
        .arg(30000)
        .arg(OWNER_A)
        .invoke_async(&mut con)
        .await
        .unwrap();
    assert_eq!(again, None);
}

#[tokio::test]
async fn keys_and_argv_hold_binary_values_and_many_arguments_as_redis() {
    let mut pair = Pair::start().await;
    let script = "return {#KEYS, #ARGV, KEYS[1], KEYS[#KEYS], ARGV[1], ARGV[#ARGV], \
                  tostring(KEYS[#KEYS + 1]), cjson.encode(ARGV)}";
    // Binary (non-UTF-8) and empty values next to text ones.
    let mut small = redis::cmd("EVAL");
    small
        .arg(script)
        .arg(2)
        .arg(&b"\xff\x00key"[..])
        .arg("")
        .arg("text")
        .arg(&b"\xc3\x28"[..]);
    // More values than Lua's C stack holds at once.
    let mut many = redis::cmd("EVAL");
    many.arg(script).arg(4500);
    for i in 0..9001 {
        many.arg(format!("v{i}"));
    }
    let mut none = redis::cmd("EVAL");
    none.arg(script).arg(0);
    for cmd in [&small, &many, &none] {
        let ours: redis::Value = cmd.query_async(&mut pair.ours_con).await.unwrap();
        if let Some(real) = &mut pair.real_con {
            let theirs: redis::Value = cmd.query_async(real).await.unwrap();
            assert_eq!(ours, theirs);
        }
    }
}

/// Redis's transaction rules while a script is busy, run on one server: MULTI works, a command
/// is refused with BUSY and flags the transaction, EXEC is refused by discarding the
/// transaction. Returns every reply in order.
async fn transaction_during_busy_script(addr: std::net::SocketAddr) -> Vec<String> {
    let mut admin = support::Wire::connect(addr).await;
    let text = |f: Vec<Vec<u8>>| {
        f.iter()
            .map(|b| String::from_utf8_lossy(b).into_owned())
            .collect::<Vec<_>>()
    };
    let mut out = text(
        admin
            .call(
                &[
                    &["CONFIG", "SET", "lua-time-limit", "10"],
                    &["SET", "xx", "1"],
                ],
                2,
            )
            .await,
    );
    let mut looping = support::Wire::connect(addr).await;
    let mut r2 = support::Wire::connect(addr).await;
    // Case 1: MULTI during the busy script, a refused INCR, then the kill: EXEC aborts.
    looping.send(&[&["EVAL", "while true do end", "0"]]).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    out.extend(text(r2.call(&[&["MULTI"], &["INCR", "xx"]], 2).await));
    out.extend(text(admin.call(&[&["SCRIPT", "KILL"]], 1).await));
    out.extend(text(looping.frames(1).await));
    out.extend(text(r2.call(&[&["INCR", "xx"], &["EXEC"]], 2).await));
    // Case 2: EXEC during the busy script discards the transaction.
    out.extend(text(r2.call(&[&["MULTI"], &["INCR", "xx"]], 2).await));
    looping.send(&[&["EVAL", "while true do end", "0"]]).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    out.extend(text(r2.call(&[&["EXEC"]], 1).await));
    out.extend(text(admin.call(&[&["SCRIPT", "KILL"]], 1).await));
    out.extend(text(looping.frames(1).await));
    // Not in MULTI any more; nothing of either transaction ran.
    out.extend(text(r2.call(&[&["EXEC"], &["GET", "xx"]], 2).await));
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transactions_during_a_busy_script_follow_redis() {
    let ours = support::start().await;
    let replies = transaction_during_busy_script(ours.addr()).await;
    assert!(
        replies
            .iter()
            .any(|r| r.starts_with("-EXECABORT Transaction discarded because of: BUSY")),
        "{replies:?}"
    );
    if let Some(real) = support::RealRedis::start() {
        let expected = transaction_during_busy_script(real.addr()).await;
        assert_eq!(replies, expected);
    }
}

/// `#!lua name=<lib>` followed by `body`.
fn library(lib: &str, body: &str) -> String {
    format!("#!lua name={lib}\n{body}")
}

// FUNCTION LOAD's checks, the library API and its sandbox, FCALL/FCALL_RO with flags, LIST,
// STATS, DELETE and FLUSH, compared reply by reply with real Redis (RESP2 and RESP3).
#[tokio::test]
async fn functions_match_redis() {
    let mut pair = Pair::start().await;
    let two = library(
        "mylib",
        "redis.register_function{function_name='f1', callback=function(keys, args) \
         return {keys[1], args[1]} end, flags={'no-writes'}, description='first'}\n\
         redis.register_function('f2', function() return redis.call('set', 'x', '1') end)",
    );
    let one = library(
        "mylib",
        "redis.register_function{function_name='f1', callback=function(keys, args) \
         return {keys[1], args[1]} end, flags={'no-writes', 'allow-oom', 'allow-stale', \
         'no-cluster', 'allow-cross-slot-keys'}, description='first'}",
    );
    let loads: Vec<String> = [
        "local a = 1\nwhile 1 do a = a + 1 end",
        "a = 1",
        "return math.random()",
        "return redis.call('ping')",
        "return redis.setresp(3)",
        "redis.register_function()",
        "redis.register_function('f1')",
        "redis.register_function(nil, function() return 1 end)",
        "redis.register_function('a-b', function() return 1 end)",
        "redis.register_function('', function() return 1 end)",
        "redis.register_function('f', 'not a function')",
        "redis.register_function('f', function() end, {}, 'd', 'extra')",
        "redis.register_function{function_name='f', callback='bad'}",
        "redis.register_function{function_name=function() end, callback=function() end}",
        "redis.register_function{function_name='f', callback=function() end, description={}}",
        "redis.register_function{function_name='f', callback=function() end, some='x'}",
        "redis.register_function{callback=function() end}",
        "redis.register_function{function_name='f'}",
        "redis.register_function{function_name='f', callback=function() end, flags='x'}",
        "redis.register_function{function_name='f', callback=function() end, flags={'bad'}}",
        "redis.register_function{function_name='f', callback=function() end, flags={{}}}",
        "redis.register_function('f', function() end)\nredis.register_function('F', function() end)",
        "return 1",
        "bad code",
        "error('boom')",
    ]
    .iter()
    .map(|body| library("lib", body))
    .collect();
    for code in &loads {
        pair.same(&["FUNCTION", "LOAD", code]).await;
    }
    let f_error = library(
        "errs",
        "redis.register_function('boom', function(k, a) error('x') end)\n\
         redis.register_function('unknown', function() return redis.call('nosuch') end)\n\
         redis.register_function('reg', function() redis.register_function('z', function() end) end)\n\
         redis.register_function('glob', function() return undefined_global end)",
    );
    pair.all_same(&[
        &["FUNCTION", "FLUSH"],
        &["FUNCTION", "LOAD", &two],
        &["FUNCTION", "LOAD", &two],
        &["FUNCTION", "LOAD", "REPLACE", &two],
        &["FUNCTION", "LOAD", "bogus", &two],
        &["FUNCTION", "LOAD", "REPLACE"],
        &["FUNCTION", "LOAD", "#!lua"],
        &["FUNCTION", "LOAD", "#!\n"],
        &["FUNCTION", "LOAD", "#!lua\nx"],
        &["FUNCTION", "LOAD", "#!py name=x\nx"],
        &["FUNCTION", "LOAD", "#! name=x\nx"],
        &["FUNCTION", "LOAD", "#!lua name=a foo=bar\nx"],
        &["FUNCTION", "LOAD", "#!lua name=a name=b\nx"],
        &["FUNCTION", "LOAD", "#!lua name=a-b\nx"],
        &[
            "FUNCTION",
            "LOAD",
            &library("dup", "redis.register_function('f2', function() end)"),
        ],
        &["FCALL", "f1", "1", "k", "v"],
        &["FCALL", "F1", "1", "k", "v"],
        &["FCALL_RO", "f1", "1", "k", "v"],
        &["FCALL_RO", "f2", "0"],
        &["FCALL", "f2", "0"],
        &["GET", "x"],
        &["FCALL", "nope", "0"],
        &["FCALL", "f1", "x"],
        &["FCALL", "f1", "3", "a"],
        &["FCALL", "f1", "-1", "a"],
        &["FUNCTION", "LOAD", &f_error],
        &["FCALL", "boom", "0"],
        &["FCALL", "unknown", "0"],
        &["FCALL", "reg", "0"],
        &["FCALL", "glob", "0"],
        // Redis lists libraries and functions in hash order: compare one of each.
        &["FUNCTION", "DELETE", "errs"],
        &["FUNCTION", "LOAD", "REPLACE", &one],
        &["FUNCTION", "LIST"],
        &["FUNCTION", "LIST", "WITHCODE"],
        &["FUNCTION", "LIST", "LIBRARYNAME", "MY*"],
        &["FUNCTION", "LIST", "LIBRARYNAME", "nomatch*"],
        &["FUNCTION", "LIST", "LIBRARYNAME"],
        &["FUNCTION", "LIST", "bad"],
        &["FUNCTION", "LIST", "WITHCODE", "WITHCODE"],
        &["FUNCTION", "STATS"],
        &["FUNCTION", "KILL"],
        &["FUNCTION", "DELETE", "nolib"],
        &["FUNCTION", "LOAD", "REPLACE", &two],
        &["FUNCTION", "STATS"],
        &["FUNCTION", "FLUSH", "bad"],
        &["FUNCTION", "FLUSH", "SYNC", "extra"],
        &["FUNCTION", "RESTORE", "a", "b", "c"],
        &["FUNCTION", "RESTORE", "bad_payload"],
        &["FUNCTION", "RESTORE", "bad_payload", "bogus"],
        &["FUNCTION", "HELP"],
        &["FUNCTION", "bogus"],
        &["FUNCTION"],
        &["COMMAND", "GETKEYS", "FCALL", "f1", "2", "a", "b", "c"],
        &["COMMAND", "GETKEYS", "FCALL_RO", "f1", "0"],
        &["FLUSHALL"],
        &["FCALL", "f1", "0"],
        &["FUNCTION", "FLUSH", "ASYNC"],
        &["FUNCTION", "LIST"],
        &["FCALL", "f1", "0"],
    ])
    .await;
    let mut resp3 = support::Resp3Pair::start().await;
    resp3
        .all_same(&[
            &["FUNCTION", "LOAD", &one],
            &["FUNCTION", "LIST", "WITHCODE"],
            &["FUNCTION", "STATS"],
            &["FCALL", "f1", "1", "k", "v"],
        ])
        .await;
}

// A FUNCTION DUMP payload restores on the other server both ways (LZF-compressed strings from
// Redis included) under every policy, and a restore that fails changes nothing.
#[tokio::test]
async fn function_dump_and_restore_round_trip_and_cross_servers() {
    let mut pair = Pair::start().await;
    let code = library(
        "lib1",
        "local function add1(a) return a + 1 end\n\
         redis.register_function('f1', function() return add1(1) end)\n\
         redis.register_function('f2', function() return add1(2) end)",
    );
    pair.same(&["FUNCTION", "LOAD", &code]).await;
    let dump_of = |con: &mut redis::aio::MultiplexedConnection| {
        let mut con = con.clone();
        async move {
            let payload: Vec<u8> = support::cmd(&["FUNCTION", "DUMP"])
                .query_async(&mut con)
                .await
                .unwrap();
            payload
        }
    };
    let ours = dump_of(&mut pair.ours_con).await;
    let restore =
        |payload: Vec<u8>, policy: &'static str, con: &mut redis::aio::MultiplexedConnection| {
            let mut con = con.clone();
            async move {
                let mut cmd = redis::cmd("FUNCTION");
                cmd.arg("RESTORE").arg(payload);
                if !policy.is_empty() {
                    cmd.arg(policy);
                }
                let r: redis::RedisResult<String> = cmd.query_async(&mut con).await;
                r.unwrap_or_else(|e| support::error_text(&e))
            }
        };
    // On our server alone: collisions, then every policy.
    let con = &mut pair.ours_con;
    assert_eq!(
        restore(ours.clone(), "", con).await,
        "ERR Library lib1 already exists"
    );
    assert_eq!(support::run(con, &["FUNCTION", "FLUSH"]).await, "ok");
    let other = library(
        "lib2",
        "redis.register_function('f2', function() return 9 end)",
    );
    support::run(con, &["FUNCTION", "LOAD", &other]).await;
    assert_eq!(
        restore(ours.clone(), "REPLACE", con).await,
        "ERR Function f2 already exists"
    );
    assert_eq!(support::run(con, &["FCALL", "f2", "0"]).await, "int(9)");
    assert_eq!(restore(ours.clone(), "FLUSH", con).await, "OK");
    assert_eq!(support::run(con, &["FCALL", "f2", "0"]).await, "int(3)");
    assert_eq!(restore(ours.clone(), "REPLACE", con).await, "OK");
    assert_eq!(support::run(con, &["FCALL", "f1", "0"]).await, "int(2)");
    let mut corrupt = ours.clone();
    let mid = corrupt.len() / 2;
    corrupt[mid] ^= 1;
    assert_eq!(
        restore(corrupt, "FLUSH", con).await,
        "ERR DUMP payload version or checksum are wrong"
    );
    assert_eq!(support::run(con, &["FCALL", "f1", "0"]).await, "int(2)");
    // Across servers, both ways.
    if let Some(real_con) = &mut pair.real_con {
        let theirs = dump_of(real_con).await;
        assert_eq!(restore(theirs, "FLUSH", &mut pair.ours_con).await, "OK");
        assert_eq!(
            support::run(&mut pair.ours_con, &["FCALL", "f2", "0"]).await,
            "int(3)"
        );
        support::run(real_con, &["FUNCTION", "FLUSH"]).await;
        assert_eq!(restore(ours, "", real_con).await, "OK");
        assert_eq!(
            support::run(real_con, &["FCALL", "f1", "0"]).await,
            "int(2)"
        );
    }
}

// A long function makes other clients BUSY with FUNCTION KILL in the text; SCRIPT KILL does
// not stop it, FUNCTION STATS shows it, FUNCTION KILL does (and not an EVAL).
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn function_kill_stops_a_busy_function_and_only_a_function() {
    let server = locksmith_server::Server::builder()
        .busy_reply_threshold(Duration::from_millis(100))
        .start()
        .await
        .unwrap();
    let url = server.url();
    let mut other = support::conn(&url).await;
    let code = library(
        "spin",
        "redis.register_function('spin', function() local a = 1 while true do a = a + 1 end end)",
    );
    assert_eq!(
        support::run(&mut other, &["FUNCTION", "LOAD", &code]).await,
        "bulk-string('\"spin\"')"
    );
    let mut looping = patient_conn(&url).await;
    let spinner = tokio::spawn(async move {
        let r: redis::RedisResult<()> = support::cmd(&["FCALL", "spin", "0"])
            .query_async(&mut looping)
            .await;
        r.unwrap_err()
    });
    let mut busy = String::new();
    for _ in 0..200 {
        busy = support::run(&mut other, &["PING"]).await;
        if busy.starts_with("ERROR BUSY") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let function_busy =
        "ERROR BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.";
    assert_eq!(busy, function_busy);
    assert_eq!(
        support::run(&mut other, &["SCRIPT", "KILL"]).await,
        function_busy
    );
    let stats = support::run(&mut other, &["FUNCTION", "STATS"]).await;
    assert!(
        stats.contains("name") && stats.contains("spin") && stats.contains("duration_ms"),
        "{stats}"
    );
    assert_eq!(support::run(&mut other, &["FUNCTION", "KILL"]).await, "ok");
    let err = tokio::time::timeout(Duration::from_secs(10), spinner)
        .await
        .unwrap()
        .unwrap();
    let text = support::error_text(&err);
    assert!(
        text.starts_with(
            "ERR Script killed by user with SCRIPT KILL... script: spin, on @user_function:"
        ),
        "{text}"
    );
    assert!(support::run(&mut other, &["PING"]).await.contains("PONG"));
    // FUNCTION KILL does not stop an EVAL.
    let mut looping = patient_conn(&url).await;
    let spinner = tokio::spawn(async move {
        let r: redis::RedisResult<()> = support::cmd(&["EVAL", "while true do end", "0"])
            .query_async(&mut looping)
            .await;
        r.unwrap_err()
    });
    let eval_busy =
        "ERROR BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.";
    for _ in 0..200 {
        busy = support::run(&mut other, &["FUNCTION", "KILL"]).await;
        if busy.starts_with("ERROR BUSY") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(busy, eval_busy);
    assert_eq!(
        support::run(&mut other, &["FUNCTION", "STATS"]).await,
        eval_busy
    );
    assert_eq!(support::run(&mut other, &["SCRIPT", "KILL"]).await, "ok");
    tokio::time::timeout(Duration::from_secs(10), spinner)
        .await
        .unwrap()
        .unwrap();
}

// min-replicas-to-write on a node without replicas: writes, flagged scripts that may write and
// writes inside scripts and transactions are refused with NOREPLICAS; reads are not.
#[tokio::test]
async fn min_replicas_to_write_refuses_writes_as_redis() {
    let mut pair = Pair::start().await;
    pair.all_same(&[
        &["SET", "x", "some value"],
        &["CONFIG", "SET", "min-replicas-to-write", "1"],
        &["GET", "x"],
        &["SET", "x", "1"],
        &[
            "EVAL",
            "#!lua flags=no-writes\nreturn redis.call('get','x')",
            "1",
            "x",
        ],
        &["EVAL", "return redis.call('get','x')", "1", "x"],
        &["EVAL", "#!lua\nreturn redis.call('get','x')", "1", "x"],
        &["EVAL", "return redis.call('set','x', 1)", "1", "x"],
        &["EVAL", "return redis.pcall('set','x', 1)", "1", "x"],
        &["MULTI"],
        &["SET", "x", "2"],
        &["GET", "x"],
        &["EXEC"],
        &["CONFIG", "SET", "min-replicas-max-lag", "0"],
        &["SET", "x", "3"],
        &["CONFIG", "SET", "min-replicas-max-lag", "10"],
        &["CONFIG", "SET", "min-replicas-to-write", "0"],
        &["SET", "x", "4"],
        &["GET", "x"],
    ])
    .await;
}

/// Many function libraries (FUNCTION LOAD cost grew with each one loaded: FUNCTION STATS'
/// counts were summed over every library after each load, REPLACE and DELETE): 3000 load, and
/// STATS, LIST, REPLACE, FCALL, DELETE and FLUSH answer as redis-server does (LIST of one
/// library with one function: Redis lists several in its hash table's order).
#[tokio::test]
async fn many_function_libraries_load_replace_and_delete_as_in_redis() {
    let mut pair = Pair::start().await;
    let code = |i: usize| {
        format!("#!lua name=lib{i}\nredis.register_function('f{i}', function() return {i} end)")
    };
    let count = 3000;
    let mut cons = vec![pair.ours_con.clone()];
    cons.extend(pair.real_con.clone());
    for con in &mut cons {
        let mut pipe = redis::pipe();
        for i in 0..count {
            pipe.cmd("FUNCTION").arg("LOAD").arg(code(i));
        }
        let names: Vec<String> = pipe.query_async(con).await.unwrap();
        assert_eq!(names.len(), count);
        assert_eq!(names[count - 1], format!("lib{}", count - 1));
    }
    let replaced = format!(
        "{}\nredis.register_function('g', function() return 'g' end)",
        code(1500)
    );
    pair.all_same(&[
        &["FUNCTION", "STATS"],
        &["FUNCTION", "LIST", "LIBRARYNAME", "lib2999"],
        &["FCALL", "f2999", "0"],
        &["FUNCTION", "LOAD", &code(1500)],
        &["FUNCTION", "LOAD", "REPLACE", &replaced],
        &["FUNCTION", "STATS"],
        &["FCALL", "g", "0"],
        &["FCALL", "f1500", "0"],
        &["FUNCTION", "DELETE", "lib0"],
        &["FUNCTION", "DELETE", "lib0"],
        &["FCALL", "f0", "0"],
        &["FUNCTION", "STATS"],
        &["FUNCTION", "FLUSH"],
        &["FUNCTION", "STATS"],
    ])
    .await;
    assert_eq!(
        pair.same(&["FCALL", "f2999", "0"]).await,
        "ERROR ERR Function not found"
    );
}
