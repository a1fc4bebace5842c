//! Streams: XADD, XRANGE, XREVRANGE, XLEN, XDEL, XTRIM, XREAD, XREADGROUP (both with BLOCK),
//! XGROUP, XACK, XPENDING, XCLAIM, XAUTOCLAIM, XINFO and XSETID, ported from Redis 7.0's
//! `t_stream.c`: the same argument checks in the same order, error texts, replies (RESP2 and
//! RESP3) and keyspace events. The data type is [`crate::db::stream`].
//!
//! Replication: XADD and XTRIM go out with the ID generated and the trimming made exact, as
//! Redis rewrites them; the consumer-group commands go out as sent, so a replica applies the
//! same state change (delivery times are its own clock's).

mod groups;

use super::client::help_reply;
use super::{bulk_str, Args, CmdResult, Command, CommandError, Ctx};
use crate::blocking::{BlockKind, BlockRequest};
use crate::db::stream::{Group, NodeLimits, Stream, StreamId, Trim};
use crate::db::{Entry, Value};
use crate::notify;
use bytes::Bytes;
use groups::{
    xack, xautoclaim, xclaim, xgroup_container, xgroup_create, xgroup_createconsumer,
    xgroup_delconsumer, xgroup_destroy, xgroup_help, xgroup_setid, xinfo_consumers,
    xinfo_container, xinfo_groups, xinfo_help, xinfo_stream, xpending,
};
use locksmith_resp::{Frame, Version};
use std::time::Duration;

/// The streams family's table.
pub(crate) static COMMANDS: &[Command] = &[
    Command::new("xadd", xadd),
    Command::new("xrange", xrange),
    Command::new("xrevrange", xrevrange),
    Command::new("xlen", xlen),
    Command::new("xdel", xdel),
    Command::new("xtrim", xtrim),
    Command::new("xread", xread),
    Command::new("xreadgroup", xreadgroup),
    Command::new("xgroup", xgroup_container).subs(XGROUP_SUBCOMMANDS),
    Command::new("xack", xack),
    Command::new("xpending", xpending),
    Command::new("xclaim", xclaim),
    Command::new("xautoclaim", xautoclaim),
    Command::new("xinfo", xinfo_container).subs(XINFO_SUBCOMMANDS),
    Command::new("xsetid", xsetid),
];

static XGROUP_SUBCOMMANDS: &[Command] = &[
    Command::new("create", xgroup_create),
    Command::new("setid", xgroup_setid),
    Command::new("destroy", xgroup_destroy),
    Command::new("createconsumer", xgroup_createconsumer),
    Command::new("delconsumer", xgroup_delconsumer),
    Command::new("help", xgroup_help),
];

static XINFO_SUBCOMMANDS: &[Command] = &[
    Command::new("consumers", xinfo_consumers),
    Command::new("groups", xinfo_groups),
    Command::new("stream", xinfo_stream),
    Command::new("help", xinfo_help),
];

const INVALID_ID: &str = "Invalid stream ID specified as stream command argument";

// ---------------------------------------------------------------------------------------
// IDs, lookups and replies

/// `streamGenericParseIDOrReply`: `<ms>[-<seq>]`, `-`, `+` (not when `strict`), and with
/// `seq_star` the `<ms>-*` form; returns the ID and whether the sequence was given.
fn parse_id(
    arg: &[u8],
    missing_seq: u64,
    strict: bool,
    seq_star: bool,
) -> Result<(StreamId, bool), CommandError> {
    let invalid = || CommandError::err(INVALID_ID);
    if arg.len() > 127 {
        return Err(invalid());
    }
    match arg {
        b"-" | b"+" if strict => return Err(invalid()),
        b"-" => return Ok((StreamId::MIN, true)),
        b"+" => return Ok((StreamId::MAX, true)),
        _ => {}
    }
    let (ms, seq) = match arg.iter().position(|&b| b == b'-') {
        Some(dash) => (&arg[..dash], Some(&arg[dash + 1..])),
        None => (arg, None),
    };
    let ms = parse_u64(ms).ok_or_else(invalid)?;
    match seq {
        None => Ok((
            StreamId {
                ms,
                seq: missing_seq,
            },
            true,
        )),
        Some(b"*") if seq_star => Ok((StreamId { ms, seq: 0 }, false)),
        Some(seq) => {
            let seq = parse_u64(seq).ok_or_else(invalid)?;
            Ok((StreamId { ms, seq }, true))
        }
    }
}

