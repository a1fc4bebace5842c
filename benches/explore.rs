//! Fault exploration speed: one seeded run of the explorer (3 nodes, 3 clients, 10 s of
//! virtual time) without faults and under a failover schedule, on one core. Seeds per second
//! per core is 1 / the time per run.
//!
//! Run: `cargo bench -p locksmith-benches --bench explore` (add `-- --quick` for a short run).
#![allow(missing_docs)]

use criterion::{criterion_group, criterion_main, Criterion};
use locksmith::explore::{run, Exploration, FaultClass, LockKind, Schedule, Workload};

fn runs(c: &mut Criterion) {
    let mut group = c.benchmark_group("explore");
    group.sample_size(20);
    let workload = Workload::new(LockKind::Lock);
    let quiet = Schedule::default();
    let mut seed = 0u64;
    group.bench_function("lock/no-faults", |b| {
        b.iter(|| {
            seed += 1;
            run(workload, &quiet, seed)
        });
    });
    let exploration = Exploration::new(workload, FaultClass::Failover);
    group.bench_function("lock/failover", |b| {
        b.iter(|| {
            seed += 1;
            run(workload, &exploration.schedule(seed), seed)
        });
    });
    group.finish();
}

criterion_group!(benches, runs);
criterion_main!(benches);
