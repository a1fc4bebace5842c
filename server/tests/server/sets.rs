//! Set commands compared with real Redis. Integer sets (intsets in Redis) must match
//! exactly, order included; other set replies are compared sorted.

use locksmith_testkit as support;

use redis::Value;

/// Sorts the members of an array/set reply, nested arrays too ([cursor, members]).
fn sorted(v: Value) -> Value {
    match v {
        Value::Array(items) => {
            let mut items: Vec<Value> = items.into_iter().map(sorted).collect();
            items.sort_by_key(|i| format!("{i:?}"));
            Value::Array(items)
        }
        Value::Set(mut items) => {
            items.sort_by_key(|i| format!("{i:?}"));
            Value::Set(items)
        }
        other => other,
    }
}

async fn query(con: &mut redis::aio::MultiplexedConnection, args: &[&str]) -> String {
    let reply: redis::RedisResult<Value> = support::cmd(args).query_async(con).await;
    match reply {
        Ok(v) => format!("{:?}", sorted(v)),
        Err(e) => format!("ERROR {}", support::error_text(&e)),
    }
}

/// Runs `args` on both servers and compares the replies with set members sorted.
async fn same_sorted(pair: &mut support::Pair, args: &[&str]) -> String {
    let ours = query(&mut pair.ours_con, args).await;
    if let Some(real) = &mut pair.real_con {
        assert_eq!(ours, query(real, args).await, "reply to {args:?} differs");
    }
    ours
}

#[tokio::test]
async fn integer_sets_reply_in_intset_order_like_redis() {
    let mut pair = support::Pair::start().await;
    pair.all_same(&[
        &["SADD", "s", "3", "1", "2", "10", "-5", "1"],
        &["SMEMBERS", "s"],
        &["SSCAN", "s", "0"],
        &["SSCAN", "s", "0", "COUNT", "1", "MATCH", "1*"],
        &["SADD", "t", "2", "3", "4", "100"],
        &["SINTER", "s", "t"],
        &["SUNION", "s", "t"],
        &["SDIFF", "s", "t"],
        &["SRANDMEMBER", "s", "100"],
        &["SRANDMEMBER", "s", "5"],
        &["SPOP", "s", "100"],
        &["EXISTS", "s"],
    ])
    .await;
}

#[tokio::test]
async fn membership_and_edits_match_redis() {
    let mut pair = support::Pair::start().await;
    pair.all_same(&[
        &["SADD", "s", "a", "b", "c"],
        &["SADD", "s", "a", "d"],
        &["SCARD", "s"],
        &["SCARD", "missing"],
        &["SISMEMBER", "s", "a"],
        &["SISMEMBER", "s", "z"],
        &["SISMEMBER", "missing", "a"],
        &["SMISMEMBER", "s", "a", "z", "d"],
        &["SMISMEMBER", "missing", "a"],
        &["SREM", "s", "a", "z"],
        &["SREM", "missing", "a"],
        &["SMOVE", "s", "t", "b"],
        &["SMOVE", "s", "t", "b"],
        &["SMOVE", "missing", "t", "b"],
        &["SMOVE", "s", "s", "c"],
        &["SMOVE", "s", "s", "zz"],
        &["SMEMBERS", "t"],
        &["SREM", "s", "c", "d"],
        &["EXISTS", "s"],
        &["SET", "str", "v"],
        &["SMOVE", "t", "str", "b"],
        &["SMOVE", "str", "t", "b"],
        &["SPOP", "missing"],
        &["SPOP", "missing", "2"],
        &["SPOP", "missing", "0"],
        &["SPOP", "t", "0"],
        &["SPOP", "t", "-1"],
        &["SPOP", "t", "x"],
        &["SPOP", "t", "1", "2"],
        &["SRANDMEMBER", "missing"],
        &["SRANDMEMBER", "missing", "2"],
        &["SRANDMEMBER", "missing", "-2"],
        &["SRANDMEMBER", "t", "x"],
        &["SRANDMEMBER", "t", "-3"],
        &["SPOP", "t"],
        &["EXISTS", "t"],
    ])
    .await;
}