/// Redis's `string2ull`: a decimal `unsigned long long` (a strict integer, or what `strtoull`
/// reads whole: leading spaces and `+` allowed).
fn parse_u64(text: &[u8]) -> Option<u64> {
    if let Some(v) = locksmith_resp::parse_integer(text) {
        return u64::try_from(v).ok();
    }
    let s = std::str::from_utf8(text).ok()?.trim_start();
    let s = s.strip_prefix('+').unwrap_or(s);
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// `streamParseIntervalIDOrReply`: an inclusive bound, or exclusive with `(`.
fn parse_interval(arg: &[u8], missing_seq: u64) -> Result<(StreamId, bool), CommandError> {
    if arg.len() > 1 && arg.first() == Some(&b'(') {
        let (id, _) = parse_id(&arg[1..], missing_seq, true, false)?;
        Ok((id, true))
    } else {
        let (id, _) = parse_id(arg, missing_seq, false, false)?;
        Ok((id, false))
    }
}

/// The stream at `key`: `Ok(None)` if absent, `WRONGTYPE` for another type.
fn stream_at<'c>(
    ctx: &'c mut Ctx<'_>,
    key: &Bytes,
) -> Result<Option<&'c mut Stream>, CommandError> {
    stream_of(ctx.lookup_mut(key))
}

/// [`stream_at`] with a read lookup ([`Ctx::find_read`]): the stream a write command reads
/// first where Redis's uses `lookupKeyRead` (XREADGROUP, XACK, XCLAIM, XAUTOCLAIM).
fn stream_read<'c>(
    ctx: &'c mut Ctx<'_>,
    key: &Bytes,
) -> Result<Option<&'c mut Stream>, CommandError> {
    stream_of(ctx.find_read(key))
}

/// The stream `entry` holds: `Ok(None)` without an entry, `WRONGTYPE` for another type.
fn stream_of(entry: Option<&mut Entry>) -> Result<Option<&mut Stream>, CommandError> {
    match entry.map(|e| &mut e.value) {
        None => Ok(None),
        Some(Value::Stream(s)) => Ok(Some(&mut **s)),
        Some(_) => Err(CommandError::WrongType),
    }
}

/// `[id, [field, value, ...]]`.
fn entry_frame(id: StreamId, fields: &[Bytes]) -> Frame {
    Frame::Array(vec![
        Frame::Bulk(id.to_bytes()),
        Frame::Array(fields.iter().cloned().map(Frame::Bulk).collect()),
    ])
}

fn id_frame(id: StreamId) -> Frame {
    Frame::Bulk(id.to_bytes())
}

fn int(v: impl TryInto<i64>) -> Frame {
    Frame::Integer(v.try_into().unwrap_or(i64::MAX))
}

/// The `NOGROUP` error of XREADGROUP.
fn no_group_readgroup(key: &[u8], group: &[u8]) -> CommandError {
    CommandError::Raw(format!(
        "NOGROUP No such key '{}' or consumer group '{}' in XREADGROUP with GROUP option",
        super::lossy(key, usize::MAX),
        super::lossy(group, usize::MAX)
    ))
}

/// The `NOGROUP` error of XPENDING, XCLAIM and XAUTOCLAIM.
fn no_group(key: &[u8], group: &[u8]) -> CommandError {
    CommandError::Raw(format!(
        "NOGROUP No such key '{}' or consumer group '{}'",
        super::lossy(key, usize::MAX),
        super::lossy(group, usize::MAX)
    ))
}

/// The `NOGROUP` error of XGROUP and XINFO CONSUMERS.
fn no_group_for_key(group: &[u8], key: &[u8]) -> CommandError {
    CommandError::Raw(format!(
        "NOGROUP No such consumer group '{}' for key name '{}'",
        super::lossy(group, usize::MAX),
        super::lossy(key, usize::MAX)
    ))
}

/// Raises a stream keyspace event for `key`.
fn event(ctx: &mut Ctx<'_>, name: &'static str, key: &Bytes) {
    ctx.notify(notify::STREAM, name, key);
}

/// Unix ms now (delivery and seen times; `XADD *`).
fn now(ctx: &Ctx<'_>) -> u64 {
    ctx.now
}

// ---------------------------------------------------------------------------------------
// XADD, XTRIM

/// The trimming options of XADD and XTRIM.
#[derive(Debug, Default)]
struct TrimArgs {
    trim: Option<Trim>,
    approx: bool,
    limit: usize,
    /// Index of the MAXLEN/MINID value argument (to rewrite it for replication).
    arg_idx: usize,
    no_mkstream: bool,
    /// The ID given to XADD: (id, sequence given).
    id: Option<(StreamId, bool)>,
}

