//! The replication commands: `ROLE`, `WAIT` (blocking, without the state lock, or at once
//! inside `MULTI`), `REPLICAOF` (a harness topology re-points its nodes; a standalone node
//! follows a master over the network), and the replica's side of the protocol: `SYNC`,
//! `PSYNC`, `REPLCONF`. The stream they report on is [`crate::replication`].

use super::{parse_i64, Args, CmdResult, Command, CommandError, Ctx, Resolved};
use crate::client::ClientState;
use crate::node::Node;
use crate::replication::{follow, serve, Role};
use bytes::Bytes;
use locksmith_resp::Frame;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// `WAIT` on a replica.
const WAIT_ON_REPLICA: &str = "ERR WAIT cannot be used with replica instances. Please also note that since Redis 4.0 if a replica is configured to be writable (which is not the default) writes to replicas are just local and are not propagated.";

/// The replication commands' table.
pub(crate) static COMMANDS: &[Command] = &[
    Command::new("role", role),
    Command::new("wait", wait_now),
    Command::new("waitaof", waitaof_now),
    Command::new("replicaof", replicaof_standalone),
    Command::new("slaveof", replicaof_standalone),
    Command::new("sync", sync),
    Command::new("psync", psync),
    Command::new("replconf", replconf),
];

/// ```text
/// SYNC
/// ```
fn sync(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    start_sync(ctx, None)
}

/// ```text
/// PSYNC replicationid offset
/// ```
fn psync(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let replid = args.next().ok_or(CommandError::Syntax)?;
    let offset = args.i64()?;
    start_sync(ctx, Some((replid, offset)))
}

/// Makes the calling connection a replica link (see [`serve`]): `+FULLRESYNC <id> <offset>`
/// or `+CONTINUE <id>` for `PSYNC`, no reply for `SYNC`; the connection sends the dataset or
/// the backlog once the reply is written. A client that is a replica already is ignored, as
/// Redis ignores it.
fn start_sync(ctx: &mut Ctx<'_>, psync: Option<(&Bytes, i64)>) -> CmdResult {
    if ctx.client.replica.handoff.is_some() || ctx.client.handle.info().flags.contains('S') {
        ctx.client.reply.skip = true;
        return Ok(Frame::ok());
    }
    // A replica serves replicas of its own (the master's stream passed on) while its link
    // to its master is up.
    if ctx.state.repl.is_replica() && !ctx.state.repl.upstream.as_ref().is_some_and(|u| u.is_up()) {
        return Err(CommandError::Raw(serve::NOMASTERLINK.into()));
    }
    let (reply, handoff) = serve::attach(
        ctx.state,
        ctx.node,
        ctx.client,
        psync.map(|(id, offset)| (&id[..], offset)),
    );
    ctx.client.replica.handoff = Some(Box::new(handoff));
    match reply {
        Some(reply) => Ok(reply),
        None => {
            ctx.client.reply.skip = true;
            Ok(Frame::ok())
        }
    }
}

