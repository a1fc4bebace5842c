//! List commands compared with real Redis: pushes, pops with counts, ranges, indexes, LSET,
//! LINSERT, LREM, LTRIM, LPOS, LMOVE, LMPOP, errors and WRONGTYPE.

use locksmith_testkit as support;

#[tokio::test]
async fn pushes_pops_and_counts_match_redis() {
    let mut pair = support::Pair::start().await;
    pair.all_same(&[
        &["LPUSH", "l", "a", "b", "c"],
        &["RPUSH", "l", "d", "e"],
        &["LRANGE", "l", "0", "-1"],
        &["LPUSHX", "missing", "x"],
        &["RPUSHX", "missing", "x"],
        &["EXISTS", "missing"],
        &["LPUSHX", "l", "z"],
        &["RPUSHX", "l", "y", "w"],
        &["LLEN", "l"],
        &["LLEN", "missing"],
        &["LPOP", "l"],
        &["RPOP", "l"],
        &["LPOP", "l", "2"],
        &["RPOP", "l", "1"],
        &["LPOP", "l", "0"],
        &["LPOP", "missing", "0"],
        &["LPOP", "missing"],
        &["LPOP", "missing", "3"],
        &["LPOP", "l", "-1"],
        &["LPOP", "l", "x"],
        &["LPOP", "l", "1", "2"],
        &["RPOP", "l", "100"],
        &["EXISTS", "l"],
        &["LPUSH", "l"],
        &["TYPE", "l"],
    ])
    .await;
}

#[tokio::test]
async fn ranges_indexes_and_edits_match_redis() {
    let mut pair = support::Pair::start().await;
    pair.all_same(&[
        &["RPUSH", "l", "a", "b", "c", "b", "a", "b"],
        &["LRANGE", "l", "0", "-1"],
        &["LRANGE", "l", "1", "2"],
        &["LRANGE", "l", "-2", "100"],
        &["LRANGE", "l", "5", "1"],
        &["LRANGE", "l", "-100", "-50"],
        &["LRANGE", "l", "x", "1"],
        &["LRANGE", "missing", "0", "-1"],
        &["LINDEX", "l", "0"],
        &["LINDEX", "l", "-1"],
        &["LINDEX", "l", "6"],
        &["LINDEX", "l", "x"],
        &["LINDEX", "missing", "0"],
        &["LSET", "l", "0", "A"],
        &["LSET", "l", "-1", "B"],
        &["LSET", "l", "6", "x"],
        &["LSET", "l", "x", "x"],
        &["LSET", "missing", "0", "x"],
        &["LINSERT", "l", "BEFORE", "c", "x"],
        &["LINSERT", "l", "after", "c", "y"],
        &["LINSERT", "l", "after", "nope", "y"],
        &["LINSERT", "l", "middle", "c", "y"],
        &["LINSERT", "missing", "before", "c", "y"],
        &["LRANGE", "l", "0", "-1"],
        &["LREM", "l", "1", "b"],
        &["LREM", "l", "-1", "b"],
        &["LREM", "l", "0", "nothing"],
        &["RPUSH", "l", "q", "q", "q"],
        &["LREM", "l", "0", "q"],
        &["LREM", "l", "x", "q"],
        &["LREM", "missing", "0", "q"],
        &["LRANGE", "l", "0", "-1"],
        &["LTRIM", "l", "1", "-2"],
        &["LRANGE", "l", "0", "-1"],
        &["LTRIM", "l", "x", "1"],
        &["LTRIM", "missing", "0", "1"],
        &["LTRIM", "l", "5", "1"],
        &["EXISTS", "l"],
    ])
    .await;
}