/// `streamParseAddOrTrimArgsOrReply`; returns the arguments and the index of XADD's ID.
fn parse_add_or_trim(
    ctx: &Ctx<'_>,
    argv: &[Bytes],
    xadd: bool,
) -> Result<(TrimArgs, usize), CommandError> {
    let mut a = TrimArgs::default();
    let mut limit_given = None;
    let mut i = 2;
    while i < argv.len() {
        let more = argv.len() - 1 - i;
        let opt = &argv[i][..];
        if xadd && opt == b"*" {
            break;
        } else if opt.eq_ignore_ascii_case(b"maxlen") && more > 0 {
            if a.trim.is_some() {
                return Err(CommandError::err(
                    "syntax error, MAXLEN and MINID options at the same time are not compatible",
                ));
            }
            a.approx = false;
            let next = &argv[i + 1][..];
            if more >= 2 && next == b"~" {
                a.approx = true;
                i += 1;
            } else if more >= 2 && next == b"=" {
                i += 1;
            }
            let n = super::parse_i64(&argv[i + 1])?;
            if n < 0 {
                return Err(CommandError::err("The MAXLEN argument must be >= 0."));
            }
            i += 1;
            a.trim = Some(Trim::MaxLen(usize::try_from(n).unwrap_or(usize::MAX)));
            a.arg_idx = i;
        } else if opt.eq_ignore_ascii_case(b"minid") && more > 0 {
            if a.trim.is_some() {
                return Err(CommandError::err(
                    "syntax error, MAXLEN and MINID options at the same time are not compatible",
                ));
            }
            a.approx = false;
            let next = &argv[i + 1][..];
            if more >= 2 && next == b"~" {
                a.approx = true;
                i += 1;
            } else if more >= 2 && next == b"=" {
                i += 1;
            }
            let (id, _) = parse_id(&argv[i + 1], 0, true, false)?;
            i += 1;
            a.trim = Some(Trim::MinId(id));
            a.arg_idx = i;
        } else if opt.eq_ignore_ascii_case(b"limit") && more > 0 {
            let n = super::parse_i64(&argv[i + 1])?;
            if n < 0 {
                return Err(CommandError::err("The LIMIT argument must be >= 0."));
            }
            limit_given = Some(usize::try_from(n).unwrap_or(usize::MAX));
            i += 1;
        } else if xadd && opt.eq_ignore_ascii_case(b"nomkstream") {
            a.no_mkstream = true;
        } else if xadd {
            a.id = Some(parse_id(opt, 0, true, true)?);
            break;
        } else {
            return Err(CommandError::Syntax);
        }
        i += 1;
    }
    if limit_given.is_some_and(|l| l > 0) && a.trim.is_none() {
        return Err(CommandError::err(
            "syntax error, LIMIT cannot be used without specifying a trimming strategy",
        ));
    }
    if !xadd && a.trim.is_none() {
        return Err(CommandError::err(
            "syntax error, XTRIM must be called with a trimming strategy",
        ));
    }
    if ctx.client.id() == crate::replication::MASTER_CLIENT_ID {
        // What the master sends was made exact before it was sent.
        a.limit = 0;
    } else if let Some(limit) = limit_given {
        if !a.approx {
            return Err(CommandError::err(
                "syntax error, LIMIT cannot be used without the special ~ option",
            ));
        }
        a.limit = limit;
    } else if a.approx {
        // At most 100 nodes' worth of entries, as Redis bounds the work of `~`.
        let per_node = node_limits(ctx).entries;
        a.limit = match 100usize.saturating_mul(per_node) {
            0 => 10_000,
            n => n.min(1_000_000),
        };
    }
    Ok((a, i))
}

/// `stream-node-max-entries` and `stream-node-max-bytes` as set now.
fn node_limits(ctx: &Ctx<'_>) -> NodeLimits {
    NodeLimits {
        entries: ctx.node.config.stream_node_max_entries(),
        bytes: ctx.node.config.stream_node_max_bytes(),
    }
}

/// The argument that makes an approximate trim exact for replicas: the length left
/// (MAXLEN) or the first ID left (MINID).
fn exact_trim_arg(s: &Stream, trim: Trim) -> Bytes {
    match trim {
        Trim::MaxLen(_) => Bytes::from(s.len().to_string()),
        Trim::MinId(_) => s.first().map_or(StreamId::MAX, |(id, _)| id).to_bytes(),
    }
}

/// ```text
/// XADD key [NOMKSTREAM] [<MAXLEN | MINID> [= | ~] threshold [LIMIT count]] <* | id>
///     field value [field value ...]
/// ```
fn xadd(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let argv = args.argv();
    let (trim, idpos) = parse_add_or_trim(ctx, argv, true)?;
    let field_pos = idpos + 1;
    let nfields = argv.len().saturating_sub(field_pos);
    if nfields < 2 || nfields % 2 == 1 {
        return Err(CommandError::WrongArity("xadd".into()));
    }
    if matches!(trim.id, Some((StreamId { ms: 0, seq: 0 }, true))) {
        return Err(CommandError::err(
            "The ID specified in XADD must be greater than 0-0",
        ));
    }
    let key = argv[1].clone();
    let now = now(ctx);
    let limits = node_limits(ctx);
    let exists = match ctx.lookup_mut(&key).map(|e| &e.value) {
        None => false,
        Some(Value::Stream(_)) => true,
        Some(_) => return Err(CommandError::WrongType),
    };
    if !exists {
        if trim.no_mkstream {
            return Ok(Frame::Null);
        }
        ctx.set(&key, Value::Stream(Box::default()), None);
    }
    let fields: Box<[Bytes]> = argv[field_pos..].to_vec().into_boxed_slice();
    let Some(s) = stream_at(ctx, &key)? else {
        return Err(CommandError::err("internal error: stream vanished"));
    };
    if s.last_id == StreamId::MAX {
        return Err(CommandError::err(
            "The stream has exhausted the last possible ID, unable to add more items",
        ));
    }
    let total: usize = fields.iter().map(|f| f.len()).sum();
    if total > u32::MAX as usize {
        return Err(CommandError::err("Elements are too large to be stored"));
    }
    let Some(id) = s.next_id(trim.id, now) else {
        return Err(CommandError::err(
            "The ID specified in XADD is equal or smaller than the target stream top item",
        ));
    };
    s.append(id, fields, limits);
    let (trimmed, exact_arg) = match trim.trim {
        Some(t) => {
            let n = s.trim(t, trim.approx, trim.limit);
            (n, trim.approx.then(|| exact_trim_arg(s, t)))
        }
        None => (0, None),
    };
    ctx.modified(&key);
    event(ctx, "xadd", &key);
    if trimmed > 0 {
        event(ctx, "xtrim", &key);
    }
    if ctx.propagating() {
        let mut out = argv.to_vec();
        if let Some(exact) = exact_arg {
            out[trim.arg_idx - 1] = Bytes::from_static(b"=");
            out[trim.arg_idx] = exact;
        }
        if !matches!(trim.id, Some((_, true))) {
            out[idpos] = id.to_bytes();
        }
        ctx.propagate(out);
    }
    Ok(Frame::Bulk(id.to_bytes()))
}

