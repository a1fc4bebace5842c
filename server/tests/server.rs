//! The server's tests against its public API and the wire, one binary (linking one test binary
//! instead of twenty saves minutes of a cold `cargo test --workspace`). Most compare replies
//! with a real redis-server when one is on the PATH. `many_clients` (10 000 sockets) stays a
//! binary of its own.

mod server {
    mod acl;
    mod blocking;
    mod cluster;
    mod compat;
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
    mod redis_cli;
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
    mod zsets;
}
