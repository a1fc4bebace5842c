//! Cluster commands: CLUSTER KEYSLOT|SLOTS|SHARDS|NODES|MYID|INFO|COUNTKEYSINSLOT|
//! GETKEYSINSLOT|HELP, READONLY, READWRITE and ASKING. Outside cluster mode each answers
//! `ERR This instance has cluster support disabled`, as Redis does. The topology itself is
//! [`crate::cluster`]'s.

use super::{flags::*, Args, CmdResult, CommandError, CommandSpec, Ctx};
use crate::cluster::{self, Cluster, Layout, Member};
use bytes::Bytes;
use locksmith_resp::Frame;

/// The cluster family's table.
pub(crate) static COMMANDS: &[CommandSpec] = &[
    CommandSpec::new("cluster", -2, cluster_container)
        .doc("cluster", "A container for Redis Cluster commands.")
        .subs(CLUSTER_SUBCOMMANDS),
    CommandSpec::new("readonly", 1, readonly)
        .flags(FAST | LOADING | STALE)
        .doc(
            "cluster",
            "Enables read-only queries for a connection to a Redis Cluster replica node.",
        ),
    CommandSpec::new("readwrite", 1, readwrite)
        .flags(FAST | LOADING | STALE)
        .doc(
            "cluster",
            "Enables read-write queries for a connection to a Reids Cluster replica node.",
        ),
    CommandSpec::new("asking", 1, asking).flags(FAST).doc(
        "cluster",
        "Signals that a cluster client is following an -ASK redirect.",
    ),
];

static CLUSTER_SUBCOMMANDS: &[CommandSpec] = &[
    CommandSpec::new("keyslot", 3, cluster_keyslot)
        .flags(STALE)
        .doc("cluster", "Returns the hash slot for a key."),
    CommandSpec::new("slots", 2, cluster_slots)
        .flags(STALE)
        .doc("cluster", "Returns the mapping of cluster slots to nodes."),
    CommandSpec::new("shards", 2, cluster_shards)
        .flags(STALE)
        .doc("cluster", "Returns the mapping of cluster slots to shards."),
    CommandSpec::new("nodes", 2, cluster_nodes)
        .flags(STALE)
        .doc("cluster", "Returns the cluster configuration for a node."),
    CommandSpec::new("myid", 2, cluster_myid)
        .flags(STALE)
        .doc("cluster", "Returns the ID of a node."),
    CommandSpec::new("info", 2, cluster_info)
        .flags(STALE)
        .doc("cluster", "Returns information about the state of a node."),
    CommandSpec::new("countkeysinslot", 3, cluster_countkeysinslot)
        .flags(STALE)
        .doc("cluster", "Returns the number of keys in a hash slot."),
    CommandSpec::new("getkeysinslot", 4, cluster_getkeysinslot)
        .flags(STALE)
        .doc("cluster", "Returns the key names in a hash slot."),
    CommandSpec::new("help", 2, cluster_help)
        .flags(LOADING | STALE)
        .doc(
            "cluster",
            "Returns helpful text about the different subcommands.",
        ),
];

/// The node's cluster, or Redis's error outside cluster mode.
fn cluster<'c>(ctx: &'c Ctx<'_>) -> Result<&'c Cluster, CommandError> {
    ctx.node
        .cluster
        .get()
        .ok_or_else(|| CommandError::err("This instance has cluster support disabled"))
}

/// `CLUSTER` alone.
fn cluster_container(_ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    Err(CommandError::WrongArity("cluster".into()))
}

/// ```text
/// CLUSTER KEYSLOT key
/// ```
fn cluster_keyslot(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    cluster(ctx)?;
    let key = args.bytes()?;
    Ok(Frame::Integer(i64::from(cluster::key_hash_slot(&key))))
}

/// `[ip, port, id, {}]`, a node as `CLUSTER SLOTS` describes it.
fn slots_node(member: &Member) -> Frame {
    Frame::Array(vec![
        Frame::Bulk(Bytes::from(member.addr.ip().to_string())),
        Frame::Integer(i64::from(member.addr.port())),
        Frame::Bulk(Bytes::from(member.id.clone())),
        Frame::Map(Vec::new()),
    ])
}

