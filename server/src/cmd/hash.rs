//! Hash commands: HSET, HSETNX, HMSET, HGET, HMGET, HDEL, HEXISTS, HLEN, HKEYS, HVALS,
//! HGETALL, HINCRBY, HINCRBYFLOAT, HSTRLEN, HSCAN, HRANDFIELD.
//!
//! A hash keeps insertion order (Redis's listpack order for small hashes); HDEL uses
//! `shift_remove` so the remaining order stays the same as Redis's.

use super::ldouble::{self, Ld, LongDouble};
use super::{
    random_count, repeated_picks, scan, typed, Args, CmdResult, Command, CommandError, Ctx,
};
use crate::db::{Entry, HashValue, ListpackLimits, Value};
use crate::notify;
use bytes::Bytes;
use locksmith_resp::{Frame, Version};

/// The hash family's table.
pub(crate) static COMMANDS: &[Command] = &[
    Command::new("hset", hset),
    Command::new("hsetnx", hsetnx),
    Command::new("hmset", hmset),
    Command::new("hget", hget),
    Command::new("hmget", hmget),
    Command::new("hdel", hdel),
    Command::new("hexists", hexists),
    Command::new("hlen", hlen),
    Command::new("hkeys", hkeys),
    Command::new("hvals", hvals),
    Command::new("hgetall", hgetall),
    Command::new("hincrby", hincrby),
    Command::new("hincrbyfloat", hincrbyfloat),
    Command::new("hstrlen", hstrlen),
    Command::new("hscan", hscan),
    Command::new("hrandfield", hrandfield),
];

/// A reply of `bytes`.
fn bulk(bytes: &[u8]) -> Frame {
    Frame::Bulk(Bytes::copy_from_slice(bytes))
}

/// The hash at `key` for reading: `Ok(None)` if absent, `WRONGTYPE` if another type.
fn read<'c>(ctx: &'c mut Ctx<'_>, key: &Bytes) -> Result<Option<&'c HashValue>, CommandError> {
    match ctx.lookup(key).map(|e| &e.value) {
        None => Ok(None),
        Some(Value::Hash(h)) => Ok(Some(h)),
        Some(_) => Err(CommandError::WrongType),
    }
}

/// Checks the key holds a hash or nothing (Redis's `hashTypeLookupWriteOrCreate` check).
fn check_writable(ctx: &mut Ctx<'_>, key: &Bytes) -> Result<bool, CommandError> {
    match ctx
        .lookup_mut(key)
        .map(|e| matches!(e.value, Value::Hash(_)))
    {
        None => Ok(false),
        Some(true) => Ok(true),
        Some(false) => Err(CommandError::WrongType),
    }
}

/// Changes the hash at `key` (created empty if absent) with `change` and measures it again in
/// place, so the caller marks the key with `ctx.modified_measured` if it wrote; `WRONGTYPE`
/// (nothing changed or created) for another type. One key lookup for the whole write.
fn change<R>(
    ctx: &mut Ctx<'_>,
    key: &Bytes,
    change: impl FnOnce(&mut HashValue) -> R,
) -> Result<R, CommandError> {
    let (changed, _) = ctx.change_or_insert(
        key,
        || Value::Hash(HashValue::new()),
        typed(Value::as_hash_mut, |h| (change(h), true)),
    );
    changed
}

/// (field, value) pairs of HSET/HMSET, or the arity error.
fn field_values<'a>(args: &mut Args<'a>, name: &str) -> Result<&'a [Bytes], CommandError> {
    let rest = args.rest();
    if !rest.len().is_multiple_of(2) {
        return Err(CommandError::WrongArity(name.into()));
    }
    Ok(rest)
}