#[tokio::test]
async fn lpos_matches_redis() {
    let mut pair = support::Pair::start().await;
    pair.all_same(&[
        &["RPUSH", "l", "a", "b", "c", "1", "2", "3", "c", "c"],
        &["LPOS", "l", "c"],
        &["LPOS", "l", "c", "RANK", "2"],
        &["LPOS", "l", "c", "RANK", "-1"],
        &["LPOS", "l", "c", "RANK", "-2", "COUNT", "0"],
        &["LPOS", "l", "c", "COUNT", "2"],
        &["LPOS", "l", "c", "COUNT", "0"],
        &["LPOS", "l", "c", "COUNT", "0", "MAXLEN", "7"],
        &["LPOS", "l", "c", "MAXLEN", "2"],
        &["LPOS", "l", "c", "RANK", "5"],
        &["LPOS", "l", "nope"],
        &["LPOS", "l", "nope", "COUNT", "1"],
        &["LPOS", "missing", "c"],
        &["LPOS", "missing", "c", "COUNT", "1"],
        &["LPOS", "l", "c", "RANK", "0"],
        &["LPOS", "l", "c", "COUNT", "-1"],
        &["LPOS", "l", "c", "MAXLEN", "-1"],
        &["LPOS", "l", "c", "RANK", "x"],
        &["LPOS", "l", "c", "RANK"],
        &["LPOS", "l", "c", "FOO", "1"],
    ])
    .await;
}

#[tokio::test]
async fn lmove_rpoplpush_and_lmpop_match_redis() {
    let mut pair = support::Pair::start().await;
    pair.all_same(&[
        &["RPUSH", "src", "1", "2", "3"],
        &["LMOVE", "src", "dst", "LEFT", "RIGHT"],
        &["LMOVE", "src", "dst", "right", "left"],
        &["LRANGE", "dst", "0", "-1"],
        &["LMOVE", "src", "dst", "up", "left"],
        &["LMOVE", "missing", "dst", "LEFT", "LEFT"],
        &["RPOPLPUSH", "src", "dst"],
        &["EXISTS", "src"],
        &["RPOPLPUSH", "dst", "dst"],
        &["LRANGE", "dst", "0", "-1"],
        &["RPUSH", "one", "x"],
        &["LMOVE", "one", "one", "LEFT", "RIGHT"],
        &["LRANGE", "one", "0", "-1"],
        &["SET", "str", "v"],
        &["LMOVE", "dst", "str", "LEFT", "LEFT"],
        &["LMOVE", "str", "dst", "LEFT", "LEFT"],
        &["LMOVE", "missing", "str", "LEFT", "LEFT"],
        &["LRANGE", "dst", "0", "-1"],
        &["LMPOP", "2", "missing", "dst", "LEFT"],
        &["LMPOP", "2", "missing", "dst", "RIGHT", "COUNT", "10"],
        &["LMPOP", "1", "missing", "LEFT"],
        &["LMPOP", "0", "k", "LEFT"],
        &["LMPOP", "-1", "k", "LEFT"],
        &["LMPOP", "x", "k", "LEFT"],
        &["LMPOP", "1", "k"],
        &["LMPOP", "2", "k", "LEFT"],
        &["LMPOP", "1", "k", "UP"],
        &["LMPOP", "1", "k", "LEFT", "COUNT", "0"],
        &["LMPOP", "1", "k", "LEFT", "COUNT", "x"],
        &["LMPOP", "1", "k", "LEFT", "COUNT", "1", "COUNT", "2"],
        &["LMPOP", "1", "k", "LEFT", "COUNT"],
        &["LMPOP", "1", "str", "LEFT"],
    ])
    .await;
}

#[tokio::test]
async fn list_commands_on_other_types_answer_wrongtype() {
    let mut pair = support::Pair::start().await;
    pair.same(&["SET", "s", "v"]).await;
    for args in [
        &["LPUSH", "s", "x"][..],
        &["RPUSH", "s", "x"],
        &["LPUSHX", "s", "x"],
        &["RPUSHX", "s", "x"],
        &["LPOP", "s"],
        &["RPOP", "s", "2"],
        &["LLEN", "s"],
        &["LRANGE", "s", "0", "1"],
        &["LINDEX", "s", "0"],
        &["LSET", "s", "0", "x"],
        &["LINSERT", "s", "BEFORE", "a", "b"],
        &["LREM", "s", "0", "x"],
        &["LTRIM", "s", "0", "1"],
        &["LPOS", "s", "x"],
        &["BLPOP", "missing", "s", "1"],
        &["BRPOP", "s", "1"],
        &["BLMOVE", "s", "d", "LEFT", "LEFT", "1"],
        &["BLMPOP", "1", "1", "s", "LEFT"],
    ] {
        pair.same(args).await;
    }
}

