//! Hostile scripts (issue 37): the inputs a probe of the release binary found to kill the
//! process, run bytecode or answer wrongly, each compared with redis-server 7.0.15 where Redis
//! answers, and each followed by a command the server must still answer. Integer overflow in
//! `unpack`, binary chunks through every loader, nesting deep enough to exhaust a thread's
//! stack (cmsgpack, cjson, table replies), pattern matching recursion, `bit.tohex`,
//! `struct.unpack`, and the loops in C that only SCRIPT KILL ends.

use locksmith_testkit as support;

use std::net::SocketAddr;
use std::time::Duration;
use support::Pair;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// `EVAL script 0` on both servers, the same reply, then both still answer PING.
pub(super) async fn eval_then_ping(pair: &mut Pair, script: &str) -> String {
    let reply = pair.same(&["EVAL", script, "0"]).await;
    assert_eq!(
        pair.same(&["PING"]).await,
        "simple-string(\"PONG\")",
        "{script}"
    );
    reply
}

/// Sends `EVAL script 0` to `addr` and reads a reply of nested one-element arrays line by
/// line, without recursion whatever its depth (a client's parser would recurse): the number
/// of `*1` levels and the line that ends them. Then the same connection must answer PING.
async fn nested_reply(addr: SocketAddr, script: &str) -> (usize, String) {
    let mut con = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = format!(
        "*3\r\n$4\r\nEVAL\r\n${}\r\n{script}\r\n$1\r\n0\r\n",
        script.len()
    );
    con.write_all(request.as_bytes()).await.unwrap();
    let mut buf = Vec::new();
    let mut pos = 0;
    let mut levels = 0;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    let last = 'read: loop {
        while let Some(nl) = buf[pos..].windows(2).position(|w| w == b"\r\n") {
            let line = &buf[pos..pos + nl];
            pos += nl + 2;
            if line == b"*1" {
                levels += 1;
            } else {
                break 'read String::from_utf8_lossy(line).into_owned();
            }
        }
        let mut chunk = [0u8; 64 * 1024];
        let n = tokio::time::timeout_at(deadline, con.read(&mut chunk))
            .await
            .expect("a whole reply within 60 s")
            .unwrap();
        assert!(n > 0, "connection closed after {levels} levels");
        buf.extend_from_slice(&chunk[..n]);
    };
    assert_eq!(pos, buf.len(), "bytes after the reply's last line");
    con.write_all(b"*1\r\n$4\r\nPING\r\n").await.unwrap();
    let mut pong = [0u8; 7];
    tokio::time::timeout(Duration::from_secs(10), con.read_exact(&mut pong))
        .await
        .expect("PONG within 10 s")
        .unwrap();
    assert_eq!(&pong, b"+PONG\r\n");
    (levels, last)
}

/// [`nested_reply`] on both servers: the same depth and last line.
pub(super) async fn same_nested_reply(pair: &Pair, script: &str) -> (usize, String) {
    let ours = nested_reply(pair.ours.addr(), script).await;
    if let Some(real) = &pair.real {
        assert_eq!(ours, nested_reply(real.addr(), script).await, "{script}");
    }
    ours
}

// CVE-2025-46817: stock Lua 5.1.5 computed `e - i + 1` in int and trusted signed overflow to
// come out negative; these pushed 2^31 values and the process died with SIGSEGV.
#[tokio::test]
async fn unpack_of_huge_ranges_is_too_many_results_as_in_redis() {
    let mut pair = Pair::start().await;
    for script in [
        "return {unpack({1,2,3}, -2, 2147483647)}",
        "return {unpack({}, 0, 2^31-1)}",
        "return {unpack({}, -2^31, 2^31-1)}",
        "return {unpack({}, -1e10, 1e10)}",
        "return {unpack({}, 2^31-1, -2^31)}",
        "return {pcall(unpack, {}, -2, 2147483647)}",
        // What still fits: the ends of a range, an empty one, a range of the Lua stack.
        "return {unpack({1,2,3}, 2147483647, 2147483647)}",
        "return {unpack({1,2,3}, -2147483648, -2147483648)}",
        "return #{unpack({}, 1, 7990)}",
        "return {pcall(unpack, {}, 1, 8000)}",
    ] {
        let reply = eval_then_ping(&mut pair, script).await;
        eprintln!("{script}: {reply}");
    }
}

