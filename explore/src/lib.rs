//! Deterministic fault exploration for Redis locks: what Jepsen does against real clusters
//! over hours and FoundationDB's simulator does in-process, for the lock kinds of
//! `locksmith-lock`, in seconds.
//!
//! A run ([`run`]) builds an in-memory topology (`locksmith_harness`, nodes and links in
//! memory) on a current-thread runtime with paused time, starts the [`Workload`]'s clients
//! (lock clients opened over the topology's streams, seeded, on one virtual wall clock),
//! applies a [`Schedule`] of faults, and checks the history for mutual-exclusion violations
//! and liveness problems. The seed alone decides the interleaving: the same workload,
//! schedule and seed give the same history, byte for byte ([`locksmith_harness::History::serialize`]).
//!
//! [`explore`] draws a schedule per seed from a [`FaultClass`], runs each, and on the first
//! unsafe run shrinks its schedule ([`shrink()`]) to a minimal one that still fails, with the
//! command that replays it ([`replay_command`]). Besides mutual exclusion a run is checked for
//! liveness (lost wake-ups, FIFO order, unnoticed losses, accepted foreign unlocks, and every
//! acquire returning within its wait outside faults) and for leaks (a lock key left without a
//! TTL). An exploration can run one [`Shard`] of its seeds; [`Summary::merge`] puts the shards'
//! summaries back together into exactly the whole range's.
//!
//! ```
//! use locksmith_explore::{explore, Exploration, FaultClass, LockKind, Workload};
//!
//! // The plain lock (no WAIT) loses mutual exclusion under failover with replication lag.
//! let report = explore(&Exploration::new(Workload::new(LockKind::Lock), FaultClass::Failover).seeds(0..50));
//! let finding = report.first.expect("a failover double grant within 50 seeds");
//! assert!(finding.outcome.is_unsafe());
//! println!("seed {}: {}\n{}", finding.seed, finding.minimal, finding.replay);
//! ```

mod checks;
mod latch;
mod run;
mod schedule;
pub mod shrink;
mod summary;
mod workload;

pub use run::{run, Outcome};
pub use schedule::{Fault, FaultClass, FaultKind, Schedule, ScheduleError};
pub use shrink::shrink;
pub use summary::{FirstUnsafe, Shard, Summary, SummaryError};
pub use workload::{LockKind, Workload, PERMITS, RESOURCE};

use std::ops::Range;

/// One cell of exploration: a workload, a class of faults, a range of seeds (a plain data
/// record with a builder).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exploration {
    /// What the clients do.
    pub workload: Workload,
    /// Which faults the schedules draw from.
    pub class: FaultClass,
    /// The seeds to run, one run each.
    pub seeds: Range<u64>,
    /// The part of `seeds` this exploration runs (the whole range by default).
    pub shard: Shard,
    /// Most faults a schedule draws.
    pub max_faults: usize,
    /// Most runs the shrinker spends on the first failing schedule.
    pub shrink_budget: usize,
}

impl Exploration {
    /// Seeds 0..200, up to 4 faults a run, a shrink budget of 60 runs.
    pub fn new(workload: Workload, class: FaultClass) -> Self {
        Exploration {
            workload,
            class,
            seeds: 0..200,
            shard: Shard::WHOLE,
            max_faults: 4,
            shrink_budget: 60,
        }
    }

    /// Sets the seeds.
    pub fn seeds(mut self, seeds: Range<u64>) -> Self {
        self.seeds = seeds;
        self
    }

    /// Runs only `shard`'s part of the seeds (see [`Summary::merge`] for putting the parts
    /// back together).
    pub fn shard(mut self, shard: Shard) -> Self {
        self.shard = shard;
        self
    }

    /// Sets the most faults a schedule draws.
    pub fn max_faults(mut self, max_faults: usize) -> Self {
        self.max_faults = max_faults;
        self
    }