#[tokio::test]
async fn list_replies_in_resp3_match_redis() {
    let mut pair = support::Resp3Pair::start().await;
    pair.all_same(&[
        &["RPUSH", "l", "a", "b", "c"],
        &["LRANGE", "l", "0", "-1"],
        &["LPOP", "missing"],
        &["LPOP", "missing", "2"],
        &["LPOP", "l", "2"],
        &["LMPOP", "1", "l", "LEFT"],
        &["LMPOP", "1", "l", "LEFT"],
        &["LPOS", "missing", "x"],
        &["BLPOP", "missing", "0.01"],
    ])
    .await;
}

#[tokio::test]
async fn sort_matches_redis() {
    let mut pair = support::Pair::start().await;
    pair.all_same(&[
        &["RPUSH", "l", "3", "1", "2", "10", "1.5"],
        &["SORT", "l"],
        &["SORT", "l", "DESC"],
        &["SORT", "l", "ALPHA"],
        &["SORT", "l", "ALPHA", "DESC"],
        &["SORT", "l", "LIMIT", "1", "2"],
        &["SORT", "l", "LIMIT", "-5", "2"],
        &["SORT", "l", "LIMIT", "10", "2"],
        &["SORT", "l", "LIMIT", "0", "-1"],
        &["SORT", "l", "LIMIT", "x", "1"],
        &["SORT", "l", "LIMIT", "1"],
        &["SORT", "l", "BY", "nosort"],
        &["SORT", "l", "BY", "nosort", "DESC"],
        &["SORT", "l", "BY", "nosort", "LIMIT", "1", "2"],
        &["SORT", "l", "BY", "nosort", "DESC", "LIMIT", "1", "2"],
        &["MSET", "w_3", "1", "w_1", "5", "w_2", "2", "w_10", "x"],
        &["SORT", "l", "BY", "w_*"],
        &["SORT", "l", "BY", "w_*", "ALPHA"],
        &["DEL", "w_10"],
        &["SORT", "l", "BY", "w_*"],
        &["SORT", "l", "BY", "w_*", "GET", "#", "GET", "w_*"],
        &["HSET", "h_1", "f", "one"],
        &["HSET", "h_2", "f", "two"],
        &["SORT", "l", "GET", "h_*->f", "GET", "#"],
        &["SORT", "l", "BY", "h_*->f", "ALPHA", "GET", "h_*->f"],
        &["SORT", "l", "GET", "nostar"],
        &["SORT", "l", "STORE", "dst"],
        &["LRANGE", "dst", "0", "-1"],
        &["SORT", "l", "GET", "w_*", "STORE", "dst"],
        &["LRANGE", "dst", "0", "-1"],
        &["SORT", "missing", "STORE", "dst"],
        &["EXISTS", "dst"],
        &["SADD", "s", "b", "a", "c"],
        &["SORT", "s", "ALPHA"],
        &["SORT", "s", "BY", "nosort", "STORE", "sdst"],
        &["LRANGE", "sdst", "0", "-1"],
        &["ZADD", "z", "3", "c", "1", "a", "2", "b"],
        &["SORT", "z", "BY", "nosort"],
        &["SORT", "z", "BY", "nosort", "DESC", "LIMIT", "0", "2"],
        &["SORT", "z", "ALPHA", "DESC"],
        &["SORT", "z"],
        &["RPUSH", "bad", "a", "1"],
        &["SORT", "bad"],
        &["RPUSH", "spaces", " 2", "", "1"],
        &["SORT", "spaces"],
        &["SET", "str", "x"],
        &["SORT", "str"],
        &["SORT", "l", "BOGUS"],
        &["SORT_RO", "l", "DESC"],
        &["SORT_RO", "l", "STORE", "x"],
        &["SORT", "l", "STORE"],
    ])
    .await;
}

