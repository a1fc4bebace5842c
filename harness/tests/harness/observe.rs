//! Lock observation (issue 38): the harness recognises the locks of unmodified clients from
//! the nodes' writes and checks them. Each test drives a topology with the commands a client
//! library sends — redis-py's `Lock` (`SET name token NX PX ms`, a compare-and-delete
//! release and a compare-and-`PEXPIRE` extend script by `EVAL`) and Redisson's `RLock` scripts
//! (`owner -> count` hash) — and asks `LOCKSMITH.CHECK`, `LOCKSMITH.LOCKS` and
//! `LOCKSMITH.HISTORY` over the wire, as a test in any language would.

use locksmith_testkit::harness as harness_support;

use harness_support::{conn, run};
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

const OWNER_A: &str = "8b5a4a36-4e0c-4c6a-9a4e-0a1b2c3d4e5f:1";
const OWNER_B: &str = "f0e1d2c3-b4a5-4968-8776-655443322110:1";

async fn topology(seed: u64) -> Topology {
    Topology::builder()
        .replicas(1)
        .replication_delay(Duration::from_millis(2000))
        .seed(seed)
        .build()
        .await
        .unwrap()
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
    let t = Topology::builder()
        .replicas(1)
        .replication_delay(Duration::from_millis(2000))
        .seed(40)
        .observe(["lock:*"])
        .build()
        .await
        .unwrap();
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
    let t = Topology::builder()
        .replicas(1)
        .replication_delay(Duration::from_millis(2000))
        .seed(41)
        .observe(Vec::<String>::new())
        .build()
        .await
        .unwrap();
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
