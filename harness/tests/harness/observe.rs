//! Lock observation (issue 38): the harness recognises the locks of unmodified clients from
//! the nodes' writes and checks them. Each test drives a topology with the commands a client
//! library sends — redis-py's `Lock` (`SET name token NX PX ms`, a compare-and-delete
//! release and a compare-and-`PEXPIRE` extend script by `EVAL`) and Redisson's `RLock` scripts
//! (`owner -> count` hash) — and asks `LOCKSMITH.CHECK`, `LOCKSMITH.LOCKS` and
//! `LOCKSMITH.HISTORY` over the wire, as a test in any language would.

use locksmith_testkit::harness as harness_support;

use harness_support::{conn, run, try_conn};
use locksmith_harness::{LockEventKind, LockViolationKind, Topology};
use redis::aio::MultiplexedConnection;
use redis::Value;
use std::collections::BTreeMap;
use std::time::Duration;

/// The string lock's compare-and-delete release (redis-py's `Lock.release` sends a script
/// of this effect; the text is the one of redis.io's pattern, as `lock/src/scripts.rs` has it).
const PY_RELEASE: &str = "if redis.call(\"get\", KEYS[1]) == ARGV[1] then\n    return redis.call(\"del\",KEYS[1])\nelse\n    return 0\nend";

/// The string lock's compare-and-`PEXPIRE` extend (ARGV: token, new lease ms).
const PY_EXTEND: &str = "if redis.call(\"get\", KEYS[1]) == ARGV[1] then\n    return redis.call(\"pexpire\",KEYS[1],ARGV[2])\nelse\n    return 0\nend";

/// Redisson's `RedissonLock.tryLockInnerAsync` (KEYS: name; ARGV: lease ms, owner field).
const REDISSON_ACQUIRE: &str = "if ((redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) then redis.call('hincrby', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; return redis.call('pttl', KEYS[1]);";

/// Redisson's `RedissonLock.unlockInnerAsync` (KEYS: name, channel, latch; ARGV: message,
/// lease ms, owner field, publish command, latch timeout ms).
const REDISSON_RELEASE: &str = "local val = redis.call('get', KEYS[3]); if val ~= false then return tonumber(val);end; if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then return nil;end; local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1); if (counter > 0) then redis.call('pexpire', KEYS[1], ARGV[2]); redis.call('set', KEYS[3], 0, 'px', ARGV[5]); return 0; else redis.call('del', KEYS[1]); redis.call(ARGV[4], KEYS[2], ARGV[1]); redis.call('set', KEYS[3], 1, 'px', ARGV[5]); return 1; end; ";

/// Redisson's `RedissonFencedLock` acquire (KEYS: name, token counter; ARGV: lease ms, owner
/// field): `{-1, token}` when granted.
const REDISSON_FENCED_ACQUIRE: &str = "if (redis.call('exists', KEYS[1]) == 0 or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) then local token = redis.call('incr', KEYS[2]);redis.call('hincrby', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return {-1, token}; end; return {redis.call('pttl', KEYS[1]), -1};";

const OWNER_A: &str = "8b5a4a36-4e0c-4c6a-9a4e-0a1b2c3d4e5f:1";
const OWNER_B: &str = "f0e1d2c3-b4a5-4968-8776-655443322110:1";

/// A master and a replica 2 s behind it, the harness observing nothing from the start.
async fn topology(seed: u64) -> Topology {
    lagging(seed, None).await
}

/// A master and a replica 2 s behind it, observing keys matching `patterns` from the start
/// when given (`Some(&[])`: the observer installed with no pattern).
async fn lagging(seed: u64, patterns: Option<&[&str]>) -> Topology {
    let mut builder = Topology::builder();
    builder
        .replicas(1)
        .replication_delay(Duration::from_millis(2000))
        .seed(seed);
    if let Some(patterns) = patterns {
        builder.observe(patterns.iter().copied());
    }
    builder.build().await.unwrap()
}

/// A fresh connection to the front address.
async fn front(t: &Topology) -> MultiplexedConnection {
    conn(&t.front_url()).await
}

/// `SET key token NX PX 30000`, as redis-py's `Lock.acquire` sends it: whether it got it.
async fn py_acquire(con: &mut MultiplexedConnection, key: &str, token: &str) -> bool {
    let r: Option<String> = run(con, &["SET", key, token, "NX", "PX", "30000"])
        .await
        .unwrap();
    r.is_some()
}

/// redis-py's release (`EVAL` of its script): whether the token still held it.
async fn py_release(con: &mut MultiplexedConnection, key: &str, token: &str) -> bool {
    let n: i64 = run(con, &["EVAL", PY_RELEASE, "1", key, token])
        .await
        .unwrap();
    n == 1
}

/// Redisson's acquire (`EVAL` of its script): whether `owner` got it.
async fn redisson_acquire(con: &mut MultiplexedConnection, key: &str, owner: &str) -> bool {
    let r: Option<i64> = run(con, &["EVAL", REDISSON_ACQUIRE, "1", key, "30000", owner])
        .await
        .unwrap();
    r.is_none()
}

/// Redisson's unlock: 1 released, 0 still held (a re-entry), nil not the owner. `request`
/// names the unlock's latch (Redisson's request id: a retried unlock finds its outcome there).
async fn redisson_release(
    con: &mut MultiplexedConnection,
    key: &str,
    owner: &str,
    request: u32,
) -> Option<i64> {
    let channel = format!("redisson_lock__channel:{{{key}}}");
    let latch = format!("redisson_unlock_latch:{{{key}}}:{request}");
    run(
        con,
        &[
            "EVAL",
            REDISSON_RELEASE,
            "3",
            key,
            &channel,
            &latch,
            "0",
            "30000",
            owner,
            "PUBLISH",
            "13500",
        ],
    )
    .await
    .unwrap()
}

