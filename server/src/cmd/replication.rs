//! The replication commands: `ROLE`, `WAIT` (blocking, without the state lock, or at once
//! inside `MULTI`) and `REPLICAOF` (a harness topology re-points its nodes; a standalone node
//! only accepts `NO ONE`). The stream they report on is [`crate::replication`].

use super::{flags::*, parse_i64, Args, CmdResult, CommandError, CommandSpec, Ctx};
use crate::client::ClientState;
use crate::node::Node;
use crate::replication::Role;
use bytes::Bytes;
use locksmith_resp::Frame;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// `WAIT` on a replica.
const WAIT_ON_REPLICA: &str = "ERR WAIT cannot be used with replica instances. Please also note that since Redis 4.0 if a replica is configured to be writable (which is not the default) writes to replicas are just local and are not propagated.";

/// The replication commands' table.
pub(crate) static COMMANDS: &[CommandSpec] = &[
    CommandSpec::new("role", 1, role)
        .flags(NOSCRIPT | LOADING | STALE | FAST)
        .doc("server", "Returns the replication role."),
    CommandSpec::new("wait", 3, wait_now)
        .flags(NOSCRIPT)
        .doc(
            "generic",
            "Blocks until the asynchronous replication of all preceding write commands sent by the connection is completed.",
        ),
    CommandSpec::new("replicaof", 3, replicaof_standalone)
        .flags(ADMIN | NOSCRIPT | STALE | NO_ASYNC_LOADING)
        .doc("server", "Configures a server as replica of another, or promotes it to a master."),
    CommandSpec::new("slaveof", 3, replicaof_standalone)
        .flags(ADMIN | NOSCRIPT | STALE | NO_ASYNC_LOADING)
        .doc("server", "Sets a Redis server as a replica of another, or promotes it to being a master."),
];

/// ```text
/// ROLE
/// ```
fn role(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    let repl = &ctx.state.repl;
    Ok(match repl.role() {
        Role::Master => Frame::Array(vec![
            Frame::bulk("master"),
            Frame::Integer(repl.offset() as i64),
            Frame::Array(
                repl.replica_acks()
                    .map(|(addr, ack)| {
                        Frame::bulk_array([
                            addr.ip().to_string(),
                            addr.port().to_string(),
                            ack.load(Ordering::Acquire).to_string(),
                        ])
                    })
                    .collect(),
            ),
        ]),
        Role::Replica { master } => Frame::Array(vec![
            Frame::bulk("slave"),
            Frame::bulk(master.ip().to_string()),
            Frame::Integer(i64::from(master.port())),
            Frame::bulk("connected"),
            Frame::Integer(repl.offset() as i64),
        ]),
    })
}

/// Parses `WAIT numreplicas timeout` as Redis does.
fn wait_args(args: &mut Args<'_>) -> Result<(i64, u64), CommandError> {
    let n = args.i64()?;
    let timeout = parse_i64(args.next().ok_or(CommandError::Syntax)?)
        .map_err(|_| CommandError::err("timeout is not an integer or out of range"))?;
    if timeout < 0 {
        return Err(CommandError::err("timeout is negative"));
    }
    Ok((n, timeout as u64))
}

fn acked_count(acks: &[Arc<AtomicU64>], target: u64) -> i64 {
    acks.iter()
        .filter(|a| a.load(Ordering::Acquire) >= target)
        .count() as i64
}

/// ```text
/// WAIT numreplicas timeout
/// ```
///
/// The non-blocking form, used where a client cannot block (inside `MULTI`): the number of
/// replicas that acknowledged the stream so far, as Redis answers there.
fn wait_now(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    wait_args(args)?;
    let repl = &ctx.state.repl;
    if repl.is_replica() {
        return Err(CommandError::Raw(WAIT_ON_REPLICA.into()));
    }
    let acks: Vec<_> = repl.replica_acks().map(|(_, a)| a.clone()).collect();
    Ok(Frame::Integer(acked_count(&acks, repl.offset())))
}

