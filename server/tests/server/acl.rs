//! ACLs compared with real Redis: rules as `ACL SETUSER` takes them and `ACL GETUSER`/`ACL
//! LIST` give them back, `AUTH user pass`, `NOPERM` refusals of commands, keys and channels
//! (at top level, inside MULTI/EXEC, from scripts), `ACL DRYRUN`, the ACL log, clients
//! disconnected when their user goes, `requirepass` as the default user's password, and the
//! ACL file.

use locksmith_testkit as support;

use std::time::Duration;
use support::{Pair, RealRedis, Twin, Wire};

/// Sends `cmds` to both servers of `twin` and asserts identical reply bytes.
async fn same(twin: &mut Twin, cmds: &[&[&str]]) {
    twin.same(cmds, cmds.len()).await;
}

#[tokio::test]
async fn rules_describe_back_as_redis_describes_them() {
    let mut pair = Pair::start().await;
    pair.all_same(&[
        &["ACL", "WHOAMI"],
        &["ACL", "SETUSER", "newuser"],
        &["ACL", "SETUSER", "a a"],
        &[
            "ACL",
            "SETUSER",
            "newuser",
            ">passwd1",
            "#34344e4d60c2b6d639b7bd22e18f2b0b91bc34bf0ac5f9952744435093cfb4e6",
        ],
        &[
            "ACL",
            "SETUSER",
            "newuser",
            "#34344e4d60c2b6d639b7bd22e18f2b0b91bc34bf0ac5f9952744435093cfb4e",
        ],
        &["ACL", "SETUSER", "newuser", "<nosuch"],
        &["ACL", "GETUSER", "newuser"],
        // (Redis orders single-command rules by its hash table: one per description here.)
        &["ACL", "SETUSER", "newuser", "+@all", "-@string", "+incr"],
        &["ACL", "GETUSER", "newuser"],
        &["ACL", "SETUSER", "newuser", "reset", "+@string", "-incr"],
        &["ACL", "GETUSER", "newuser"],
        &[
            "ACL",
            "SETUSER",
            "newuser",
            "reset",
            "+select|0",
            "+select|1",
        ],
        &["ACL", "GETUSER", "newuser"],
        &[
            "ACL",
            "SETUSER",
            "newuser",
            "-@all",
            "+config",
            "-config|set",
        ],
        &["ACL", "GETUSER", "newuser"],
        &["ACL", "SETUSER", "bob", "+memory|doctor"],
        &["ACL", "GETUSER", "bob"],
        &["ACL", "SETUSER", "bob", "+memory"],
        &["ACL", "GETUSER", "bob"],
        &["ACL", "SETUSER", "newuser", "+config|get|appendonly"],
        &["ACL", "SETUSER", "newuser", "+config|asdf"],
        &["ACL", "SETUSER", "newuser", "-get|key1|key2"],
        &["ACL", "SETUSER", "newuser", "+@nosuch"],
        &["ACL", "SETUSER", "x", "allkeys", "~foo"],
        &["ACL", "SETUSER", "x", "allchannels", "&foo"],
        &["ACL", "SETUSER", "x", "%X~foo"],
        &[
            "ACL",
            "SETUSER",
            "sel",
            "on",
            "-@all",
            "+get",
            "resetchannels",
            "&channel1",
            "%R~foo1",
            "%W~bar1",
            "~baz1",
            "(-@all +set resetchannels &channel2 %R~foo2",
            "%W~bar2 ~baz2)",
        ],
        &["ACL", "GETUSER", "sel"],
        &["ACL", "SETUSER", "rw", "%R~foo", "%W~foo", "%RW~bar"],
        &["ACL", "GETUSER", "rw"],
        &["ACL", "SETUSER", "y", "(this-is-invalid)"],
        &["ACL", "SETUSER", "y", "(&* &fail)"],
        &["ACL", "SETUSER", "y", "(~a", "+get"],
        &["ACL", "SETUSER", "y", " () "],
        &[
            "ACL",
            "SETUSER",
            "y",
            "(~key1 +get )",
            "( ~key2 +get )",
            "clearselectors",
            "(~k3)",
        ],
        &["ACL", "GETUSER", "y"],
        &[
            "ACL",
            "SETUSER",
            "restrictive",
            "reset",
            "-@all",
            "+@keyspace",
        ],
        &["ACL", "GETUSER", "restrictive"],
        &[
            "ACL",
            "SETUSER",
            "restrictive",
            "reset",
            "+@all",
            "-@dangerous",
        ],
        &["ACL", "GETUSER", "restrictive"],
        &["ACL", "USERS"],
        &["ACL", "LIST"],
        &["ACL", "DELUSER", "default"],
        &["ACL", "DELUSER", "y", "nosuch", "newuser"],
        &["ACL", "USERS"],
        &["ACL", "CAT"],
        &["ACL", "CAT", "NON_EXISTS"],
        &["ACL", "CAT", "a", "b"],
        &["ACL", "GENPASS", "-236"],
        &["ACL", "GENPASS", "abc"],
        &["ACL", "HELP"],
        &["ACL", "HELP", "xxx"],
        &["ACL", "LOAD"],
        &["ACL", "SAVE"],
        &["ACL", "LOG", "RESET"],
        &["ACL", "LOG"],
    ])
    .await;
    let pass: String = support::cmd(&["ACL", "GENPASS", "10"])
        .query_async(&mut pair.ours_con)
        .await
        .unwrap();
    assert!(
        pass.len() == 3 && pass.bytes().all(|c| c.is_ascii_hexdigit()),
        "{pass}"
    );
}

