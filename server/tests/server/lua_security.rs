//! Redis's security history: one test per CVE Redis fixed in its Lua (the ones Debian's
//! 7.0.15 carries), each with Redis's own regression input (its `tests/unit/scripting.tcl`)
//! or the input the advisory describes, compared with redis-server: Redis's error or result,
//! never a crash, a hang or unbounded memory, and the server answers the next command.

use super::script_hostile::{eval_then_ping, same_nested_reply};
use locksmith_testkit as support;
use support::Pair;

/// Each script through [`eval_then_ping`], its reply logged.
async fn all_eval_then_ping(pair: &mut Pair, scripts: &[&str]) {
    for script in scripts {
        let reply = eval_then_ping(pair, script).await;
        eprintln!("{script}: {reply}");
    }
}

// CVE-2021-32626: scripts returning deep or huge tables overflowed the Lua stack (Redis now
// checks lua_checkstack while converting). Redis's tests "Script return recursive object" and
// "Script check unpack with massive arguments".
#[tokio::test]
async fn cve_2021_32626_deep_and_huge_replies_stop_at_the_lua_stack() {
    let mut pair = Pair::start().await;
    let (levels, last) =
        same_nested_reply(&pair, "local a = {}; local b = {a}; a[1] = b; return a").await;
    assert_eq!(last, "-ERR reached lua stack limit");
    assert!(levels > 7000, "{levels}");
    let reply = eval_then_ping(
        &mut pair,
        "local a = {} for i=1,7999 do a[i] = 1 end return redis.call('lpush', 'l', unpack(a))",
    )
    .await;
    assert_eq!(reply, "int(7999)");
    all_eval_then_ping(
        &mut pair,
        &[
            "local a = {} for i=1,8000 do a[i] = 1 end return redis.call('lpush', 'l', unpack(a))",
            "local a = {} for i=1,100000 do a[i] = i end return a",
            "return #redis.call('lrange', 'l', 0, -1)",
        ],
    )
    .await;
}

// CVE-2022-24735: a script could change globals, library tables or their metatables and so
// run code as another user's later script. Redis's "Try trick global protection 1-4", "Try
// trick readonly table on ..." and "Test ... are not available" tests.
#[tokio::test]
async fn cve_2022_24735_globals_libraries_and_metatables_are_read_only() {
    let mut pair = Pair::start().await;
    all_eval_then_ping(
        &mut pair,
        &[
            "setmetatable(_G, {})",
            "local g = getmetatable(_G) g.__index = {}",
            "redis = function() return 1 end",
            "_G = {}",
            "redis.call = function() return 1 end",
            "cjson.encode = function() return 1 end",
            "cmsgpack.pack = function() return 1 end",
            "bit.lshift = function() return 1 end",
            "struct.pack = function() return 1 end",
            "string.rep = function() return 1 end",
            "rawset(_G, 'x', 1)",
            "rawset(redis, 'call', 1)",
            "table.insert(redis, 1)",
            "loadfile('some file')",
            "dofile('some file')",
            "print('some data')",
            "a = 10",
        ],
    )
    .await;
}

