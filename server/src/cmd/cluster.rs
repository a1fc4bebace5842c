//! Cluster commands: CLUSTER KEYSLOT|SLOTS|SHARDS|NODES|MYID|INFO|COUNTKEYSINSLOT|
//! GETKEYSINSLOT|ADDSLOTS|ADDSLOTSRANGE|DELSLOTS|DELSLOTSRANGE|FLUSHSLOTS|BUMPEPOCH|
//! SET-CONFIG-EPOCH|COUNT-FAILURE-REPORTS|REPLICAS|SLAVES|RESET|HELP, READONLY, READWRITE and
//! ASKING. Outside cluster mode each answers
//! `ERR This instance has cluster support disabled`, as Redis does. The topology itself is
//! [`crate::cluster`]'s.

use super::{Args, CmdResult, Command, CommandError, Ctx};
use crate::cluster::{self, Cluster, Layout, Member};
use bytes::Bytes;
use locksmith_resp::Frame;

/// The cluster family's table.
pub(crate) static COMMANDS: &[Command] = &[
    Command::new("cluster", cluster_container).subs(CLUSTER_SUBCOMMANDS),
    Command::new("readonly", readonly),
    Command::new("readwrite", readwrite),
    Command::new("asking", asking),
];

static CLUSTER_SUBCOMMANDS: &[Command] = &[
    Command::new("keyslot", cluster_keyslot),
    Command::new("slots", cluster_slots),
    Command::new("shards", cluster_shards),
    Command::new("nodes", cluster_nodes),
    Command::new("myid", cluster_myid),
    Command::new("myshardid", cluster_myshardid),
    Command::new("info", cluster_info),
    Command::new("countkeysinslot", cluster_countkeysinslot),
    Command::new("getkeysinslot", cluster_getkeysinslot),
    Command::new("addslots", cluster_addslots),
    Command::new("addslotsrange", cluster_addslotsrange),
    Command::new("delslots", cluster_delslots),
    Command::new("delslotsrange", cluster_delslotsrange),
    Command::new("flushslots", cluster_flushslots),
    Command::new("bumpepoch", cluster_bumpepoch),
    Command::new("set-config-epoch", cluster_set_config_epoch),
    Command::new("count-failure-reports", cluster_count_failure_reports),
    Command::new("replicas", cluster_replicas),
    Command::new("slaves", cluster_replicas),
    Command::new("reset", cluster_reset),
    Command::new("help", cluster_help),
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
    Ok(Frame::Integer(i64::from(cluster::key_hash_slot(key))))
}