#[tokio::test]
async fn dryrun_finds_keys_and_channels_by_key_specs() {
    let mut pair = Pair::start().await;
    pair.all_same(&[
        &[
            "ACL",
            "SETUSER",
            "t",
            "+@all",
            "%R~read*",
            "%W~write*",
            "%RW~rw*",
        ],
        &["ACL", "DRYRUN", "t", "GET", "read"],
        &["ACL", "DRYRUN", "nouser", "GET", "read"],
        &["ACL", "DRYRUN", "t", "not-a-command", "read"],
        &["ACL", "DRYRUN", "t", "SET", "v"],
        &["ACL", "DRYRUN", "t", "SORT", "read", "STORE", "write"],
        &["ACL", "DRYRUN", "t", "SORT", "read", "STORE", "read"],
        &["ACL", "DRYRUN", "t", "EVAL", "", "1", "read"],
        &["ACL", "DRYRUN", "t", "EVAL_RO", "", "1", "read"],
        &["ACL", "DRYRUN", "t", "EVAL", "", "3", "rw", "read"],
        &[
            "ACL",
            "DRYRUN",
            "t",
            "GEORADIUS",
            "read1",
            "1",
            "2",
            "3",
            "M",
            "STOREDIST",
            "read2",
        ],
        &["ACL", "DRYRUN", "t", "HEXISTS", "write", "foo"],
        &["ACL", "DRYRUN", "t", "HEXISTS", "nothing", "foo"],
        &["ACL", "DRYRUN", "t", "SINTERCARD", "2", "write", "read"],
        &[
            "ACL",
            "DRYRUN",
            "t",
            "ZUNIONSTORE",
            "write",
            "2",
            "read",
            "rw",
        ],
        &["ACL", "DRYRUN", "t", "MEMORY", "USAGE", "nothing"],
        &["ACL", "DRYRUN", "t", "SET", "read", "v", "GET"],
        &["ACL", "DRYRUN", "t", "SET", "write", "v"],
        &["ACL", "DRYRUN", "t", "BITFIELD", "read", "GET", "u4", "0"],
        &[
            "ACL", "DRYRUN", "t", "BITFIELD", "read", "SET", "u4", "0", "1",
        ],
        &["ACL", "DRYRUN", "t", "COPY", "read", "write"],
        &["ACL", "DRYRUN", "t", "COPY", "write", "read"],
        &[
            "ACL", "DRYRUN", "t", "XREAD", "STREAMS", "read", "write", "0", "0",
        ],
        &[
            "ACL",
            "SETUSER",
            "c",
            "+@all",
            "resetchannels",
            "&channel",
            "&pat*",
        ],
        &["ACL", "DRYRUN", "c", "SPUBLISH", "otherchannel", "foo"],
        &["ACL", "DRYRUN", "c", "SUBSCRIBE", "channel", "patx"],
        &["ACL", "DRYRUN", "c", "SUBSCRIBE", "channel", "other"],
        &["ACL", "DRYRUN", "c", "PSUBSCRIBE", "pat*"],
        &["ACL", "DRYRUN", "c", "PSUBSCRIBE", "patx"],
        &["ACL", "DRYRUN", "c", "UNSUBSCRIBE", "other"],
        &["ACL", "SETUSER", "s", "on", "nopass", "+readonly"],
        &["ACL", "DRYRUN", "s", "EVAL_RO", "", "0"],
        &["ACL", "DRYRUN", "s", "CONFIG", "GET", "x"],
    ])
    .await;
}