// Lua 5.1 bytecode is not checked by its loader: running it is running arbitrary code. Redis
// parses every chunk as text (f_parser), so each loader refuses one with the lexer's error.
#[tokio::test]
async fn binary_chunks_are_refused_by_every_loader() {
    let mut pair = Pair::start().await;
    for script in [
        // The probe's escape: `load` with a reader function handing back a dumped function.
        "local s=string.dump(function() return 42 end) local d=false \
         return load(function() if d then return nil end d=true return s end)()",
        "local s=string.dump(function() return 42 end) local d=false \
         local f, e = load(function() if d then return nil end d=true return s end) return {type(f), tostring(e)}",
        "local f, e = loadstring(string.dump(function() return 1 end)) return {type(f), tostring(e)}",
        "local f, e = loadstring(string.dump(function() return 1 end), 'named') return {type(f), tostring(e)}",
        "local f, e = loadstring('\\27Lua') return {type(f), tostring(e)}",
        "return {pcall(loadstring(string.dump(function() return 1 end)))}",
        // A reader handing the signature's first byte alone, then the rest.
        "local parts = {'\\27', string.sub(string.dump(function() return 1 end), 2)} \
         local i = 0 local f, e = load(function() i = i + 1 return parts[i] end) return {type(f), tostring(e)}",
        // string.dump itself exists in Redis 7.0's sandbox, as here.
        "return type(string.dump)",
        "return {pcall(string.dump, redis.call)}",
    ] {
        let reply = eval_then_ping(&mut pair, script).await;
        eprintln!("{script}: {reply}");
    }
    // The server's own loader (EVAL's body, SCRIPT LOAD, FUNCTION LOAD's code).
    let dumped = "\x1bLuaQ\x00\x01\x04\x08\x04\x08\x00";
    pair.same(&["EVAL", dumped, "0"]).await;
    pair.same(&["SCRIPT", "LOAD", dumped]).await;
    let library = format!("#!lua name=bin\n{dumped}");
    pair.same(&["FUNCTION", "LOAD", &library]).await;
    assert_eq!(pair.same(&["PING"]).await, "simple-string(\"PONG\")");
}

// Redis's decoder keeps each open table on the Lua stack and checks it (luaL_checkstack):
// nesting ends at about 4 000 levels with its error, where ours recursed until the thread's
// stack overflowed (the process aborted from ~3 500 levels).
#[tokio::test]
async fn cmsgpack_unpack_of_deep_nesting_stops_at_the_lua_stack_as_in_redis() {
    let mut pair = Pair::start().await;
    for (levels, item) in [
        (3600, "string.char(0x91)"),
        (3999, "string.char(0x91)"),
        (4000, "string.char(0x91)"),
        (100_000, "string.char(0x91)"),
        (3999, "string.char(0x81, 0x01)"),
        (4000, "string.char(0x81, 0x01)"),
        (100_000, "string.char(0x81, 0x01)"),
        (100_000, "string.char(0xdc, 0x00, 0x01)"),
        (100_000, "string.char(0xdf, 0x00, 0x00, 0x00, 0x01, 0xc3)"),
    ] {
        let script = format!(
            "local ok, v = pcall(cmsgpack.unpack, string.rep({item}, {levels})..string.char(0xc0)) \
             return {{tostring(ok), type(v) == 'table' and 'table' or v}}"
        );
        let reply = eval_then_ping(&mut pair, &script).await;
        eprintln!("{levels} x {item}: {reply}");
    }
    // Many values at the top level fill the same stack.
    eval_then_ping(
        &mut pair,
        "return {pcall(cmsgpack.unpack, string.rep(string.char(0xc3), 9000))}",
    )
    .await;
    eval_then_ping(
        &mut pair,
        "return select('#', cmsgpack.unpack(string.rep(string.char(0xc3), 7000)))",
    )
    .await;
    // The probe's input, returned as it is: 3 600 nested arrays in the reply.
    let (levels, last) = same_nested_reply(
        &pair,
        "return cmsgpack.unpack(string.rep(string.char(0x91),3600)..string.char(0xc0))",
    )
    .await;
    assert_eq!((levels, last.as_str()), (3599, "*0"));
    let (_, last) = same_nested_reply(
        &pair,
        "return cmsgpack.unpack(string.rep(string.char(0x91),100000)..string.char(0xc0))",
    )
    .await;
    assert!(
        last.starts_with("-ERR user_script:1: stack overflow"),
        "{last}"
    );
}

