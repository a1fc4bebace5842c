//! The commands layer: every family's handlers, the table that joins them, and the step
//! that runs one.
//!
//! Each family module exports a `COMMANDS` table of [`Command`]s (a handler per name);
//! [`table`] joins them with the table's source, the reference's own description of its
//! commands ([`crate::redis_table`]), into one [`CommandSpec`] per command (arity, flags,
//! keys, ACL categories, documentation, handler), which drives lookup (case-insensitive),
//! the arity error, `COMMAND`, ACL checks, cluster routing and replication. Handlers are
//! synchronous: they run against a [`Ctx`] under the state lock and return the reply, so
//! `MULTI`/`EXEC`, `redis.call` and replication reuse the same code ([`call`]).
//!
//! The parts: `spec` (what a family declares, what the table builds), `table` (lookup and
//! resolution), `ctx` (what a handler touches), `call` (Redis's `call()`).

pub(crate) mod acl;
mod bitmap;
mod call;
mod client;
mod cluster;
mod command;
mod config;
mod connection;
mod ctx;
mod debug;
#[cfg(test)]
mod effects_tests;
mod expire;
mod function;
mod geo;
mod hash;
mod hyperloglog;
mod keys;
mod latency;
mod ldouble;
mod list;
mod lolwut;
mod memory;
mod migrate;
mod module;
mod persistence;
pub(crate) mod pubsub;
pub(crate) mod replication;
mod scan;
mod script;
mod server;
mod set;
mod slowlog;
mod sort;
mod spec;
mod stream;
mod string;
mod table;
mod transaction;
mod zset;

pub(crate) use crate::args::{
    atoi, parse_f64, parse_f64_saturating, parse_i32, parse_i64, random_count, repeated_picks,
    strtod, Args,
};
pub(crate) use crate::error::CommandError;
pub(crate) use crate::error::{lossy, CmdResult};
pub(crate) use persistence::load_at_start;
pub(crate) use script::{command_exists, command_flags as script_command_flags};

pub(crate) use crate::command_meta::Resolved;
use crate::db::Value;
use crate::node::CommandHooks;
use bytes::Bytes;
use locksmith_resp::Frame;

pub(crate) use call::{call, call_argv, log_unblocked};
pub(crate) use ctx::Ctx;
pub(crate) use spec::{Command, CommandSpec};
pub(crate) use table::{lookup, resolve, resolve_cached, resolve_name, spec_of, table, NameCache};

pub(crate) use crate::flags;

/// A bulk string copied from `s` (names and values the server formats).
pub(crate) fn bulk_str(s: &str) -> Frame {
    Frame::Bulk(Bytes::copy_from_slice(s.as_bytes()))
}

/// `change`, a write to one type's value, as [`Ctx::change_existing`] and
/// [`Ctx::change_or_insert`] run it on whatever the key holds: `pick` finds that type's value
/// (e.g. [`Value::as_set_mut`]); a value of another type is `WRONGTYPE`, left unchanged.
pub(crate) fn typed<V: ?Sized, R>(
    pick: impl FnOnce(&mut Value) -> Option<&mut V>,
    change: impl FnOnce(&mut V) -> (R, bool),
) -> impl FnOnce(&mut Value) -> (Result<R, CommandError>, bool) {
    move |value| match pick(value) {
        Some(v) => {
            let (result, changed) = change(v);
            (Ok(result), changed)
        }
        None => (Err(CommandError::WrongType), false),
    }
}

/// Called by a blocking command that found nothing to pop: inside `MULTI`/`EXEC` or a script
/// it answers `timeout_reply` at once (Redis's `CLIENT_DENY_BLOCKING`), otherwise it asks the
/// connection to block the client on `keys`.
pub(crate) fn block(
    ctx: &mut Ctx<'_>,
    keys: Vec<Bytes>,
    timeout: Option<std::time::Duration>,
    kind: crate::blocking::BlockKind,
    timeout_reply: Frame,
) -> CmdResult {
    if ctx.client.origin.in_script || ctx.client.origin.in_exec {
        return Ok(timeout_reply);
    }
    ctx.client.block = Some(crate::blocking::BlockRequest {
        keys,
        timeout,
        kind,
        argv: None,
    });
    Ok(Frame::NullArray)
}

/// The commands layer as the state layer below it runs it (see [`CommandHooks`]).
pub(crate) const HOOKS: CommandHooks = CommandHooks {
    call_argv,
    resolve: |compat, argv| resolve(compat, argv).ok(),
    exists: script::command_exists,
    install_dataset: persistence::install_from_master,
};

#[cfg(test)]
impl crate::node::Node {
    /// A node with default config whose clock reads 1 000 000 ms, not listening anywhere,
    /// for unit tests that run commands without a server.
    pub(crate) fn for_tests() -> Self {
        Self::new(
            std::sync::Arc::new(crate::config::runtime::RuntimeConfig::for_tests()),
            crate::clock::Clock::starting_at(1_000_000),
            std::net::SocketAddr::from(([127, 0, 0, 1], 1)),
            String::new(),
            1,
            HOOKS,
        )
    }
}