// CVE-2022-24736: a crafted script made Redis dereference NULL (the advisory names no
// input). Redis's regression tests came with its fix (PR #10651, "Lua readonly tables"):
// functions.tcl's "FUNCTION - trick global protection 1", "FUNCTION - test getmetatable on
// script load" and "LIBRARIES - malicious access test", and the two attacks its description
// shows (overriding `f_<sha>`, and a body that closes Redis's old wrapper to run code while
// it compiles); then odd arguments of our own (non-string global keys, API calls with
// nothing), each an error.
#[tokio::test]
async fn cve_2022_24736_odd_arguments_are_errors_not_crashes() {
    let mut pair = Pair::start().await;
    pair.all_same(&[
        &["FUNCTION", "FLUSH"],
        &[
            "FUNCTION",
            "LOAD",
            "#!lua name=test1\n\
             redis.register_function('f1', function()\n\
                 mt = getmetatable(_G)\n\
                 original_globals = mt.__index\n\
                 original_globals['redis'] = function() return 1 end\n\
             end)",
        ],
        &["FCALL", "f1", "0"],
        &["FUNCTION", "FLUSH"],
        &[
            "FUNCTION",
            "LOAD",
            "#!lua name=test1\nmt = getmetatable(_G)",
        ],
        &[
            "FUNCTION",
            "LOAD",
            "REPLACE",
            "#!lua name=lib1\n\
             local lib = redis\n\
             lib.register_function('f1', function ()\n\
                 lib.redis = redis\n\
                 lib.math = math\n\
                 return {ok='OK'}\n\
             end)\n\
             lib.register_function('f2', function ()\n\
                 lib.register_function('f1', function ()\n\
                     lib.redis = redis\n\
                     lib.math = math\n\
                     return {ok='OK'}\n\
                 end)\n\
             end)",
        ],
        &["FCALL", "f1", "0"],
        &["FUNCTION", "LOAD", "#!lua name=lib2\nredis.math.random()"],
        &[
            "FUNCTION",
            "LOAD",
            "#!lua name=lib2\nredis.redis.call('ping')",
        ],
        &["FCALL", "f2", "0"],
        &["FUNCTION", "LIST", "LIBRARYNAME", "lib2"],
        &["SCRIPT", "LOAD", "return redis.call('ping')"],
        &[
            "EVAL",
            "f_b3a02c833904802db9c34a3cf1292eee3246df3c = function() return 'hacked' end",
            "0",
        ],
        &["EVALSHA", "b3a02c833904802db9c34a3cf1292eee3246df3c", "0"],
        &[
            "EVAL",
            "return 1 end redis.call('set', 'injected', '1') function() return 1",
            "0",
        ],
        &["EXISTS", "injected"],
    ])
    .await;
    all_eval_then_ping(
        &mut pair,
        &[
            "return _G[{}]",
            "return _G[true]",
            "return _G[1]",
            "return {pcall(function() return _G[print] end)}",
            "return redis.setresp()",
            "return redis.setresp(nil)",
            "return redis.setresp(4)",
            "return redis.setresp('3')",
            "return redis.call()",
            "return redis.pcall()",
            "return redis.call(nil)",
            "return redis.call({})",
            "return redis.sha1hex()",
            "return redis.error_reply()",
            "return redis.status_reply()",
            "return redis.log()",
            "return redis.set_repl()",
            "return redis.acl_check_cmd()",
            "return redis.breakpoint()",
        ],
    )
    .await;
}

// CVE-2022-24834: integer overflows in cjson's and cmsgpack's buffers (strings past 2 GB).
// Redis's smoke tests added with the fix, which go through every size class of both
// encoders (its 3 GB "larger than 2GB" test is left to Redis's large-memory run).
#[tokio::test]
async fn cve_2022_24834_cjson_and_cmsgpack_encode_every_size_class() {
    let mut pair = Pair::start().await;
    all_eval_then_ping(
        &mut pair,
        &[
            r#"
            local some_map = {s1="Some string", n1=100, a1={"Some","String","Array"},
                              nil1=nil, b1=true, b2=false}
            local encoded = cjson.encode(some_map)
            local decoded = cjson.decode(encoded)
            assert(table.concat(some_map) == table.concat(decoded))
            cjson.encode_keep_buffer(false)
            encoded = cjson.encode(some_map)
            decoded = cjson.decode(encoded)
            assert(table.concat(some_map) == table.concat(decoded))
            local table1 = {one="one", [1]="one"}
            encoded = cjson.encode(table1)
            decoded = cjson.decode(encoded)
            assert(decoded["one"] == table1["one"])
            assert(decoded["1"] == table1[1])
            local array1 = {[1]="one", [2]="two"}
            encoded = cjson.encode(array1)
            decoded = cjson.decode(encoded)
            assert(table.concat(array1) == table.concat(decoded))
            local invalid_map = {}
            invalid_map[false] = "false"
            local ok, encoded = pcall(cjson.encode, invalid_map)
            assert(ok == false)
            cjson.encode_max_depth(1)
            ok, encoded = pcall(cjson.encode, some_map)
            assert(ok == false)
            cjson.decode_max_depth(1)
            ok, decoded = pcall(cjson.decode, '{"obj": {"array": [1,2,3,4]}}')
            assert(ok == false)
            ok, encoded = pcall(cjson.encode, {num1=0/0})
            assert(ok == false)
            cjson.encode_invalid_numbers(true)
            ok, encoded = pcall(cjson.encode, {num1=0/0})
            assert(ok == true)
            cjson.decode_max_depth(1000)
            cjson.encode_max_depth(1000)
            cjson.encode_invalid_numbers(false)
            cjson.encode_keep_buffer(true)
            return 'ok'
            "#,
            r#"
            local str_lt_32 = string.rep("x", 30)
            local str_lt_255 = string.rep("x", 250)
            local str_lt_65535 = string.rep("x", 65530)
            local str_long = string.rep("x", 100000)
            local array_lt_15 = {1, 2, 3, 4, 5}
            local array_lt_65535 = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18}
            local array_big = {}
            for i=1, 100000 do array_big[i] = i end
            local map_lt_15 = {a=1, b=2}
            local map_big = {}
            for i=1, 100000 do map_big[tostring(i)] = i end
            local some_map = {
                s1=str_lt_32, s2=str_lt_255, s3=str_lt_65535, s4=str_long,
                d1=0.1, i1=1, i2=250, i3=65530, i4=100000, i5=2^40, i6=-1, i7=-120,
                i8=-32000, i9=-100000, i10=-3147483648,
                a1=array_lt_15, a2=array_lt_65535, a3=array_big,
                m1=map_lt_15, m2=map_big, b1=false, b2=true, n=nil
            }
            local encoded = cmsgpack.pack(some_map)
            local decoded = cmsgpack.unpack(encoded)
            assert(table.concat(some_map) == table.concat(decoded))
            local offset, decoded_one = cmsgpack.unpack_one(encoded, 0)
            assert(table.concat(some_map) == table.concat(decoded_one))
            assert(offset == -1)
            local encoded_multiple = cmsgpack.pack(str_lt_32, str_lt_255, str_lt_65535, str_long)
            local offset, obj = cmsgpack.unpack_limit(encoded_multiple, 1, 0)
            assert(obj == str_lt_32)
            offset, obj = cmsgpack.unpack_limit(encoded_multiple, 1, offset)
            assert(obj == str_lt_255)
            offset, obj = cmsgpack.unpack_limit(encoded_multiple, 1, offset)
            assert(obj == str_lt_65535)
            offset, obj = cmsgpack.unpack_limit(encoded_multiple, 1, offset)
            assert(obj == str_long)
            assert(offset == -1)
            return #encoded
            "#,
            "return #cjson.encode(string.rep('\\0', 1000000))",
            "return #cmsgpack.pack(string.rep('x', 70000), string.rep('y', 300))",
        ],
    )
    .await;
}

