//! Set commands: SADD, SREM, membership, SCARD, SPOP, SRANDMEMBER, SMOVE, the algebra
//! (SINTER, SUNION, SDIFF with their STORE forms, SINTERCARD) and SSCAN.
//!
//! Replies holding set contents are RESP3 sets, in the set's own order as the server gives
//! it: an intset's numeric order, a listpack's insertion order, a table's order. Each write
//! keeps the encoding the target's server would (`SetLimits`, `db::set_value`).

use super::{
    parse_i64, random_count, repeated_picks, scan, typed, Args, CmdResult, Command, CommandError,
    Ctx,
};
use crate::db::{SetEncoding, SetLimits, SetValue, Value};
use crate::notify;
use bytes::Bytes;
use locksmith_resp::Frame;
use rand::seq::IteratorRandom;
use rand::Rng;

/// The set family's table.
pub(crate) static COMMANDS: &[Command] = &[
    Command::new("sadd", sadd),
    Command::new("srem", srem),
    Command::new("smembers", smembers),
    Command::new("sismember", sismember),
    Command::new("smismember", smismember),
    Command::new("scard", scard),
    Command::new("spop", spop),
    Command::new("srandmember", srandmember),
    Command::new("smove", smove),
    Command::new("sinter", sinter),
    Command::new("sinterstore", sinterstore),
    Command::new("sunion", sunion),
    Command::new("sunionstore", sunionstore),
    Command::new("sdiff", sdiff),
    Command::new("sdiffstore", sdiffstore),
    Command::new("sintercard", sintercard),
    Command::new("sscan", sscan),
];

/// Redis's `SPOP` with a count propagates `SREM`s of at most this many members each.
const SPOP_MOVE_STRATEGY_BATCH: usize = 1024;

/// The set at `key`: `Ok(None)` if absent, `WRONGTYPE` if another type.
fn set_mut<'c>(
    ctx: &'c mut Ctx<'_>,
    key: &Bytes,
) -> Result<Option<&'c mut SetValue>, CommandError> {
    match ctx.lookup_mut(key).map(|e| &mut e.value) {
        None => Ok(None),
        Some(Value::Set(s)) => Ok(Some(s)),
        Some(_) => Err(CommandError::WrongType),
    }
}

/// The set encodings' limits the node's configuration and target set now.
fn limits(ctx: &Ctx<'_>) -> SetLimits {
    SetLimits::of(&ctx.state.config)
}

fn set_frame(members: impl IntoIterator<Item = Bytes>) -> Frame {
    Frame::Set(members.into_iter().map(Frame::Bulk).collect())
}

fn array_frame(members: impl IntoIterator<Item = Bytes>) -> Frame {
    Frame::Array(members.into_iter().map(Frame::Bulk).collect())
}

/// ```text
/// SADD key member [member ...]
/// ```
fn sadd(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.bytes()?;
    let members = args.rest();
    let limits = limits(ctx);
    let first = members.first().map_or(&b""[..], |m| &m[..]);
    // Created if absent (`setTypeCreate` for the first member and their number) and changed
    // where it is found, measured there: one lookup.
    let (added, _) = ctx.change_or_insert(
        key,
        || Value::Set(SetValue::for_member(first, members.len(), limits)),
        typed(Value::as_set_mut, |s| {
            s.maybe_convert(members.len(), limits);
            let added = members
                .iter()
                .filter(|m| s.insert((*m).clone(), limits))
                .count();
            (added, added > 0)
        }),
    );
    let added = added?;
    if added > 0 {
        ctx.notify(notify::SET, "sadd", key);
        ctx.modified_measured(key);
    }
    Ok(Frame::Integer(added as i64))
}

/// ```text
/// SREM key member [member ...]
/// ```
fn srem(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.bytes()?;
    let members = args.rest();
    // Changed where it is found, measured there or deleted once empty: one lookup.
    let change = typed(Value::as_set_mut, |s| {
        let removed = members.iter().filter(|m| s.remove(&m[..])).count();
        (removed, removed > 0)
    });
    let Some((removed, deleted)) = ctx.change_existing(key, change) else {
        return Ok(Frame::Integer(0));
    };
    let removed = removed?;
    if removed > 0 {
        ctx.changed_in_place(key, notify::SET, "srem", deleted);
    }
    Ok(Frame::Integer(removed as i64))
}

