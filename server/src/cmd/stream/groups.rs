//! The consumer-group and introspection commands of streams: XGROUP, XACK, XPENDING, XCLAIM,
//! XAUTOCLAIM and XINFO (Redis 7.0's `t_stream.c`, as the rest of [`super`]).

use super::super::{lossy, parse_i64};
use super::*;

/// `XGROUP` alone.
pub(super) fn xgroup_container(_ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    Err(CommandError::WrongArity("xgroup".into()))
}

/// Options after XGROUP CREATE/SETID's ID: `MKSTREAM` (CREATE), `ENTRIESREAD n`.
fn xgroup_options(args: &mut Args<'_>, create: bool) -> Result<(bool, Option<u64>), CommandError> {
    let mut mkstream = false;
    let mut entries_read = None;
    let rest = args.rest();
    let mut i = 0;
    while i < rest.len() {
        if create && rest[i].eq_ignore_ascii_case(b"mkstream") {
            mkstream = true;
            i += 1;
        } else if rest[i].eq_ignore_ascii_case(b"entriesread") && i + 1 < rest.len() {
            let n = parse_i64(&rest[i + 1])?;
            if n < -1 {
                return Err(CommandError::err(
                    "value for ENTRIESREAD must be positive or -1",
                ));
            }
            entries_read = u64::try_from(n).ok();
            i += 2;
        } else {
            return Err(CommandError::subcommand_syntax("XGROUP", args.argv()));
        }
    }
    Ok((mkstream, entries_read))
}

/// The stream an XGROUP subcommand works on, with Redis's error when it is missing.
fn xgroup_stream<'c>(ctx: &'c mut Ctx<'_>, key: &Bytes) -> Result<&'c mut Stream, CommandError> {
    stream_at(ctx, key)?.ok_or_else(|| {
        CommandError::err(
            "The XGROUP subcommand requires the key to exist. Note that for CREATE you may want \
             to use the MKSTREAM option to create an empty stream automatically.",
        )
    })
}

/// ```text
/// XGROUP CREATE key group <id | $> [MKSTREAM] [ENTRIESREAD entries-read]
/// ```
pub(super) fn xgroup_create(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.bytes()?;
    let name = args.bytes()?;
    let id_arg = args.bytes()?;
    if args.argv().len() > 8 {
        return Err(CommandError::subcommand_syntax("XGROUP", args.argv()));
    }
    let (mkstream, entries_read) = xgroup_options(args, true)?;
    let exists = stream_at(ctx, key)?.is_some();
    if !exists && !mkstream {
        xgroup_stream(ctx, key)?;
    }
    let id = if &id_arg[..] == b"$" {
        stream_at(ctx, key)?.map_or(StreamId::MIN, |s| s.last_id)
    } else {
        parse_id(id_arg, 0, true, false)?.0
    };
    if !exists {
        ctx.set(key, Value::Stream(Box::default()), None);
    }
    let s = xgroup_stream(ctx, key)?;
    if s.groups.contains_key(name) {
        return Err(CommandError::Raw(
            "BUSYGROUP Consumer Group name already exists".into(),
        ));
    }
    s.groups.insert(
        name.clone(),
        Group {
            last_id: id,
            entries_read,
            ..Group::default()
        },
    );
    ctx.modified(key);
    event(ctx, "xgroup-create", key);
    Ok(Frame::ok())
}

/// ```text
/// XGROUP SETID key group <id | $> [ENTRIESREAD entries-read]
/// ```
pub(super) fn xgroup_setid(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.bytes()?;
    let name = args.bytes()?;
    let id_arg = args.bytes()?;
    if !matches!(args.argv().len(), 5 | 7) {
        return Err(CommandError::subcommand_syntax("XGROUP", args.argv()));
    }
    let (_, entries_read) = xgroup_options(args, false)?;
    let s = xgroup_stream(ctx, key)?;
    if !s.groups.contains_key(name) {
        return Err(no_group_for_key(name, key));
    }
    let id = if &id_arg[..] == b"$" {
        s.last_id
    } else {
        parse_id(id_arg, 0, false, false)?.0
    };
    if let Some(g) = s.groups.get_mut(name) {
        g.last_id = id;
        g.entries_read = entries_read;
    }
    ctx.modified(key);
    event(ctx, "xgroup-setid", key);
    Ok(Frame::ok())
}