/// Every (start, end, master index) range, in slot order.
fn ranges(layout: &Layout, members: usize) -> Vec<(u16, u16, usize)> {
    let mut all: Vec<(u16, u16, usize)> = (0..members)
        .filter_map(|i| layout.role(i).map(|r| (i, r)))
        .flat_map(|(i, r)| r.ranges.iter().map(move |&(s, e)| (s, e, i)))
        .collect();
    all.sort_unstable();
    all
}

/// ```text
/// CLUSTER SLOTS
/// ```
///
/// One entry per slot range: start, end, the master, then its replicas that are up.
fn cluster_slots(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    let c = cluster(ctx)?;
    let layout = c.view.layout();
    let mut out = Vec::new();
    for (start, end, m) in ranges(&layout, c.view.members.len()) {
        let Some(master) = c.view.members.get(m) else {
            continue;
        };
        let mut entry = vec![
            Frame::Integer(i64::from(start)),
            Frame::Integer(i64::from(end)),
            slots_node(master),
        ];
        for r in layout.replicas_of(m) {
            if let Some(replica) = c.view.members.get(r).filter(|r| r.is_up()) {
                entry.push(slots_node(replica));
            }
        }
        out.push(Frame::Array(entry));
    }
    Ok(Frame::Array(out))
}

fn bulk(s: impl Into<String>) -> Frame {
    Frame::Bulk(Bytes::from(s.into()))
}

/// A node as `CLUSTER SHARDS` describes it.
fn shard_node(c: &Cluster, layout: &Layout, i: usize, member: &Member) -> Frame {
    let role = if layout.replica_of(i).is_some() {
        "replica"
    } else {
        "master"
    };
    let health = if i == c.me || member.is_up() {
        "online"
    } else {
        "failed"
    };
    Frame::Map(vec![
        (bulk("id"), bulk(member.id.clone())),
        (bulk("port"), Frame::Integer(i64::from(member.addr.port()))),
        (bulk("ip"), bulk(member.addr.ip().to_string())),
        (bulk("endpoint"), bulk(member.addr.ip().to_string())),
        (bulk("role"), bulk(role)),
        (
            bulk("replication-offset"),
            Frame::Integer(member.offset() as i64),
        ),
        (bulk("health"), bulk(health)),
    ])
}

/// ```text
/// CLUSTER SHARDS
/// ```
///
/// One map per master: its slot ranges (as start, end pairs) and its nodes.
fn cluster_shards(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    let c = cluster(ctx)?;
    let layout = c.view.layout();
    let mut out = Vec::new();
    for m in 0..c.view.members.len() {
        let Some(role) = layout.role(m).filter(|r| r.replica_of.is_none()) else {
            continue;
        };
        let slots = role
            .ranges
            .iter()
            .flat_map(|&(s, e)| [Frame::Integer(i64::from(s)), Frame::Integer(i64::from(e))])
            .collect();
        let nodes = std::iter::once(m)
            .chain(layout.replicas_of(m))
            .filter_map(|i| c.view.members.get(i).map(|n| shard_node(c, &layout, i, n)))
            .collect();
        out.push(Frame::Map(vec![
            (bulk("slots"), Frame::Array(slots)),
            (bulk("nodes"), Frame::Array(nodes)),
        ]));
    }
    Ok(Frame::Array(out))
}