/// ```text
/// SMEMBERS key
/// ```
fn smembers(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.bytes()?;
    let members: Vec<Bytes> = set_mut(ctx, key)?
        .map(|s| s.iter().collect())
        .unwrap_or_default();
    Ok(set_frame(members))
}

/// ```text
/// SISMEMBER key member
/// ```
fn sismember(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.bytes()?;
    let member = args.bytes()?;
    let found = set_mut(ctx, key)?.is_some_and(|s| s.contains(member));
    Ok(Frame::Integer(i64::from(found)))
}

/// ```text
/// SMISMEMBER key member [member ...]
/// ```
fn smismember(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.bytes()?;
    let members = args.rest();
    let s = set_mut(ctx, key)?;
    Ok(Frame::Array(
        members
            .iter()
            .map(|m| Frame::Integer(i64::from(s.as_ref().is_some_and(|s| s.contains(m)))))
            .collect(),
    ))
}

/// ```text
/// SCARD key
/// ```
fn scard(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.bytes()?;
    Ok(Frame::Integer(
        set_mut(ctx, key)?.map_or(0, |s| s.len() as i64),
    ))
}

/// Up to `count` distinct random members of `s` (one random draw for one member); a
/// listpack's in its order, as the server walks it once (`lpNextRandom`).
fn sample(s: &SetValue, count: usize, rng: &mut impl Rng) -> Vec<Bytes> {
    if count == 1 {
        return s.random(rng).into_iter().collect();
    }
    if s.encoding() == SetEncoding::Listpack {
        let mut at = (0..s.len()).choose_multiple(rng, count);
        at.sort_unstable();
        let mut at = at.into_iter().peekable();
        return s
            .iter()
            .enumerate()
            .filter_map(|(i, m)| (at.next_if_eq(&i).is_some()).then_some(m))
            .collect();
    }
    s.iter().choose_multiple(rng, count)
}

/// Redis's `SPOP_MOVE_STRATEGY_MUL`: SPOP with a count builds a new set of the members left
/// once they are at most a fifth of those popped.
const SPOP_MOVE_STRATEGY_MUL: usize = 5;

/// ```text
/// SPOP key [count]
/// ```
fn spop(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    if args.remaining() > 2 {
        return Err(CommandError::Syntax);
    }
    let key = args.bytes()?;
    let count = match args.next() {
        None => None,
        Some(arg) => match parse_i64(arg) {
            Ok(n) if n >= 0 => Some(n as usize),
            _ => return Err(CommandError::err("value is out of range, must be positive")),
        },
    };
    let Some(len) = set_mut(ctx, key)?.map(|s| s.len()) else {
        return Ok(if count.is_some() {
            Frame::Set(Vec::new())
        } else {
            Frame::Null
        });
    };
    let n = count.unwrap_or(1);
    if n == 0 {
        return Ok(Frame::Set(Vec::new()));
    }
    let popped: Vec<Bytes> = if n >= len {
        // With a count, Redis serves the whole set through SUNION's read lookup (a keyspace
        // hit in INFO).
        let entry = if count.is_some() {
            ctx.find_read(key)
        } else {
            ctx.entry_again(key)
        };
        match entry.map(|e| &mut e.value) {
            Some(Value::Set(s)) => s.drain(),
            _ => Vec::new(),
        }
    } else {
        let (db, now) = (ctx.client.db, ctx.now);
        let state = &mut *ctx.state;
        let picked = match state.dbs.get(db).and_then(|d| d.get(key, now)) {
            Some(entry) => match &entry.value {
                Value::Set(s) => sample(s, n, &mut state.rng),
                _ => Vec::new(),
            },
            None => Vec::new(),
        };
        let limits = limits(ctx);
        if let Some(Value::Set(s)) = ctx.entry_again(key).map(|e| &mut e.value) {
            for m in &picked {
                s.remove(m);
            }
            // The members left of a table go into a new set, created as a listpack (Valkey's
            // `spopWithCountCommand`, case 3; a table again where there are no listpack sets).
            if count.is_some()
                && (len - n) * SPOP_MOVE_STRATEGY_MUL <= n
                && s.encoding() == SetEncoding::Hashtable
            {
                let mut rest = SetValue::empty(SetEncoding::Listpack, len - n);
                for m in s.drain() {
                    rest.insert(m, limits);
                }
                *s = rest;
            }
        }
        picked
    };
    ctx.notify(notify::SET, "spop", key);
    ctx.written(key);
    // Replicas get what was removed: SREM of the members, or DEL when the set went away
    // (UNLINK under lazyfree-lazy-server-del, Valkey's default).
    if count.is_some() && n >= len {
        let del = crate::node::deletion_command(ctx.state.config.lazyfree_lazy_server_del());
        ctx.propagate(vec![del, key.clone()]);
    } else {
        for batch in popped.chunks(SPOP_MOVE_STRATEGY_BATCH) {
            let mut argv = vec![Bytes::from_static(b"SREM"), key.clone()];
            argv.extend(batch.iter().cloned());
            ctx.propagate(argv);
        }
    }
    Ok(match count {
        None => popped.into_iter().next().map_or(Frame::Null, Frame::Bulk),
        Some(_) => set_frame(popped),
    })
}

