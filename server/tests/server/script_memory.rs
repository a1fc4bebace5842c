//! The Lua interpreter's memory bound (`Config::lua_memory_limit`): a script that allocates
//! without end is stopped with a clear error, whatever it does to hide (pcall, coroutines, one
//! huge `string.rep`), the memory is given back, and the server keeps serving; scripts of
//! normal sizes are never refused.

use locksmith_testkit as support;

use locksmith_server::{Server, ServerHandle};
use support::{patient_conn as conn, run};

const LIMIT: u64 = 64 << 20;

async fn bounded() -> ServerHandle {
    Server::builder()
        .lua_memory_limit(LIMIT)
        .start()
        .await
        .unwrap()
}

async fn lua_memory(con: &mut redis::aio::MultiplexedConnection) -> u64 {
    let info: String = redis::cmd("INFO")
        .arg("memory")
        .query_async(con)
        .await
        .unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix("used_memory_lua:"))
        .and_then(|v| v.trim().parse().ok())
        .expect("INFO memory has used_memory_lua")
}

#[tokio::test]
async fn runaway_scripts_are_stopped_and_the_memory_comes_back() {
    let server = bounded().await;
    let mut con = conn(&server.url()).await;
    let runaways = [
        // A table that grows without end.
        "local t = {} for i = 1, 1e9 do t[i] = string.rep('x', 1000) .. i end return #t",
        // Hidden behind pcall, keeping what it made.
        "local keep = {} \
         local ok = pcall(function() while true do keep[#keep + 1] = string.rep('y', 10000) .. #keep end end) \
         return 'survived'",
        // In a coroutine.
        "return coroutine.wrap(function() local t = {} while true do t[#t + 1] = string.rep('z', 1000) .. #t end end)()",
        // One call asking for more than the bound at once.
        "return #string.rep('x', 1e9)",
        // Growing strings by concatenation.
        "local s = 'x' while true do s = s .. s end",
    ];
    for script in runaways {
        let reply = run(&mut con, &["EVAL", script, "0"]).await;
        assert!(
            reply.contains("reached its memory limit"),
            "{script}: {reply}"
        );
        assert_eq!(run(&mut con, &["PING"]).await, "simple-string(\"PONG\")");
        let held = lua_memory(&mut con).await;
        assert!(held < LIMIT / 4, "{script}: Lua still holds {held} bytes");
    }
    // The interpreter is usable afterwards, with its cache and state intact.
    assert_eq!(
        run(&mut con, &["EVAL", "return 1 + 1", "0"]).await,
        "int(2)"
    );
}

#[tokio::test]
async fn scripts_of_normal_sizes_run_under_the_bound() {
    let server = bounded().await;
    let mut con = conn(&server.url()).await;
    // Tens of megabytes of garbage over the run, little of it live at once.
    let churn = "local n = 0 for i = 1, 200000 do local s = string.rep('x', 100) .. i n = n + #s end return n";
    assert_eq!(run(&mut con, &["EVAL", churn, "0"]).await, "int(21088895)");
    // A large live table (about 8 MB).
    let table = "local t = {} for i = 1, 100000 do t[i] = 'value' .. i end return #t";
    assert_eq!(run(&mut con, &["EVAL", table, "0"]).await, "int(100000)");
    // Big replies through redis.call are converted outside the bound's reach.
    let value = "v".repeat(1 << 20);
    for i in 0..40 {
        run(&mut con, &["SET", &format!("big{i}"), &value]).await;
    }
    let mget = "local keys = {} for i = 0, 39 do keys[#keys + 1] = 'big' .. i end \
                return #redis.call('mget', unpack(keys))";
    assert_eq!(run(&mut con, &["EVAL", mget, "0"]).await, "int(40)");
}

#[tokio::test]
async fn the_default_bound_leaves_redis_sized_scripts_alone() {
    let server = support::start().await;
    let mut con = conn(&server.url()).await;
    // 200 MB live: far past what lock scripts use, well under the 1 GiB default.
    let big = "local t = {} for i = 1, 200 do t[i] = string.rep(string.char(65 + i % 26), 1048576) end return #t";
    assert_eq!(run(&mut con, &["EVAL", big, "0"]).await, "int(200)");
}
