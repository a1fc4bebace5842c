//! `LOCKSMITH.*`: the harness's faults as commands, so a test in any language (or `redis-cli`)
//! can drive a topology. Any node of the topology, the front address and the Sentinel endpoint
//! accept them. Faults applied this way stay until `LOCKSMITH.HEAL` (network faults),
//! `LOCKSMITH.RESUME` (a stall) or their own end (a pause). `LOCKSMITH.RESTART node
//! [KEEP-DATA [LOSE-LAST-MS ms]]` is [`super::Topology::restart_with`]: empty, or keeping
//! the data minus the writes of the last `ms` (0 by default).

use super::{Applied, Fault, HarnessError, Inner, NodeId, NodeRole, Restart};
use bytes::Bytes;
use locksmith_resp::Frame;
use locksmith_server::control::{AdminHook, ReplyFuture};
use locksmith_server::CommandError;
use std::net::SocketAddr;
use std::sync::{Arc, Weak};
use std::time::Duration;

const PREFIX: &[u8] = b"locksmith.";

/// (name, arity as Redis counts it, usage) of every admin command.
const COMMANDS: &[(&str, i32, &str)] = &[
    ("failover", -1, "LOCKSMITH.FAILOVER [node] -- kill the master, promote the most up-to-date replica (or node)"),
    ("kill", 2, "LOCKSMITH.KILL node -- stop a node: connections reset, links cut"),
    ("restart", -2, "LOCKSMITH.RESTART node [KEEP-DATA [LOSE-LAST-MS ms]] -- start a node again on the same address, empty or with its data minus the last ms of writes"),
    ("partition", 3, "LOCKSMITH.PARTITION a b -- cut replication between two nodes"),
    ("isolate", 2, "LOCKSMITH.ISOLATE node -- cut a node from every node and black-hole its clients"),
    ("heal", 1, "LOCKSMITH.HEAL -- end every partition, isolation and client-link fault"),
    ("clock", 3, "LOCKSMITH.CLOCK node delta-ms -- jump a node's clock (its TTLs move with it)"),
    ("pause", 3, "LOCKSMITH.PAUSE node ms -- stop a node from answering for ms, like SIGSTOP"),
    ("repldelay", -2, "LOCKSMITH.REPLDELAY ms [jitter-ms] -- delay every replication link"),
    ("stall", 1, "LOCKSMITH.STALL -- stop replication until LOCKSMITH.RESUME"),
    ("resume", 1, "LOCKSMITH.RESUME -- resume a stalled replication"),
    ("latency", 3, "LOCKSMITH.LATENCY node ms -- add latency to a node's client links"),
    ("drop", 2, "LOCKSMITH.DROP node -- silently drop a node's client traffic"),
    ("reset", 2, "LOCKSMITH.RESET node -- reset a node's client connections"),
    ("replicaof", 3, "LOCKSMITH.REPLICAOF node master|NO-ONE -- re-point a node's replication"),
    ("observe", -1, "LOCKSMITH.OBSERVE [pattern ...] | OFF -- observe the locks of keys matching the patterns (none: every key) on every node, or stop"),
    ("locks", 1, "LOCKSMITH.LOCKS -- the observed locks each running node holds now"),
    ("check", 1, "LOCKSMITH.CHECK -- the violations in what was observed (double grants, lost grants, foreign releases and renewals, repeated tokens, semaphores over their permits, permit ids granted twice, latches reopened or opened early); empty when safe"),
    ("history", 1, "LOCKSMITH.HISTORY -- faults, marks, observed lock events and violations as JSON"),
    ("timeline", 2, "LOCKSMITH.TIMELINE path -- write the HTML timeline of the observed locks to path"),
    ("schedule", 2, "LOCKSMITH.SCHEDULE text -- run a fault schedule (the explorer's form: kind/n<node>/<at ms>/<duration ms>/<amount ms>,...) from now"),
    ("mark", -2, "LOCKSMITH.MARK text -- add a note to the history now"),
    ("topology", 1, "LOCKSMITH.TOPOLOGY -- front address, seed, and every node's role, port and offset"),
    ("help", 1, "LOCKSMITH.HELP -- this text"),
];

/// Whether `name` is a `LOCKSMITH.*` command.
pub(crate) fn is_admin_command(name: &[u8]) -> bool {
    name.get(..PREFIX.len())
        .is_some_and(|p| p.eq_ignore_ascii_case(PREFIX))
}