/// ```text
/// XGROUP DESTROY key group
/// ```
pub(super) fn xgroup_destroy(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.bytes()?;
    let name = args.bytes()?;
    let s = xgroup_stream(ctx, key)?;
    if s.groups.remove(name).is_none() {
        return Ok(Frame::Integer(0));
    }
    // Clients blocked on the group are woken by the write (and find it gone).
    ctx.modified(key);
    event(ctx, "xgroup-destroy", key);
    Ok(Frame::Integer(1))
}

/// ```text
/// XGROUP CREATECONSUMER key group consumer
/// ```
pub(super) fn xgroup_createconsumer(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.bytes()?;
    let name = args.bytes()?;
    let consumer = args.bytes()?;
    let now = now(ctx);
    let s = xgroup_stream(ctx, key)?;
    let Some(g) = s.groups.get_mut(name) else {
        return Err(no_group_for_key(name, key));
    };
    if g.consumers.contains_key(consumer) {
        return Ok(Frame::Integer(0));
    }
    g.consumers.insert(
        consumer.clone(),
        crate::db::stream::Consumer {
            seen_time: now,
            active_time: -1,
            pel: Default::default(),
        },
    );
    ctx.modified(key);
    event(ctx, "xgroup-createconsumer", key);
    Ok(Frame::Integer(1))
}

/// ```text
/// XGROUP DELCONSUMER key group consumer
/// ```
pub(super) fn xgroup_delconsumer(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.bytes()?;
    let name = args.bytes()?;
    let consumer = args.bytes()?;
    let s = xgroup_stream(ctx, key)?;
    let Some(g) = s.groups.get_mut(name) else {
        return Err(no_group_for_key(name, key));
    };
    let Some(c) = g.consumers.remove(consumer) else {
        return Ok(Frame::Integer(0));
    };
    // Its pending entries go with it.
    for id in &c.pel {
        g.pel.remove(id);
    }
    ctx.modified(key);
    event(ctx, "xgroup-delconsumer", key);
    Ok(int(c.pel.len()))
}

/// ```text
/// XGROUP HELP
/// ```
pub(super) fn xgroup_help(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    Ok(help_reply(ctx, "XGROUP"))
}

// ---------------------------------------------------------------------------------------
// XSETID, XACK, XPENDING

/// ```text
/// XACK key group id [id ...]
/// ```
pub(super) fn xack(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.bytes()?;
    let name = args.bytes()?;
    let has_group = match stream_read(ctx, key)? {
        Some(s) => s.groups.contains_key(name),
        None => false,
    };
    if !has_group {
        return Ok(Frame::Integer(0));
    }
    let ids = args
        .rest()
        .iter()
        .map(|a| parse_id(a, 0, true, false).map(|(id, _)| id))
        .collect::<Result<Vec<_>, _>>()?;
    let Some(g) = stream_at(ctx, key)?.and_then(|s| s.groups.get_mut(name)) else {
        return Ok(Frame::Integer(0));
    };
    let acked = ids.into_iter().filter(|id| g.ack(*id)).count();
    if acked > 0 {
        ctx.modified(key);
    }
    Ok(int(acked))
}