/// ```text
/// XTRIM key <MAXLEN | MINID> [= | ~] threshold [LIMIT count]
/// ```
fn xtrim(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let argv = args.argv();
    let (trim, _) = parse_add_or_trim(ctx, argv, false)?;
    let key = argv[1].clone();
    let Some(s) = stream_at(ctx, &key)? else {
        return Ok(Frame::Integer(0));
    };
    let Some(t) = trim.trim else {
        return Ok(Frame::Integer(0));
    };
    let deleted = s.trim(t, trim.approx, trim.limit);
    let exact = trim.approx.then(|| exact_trim_arg(s, t));
    if deleted > 0 {
        ctx.modified(&key);
        event(ctx, "xtrim", &key);
        if ctx.propagating() {
            let mut out = argv.to_vec();
            if let Some(exact) = exact {
                out[trim.arg_idx - 1] = Bytes::from_static(b"=");
                out[trim.arg_idx] = exact;
            }
            ctx.propagate(out);
        }
    }
    Ok(int(deleted))
}

// ---------------------------------------------------------------------------------------
// XRANGE, XREVRANGE, XLEN, XDEL

fn xrange(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    xrange_generic(ctx, args, false)
}

fn xrevrange(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    xrange_generic(ctx, args, true)
}

/// ```text
/// XRANGE key start end [COUNT count]      XREVRANGE key end start [COUNT count]
/// ```
fn xrange_generic(ctx: &mut Ctx<'_>, args: &mut Args<'_>, rev: bool) -> CmdResult {
    let key = args.bytes()?;
    let (a, b) = (args.bytes()?, args.bytes()?);
    let (start_arg, end_arg) = if rev { (b, a) } else { (a, b) };
    let (mut start, start_ex) = parse_interval(start_arg, 0)?;
    if start_ex {
        start = start
            .next()
            .ok_or_else(|| CommandError::err("invalid start ID for the interval"))?;
    }
    let (mut end, end_ex) = parse_interval(end_arg, u64::MAX)?;
    if end_ex {
        end = end
            .prev()
            .ok_or_else(|| CommandError::err("invalid end ID for the interval"))?;
    }
    let mut count: Option<usize> = None;
    while let Some(opt) = args.next() {
        if opt.eq_ignore_ascii_case(b"count") && args.remaining() >= 1 {
            let n = args.i64()?;
            count = Some(usize::try_from(n.max(0)).unwrap_or(usize::MAX));
        } else {
            return Err(CommandError::Syntax);
        }
    }
    let Some(s) = stream_at(ctx, key)? else {
        return Ok(Frame::Array(Vec::new()));
    };
    if count == Some(0) {
        return Ok(Frame::NullArray);
    }
    let limit = count.unwrap_or(usize::MAX);
    Ok(Frame::Array(
        s.range(start, end, rev)
            .take(limit)
            .map(|(id, f)| entry_frame(id, f))
            .collect(),
    ))
}

/// ```text
/// XLEN key
/// ```
fn xlen(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.bytes()?;
    Ok(int(stream_at(ctx, key)?.map_or(0, |s| s.len())))
}

/// ```text
/// XDEL key id [id ...]
/// ```
fn xdel(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.bytes()?;
    if stream_at(ctx, key)?.is_none() {
        return Ok(Frame::Integer(0));
    }
    let ids = args
        .rest()
        .iter()
        .map(|a| parse_id(a, 0, true, false).map(|(id, _)| id))
        .collect::<Result<Vec<_>, _>>()?;
    let Some(s) = stream_at(ctx, key)? else {
        return Ok(Frame::Integer(0));
    };
    let deleted = ids.into_iter().filter(|id| s.delete(*id)).count();
    if deleted > 0 {
        ctx.modified(key);
        event(ctx, "xdel", key);
    }
    Ok(int(deleted))
}