// cjson's own nesting limit (1000 by default), and past a raised one the Lua stack's, with
// Redis's texts; the settings last across scripts in both servers, so each script restores
// the defaults. Ours also stops where mlua's references would run out (5 000 held values):
// deeper than Redis's 4 000 objects when decoding, shallower than its 8 000 arrays, and
// than its 4 000 objects when encoding; those only compare with ours.
#[tokio::test]
async fn cjson_nesting_stops_at_its_limits_as_in_redis() {
    let mut pair = Pair::start().await;
    let script = |setup: &str, call: &str| {
        format!(
            "local function deep(n, map) local t = {{}} local c = t \
               for i = 1, n - 1 do local x = {{}} if map then c.a = x else c[1] = x end c = x end \
               return t end \
             {setup} local ok, v = pcall({call}) \
             cjson.encode_max_depth(1000) cjson.decode_max_depth(1000) \
             return {{tostring(ok), type(v) == 'table' and 'table' or #v < 200 and v or #v}}"
        )
    };
    let raised_decode = "cjson.decode_max_depth(100000)";
    let raised_encode = "cjson.encode_max_depth(100000)";
    for (setup, call) in [
        ("", "cjson.decode, string.rep('[', 1001)"),
        ("", "cjson.decode, string.rep('{\"a\":', 1001)"),
        (
            "",
            "cjson.decode, string.rep('[', 1000) .. string.rep(']', 1000)",
        ),
        (raised_decode, "cjson.decode, string.rep('{\"a\":', 100000)"),
        (
            raised_decode,
            "cjson.decode, string.rep('[', 4999) .. string.rep(']', 4999)",
        ),
        ("", "cjson.encode, deep(1001, false)"),
        ("", "cjson.encode, deep(1000, false)"),
        ("", "cjson.encode, deep(1001, true)"),
        ("", "cjson.encode, deep(1000, true)"),
        (raised_encode, "cjson.encode, deep(4000, false)"),
    ] {
        let reply = eval_then_ping(&mut pair, &script(setup, call)).await;
        eprintln!("{setup} {call}: {reply}");
    }
    for (setup, call, error) in [
        (
            raised_decode,
            "cjson.decode, string.rep('[', 100000)",
            "Found too many nested data structures (5001) at character 5001",
        ),
        (
            raised_encode,
            "cjson.encode, deep(100000, false)",
            "Cannot serialise, excessive nesting (4997)",
        ),
        (
            raised_encode,
            "cjson.encode, deep(100000, true)",
            "Cannot serialise, excessive nesting (1250)",
        ),
    ] {
        let reply = support::run(&mut pair.ours_con, &["EVAL", &script(setup, call), "0"]).await;
        assert_eq!(
            reply,
            format!("array([bulk-string('\"false\"'), bulk-string('\"{error}\"')])"),
            "{call}"
        );
        assert!(support::run(&mut pair.ours_con, &["PING"])
            .await
            .contains("PONG"));
    }
}

// Redis's Lua runs on its 8 MB main thread stack and matches 50 000 pattern items; ours ran on
// a tokio worker's 2 MB and aborted from ~43 000 items. Scripts now run on at least 16 MB on
// any runtime (a current-thread one runs them on the blocking pool, see the flavours below).
async fn deep_patterns_match_as_in_redis() {
    let mut pair = Pair::start().await;
    for script in [
        "return #string.match(string.rep('a',50000), string.rep('a?',50000))",
        "return string.find(string.rep('a',50000), string.rep('.-',50000))",
        "return {string.gsub(string.rep('a',50000), string.rep('a?',50000), 'x')}",
        "return #string.match(string.rep('a',50000), '(' .. string.rep('a?',49990) .. ')')",
        "local n = 0 for w in string.gmatch(string.rep('a',50000), string.rep('a?',50000)) \
         do n = n + #w end return n",
    ] {
        let reply = eval_then_ping(&mut pair, script).await;
        eprintln!("{script}: {reply}");
    }
    // Past the matcher's bound (Redis's would overflow its stack at some length): an error,
    // and the server goes on.
    for script in [
        "return string.match(string.rep('a',200000), string.rep('a?',200000))",
        "return string.find(string.rep('a',200000), string.rep('a*',200000))",
        "return string.gsub(string.rep('a',200000), string.rep('.-',200000), '')",
    ] {
        let reply = support::run(&mut pair.ours_con, &["EVAL", script, "0"]).await;
        assert!(
            reply.starts_with("ERROR ERR user_script:1: pattern too complex script: "),
            "{script}: {reply}"
        );
        assert!(support::run(&mut pair.ours_con, &["PING"])
            .await
            .contains("PONG"));
    }
}

