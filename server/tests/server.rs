//! The server's tests against its public API and the wire, one binary (linking one test binary
//! instead of twenty saves minutes of a cold `cargo test --workspace`), in package
//! `locksmith-server-tests` (`cargo test -p locksmith-server-tests`), compiled unoptimized
//! against the server library. Most compare replies with a real redis-server when one is on the
//! PATH. The tests that start the built binary are the server package's `binary.rs`;
//! `many_clients` (10 000 sockets) is a binary of its own there.

mod server {
    mod acl;
    mod blocking;
    mod cluster;
    mod config_live;
    mod connection;
    mod debug;
    mod differential;
    mod expiry;
    mod extreme_args;
    mod geo;
    mod hashes;
    mod in_memory;
    mod introspection;
    mod keys;
    mod keyspace_stats;
    mod lazyfree;
    mod lists;
    mod lua_security;
    mod maxmemory;
    mod protocol;
    mod pubsub;
    mod replication;
    mod script_fuzz;
    mod script_hostile;
    mod script_memory;
    mod scripting;
    mod security;
    mod sets;
    mod smoke;
    mod streams;
    mod strings;
    mod tracking;
    mod transactions;
    mod unix_socket;
    mod valkey_commands;
    mod valkey_texts;
    mod zsets;
}