/// `[ip, port, id, {}]`, a node as `CLUSTER SLOTS` describes it.
fn slots_node(member: &Member) -> Frame {
    Frame::Array(vec![
        Frame::Bulk(Bytes::from(member.addr.ip().to_string())),
        Frame::Integer(i64::from(member.addr.port())),
        Frame::Bulk(Bytes::from(member.id())),
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
        (bulk("id"), bulk(member.id())),
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
    for i in 0..c.view.members.len() {
        if let Some(line) = node_line(c, &layout, i, now) {
            text.push_str(&line);
            text.push('\n');
        }
    }
    Ok(Frame::Verbatim {
        format: *b"txt",
        text: Bytes::from(text),
    })
}

/// Member `i` as a line of `CLUSTER NODES` (Redis's `clusterGenNodeDescription`), without
/// the line end.
fn node_line(c: &Cluster, layout: &Layout, i: usize, now: u64) -> Option<String> {
    let m = c.view.members.get(i)?;
    let role = layout.role(i)?;
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
        .map_or("-".to_string(), |r| r.id());
    // No cluster bus: the bus port is reported as Redis derives it, when it fits.
    let cport = u16::try_from(u32::from(m.addr.port()) + 10000).unwrap_or(0);
    let pong = if me { 0 } else { now };
    let mut line = format!(
        "{} {}:{}@{cport} {flags} {master} 0 {pong} {} {}",
        m.id(),
        m.addr.ip(),
        m.addr.port(),
        role.epoch,
        if up { "connected" } else { "disconnected" },
    );
    for &(s, e) in &role.ranges {
        if s == e {
            line.push_str(&format!(" {s}"));
        } else {
            line.push_str(&format!(" {s}-{e}"));
        }
    }
    Some(line)
}

/// The member named `id` (Redis's `clusterLookupNode`), or `Unknown node <id>`.
fn member_named(c: &Cluster, id: &[u8]) -> Result<usize, CommandError> {
    c.view
        .members
        .iter()
        .position(|m| m.id().as_bytes() == id)
        .ok_or_else(|| CommandError::err(format!("Unknown node {}", String::from_utf8_lossy(id))))
}

/// A slot argument of ADDSLOTS and the like (Redis's `getSlotOrReply`).
fn slot_of(arg: &[u8]) -> Result<usize, CommandError> {
    std::str::from_utf8(arg)
        .ok()
        .and_then(|s| s.parse::<i64>().ok())
        .and_then(|s| usize::try_from(s).ok())
        .filter(|&s| s < cluster::SLOTS)
        .ok_or_else(|| CommandError::err("Invalid or out of range slot"))
}

/// ADDSLOTS, DELSLOTS and their RANGE forms: `slots` (every argument parsed first), each
/// given once and, to add, unassigned, or to delete, assigned; then all at once.
fn assign_slots(ctx: &mut Ctx<'_>, slots: &[usize], add: bool) -> CmdResult {
    let c = cluster(ctx)?;
    let me = u16::try_from(c.me).unwrap_or(u16::MAX);
    c.view.change(|owner, _| {
        let mut seen = vec![false; cluster::SLOTS];
        for &slot in slots {
            let assigned = owner.get(slot).copied().flatten().is_some();
            if !add && !assigned {
                return Err(CommandError::err(format!(
                    "Slot {slot} is already unassigned"
                )));
            }
            if add && assigned {
                return Err(CommandError::err(format!("Slot {slot} is already busy")));
            }
            if std::mem::replace(&mut seen[slot], true) {
                return Err(CommandError::err(format!(
                    "Slot {slot} specified multiple times"
                )));
            }
        }
        for &slot in slots {
            owner[slot] = add.then_some(me);
        }
        Ok(())
    })?;
    Ok(Frame::ok())
}

/// ```text
/// CLUSTER ADDSLOTS slot [slot ...]
/// CLUSTER DELSLOTS slot [slot ...]
/// ```
fn cluster_addslots(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let slots = args
        .rest()
        .iter()
        .map(|a| slot_of(a))
        .collect::<Result<Vec<_>, _>>()?;
    assign_slots(ctx, &slots, true)
}

fn cluster_delslots(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let slots = args
        .rest()
        .iter()
        .map(|a| slot_of(a))
        .collect::<Result<Vec<_>, _>>()?;
    assign_slots(ctx, &slots, false)
}

/// The slots of `start end` pairs (ADDSLOTSRANGE, DELSLOTSRANGE).
fn slot_ranges(args: &mut Args<'_>, command: &str) -> Result<Vec<usize>, CommandError> {
    let pairs = args.rest();
    if !pairs.len().is_multiple_of(2) {
        return Err(CommandError::WrongArity(command.into()));
    }
    let mut slots = Vec::new();
    for pair in pairs.chunks(2) {
        let (start, end) = (slot_of(&pair[0])?, slot_of(&pair[1])?);
        if start > end {
            return Err(CommandError::err(format!(
                "start slot number {start} is greater than end slot number {end}"
            )));
        }
        // Past SLOTS entries some slot repeats, and the checks stop at or before the first
        // repeat: the list is cut there, so many ranges cannot make it grow without bound.
        let room = (cluster::SLOTS + 1).saturating_sub(slots.len());
        slots.extend((start..=end).take(room));
    }
    Ok(slots)
}

/// ```text
/// CLUSTER ADDSLOTSRANGE start end [start end ...]
/// CLUSTER DELSLOTSRANGE start end [start end ...]
/// ```
fn cluster_addslotsrange(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    cluster(ctx)?;
    let slots = slot_ranges(args, "cluster|addslotsrange")?;
    assign_slots(ctx, &slots, true)
}

fn cluster_delslotsrange(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    cluster(ctx)?;
    let slots = slot_ranges(args, "cluster|delslotsrange")?;
    assign_slots(ctx, &slots, false)
}

/// ```text
/// CLUSTER FLUSHSLOTS
/// ```
/// Unassigns every slot of this node; its database must be empty.
fn cluster_flushslots(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    let c = cluster(ctx)?;
    if ctx.state.dbs.first().is_some_and(|db| db.len() != 0) {
        return Err(CommandError::err(
            "DB must be empty to perform CLUSTER FLUSHSLOTS.",
        ));
    }
    let me = u16::try_from(c.me).ok();
    c.view.change(|owner, _| {
        for o in owner.iter_mut().filter(|o| **o == me) {
            *o = None;
        }
        Ok::<(), CommandError>(())
    })?;
    Ok(Frame::ok())
}

/// ```text
/// CLUSTER BUMPEPOCH
/// ```
/// This node takes a config epoch above every other unless it already has the highest,
/// unshared one (Redis's `clusterBumpConfigEpochWithoutConsensus`).
fn cluster_bumpepoch(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    let c = cluster(ctx)?;
    let mut reply = String::new();
    c.view.change(|_, epochs| {
        let max = epochs.iter().copied().max().unwrap_or(0);
        let mine = epochs.get(c.me).copied().unwrap_or(0);
        let shared = epochs.iter().filter(|&&e| e == mine).count() > 1;
        reply = if mine == 0 || mine != max || shared {
            if let Some(e) = epochs.get_mut(c.me) {
                *e = max + 1;
            }
            format!("BUMPED {}", max + 1)
        } else {
            format!("STILL {mine}")
        };
        Ok::<(), CommandError>(())
    })?;
    Ok(Frame::Simple(Bytes::from(reply)))
}

/// ```text
/// CLUSTER SET-CONFIG-EPOCH epoch
/// ```
fn cluster_set_config_epoch(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let c = cluster(ctx)?;
    let epoch = args.i64()?;
    let epoch = u64::try_from(epoch)
        .map_err(|_| CommandError::err(format!("Invalid config epoch specified: {epoch}")))?;
    if c.view.members.len() > 1 {
        return Err(CommandError::err(
            "The user can assign a config epoch only when the node does not know any other node.",
        ));
    }
    c.view.change(|_, epochs| match epochs.get_mut(c.me) {
        Some(mine) if *mine == 0 => {
            *mine = epoch;
            Ok(())
        }
        _ => Err(CommandError::err("Node config epoch is already non-zero")),
    })?;
    Ok(Frame::ok())
}

/// ```text
/// CLUSTER COUNT-FAILURE-REPORTS node-id
/// ```
/// Always 0 for a known node: members learn of a failure from the shared view at once, so no
/// member ever holds another's report.
fn cluster_count_failure_reports(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let c = cluster(ctx)?;
    member_named(c, args.bytes()?)?;
    Ok(Frame::Integer(0))
}

/// ```text
/// CLUSTER REPLICAS node-id
/// CLUSTER SLAVES node-id
/// ```
/// The master's replicas, each as its `CLUSTER NODES` line.
fn cluster_replicas(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let c = cluster(ctx)?;
    let m = member_named(c, args.bytes()?)?;
    let layout = c.view.layout();
    if layout.replica_of(m).is_some() {
        return Err(CommandError::err("The specified node is not a master"));
    }
    let now = ctx.node.clock.now_ms();
    Ok(Frame::Array(
        layout
            .replicas_of(m)
            .filter_map(|r| node_line(c, &layout, r, now))
            .map(bulk)
            .collect(),
    ))
}

/// ```text
/// CLUSTER RESET [HARD | SOFT]
/// ```
/// A one-node cluster forgets its slots (a master must hold no keys); HARD also zeroes its
/// config epoch and gives it a new node id. A member of a harness topology answers an error:
/// the harness owns that cluster's membership.
fn cluster_reset(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    cluster(ctx)?;
    let hard = match args.rest() {
        [] => false,
        [mode] if mode.eq_ignore_ascii_case(b"hard") => true,
        [mode] if mode.eq_ignore_ascii_case(b"soft") => false,
        [_] => return Err(CommandError::Syntax),
        _ => return Err(CommandError::subcommand_syntax("CLUSTER", args.argv())),
    };
    let new_id = hard.then(|| cluster::node_id(&mut ctx.state.rng));
    let c = cluster(ctx)?;
    let layout = c.view.layout();
    let keys = ctx.state.dbs.get(ctx.client.db).map_or(0, |db| db.len());
    if layout.replica_of(c.me).is_none() && keys != 0 {
        return Err(CommandError::err(
            "CLUSTER RESET can't be called with master nodes containing keys",
        ));
    }
    if c.view.members.len() > 1 {
        return Err(CommandError::err(
            "CLUSTER RESET of a member of a harness topology: the harness owns its membership",
        ));
    }
    c.view.change(|owner, epochs| {
        owner.fill(None);
        if hard {
            epochs.fill(0);
        }
        Ok::<(), CommandError>(())
    })?;
    if let Some(id) = new_id {
        c.view.rename(c.me, id);
    }
    Ok(Frame::ok())
}

/// ```text
/// CLUSTER MYID
/// ```
fn cluster_myid(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    let c = cluster(ctx)?;
    Ok(bulk(c.myself().map(Member::id).unwrap_or_default()))
}

/// ```text
/// CLUSTER MYSHARDID
/// ```
///
/// Valkey's: the id of this node's shard, its master's and replicas' alike.
fn cluster_myshardid(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    let c = cluster(ctx)?;
    Ok(bulk(c.myself().map(Member::shard_id).unwrap_or_default()))
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
        ctx,
        "CLUSTER",
        &[
            "ADDSLOTS <slot> [<slot> ...]",
            "    Assign slots to current node.",
            "ADDSLOTSRANGE <start slot> <end slot> [<start slot> <end slot> ...]",
            "    Assign slots which are between <start-slot> and <end-slot> to current node.",
            "BUMPEPOCH",
            "    Advance the cluster config epoch.",
            "COUNT-FAILURE-REPORTS <node-id>",
            "    Return number of failure reports for <node-id>.",
            "COUNTKEYSINSLOT <slot>",
            "    Return the number of keys in <slot>.",
            "DELSLOTS <slot> [<slot> ...]",
            "    Delete slots information from current node.",
            "DELSLOTSRANGE <start slot> <end slot> [<start slot> <end slot> ...]",
            "    Delete slots information which are between <start-slot> and <end-slot> from current node.",
            "GETKEYSINSLOT <slot> <count>",
            "    Return key names stored by current node in a slot.",
            "FLUSHSLOTS",
            "    Delete current node own slots information.",
            "INFO",
            "    Return information about the cluster.",
            "KEYSLOT <key>",
            "    Return the hash slot for <key>.",
            "MYID",
            "    Return the node id.",
            "NODES",
            "    Return cluster configuration seen by node. Output format:",
            "    <id> <ip:port> <flags> <master> <pings> <pongs> <epoch> <link> <slot> ...",
            "RESET [HARD|SOFT]",
            "    Reset current node (default: soft).",
            "SET-CONFIG-EPOCH <epoch>",
            "    Set config epoch of current node.",
            "REPLICAS <node-id>",
            "    Return <node-id> replicas.",
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
    if !ctx.node.config.profile().semantics.readonly_outside_cluster {
        cluster(ctx)?;
    }
    ctx.client.modes.cluster_readonly = true;
    Ok(Frame::ok())
}

/// ```text
/// READWRITE
/// ```
fn readwrite(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    if !ctx.node.config.profile().semantics.readonly_outside_cluster {
        cluster(ctx)?;
    }
    ctx.client.modes.cluster_readonly = false;
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
        let spec = |name: &str| {
            super::super::lookup(crate::compat::Compat::Redis70, name.as_bytes()).unwrap()
        };
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
        // SORT and MIGRATE by their own finders: the last STORE; KEYS after AUTH's password.
        let sort = argv(&["SORT", "k", "STORE", "x", "BY", "w", "STORE", "y"]);
        assert_eq!(spec("sort").keys_of(&sort), vec!["k", "y"]);
        let migrate = argv(&[
            "MIGRATE", "h", "1", "", "0", "5", "AUTH", "keys", "KEYS", "a", "b",
        ]);
        assert_eq!(spec("migrate").keys_of(&migrate), vec!["a", "b"]);
        let migrate = argv(&["MIGRATE", "h", "1", "k", "0", "5", "COPY"]);
        assert_eq!(spec("migrate").keys_of(&migrate), vec!["k"]);
    }
}
