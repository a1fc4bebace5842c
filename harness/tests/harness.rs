//! The harness's tests, one binary (linking one test binary instead of nine saves minutes of a
//! cold `cargo test --workspace`): topologies, faults, failover, leases, RedLock, replication,
//! Sentinel, cluster shards, authentication, and the command-line binary.

mod harness {
    mod auth;
    mod cli;
    mod cluster;
    mod determinism;
    mod failover;
    mod faults;
    mod leases;
    mod redlock;
    mod replication;
    mod sentinel;
}