/// ```text
/// XPENDING key group [[IDLE min-idle-time] start end count [consumer]]
/// ```
pub(super) fn xpending(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let argv = args.argv();
    let argc = argv.len();
    let key = argv[1].clone();
    let name = argv[2].clone();
    if argc != 3 && !(6..=9).contains(&argc) {
        return Err(CommandError::Syntax);
    }
    let mut range: Option<(StreamId, StreamId, usize, Option<Bytes>, u64)> = None;
    if argc >= 6 {
        let mut start_idx = 3;
        let mut min_idle = 0u64;
        if argv[3].eq_ignore_ascii_case(b"idle") {
            let v = parse_i64(&argv[4])?;
            if argc < 8 {
                return Err(CommandError::Syntax);
            }
            min_idle = u64::try_from(v).unwrap_or(0);
            start_idx += 2;
        }
        let count = parse_i64(&argv[start_idx + 2])?;
        let count = usize::try_from(count.max(0)).unwrap_or(usize::MAX);
        let (mut start, start_ex) = parse_interval(&argv[start_idx], 0)?;
        if start_ex {
            start = start
                .next()
                .ok_or_else(|| CommandError::err("invalid start ID for the interval"))?;
        }
        let (mut end, end_ex) = parse_interval(&argv[start_idx + 1], u64::MAX)?;
        if end_ex {
            end = end
                .prev()
                .ok_or_else(|| CommandError::err("invalid end ID for the interval"))?;
        }
        let consumer = argv.get(start_idx + 3).cloned();
        range = Some((start, end, count, consumer, min_idle));
    }
    let now = now(ctx);
    let Some(g) = stream_at(ctx, &key)?.and_then(|s| s.groups.get(&name)) else {
        return Err(no_group(&key, &name));
    };
    let Some((start, end, count, consumer, min_idle)) = range else {
        if g.pel.is_empty() {
            return Ok(Frame::Array(vec![
                Frame::Integer(0),
                Frame::Null,
                Frame::Null,
                Frame::NullArray,
            ]));
        }
        let first = g.pel.keys().next().copied().unwrap_or_default();
        let last = g.pel.keys().next_back().copied().unwrap_or_default();
        let consumers = g
            .consumers
            .iter()
            .filter(|(_, c)| !c.pel.is_empty())
            .map(|(n, c)| {
                Frame::Array(vec![
                    Frame::Bulk(n.clone()),
                    Frame::Bulk(Bytes::from(c.pel.len().to_string())),
                ])
            })
            .collect();
        return Ok(Frame::Array(vec![
            int(g.pel.len()),
            id_frame(first),
            id_frame(last),
            Frame::Array(consumers),
        ]));
    };
    let ids: Vec<StreamId> = match &consumer {
        Some(c) => match g.consumers.get(c) {
            Some(c) => c.pel.range(start..=end.max(start)).copied().collect(),
            None => return Ok(Frame::Array(Vec::new())),
        },
        None => g
            .pel
            .range(start..=end.max(start))
            .map(|(id, _)| *id)
            .collect(),
    };
    let mut out = Vec::new();
    for id in ids {
        if out.len() >= count || id > end {
            break;
        }
        let Some(p) = g.pel.get(&id) else { continue };
        let idle = now.saturating_sub(p.delivery_time);
        if min_idle > 0 && idle < min_idle {
            continue;
        }
        out.push(Frame::Array(vec![
            id_frame(id),
            Frame::Bulk(p.consumer.clone()),
            int(idle),
            int(p.delivery_count),
        ]));
    }
    Ok(Frame::Array(out))
}

// ---------------------------------------------------------------------------------------
// XCLAIM, XAUTOCLAIM

