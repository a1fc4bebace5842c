//! The lock library's behaviour, one test binary (linking one binary instead of nineteen saves
//! minutes of a cold `cargo test --workspace`): every test runs against each backend of
//! `support::backends()` — our in-process server and, when it is on the PATH, a real redis-server.

mod support;

mod library {
    mod blocking;
    mod cluster;
    mod contention;
    mod extremes;
    mod fair;
    mod fence;
    mod guard;
    mod interop;
    mod kinds;
    mod latch;
    mod lock;
    mod model;
    mod multi;
    mod permit_semaphore;
    mod pubsub;
    mod replicas;
    mod rwlock;
    mod safety;
    mod semaphore;
    mod sentinel;
    mod streams;
    mod watchdog;
}
