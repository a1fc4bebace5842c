//! The harness's tests, one binary (linking one test binary instead of nine saves minutes of a
//! cold `cargo test --workspace`): topologies, faults, restarts that keep data, failover,
//! leases, RedLock, replication, Sentinel, cluster shards, authentication, and the command-line
//! binary.

mod harness {
    mod auth;
    mod cli;
    mod cluster;
    mod determinism;
    mod failover;
    mod faults;
    mod keep_data;
    mod leases;
    mod observe;
    mod redlock;
    mod replication;
    mod sentinel;
}