/// ```text
/// SRANDMEMBER key [count]
/// ```
fn srandmember(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    if args.remaining() > 2 {
        return Err(CommandError::Syntax);
    }
    let key = args.bytes()?;
    let count = args.next().map(|arg| random_count(arg)).transpose()?;
    if count.is_none() {
        // One member: one random draw, not a copy of the set.
        if set_mut(ctx, key)?.is_none() {
            return Ok(Frame::Null);
        }
        let (db, now) = (ctx.client.db, ctx.now);
        let state = &mut *ctx.state;
        let picked = match state.dbs.get(db).and_then(|d| d.get(key, now)) {
            Some(entry) => match &entry.value {
                Value::Set(s) => s.random(&mut state.rng),
                _ => None,
            },
            None => None,
        };
        return Ok(picked.map_or(Frame::Null, Frame::Bulk));
    }
    let (members, listpack): (Vec<Bytes>, bool) = match ctx.lookup(key).map(|e| &e.value) {
        None => {
            return Ok(if count.is_some() {
                Frame::Array(Vec::new())
            } else {
                Frame::Null
            })
        }
        Some(Value::Set(s)) => (s.iter().collect(), s.encoding() == SetEncoding::Listpack),
        Some(_) => return Err(CommandError::WrongType),
    };
    let rng = &mut ctx.state.rng;
    match count {
        None => Ok(members
            .iter()
            .choose(rng)
            .cloned()
            .map_or(Frame::Null, Frame::Bulk)),
        // A negative count may repeat members.
        Some(c) if c < 0 => {
            let n = repeated_picks(c, 1)?;
            let mut out = Vec::with_capacity(n);
            for _ in 0..n {
                if let Some(m) = members.get(rng.random_range(0..members.len())) {
                    out.push(Frame::Bulk(m.clone()));
                }
            }
            Ok(Frame::Array(out))
        }
        Some(c) if c as usize >= members.len() => Ok(array_frame(members)),
        // A listpack's sample keeps its order (`srandmemberWithCountCommand`, case 2.5).
        Some(c) if listpack => {
            let mut at = (0..members.len()).choose_multiple(rng, c as usize);
            at.sort_unstable();
            Ok(Frame::Array(
                at.into_iter()
                    .filter_map(|i| members.get(i).cloned().map(Frame::Bulk))
                    .collect(),
            ))
        }
        Some(c) => Ok(Frame::Array(
            members
                .into_iter()
                .choose_multiple(rng, c as usize)
                .into_iter()
                .map(Frame::Bulk)
                .collect(),
        )),
    }
}