/// HSET/HMSET: sets the pairs, returns how many fields were new.
fn hset_generic(ctx: &mut Ctx<'_>, args: &mut Args<'_>, name: &str) -> Result<i64, CommandError> {
    let key = args.bytes()?;
    let pairs = field_values(args, name)?;
    let limits = ListpackLimits::of_hashes(&ctx.state.config);
    let created = change(ctx, key, |h| {
        let mut created = 0;
        for fv in pairs.chunks(2) {
            if let [f, v] = fv {
                if h.insert(f, v, limits) {
                    created += 1;
                }
            }
        }
        created
    })?;
    ctx.modified_measured(key);
    ctx.notify(notify::HASH, "hset", key);
    Ok(created)
}

/// ```text
/// HSET key field value [field value ...]
/// ```
fn hset(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    Ok(Frame::Integer(hset_generic(ctx, args, "hset")?))
}

/// ```text
/// HMSET key field value [field value ...]
/// ```
fn hmset(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    hset_generic(ctx, args, "hmset")?;
    Ok(Frame::ok())
}

/// ```text
/// HSETNX key field value
/// ```
fn hsetnx(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.bytes()?;
    let field = args.bytes()?;
    let value = args.bytes()?;
    let limits = ListpackLimits::of_hashes(&ctx.state.config);
    // One lookup (one touch, as Redis's): a new key is created holding the field.
    let added = change(ctx, key, |h| {
        let absent = !h.contains_key(field);
        if absent {
            h.insert(field, value, limits);
        }
        absent
    })?;
    if !added {
        return Ok(Frame::Integer(0));
    }
    ctx.modified_measured(key);
    ctx.notify(notify::HASH, "hset", key);
    Ok(Frame::Integer(1))
}

/// ```text
/// HGET key field
/// ```
fn hget(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.bytes()?;
    let field = args.bytes()?;
    let v = read(ctx, key)?.and_then(|h| h.get(field).map(Bytes::copy_from_slice));
    Ok(v.map_or(Frame::Null, Frame::Bulk))
}

/// ```text
/// HMGET key field [field ...]
/// ```
fn hmget(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.bytes()?;
    let fields = args.rest();
    let h = read(ctx, key)?;
    let out = fields
        .iter()
        .map(|f| {
            h.and_then(|h| h.get(f).map(Bytes::copy_from_slice))
                .map_or(Frame::Null, Frame::Bulk)
        })
        .collect();
    Ok(Frame::Array(out))
}

/// ```text
/// HDEL key field [field ...]
/// ```
fn hdel(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.bytes()?;
    let fields = args.rest();
    // Changed where it is found, measured there or deleted once empty: one lookup.
    let change = typed(Value::as_hash_mut, |h| {
        let mut deleted = 0;
        for f in fields {
            if h.shift_remove(f) {
                deleted += 1;
                if h.is_empty() {
                    break;
                }
            }
        }
        (deleted, deleted > 0)
    });
    let Some((deleted, emptied)) = ctx.change_existing(key, change) else {
        return Ok(Frame::Integer(0));
    };
    let deleted = deleted?;
    if deleted > 0 {
        ctx.changed_in_place(key, notify::HASH, "hdel", emptied);
    }
    Ok(Frame::Integer(deleted))
}

/// ```text
/// HEXISTS key field
/// ```
fn hexists(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.bytes()?;
    let field = args.bytes()?;
    let found = read(ctx, key)?.is_some_and(|h| h.contains_key(field));
    Ok(Frame::Integer(i64::from(found)))
}

/// ```text
/// HLEN key
/// ```
fn hlen(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.bytes()?;
    let len = read(ctx, key)?.map_or(0, |h| h.len());
    Ok(Frame::Integer(len as i64))
}

/// ```text
/// HSTRLEN key field
/// ```
fn hstrlen(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.bytes()?;
    let field = args.bytes()?;
    let len = read(ctx, key)?
        .and_then(|h| h.get(field))
        .map_or(0, |v| v.len());
    Ok(Frame::Integer(len as i64))
}

/// ```text
/// HKEYS key
/// ```
fn hkeys(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.bytes()?;
    let h = read(ctx, key)?;
    Ok(Frame::Array(
        h.map(|h| h.keys().map(bulk).collect()).unwrap_or_default(),
    ))
}