// ---------------------------------------------------------------------------------------
// XREAD, XREADGROUP

fn xread(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    xread_generic(ctx, args, false)
}

fn xreadgroup(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    xread_generic(ctx, args, true)
}

/// Reads for a group: entries after the group's last ID (`>`), recorded as pending for
/// `consumer` unless `noack`, advancing the group; Redis's `streamReplyWithRange` with a
/// group. Also what replicas get instead of the command (`propagate`), as Redis sends it:
/// an `XCLAIM ... FORCE JUSTID LASTID` per entry made pending, or with `noack` one
/// `XGROUP SETID ... ENTRIESREAD` if the group's last ID moved.
fn read_new_for_group(
    s: &mut Stream,
    (key, group_name, consumer): (&Bytes, &Bytes, &Bytes),
    count: usize,
    noack: bool,
    now: u64,
    propagate: &mut Vec<Vec<Bytes>>,
) -> Vec<Frame> {
    let Some(last) = s.groups.get(group_name).map(|g| g.last_id) else {
        return Vec::new();
    };
    let Some(start) = last.next() else {
        return Vec::new();
    };
    let mut moved = false;
    let picked: Vec<(StreamId, Box<[Bytes]>)> = s
        .range(start, StreamId::MAX, false)
        .take(count)
        .map(|(id, f)| (id, f.to_vec().into_boxed_slice()))
        .collect();
    let mut out = Vec::with_capacity(picked.len());
    for (id, fields) in picked {
        let tombstones = s.range_has_tombstones(id, StreamId::MAX);
        let estimate = s.distance_from_first(id);
        let entries_added = s.entries_added;
        if let Some(g) = s.groups.get_mut(group_name) {
            if id > g.last_id {
                g.entries_read = match g.entries_read {
                    Some(read) if !tombstones => Some(read + 1),
                    _ if entries_added > 0 => estimate,
                    other => other,
                };
                g.last_id = id;
                moved = true;
            }
            if !noack {
                g.assign(id, consumer, now, 1, now);
                if let Some(p) = g.pel.get(&id) {
                    let id = id.to_bytes();
                    propagate.push(xclaim_for_replicas(key, group_name, &id, p, g.last_id));
                }
            }
        }
        out.push(entry_frame(id, &fields));
    }
    if noack && moved {
        if let Some(g) = s.groups.get(group_name) {
            propagate.push(setid_for_replicas(key, group_name, g));
        }
    }
    out
}

/// Redis's `streamPropagateXCLAIM`: the `XCLAIM` that gives a replica pending entry `id` as
/// the master has it (`XCLAIM key group consumer 0 id TIME ms RETRYCOUNT n FORCE JUSTID
/// LASTID last`).
fn xclaim_for_replicas(
    key: &Bytes,
    group: &Bytes,
    id: &Bytes,
    pending: &crate::db::stream::Pending,
    last_id: StreamId,
) -> Vec<Bytes> {
    vec![
        Bytes::from_static(b"XCLAIM"),
        key.clone(),
        group.clone(),
        pending.consumer.clone(),
        Bytes::from_static(b"0"),
        id.clone(),
        Bytes::from_static(b"TIME"),
        Bytes::from(pending.delivery_time.to_string()),
        Bytes::from_static(b"RETRYCOUNT"),
        Bytes::from(pending.delivery_count.to_string()),
        Bytes::from_static(b"FORCE"),
        Bytes::from_static(b"JUSTID"),
        Bytes::from_static(b"LASTID"),
        last_id.to_bytes(),
    ]
}

/// Redis's `streamPropagateGroupID`: `XGROUP SETID key group last ENTRIESREAD n` (-1 when
/// the count is unknown).
fn setid_for_replicas(key: &Bytes, group_name: &Bytes, g: &crate::db::stream::Group) -> Vec<Bytes> {
    let read = g
        .entries_read
        .map_or_else(|| "-1".to_string(), |n| n.to_string());
    vec![
        Bytes::from_static(b"XGROUP"),
        Bytes::from_static(b"SETID"),
        key.clone(),
        group_name.clone(),
        g.last_id.to_bytes(),
        Bytes::from_static(b"ENTRIESREAD"),
        Bytes::from(read),
    ]
}

/// Reads a consumer's own history: its pending entries from `start`, each delivered again
/// (`streamReplyWithRangeFromConsumerPEL`); deleted entries come back with a nil body.
fn read_history(
    s: &mut Stream,
    group_name: &Bytes,
    consumer: &Bytes,
    start: StreamId,
    count: usize,
    now: u64,
) -> Vec<Frame> {
    let ids: Vec<StreamId> = s
        .groups
        .get(group_name)
        .and_then(|g| g.consumers.get(consumer))
        .map(|c| c.pel.range(start..).take(count).copied().collect())
        .unwrap_or_default();
    let mut out = Vec::with_capacity(ids.len());
    for id in ids {
        match s.get(id).map(<[Bytes]>::to_vec) {
            Some(fields) => {
                if let Some(p) = s
                    .groups
                    .get_mut(group_name)
                    .and_then(|g| g.pel.get_mut(&id))
                {
                    p.delivery_time = now;
                    p.delivery_count += 1;
                }
                out.push(entry_frame(id, &fields));
            }
            None => out.push(Frame::Array(vec![id_frame(id), Frame::NullArray])),
        }
    }
    out
}