#[tokio::test]
async fn deep_patterns_on_the_blocking_pool() {
    deep_patterns_match_as_in_redis().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deep_patterns_inline_on_a_runtime_worker() {
    deep_patterns_match_as_in_redis().await;
}

// The bit library (CVE-2024-31449) and struct's `c0` count from a negative number.
#[tokio::test]
async fn bit_tohex_and_struct_unpack_edges_answer_as_in_redis() {
    let mut pair = Pair::start().await;
    for script in [
        "return bit.tohex(65535, -2147483648)",
        "return bit.tohex(65535, 2147483647)",
        "return bit.tohex(65535, -2147483647)",
        "return bit.tohex(-1, -8)",
        "return bit.tohex(65535, 0)",
        "return {struct.unpack('ic0', struct.pack('i', -1))}",
        "return {struct.unpack('ic0', struct.pack('i', -1) .. 'abcd')}",
        "return {struct.unpack('ic0', struct.pack('i', 3) .. 'abcd')}",
        "return {pcall(struct.unpack, 'c0', 'abcd')}",
        "return {struct.unpack('c2c0', '3 abcd')}",
        "return {struct.unpack('c2c0', '-1abcd')}",
        "return {struct.unpack('c3c0', '0x2abcd')}",
        "return {struct.unpack('c4c0', ' 2  abcd')}",
        "return {struct.unpack('dc0', struct.pack('d', 0/0) .. 'ab')}",
        "return {struct.unpack('dc0', struct.pack('d', 1/0) .. 'ab')}",
        "return {struct.unpack('dc0', struct.pack('d', 2^64) .. 'ab')}",
        "return {struct.unpack('dc0', struct.pack('d', 2^63) .. 'ab')}",
        "return {struct.unpack('dc0', struct.pack('d', 2.9) .. 'abc')}",
        "return {struct.unpack('dc0', struct.pack('d', -0.5) .. 'abc')}",
    ] {
        let reply = eval_then_ping(&mut pair, script).await;
        eprintln!("{script}: {reply}");
    }
}

// struct.unpack's offset (found by the script fuzzer): Redis converts it to an integer as
// x86-64 does and takes it as a size, so only 0 is refused and a negative, infinite or NaN
// offset is a position past the data; ours computed `offset - 1` in i64 and overflowed (a
// panic in debug builds) on -1/0.
#[tokio::test]
async fn struct_unpack_offsets_answer_as_in_redis() {
    let mut pair = Pair::start().await;
    for offset in [
        "-1/0", "1/0", "0/0", "-1", "0", "0.5", "-0.5", "1", "2", "5", "6", "2^63", "-2^63",
        "2^64", "-2^53",
    ] {
        for format in ["i", "", "<", "!8i8", "!4i", "c0", "xi4"] {
            let script = format!("return {{struct.unpack('{format}', 'abcdefgh', {offset})}}");
            eval_then_ping(&mut pair, &script).await;
        }
    }
}

// A table reply nests as deep as Redis's Lua stack lets it (about 8 000 levels, then "reached
// lua stack limit"); ours stopped at 1 001.
#[tokio::test]
async fn nested_table_replies_go_as_deep_as_in_redis() {
    let pair = Pair::start().await;
    for (depth, expect) in [(1001, 1000), (2000, 1999), (7000, 6999)] {
        let script = format!("local t = {{}} for i = 2, {depth} do t = {{t}} end return t");
        let (levels, last) = same_nested_reply(&pair, &script).await;
        assert_eq!((levels, last.as_str()), (expect, "*0"), "{depth}");
    }
    let (levels, last) = same_nested_reply(
        &pair,
        "local t = {} for i = 2, 20000 do t = {t} end return t",
    )
    .await;
    assert_eq!(last, "-ERR reached lua stack limit");
    assert!(levels > 7000, "{levels}");
}

/// Runs `script` on a node of ours with a 20 ms busy threshold and `lua_memory` bytes of Lua,
/// waits (bounded) until another client gets BUSY, sends SCRIPT KILL and returns the error
/// the script ended with; the node then answers PING and is no longer busy.
async fn kill_busy_script(script: &'static str, lua_memory: u64) -> String {
    let server = locksmith_server::Server::builder()
        .busy_reply_threshold(Duration::from_millis(20))
        .lua_memory_limit(lua_memory)
        .start()
        .await
        .unwrap();
    let url = server.url();
    let mut looping = support::patient_conn(&url).await;
    let spinner = tokio::spawn(async move {
        let r: redis::RedisResult<redis::Value> = support::cmd(&["EVAL", script, "0"])
            .query_async(&mut looping)
            .await;
        r
    });
    let mut other = support::conn(&url).await;
    let mut busy = String::new();
    for _ in 0..500 {
        busy = support::run(&mut other, &["GET", "x"]).await;
        if busy.starts_with("ERROR BUSY") || spinner.is_finished() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    if busy.starts_with("ERROR BUSY") {
        let kill = support::run(&mut other, &["SCRIPT", "KILL"]).await;
        assert!(
            kill == "ok" || kill.starts_with("ERROR NOTBUSY"),
            "{script}: {kill}"
        );
    }
    let ended = tokio::time::timeout(Duration::from_secs(30), spinner)
        .await
        .expect("the script ends within 30 s of SCRIPT KILL")
        .unwrap();
    let text = match ended {
        Ok(v) => panic!("{script} returned {v:?}"),
        Err(e) => support::error_text(&e),
    };
    assert!(support::run(&mut other, &["PING"]).await.contains("PONG"));
    assert_eq!(
        support::run(&mut other, &["SCRIPT", "KILL"]).await,
        "ERROR NOTBUSY No scripts in execution right now."
    );
    text
}

// Loops in C that run for ever (in Redis too, where nothing but their end stops them: its
// hook counts Lua instructions only, so SCRIPT KILL and SHUTDOWN NOSAVE wait): a backtracking
// pattern. Ours call the hook from the matcher's recursion, so SCRIPT KILL ends them, on the
// blocking pool and inline on a worker.
async fn endless_patterns_end_with_script_kill() {
    for script in [
        "return string.find(string.rep('a', 30), string.rep('a*', 30) .. 'b')",
        "return string.gsub(string.rep('a', 30), string.rep('a*', 30) .. 'b', '')",
        "for w in string.gmatch(string.rep('a', 30), string.rep('a-', 30) .. 'b') do end",
    ] {
        let text = kill_busy_script(script, 1 << 30).await;
        assert!(
            text.starts_with("ERR Script killed by user with SCRIPT KILL... script: "),
            "{script}: {text}"
        );
    }
}

#[tokio::test]
async fn endless_patterns_end_with_script_kill_on_the_blocking_pool() {
    endless_patterns_end_with_script_kill().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn endless_patterns_end_with_script_kill_on_a_single_worker() {
    endless_patterns_end_with_script_kill().await;
}

// table.insert(t, 2^31, 1): the position converts to INT_MIN, so the shifting loop runs 2^31
// times and adds a key each time (in Redis too). The loop calls the hook: SCRIPT KILL ends it,
// or the interpreter's memory bound does first.
#[tokio::test]
async fn table_insert_at_2_pow_31_ends_with_script_kill_or_the_memory_bound() {
    let text = kill_busy_script("local t = {} table.insert(t, 2^31, 1) return #t", 64 << 20).await;
    assert!(
        text.starts_with("ERR Script killed by user with SCRIPT KILL... script: ")
            || text.starts_with("ERR Script stopped: the Lua interpreter reached its memory limit"),
        "{text}"
    );
}

// pcall and xpcall push their status above the results of the call, which can fill the frame:
// stock Lua 5.1.5 pushed it without room (the API check aborted a debug build; the script
// fuzzer found it with `string.byte` of 100 characters).
#[tokio::test]
async fn pcall_of_many_results_answers_as_in_redis() {
    let mut pair = Pair::start().await;
    for script in [
        "return {pcall(function() return string.rep('x', 500):byte(1, 100) end)}",
        "return select('#', pcall(function() return string.rep('x', 5000):byte(1, 5000) end))",
        "return select('#', pcall(string.byte, string.rep('x', 7000), 1, 7000))",
        "return select('#', xpcall(function() return string.rep('x', 5000):byte(1, 5000) end, \
         function(e) return e end))",
        "return select('#', coroutine.resume(coroutine.create(function() \
         return string.rep('x', 5000):byte(1, 5000) end)))",
    ] {
        let reply = eval_then_ping(&mut pair, script).await;
        eprintln!("{script}: {reply}");
    }
}
