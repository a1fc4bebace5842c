//! Scenario 3, with the real library: `RedLock` over five independent masters. Three clients
//! contend for the lock in a loop while first one master, then a second one is killed; every
//! acquisition needs a majority (three), so the holds never overlap, and the lock keeps being
//! granted with only three masters left.

use crate::support;

use locksmith::harness::{Checker, NodeId, Topology};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::time::Duration;
use support::release;

const SEED: u64 = 3;
const RESOURCE: &str = "ledger";
const CONTENDERS: usize = 3;
const WAIT: Duration = Duration::from_millis(1000);
const LEASE: Duration = Duration::from_secs(5);
const HOLD: Duration = Duration::from_millis(300);
/// Contenders stop starting new attempts at this point of virtual time.
const RUN_FOR: Duration = Duration::from_secs(12);

#[tokio::test(start_paused = true)]
async fn redlock_survives_minority_loss() {
    support::init_tracing();
    let t = Topology::builder()
        .masters(5)
        .seed(SEED)
        .build()
        .await
        .unwrap();
    let history = t.history();
    let end = tokio::time::Instant::now() + RUN_FOR;
    let mut tasks = Vec::new();
    for i in 0..CONTENDERS {
        let (clients, red) = support::redlock(&t, RESOURCE).await;
        assert_eq!(red.quorum(), 3);
        let history = history.clone();
        let who = format!("client-{i}");
        let mut rng = StdRng::seed_from_u64(SEED * 100 + i as u64);
        tasks.push(tokio::spawn(async move {
            let mut held = Vec::new();
            for _ in 0..1000 {
                if tokio::time::Instant::now() >= end {
                    break;
                }
                let op = history.begin(who.as_str(), RESOURCE);
                let out = red.try_lock_for(Some(WAIT), Some(LEASE)).await.unwrap();
                if out.acquired {
                    op.acquired(None);
                    held.push(history.now_ms());
                    tokio::time::sleep(HOLD).await;
                    // Per-node failures (dead masters) are expected here.
                    let _ = release(&history, &who, RESOURCE, red.unlock()).await;
                } else {
                    op.failed();
                }
                tokio::time::sleep(Duration::from_millis(rng.random_range(10..100))).await;
            }
            (clients, held)
        }));
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    let first_kill = t.now_ms();
    t.kill(NodeId::from_index(0)).await.unwrap();
    tokio::time::sleep(Duration::from_secs(4)).await;
    let second_kill = t.now_ms();
    t.kill(NodeId::from_index(3)).await.unwrap();

    let mut acquisitions = Vec::new();
    for task in tasks {
        let (_clients, held) = task.await.unwrap();
        acquisitions.extend(held);
    }
    acquisitions.sort_unstable();
    locksmith_testkit::write_timeline!(
        "redlock_survives_minority_loss",
        "RedLock on 5 masters, 3 contenders; n0 then n3 killed: no double grant",
        &history,
    );
    let violations = Checker::check(&history);
    assert!(violations.is_empty(), "{violations:?}");
    let phase = |from: u64, to: u64| {
        acquisitions
            .iter()
            .filter(|&&a| a >= from && a < to)
            .count()
    };
    let (all, one_down, two_down) = (
        phase(0, first_kill),
        phase(first_kill, second_kill),
        phase(second_kill, u64::MAX),
    );
    eprintln!("acquisitions: {all} with 5 masters, {one_down} with 4, {two_down} with 3");
    assert!(all > 0 && one_down > 0 && two_down > 0);
    assert_eq!(
        t.history()
            .faults()
            .into_iter()
            .map(|f| f.label())
            .collect::<Vec<_>>(),
        ["kill n0", "kill n3"]
    );
}