/// `WAIT numreplicas timeout`, blocking: waits (without the state lock) until `numreplicas`
/// replicas acknowledged the stream up to the offset when `WAIT` was called, or `timeout` ms
/// (0 = forever) passed, and answers how many did. The target is the master's offset at the
/// time of the call, which covers every write this client made before it.
async fn wait_blocking(node: &Node, argv: &[Bytes]) -> Frame {
    let mut args = Args::new(argv, 1);
    let (n, timeout) = match wait_args(&mut args) {
        Ok(v) => v,
        Err(e) => return e.into(),
    };
    let (target, acks, mut changes) = {
        let state = node.state.lock().await;
        if state.repl.is_replica() {
            return Frame::error(WAIT_ON_REPLICA);
        }
        let acks: Vec<_> = state.repl.replica_acks().map(|(_, a)| a.clone()).collect();
        (state.repl.offset(), acks, state.repl.ack_changes())
    };
    let deadline = (timeout > 0).then(|| Instant::now() + Duration::from_millis(timeout));
    loop {
        let count = acked_count(&acks, target);
        if count >= n {
            return Frame::Integer(count);
        }
        let sleep = async {
            match deadline {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            biased;
            changed = changes.changed() => if changed.is_err() {
                return Frame::Integer(acked_count(&acks, target));
            },
            _ = sleep => return Frame::Integer(acked_count(&acks, target)),
        }
    }
}

/// Checks `REPLICAOF host port` arguments as Redis does; `None` means `NO ONE`.
pub(crate) fn replicaof_args(argv: &[Bytes]) -> Result<Option<(String, u16)>, CommandError> {
    let host = argv.get(1).ok_or(CommandError::Syntax)?;
    let port = argv.get(2).ok_or(CommandError::Syntax)?;
    if host.eq_ignore_ascii_case(b"no") && port.eq_ignore_ascii_case(b"one") {
        return Ok(None);
    }
    let port = parse_i64(port)
        .ok()
        .and_then(|p| u16::try_from(p).ok())
        .filter(|p| *p > 0)
        .ok_or_else(|| CommandError::err("Invalid master port"))?;
    Ok(Some((String::from_utf8_lossy(host).into_owned(), port)))
}

/// ```text
/// REPLICAOF host port | NO ONE
/// ```
///
/// On a node whose replication nobody manages (no admin hook serves `REPLICAOF`): `NO ONE`
/// (it already is a master); a master address is refused, since the node replicates only
/// through links its embedder attaches (a harness topology).
fn replicaof_standalone(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    match replicaof_args(args.argv())? {
        None => {
            ctx.state.repl.become_master();
            Ok(Frame::ok())
        }
        Some(_) => Err(CommandError::err(
            "this node replicates only from nodes of its locksmith topology",
        )),
    }
}

/// Whether `argv` is a command the pipeline runs through [`run_async_command`]: `WAIT`, and
/// what the node's admin hook serves (a name the node does not know, or `REPLICAOF`/`SLAVEOF`
/// on a node whose replication its embedder manages; see [`crate::control::AdminHook`]).
pub(crate) fn is_async_command(node: &Node, argv: &[Bytes]) -> bool {
    let Some(name) = argv.first() else {
        return false;
    };
    if name.eq_ignore_ascii_case(b"wait") {
        return true;
    }
    let Some(hook) = node.admin_hook.get() else {
        return false;
    };
    hook.serves(name)
        && (name.eq_ignore_ascii_case(b"replicaof")
            || name.eq_ignore_ascii_case(b"slaveof")
            || super::lookup(name).is_none())
}

/// Runs a command that waits on other tasks (see [`is_async_command`]) without the state lock.
pub(crate) async fn run_async_command(node: &Node, client: &ClientState, argv: &[Bytes]) -> Frame {
    if !client.authenticated {
        return CommandError::NoAuth.into();
    }
    let Some(name) = argv.first() else {
        return CommandError::Syntax.into();
    };
    let known = super::lookup(name).is_some();
    if known {
        if let Err(e) = super::resolve(argv) {
            return e.into();
        }
        if name.eq_ignore_ascii_case(b"wait") {
            return wait_blocking(node, argv).await;
        }
        // REPLICAOF/SLAVEOF reach the hook with arguments Redis would accept.
        if let Err(e) = replicaof_args(argv) {
            return e.into();
        }
    }
    match node.admin_hook.get() {
        Some(hook) => hook.run(client.handle.addr, argv.to_vec()).await,
        None => CommandError::unknown_command(argv).into(),
    }
}