/// ```text
/// SMOVE source destination member
/// ```
fn smove(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let src = args.bytes()?;
    let dst = args.bytes()?;
    let member = args.bytes()?;
    // Redis looks both keys up (one access each) before it answers 0 for a missing source,
    // and checks the destination's type only after that.
    let src_has = set_mut(ctx, src).map(|s| s.map(|s| s.contains(member)));
    let dst_exists = set_mut(ctx, dst).map(|d| d.is_some());
    let Some(src_has) = src_has? else {
        return Ok(Frame::Integer(0));
    };
    let dst_exists = dst_exists?;
    if src == dst {
        return Ok(Frame::Integer(i64::from(src_has)));
    }
    if !src_has {
        return Ok(Frame::Integer(0));
    }
    if let Some(Value::Set(s)) = ctx.entry_again(src).map(|e| &mut e.value) {
        s.remove(member);
    }
    ctx.notify(notify::SET, "srem", src);
    ctx.written(src);
    let limits = limits(ctx);
    if !dst_exists {
        let now = ctx.now;
        let created = SetValue::for_member(member, 1, limits);
        ctx.db().insert(dst, Value::Set(created), None, now);
        ctx.created(dst);
    }
    // A member the destination already holds leaves it untouched: no event, no WATCH
    // invalidation (Redis signals only a successful addition).
    let added = match ctx.entry_again(dst).map(|e| &mut e.value) {
        Some(Value::Set(s)) => s.insert(member.clone(), limits),
        _ => false,
    };
    if added {
        ctx.notify(notify::SET, "sadd", dst);
        ctx.modified(dst);
    }
    Ok(Frame::Integer(1))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Inter,
    Union,
    Diff,
}

/// The result of `op` over `keys`, as Redis's `sinterGenericCommand` /
/// `sunionDiffGenericCommand` compute it: every key's type is checked, a missing key is an
/// empty set. The members are added in the server's order to a set of the encoding it starts
/// with: an intersection walks its smallest set and starts as an intset when that set is one,
/// a listpack otherwise (an intset in the end if only integers are left); a union or
/// difference walks the sets in order and starts as an intset.
fn combine(ctx: &mut Ctx<'_>, keys: &[Bytes], op: Op) -> Result<SetValue, CommandError> {
    let limits = limits(ctx);
    let mut sets: Vec<Option<SetValue>> = Vec::with_capacity(keys.len());
    for key in keys {
        match ctx.lookup_read(key).map(|e| &e.value) {
            None => sets.push(None),
            Some(Value::Set(s)) => sets.push(Some(s.clone())),
            Some(_) => return Err(CommandError::WrongType),
        }
    }
    if op == Op::Inter && sets.iter().any(Option::is_none) {
        return Ok(SetValue::new());
    }
    let mut sets: Vec<SetValue> = sets.into_iter().map(Option::unwrap_or_default).collect();
    let mut out;
    match op {
        Op::Inter => {
            // Smallest first (a stable sort, as glibc's `qsort` merges).
            sets.sort_by_key(SetValue::len);
            let (first, rest) = sets.split_first().ok_or(CommandError::Syntax)?;
            let start = if first.encoding() == SetEncoding::Intset {
                SetEncoding::Intset
            } else {
                SetEncoding::Listpack
            };
            out = SetValue::empty(start, first.len());
            for m in first.iter() {
                if rest.iter().all(|s| s.contains(&m)) {
                    out.insert(m, limits);
                }
            }
            out.maybe_intset(limits);
        }
        Op::Union => {
            out = SetValue::new();
            for s in sets {
                for m in s {
                    out.insert(m, limits);
                }
            }
        }
        Op::Diff => {
            out = SetValue::new();
            let mut iter = sets.into_iter();
            let first = iter.next().unwrap_or_default();
            let rest: Vec<SetValue> = iter.collect();
            for m in first.iter() {
                if !rest.iter().any(|s| s.contains(&m)) {
                    out.insert(m, limits);
                }
            }
        }
    }
    Ok(out)
}

