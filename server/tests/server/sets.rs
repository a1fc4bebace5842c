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

/// Under `--compat valkey-8.1` a set takes Valkey 8.1's encodings by its rules (`t_set.c`):
/// intset, listpack (insertion order, removals shifting) and hashtable, with the conversions
/// between them (a non-integer added to a small intset, `set-max-listpack-entries` and
/// `-value`, `set-max-intset-entries`) and the size hints of SADD, SMOVE, the STORE commands
/// and SPOP; SMEMBERS, SSCAN, SRANDMEMBER with a count at least the set's size and DUMP
/// follow the listpack's order. Compared with valkey-server 8.1.8, order and bytes included
/// where Valkey's are deterministic; a hashtable's members are compared sorted.
#[tokio::test]
async fn valkey_sets_take_valkeys_encodings_and_order() {
    let mut pair = support::Pair::start_for(locksmith_server::Compat::Valkey81).await;
    if pair.real.is_none() {
        eprintln!("valkey-server not found: Valkey's set encodings compared with ours alone");
    }
    let strings: Vec<String> = (0..130).map(|i| format!("m{i}")).collect();
    let ints: Vec<String> = (0..515).map(|i| (i * 3 - 200).to_string()).collect();
    let mut script: Vec<Vec<String>> = Vec::new();
    let mut add = |args: &[&str]| script.push(args.iter().map(|s| s.to_string()).collect());
    add(&["SADD", "lp", "c", "a", "b", "10"]);
    add(&["SREM", "lp", "a"]);
    add(&["SADD", "lp", "a", "d"]);
    add(&["SADD", "is", "30", "-2", "7"]);
    add(&["SADD", "is", "x"]);
    add(&["SADD", "is2", "5", "1"]);
    add(&["SADD", "is2", "01"]);
    add(&["SADD", "long", "a", &"v".repeat(65)]);
    add(&["SADD", "grow", "a"]);
    // Valkey's size hints count duplicates: a table from the start.
    let mut sadd = vec!["SADD", "dups"];
    sadd.extend(vec!["x"; 200]);
    add(&sadd);
    add(&["SADD", "is_dups", "1"]);
    let mut sadd = vec!["SADD", "is_dups"];
    sadd.extend(vec!["2"; 600]);
    add(&sadd);
    let mut sadd = vec!["SADD", "lp128"];
    sadd.extend(strings[..128].iter().map(String::as_str));
    add(&sadd);
    let mut sadd = vec!["SADD", "lp129"];
    sadd.extend(strings[..128].iter().map(String::as_str));
    add(&sadd);
    add(&["SADD", "lp129", "one-more"]);
    let mut sadd = vec!["SADD", "hint129"];
    sadd.extend(strings[..129].iter().map(String::as_str));
    add(&sadd);
    let mut sadd = vec!["SADD", "is512"];
    sadd.extend(ints[..512].iter().map(String::as_str));
    add(&sadd);
    let mut sadd = vec!["SADD", "is513"];
    sadd.extend(ints[..513].iter().map(String::as_str));
    add(&sadd);
    let mut sadd = vec!["SADD", "is128x"];
    sadd.extend(ints[..128].iter().map(String::as_str));
    add(&sadd);
    add(&["SADD", "is128x", "x"]);
    let mut sadd = vec!["SADD", "is127x"];
    sadd.extend(ints[..127].iter().map(String::as_str));
    add(&sadd);
    add(&["SADD", "is127x", "x"]);
    add(&["SADD", "other", "b", "zz", "10", "c"]);
    add(&["SINTERSTORE", "inter", "lp", "other"]);
    add(&["SUNIONSTORE", "union", "lp", "other"]);
    add(&["SDIFFSTORE", "diff", "lp", "other"]);
    add(&["SADD", "nums", "3", "1", "2"]);
    add(&["SADD", "nums2", "2", "3", "9"]);
    add(&["SINTERSTORE", "inter_ints", "lp", "nums", "nums2"]);
    add(&["SUNIONSTORE", "union_ints", "nums2", "nums"]);
    add(&["SMOVE", "lp", "moved", "b"]);
    add(&["SMOVE", "nums", "moved_int", "1"]);
    add(&["CONFIG", "SET", "set-max-listpack-entries", "3"]);
    add(&["SADD", "cfg", "a", "b", "c"]);
    add(&["SADD", "cfg", "d"]);
    add(&["CONFIG", "SET", "set-max-listpack-entries", "128"]);
    add(&["CONFIG", "SET", "set-max-intset-entries", "4"]);
    add(&["SADD", "cfg_int", "1", "2", "3", "4", "5"]);
    add(&["CONFIG", "SET", "set-max-intset-entries", "512"]);
    for args in &script {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        pair.same(&args).await;
    }
    // Random members popped, one left in a new set (a listpack: `spopWithCountCommand`'s
    // case 3).
    for con in [&mut pair.ours_con]
        .into_iter()
        .chain(pair.real_con.as_mut())
    {
        support::run(con, &["SPOP", "hint129", "128"]).await;
    }
    // Listpacks and intsets: their order and their bytes.
    for key in [
        "lp",
        "is",
        "is2",
        "grow",
        "lp128",
        "is512",
        "is127x",
        "other",
        "inter",
        "union",
        "diff",
        "inter_ints",
        "union_ints",
        "moved",
        "moved_int",
        "cfg_int",
    ] {
        pair.same(&["OBJECT", "ENCODING", key]).await;
        pair.same(&["SMEMBERS", key]).await;
        pair.same(&["SSCAN", key, "0"]).await;
        pair.same(&["SRANDMEMBER", key, "1000"]).await;
        pair.same(&["DUMP", key]).await;
    }
    // Hashtables (and SPOP's rebuilt listpack, whose members are drawn at random).
    for key in [
        "long", "lp129", "is513", "is128x", "cfg", "hint129", "dups", "is_dups",
    ] {
        pair.same(&["OBJECT", "ENCODING", key]).await;
        pair.same(&["SCARD", key]).await;
    }
    for key in ["long", "lp129", "is513", "is128x", "cfg"] {
        let ours = query(&mut pair.ours_con, &["SMEMBERS", key]).await;
        if let Some(real_con) = &mut pair.real_con {
            assert_eq!(ours, query(real_con, &["SMEMBERS", key]).await, "{key}");
        }
    }
    // Its own payload restores to the same set under Valkey's target.
    let payload: Vec<u8> = support::cmd(&["DUMP", "lp"])
        .query_async(&mut pair.ours_con)
        .await
        .unwrap();
    let restored: String = redis::cmd("RESTORE")
        .arg("lp_back")
        .arg(0)
        .arg(payload)
        .query_async(&mut pair.ours_con)
        .await
        .unwrap();
    assert_eq!(restored, "OK");
    let back = support::run(&mut pair.ours_con, &["SMEMBERS", "lp_back"]).await;
    assert_eq!(
        back,
        support::run(&mut pair.ours_con, &["SMEMBERS", "lp"]).await
    );
}