/// ```text
/// HVALS key
/// ```
fn hvals(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.bytes()?;
    let h = read(ctx, key)?;
    Ok(Frame::Array(
        h.map(|h| h.values().map(bulk).collect())
            .unwrap_or_default(),
    ))
}

/// ```text
/// HGETALL key
/// ```
fn hgetall(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.bytes()?;
    let h = read(ctx, key)?;
    Ok(Frame::Map(
        h.map(|h| h.iter().map(|(f, v)| (bulk(f), bulk(v))).collect())
            .unwrap_or_default(),
    ))
}

/// ```text
/// HINCRBY key field increment
/// ```
fn hincrby(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.bytes()?;
    let field = args.bytes()?;
    let by = args.i64()?;
    let limits = ListpackLimits::of_hashes(&ctx.state.config);
    // Creating the hash first is safe: a new hash has no field, so 0 + by cannot fail.
    let new = change(ctx, key, |h| {
        let new = match h.get(field) {
            Some(value) => {
                let Ok(current) = super::parse_i64(value) else {
                    return Err(CommandError::err("hash value is not an integer"));
                };
                match current.checked_add(by) {
                    Some(new) => new,
                    None => return Err(CommandError::Overflow),
                }
            }
            None => by,
        };
        // A value longer than `hash-max-listpack-value` converts the hash, as Redis's
        // hashTypeSet does: `insert` sees to it.
        h.insert(field, &Bytes::from(new.to_string()), limits);
        Ok(new)
    })??;
    ctx.modified_measured(key);
    ctx.notify(notify::HASH, "hincrby", key);
    Ok(Frame::Integer(new))
}

/// ```text
/// HINCRBYFLOAT key field increment
/// ```
fn hincrbyfloat(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.bytes()?;
    let field = args.bytes()?;
    let by = args.bytes()?;
    let incr = match LongDouble::parse(by) {
        None => return Err(CommandError::NotFloat),
        Some(Ld::Inf) => return Err(CommandError::err("value is NaN or Infinity")),
        Some(incr) => incr,
    };
    check_writable(ctx, key)?;
    let current = match read(ctx, key)?.and_then(|h| h.get(field)) {
        Some(v) => {
            LongDouble::parse(v).ok_or_else(|| CommandError::err("hash value is not a float"))?
        }
        None => Ld::Finite(LongDouble::from_i64(0)),
    };
    let new = ldouble::add_values(current, incr)
        .ok_or_else(|| CommandError::err("increment would produce NaN or Infinity"))?;
    let new = Bytes::from(new);
    let limits = ListpackLimits::of_hashes(&ctx.state.config);
    change(ctx, key, |h| h.insert(field, &new, limits))?;
    ctx.modified_measured(key);
    ctx.notify(notify::HASH, "hincrbyfloat", key);
    ctx.propagate(vec![
        Bytes::from_static(b"HSET"),
        key.clone(),
        field.clone(),
        new.clone(),
    ]);
    Ok(Frame::Bulk(new))
}

/// ```text
/// HSCAN key cursor [MATCH pattern] [COUNT count] [NOVALUES]
/// ```
///
/// `NOVALUES` (Valkey 8.0) under a target that documents it.
fn hscan(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.bytes()?;
    let cursor = scan::parse_cursor(args.bytes()?)?;
    let newer = scan::Newer::of(ctx);
    let empty = || {
        Frame::Array(vec![
            Frame::Bulk(Bytes::from_static(b"0")),
            Frame::Array(Vec::new()),
        ])
    };
    let Some(h) = read(ctx, key)? else {
        return Ok(empty());
    };
    let opts = scan::ScanOptions::parse(args, scan::ScanKind::Hash, newer)?;
    // A listpack hash is returned whole by its one step, as Redis does.
    let (next, items) = scan::run(cursor, opts.count, |c, out| {
        h.scan(c, |f, v| {
            out.push((Bytes::copy_from_slice(f), Bytes::copy_from_slice(v)))
        })
    });
    let mut out = Vec::new();
    for (f, v) in items {
        if opts.matches(&f) {
            out.push(Frame::Bulk(f));
            if !opts.names_only {
                out.push(Frame::Bulk(v));
            }
        }
    }
    Ok(Frame::Array(vec![
        Frame::Bulk(Bytes::from(next.to_string())),
        Frame::Array(out),
    ]))
}