#[tokio::test]
async fn refusals_carry_redis_noperm_texts() {
    let pair = Pair::start().await;
    let mut admin = Twin::connect(&pair).await;
    let mut user = Twin::connect(&pair).await;
    same(
        &mut admin,
        &[
            &[
                "ACL",
                "SETUSER",
                "u",
                "on",
                ">pw",
                "+@all",
                "-ping",
                "-client|kill",
                "~k*",
            ],
            &[
                "ACL",
                "SETUSER",
                "u",
                "resetchannels",
                "&chan",
                "-@dangerous",
                "+select|0",
            ],
            &["ACL", "SETUSER", "off", "off", ">pw", "+@all"],
        ],
    )
    .await;
    same(
        &mut user,
        &[
            &["AUTH", "u", "wrong"],
            &["AUTH", "off", "pw"],
            &["AUTH", "nosuch", "pw"],
            &["AUTH", "pw"],
            &["AUTH", "a", "b", "c"],
            &["AUTH", "u", "pw"],
            &["ACL", "WHOAMI"],
            &["PING"],
            &["SET", "k1", "v"],
            &["SET", "other", "v"],
            &["MGET", "k1", "other", "k2"],
            &["CLIENT", "KILL", "ID", "123456"],
            &["CLIENT", "GETNAME"],
            &["SELECT", "0"],
            &["SELECT", "1"],
            &["PUBLISH", "chan", "m"],
            &["PUBLISH", "nochan", "m"],
            &["SUBSCRIBE", "nochan"],
            &["PSUBSCRIBE", "c*"],
            &["FLUSHALL"],
            &["HELLO", "2", "AUTH", "u", "bad"],
            &["AUTH", "default", "nopass-is-set"],
            &["ACL", "WHOAMI"],
        ],
    )
    .await;
}

#[tokio::test]
async fn transactions_check_at_queueing_and_again_at_exec() {
    let pair = Pair::start().await;
    let mut admin = Twin::connect(&pair).await;
    let mut user = Twin::connect(&pair).await;
    same(
        &mut admin,
        &[&[
            "ACL",
            "SETUSER",
            "m",
            "on",
            "nopass",
            "+@all",
            "-get",
            "~*",
            "resetchannels",
        ]],
    )
    .await;
    same(
        &mut user,
        &[
            &["AUTH", "m", "x"],
            &["MULTI"],
            &["GET", "k"],
            &["PUBLISH", "c", "m"],
            &["EXEC"],
            &["MULTI"],
            &["INCR", "n"],
            &["SET", "k", "v"],
        ],
    )
    .await;
    same(
        &mut admin,
        &[&["ACL", "SETUSER", "m", "-incr", "resetkeys"]],
    )
    .await;
    same(&mut user, &[&["EXEC"]]).await;
}

#[tokio::test]
async fn scripts_run_commands_as_the_calling_user() {
    let pair = Pair::start().await;
    let mut admin = Twin::connect(&pair).await;
    let mut user = Twin::connect(&pair).await;
    same(
        &mut admin,
        &[&[
            "ACL",
            "SETUSER",
            "bob",
            "on",
            ">123",
            "+@scripting",
            "+set",
            "~x*",
        ]],
    )
    .await;
    same(
        &mut user,
        &[
            &["AUTH", "bob", "123"],
            &[
                "EVAL",
                "return redis.acl_check_cmd('set','xx',1)",
                "1",
                "xx",
            ],
            &[
                "EVAL",
                "return redis.acl_check_cmd('hset','xx','f',1)",
                "1",
                "xx",
            ],
            &["EVAL", "return redis.acl_check_cmd('set','yy',1)", "0"],
            &[
                "EVAL",
                "return redis.acl_check_cmd('invalid-cmd','arg')",
                "0",
            ],
            &["EVAL", "return redis.pcall('incr','x')", "0"],
            &["EVAL", "return redis.pcall('set','y','1')", "0"],
            &["EVAL", "return redis.pcall('set','x1','1')", "0"],
        ],
    )
    .await;
}