/// ```text
/// XCLAIM key group consumer min-idle-time id [id ...] [IDLE ms] [TIME unix-time-ms]
///     [RETRYCOUNT count] [FORCE] [JUSTID] [LASTID lastid]
/// ```
pub(super) fn xclaim(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let argv = args.argv();
    let key = argv[1].clone();
    let name = argv[2].clone();
    let consumer = argv[3].clone();
    let has_group = match stream_read(ctx, &key)? {
        Some(s) => s.groups.contains_key(&name),
        None => false,
    };
    if !has_group {
        return Err(no_group(&key, &name));
    }
    let min_idle = parse_i64(&argv[4])
        .map_err(|_| CommandError::err("Invalid min-idle-time argument for XCLAIM"))?
        .max(0) as u64;
    // Each ID with its argument as given (what replicas get back).
    let mut ids = Vec::new();
    let mut j = 5;
    while j < argv.len() {
        match parse_id(&argv[j], 0, true, false) {
            Ok((id, _)) => ids.push((id, argv[j].clone())),
            Err(_) => break,
        }
        j += 1;
    }
    let now = now(ctx);
    let (mut force, mut justid) = (false, false);
    let mut retry: Option<u64> = None;
    let mut delivery: Option<i64> = None;
    let mut last_id = StreamId::MIN;
    while j < argv.len() {
        let more = argv.len() - 1 - j;
        let opt = &argv[j][..];
        if opt.eq_ignore_ascii_case(b"force") {
            force = true;
        } else if opt.eq_ignore_ascii_case(b"justid") {
            justid = true;
        } else if opt.eq_ignore_ascii_case(b"idle") && more > 0 {
            j += 1;
            let v = parse_i64(&argv[j])
                .map_err(|_| CommandError::err("Invalid IDLE option argument for XCLAIM"))?;
            delivery = Some((now as i64).saturating_sub(v));
        } else if opt.eq_ignore_ascii_case(b"time") && more > 0 {
            j += 1;
            let v = parse_i64(&argv[j])
                .map_err(|_| CommandError::err("Invalid TIME option argument for XCLAIM"))?;
            delivery = Some(v);
        } else if opt.eq_ignore_ascii_case(b"retrycount") && more > 0 {
            j += 1;
            let v = parse_i64(&argv[j])
                .map_err(|_| CommandError::err("Invalid RETRYCOUNT option argument for XCLAIM"))?;
            retry = Some(v as u64);
        } else if opt.eq_ignore_ascii_case(b"lastid") && more > 0 {
            j += 1;
            last_id = parse_id(&argv[j], 0, true, false)?.0;
        } else {
            return Err(CommandError::err(format!(
                "Unrecognized XCLAIM option '{}'",
                lossy(opt, usize::MAX)
            )));
        }
        j += 1;
    }
    let delivery = match delivery {
        Some(t) if t >= 0 && (t as u64) <= now => t as u64,
        _ => now,
    };
    let mut claimed = Vec::new();
    let mut consumer_ready = false;
    let mut changed = false;
    // What replicas get instead of the command, as Redis sends it: an XCLAIM per entry
    // claimed or dropped (its entry deleted), else XGROUP SETID if LASTID moved the group.
    let mut propagate = Vec::new();
    let mut propagate_last_id = false;
    for (id, id_arg) in ids {
        let Some(s) = stream_at(ctx, &key)? else {
            break;
        };
        let exists = s.get(id).is_some();
        let Some(g) = s.groups.get_mut(&name) else {
            break;
        };
        if last_id > g.last_id {
            g.last_id = last_id;
            changed = true;
            propagate_last_id = true;
        }
        if !exists {
            if let Some(p) = g.pel.get(&id) {
                propagate.push(xclaim_for_replicas(&key, &name, &id_arg, p, g.last_id));
                propagate_last_id = false;
            }
            if g.ack(id) {
                changed = true;
            }
            continue;
        }
        let pending = g.pel.get(&id).cloned();
        if pending.is_none() && !force {
            continue;
        }
        if let Some(p) = &pending {
            if min_idle > 0 && now.saturating_sub(p.delivery_time) < min_idle {
                continue;
            }
        }
        if !consumer_ready {
            touch_consumer(ctx, &key, &name, &consumer)?;
            consumer_ready = true;
        }
        let Some(s) = stream_at(ctx, &key)? else {
            break;
        };
        let fields = s.get(id).map(<[Bytes]>::to_vec).unwrap_or_default();
        let Some(g) = s.groups.get_mut(&name) else {
            break;
        };
        let count = match (retry, &pending) {
            (Some(r), _) => r,
            (None, Some(p)) if !justid => p.delivery_count + 1,
            (None, Some(p)) => p.delivery_count,
            // A forced claim starts a new pending entry at one delivery (Redis's
            // streamCreateNACK), then counts this one unless JUSTID.
            (None, None) if !justid => 2,
            (None, None) => 1,
        };
        g.assign(id, &consumer, delivery, count, now);
        changed = true;
        if let Some(p) = g.pel.get(&id) {
            propagate.push(xclaim_for_replicas(&key, &name, &id_arg, p, g.last_id));
            propagate_last_id = false;
        }
        claimed.push(if justid {
            id_frame(id)
        } else {
            entry_frame(id, &fields)
        });
    }
    if let Some(g) = stream_at(ctx, &key)?.and_then(|s| s.groups.get_mut(&name)) {
        if last_id > g.last_id {
            g.last_id = last_id;
            changed = true;
            propagate_last_id = true;
        }
        if propagate_last_id {
            propagate.push(setid_for_replicas(&key, &name, g));
        }
    }
    if changed {
        ctx.modified(&key);
    }
    propagate_instead(ctx, propagate);
    Ok(Frame::Array(claimed))
}