/// ```text
/// HRANDFIELD key [count [WITHVALUES]]
/// ```
fn hrandfield(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    use rand::seq::index::sample;
    use rand::seq::IteratorRandom;
    let key = args.bytes()?;
    if args.is_empty() {
        if read(ctx, key)?.is_none() {
            return Ok(Frame::Null);
        }
        let (db, now) = (ctx.client.db, ctx.now);
        let state = &mut *ctx.state;
        let f = match state.dbs.get(db).and_then(|d| d.get(key, now)) {
            Some(Entry {
                value: Value::Hash(h),
                ..
            }) => h
                .random(&mut state.rng)
                .map(|(f, _)| Bytes::copy_from_slice(f)),
            _ => None,
        };
        return Ok(f.map_or(Frame::Null, Frame::Bulk));
    }
    let count = random_count(args.next().ok_or(CommandError::Syntax)?)?;
    let withvalues = match args.remaining() {
        0 => false,
        1 if args.eat("withvalues") => true,
        _ => return Err(CommandError::Syntax),
    };
    if withvalues && !(-i64::MAX / 2..=i64::MAX / 2).contains(&count) {
        return Err(CommandError::err("value is out of range"));
    }
    let len = read(ctx, key)?.map_or(0, |h| h.len());
    if count == 0 || len == 0 {
        return Ok(Frame::Array(Vec::new()));
    }
    let picks = if count < 0 {
        repeated_picks(count, if withvalues { 2 } else { 1 })?
    } else {
        1
    };
    let (db, now) = (ctx.client.db, ctx.now);
    let state = &mut *ctx.state;
    let Some(Entry {
        value: Value::Hash(h),
        ..
    }) = state.dbs.get(db).and_then(|d| d.get(key, now))
    else {
        return Ok(Frame::Array(Vec::new()));
    };
    let rng = &mut state.rng;
    let chosen: Vec<(&[u8], &[u8])> = if count < 0 || count == 1 {
        (0..picks).filter_map(|_| h.random(rng)).collect()
    } else if count as u64 >= len as u64 {
        h.iter().collect()
    } else if !h.is_table() {
        let mut picked = sample(rng, len, count as usize).into_vec();
        picked.sort_unstable();
        picked.into_iter().filter_map(|i| h.get_index(i)).collect()
    } else {
        distinct_picks(h, count as usize, rng)
            .unwrap_or_else(|| h.iter().choose_multiple(rng, count as usize))
    };
    let resp3 = ctx.client.resp == Version::Resp3;
    let mut out = Vec::new();
    for (f, v) in chosen {
        if withvalues && resp3 {
            out.push(Frame::Array(vec![bulk(f), bulk(v)]));
        } else {
            out.push(bulk(f));
            if withvalues {
                out.push(bulk(v));
            }
        }
    }
    Ok(Frame::Array(out))
}

/// `count` distinct random fields of a table-encoded hash by repeated random draws, as Redis's
/// `hrandfieldWithCountCommand` does when `count` is under a third of the hash ("case 4"):
/// O(count) instead of a walk of the whole hash; `None` if the draws keep repeating (a bound
/// on the loop; the caller then samples from a walk).
fn distinct_picks<'h>(
    h: &'h HashValue,
    count: usize,
    rng: &mut impl rand::Rng,
) -> Option<Vec<(&'h [u8], &'h [u8])>> {
    if count.saturating_mul(3) > h.len() {
        return None;
    }
    let mut seen = std::collections::HashSet::with_capacity(count);
    let mut out = Vec::with_capacity(count);
    for _ in 0..count.saturating_mul(16) {
        let (f, v) = h.random(rng)?;
        if seen.insert(f) {
            out.push((f, v));
            if out.len() == count {
                return Some(out);
            }
        }
    }
    None
}