// CVE-2024-31449: bit.tohex with INT_MIN digits overflowed (Redis's test "lua bit.tohex bug").
#[tokio::test]
async fn cve_2024_31449_bit_tohex_of_int_min_digits() {
    let mut pair = Pair::start().await;
    let reply = eval_then_ping(&mut pair, "return bit.tohex(65535, -2147483648)").await;
    assert_eq!(reply, "bulk-string('\"0000FFFF\"')");
}

// CVE-2024-46981: a script left the collector in a state that lua_close then tripped over
// (Redis now collects fully before closing, on SCRIPT FLUSH). Redis's fix (its 342ee426a,
// Valkey's #1513: one `lua_gc(LUA_GCCOLLECT)` in scriptingRelease) came without a test, so
// the inputs are ours: scripts that stop the collector or leave a cycle half done, with
// libraries' objects alive, then SCRIPT FLUSH both ways, and the next scripts run. The
// advisory's class, a userdata whose `__gc` runs while the interpreter closes, needs
// `newproxy`, which 7.0.15 with its CVE-2025-46818 fix no longer offers (the first script).
#[tokio::test]
async fn cve_2024_46981_script_flush_after_the_collector_was_stopped_or_half_done() {
    let mut pair = Pair::start().await;
    eval_then_ping(
        &mut pair,
        "getmetatable(newproxy(true)).__gc = function() return 1 end return 0",
    )
    .await;
    for (script, flush) in [
        ("collectgarbage('stop') local t = {} for i = 1, 10000 do t[i] = {i} end return 1", "SYNC"),
        ("collectgarbage('step', 1) local t = {} for i = 1, 10000 do t[i] = cjson.decode('[1,2]') end return 1", "ASYNC"),
        ("collectgarbage('setpause', 1) collectgarbage('setstepmul', 1) local t = {} for i = 1, 10000 do t[i] = cmsgpack.pack(i) end return 1", "SYNC"),
        ("collectgarbage('stop') local s = {} for i = 1, 1000 do s[i] = loadstring('return ' .. i) end return 1", "ASYNC"),
    ] {
        let reply = eval_then_ping(&mut pair, script).await;
        eprintln!("{script}: {reply}");
        pair.same(&["SCRIPT", "FLUSH", flush]).await;
        all_eval_then_ping(
            &mut pair,
            &["return collectgarbage('count') > 0", "return cjson.encode({1, {a = 2}})"],
        )
        .await;
    }
}