/// A set keeps the encoding Redis gave it: a hashtable it became (past
/// `set-max-intset-entries`, or for a string) stays one when it is back to a few integers, and
/// SINTERSTORE's, SUNIONSTORE's and SMOVE's new sets start as Redis starts them. Compared with
/// redis-server 7.0.15.
#[tokio::test]
async fn a_set_keeps_its_encoding_as_redis_does() {
    let mut pair = support::Pair::start().await;
    let ints: Vec<String> = (1..=600).map(|i| i.to_string()).collect();
    let mut sadd = vec!["SADD", "big"];
    sadd.extend(ints.iter().map(String::as_str));
    pair.same(&sadd).await;
    let mut srem = vec!["SREM", "big"];
    srem.extend(ints[3..].iter().map(String::as_str));
    pair.same(&srem).await;
    // No size hint in Redis 7.0: 600 copies of one integer make an intset of one.
    let ones = vec!["1"; 600];
    for key in ["ones", "big_after"] {
        let mut sadd = vec!["SADD", key];
        sadd.extend(ones.iter().copied());
        pair.same(&sadd).await;
        pair.same(&["OBJECT", "ENCODING", key]).await;
    }
    pair.all_same(&[
        &["OBJECT", "ENCODING", "big"],
        &["SADD", "mixed", "a", "1", "2"],
        &["SREM", "mixed", "a"],
        &["OBJECT", "ENCODING", "mixed"],
        &["SINTERSTORE", "inter", "mixed", "big"],
        &["OBJECT", "ENCODING", "inter"],
        &["SMEMBERS", "inter"],
        &["SUNIONSTORE", "union", "mixed", "big"],
        &["OBJECT", "ENCODING", "union"],
        &["SMEMBERS", "union"],
        &["SMOVE", "mixed", "moved", "1"],
        &["OBJECT", "ENCODING", "moved"],
    ])
    .await;
    for key in ["big", "mixed"] {
        let ours = query(&mut pair.ours_con, &["SMEMBERS", key]).await;
        if let Some(real_con) = &mut pair.real_con {
            assert_eq!(ours, query(real_con, &["SMEMBERS", key]).await, "{key}");
        }
    }
}