#[tokio::test]
async fn sort_by_and_get_need_read_access_to_every_key() {
    let pair = Pair::start().await;
    let mut admin = Twin::connect(&pair).await;
    let mut user = Twin::connect(&pair).await;
    same(
        &mut admin,
        &[
            &["RPUSH", "mylist", "1"],
            &["ACL", "SETUSER", "s", "on", "nopass", "(+sort ~mylist)"],
        ],
    )
    .await;
    same(
        &mut user,
        &[
            &["AUTH", "s", "x"],
            &["SORT", "mylist", "BY", "v*"],
            &["SORT", "mylist", "GET", "v*"],
            &["SORT", "mylist", "BY", "nosort"],
        ],
    )
    .await;
    same(
        &mut admin,
        &[&["ACL", "SETUSER", "s", "(+sort ~mylist %R~*)"]],
    )
    .await;
    same(&mut user, &[&["SORT", "mylist", "BY", "v*"]]).await;
}

#[tokio::test]
async fn the_acl_log_records_and_groups_refusals() {
    let mut pair = Pair::start().await;
    pair.all_same(&[
        &[
            "ACL",
            "SETUSER",
            "antirez",
            ">foo",
            "on",
            "+set",
            "~object:1234",
            "+eval",
        ],
        &[
            "ACL",
            "SETUSER",
            "antirez",
            "+multi",
            "+exec",
            "resetchannels",
            "+publish",
        ],
        &["CONFIG", "SET", "acllog-max-len", "6"],
    ])
    .await;
    let mut ours = support::conn(&pair.ours.url()).await;
    let mut real = match &pair.real {
        Some(r) => Some(support::conn(&r.url()).await),
        None => None,
    };
    let script: &[&[&str]] = &[
        &["AUTH", "antirez", "foo"],
        &["GET", "foo"],
        &["GET", "foo"],
        &["SET", "somekey", "1"],
        &["PUBLISH", "somechannel", "m"],
        &["EVAL", "redis.call('incr','foo')", "0"],
        &["MULTI"],
        &["INCR", "foo"],
        &["EXEC"],
        &["AUTH", "antirez", "wrong"],
    ];
    for args in script {
        let mine = support::run(&mut ours, args).await;
        if let Some(real) = &mut real {
            assert_eq!(mine, support::run(real, args).await, "{args:?}");
        }
    }
    // Every field but the age and the client's addresses, newest first.
    let fields = |entries: redis::Value| -> Vec<Vec<String>> {
        let redis::Value::Array(entries) = entries else {
            panic!("ACL LOG: {entries:?}")
        };
        entries
            .into_iter()
            .map(|e| {
                let map: Vec<(String, redis::Value)> = redis::from_redis_value(e).unwrap();
                map.into_iter()
                    .filter(|(k, _)| !matches!(k.as_str(), "age-seconds" | "client-info"))
                    .map(|(k, v)| format!("{k}={}", redis::from_redis_value::<String>(v).unwrap()))
                    .collect()
            })
            .collect()
    };
    let log = |con: &mut redis::aio::MultiplexedConnection| {
        let mut con = con.clone();
        async move {
            let v: redis::Value = support::cmd(&["ACL", "LOG"])
                .query_async(&mut con)
                .await
                .unwrap();
            v
        }
    };
    let mine = fields(log(&mut pair.ours_con).await);
    assert_eq!(mine.len(), 6);
    assert_eq!(
        mine.first().map(|e| e.join(" ")).unwrap_or_default(),
        "count=1 reason=auth context=toplevel object=AUTH username=antirez"
    );
    assert!(mine
        .iter()
        .any(|e| e.join(" ")
            == "count=2 reason=command context=toplevel object=get username=antirez"));
    if let Some(real_con) = &mut pair.real_con {
        assert_eq!(mine, fields(log(real_con).await));
    }
    let info = support::run(&mut pair.ours_con, &["ACL", "LOG", "1"]).await;
    assert!(info.contains("user=antirez"), "{info}");
}