/// The admin hook each node of a topology gets: it serves `LOCKSMITH.*` and re-points the
/// node's replication on `REPLICAOF`/`SLAVEOF` (links between the topology's nodes).
#[derive(Debug)]
pub(crate) struct Hook {
    pub(crate) topology: Weak<Inner>,
    pub(crate) id: NodeId,
}

impl AdminHook for Hook {
    fn serves(&self, name: &[u8]) -> bool {
        is_admin_command(name)
            || name.eq_ignore_ascii_case(b"replicaof")
            || name.eq_ignore_ascii_case(b"slaveof")
    }

    fn run(&self, origin: SocketAddr, argv: Vec<Bytes>) -> ReplyFuture {
        let Some(inner) = self.topology.upgrade() else {
            return Box::pin(std::future::ready(Frame::error("ERR the topology is gone")));
        };
        let admin = argv.first().is_some_and(|name| is_admin_command(name));
        if admin {
            execute(inner, argv, Some(origin))
        } else {
            Box::pin(replicaof(inner, self.id.index(), argv))
        }
    }
}

/// Runs `REPLICAOF host port | NO ONE` (arguments checked by the node) on node `me`.
async fn replicaof(inner: Arc<Inner>, me: usize, argv: Vec<Bytes>) -> Frame {
    let host = argv.get(1).map(|h| lossy(h, 256)).unwrap_or_default();
    let port = argv.get(2).map(|p| lossy(p, 32)).unwrap_or_default();
    let target = if host.eq_ignore_ascii_case("no") && port.eq_ignore_ascii_case("one") {
        None
    } else {
        let Ok(port) = port.parse::<u16>() else {
            return CommandError::err("Invalid master port").into();
        };
        let name = format!("{host}:{port}");
        let found = inner.node_by_name(&name).or_else(|_| {
            // `localhost` and the like: match the port among the nodes.
            inner
                .slots
                .iter()
                .position(|s| s.addr.port() == port)
                .ok_or(HarnessError::UnknownNode(name))
        });
        match found {
            Ok(i) => Some(i),
            Err(e) => return CommandError::err(e).into(),
        }
    };
    let task = tokio::spawn(async move {
        let _ops = inner.ops.lock().await;
        match target {
            None => inner.make_master(me).await.map(|()| Frame::ok()),
            Some(t) if inner.replica_of(me) == Some(t) => Ok(Frame::Simple(Bytes::from_static(
                b"OK Already connected to specified master",
            ))),
            Some(t) => inner.attach(t, me).await.map(|()| Frame::ok()),
        }
    });
    match task.await {
        Ok(Ok(f)) => f,
        Ok(Err(e)) => CommandError::err(e).into(),
        Err(_) => CommandError::err("replicaof failed").into(),
    }
}

/// Up to `max` bytes of `b` as text (Redis prints `%.128s`).
pub(crate) fn lossy(b: &[u8], max: usize) -> String {
    String::from_utf8_lossy(b.get(..max.min(b.len())).unwrap_or(b)).into_owned()
}

/// An integer argument, parsed as Redis does (`ERR value is not an integer or out of range`).
fn parse_i64(b: &[u8]) -> Result<i64, CommandError> {
    locksmith_resp::parse_integer(b).ok_or(CommandError::NotInteger)
}

fn arg(argv: &[Bytes], i: usize) -> String {
    argv.get(i).map(|a| lossy(a, 256)).unwrap_or_default()
}

fn ms_arg(argv: &[Bytes], i: usize) -> Result<u64, CommandError> {
    let v = parse_i64(argv.get(i).ok_or(CommandError::Syntax)?)?;
    u64::try_from(v).map_err(|_| CommandError::err("milliseconds must not be negative"))
}

/// The options after the node of `LOCKSMITH.RESTART node [KEEP-DATA [LOSE-LAST-MS ms]]`.
fn restart_options(argv: &[Bytes]) -> Result<Restart, CommandError> {
    let option = |i: usize, name: &str| {
        argv.get(i)
            .is_some_and(|a| a.eq_ignore_ascii_case(name.as_bytes()))
    };
    match argv.len() {
        2 => Ok(Restart::Empty),
        3 if option(2, "keep-data") => Ok(Restart::keep_data(Duration::ZERO)),
        5 if option(2, "keep-data") && option(3, "lose-last-ms") => {
            Ok(Restart::keep_data(Duration::from_millis(ms_arg(argv, 4)?)))
        }
        // An unknown option, or one missing its value (Redis's answer to both).
        _ => Err(CommandError::Syntax),
    }
}