/// ```text
/// CLUSTER NODES
/// ```
///
/// One line per node: `<id> <ip:port@cport> <flags> <master> <ping-sent> <pong-recv>
/// <config-epoch> <link-state> <slot> ...`.
fn cluster_nodes(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    let c = cluster(ctx)?;
    let layout = c.view.layout();
    let now = ctx.node.clock.now_ms();
    let mut text = String::new();
    for (i, m) in c.view.members.iter().enumerate() {
        let Some(role) = layout.role(i) else {
            continue;
        };
        let me = i == c.me;
        let up = me || m.is_up();
        let mut flags = String::new();
        if me {
            flags.push_str("myself,");
        }
        flags.push_str(if role.replica_of.is_some() {
            "slave"
        } else {
            "master"
        });
        if !up {
            flags.push_str(",fail");
        }
        let master = role
            .replica_of
            .and_then(|r| c.view.members.get(r))
            .map_or("-".to_string(), |r| r.id.clone());
        // No cluster bus: the bus port is reported as Redis derives it, when it fits.
        let cport = u16::try_from(u32::from(m.addr.port()) + 10000).unwrap_or(0);
        let pong = if me { 0 } else { now };
        text.push_str(&format!(
            "{} {}:{}@{cport} {flags} {master} 0 {pong} {} {}",
            m.id,
            m.addr.ip(),
            m.addr.port(),
            role.epoch,
            if up { "connected" } else { "disconnected" },
        ));
        for &(s, e) in &role.ranges {
            if s == e {
                text.push_str(&format!(" {s}"));
            } else {
                text.push_str(&format!(" {s}-{e}"));
            }
        }
        text.push('\n');
    }
    Ok(Frame::Verbatim {
        format: *b"txt",
        text: Bytes::from(text),
    })
}

/// ```text
/// CLUSTER MYID
/// ```
fn cluster_myid(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    let c = cluster(ctx)?;
    Ok(bulk(c.myself().map(|m| m.id.clone()).unwrap_or_default()))
}

/// ```text
/// CLUSTER INFO
/// ```
fn cluster_info(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    let c = cluster(ctx)?;
    let view = &c.view;
    let layout = view.layout();
    let assigned = layout.slots_assigned();
    let failing: usize = view
        .members
        .iter()
        .enumerate()
        .filter(|(i, m)| *i != c.me && !m.is_up())
        .filter_map(|(i, _)| layout.role(i))
        .flat_map(|r| r.ranges.iter())
        .map(|&(s, e)| usize::from(e - s) + 1)
        .sum();
    let size = (0..view.members.len())
        .filter_map(|i| layout.role(i))
        .filter(|r| !r.ranges.is_empty())
        .count();
    let current_epoch = layout.current_epoch();
    let my_epoch = layout.role(c.me).map_or(0, |r| r.epoch);
    let state = if assigned == cluster::SLOTS && failing == 0 {
        "ok"
    } else {
        "fail"
    };
    let lines = [
        format!("cluster_state:{state}"),
        format!("cluster_slots_assigned:{assigned}"),
        format!("cluster_slots_ok:{}", assigned - failing),
        "cluster_slots_pfail:0".to_string(),
        format!("cluster_slots_fail:{failing}"),
        format!("cluster_known_nodes:{}", view.members.len()),
        format!("cluster_size:{size}"),
        format!("cluster_current_epoch:{current_epoch}"),
        format!("cluster_my_epoch:{my_epoch}"),
        "cluster_stats_messages_sent:0".to_string(),
        "cluster_stats_messages_received:0".to_string(),
        "total_cluster_links_buffer_limit_exceeded:0".to_string(),
    ];
    let mut text = lines.join("\r\n");
    text.push_str("\r\n");
    Ok(Frame::Verbatim {
        format: *b"txt",
        text: Bytes::from(text),
    })
}

/// A slot argument: an integer (else the integer error), in range (else `invalid`).
fn slot_arg(args: &mut Args<'_>, invalid: &str) -> Result<u16, CommandError> {
    let slot = args.i64()?;
    u16::try_from(slot)
        .ok()
        .filter(|&s| usize::from(s) < cluster::SLOTS)
        .ok_or_else(|| CommandError::err(invalid))
}

/// ```text
/// CLUSTER COUNTKEYSINSLOT slot
/// ```
fn cluster_countkeysinslot(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    cluster(ctx)?;
    let slot = slot_arg(args, "Invalid slot")?;
    let count = ctx
        .state
        .dbs
        .first()
        .map_or(0, |db| cluster::keys_in_slot(db, slot).count());
    Ok(Frame::Integer(count as i64))
}