#[tokio::test]
async fn algebra_and_stores_match_redis() {
    let mut pair = support::Pair::start().await;
    for args in [
        &["SADD", "a", "x", "y", "z", "1"][..],
        &["SADD", "b", "y", "z", "w"],
        &["SADD", "c", "z", "q"],
        &["SINTER", "a", "b"],
        &["SINTER", "a", "b", "c"],
        &["SINTER", "a", "missing"],
        &["SUNION", "a", "b", "missing"],
        &["SDIFF", "a", "b"],
        &["SDIFF", "a", "missing", "c"],
        &["SINTERSTORE", "d", "a", "b"],
        &["SMEMBERS", "d"],
        &["SUNIONSTORE", "d", "a", "c"],
        &["SMEMBERS", "d"],
        &["SDIFFSTORE", "d", "a", "b", "c"],
        &["SMEMBERS", "d"],
        &["SINTERSTORE", "d", "a", "missing"],
        &["EXISTS", "d"],
        &["SINTERCARD", "2", "a", "b"],
        &["SINTERCARD", "2", "a", "b", "LIMIT", "1"],
        &["SINTERCARD", "2", "a", "b", "LIMIT", "0"],
        &["SINTERCARD", "1", "a", "LIMIT", "2", "LIMIT", "3"],
        &["SINTERCARD", "0", "a"],
        &["SINTERCARD", "x", "a"],
        &["SINTERCARD", "3", "a", "b"],
        &["SINTERCARD", "1", "a", "LIMIT", "-1"],
        &["SINTERCARD", "1", "a", "LIMIT", "x"],
        &["SINTERCARD", "1", "a", "FOO", "1"],
        &["SET", "str", "v"],
        &["SINTER", "a", "str"],
        &["SINTER", "missing", "str"],
        &["SUNION", "a", "str"],
        &["SDIFF", "str", "a"],
        &["SINTERSTORE", "d", "str"],
        &["SINTERCARD", "1", "str"],
        &["SMEMBERS", "a"],
        &["SSCAN", "a", "0", "COUNT", "100"],
        &["ZUNIONSTORE", "u", "2", "a", "b"],
        &["ZRANGE", "u", "0", "-1", "WITHSCORES"],
    ] {
        same_sorted(&mut pair, args).await;
    }
}

#[tokio::test]
async fn spop_and_srandmember_draw_members_of_the_set() {
    let server = support::start().await;
    let mut con = support::conn(&server.url()).await;
    let members: Vec<String> = (0..20).map(|i| format!("m{i}")).collect();
    let _: i64 = redis::cmd("SADD")
        .arg("s")
        .arg(&members)
        .query_async(&mut con)
        .await
        .unwrap();
    let picked: Vec<String> = redis::cmd("SRANDMEMBER")
        .arg("s")
        .arg(5)
        .query_async(&mut con)
        .await
        .unwrap();
    assert_eq!(picked.len(), 5);
    let distinct: std::collections::HashSet<_> = picked.iter().collect();
    assert_eq!(distinct.len(), 5, "a positive count gives distinct members");
    let repeated: Vec<String> = redis::cmd("SRANDMEMBER")
        .arg("s")
        .arg(-50)
        .query_async(&mut con)
        .await
        .unwrap();
    assert_eq!(
        repeated.len(),
        50,
        "a negative count gives exactly |count| members"
    );
    assert!(repeated.iter().all(|m| members.contains(m)));
    let popped: Vec<String> = redis::cmd("SPOP")
        .arg("s")
        .arg(7)
        .query_async(&mut con)
        .await
        .unwrap();
    assert_eq!(popped.len(), 7);
    let left: i64 = redis::cmd("SCARD")
        .arg("s")
        .query_async(&mut con)
        .await
        .unwrap();
    assert_eq!(left, 13);
    for m in &popped {
        let is: i64 = redis::cmd("SISMEMBER")
            .arg("s")
            .arg(m)
            .query_async(&mut con)
            .await
            .unwrap();
        assert_eq!(is, 0, "{m} was popped");
    }
}

#[tokio::test]
async fn set_commands_on_other_types_answer_wrongtype() {
    let mut pair = support::Pair::start().await;
    pair.same(&["SET", "s", "v"]).await;
    for args in [
        &["SADD", "s", "a"][..],
        &["SREM", "s", "a"],
        &["SMEMBERS", "s"],
        &["SISMEMBER", "s", "a"],
        &["SMISMEMBER", "s", "a"],
        &["SCARD", "s"],
        &["SPOP", "s"],
        &["SRANDMEMBER", "s"],
        &["SSCAN", "s", "0"],
        &["SUNIONSTORE", "d", "s"],
        &["RPUSH", "l", "x"],
        &["SADD", "l", "a"],
    ] {
        pair.same(args).await;
    }
}

#[tokio::test]
async fn set_replies_in_resp3_match_redis() {
    let mut pair = support::Resp3Pair::start().await;
    pair.all_same(&[
        &["SADD", "s", "3", "1", "2"],
        &["SMEMBERS", "s"],
        &["SINTER", "s", "s"],
        &["SUNION", "s", "missing"],
        &["SMEMBERS", "missing"],
        &["SPOP", "missing", "1"],
        &["SRANDMEMBER", "s", "10"],
        &["SPOP", "s", "5"],
    ])
    .await;
}