/// Runs an admin command on its own task, so a command that kills the node it arrived on
/// still completes. Boxed: restarting a node starts a server whose connections run admin
/// commands, a cycle an opaque future type cannot express.
pub(crate) fn execute(
    inner: Arc<Inner>,
    argv: Vec<Bytes>,
    origin: Option<SocketAddr>,
) -> ReplyFuture {
    Box::pin(execute_inner(inner, argv, origin))
}

async fn execute_inner(inner: Arc<Inner>, argv: Vec<Bytes>, origin: Option<SocketAddr>) -> Frame {
    let name = argv
        .first()
        .and_then(|n| n.get(PREFIX.len()..))
        .map(|s| String::from_utf8_lossy(s).to_ascii_lowercase())
        .unwrap_or_default();
    let Some(&(_, arity, _)) = COMMANDS.iter().find(|(n, _, _)| *n == name) else {
        return CommandError::unknown_command(&argv).into();
    };
    let argc = argv.len() as i32;
    if (arity >= 0 && argc != arity) || (arity < 0 && argc < -arity) {
        return CommandError::WrongArity(format!("locksmith.{name}")).into();
    }
    let task = tokio::spawn(async move {
        let _ops = inner.ops.lock().await;
        if let Ok(mut spare) = inner.spare.lock() {
            *spare = origin.into_iter().collect();
        }
        let reply = dispatch(&inner, &name, &argv).await;
        if let Ok(mut spare) = inner.spare.lock() {
            spare.clear();
        }
        reply
    });
    match task.await {
        Ok(Ok(frame)) => frame,
        Ok(Err(e)) => e.into(),
        Err(_) => CommandError::err("admin command failed").into(),
    }
}

fn harness_err(e: HarnessError) -> CommandError {
    CommandError::err(e)
}

/// The fault a `LOCKSMITH.*` fault command asks for, its arguments checked in order (`None`:
/// `name` is not a fault command). A failover that names no node promotes
/// [`Inner::failover_target`]; a reset's count is what applying it finds.
fn parse_fault(inner: &Inner, name: &str, argv: &[Bytes]) -> Result<Option<Fault>, CommandError> {
    let node = |i: usize| {
        inner
            .node_by_name(&arg(argv, i))
            .map(NodeId)
            .map_err(harness_err)
    };
    let ms = |i: usize| ms_arg(argv, i).map(Duration::from_millis);
    Ok(Some(match name {
        "failover" => {
            let new = if argv.len() > 1 {
                node(1)?
            } else {
                NodeId(inner.failover_target().map_err(harness_err)?)
            };
            let old = NodeId(
                inner
                    .replica_of(new.index())
                    .unwrap_or(inner.master_index()),
            );
            Fault::FailMaster { old, new }
        }
        "kill" => Fault::Kill(node(1)?),
        "restart" => {
            let n = node(1)?;
            Fault::Restart(n, restart_options(argv)?)
        }
        "partition" => {
            let a = node(1)?;
            Fault::Partition(a, node(2)?)
        }
        "isolate" => Fault::Isolate(node(1)?),
        "heal" => Fault::Heal,
        "clock" => {
            let n = node(1)?;
            Fault::ClockJump(n, parse_i64(argv.get(2).ok_or(CommandError::Syntax)?)?)
        }
        "pause" => {
            let n = node(1)?;
            Fault::Pause(n, ms(2)?)
        }
        "repldelay" => {
            let delay = ms(1)?;
            let jitter = if argv.len() > 2 {
                ms(2)?
            } else {
                Duration::ZERO
            };
            if argv.len() > 3 {
                return Err(CommandError::Syntax);
            }
            Fault::ReplicationDelay { delay, jitter }
        }
        "stall" => Fault::ReplicationStall,
        "latency" => {
            let n = node(1)?;
            Fault::Latency(n, ms(2)?)
        }
        "drop" => Fault::DropTraffic(node(1)?),
        "reset" => Fault::ResetConnections {
            node: node(1)?,
            count: 0,
        },
        _ => return Ok(None),
    }))
}