/// ```text
/// CLUSTER GETKEYSINSLOT slot count
/// ```
fn cluster_getkeysinslot(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    cluster(ctx)?;
    const INVALID: &str = "Invalid slot or number of keys";
    let slot = args.i64()?;
    let count = args.i64()?;
    let (Ok(slot), Ok(count)) = (u16::try_from(slot), usize::try_from(count)) else {
        return Err(CommandError::err(INVALID));
    };
    if usize::from(slot) >= cluster::SLOTS {
        return Err(CommandError::err(INVALID));
    }
    let keys = ctx.state.dbs.first().map_or_else(Vec::new, |db| {
        cluster::keys_in_slot(db, slot)
            .take(count)
            .map(|k| Frame::Bulk(k.to_bytes()))
            .collect()
    });
    Ok(Frame::Array(keys))
}

/// ```text
/// CLUSTER HELP
/// ```
fn cluster_help(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    cluster(ctx)?;
    Ok(super::client::help_lines(
        "CLUSTER",
        &[
            "COUNTKEYSINSLOT <slot>",
            "    Return the number of keys in <slot>.",
            "GETKEYSINSLOT <slot> <count>",
            "    Return key names stored by current node in a slot.",
            "INFO",
            "    Return information about the cluster.",
            "KEYSLOT <key>",
            "    Return the hash slot for <key>.",
            "MYID",
            "    Return the node id.",
            "NODES",
            "    Return cluster configuration seen by node. Output format:",
            "    <id> <ip:port> <flags> <master> <pings> <pongs> <epoch> <link> <slot> ...",
            "SLOTS",
            "    Return information about slots range mappings. Each range is made of:",
            "    start, end, master and replicas IP addresses, ports and ids",
            "SHARDS",
            "    Return information about slot range mappings and the nodes associated with them.",
        ],
    ))
}

/// ```text
/// READONLY
/// ```
///
/// A replica then serves this connection's reads of its master's slots.
fn readonly(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    cluster(ctx)?;
    ctx.client.cluster_readonly = true;
    Ok(Frame::ok())
}

/// ```text
/// READWRITE
/// ```
fn readwrite(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    cluster(ctx)?;
    ctx.client.cluster_readonly = false;
    Ok(Frame::ok())
}

/// ```text
/// ASKING
/// ```
///
/// Accepted; slots never migrate here, so no `ASK` redirection is ever sent.
fn asking(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    cluster(ctx)?;
    Ok(Frame::ok())
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    #[test]
    fn movable_keys_follow_numkeys() {
        let argv = |parts: &[&str]| -> Vec<Bytes> {
            parts
                .iter()
                .map(|p| Bytes::copy_from_slice(p.as_bytes()))
                .collect()
        };
        let spec = |name: &str| super::super::lookup(name.as_bytes()).unwrap();
        let eval = argv(&["EVAL", "return 1", "2", "a", "b", "c"]);
        assert_eq!(spec("eval").keys_of(&eval), vec!["a", "b"]);
        let zu = argv(&["ZUNIONSTORE", "d", "2", "a", "b", "WEIGHTS", "1", "2"]);
        assert_eq!(spec("zunionstore").keys_of(&zu), vec!["d", "a", "b"]);
        let lmpop = argv(&["LMPOP", "2", "a", "b", "LEFT"]);
        assert_eq!(spec("lmpop").keys_of(&lmpop), vec!["a", "b"]);
        let blmpop = argv(&["BLMPOP", "0", "1", "a", "LEFT"]);
        assert_eq!(spec("blmpop").keys_of(&blmpop), vec!["a"]);
        let bad = argv(&["EVAL", "return 1", "9", "a"]);
        assert!(spec("eval").keys_of(&bad).is_empty());
        let mset = argv(&["MSET", "a", "1", "b", "2"]);
        assert_eq!(spec("mset").keys_of(&mset), vec!["a", "b"]);
    }
}