/// `LOCKSMITH.CHECK`'s violations, each as its field -> value map (text values; a nested
/// array as its items joined by `|`).
async fn check(con: &mut MultiplexedConnection) -> Vec<BTreeMap<String, String>> {
    let v: Value = run(con, &["LOCKSMITH.CHECK"]).await.unwrap();
    records(v)
}

async fn locks(con: &mut MultiplexedConnection) -> Vec<BTreeMap<String, String>> {
    let v: Value = run(con, &["LOCKSMITH.LOCKS"]).await.unwrap();
    records(v)
}

fn text(v: &Value) -> String {
    match v {
        Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
        Value::SimpleString(s) => s.clone(),
        Value::Int(n) => n.to_string(),
        Value::Nil => "nil".into(),
        Value::Array(items) => items.iter().map(text).collect::<Vec<_>>().join("|"),
        other => format!("{other:?}"),
    }
}

fn records(v: Value) -> Vec<BTreeMap<String, String>> {
    let Value::Array(items) = v else {
        panic!("not an array: {v:?}");
    };
    items
        .iter()
        .map(|item| {
            let Value::Array(fields) = item else {
                panic!("not a record: {item:?}");
            };
            fields
                .chunks(2)
                .map(|pair| (text(&pair[0]), text(&pair[1])))
                .collect()
        })
        .collect()
}

#[tokio::test(start_paused = true)]
async fn a_failover_between_two_string_lock_acquisitions_is_one_double_grant() {
    let t = topology(38).await;
    let mut a = front(&t).await;
    assert_eq!(
        run::<String>(&mut a, &["LOCKSMITH.OBSERVE", "lock:*"])
            .await
            .unwrap(),
        "OK"
    );
    assert!(py_acquire(&mut a, "lock:k", "tokA").await);
    // The replica is 2 s behind: the failover loses A's grant.
    let promoted: String = run(&mut a, &["LOCKSMITH.FAILOVER"]).await.unwrap();
    assert_eq!(promoted, "n1");
    let mut b = front(&t).await;
    assert!(py_acquire(&mut b, "lock:k", "tokB").await, "granted again");

    let violations = check(&mut b).await;
    assert_eq!(violations.len(), 1, "{violations:#?}");
    let v = &violations[0];
    assert_eq!(v["kind"], "double-grant");
    assert_eq!(v["key"], "lock:k");
    assert_eq!(
        (v["first-owner"].as_str(), v["first-node"].as_str()),
        ("tokA", "n0")
    );
    assert_eq!(
        (v["second-owner"].as_str(), v["second-node"].as_str()),
        ("tokB", "n1")
    );
    assert_eq!(v["first-ended-by"], "held");
    assert!(v["faults"].contains("fail_master n0 -> n1"), "{v:?}");
    assert!(v["first-client"].starts_with("id="), "{v:?}");

    // B releases with redis-py's script; A's release finds B's token and is refused.
    assert!(py_release(&mut b, "lock:k", "tokB").await);
    let mut a = front(&t).await;
    assert!(!py_release(&mut a, "lock:k", "tokA").await);
    assert_eq!(check(&mut a).await.len(), 1);

    // The Rust API sees the same.
    let found = t.check();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].kind, LockViolationKind::DoubleGrant);
    assert_eq!(
        found[0].second.as_ref().map(|h| h.ended_by),
        Some("release")
    );
}