/// Creates `consumer` in the group if missing (with its `xgroup-createconsumer` event) and
/// marks it seen now; whether it was created.
fn touch_consumer(
    ctx: &mut Ctx<'_>,
    key: &Bytes,
    group: &Bytes,
    consumer: &Bytes,
) -> Result<bool, CommandError> {
    let now = now(ctx);
    let created = {
        let Some(s) = stream_at(ctx, key)? else {
            return Ok(false);
        };
        let Some(g) = s.groups.get_mut(group) else {
            return Ok(false);
        };
        match g.consumers.get_mut(consumer) {
            Some(c) => {
                c.seen_time = now;
                false
            }
            None => {
                g.consumers.insert(
                    consumer.clone(),
                    crate::db::stream::Consumer {
                        seen_time: now,
                        active_time: -1,
                        pel: Default::default(),
                    },
                );
                true
            }
        }
    };
    if created {
        ctx.state.dirty += 1;
        event(ctx, "xgroup-createconsumer", key);
    }
    Ok(created)
}

/// ```text
/// XREAD [COUNT count] [BLOCK milliseconds] STREAMS key [key ...] id [id ...]
/// XREADGROUP GROUP group consumer [COUNT count] [BLOCK milliseconds] [NOACK]
///     STREAMS key [key ...] id [id ...]
/// ```
fn xread_generic(ctx: &mut Ctx<'_>, args: &mut Args<'_>, group_mode: bool) -> CmdResult {
    let argv = args.argv();
    let mut timeout: Option<Option<Duration>> = None;
    let mut count = 0usize;
    let mut streams_arg = 0;
    let mut noack = false;
    let mut group: Option<(Bytes, Bytes)> = None;
    let mut i = 1;
    while i < argv.len() {
        let more = argv.len() - i - 1;
        let o = &argv[i][..];
        if o.eq_ignore_ascii_case(b"block") && more > 0 {
            if ctx.client.origin.in_script
                && !ctx
                    .node
                    .config
                    .profile()
                    .semantics
                    .script_stream_reads_never_block
            {
                return Err(CommandError::err(format!(
                    "{} command is not allowed with BLOCK option from scripts",
                    super::lossy(&argv[0], usize::MAX)
                )));
            }
            i += 1;
            timeout = Some(parse_block_ms(&argv[i], ctx.now)?);
        } else if o.eq_ignore_ascii_case(b"count") && more > 0 {
            i += 1;
            let n = super::parse_i64(&argv[i])?;
            count = usize::try_from(n.max(0)).unwrap_or(usize::MAX);
        } else if o.eq_ignore_ascii_case(b"streams") && more > 0 {
            streams_arg = i + 1;
            if !(argv.len() - streams_arg).is_multiple_of(2) {
                let (command, id) = if group_mode {
                    ("xreadgroup", ">")
                } else {
                    ("xread", "$")
                };
                let text = ctx.node.config.profile().checks.xread_unbalanced;
                return Err(CommandError::err(
                    text.replace("{command}", command).replace("{id}", id),
                ));
            }
            break;
        } else if o.eq_ignore_ascii_case(b"group") && more >= 2 {
            if !group_mode {
                return Err(CommandError::err(
                    "The GROUP option is only supported by XREADGROUP. You called XREAD instead.",
                ));
            }
            group = Some((argv[i + 1].clone(), argv[i + 2].clone()));
            i += 2;
        } else if o.eq_ignore_ascii_case(b"noack") {
            if !group_mode {
                return Err(CommandError::err(
                    "The NOACK option is only supported by XREADGROUP. You called XREAD instead.",
                ));
            }
            noack = true;
        } else {
            return Err(CommandError::Syntax);
        }
        i += 1;
    }
    if streams_arg == 0 {
        return Err(CommandError::Syntax);
    }
    if group_mode && group.is_none() {
        return Err(CommandError::err("Missing GROUP option for XREADGROUP"));
    }
    let n = (argv.len() - streams_arg) / 2;
    let keys = &argv[streams_arg..streams_arg + n];
    let id_args = &argv[streams_arg + n..];
    // The IDs to read after: `None` for XREADGROUP's `>`.
    let mut ids: Vec<Option<StreamId>> = Vec::with_capacity(n);
    let mut rewritten: Option<Vec<Bytes>> = None;
    for (k, (key, id_arg)) in keys.iter().zip(id_args).enumerate() {
        let last = match stream_read(ctx, key)? {
            Some(s) => {
                if let Some((g, _)) = &group {
                    if !s.groups.contains_key(g) {
                        return Err(no_group_readgroup(key, g));
                    }
                }
                Some(s.last_id)
            }
            None => {
                if let Some((g, _)) = &group {
                    return Err(no_group_readgroup(key, g));
                }
                None
            }
        };
        if &id_arg[..] == b"$" {
            if group_mode {
                return Err(CommandError::err(
                    "The $ ID is meaningless in the context of XREADGROUP: you want to read the \
                     history of this consumer by specifying a proper ID, or use the > ID to get \
                     new messages. The $ ID would just return an empty result set.",
                ));
            }
            let id = last.unwrap_or(StreamId::MIN);
            // A blocked XREAD waits for entries after the last ID of now.
            rewritten.get_or_insert_with(|| argv.to_vec())[streams_arg + n + k] = id.to_bytes();
            ids.push(Some(id));
        } else if &id_arg[..] == b"+" && ctx.node.config.profile().semantics.xread_last_entry {
            if group_mode {
                return Err(CommandError::err(
                    "The + ID is meaningless in the context of XREADGROUP: you want to read the \
                     history of this consumer by specifying a proper ID, or use the > ID to get \
                     new messages. The + ID would just return an empty result set.",
                ));
            }
            // The entry at the last ID, if it is still there: read after the ID before it
            // (0-0 for a missing stream, whose first entry a blocked read then gets).
            let id = match last {
                None => StreamId::MIN,
                Some(last) => last
                    .prev()
                    .ok_or_else(|| CommandError::err("the stream last element ID is 0-0"))?,
            };
            rewritten.get_or_insert_with(|| argv.to_vec())[streams_arg + n + k] = id.to_bytes();
            ids.push(Some(id));
        } else if &id_arg[..] == b">" {
            if !group_mode {
                return Err(CommandError::err(
                    "The > ID can be specified only when calling XREADGROUP using the GROUP \
                     <group> <consumer> option.",
                ));
            }
            ids.push(None);
        } else {
            ids.push(Some(parse_id(id_arg, 0, true, false)?.0));
        }
    }
    let limit = if count == 0 { usize::MAX } else { count };
    let now = now(ctx);
    let mut served: Vec<(Bytes, Vec<Frame>)> = Vec::new();
    // Replicas get what a group read changed, never XREADGROUP itself (Redis's
    // `preventCommandPropagation`): a consumer created without a pending entry to carry it
    // (NOACK) by XGROUP CREATECONSUMER, entries made pending by XCLAIM, NOACK's progress by
    // XGROUP SETID; a history read nothing.
    let mut propagate = Vec::new();
    let creates_unserved_consumer = ctx
        .node
        .config
        .profile()
        .semantics
        .xreadgroup_creates_unserved_consumer;
    for (key, id) in keys.iter().zip(&ids) {
        let Some(s) = stream_read(ctx, key)? else {
            continue;
        };
        match (&group, id) {
            (Some((g, consumer)), history) => {
                let has_new = s
                    .last()
                    .is_some_and(|(top, _)| s.groups.get(g).is_some_and(|grp| top > grp.last_id));
                let unserved = history.is_none() && !has_new;
                if unserved && !creates_unserved_consumer {
                    continue;
                }
                let (g, consumer) = (g.clone(), consumer.clone());
                if touch_consumer(ctx, key, &g, &consumer)? && noack {
                    propagate.push(vec![
                        Bytes::from_static(b"XGROUP"),
                        Bytes::from_static(b"CREATECONSUMER"),
                        key.clone(),
                        g.clone(),
                        consumer.clone(),
                    ]);
                }
                if unserved {
                    continue;
                }
                let Some(s) = stream_at(ctx, key)? else {
                    continue;
                };
                let entries = match history {
                    // Entries after the ID given, as for new ones.
                    Some(after) => match after.next() {
                        Some(start) => read_history(s, &g, &consumer, start, limit, now),
                        None => Vec::new(),
                    },
                    None => read_new_for_group(
                        s,
                        (key, &g, &consumer),
                        limit,
                        noack,
                        now,
                        &mut propagate,
                    ),
                };
                ctx.state.dirty += 1;
                served.push((key.clone(), entries));
            }
            (None, Some(after)) => {
                let has_new = s.last().is_some_and(|(top, _)| top > *after);
                if !has_new {
                    continue;
                }
                let Some(start) = after.next() else {
                    continue;
                };
                let entries = s
                    .range(start, StreamId::MAX, false)
                    .take(limit)
                    .map(|(id, f)| entry_frame(id, f))
                    .collect();
                served.push((key.clone(), entries));
            }
            (None, None) => {}
        }
    }
    if group.is_some() {
        propagate_instead(ctx, propagate);
    }
    if !served.is_empty() {
        return Ok(match ctx.client.resp {
            Version::Resp2 => Frame::Array(
                served
                    .into_iter()
                    .map(|(k, e)| Frame::Array(vec![Frame::Bulk(k), Frame::Array(e)]))
                    .collect(),
            ),
            Version::Resp3 => Frame::Map(
                served
                    .into_iter()
                    .map(|(k, e)| (Frame::Bulk(k), Frame::Array(e)))
                    .collect(),
            ),
        });
    }
    let Some(timeout) = timeout else {
        return Ok(Frame::NullArray);
    };
    if ctx.client.origin.in_exec || ctx.client.origin.in_script {
        return Ok(Frame::NullArray);
    }
    ctx.client.block = Some(BlockRequest {
        keys: keys.to_vec(),
        timeout,
        kind: BlockKind::Stream,
        argv: rewritten,
    });
    Ok(Frame::NullArray)
}