    /// The schedule seed `seed` draws.
    pub fn schedule(&self, seed: u64) -> Schedule {
        let kind = self.workload.kind;
        Schedule::generate(
            seed,
            self.class,
            kind.nodes(),
            kind.replicas() > 0,
            self.workload.run_ms,
            self.workload.lease_ms,
            self.max_faults,
        )
    }
}

/// The first unsafe run of an exploration, shrunk (a plain data record).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Finding {
    /// Its seed.
    pub seed: u64,
    /// The schedule the seed drew.
    pub schedule: Schedule,
    /// The smallest schedule found that still fails with that seed.
    pub minimal: Schedule,
    /// The run of the minimal schedule.
    pub outcome: Outcome,
    /// The command that replays the minimal run exactly.
    pub replay: String,
}

/// What an exploration found (a plain data record).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Report {
    /// The exploration.
    pub exploration: Exploration,
    /// Runs made (shrinking not counted).
    pub runs: u64,
    /// Runs with a safety violation.
    pub unsafe_runs: u64,
    /// Runs with a liveness problem (lost wake-up, FIFO order, unnoticed loss, accepted
    /// foreign unlock).
    pub liveness_runs: u64,
    /// Runs where an acquire returned later than its wait allows, outside faults (counted
    /// among the liveness runs too).
    pub wait_overrun_runs: u64,
    /// Runs that left a lock key without a TTL behind.
    pub leak_runs: u64,
    /// The first unsafe run, shrunk.
    pub first: Option<Finding>,
    /// The first run with a liveness problem (not shrunk), its seed and what was found.
    pub first_liveness: Option<(u64, Vec<String>)>,
}

/// Runs every seed of `exploration` (of its shard); shrinks the first unsafe run.
pub fn explore(exploration: &Exploration) -> Report {
    let mut report = Report {
        exploration: exploration.clone(),
        runs: 0,
        unsafe_runs: 0,
        liveness_runs: 0,
        wait_overrun_runs: 0,
        leak_runs: 0,
        first: None,
        first_liveness: None,
    };
    let shard = exploration.shard;
    for seed in exploration.seeds.clone().filter(|&s| shard.holds(s)) {
        let schedule = exploration.schedule(seed);
        let outcome = run(exploration.workload, &schedule, seed);
        report.runs += 1;
        if !outcome.leaks.is_empty() {
            report.leak_runs += 1;
        }
        if outcome.overran_a_wait() {
            report.wait_overrun_runs += 1;
        }
        if !outcome.liveness.is_empty() {
            report.liveness_runs += 1;
            if report.first_liveness.is_none() {
                let found = outcome.liveness.iter().map(ToString::to_string).collect();
                report.first_liveness = Some((seed, found));
            }
        }
        if outcome.is_unsafe() {
            report.unsafe_runs += 1;
            if report.first.is_none() {
                report.first = Some(finding(exploration, seed, schedule, outcome));
            }
        }
    }
    report
}

/// Shrinks an unsafe run's schedule and packs the result.
fn finding(exploration: &Exploration, seed: u64, schedule: Schedule, outcome: Outcome) -> Finding {
    let workload = exploration.workload;
    let minimal = shrink(
        &schedule,
        workload.run_ms,
        exploration.shrink_budget,
        |candidate| run(workload, candidate, seed).is_unsafe(),
    );
    let outcome = if minimal == schedule {
        outcome
    } else {
        run(workload, &minimal, seed)
    };
    Finding {
        seed,
        replay: replay_command(workload.kind, seed, &minimal),
        schedule,
        minimal,
        outcome,
    }
}

/// The command that replays one run exactly (the `safety-matrix` example's `replay`).
pub fn replay_command(kind: LockKind, seed: u64, schedule: &Schedule) -> String {
    format!(
        "cargo run --release --example safety-matrix -- replay --kind {kind} --seed {seed} --schedule '{schedule}'"
    )
}