#[tokio::test(start_paused = true)]
async fn without_a_fault_the_second_string_lock_client_is_refused_and_nothing_is_reported() {
    let t = topology(39).await;
    let mut a = front(&t).await;
    let _: String = run(&mut a, &["LOCKSMITH.OBSERVE"]).await.unwrap();
    assert!(py_acquire(&mut a, "lock:k", "tokA").await);
    let mut b = front(&t).await;
    assert!(!py_acquire(&mut b, "lock:k", "tokB").await);
    assert_eq!(check(&mut b).await, Vec::<BTreeMap<String, String>>::new());

    // A extends (compare-and-PEXPIRE) and releases (compare-and-delete); then B gets it.
    let n: i64 = run(&mut a, &["EVAL", PY_EXTEND, "1", "lock:k", "tokA", "60000"])
        .await
        .unwrap();
    assert_eq!(n, 1);
    let held = locks(&mut a).await;
    assert_eq!(held.len(), 1, "{held:?}");
    assert_eq!(
        (
            held[0]["node"].as_str(),
            held[0]["owner"].as_str(),
            held[0]["layout"].as_str()
        ),
        ("n0", "tokA", "string")
    );
    assert!(held[0]["pttl"].parse::<i64>().unwrap() > 30_000, "{held:?}");
    assert!(py_release(&mut a, "lock:k", "tokA").await);
    assert!(py_acquire(&mut b, "lock:k", "tokB").await);
    // Once replicated, both nodes hold B's grant.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let held = locks(&mut b).await;
    let nodes: Vec<(&str, &str)> = held
        .iter()
        .map(|l| (l["node"].as_str(), l["owner"].as_str()))
        .collect();
    assert_eq!(nodes, [("n0", "tokB"), ("n1", "tokB")]);
    assert!(check(&mut b).await.is_empty());

    let kinds: Vec<(LockEventKind, String, bool)> = t
        .observed_events()
        .into_iter()
        .map(|e| (e.kind, e.owner, e.replica))
        .collect();
    assert!(
        kinds.contains(&(LockEventKind::Renewal, "tokA".into(), false)),
        "{kinds:?}"
    );
    assert!(
        kinds.contains(&(LockEventKind::Release, "tokA".into(), false)),
        "{kinds:?}"
    );
    assert!(
        kinds.contains(&(LockEventKind::Grant, "tokB".into(), true)),
        "{kinds:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_failover_between_two_redisson_acquisitions_is_one_double_grant() {
    let t = lagging(40, Some(&["lock:*"])).await;
    let mut a = front(&t).await;
    assert!(redisson_acquire(&mut a, "lock:r", OWNER_A).await);
    // A re-entry is not a second grant.
    assert!(redisson_acquire(&mut a, "lock:r", OWNER_A).await);
    let _: String = run(&mut a, &["LOCKSMITH.FAILOVER"]).await.unwrap();
    let mut b = front(&t).await;
    assert!(redisson_acquire(&mut b, "lock:r", OWNER_B).await);

    let violations = check(&mut b).await;
    assert_eq!(violations.len(), 1, "{violations:#?}");
    let v = &violations[0];
    assert_eq!(v["kind"], "double-grant");
    assert_eq!(
        (v["first-owner"].as_str(), v["second-owner"].as_str()),
        (OWNER_A, OWNER_B)
    );
    let held = locks(&mut b).await;
    assert_eq!(held.len(), 1, "{held:?}");
    assert_eq!(
        (
            held[0]["owner"].as_str(),
            held[0]["layout"].as_str(),
            held[0]["count"].as_str()
        ),
        (OWNER_B, "hash", "1")
    );
}

#[tokio::test(start_paused = true)]
async fn without_a_fault_redisson_s_second_owner_waits_and_nothing_is_reported() {
    let t = lagging(41, Some(&[])).await;
    let mut a = front(&t).await;
    let mut b = front(&t).await;
    assert!(redisson_acquire(&mut a, "lock:r", OWNER_A).await);
    assert!(redisson_acquire(&mut a, "lock:r", OWNER_A).await);
    assert!(!redisson_acquire(&mut b, "lock:r", OWNER_B).await);
    // B's unlock is refused (not the owner); A's first unlock keeps it (count 2 -> 1).
    assert_eq!(redisson_release(&mut b, "lock:r", OWNER_B, 1).await, None);
    assert_eq!(
        redisson_release(&mut a, "lock:r", OWNER_A, 2).await,
        Some(0)
    );
    assert!(!redisson_acquire(&mut b, "lock:r", OWNER_B).await);
    assert_eq!(
        redisson_release(&mut a, "lock:r", OWNER_A, 3).await,
        Some(1)
    );
    assert!(redisson_acquire(&mut b, "lock:r", OWNER_B).await);
    assert!(check(&mut b).await.is_empty());

    let kinds: Vec<(LockEventKind, String)> = t
        .observed_events()
        .into_iter()
        .filter(|e| !e.replica)
        .map(|e| (e.kind, e.owner))
        .collect();
    assert_eq!(
        kinds,
        [
            (LockEventKind::Grant, OWNER_A.to_string()),
            (LockEventKind::Reentry, OWNER_A.to_string()),
            (LockEventKind::Exit, OWNER_A.to_string()),
            (LockEventKind::Exit, OWNER_A.to_string()),
            (LockEventKind::Release, OWNER_A.to_string()),
            (LockEventKind::Grant, OWNER_B.to_string()),
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn an_expired_lock_deleted_by_its_old_holder_is_a_foreign_release() {
    let t = Topology::builder()
        .seed(42)
        .observe(["*"])
        .build()
        .await
        .unwrap();
    let mut a = front(&t).await;
    let mut b = front(&t).await;
    let _: Option<String> = run(&mut a, &["SET", "k", "tokA", "NX", "PX", "1000"])
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    // A's lease ended: B takes it, then A releases with a plain DEL (no compare).
    assert!(py_acquire(&mut b, "k", "tokB").await);
    let n: i64 = run(&mut a, &["DEL", "k"]).await.unwrap();
    assert_eq!(n, 1);

    let violations = check(&mut a).await;
    assert_eq!(violations.len(), 1, "{violations:#?}");
    let v = &violations[0];
    assert_eq!(v["kind"], "foreign-release");
    assert_eq!(
        (v["first-owner"].as_str(), v["second-owner"].as_str()),
        ("tokB", "tokA")
    );
    assert!(v["actor"].starts_with("id="), "{v:?}");
    // A's grant ended at its expiry, not overlapping B's.
    let events = t.observed_events();
    assert!(
        events
            .iter()
            .any(|e| e.kind == LockEventKind::Expiry && e.owner == "tokA"),
        "{events:#?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_master_restarted_empty_loses_the_grant_it_held() {
    let t = Topology::builder()
        .seed(43)
        .observe(["*"])
        .build()
        .await
        .unwrap();
    let mut a = front(&t).await;
    assert!(py_acquire(&mut a, "k", "tokA").await);
    let _: String = run(&mut a, &["LOCKSMITH.RESTART", "n0"]).await.unwrap();
    let mut a = front(&t).await;
    let violations = check(&mut a).await;
    assert_eq!(violations.len(), 1, "{violations:#?}");
    assert_eq!(violations[0]["kind"], "lost-grant");
    assert_eq!(violations[0]["first-owner"], "tokA");
    assert!(
        violations[0]["faults"].contains("restart n0"),
        "{violations:?}"
    );
    assert!(locks(&mut a).await.is_empty());
}

#[tokio::test(start_paused = true)]
async fn history_marks_and_timeline_are_served_over_the_wire() {
    let t = topology(44).await;
    let mut a = front(&t).await;
    let _: String = run(&mut a, &["LOCKSMITH.OBSERVE", "lock:*"]).await.unwrap();
    let _: String = run(
        &mut a,
        &["LOCKSMITH.MARK", "entered", "the critical section"],
    )
    .await
    .unwrap();
    assert!(py_acquire(&mut a, "lock:k", "tokA").await);
    // Not observed: another pattern.
    assert!(py_acquire(&mut a, "other", "tokX").await);
    let _: String = run(&mut a, &["LOCKSMITH.FAILOVER"]).await.unwrap();
    let mut b = front(&t).await;
    assert!(py_acquire(&mut b, "lock:k", "tokB").await);

    let json: String = run(&mut b, &["LOCKSMITH.HISTORY"]).await.unwrap();
    let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(doc["marks"][0]["text"], "entered the critical section");
    let grants: Vec<&str> = doc["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "grant")
        .map(|e| e["owner"].as_str().unwrap())
        .collect();
    assert_eq!(grants, ["tokA", "tokB"]);
    assert_eq!(doc["violations"].as_array().unwrap().len(), 1);
    assert!(doc["faults"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["label"].as_str().unwrap().starts_with("fail_master")));

    let path = std::env::temp_dir().join(format!(
        "locksmith-observe-{}-{}.html",
        std::process::id(),
        t.front_addr().port()
    ));
    let ok: String = run(&mut b, &["LOCKSMITH.TIMELINE", path.to_str().unwrap()])
        .await
        .unwrap();
    assert_eq!(ok, "OK");
    let html = std::fs::read_to_string(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    assert!(
        html.contains("tokA") && html.contains("tokB"),
        "owners are rows"
    );
    assert!(
        html.contains("class=\"violation\""),
        "the double grant is drawn"
    );
    assert!(html.contains("mark: entered the critical section"));

    let _: String = run(&mut b, &["LOCKSMITH.OBSERVE", "OFF"]).await.unwrap();
    let before = t.observed_events().len();
    assert!(py_release(&mut b, "lock:k", "tokB").await);
    assert_eq!(
        t.observed_events().len(),
        before,
        "nothing observed when off"
    );
    let err = run::<String>(&mut b, &["LOCKSMITH.TIMELINE"])
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("wrong number of arguments"),
        "{err}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_failover_schedule_sent_over_the_wire_double_grants_a_lock_taken_during_its_lag() {
    let t = Topology::builder()
        .replicas(1)
        .seed(45)
        .observe(["lock:*"])
        .build()
        .await
        .unwrap();
    let mut a = front(&t).await;
    let err = run::<String>(&mut a, &["LOCKSMITH.SCHEDULE", "failover/n0/x/1/2"])
        .await
        .unwrap_err();
    assert!(err.to_string().contains("bad fault"), "{err}");
    // At 10 ms replication starts lagging by 2 s; at 2010 ms the master fails.
    let ok: String = run(&mut a, &["LOCKSMITH.SCHEDULE", "failover/n0/10/60000/2000"])
        .await
        .unwrap();
    assert_eq!(ok, "OK");
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(py_acquire(&mut a, "lock:k", "tokA").await);
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let mut b = front(&t).await;
    assert!(py_acquire(&mut b, "lock:k", "tokB").await);

    let violations = check(&mut b).await;
    assert_eq!(violations.len(), 1, "{violations:#?}");
    let v = &violations[0];
    assert_eq!(
        (v["first-owner"].as_str(), v["second-owner"].as_str()),
        ("tokA", "tokB")
    );
    assert!(v["faults"].contains("replication delay 2000 ms"), "{v:?}");
    assert!(v["faults"].contains("fail_master n0 -> n1"), "{v:?}");
    let marks: Vec<String> = t.observed_marks().into_iter().map(|m| m.text).collect();
    assert_eq!(marks, ["schedule failover/n0/10/60000/2000"]);
    t.shutdown().await;
}

/// One RedLock attempt as node redlock makes it, over plain RESP: `SET key token NX PX
/// 30000` on each master (a master that cannot be reached is a vote against); the masters
/// that granted it.
async fn redlock_acquire(t: &Topology, key: &str, token: &str) -> Vec<usize> {
    let mut granted = Vec::new();
    for (i, node) in t.nodes().into_iter().enumerate() {
        let Ok(mut con) = try_conn(&t.url(node)).await else {
            continue;
        };
        if py_acquire(&mut con, key, token).await {
            granted.push(i);
        }
    }
    granted
}

/// Three independent masters observing `lock:*`.
async fn three_masters(seed: u64) -> Topology {
    Topology::builder()
        .masters(3)
        .seed(seed)
        .observe(["lock:*"])
        .build()
        .await
        .unwrap()
}

#[tokio::test(start_paused = true)]
async fn redlock_on_three_masters_is_double_granted_by_a_restart_that_loses_the_key() {
    let t = three_masters(46).await;
    let mut admin = conn(&t.url(t.nodes()[0])).await;
    // n2 is down while A locks: two of three is a quorum.
    let _: String = run(&mut admin, &["LOCKSMITH.KILL", "n2"]).await.unwrap();
    assert_eq!(redlock_acquire(&t, "lock:r", "tokA").await, [0, 1]);
    let _: String = run(&mut admin, &["LOCKSMITH.RESTART", "n2"]).await.unwrap();
    assert!(
        check(&mut admin).await.is_empty(),
        "A holds a quorum, alone"
    );
    // n1 restarts without its data: A's key there is gone, and B gets n1 and n2.
    let _: String = run(&mut admin, &["LOCKSMITH.RESTART", "n1"]).await.unwrap();
    assert_eq!(redlock_acquire(&t, "lock:r", "tokB").await, [1, 2]);

    let violations = check(&mut admin).await;
    assert_eq!(violations.len(), 1, "{violations:#?}");
    let v = &violations[0];
    assert_eq!(v["kind"], "double-grant");
    assert_eq!(
        (v["first-owner"].as_str(), v["second-owner"].as_str()),
        ("tokA", "tokB")
    );
    // Each hold is named by the master that made its quorum.
    assert_eq!(
        (v["first-node"].as_str(), v["second-node"].as_str()),
        ("n1", "n2")
    );
    assert!(v["faults"].contains("restart n1"), "{v:?}");
    let found = t.check();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].kind, LockViolationKind::DoubleGrant);
}

#[tokio::test(start_paused = true)]
async fn redlock_on_three_masters_without_a_loss_reports_nothing() {
    let t = three_masters(47).await;
    let mut admin = conn(&t.url(t.nodes()[0])).await;
    assert_eq!(redlock_acquire(&t, "lock:r", "tokA").await, [0, 1, 2]);
    // B gets no master: no quorum, nothing to roll back.
    assert!(redlock_acquire(&t, "lock:r", "tokB").await.is_empty());
    for node in t.nodes() {
        let mut con = conn(&t.url(node)).await;
        assert!(py_release(&mut con, "lock:r", "tokA").await);
    }
    // Someone else's single key on n0 (a minority) beside C's quorum on n1 and n2 is no
    // double grant; n0 losing its keys (that one and one of D's three) leaves D a quorum.
    let mut n0 = conn(&t.url(t.nodes()[0])).await;
    assert!(py_acquire(&mut n0, "lock:r", "someone").await);
    assert_eq!(redlock_acquire(&t, "lock:r", "tokC").await, [1, 2]);
    assert_eq!(redlock_acquire(&t, "lock:s", "tokD").await, [0, 1, 2]);
    let _: String = run(&mut admin, &["LOCKSMITH.RESTART", "n0"]).await.unwrap();
    let mut admin = conn(&t.url(t.nodes()[0])).await;
    assert_eq!(
        check(&mut admin).await,
        Vec::<BTreeMap<String, String>>::new()
    );
    // n1 losing its keys leaves C and D one master each: both grants are lost.
    let _: String = run(&mut admin, &["LOCKSMITH.RESTART", "n1"]).await.unwrap();
    let violations = check(&mut admin).await;
    let kinds: Vec<(&str, &str, &str)> = violations
        .iter()
        .map(|v| {
            (
                v["kind"].as_str(),
                v["key"].as_str(),
                v["first-owner"].as_str(),
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            ("lost-grant", "lock:r", "tokC"),
            ("lost-grant", "lock:s", "tokD")
        ],
        "{violations:#?}"
    );
}

/// Redisson's fenced acquire: the fencing token when `owner` got the lock.
async fn fenced_acquire(con: &mut MultiplexedConnection, key: &str, owner: &str) -> Option<i64> {
    let counter = format!("redisson_lock_token:{{{key}}}");
    let r: Vec<i64> = run(
        con,
        &[
            "EVAL",
            REDISSON_FENCED_ACQUIRE,
            "2",
            key,
            &counter,
            "30000",
            owner,
        ],
    )
    .await
    .unwrap();
    (r.first() == Some(&-1))
        .then(|| r.get(1).copied())
        .flatten()
}

#[tokio::test(start_paused = true)]
async fn a_failover_that_loses_the_token_counter_hands_out_a_fencing_token_twice() {
    let t = topology(48).await;
    let mut a = front(&t).await;
    let _: String = run(&mut a, &["LOCKSMITH.OBSERVE", "lock:*"]).await.unwrap();
    assert_eq!(fenced_acquire(&mut a, "lock:f", OWNER_A).await, Some(1));
    assert_eq!(
        redisson_release(&mut a, "lock:f", OWNER_A, 1).await,
        Some(1)
    );
    // Released before B's grant: no double grant. But the replica, 2 s behind, has neither
    // the grant nor the counter's increment: B's token is 1 again.
    let _: String = run(&mut a, &["LOCKSMITH.FAILOVER"]).await.unwrap();
    let mut b = front(&t).await;
    assert_eq!(fenced_acquire(&mut b, "lock:f", OWNER_B).await, Some(1));

    let violations = check(&mut b).await;
    assert_eq!(violations.len(), 1, "{violations:#?}");
    let v = &violations[0];
    assert_eq!(v["kind"], "repeated-token");
    assert_eq!(
        (v["first-owner"].as_str(), v["second-owner"].as_str()),
        (OWNER_A, OWNER_B)
    );
    assert_eq!(v["first-ended-by"], "release");
    let tokens: Vec<Option<i64>> = t
        .observed_events()
        .into_iter()
        .filter(|e| e.kind == LockEventKind::Grant && !e.replica)
        .map(|e| e.token)
        .collect();
    assert_eq!(tokens, [Some(1), Some(1)]);

    // Without the failover the counter goes on: 1 then 2, nothing reported.
    let t = topology(49).await;
    let mut a = front(&t).await;
    let _: String = run(&mut a, &["LOCKSMITH.OBSERVE", "lock:*"]).await.unwrap();
    assert_eq!(fenced_acquire(&mut a, "lock:f", OWNER_A).await, Some(1));
    assert_eq!(
        redisson_release(&mut a, "lock:f", OWNER_A, 1).await,
        Some(1)
    );
    assert_eq!(fenced_acquire(&mut a, "lock:f", OWNER_B).await, Some(2));
    assert!(check(&mut a).await.is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_restart_that_keeps_its_data_keeps_the_grant_and_one_that_loses_it_is_reported() {
    let t = Topology::builder()
        .seed(50)
        .observe(["lock:*"])
        .build()
        .await
        .unwrap();
    let mut a = front(&t).await;
    assert!(py_acquire(&mut a, "lock:k", "tokA").await);
    tokio::time::sleep(Duration::from_millis(1000)).await;
    // The node comes back with everything up to its crash: A still holds the lock there.
    let _: String = run(&mut a, &["LOCKSMITH.RESTART", "n0", "KEEP-DATA"])
        .await
        .unwrap();
    let mut a = front(&t).await;
    assert!(check(&mut a).await.is_empty());
    let held = locks(&mut a).await;
    assert_eq!(held.len(), 1, "{held:?}");
    assert_eq!(held[0]["owner"], "tokA");
    let mut b = front(&t).await;
    assert!(!py_acquire(&mut b, "lock:k", "tokB").await, "still A's");

    // A second grant, 100 ms before a restart that loses the last 500 ms: gone.
    assert!(py_acquire(&mut b, "lock:j", "tokB").await);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let _: String = run(
        &mut b,
        &[
            "LOCKSMITH.RESTART",
            "n0",
            "KEEP-DATA",
            "LOSE-LAST-MS",
            "500",
        ],
    )
    .await
    .unwrap();
    let mut b = front(&t).await;
    let violations = check(&mut b).await;
    assert_eq!(violations.len(), 1, "{violations:#?}");
    assert_eq!(
        (
            violations[0]["kind"].as_str(),
            violations[0]["key"].as_str(),
            violations[0]["first-owner"].as_str()
        ),
        ("lost-grant", "lock:j", "tokB")
    );
    let held: Vec<String> = locks(&mut b)
        .await
        .into_iter()
        .map(|l| format!("{} {}", l["key"], l["owner"]))
        .collect();
    assert_eq!(held, ["lock:k tokA"]);
}

/// Redisson's semaphore, permit-expirable semaphore and latch scripts (`lock/src/scripts.rs`
/// has them with their KEYS and ARGV).
const SEMAPHORE_TRY_SET: &str = "local value = redis.call('get', KEYS[1]); if (value == false) then redis.call('set', KEYS[1], ARGV[1]); redis.call(ARGV[2], KEYS[2], ARGV[1]); return 1;end;return 0;";
const SEMAPHORE_TRY_ACQUIRE: &str = "local value = redis.call('get', KEYS[1]); if (value ~= false and tonumber(value) >= tonumber(ARGV[1])) then local val = redis.call('decrby', KEYS[1], ARGV[1]); return 1; end; return 0;";
const SEMAPHORE_RELEASE: &str =
    "local value = redis.call('incrby', KEYS[1], ARGV[1]); redis.call(ARGV[2], KEYS[2], value); ";
const SEMAPHORE_ADD: &str = "local value = redis.call('get', KEYS[1]); if (value == false) then value = 0;end;redis.call('set', KEYS[1], value + ARGV[1]); redis.call(ARGV[2], KEYS[2], value + ARGV[1]); ";
const PES_TRY_ACQUIRE: &str = "local expiredIds = redis.call('zrangebyscore', KEYS[2], 0, ARGV[3], 'limit', 0, ARGV[1]); if #expiredIds > 0 then redis.call('zrem', KEYS[2], unpack(expiredIds)); local value = redis.call('incrby', KEYS[1], #expiredIds); if tonumber(value) > 0 then redis.call(ARGV[5], KEYS[3], value); end;end; local value = redis.call('get', KEYS[1]); if (value ~= false and tonumber(value) >= tonumber(ARGV[1])) then redis.call('decrby', KEYS[1], ARGV[1]); for i = 6, #ARGV, 1 do redis.call('zadd', KEYS[2], ARGV[2], ARGV[i]); end; local ttl = redis.call('pttl', KEYS[1]); if ttl > 0 then redis.call('pexpire', KEYS[2], ttl); end; return 'OK'; end; local v = redis.call('zrange', KEYS[2], 0, 0, 'WITHSCORES'); if v[1] ~= nil and v[2] ~= ARGV[4] then return ':' .. tostring(v[2]); end return nil;";
const PES_TRY_RELEASE: &str = "local expire = redis.call('zscore', KEYS[3], ARGV[1]);local removed = redis.call('zrem', KEYS[3], ARGV[1]);if tonumber(removed) ~= 1 then return 0;end;local value = redis.call('incrby', KEYS[1], ARGV[2]); redis.call(ARGV[4], KEYS[2], value); if tonumber(expire) <= tonumber(ARGV[3]) then return 0;end;return 1;";
const PES_TRY_SET_PERMITS: &str = "local value = redis.call('get', KEYS[1]); if (value == false) then redis.call('set', KEYS[1], ARGV[1]); redis.call(ARGV[2], KEYS[2], ARGV[1]); return 1;end;return 0;";
const LATCH_TRY_SET: &str = "if redis.call('exists', KEYS[1]) == 0 then redis.call('set', KEYS[1], ARGV[2]); redis.call(ARGV[3], KEYS[2], ARGV[1]); return 1 else return 0 end";
const LATCH_COUNT_DOWN: &str = "local v = redis.call('decr', KEYS[1]);if v <= 0 then redis.call('del', KEYS[1]) end;if v == 0 then redis.call(ARGV[2], KEYS[2], ARGV[1]) end;";

/// `EVAL script` with `keys` then `args`.
async fn eval(
    con: &mut MultiplexedConnection,
    script: &str,
    keys: &[&str],
    args: &[&str],
) -> Value {
    let n = keys.len().to_string();
    let mut argv = vec!["EVAL", script, &n];
    argv.extend_from_slice(keys);
    argv.extend_from_slice(args);
    run(con, &argv).await.unwrap()
}

/// `RSemaphore`: trySetPermits, tryAcquire, release, addPermits (name `sem:s`).
async fn semaphore(con: &mut MultiplexedConnection, script: &str, permits: &str) -> Value {
    eval(
        con,
        script,
        &["sem:s", "redisson_sc:{sem:s}"],
        &[permits, "PUBLISH"],
    )
    .await
}

#[tokio::test(start_paused = true)]
async fn a_failover_that_loses_a_semaphore_take_lets_more_permits_be_held_than_it_has() {
    let t = topology(51).await;
    let mut a = front(&t).await;
    let _: String = run(&mut a, &["LOCKSMITH.OBSERVE", "sem:*"]).await.unwrap();
    assert_eq!(
        semaphore(&mut a, SEMAPHORE_TRY_SET, "1").await,
        Value::Int(1)
    );
    // The replica gets the semaphore, then lags A's take by 2 s.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let take = |con| async move {
        let mut con = con;
        eval(&mut con, SEMAPHORE_TRY_ACQUIRE, &["sem:s"], &["1"]).await
    };
    assert_eq!(take(a.clone()).await, Value::Int(1));
    let _: String = run(&mut a, &["LOCKSMITH.FAILOVER"]).await.unwrap();
    let b = front(&t).await;
    assert_eq!(
        take(b.clone()).await,
        Value::Int(1),
        "the promoted replica had a permit"
    );

    let mut b = b;
    let violations = check(&mut b).await;
    assert_eq!(violations.len(), 1, "{violations:#?}");
    let v = &violations[0];
    assert_eq!(
        (v["kind"].as_str(), v["key"].as_str()),
        ("over-limit", "sem:s")
    );
    assert_eq!(v["first-node"], "n1");
    assert!(v["text"].contains("2 permits held of 1"), "{v:?}");
    assert!(v["faults"].contains("fail_master n0 -> n1"), "{v:?}");
}

#[tokio::test(start_paused = true)]
async fn semaphore_takes_returns_and_added_permits_without_a_fault_report_nothing() {
    let t = topology(52).await;
    let mut a = front(&t).await;
    let _: String = run(&mut a, &["LOCKSMITH.OBSERVE", "sem:*"]).await.unwrap();
    assert_eq!(
        semaphore(&mut a, SEMAPHORE_TRY_SET, "1").await,
        Value::Int(1)
    );
    let take = |con| async move {
        let mut con = con;
        eval(&mut con, SEMAPHORE_TRY_ACQUIRE, &["sem:s"], &["1"]).await
    };
    assert_eq!(take(a.clone()).await, Value::Int(1));
    assert_eq!(take(a.clone()).await, Value::Int(0), "none left");
    let _ = semaphore(&mut a, SEMAPHORE_ADD, "1").await;
    assert_eq!(take(a.clone()).await, Value::Int(1), "the added permit");
    let _ = semaphore(&mut a, SEMAPHORE_RELEASE, "1").await;
    let _ = semaphore(&mut a, SEMAPHORE_RELEASE, "1").await;
    assert_eq!(take(a.clone()).await, Value::Int(1));
    assert_eq!(take(a.clone()).await, Value::Int(1));
    assert!(check(&mut a).await.is_empty());
    let kinds: Vec<(LockEventKind, i64)> = t
        .observed_events()
        .into_iter()
        .filter(|e| !e.replica)
        .map(|e| (e.kind, e.count))
        .collect();
    assert_eq!(
        kinds,
        [
            (LockEventKind::Set, 1),
            (LockEventKind::Take, 1),
            (LockEventKind::Set, 1),
            (LockEventKind::Take, 1),
            (LockEventKind::Return, 1),
            (LockEventKind::Return, 1),
            (LockEventKind::Take, 1),
            (LockEventKind::Take, 1),
        ]
    );
}

/// `RPermitExpirableSemaphore.tryAcquire` of one permit with `id` until `date` (ms), the
/// client's clock reading `now`.
async fn pes_acquire(con: &mut MultiplexedConnection, id: &str, date: &str, now: &str) -> Value {
    eval(
        con,
        PES_TRY_ACQUIRE,
        &["pes:p", "{pes:p}:timeout", "redisson_sc:{pes:p}"],
        &["1", date, now, "922337203685477", "PUBLISH", id],
    )
    .await
}

#[tokio::test(start_paused = true)]
async fn a_permit_id_granted_twice_is_reported_and_releases_and_expiries_are_observed() {
    let t = Topology::builder()
        .seed(53)
        .observe(["pes:*"])
        .build()
        .await
        .unwrap();
    let mut a = front(&t).await;
    let set = eval(
        &mut a,
        PES_TRY_SET_PERMITS,
        &["pes:p", "redisson_sc:{pes:p}"],
        &["3", "PUBLISH"],
    )
    .await;
    assert_eq!(set, Value::Int(1));
    // Id x until 2100; id y with a lease date already past (an expiry reclaims it).
    let far = "4102444800000";
    let ok = Value::BulkString(b"OK".to_vec());
    assert_eq!(pes_acquire(&mut a, "idx-0123456789ab", far, "1").await, ok);
    assert_eq!(pes_acquire(&mut a, "idy-0123456789ab", "5", "1").await, ok);
    assert!(check(&mut a).await.is_empty());
    let held = locks(&mut a).await;
    assert_eq!(held.len(), 2, "{held:?}");
    assert!(held
        .iter()
        .all(|l| l["layout"] == "permits" && l["key"] == "{pes:p}:timeout"));
    // A retried acquire with x's id (its first reply lost): two permits taken for one id.
    // Its `ZADD` changes nothing, so the node propagates only the take.
    assert_eq!(pes_acquire(&mut a, "idx-0123456789ab", far, "10").await, ok);
    let violations = check(&mut a).await;
    assert_eq!(violations.len(), 1, "{violations:#?}");
    let x = "6964782d303132333435363738396162";
    let v = &violations[0];
    assert_eq!(v["kind"], "permit-granted-twice");
    assert!(
        v["text"].contains("1 permits taken with no new permit id"),
        "{v:?}"
    );
    // Retried with another lease date, the `ZADD` moves x's date: a grant of a held id.
    let later = "4102444800001";
    assert_eq!(
        pes_acquire(&mut a, "idx-0123456789ab", later, "10").await,
        ok
    );
    let violations = check(&mut a).await;
    assert_eq!(violations.len(), 2, "{violations:#?}");
    let v = &violations[1];
    assert_eq!(v["kind"], "permit-granted-twice");
    assert_eq!(
        (v["first-owner"].as_str(), v["second-owner"].as_str()),
        (x, x)
    );
    // The retry's own reclaim (now = 10 > 5) expired y; x's release is observed.
    let n = eval(
        &mut a,
        PES_TRY_RELEASE,
        &["pes:p", "redisson_sc:{pes:p}", "{pes:p}:timeout"],
        &["idx-0123456789ab", "1", "10", "PUBLISH"],
    )
    .await;
    assert_eq!(n, Value::Int(1));
    let y = "6964792d303132333435363738396162";
    let kinds: Vec<(LockEventKind, String)> = t
        .observed_events()
        .into_iter()
        .filter(|e| e.layout == locksmith_harness::LockLayout::Permits)
        .map(|e| (e.kind, e.owner))
        .collect();
    assert_eq!(
        kinds,
        [
            (LockEventKind::Grant, x.to_string()),
            (LockEventKind::Grant, y.to_string()),
            (LockEventKind::Expiry, y.to_string()),
            (LockEventKind::Take, String::new()),
            (LockEventKind::Grant, x.to_string()),
            (LockEventKind::Release, x.to_string()),
        ]
    );
}

/// `RCountDownLatch`: trySetCount, countDown (name `latch:l`).
async fn latch_set(con: &mut MultiplexedConnection, count: &str) -> Value {
    eval(
        con,
        LATCH_TRY_SET,
        &["latch:l", "redisson_countdownlatch__channel__{latch:l}"],
        &["1", count, "PUBLISH"],
    )
    .await
}

async fn count_down(con: &mut MultiplexedConnection) {
    let _ = eval(
        con,
        LATCH_COUNT_DOWN,
        &["latch:l", "redisson_countdownlatch__channel__{latch:l}"],
        &["0", "PUBLISH"],
    )
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_latch_that_opened_and_is_closed_again_by_a_failover_is_reported() {
    let t = topology(54).await;
    let mut a = front(&t).await;
    let _: String = run(&mut a, &["LOCKSMITH.OBSERVE", "latch:*"])
        .await
        .unwrap();
    // Without a fault: counted down to zero, set again (a reset), counted down again.
    assert_eq!(latch_set(&mut a, "2").await, Value::Int(1));
    count_down(&mut a).await;
    count_down(&mut a).await;
    assert_eq!(latch_set(&mut a, "1").await, Value::Int(1));
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert!(check(&mut a).await.is_empty());
    // The replica has count 1; the master opens the latch, then fails over to it.
    count_down(&mut a).await;
    assert!(check(&mut a).await.is_empty());
    let _: String = run(&mut a, &["LOCKSMITH.FAILOVER"]).await.unwrap();
    let mut b = front(&t).await;
    let violations = check(&mut b).await;
    assert_eq!(violations.len(), 1, "{violations:#?}");
    let v = &violations[0];
    assert_eq!(
        (v["kind"].as_str(), v["key"].as_str()),
        ("latch-reopened", "latch:l")
    );
    assert_eq!(v["first-node"], "n1");
    assert!(v["faults"].contains("fail_master n0 -> n1"), "{v:?}");
}

#[tokio::test(start_paused = true)]
async fn a_latch_lost_above_zero_opens_early() {
    let t = topology(55).await;
    let mut a = front(&t).await;
    let _: String = run(&mut a, &["LOCKSMITH.OBSERVE", "latch:*"])
        .await
        .unwrap();
    assert_eq!(latch_set(&mut a, "2").await, Value::Int(1));
    count_down(&mut a).await;
    // Neither write reached the replica: the promoted node has no latch, which reads as 0.
    let _: String = run(&mut a, &["LOCKSMITH.FAILOVER"]).await.unwrap();
    let mut b = front(&t).await;
    let violations = check(&mut b).await;
    assert_eq!(violations.len(), 1, "{violations:#?}");
    assert_eq!(violations[0]["kind"], "latch-opened-early");
    assert!(
        violations[0]["text"].contains("lost at count 1"),
        "{violations:?}"
    );
}

/// The README's example ("Fault testing from any language"), on virtual time so its picture
/// is the same every run: `docs/pictures/run.sh` checks the timeline this writes to
/// `<target>/tmp/locksmith-timelines/observed_failover.html` and screenshots it.
#[tokio::test(start_paused = true)]
async fn the_readme_example_draws_its_observed_timeline() {
    let t = lagging(1, Some(&["lock:*"])).await;
    let mut a = front(&t).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(py_acquire(&mut a, "lock:k", "tokA").await);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let _: String = run(&mut a, &["LOCKSMITH.MARK", "A in its critical section"])
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let _: String = run(&mut a, &["LOCKSMITH.FAILOVER"]).await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut b = front(&t).await;
    assert!(py_acquire(&mut b, "lock:k", "tokB").await);
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert!(py_release(&mut b, "lock:k", "tokB").await);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(check(&mut b).await.len(), 1);

    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("locksmith-timelines");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("observed_failover.html");
    let ok: String = run(&mut b, &["LOCKSMITH.TIMELINE", path.to_str().unwrap()])
        .await
        .unwrap();
    assert_eq!(ok, "OK");
    let html = std::fs::read_to_string(&path).unwrap();
    assert!(
        html.contains("class=\"violation\""),
        "the double grant is drawn"
    );
    eprintln!("timeline: {}", path.display());
}