/// `BLOCK milliseconds` (`getTimeoutFromObjectOrReply` in milliseconds; 0 = forever).
fn parse_block_ms(arg: &[u8], now: u64) -> Result<Option<Duration>, CommandError> {
    let ms = super::parse_i64(arg)
        .map_err(|_| CommandError::err("timeout is not an integer or out of range"))?;
    if ms < 0 {
        return Err(CommandError::err("timeout is negative"));
    }
    if ms == 0 {
        return Ok(None);
    }
    if ms > i64::MAX - now as i64 {
        return Err(CommandError::err("timeout is out of range"));
    }
    Ok(Some(Duration::from_millis(ms as u64)))
}

// ---------------------------------------------------------------------------------------
// XGROUP

/// ```text
/// XSETID key last-id [ENTRIESADDED entries-added] [MAXDELETEDID max-deleted-id]
/// ```
fn xsetid(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.bytes()?;
    let (id, _) = parse_id(args.bytes()?, 0, true, false)?;
    let mut entries_added: Option<u64> = None;
    let mut max_deleted = StreamId::MIN;
    let mut max_deleted_given = false;
    while let Some(opt) = args.next() {
        if opt.eq_ignore_ascii_case(b"entriesadded") && args.remaining() >= 1 {
            let n = args.i64()?;
            entries_added = Some(
                u64::try_from(n)
                    .map_err(|_| CommandError::err("entries_added must be positive"))?,
            );
        } else if opt.eq_ignore_ascii_case(b"maxdeletedid") && args.remaining() >= 1 {
            let (m, _) = parse_id(args.bytes()?, 0, true, false)?;
            if id < m {
                return Err(CommandError::err(
                    "The ID specified in XSETID is smaller than the provided max_deleted_entry_id",
                ));
            }
            max_deleted = m;
            max_deleted_given = true;
        } else {
            return Err(CommandError::Syntax);
        }
    }
    let checks_max_deleted = ctx
        .node
        .config
        .profile()
        .semantics
        .xsetid_checks_max_deleted;
    let Some(s) = stream_at(ctx, key)? else {
        return Err(CommandError::NoSuchKey);
    };
    if checks_max_deleted && !max_deleted_given && id < s.max_deleted_id {
        return Err(CommandError::err(
            "The ID specified in XSETID is smaller than current max_deleted_entry_id",
        ));
    }
    if let Some((top, _)) = s.last() {
        if id < top {
            return Err(CommandError::err(
                "The ID specified in XSETID is smaller than the target stream top item",
            ));
        }
        if entries_added.is_some_and(|n| (s.len() as u64) > n) {
            return Err(CommandError::err(
                "The entries_added specified in XSETID is smaller than the target stream length",
            ));
        }
    }
    s.last_id = id;
    if let Some(n) = entries_added {
        s.entries_added = n;
    }
    if max_deleted != StreamId::MIN {
        s.max_deleted_id = max_deleted;
    }
    ctx.modified(key);
    event(ctx, "xsetid", key);
    Ok(Frame::ok())
}