#[tokio::test]
async fn clients_go_when_their_user_is_deleted_or_loses_channels() {
    let pair = Pair::start().await;
    let mut ours = support::conn(&pair.ours.url()).await;
    support::run(
        &mut ours,
        &[
            "ACL",
            "SETUSER",
            "ps",
            "on",
            "nopass",
            "+@all",
            "resetchannels",
            "&foo:1",
        ],
    )
    .await;
    let mut sub = Wire::connect(pair.ours.addr()).await;
    sub.call(
        &[
            &["AUTH", "ps", "x"],
            &["CLIENT", "SETNAME", "deathrow"],
            &["SUBSCRIBE", "foo:1"],
        ],
        3,
    )
    .await;
    // A superset of the channels keeps the subscriber.
    support::run(&mut ours, &["ACL", "SETUSER", "ps", "&bar"]).await;
    assert!(support::run(&mut ours, &["CLIENT", "LIST"])
        .await
        .contains("deathrow"));
    support::run(&mut ours, &["ACL", "SETUSER", "ps", "resetchannels"]).await;
    assert!(!support::run(&mut ours, &["CLIENT", "LIST"])
        .await
        .contains("deathrow"));
    assert!(sub.drain_to_eof(Duration::from_secs(10)).await.is_some());

    let mut using = Wire::connect(pair.ours.addr()).await;
    using
        .call(
            &[
                &["ACL", "SETUSER", "using", "on", "+acl", ">p"],
                &["AUTH", "using", "p"],
            ],
            2,
        )
        .await;
    let replies = using.call(&[&["ACL", "DELUSER", "using"]], 1).await;
    assert_eq!(replies, [b":1\r\n".to_vec()]);
    assert!(using.drain_to_eof(Duration::from_secs(10)).await.is_some());
}

#[tokio::test]
async fn requirepass_is_the_default_users_password() {
    let pair = Pair::start().await;
    let mut admin = Twin::connect(&pair).await;
    same(
        &mut admin,
        &[
            &["AUTH", "x"],
            &["CONFIG", "SET", "requirepass", "secret"],
            &["ACL", "LIST"],
        ],
    )
    .await;
    let mut fresh = Twin::connect(&pair).await;
    same(
        &mut fresh,
        &[
            &["GET", "k"],
            &["ACL", "WHOAMI"],
            &["AUTH", "wrong"],
            &["AUTH", "secret"],
            &["ACL", "SETUSER", "default", "off"],
            &["CONFIG", "SET", "requirepass", ""],
        ],
    )
    .await;
    let mut other = Twin::connect(&pair).await;
    same(&mut other, &[&["PING"], &["AUTH", "default", "x"]]).await;
    same(
        &mut fresh,
        &[&["ACL", "SETUSER", "default", "on"], &["ACL", "LIST"]],
    )
    .await;
}

/// Every command and subcommand a server puts in category `cat`.
async fn category(con: &mut redis::aio::MultiplexedConnection, cat: &str) -> Vec<String> {
    let mut names: Vec<String> = support::cmd(&["ACL", "CAT", cat])
        .query_async(con)
        .await
        .unwrap();
    names.sort();
    names
}

#[tokio::test]
async fn command_categories_match_redis() {
    let mut pair = Pair::start().await;
    let Some(real_con) = pair.real_con.as_mut() else {
        return;
    };
    // Every command is @fast or @slow: together they name every command of a server.
    let mut ours_all = category(&mut pair.ours_con, "fast").await;
    ours_all.extend(category(&mut pair.ours_con, "slow").await);
    let mut real_all = category(real_con, "fast").await;
    real_all.extend(category(real_con, "slow").await);
    let cats: Vec<String> = support::cmd(&["ACL", "CAT"])
        .query_async(real_con)
        .await
        .unwrap();
    for cat in cats {
        // Commands only one of the two servers has are left out.
        let mut real = category(real_con, &cat).await;
        real.retain(|n| ours_all.contains(n));
        let mut ours = category(&mut pair.ours_con, &cat).await;
        ours.retain(|n| real_all.contains(n));
        assert_eq!(ours, real, "@{cat}");
    }
    // `COMMAND INFO` shows the same categories.
    for name in ["get", "eval", "config"] {
        let info = |v: redis::Value| -> String {
            let redis::Value::Array(mut entries) = v else {
                return String::new();
            };
            match entries.pop() {
                Some(redis::Value::Array(fields)) => format!("{:?}", fields.get(6)),
                other => format!("{other:?}"),
            }
        };
        let ours: redis::Value = support::cmd(&["COMMAND", "INFO", name])
            .query_async(&mut pair.ours_con)
            .await
            .unwrap();
        let real: redis::Value = support::cmd(&["COMMAND", "INFO", name])
            .query_async(real_con)
            .await
            .unwrap();
        assert_eq!(info(ours), info(real), "{name}");
    }
}