/// ```text
/// XAUTOCLAIM key group consumer min-idle-time start [COUNT count] [JUSTID]
/// ```
pub(super) fn xautoclaim(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let argv = args.argv();
    let key = argv[1].clone();
    let name = argv[2].clone();
    let consumer = argv[3].clone();
    let min_idle = parse_i64(&argv[4])
        .map_err(|_| CommandError::err("Invalid min-idle-time argument for XAUTOCLAIM"))?
        .max(0) as u64;
    let (mut start, start_ex) = parse_interval(&argv[5], 0)?;
    if start_ex {
        start = start
            .next()
            .ok_or_else(|| CommandError::err("invalid start ID for the interval"))?;
    }
    let mut count: u64 = 100;
    let mut justid = false;
    let mut j = 6;
    while j < argv.len() {
        let more = argv.len() - 1 - j;
        let opt = &argv[j][..];
        if opt.eq_ignore_ascii_case(b"count") && more > 0 {
            let max = i64::MAX / 16;
            count = match parse_i64(&argv[j + 1]) {
                Ok(n) if (1..=max).contains(&n) => n as u64,
                _ => return Err(CommandError::err("COUNT must be > 0")),
            };
            j += 1;
        } else if opt.eq_ignore_ascii_case(b"justid") {
            justid = true;
        } else {
            return Err(CommandError::Syntax);
        }
        j += 1;
    }
    let has_group = match stream_read(ctx, &key)? {
        Some(s) => s.groups.contains_key(&name),
        None => false,
    };
    if !has_group {
        return Err(no_group(&key, &name));
    }
    let now = now(ctx);
    let mut attempts = count.saturating_mul(10);
    let mut claimed = Vec::new();
    let mut deleted = Vec::new();
    let mut next = start;
    let mut consumer_ready = false;
    let mut propagate = Vec::new();
    loop {
        if attempts == 0 || count == 0 {
            break;
        }
        let Some(s) = stream_at(ctx, &key)? else {
            break;
        };
        let Some(g) = s.groups.get(&name) else { break };
        let Some((id, p)) = g.pel.range(next..).next().map(|(i, p)| (*i, p.clone())) else {
            break;
        };
        attempts -= 1;
        next = match id.next() {
            Some(n) => n,
            None => StreamId::MAX,
        };
        let exists = s.get(id).is_some();
        if !exists {
            if let Some(g) = s.groups.get_mut(&name) {
                propagate.push(xclaim_for_replicas(
                    &key,
                    &name,
                    &id.to_bytes(),
                    &p,
                    g.last_id,
                ));
                g.ack(id);
            }
            deleted.push(id_frame(id));
            count -= 1;
            continue;
        }
        if min_idle > 0 && now.saturating_sub(p.delivery_time) < min_idle {
            continue;
        }
        if !consumer_ready {
            touch_consumer(ctx, &key, &name, &consumer)?;
            consumer_ready = true;
        }
        let Some(s) = stream_at(ctx, &key)? else {
            break;
        };
        let fields = s.get(id).map(<[Bytes]>::to_vec).unwrap_or_default();
        let Some(g) = s.groups.get_mut(&name) else {
            break;
        };
        let deliveries = if justid {
            p.delivery_count
        } else {
            p.delivery_count + 1
        };
        g.assign(id, &consumer, now, deliveries, now);
        if let Some(p) = g.pel.get(&id) {
            propagate.push(xclaim_for_replicas(
                &key,
                &name,
                &id.to_bytes(),
                p,
                g.last_id,
            ));
        }
        claimed.push(if justid {
            id_frame(id)
        } else {
            entry_frame(id, &fields)
        });
        count -= 1;
        if id == StreamId::MAX {
            break;
        }
    }
    // The cursor: the next pending ID the scan would look at, 0-0 when it went through.
    let cursor = stream_at(ctx, &key)?
        .and_then(|s| s.groups.get(&name))
        .and_then(|g| g.pel.range(next..).next().map(|(id, _)| *id))
        .unwrap_or(StreamId::MIN);
    if !claimed.is_empty() || !deleted.is_empty() {
        ctx.modified(&key);
    }
    propagate_instead(ctx, propagate);
    Ok(Frame::Array(vec![
        id_frame(cursor),
        Frame::Array(claimed),
        Frame::Array(deleted),
    ]))
}