/// ```text
/// REPLCONF option value [option value ...]
/// ```
///
/// A replica's handshake options (`listening-port`, `ip-address`, `capa`, `rdb-only`) answer
/// `+OK`; `ACK` and `GETACK` answer nothing (a master reads a replica's `ACK` on the link,
/// a replica answers its master's `GETACK` there).
fn replconf(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let rest = args.rest();
    if rest.len() % 2 == 1 {
        return Err(CommandError::Syntax);
    }
    for pair in rest.chunks_exact(2) {
        let [option, value] = pair else {
            return Err(CommandError::Syntax);
        };
        match option.to_ascii_lowercase().as_slice() {
            b"listening-port" => {
                let port = parse_i64(value)?;
                ctx.client.replica.listening_port = u16::try_from(port).ok();
            }
            b"ip-address" | b"capa" => {}
            b"rdb-only" => {
                let on = parse_i64(value)?;
                if !(0..=1).contains(&on) {
                    return Err(CommandError::err(
                        "value is out of range, value must between 0 and 1",
                    ));
                }
                ctx.client.replica.rdb_only = on == 1;
            }
            b"ack" | b"fack" | b"getack" => {
                ctx.client.reply.skip = true;
                return Ok(Frame::ok());
            }
            _ => {
                return Err(CommandError::err(format!(
                    "Unrecognized REPLCONF option: {}",
                    String::from_utf8_lossy(option)
                )))
            }
        }
    }
    Ok(Frame::ok())
}

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
        Role::Replica { master } => {
            let (host, state) = match &repl.upstream {
                Some(up) => {
                    let status = up.status(ctx.now);
                    let state = if status.up {
                        "connected"
                    } else if status.syncing {
                        "sync"
                    } else {
                        "connect"
                    };
                    (up.host.clone(), state)
                }
                None => (master.ip().to_string(), "connected"),
            };
            let offset = if state == "connected" {
                repl.offset() as i64
            } else {
                -1
            };
            Frame::Array(vec![
                Frame::bulk("slave"),
                Frame::bulk(host),
                Frame::Integer(i64::from(master.port())),
                Frame::bulk(state),
                Frame::Integer(offset),
            ])
        }
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
        let mut state = node.state.lock().await;
        if state.repl.is_replica() {
            return Frame::error(WAIT_ON_REPLICA);
        }
        let acks: Vec<_> = state.repl.replica_acks().map(|(_, a)| a.clone()).collect();
        let target = state.repl.offset();
        if acked_count(&acks, target) < n {
            let config = state.config.clone();
            crate::replication::request_acks(&mut state.repl, &config);
        }
        (target, acks, state.repl.ack_changes())
    };
    let deadline = (timeout > 0).then(|| Instant::now() + Duration::from_millis(timeout));
    // Redis checks `numreplicas` as given before it blocks, and as the C `int` its blocked
    // client keeps (`bstate.numreplicas`, the low 32 bits) on every later check, which runs
    // before its next poll: `WAIT 9223372036854775807 0` (-1 as an int) answers at once, and
    // `WAIT 4294967297 0` waits for one replica.
    let truncated = i64::from(n as i32);
    loop {
        let count = acked_count(&acks, target);
        if count >= n || count >= truncated {
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

/// `WAITAOF` on a replica (Valkey 8.1's text).
const WAITAOF_ON_REPLICA: &str = "ERR WAITAOF cannot be used with replica instances. Please also \
note that writes to replicas are just local and are not propagated.";

/// Checks `WAITAOF numlocal numreplicas timeout` as Valkey 8.1 does, in its order, and the
/// node's state (a replica, `numlocal` without `appendonly`); returns `numlocal`,
/// `numreplicas` and the timeout (ms, 0 = forever).
fn waitaof_args(
    node: &Node,
    argv: &[Bytes],
    replica: bool,
) -> Result<(i64, i64, u64), CommandError> {
    let mut args = Args::new(argv, 1);
    let numlocal = parse_i64(args.next().ok_or(CommandError::Syntax)?)?;
    if !(0..=1).contains(&numlocal) {
        return Err(CommandError::err(
            "value is out of range, value must between 0 and 1",
        ));
    }
    let numreplicas = parse_i64(args.next().ok_or(CommandError::Syntax)?)
        .ok()
        .filter(|n| *n >= 0)
        .ok_or_else(|| CommandError::err("value is out of range, must be positive"))?;
    let timeout = parse_i64(args.next().ok_or(CommandError::Syntax)?)
        .map_err(|_| CommandError::err("timeout is not an integer or out of range"))?;
    if timeout < 0 {
        return Err(CommandError::err("timeout is negative"));
    }
    if replica {
        return Err(CommandError::Raw(WAITAOF_ON_REPLICA.into()));
    }
    let appendonly = node
        .config
        .find(b"appendonly")
        .is_some_and(|p| node.config.get(p) == "yes");
    if numlocal > 0 && !appendonly {
        return Err(CommandError::err(
            "WAITAOF cannot be used when numlocal is set but appendonly is disabled.",
        ));
    }
    Ok((numlocal, numreplicas, timeout as u64))
}

/// WAITAOF's reply: the local fsync and the replicas that acknowledged an fsync of the
/// client's writes. There is no append-only file here and no replica of ours reports an
/// fsynced offset (`REPLCONF ACK <offset> FACK <offset>`), so both are 0, as valkey-server
/// answers with `appendonly no` and replicas that have it off.
fn waitaof_reply() -> Frame {
    Frame::Array(vec![Frame::Integer(0), Frame::Integer(0)])
}

/// ```text
/// WAITAOF numlocal numreplicas timeout
/// ```
///
/// Valkey's (Redis 7.2's). The non-blocking form, where a client cannot block (inside
/// `MULTI`, a script): what is acknowledged now ([`waitaof_reply`]).
fn waitaof_now(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    waitaof_args(ctx.node, args.argv(), ctx.state.repl.is_replica())?;
    Ok(waitaof_reply())
}

/// `WAITAOF numlocal numreplicas timeout`, blocking: answers at once when nothing is asked
/// for (`0 0`), else after `timeout` ms (forever for 0), as valkey-server does when no fsync
/// will be acknowledged ([`waitaof_reply`]; `numlocal` 1 gets here only with `appendonly`
/// set, which writes no file here).
async fn waitaof_blocking(node: &Node, argv: &[Bytes]) -> Frame {
    let replica = node.state.lock().await.repl.is_replica();
    let (numlocal, numreplicas, timeout) = match waitaof_args(node, argv, replica) {
        Ok(v) => v,
        Err(e) => return e.into(),
    };
    if numlocal > 0 || numreplicas > 0 {
        match timeout {
            0 => std::future::pending::<()>().await,
            ms => tokio::time::sleep(Duration::from_millis(ms)).await,
        }
    }
    waitaof_reply()
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
        .ok_or_else(|| CommandError::err("Invalid master port"))?;
    Ok(Some((String::from_utf8_lossy(host).into_owned(), port)))
}

/// ```text
/// REPLICAOF host port | NO ONE
/// ```
///
/// On a node whose replication nobody manages (no admin hook serves `REPLICAOF`): the node
/// follows the master over the network, or becomes a master again (see [`follow`]).
fn replicaof_standalone(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let target = replicaof_args(args.argv())?;
    Ok(follow::replicaof(ctx.state, ctx.node, target))
}

/// Whether `argv` is a command only the node's admin hook serves: a name the node's table does
/// not know, which the pipeline hands to the hook before looking it up (see
/// [`crate::control::AdminHook`]).
pub(crate) fn is_hook_only_command(node: &Node, argv: &[Bytes]) -> bool {
    let Some(name) = argv.first() else {
        return false;
    };
    match node.admin_hook.get() {
        Some(hook) => hook.serves(name) && super::lookup(node.config.compat(), name).is_none(),
        None => false,
    }
}

/// Whether `resolved` is a command the pipeline runs through [`run_async_command`], without
/// the state lock, once it passed every check a command passes (authentication, ACLs,
/// queueing in `MULTI`, ...): `WAIT`, `WAITAOF`, and `REPLICAOF`/`SLAVEOF` on a node whose
/// replication its embedder manages (the admin hook serves them).
pub(crate) fn runs_without_state_lock(node: &Node, resolved: Resolved) -> bool {
    match resolved.top_name() {
        "wait" | "waitaof" => true,
        name @ ("replicaof" | "slaveof") => node
            .admin_hook
            .get()
            .is_some_and(|hook| hook.serves(name.as_bytes())),
        _ => false,
    }
}

/// Runs a command that waits on other tasks (see [`runs_without_state_lock`] and
/// [`is_hook_only_command`]) without the state lock.
pub(crate) async fn run_async_command(node: &Node, client: &ClientState, argv: &[Bytes]) -> Frame {
    if !client.authenticated {
        return CommandError::NoAuth.into();
    }
    let Some(name) = argv.first() else {
        return CommandError::Syntax.into();
    };
    let compat = node.config.compat();
    // A name the table knows arrives from the pipeline, which resolved it (arity included).
    let known = super::lookup(compat, name).is_some();
    if known {
        if name.eq_ignore_ascii_case(b"wait") {
            return wait_blocking(node, argv).await;
        }
        if name.eq_ignore_ascii_case(b"waitaof") {
            return waitaof_blocking(node, argv).await;
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
