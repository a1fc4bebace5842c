//! Scenario 5, with the real library: a holder with an explicit lease (no watchdog) stops for
//! longer than its lease (a GC pause, a stopped VM: here it simply does nothing on virtual time).
//! The lock expires, a second client acquires it, and the first wakes up still believing it
//! holds the lock: the holds overlap. With `FencedLock` tokens, a resource that remembers the
//! highest token it accepted rejects the stale holder's write.

use crate::support;

use locksmith::harness::{Checker, EventKind, Fault, History, Topology};
use locksmith::lock::{Client, LostReason};
use locksmith_lock::Connection;
use std::time::Duration;
use support::{acquire_fenced, release};

const SEED: u64 = 5;
const RESOURCE: &str = "invoice-42";
const LEASE: Duration = Duration::from_secs(5);
const PAUSE: Duration = Duration::from_secs(6);

/// The protected resource: accepts a write only with a token at least as new as the newest
/// one it has accepted (the check and the write are one script, so atomic).
const FENCED_WRITE: &str = r"
local newest = tonumber(redis.call('GET', KEYS[1]) or '0')
if tonumber(ARGV[1]) < newest then return 0 end
redis.call('SET', KEYS[1], ARGV[1])
redis.call('SET', KEYS[2], ARGV[2])
return 1
";

async fn write(con: &mut Connection, history: &History, who: &str, token: i64) -> bool {
    let op = history.begin(who, RESOURCE);
    let accepted: i64 = redis::Script::new(FENCED_WRITE)
        .key("resource:token")
        .key("resource:data")
        .arg(token)
        .arg(format!("written by {who}"))
        .invoke_async(con)
        .await
        .unwrap();
    op.wrote(Some(token as u64), accepted == 1);
    accepted == 1
}

#[tokio::test(start_paused = true)]
async fn paused_holder_overlaps_and_fencing_rejects_it() {
    support::init_tracing();
    let t = Topology::builder().seed(SEED).build().await.unwrap();
    let history = t.history();
    let a = Client::open(&t.front_url()).await.unwrap();
    let b = Client::open(&t.front_url()).await.unwrap();
    let lock_a = a.fenced_lock(RESOURCE);
    let lock_b = b.fenced_lock(RESOURCE);

    let token_a = acquire_fenced(&history, "client-a", RESOURCE, async {
        lock_a.lock_with_lease_and_get_token(LEASE).await.map(Some)
    })
    .await
    .unwrap()
    .unwrap();
    // An explicit lease: nothing renews it.
    assert_eq!(lock_a.remaining_ttl().await.unwrap(), Some(LEASE));
    let mut con_a = a.connection();
    assert!(write(&mut con_a, &history, "client-a", token_a).await);

    // B waits for the lock; it gets it when A's lease runs out.
    // The handle moves into the waiting task and comes back with the token (a clone would be
    // another owner).
    let waiter = {
        let history = history.clone();
        tokio::spawn(async move {
            let token = acquire_fenced(&history, "client-b", RESOURCE, async {
                lock_b.lock_with_lease_and_get_token(LEASE).await.map(Some)
            })
            .await
            .unwrap()
            .unwrap();
            (token, lock_b)
        })
    };

    // A stops for longer than its lease: it neither renews nor notices anything.
    let pause = history.fault(Fault::ClientPause {
        client: "client-a".into(),
        duration: PAUSE,
    });
    let paused_at = tokio::time::Instant::now();
    let (token_b, lock_b) = waiter.await.unwrap();
    assert!(token_b > token_a);
    assert_eq!(
        paused_at.elapsed(),
        LEASE,
        "B got it the moment A's lease ran out"
    );
    let mut con_b = b.connection();
    assert!(write(&mut con_b, &history, "client-b", token_b).await);
    tokio::time::sleep_until(paused_at + PAUSE).await;
    history.fault_ended(pause);

    // A wakes up and carries on with its critical section: the token gives it away.
    assert!(!write(&mut con_a, &history, "client-a", token_a).await);
    let data: String = redis::cmd("GET")
        .arg("resource:data")
        .query_async(&mut con_b)
        .await
        .unwrap();
    assert_eq!(data, "written by client-b");
    // The library knew: A's lost signal fired when its lease ran out.
    let mut lost = lock_a.lost_signal().unwrap();
    assert_eq!(lost.lost().await, Some(LostReason::LeaseExpired));
    let err = release(&history, "client-a", RESOURCE, lock_a.unlock())
        .await
        .unwrap_err();
    assert!(err.is_not_owner(), "{err:?}");
    release(&history, "client-b", RESOURCE, lock_b.unlock())
        .await
        .unwrap();

    locksmith_testkit::write_timeline!(
        "paused_holder_overlaps_and_fencing_rejects_it",
        "FencedLock with a 5 s lease, holder paused 6 s: overlap, stale write rejected",
        &history,
    );
    let violations = Checker::check(&history);
    assert_eq!(violations.len(), 1, "{violations:?}");
    let v = &violations[0];
    eprintln!("violation: {v}");
    assert_eq!(
        (v.first.client.as_str(), v.second.client.as_str()),
        ("client-a", "client-b")
    );
    assert_eq!(v.fencing_rejects_stale, Some(true));
    assert!(v.faults.iter().any(|f| f.starts_with("client-a paused")));
    let rejected: Vec<_> = history
        .events()
        .into_iter()
        .filter(|e| e.kind == EventKind::Write { accepted: false })
        .collect();
    assert_eq!(rejected.len(), 1);
    assert_eq!(rejected[0].client, "client-a");
    assert_eq!(rejected[0].token, Some(token_a as u64));
}