/// Under `--compat valkey-8.1` a small list is a `listpack` and becomes a `quicklist` as
/// Valkey 8.1 converts it (`t_list.c`'s `listTypeTryConversion*`): before a push, LINSERT or
/// LSET would take it past one quicklist node under `list-max-listpack-size` (by bytes or by
/// count), and back once pops, LREM, LTRIM, LSET or LMOVE leave it within half of that; a
/// list built by RESTORE or SORT ... STORE takes the smaller encoding it fits. OBJECT
/// ENCODING compared with valkey-server 8.1.8 after each step; under the default target every
/// list stays a quicklist, as in redis-server 7.0.15.
#[tokio::test]
async fn valkey_lists_convert_between_listpack_and_quicklist_as_valkey() {
    use locksmith_server::Compat;
    let big = "x".repeat(1000);
    let mid = "y".repeat(300);
    let hundred: Vec<String> = (0..100).map(|i| format!("e{i}")).collect();
    for compat in [Compat::Valkey81, Compat::Redis70] {
        let mut pair = support::Pair::start_for(compat).await;
        if pair.real.is_none() {
            eprintln!("{compat}'s reference not found: list encodings compared with ours alone");
        }
        let mut script: Vec<Vec<String>> = Vec::new();
        let mut add = |args: &[&str]| script.push(args.iter().map(|s| s.to_string()).collect());
        add(&["RPUSH", "l", "a", "b"]);
        add(&["OBJECT", "ENCODING", "l"]);
        for _ in 0..8 {
            add(&["RPUSH", "l", &big]);
            add(&["OBJECT", "ENCODING", "l"]);
        }
        for _ in 0..7 {
            add(&["RPOP", "l"]);
            add(&["OBJECT", "ENCODING", "l"]);
        }
        add(&["LSET", "l", "0", &big]);
        add(&["OBJECT", "ENCODING", "l"]);
        add(&["LINSERT", "l", "BEFORE", "missing-pivot", &big]);
        add(&["OBJECT", "ENCODING", "l"]);
        add(&["LINSERT", "l", "AFTER", "b", &big]);
        add(&["OBJECT", "ENCODING", "l"]);
        add(&["LREM", "l", "0", &big]);
        add(&["OBJECT", "ENCODING", "l"]);
        add(&["LLEN", "l"]);
        add(&[
            "RPUSH", "m", &big, &big, &big, &big, &big, &big, &big, &big, &big,
        ]);
        add(&["OBJECT", "ENCODING", "m"]);
        add(&["LTRIM", "m", "0", "2"]);
        add(&["OBJECT", "ENCODING", "m"]);
        add(&["LTRIM", "m", "0", "1"]);
        add(&["OBJECT", "ENCODING", "m"]);
        for _ in 0..20 {
            add(&["LPUSH", "n", &mid]);
        }
        add(&["OBJECT", "ENCODING", "n"]);
        for _ in 0..8 {
            add(&["LMOVE", "n", "dst", "LEFT", "RIGHT"]);
            add(&["OBJECT", "ENCODING", "n"]);
            add(&["OBJECT", "ENCODING", "dst"]);
        }
        add(&["CONFIG", "SET", "list-max-listpack-size", "4"]);
        let mut rpush = vec!["RPUSH", "c"];
        rpush.extend(hundred[..4].iter().map(String::as_str));
        add(&rpush);
        add(&["OBJECT", "ENCODING", "c"]);
        add(&["RPUSH", "c", "one-more"]);
        add(&["OBJECT", "ENCODING", "c"]);
        add(&["RPOP", "c", "3"]);
        add(&["OBJECT", "ENCODING", "c"]);
        add(&["RPUSH", "sorted", "3", "1", "2"]);
        add(&["SORT", "sorted", "STORE", "sorted_out"]);
        add(&["OBJECT", "ENCODING", "sorted_out"]);
        let mut rpush = vec!["RPUSH", "long_src"];
        rpush.extend(hundred.iter().map(String::as_str));
        add(&rpush);
        add(&["SORT", "long_src", "ALPHA", "STORE", "long_out"]);
        add(&["OBJECT", "ENCODING", "long_out"]);
        add(&["CONFIG", "SET", "list-max-listpack-size", "-2"]);
        for args in &script {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            pair.same(&args).await;
        }
        // RESTORE of a small list's payload takes the encoding it fits.
        let payload: Vec<u8> = support::cmd(&["DUMP", "sorted"])
            .query_async(&mut pair.ours_con)
            .await
            .unwrap();
        for con in [&mut pair.ours_con]
            .into_iter()
            .chain(pair.real_con.as_mut())
        {
            let _: () = redis::cmd("RESTORE")
                .arg("restored")
                .arg(0)
                .arg(payload.clone())
                .query_async(con)
                .await
                .unwrap();
        }
        pair.same(&["OBJECT", "ENCODING", "restored"]).await;
        pair.same(&["LRANGE", "restored", "0", "-1"]).await;
    }
}
