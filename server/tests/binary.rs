//! The server's tests that start the built `locksmith-server` binary
//! (`CARGO_BIN_EXE_locksmith-server`, which cargo gives only to the binary's own package): its
//! command line, `--compat` and `--version`, signals, and redis-cli against it. The other wire
//! tests are the `locksmith-server-tests` package (`server.rs`).

mod server {
    mod compat;
    mod redis_cli;
}