/// Replicates `commands` instead of the command as sent (Redis's
/// `preventCommandPropagation` and `alsoPropagate`), several as one MULTI/EXEC, as Redis 7.0
/// wraps a command's propagations (EXEC and scripts wrap their own).
fn propagate_instead(ctx: &mut Ctx<'_>, commands: Vec<Vec<Bytes>>) {
    ctx.prevent_propagation();
    let before = ctx.effects.propagate.len();
    for argv in commands {
        ctx.propagate(argv);
    }
    if !ctx.client.origin.in_exec && !ctx.client.origin.in_script {
        let db = ctx.client.db;
        ctx.effects.wrap_in_transaction(before, db);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_parse_as_redis() {
        let ok = |a: &[u8]| parse_id(a, 0, true, true).ok();
        assert_eq!(ok(b"5"), Some((StreamId { ms: 5, seq: 0 }, true)));
        assert_eq!(ok(b"5-3"), Some((StreamId { ms: 5, seq: 3 }, true)));
        assert_eq!(ok(b"5-*"), Some((StreamId { ms: 5, seq: 0 }, false)));
        assert_eq!(ok(b"-"), None);
        assert_eq!(ok(b"5-x"), None);
        assert_eq!(ok(b"18446744073709551616"), None);
        assert_eq!(
            parse_id(b"+", 0, false, false).ok(),
            Some((StreamId::MAX, true))
        );
        assert_eq!(
            parse_id(b"7", u64::MAX, false, false).map(|(i, _)| i).ok(),
            Some(StreamId {
                ms: 7,
                seq: u64::MAX
            })
        );
    }
}