// ---------------------------------------------------------------------------------------
// XINFO

/// `XINFO` alone.
pub(super) fn xinfo_container(_ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    Err(CommandError::WrongArity("xinfo".into()))
}

/// The stream an XINFO subcommand reads: `ERR no such key` when missing.
fn xinfo_stream_at<'c>(ctx: &'c mut Ctx<'_>, key: &Bytes) -> Result<&'c mut Stream, CommandError> {
    stream_at(ctx, key)?.ok_or(CommandError::NoSuchKey)
}

/// ```text
/// XINFO CONSUMERS key group
/// ```
pub(super) fn xinfo_consumers(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.bytes()?;
    let name = args.bytes()?;
    let now = now(ctx);
    let active_time = ctx.node.config.profile().encodings.stream_active_time;
    let s = xinfo_stream_at(ctx, key)?;
    let Some(g) = s.groups.get(name) else {
        return Err(no_group_for_key(name, key));
    };
    Ok(Frame::Array(
        g.consumers
            .iter()
            .map(|(n, c)| {
                let mut fields = vec![
                    (bulk_str("name"), Frame::Bulk(n.clone())),
                    (bulk_str("pending"), int(c.pel.len())),
                    (bulk_str("idle"), int(now.saturating_sub(c.seen_time))),
                ];
                if active_time {
                    // Redis 7.2's `inactive`: since the consumer last got an entry, -1 if never.
                    let inactive = if c.active_time < 0 {
                        -1
                    } else {
                        i64::try_from(now)
                            .unwrap_or(i64::MAX)
                            .saturating_sub(c.active_time)
                    };
                    fields.push((bulk_str("inactive"), Frame::Integer(inactive)));
                }
                Frame::Map(fields)
            })
            .collect(),
    ))
}

/// ```text
/// XINFO GROUPS key
/// ```
pub(super) fn xinfo_groups(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.bytes()?;
    let s = xinfo_stream_at(ctx, key)?;
    Ok(Frame::Array(
        s.groups
            .iter()
            .map(|(n, g)| {
                Frame::Map(vec![
                    (bulk_str("name"), Frame::Bulk(n.clone())),
                    (bulk_str("consumers"), int(g.consumers.len())),
                    (bulk_str("pending"), int(g.pel.len())),
                    (bulk_str("last-delivered-id"), id_frame(g.last_id)),
                    (
                        bulk_str("entries-read"),
                        g.entries_read.map_or(Frame::Null, int),
                    ),
                    (bulk_str("lag"), s.group_lag(g).map_or(Frame::Null, int)),
                ])
            })
            .collect(),
    ))
}