fn op_command(ctx: &mut Ctx<'_>, args: &mut Args<'_>, op: Op) -> CmdResult {
    let keys = args.rest();
    Ok(set_frame(combine(ctx, keys, op)?))
}

fn store_command(ctx: &mut Ctx<'_>, args: &mut Args<'_>, op: Op, event: &'static str) -> CmdResult {
    let dst = args.bytes()?;
    let keys = args.rest();
    let result = combine(ctx, keys, op)?;
    let count = result.len() as i64;
    if result.is_empty() {
        if ctx.delete(dst) {
            ctx.notify(notify::GENERIC, "del", dst);
        }
    } else {
        ctx.set(dst, Value::Set(result), None);
        ctx.notify(notify::SET, event, dst);
    }
    Ok(Frame::Integer(count))
}

/// ```text
/// SINTER key [key ...]
/// ```
fn sinter(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    op_command(ctx, args, Op::Inter)
}

/// ```text
/// SUNION key [key ...]
/// ```
fn sunion(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    op_command(ctx, args, Op::Union)
}

/// ```text
/// SDIFF key [key ...]
/// ```
fn sdiff(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    op_command(ctx, args, Op::Diff)
}

/// ```text
/// SINTERSTORE destination key [key ...]
/// ```
fn sinterstore(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    store_command(ctx, args, Op::Inter, "sinterstore")
}

/// ```text
/// SUNIONSTORE destination key [key ...]
/// ```
fn sunionstore(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    store_command(ctx, args, Op::Union, "sunionstore")
}

/// ```text
/// SDIFFSTORE destination key [key ...]
/// ```
fn sdiffstore(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    store_command(ctx, args, Op::Diff, "sdiffstore")
}

/// ```text
/// SINTERCARD numkeys key [key ...] [LIMIT limit]
/// ```
fn sintercard(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let numkeys = match args.next().map(|a| parse_i64(a)) {
        Some(Ok(n)) if n > 0 => n as usize,
        _ => return Err(CommandError::err("numkeys should be greater than 0")),
    };
    if numkeys > args.remaining() {
        return Err(CommandError::err(
            "Number of keys can't be greater than number of args",
        ));
    }
    let keys: Vec<Bytes> = (0..numkeys).filter_map(|_| args.next().cloned()).collect();
    let mut limit = 0usize;
    while let Some(opt) = args.next() {
        if opt.eq_ignore_ascii_case(b"limit") && !args.is_empty() {
            match args.next().map(|a| parse_i64(a)) {
                Some(Ok(n)) if n >= 0 => limit = n as usize,
                _ => return Err(CommandError::err("LIMIT can't be negative")),
            }
        } else {
            return Err(CommandError::Syntax);
        }
    }
    let count = combine(ctx, &keys, Op::Inter)?.len();
    Ok(Frame::Integer(
        if limit > 0 { count.min(limit) } else { count } as i64,
    ))
}

/// ```text
/// SSCAN key cursor [MATCH pattern] [COUNT count]
/// ```
fn sscan(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.bytes()?;
    let cursor = scan::parse_cursor(args.bytes()?)?;
    let newer = scan::Newer::of(ctx);
    let Some(s) = set_mut(ctx, key)? else {
        return Ok(Frame::Array(vec![
            Frame::Bulk(Bytes::from_static(b"0")),
            Frame::Array(Vec::new()),
        ]));
    };
    let opts = scan::ScanOptions::parse(args, scan::ScanKind::Set, newer)?;
    // An intset or a listpack is returned whole in one call, in its order, as Redis does.
    let (next, items): (u64, Vec<Bytes>) = if s.encoding() == SetEncoding::Hashtable {
        scan::run(cursor, opts.count, |c, out| {
            s.scan(c, |m| out.push(m.clone())).unwrap_or(0)
        })
    } else {
        (0, s.iter().collect())
    };
    let out = items
        .into_iter()
        .filter(|m| opts.matches(m))
        .map(Frame::Bulk)
        .collect();
    Ok(Frame::Array(vec![
        Frame::Bulk(Bytes::from(next.to_string())),
        Frame::Array(out),
    ]))
}