#[tokio::test]
async fn the_acl_file_is_saved_and_loaded() {
    let dir = std::env::temp_dir().join(format!("locksmith-acl-{}", support::free_port()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("users.acl");
    std::fs::write(
        &file,
        "user alice on allcommands allkeys &* >alice\nuser bob on -@all +@set +acl ~set* &* >bob\n",
    )
    .unwrap();
    let ours = locksmith_server::Server::builder()
        .config_set("aclfile", file.to_str().unwrap())
        .start()
        .await
        .unwrap();
    let mut con = support::conn(&ours.url()).await;
    let users: Vec<String> = support::cmd(&["ACL", "USERS"])
        .query_async(&mut con)
        .await
        .unwrap();
    assert_eq!(users, ["alice", "bob", "default"]);
    let list = support::run(&mut con, &["ACL", "LIST"]).await;
    assert!(list.contains("user bob on #"), "{list}");
    support::run(
        &mut con,
        &["ACL", "SETUSER", "eve", "+get", "allkeys", ">eve", "on"],
    )
    .await;
    assert_eq!(support::run(&mut con, &["ACL", "SAVE"]).await, "ok");
    let saved = std::fs::read_to_string(&file).unwrap();
    assert!(saved.contains("user eve on #"), "{saved}");
    std::fs::write(&file, format!("{saved}user alice on nopass ~* -@all\n")).unwrap();
    let err = support::run(&mut con, &["ACL", "LOAD"]).await;
    assert!(
        err.contains("Duplicate user 'alice' found on line"),
        "{err}"
    );
    std::fs::write(&file, "user bob on nopass +@all ~*\n").unwrap();
    let mut other = Wire::connect(ours.addr()).await;
    other.call(&[&["AUTH", "alice", "alice"]], 1).await;
    assert_eq!(support::run(&mut con, &["ACL", "LOAD"]).await, "ok");
    assert!(other.drain_to_eof(Duration::from_secs(10)).await.is_some());
    let users: Vec<String> = support::cmd(&["ACL", "LIST"])
        .query_async(&mut con)
        .await
        .unwrap();
    assert_eq!(
        users,
        [
            "user bob on nopass ~* resetchannels +@all",
            "user default on nopass ~* &* +@all"
        ]
    );
    if let Some(real) = RealRedis::start_with(&["--aclfile", file.to_str().unwrap()]) {
        let mut real_con = support::conn(&real.url()).await;
        let mut ours_con = support::conn(&ours.url()).await;
        assert_eq!(
            support::run(&mut ours_con, &["ACL", "LIST"]).await,
            support::run(&mut real_con, &["ACL", "LIST"]).await
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `WAIT` takes the path of every command before it waits (without the state lock): a user
/// without it gets NOPERM, and it is counted in `INFO commandstats` (it was neither).
#[tokio::test]
async fn wait_is_checked_against_acls_and_counted_like_any_command() {
    let mut pair = Pair::start().await;
    pair.all_same(&[
        &["ACL", "SETUSER", "nowait", "on", "nopass", "+@all", "-wait"],
        &["CONFIG", "RESETSTAT"],
        &["WAIT", "0", "0"],
        &["AUTH", "nowait", "x"],
        &["WAIT", "0", "0"],
        &["AUTH", "default", "x"],
    ])
    .await;
    let mut cons = vec![support::conn(&pair.ours.url()).await];
    if let Some(real) = &pair.real {
        cons.push(support::conn(&real.url()).await);
    }
    for con in &mut cons {
        let stats = support::info(con, "commandstats").await;
        let wait = support::info_value(&stats, "cmdstat_wait");
        assert!(
            wait.starts_with("calls=1,") && wait.ends_with(",rejected_calls=1,failed_calls=0"),
            "{wait}"
        );
    }
}
