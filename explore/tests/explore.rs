//! The explorer against the literature: it finds the plain lock's failover double grant and
//! RedLock's clock-jump double grant, finds nothing for the WAIT-synced lock under failovers,
//! and a run replays byte for byte from its seed and schedule.

use locksmith_explore::{
    explore, replay_command, run, Exploration, FaultClass, LockKind, Schedule, Workload,
};

#[test]
fn the_plain_lock_loses_mutual_exclusion_under_failover_within_50_seeds() {
    let report = explore(
        &Exploration::new(Workload::new(LockKind::Lock), FaultClass::Failover).seeds(0..50),
    );
    let finding = report.first.expect("a double grant within 50 seeds");
    assert!(finding.outcome.is_unsafe());
    // The minimal schedule still fails, replays, and is one failover.
    assert!(finding.minimal.faults.len() <= finding.schedule.faults.len());
    let again = run(
        Workload::new(LockKind::Lock),
        &finding.minimal,
        finding.seed,
    );
    assert!(again.is_unsafe());
    assert_eq!(
        again.history.serialize(),
        finding.outcome.history.serialize()
    );
    assert_eq!(
        finding.replay,
        replay_command(LockKind::Lock, finding.seed, &finding.minimal)
    );
    assert!(
        finding.replay.contains("--schedule 'failover/"),
        "{}",
        finding.replay
    );
}

#[test]
fn redlock_loses_mutual_exclusion_under_clock_jumps() {
    // A RedLock holder of this workload almost always holds all five nodes, so a double grant
    // needs jumps on a majority of them (or a bare majority, which races make rare): the first
    // such seed is 319 of the default drawing.
    let report = explore(
        &Exploration::new(Workload::new(LockKind::RedLock), FaultClass::Clock).seeds(0..400),
    );
    let finding = report.first.expect("a clock-jump double grant");
    assert!(finding
        .minimal
        .faults
        .iter()
        .all(|f| f.kind.name().starts_with("clock")));
}

#[test]
fn the_wait_synced_lock_survives_failovers_in_200_seeds() {
    let report = explore(
        &Exploration::new(Workload::new(LockKind::LockSynced), FaultClass::Failover).seeds(0..200),
    );
    assert_eq!(report.runs, 200);
    assert_eq!(
        report.unsafe_runs,
        0,
        "{:?}",
        report.first.map(|f| (f.seed, f.minimal.to_string()))
    );
}

#[test]
fn a_run_replays_exactly_and_seeds_differ() {
    let schedule: Schedule = "pause/n0/1500/2500/0,link-latency/n1/4000/1000/40"
        .parse()
        .unwrap();
    let workload = Workload::new(LockKind::FairLock);
    let a = run(workload, &schedule, 9).history.serialize();
    let b = run(workload, &schedule, 9).history.serialize();
    assert!(a.contains("acquired"), "{a}");
    assert_eq!(a, b);
    assert_ne!(a, run(workload, &schedule, 10).history.serialize());
}