/// ```text
/// XINFO STREAM key [FULL [COUNT count]]
/// ```
pub(super) fn xinfo_stream(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.bytes()?;
    let opts = args.rest();
    let mut full = false;
    let mut count = 10usize;
    if !opts.is_empty() {
        if !(opts.len() == 1 || opts.len() == 3) || !opts[0].eq_ignore_ascii_case(b"full") {
            return Err(CommandError::subcommand_syntax("XINFO", args.argv()));
        }
        full = true;
        if opts.len() == 3 {
            if !opts[1].eq_ignore_ascii_case(b"count") {
                return Err(CommandError::subcommand_syntax("XINFO", args.argv()));
            }
            let n = parse_i64(&opts[2])?;
            count = if n < 0 { 10 } else { n as usize };
        }
    }
    let limit = if count == 0 { usize::MAX } else { count };
    let active_time = ctx.node.config.profile().encodings.stream_active_time;
    let s = xinfo_stream_at(ctx, key)?;
    let keys = s.node_count();
    let mut fields = vec![
        (bulk_str("length"), int(s.len())),
        (bulk_str("radix-tree-keys"), int(keys)),
        (bulk_str("radix-tree-nodes"), int(s.rax_nodes())),
        (bulk_str("last-generated-id"), id_frame(s.last_id)),
        (bulk_str("max-deleted-entry-id"), id_frame(s.max_deleted_id)),
        (bulk_str("entries-added"), int(s.entries_added)),
        (bulk_str("recorded-first-entry-id"), id_frame(s.first_id)),
    ];
    if !full {
        fields.push((bulk_str("groups"), int(s.groups.len())));
        fields.push((
            bulk_str("first-entry"),
            s.first().map_or(Frame::Null, |(id, f)| entry_frame(id, f)),
        ));
        fields.push((
            bulk_str("last-entry"),
            s.last().map_or(Frame::Null, |(id, f)| entry_frame(id, f)),
        ));
        return Ok(Frame::Map(fields));
    }
    fields.push((
        bulk_str("entries"),
        Frame::Array(
            s.range(StreamId::MIN, StreamId::MAX, false)
                .take(limit)
                .map(|(id, f)| entry_frame(id, f))
                .collect(),
        ),
    ));
    let groups = s
        .groups
        .iter()
        .map(|(n, g)| {
            let pending = g
                .pel
                .iter()
                .take(limit)
                .map(|(id, p)| {
                    Frame::Array(vec![
                        id_frame(*id),
                        Frame::Bulk(p.consumer.clone()),
                        int(p.delivery_time),
                        int(p.delivery_count),
                    ])
                })
                .collect();
            let consumers = g
                .consumers
                .iter()
                .map(|(cn, c)| {
                    let pending = c
                        .pel
                        .iter()
                        .take(limit)
                        .filter_map(|id| g.pel.get(id).map(|p| (id, p)))
                        .map(|(id, p)| {
                            Frame::Array(vec![
                                id_frame(*id),
                                int(p.delivery_time),
                                int(p.delivery_count),
                            ])
                        })
                        .collect();
                    let mut fields = vec![
                        (bulk_str("name"), Frame::Bulk(cn.clone())),
                        (bulk_str("seen-time"), int(c.seen_time)),
                    ];
                    if active_time {
                        fields.push((bulk_str("active-time"), Frame::Integer(c.active_time)));
                    }
                    fields.push((bulk_str("pel-count"), int(c.pel.len())));
                    fields.push((bulk_str("pending"), Frame::Array(pending)));
                    Frame::Map(fields)
                })
                .collect();
            Frame::Map(vec![
                (bulk_str("name"), Frame::Bulk(n.clone())),
                (bulk_str("last-delivered-id"), id_frame(g.last_id)),
                (
                    bulk_str("entries-read"),
                    g.entries_read.map_or(Frame::Null, int),
                ),
                (bulk_str("lag"), s.group_lag(g).map_or(Frame::Null, int)),
                (bulk_str("pel-count"), int(g.pel.len())),
                (bulk_str("pending"), Frame::Array(pending)),
                (bulk_str("consumers"), Frame::Array(consumers)),
            ])
        })
        .collect();
    fields.push((bulk_str("groups"), Frame::Array(groups)));
    Ok(Frame::Map(fields))
}

/// ```text
/// XINFO HELP
/// ```
pub(super) fn xinfo_help(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    Ok(help_reply(ctx, "XINFO"))
}