/// A fault command's reply (the promoted node, a clock's total shift, how many connections
/// were reset, or OK), keeping the guard of a fault that lasts until `LOCKSMITH.HEAL` or
/// `LOCKSMITH.RESUME` (a pause ends by itself).
fn fault_reply(inner: &Inner, applied: Applied) -> Frame {
    if let Some(guard) = applied.guard {
        if matches!(applied.fault, Fault::Pause(..)) {
            guard.detach();
        } else if let Ok(mut guards) = inner.wire_guards.lock() {
            guards.push(guard);
        }
    }
    match applied.fault {
        Fault::FailMaster { new, .. } => Frame::bulk(new.to_string()),
        Fault::ClockJump(node, _) => inner
            .slot(node.index())
            .map_or(Frame::Integer(0), |s| Frame::Integer(s.clock.shift_ms())),
        Fault::ResetConnections { count, .. } => Frame::Integer(count as i64),
        _ => Frame::ok(),
    }
}

async fn dispatch(inner: &Arc<Inner>, name: &str, argv: &[Bytes]) -> Result<Frame, CommandError> {
    let node = |i: usize| inner.node_by_name(&arg(argv, i)).map_err(harness_err);
    if let Some(fault) = parse_fault(inner, name, argv)? {
        let applied = inner.apply(fault).await.map_err(harness_err)?;
        return Ok(fault_reply(inner, applied));
    }
    match name {
        "resume" => {
            let stalls: Vec<_> = inner
                .wire_guards
                .lock()
                .map(|mut g| {
                    let (stalls, rest) = std::mem::take(&mut *g)
                        .into_iter()
                        .partition(|g| g.fault() == Some(&Fault::ReplicationStall));
                    *g = rest;
                    stalls
                })
                .unwrap_or_default();
            drop(stalls);
            Ok(Frame::ok())
        }
        "replicaof" => {
            let n = node(1)?;
            let target = arg(argv, 2);
            if target.eq_ignore_ascii_case("no-one") {
                inner.make_master(n).await.map_err(harness_err)?;
            } else {
                let m = inner.node_by_name(&target).map_err(harness_err)?;
                inner.attach(m, n).await.map_err(harness_err)?;
            }
            Ok(Frame::ok())
        }
        "observe" => {
            let off =
                argv.len() == 2 && argv.get(1).is_some_and(|a| a.eq_ignore_ascii_case(b"off"));
            let patterns = (!off).then(|| argv.get(1..).unwrap_or_default().to_vec());
            inner.set_observing(patterns).await;
            Ok(Frame::ok())
        }
        "locks" => Ok(Frame::Array(
            inner.observed_locks().iter().map(lock_frame).collect(),
        )),
        "check" => Ok(Frame::Array(
            inner.check_observed().iter().map(violation_frame).collect(),
        )),
        "history" => Ok(Frame::bulk(inner.observed_json())),
        "timeline" => {
            let path =
                String::from_utf8_lossy(argv.get(1).ok_or(CommandError::Syntax)?).into_owned();
            inner
                .observed_timeline("observed locks")
                .write_html(&path)
                .map_err(|e| CommandError::err(format!("could not write {path}: {e}")))?;
            Ok(Frame::ok())
        }
        "schedule" => {
            let text = lossy(argv.get(1).ok_or(CommandError::Syntax)?, 1 << 16);
            let schedule: super::schedule::Schedule = text
                .parse()
                .map_err(|e: super::schedule::ScheduleError| CommandError::err(e.0))?;
            let topology = super::Topology {
                inner: inner.clone(),
            };
            topology.run_schedule(schedule);
            Ok(Frame::ok())
        }
        "mark" => {
            let words: Vec<String> = argv.iter().skip(1).map(|a| lossy(a, 4096)).collect();
            inner.observer.mark(words.join(" "));
            Ok(Frame::ok())
        }
        "topology" => Ok(topology_frame(inner)),
        _ => Ok(Frame::Array(
            COMMANDS
                .iter()
                .map(|(_, _, usage)| Frame::Simple(Bytes::from_static(usage.as_bytes())))
                .collect(),
        )),
    }
}

/// One observed lock as a flat field/value array (`LOCKSMITH.LOCKS`).
fn lock_frame(l: &super::HeldLock) -> Frame {
    Frame::Array(vec![
        Frame::bulk("node"),
        Frame::bulk(l.node.to_string()),
        Frame::bulk("db"),
        Frame::Integer(l.db as i64),
        Frame::bulk("key"),
        Frame::bulk(l.key.clone()),
        Frame::bulk("owner"),
        Frame::bulk(l.owner.clone()),
        Frame::bulk("count"),
        Frame::Integer(l.count),
        Frame::bulk("layout"),
        Frame::bulk(l.layout.name()),
        Frame::bulk("shared"),
        Frame::Integer(i64::from(l.shared)),
        Frame::bulk("pttl"),
        Frame::Integer(
            l.pttl_ms
                .map_or(-1, |t| i64::try_from(t).unwrap_or(i64::MAX)),
        ),
    ])
}