// CVE-2025-46817: unpack's element count overflowed int (stock Lua 5.1.5 relied on signed
// overflow), pushing 2^31 values: SIGSEGV. Redis's regression test, "EVAL - Test table
// unpack with invalid indexes" (scripting.tcl, with the fix), then wider ranges of ours.
#[tokio::test]
async fn cve_2025_46817_unpack_counts_without_overflow() {
    let mut pair = Pair::start().await;
    let unpack_to_list = |i: &str, j: &str| {
        format!(
            "local function unpack_to_list(t, i, j)
               local n, v = select('#', unpack(t, i, j)), {{unpack(t, i, j)}}
               for i = 1, n do v[i] = v[i] or '_NIL_' end
               v.n = n
               return v
             end
             return unpack_to_list({{1,2,3}}, {i}, {j})"
        )
    };
    for (script, expected) in [
        (
            "return {unpack({1,2,3}, -2, 2147483647)}".to_string(),
            "too many results to unpack",
        ),
        (
            "return {unpack({1,2,3}, 0, 2147483647)}".to_string(),
            "too many results to unpack",
        ),
        (
            "return {unpack({1,2,3}, -2147483648, -2)}".to_string(),
            "too many results to unpack",
        ),
        ("return {unpack({1,2,3}, -1, -2)}".to_string(), "array([])"),
        ("return {unpack({1,2,3}, 1, -1)}".to_string(), "array([])"),
        (
            unpack_to_list("-1", "5"),
            "array([bulk-string('\"_NIL_\"'), bulk-string('\"_NIL_\"'), int(1), int(2), int(3), bulk-string('\"_NIL_\"'), bulk-string('\"_NIL_\"')])",
        ),
        (
            unpack_to_list("-2147483648", "-2147483646"),
            "array([bulk-string('\"_NIL_\"'), bulk-string('\"_NIL_\"'), bulk-string('\"_NIL_\"')])",
        ),
    ] {
        let reply = eval_then_ping(&mut pair, &script).await;
        assert!(reply.contains(expected), "{script}: {reply}");
    }
    all_eval_then_ping(
        &mut pair,
        &[
            "return {unpack({1,2,3}, -2147483648, 2147483647)}",
            "return {unpack({1,2,3}, 2147483647, -2147483648)}",
        ],
    )
    .await;
}

// CVE-2025-46818: a script could give basic types' metatables code that another user's script
// would then run. Redis's tests with the fix (scripting.tcl): "Try trick readonly table on
// basic types metatable" (each basic type's metatable is either absent or read-only), then
// "Test setfenv/getfenv/newproxy availability" under the default `lua-enable-deprecated-api
// no` (the three are gone); we have no such parameter, so its `yes` half is not run.
#[tokio::test]
async fn cve_2025_46818_basic_types_metatables_are_absent_or_read_only() {
    let mut pair = Pair::start().await;
    all_eval_then_ping(
        &mut pair,
        &[
            "getmetatable(nil).__index = function() return 1 end",
            "getmetatable('').__index = function() return 1 end",
            "getmetatable(123.222).__index = function() return 1 end",
            "getmetatable(true).__index = function() return 1 end",
            "getmetatable(function() return 1 end).__index = function() return 1 end",
            "getmetatable(coroutine.create(function() return 1 end)).__index = function() return 1 end",
            "local mt = getmetatable('') rawset(mt, '__index', {})",
            "setmetatable(getmetatable(''), {})",
            "getmetatable('').__index.upper = function() return 1 end",
            "return ('x'):upper()",
            "local f = function() return 1 end setfenv(f, {}) return 0",
            "local f = function() return 1 end getfenv(f) return 0",
            "getmetatable(newproxy(true)).__gc = function() return 1 end return 0",
        ],
    )
    .await;
}