/// A client as one text: `id=7 addr=127.0.0.1:5555 name=x`, empty when none.
fn client_text(c: &Option<super::ObservedClient>) -> String {
    c.as_ref()
        .map(|c| format!("id={} addr={} name={}", c.id, c.addr, c.name))
        .unwrap_or_default()
}

/// A grant's fields, each name prefixed (`first-owner`, `second-node`…).
fn hold_fields(out: &mut Vec<Frame>, prefix: &str, h: Option<&super::ObservedHold>) {
    let text = |v: Option<String>| Frame::bulk(v.unwrap_or_default());
    let int =
        |v: Option<u64>| Frame::Integer(v.map_or(-1, |v| i64::try_from(v).unwrap_or(i64::MAX)));
    let fields = [
        ("owner", text(h.map(|h| h.owner.clone()))),
        ("node", text(h.map(|h| h.node.to_string()))),
        ("client", text(h.map(|h| client_text(&h.client)))),
        ("from-ms", int(h.map(|h| h.from_ms))),
        ("to-ms", int(h.map(|h| h.to_ms))),
        ("ended-by", text(h.map(|h| h.ended_by.to_string()))),
        (
            "token",
            h.and_then(|h| h.token).map_or(Frame::Null, Frame::Integer),
        ),
    ];
    for (name, value) in fields {
        out.push(Frame::bulk(format!("{prefix}-{name}")));
        out.push(value);
    }
}

/// One violation as a flat field/value array (`LOCKSMITH.CHECK`).
fn violation_frame(v: &super::LockViolation) -> Frame {
    let mut out = vec![
        Frame::bulk("kind"),
        Frame::bulk(v.kind.name()),
        Frame::bulk("key"),
        Frame::bulk(v.key.clone()),
    ];
    hold_fields(&mut out, "first", Some(&v.first));
    hold_fields(&mut out, "second", v.second.as_ref());
    out.extend([
        Frame::bulk("from-ms"),
        Frame::Integer(v.from_ms as i64),
        Frame::bulk("to-ms"),
        Frame::Integer(v.to_ms as i64),
        Frame::bulk("actor"),
        Frame::bulk(client_text(&v.actor)),
        Frame::bulk("faults"),
        Frame::Array(v.faults.iter().map(|f| Frame::bulk(f.clone())).collect()),
        Frame::bulk("text"),
        Frame::bulk(v.to_string()),
    ]);
    Frame::Array(out)
}

/// One flat field/value array for the topology, then one per node.
fn topology_frame(inner: &Inner) -> Frame {
    let mut out = Vec::new();
    let master = inner.master_index();
    let mut head = vec![
        Frame::bulk("front"),
        Frame::bulk(inner.front.addr().to_string()),
        Frame::bulk("master"),
        Frame::bulk(format!("n{master}")),
        Frame::bulk("seed"),
        Frame::bulk(inner.seed.to_string()),
    ];
    if let Some(s) = inner.sentinel.get() {
        head.push(Frame::bulk("sentinel"));
        head.push(Frame::bulk(s.addr().to_string()));
    }
    out.push(Frame::Array(head));
    for info in inner.info() {
        let i = info.id.index();
        let (role, of, link) = match info.role {
            NodeRole::Master => ("master", String::new(), String::new()),
            NodeRole::Replica(m) => (
                "replica",
                m.to_string(),
                if inner.links_up(m.index(), i) {
                    "up"
                } else {
                    "down"
                }
                .to_string(),
            ),
            NodeRole::Down => ("down", String::new(), String::new()),
        };
        out.push(Frame::Array(vec![
            Frame::bulk("node"),
            Frame::bulk(info.id.to_string()),
            Frame::bulk("addr"),
            Frame::bulk(info.addr.to_string()),
            Frame::bulk("port"),
            Frame::Integer(i64::from(info.addr.port())),
            Frame::bulk("role"),
            Frame::bulk(role),
            Frame::bulk("master"),
            Frame::bulk(of),
            Frame::bulk("link"),
            Frame::bulk(link),
            Frame::bulk("offset"),
            Frame::Integer(info.offset as i64),
            Frame::bulk("clock-shift-ms"),
            Frame::Integer(info.clock_shift_ms),
            Frame::bulk("paused"),
            Frame::Integer(i64::from(info.paused)),
        ]));
    }
    Frame::Array(out)
}