// CVE-2025-46819: the lexer read out of bounds on crafted long strings and brackets (a
// separator's length in an int) and on an error before the first token (an unset token).
// Redis's tests with the fix (scripting.tcl, tagged large-memory): "JSON string encoding a
// string larger than 2GB", "Test long escape sequences for strings" (a 1 GB separator) and
// "Lua can parse string with too many new lines" (2 GB of newlines, "chunk has too many
// lines" with no "near" clause). Their scripts run here at 1/1024 of Redis's sizes, as
// Redis's own CI runs them only with --large-memory; LOCKSMITH_LARGE_MEMORY=1 runs Redis's
// sizes (about 12 GB on each server). Then long strings and comments of ours, unfinished,
// nested, with wrong or huge separators, through loadstring and as scripts of their own.
#[tokio::test]
async fn cve_2025_46819_long_strings_and_brackets_lex_within_bounds() {
    let mut pair = Pair::start().await;
    let (gb, mb, parts) = if std::env::var_os("LOCKSMITH_LARGE_MEMORY").is_some() {
        ("1024 * 1024 * 1024", "1024 * 1024", 2048)
    } else {
        ("1024 * 1024", "1024", 2)
    };
    let json = format!(
        "local s = string.rep('a', {gb})
         return #cjson.encode(s..s..s)"
    );
    let separator = format!(
        "local s = string.rep('=', {mb})
         local t = {{}} for i=1,1024 do t[i] = s end
         local sep = table.concat(t)
         collectgarbage('collect')
         local code = table.concat({{'return [',sep,'[x]',sep,']'}})
         collectgarbage('collect')
         local func = loadstring(code)
         return #func()"
    );
    let lines = format!(
        "local s = string.rep('\\n', 1024 * 1024)
         local t = {{}} for i=1,{parts} do t[#t+1] = s end
         local lines = table.concat(t)
         local fn, err = loadstring(lines)
         return err"
    );
    for script in [json, separator, lines] {
        let reply = eval_then_ping(&mut pair, &script).await;
        eprintln!("{script}: {}", &reply[..reply.len().min(200)]);
    }
    for chunk in [
        "return [[abc]]",
        "return [==[a]]b]=]c]==]",
        "return [[",
        "return [==[abc]=]",
        "return [=",
        "return [==x",
        "return [[a[[b]]",
        "--[[ unfinished comment",
        "--[==[ a ]] ]=] unfinished",
        "--[=x\nreturn 1",
        "return [[\r\n]]",
        "return [[\n\r]]",
        "x = ]]",
        "return '\\",
        "return \"\\z",
    ] {
        let quoted = chunk
            .replace('\\', "\\\\")
            .replace('\'', "\\'")
            .replace('\r', "\\r")
            .replace('\n', "\\n");
        let script = format!("local f, e = loadstring('{quoted}') return {{type(f), tostring(e)}}");
        eval_then_ping(&mut pair, &script).await;
        pair.same(&["EVAL", chunk, "0"]).await;
    }
    all_eval_then_ping(
        &mut pair,
        &[
            "local f, e = loadstring('return [' .. string.rep('=', 100000) .. '[x]' .. string.rep('=', 100000) .. ']') return {type(f), tostring(e)}",
            "local f, e = loadstring('return [' .. string.rep('=', 100000) .. 'x') return {type(f), tostring(e)}",
            "local f, e = loadstring('--[' .. string.rep('=', 100000) .. '[' .. string.rep(']', 100000)) return {type(f), tostring(e)}",
            "local f, e = loadstring(string.rep('[[', 1000)) return {type(f), tostring(e)}",
            "local f, e = loadstring('return [[' .. string.rep(']', 100000)) return {type(f), tostring(e)}",
        ],
    )
    .await;
}

// CVE-2025-49844: the parser did not anchor the chunk name, so a collection while it parsed
// freed it and the parser used it after (use-after-free, code execution). Redis's fix (its
// d5728cb57, the name pushed on the Lua stack in luaY_parser) came without a test, and the
// advisory publishes no input, so the inputs are ours: chunks compiled while the collector
// runs at every step, with fresh names, and big enough to collect.
#[tokio::test]
async fn cve_2025_49844_the_parser_keeps_the_chunk_name_alive() {
    let mut pair = Pair::start().await;
    all_eval_then_ping(
        &mut pair,
        &[
            "collectgarbage('setpause', 1) collectgarbage('setstepmul', 1000) \
             local n = 0 for i = 1, 300 do \
               local f = loadstring('return ' .. string.rep('1 + ', 200) .. i, 'chunk ' .. i .. string.rep('x', 40)) \
               n = n + f() end \
             collectgarbage('setpause', 200) collectgarbage('setstepmul', 200) return n",
            "local ok, e = pcall(loadstring, string.rep('x = 1 ', 100000), string.rep('n', 100)) \
             return {tostring(ok), type(e)}",
            "collectgarbage('setpause', 1) local r = {} for i = 1, 200 do \
               r[#r + 1] = select(2, loadstring('syntax error ' .. i, 'name' .. i)) end \
             collectgarbage('setpause', 200) return r[200]",
        ],
    )
    .await;
}
