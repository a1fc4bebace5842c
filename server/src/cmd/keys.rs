//! Generic key commands: DEL, UNLINK, EXISTS, TYPE, RENAME, RENAMENX, KEYS, SCAN, RANDOMKEY,
//! TOUCH, COPY, MOVE, SWAPDB, OBJECT.

use super::{scan, Args, CmdResult, Command, CommandError, Ctx};
use crate::db::{Access, Entry};
use crate::notify;
use bytes::Bytes;
use locksmith_resp::Frame;

/// Redis's `shared.sameobjecterr`.
const SAME_OBJECT: &str = "source and destination objects are the same";

/// `OBJECT IDLETIME` under an LFU `maxmemory-policy`.
const NO_LRU: &str = "An LFU maxmemory policy is selected, idle time not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.";
/// `OBJECT FREQ` without an LFU `maxmemory-policy`.
const NO_LFU: &str = "An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.";

/// OBJECT's subcommands.
static OBJECT_SUBCOMMANDS: &[Command] = &[
    Command::new("encoding", object_encoding),
    Command::new("freq", object_freq),
    Command::new("idletime", object_idletime),
    Command::new("refcount", object_refcount),
    Command::new("help", object_help),
];

/// The generic family's table.
pub(crate) static COMMANDS: &[Command] = &[
    Command::new("del", del),
    Command::new("unlink", unlink),
    Command::new("exists", exists),
    Command::new("type", type_),
    Command::new("rename", rename),
    Command::new("renamenx", renamenx),
    Command::new("keys", keys),
    Command::new("scan", scan_cmd),
    Command::new("randomkey", randomkey),
    Command::new("touch", touch),
    Command::new("copy", copy),
    Command::new("dump", dump),
    Command::new("restore", restore),
    Command::new("move", move_),
    Command::new("swapdb", swapdb),
    Command::new("object", object).subs(OBJECT_SUBCOMMANDS),
];

/// ```text
/// DEL key [key ...]
/// ```
fn del(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let lazily = ctx.state.config.lazyfree_lazy_user_del();
    delete_keys(ctx, args, lazily)
}

/// ```text
/// UNLINK key [key ...]
/// ```
/// A large value is freed on the lazy free thread.
fn unlink(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    delete_keys(ctx, args, true)
}

fn delete_keys(ctx: &mut Ctx<'_>, args: &mut Args<'_>, lazily: bool) -> CmdResult {
    let mut deleted = 0;
    for key in args.rest() {
        if ctx.delete_freeing(key, lazily) {
            ctx.notify(notify::GENERIC, "del", key);
            deleted += 1;
        }
    }
    Ok(Frame::Integer(deleted))
}

/// ```text
/// EXISTS key [key ...]
/// ```
fn exists(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let mut count = 0;
    for key in args.rest() {
        // Redis's EXISTS looks up with LOOKUP_NOTOUCH.
        if peek(ctx, key).is_some() {
            count += 1;
        }
    }
    Ok(Frame::Integer(count))
}

/// ```text
/// TYPE key
/// ```
fn type_(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.bytes()?;
    let name = peek(ctx, key).map_or("none", |e| e.value.type_name());
    Ok(Frame::simple(name))
}

/// Reads `key` without touching its access time (Redis's `LOOKUP_NOTOUCH`): lazy expiry and
/// hit/miss stats still apply.
fn peek<'c>(ctx: &'c mut Ctx<'_>, key: &Bytes) -> Option<&'c Entry> {
    ctx.find(key, false).map(|e| &*e)
}

/// Reclaims `key` in database `db` (not necessarily the selected one) if its TTL ran out;
/// returns whether a live key remains.
fn live_in(ctx: &mut Ctx<'_>, db: usize, key: &Bytes) -> bool {
    let now = ctx.now;
    let Some(d) = ctx.state.dbs.get(db) else {
        return false;
    };
    match d.raw(key) {
        None => false,
        Some(e) if e.expire_at().is_some_and(|at| at <= now) => {
            ctx.state.expire_key(db, key, ctx.effects);
            false
        }
        Some(_) => true,
    }
}

/// A database index argument (`getIntFromObjectOrReply`, then the range check).
fn db_index(ctx: &Ctx<'_>, arg: &[u8], not_int: Option<&str>) -> Result<usize, CommandError> {
    let v = super::parse_i32(arg, not_int)?;
    usize::try_from(v)
        .ok()
        .filter(|&i| i < ctx.state.dbs.len())
        .ok_or_else(|| CommandError::err("DB index is out of range"))
}

/// RENAME / RENAMENX (Redis's `renameGenericCommand`).
fn rename_generic(ctx: &mut Ctx<'_>, args: &mut Args<'_>, nx: bool) -> CmdResult {
    let src = args.bytes()?;
    let dst = args.bytes()?;
    if ctx.lookup_mut(src).is_none() {
        return Err(CommandError::NoSuchKey);
    }
    let done = if nx { Frame::Integer(1) } else { Frame::ok() };
    if src == dst {
        return Ok(if nx { Frame::Integer(0) } else { Frame::ok() });
    }
    if ctx.lookup_mut(dst).is_some() {
        if nx {
            return Ok(Frame::Integer(0));
        }
        ctx.db().remove(dst);
    }
    let Some(entry) = ctx.db().remove(src) else {
        return Err(CommandError::NoSuchKey);
    };
    let now = ctx.now;
    ctx.db().insert_moved(dst, entry, now);
    ctx.created(dst);
    ctx.modified(src);
    ctx.modified(dst);
    ctx.notify(notify::GENERIC, "rename_from", src);
    ctx.notify(notify::GENERIC, "rename_to", dst);
    Ok(done)
}

/// ```text
/// RENAME key newkey
/// ```
fn rename(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    rename_generic(ctx, args, false)
}

/// ```text
/// RENAMENX key newkey
/// ```
fn renamenx(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    rename_generic(ctx, args, true)
}

/// ```text
/// KEYS pattern
/// ```
fn keys(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let pattern = args.bytes()?;
    let all = pattern.as_ref() == b"*";
    let now = ctx.now;
    let db = ctx.db();
    let out = db
        .keys()
        .filter(|k| all || crate::glob::glob_match(pattern, k, false))
        .filter(|k| db.get(k, now).is_some())
        .map(|k| Frame::Bulk(k.to_bytes()))
        .collect();
    Ok(Frame::Array(out))
}

/// ```text
/// SCAN cursor [MATCH pattern] [COUNT count] [TYPE type]
/// ```
fn scan_cmd(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let cursor = scan::parse_cursor(args.bytes()?)?;
    let newer = scan::Newer::of(ctx);
    let opts = scan::ScanOptions::parse(args, scan::ScanKind::Keys, newer)?;
    let now = ctx.now;
    let type_lookup_expires = ctx.node.config.profile().semantics.scan_type_lookup_expires;
    let db = ctx.db();
    // Keys past their deadline are not returned, and those that pass the filters Redis checks
    // before expiring are reclaimed after the scan (with their expiry's side effects), as
    // Redis expires them as it filters: the pattern, then the type (Redis 7.0's type lookup
    // itself expires a key of any type).
    let mut expired = Vec::new();
    let (next, items) = scan::run(cursor, opts.count, |c, out| {
        db.scan(c, |k, e| {
            let live = e.expire_at().is_none_or(|at| at > now);
            let matches = opts.matches(k);
            let typed = opts
                .type_name
                .as_ref()
                .is_none_or(|t| t.eq_ignore_ascii_case(e.value.type_name().as_bytes()));
            if !live && matches && (typed || type_lookup_expires) {
                expired.push(k.to_bytes());
            }
            let keep = live && matches && typed;
            out.push(keep.then(|| k.to_bytes()));
        })
    });
    for key in &expired {
        ctx.lookup_write(key);
    }
    let out = items.into_iter().flatten().map(Frame::Bulk).collect();
    Ok(Frame::Array(vec![
        Frame::Bulk(Bytes::from(next.to_string())),
        Frame::Array(out),
    ]))
}

/// ```text
/// RANDOMKEY
/// ```
///
/// A key drawn whose deadline passed is reclaimed (with its expiry's side effects) and
/// another drawn, as Redis's `dbRandomKey` does; a replica, which does not reclaim keys,
/// answers a live one.
fn randomkey(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    let now = ctx.now;
    let index = ctx.client.db;
    loop {
        let state = &mut *ctx.state;
        let Some(db) = state.dbs.get(index) else {
            return Ok(Frame::Null);
        };
        let Some((key, expired)) = db.random_key_drawn(now, &mut state.rng) else {
            return Ok(Frame::Null);
        };
        if !expired {
            return Ok(Frame::Bulk(key));
        }
        if state.repl.is_replica() || ctx.node.live.pause.is_paused(now) {
            let key = state
                .dbs
                .get(index)
                .and_then(|db| db.random_key(now, &mut state.rng));
            return Ok(key.map_or(Frame::Null, Frame::Bulk));
        }
        ctx.lookup_write(&key);
    }
}

/// ```text
/// TOUCH key [key ...]
/// ```
fn touch(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let mut count = 0;
    for key in args.rest() {
        if ctx.lookup(key).is_some() {
            count += 1;
        }
    }
    Ok(Frame::Integer(count))
}

/// ```text
/// COPY source destination [DB destination-db] [REPLACE]
/// ```
fn copy(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let src = args.bytes()?;
    let dst = args.bytes()?;
    let src_db = ctx.client.db;
    let mut dst_db = src_db;
    let mut replace = false;
    while let Some(opt) = args.next() {
        if opt.eq_ignore_ascii_case(b"replace") {
            replace = true;
        } else if opt.eq_ignore_ascii_case(b"db") && args.peek().is_some() {
            let arg = args.bytes()?;
            dst_db = db_index(ctx, arg, None)?;
        } else {
            return Err(CommandError::Syntax);
        }
    }
    if ctx.node.cluster.get().is_some() && (src_db != 0 || dst_db != 0) {
        return Err(CommandError::err(
            "Copying to another database is not allowed in cluster mode",
        ));
    }
    if src_db == dst_db && src == dst {
        return Err(CommandError::err(SAME_OBJECT));
    }
    let Some(entry) = ctx.lookup_read(src).cloned() else {
        return Ok(Frame::Integer(0));
    };
    if live_in(ctx, dst_db, dst) {
        if !replace {
            return Ok(Frame::Integer(0));
        }
        if let Some(d) = ctx.state.dbs.get_mut(dst_db) {
            d.remove(dst);
        }
    }
    let now = ctx.now;
    if let Some(d) = ctx.state.dbs.get_mut(dst_db) {
        let (value, at) = entry.into_parts();
        d.insert(dst, value, at, now);
    }
    ctx.state.dirty += 1;
    ctx.effects.modified.push((dst_db, dst.clone()));
    ctx.effects
        .keyspace_event(dst_db, notify::GENERIC, "copy_to", dst);
    Ok(Frame::Integer(1))
}

/// ```text
/// DUMP key
/// ```
/// Redis's RDB serialisation of the value with its version and CRC64 (see [`crate::rdb`]).
fn dump(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.bytes()?;
    let encoding = super::persistence::rdb_encoding(ctx);
    Ok(ctx.lookup(key).map_or(Frame::Null, |e| {
        Frame::Bulk(Bytes::from(crate::rdb::dump_value(&e.value, encoding)))
    }))
}

/// ```text
/// RESTORE key ttl serialized-value [REPLACE] [ABSTTL] [IDLETIME seconds] [FREQ frequency]
/// ```
/// Checked as Redis's `restoreCommand`, in its order; replicated with an absolute TTL.
pub(super) fn restore(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.bytes()?;
    let ttl_arg = args.bytes()?;
    let payload = args.bytes()?;
    let (mut replace, mut absttl) = (false, false);
    let (mut idle, mut freq): (Option<u64>, Option<u8>) = (None, None);
    while let Some(opt) = args.next() {
        let more = args.remaining() >= 1;
        if opt.eq_ignore_ascii_case(b"replace") {
            replace = true;
        } else if opt.eq_ignore_ascii_case(b"absttl") {
            absttl = true;
        } else if opt.eq_ignore_ascii_case(b"idletime") && more && freq.is_none() {
            let v = args.i64()?;
            idle = Some(
                u64::try_from(v)
                    .map_err(|_| CommandError::err("Invalid IDLETIME value, must be >= 0"))?,
            );
        } else if opt.eq_ignore_ascii_case(b"freq") && more && idle.is_none() {
            let v = args.i64()?;
            freq =
                Some(u8::try_from(v).map_err(|_| {
                    CommandError::err("Invalid FREQ value, must be >= 0 and <= 255")
                })?);
        } else {
            return Err(CommandError::Syntax);
        }
    }
    if !replace && ctx.lookup(key).is_some() {
        return Err(CommandError::Raw(
            "BUSYKEY Target key name already exists.".into(),
        ));
    }
    let ttl = super::parse_i64(ttl_arg)?;
    if ttl < 0 {
        return Err(CommandError::err("Invalid TTL value, must be >= 0"));
    }
    let packed = ctx
        .node
        .live
        .quicklist_packed_threshold
        .load(std::sync::atomic::Ordering::Relaxed);
    let load = crate::rdb::Load::of(&ctx.state.config, packed);
    let Some(body) = crate::rdb::verify_payload(payload, load.version) else {
        return Err(CommandError::err(
            "DUMP payload version or checksum are wrong",
        ));
    };
    let value =
        crate::rdb::restore_value(body, load).map_err(|_| CommandError::err("Bad data format"))?;
    let deleted = replace && ctx.delete(key);
    let deadline = match ttl {
        0 => None,
        t if absttl => Some(t as u64),
        t => Some((t as u64).saturating_add(ctx.now)),
    };
    if deadline.is_some_and(|at| at <= ctx.now) && !ctx.state.repl.is_replica() {
        // Already expired: the key is just gone (a DEL, or UNLINK under
        // lazyfree-lazy-server-del, if one was replaced).
        if deleted {
            ctx.notify(notify::GENERIC, "del", key);
            let del = crate::node::deletion_command(ctx.state.config.lazyfree_lazy_server_del());
            ctx.propagate(vec![del, key.clone()]);
        }
        return Ok(Frame::ok());
    }
    let now = ctx.now;
    let access = ctx.db().access();
    ctx.set(key, value, deadline);
    if let crate::db::Found::Live(entry) = ctx.db().find_live(key, now, false) {
        entry.accessed = access.restored(now, idle, freq);
    }
    ctx.notify(notify::GENERIC, "restore", key);
    if let (Some(at), false) = (deadline, absttl) {
        if ctx.propagating() {
            let mut argv = args.argv().to_vec();
            if let Some(ttl) = argv.get_mut(2) {
                *ttl = Bytes::from(at.to_string());
            }
            argv.push(Bytes::from_static(b"ABSTTL"));
            ctx.propagate(argv);
        }
    }
    Ok(Frame::ok())
}

/// ```text
/// MOVE key db
/// ```
fn move_(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    if ctx.node.cluster.get().is_some() {
        return Err(CommandError::err("MOVE is not allowed in cluster mode"));
    }
    let key = args.bytes()?;
    let arg = args.bytes()?;
    let dst_db = db_index(ctx, arg, None)?;
    let src_db = ctx.client.db;
    if dst_db == src_db {
        return Err(CommandError::err(SAME_OBJECT));
    }
    if ctx.lookup_mut(key).is_none() {
        return Ok(Frame::Integer(0));
    }
    if live_in(ctx, dst_db, key) {
        return Ok(Frame::Integer(0));
    }
    let Some(entry) = ctx.db().remove(key) else {
        return Ok(Frame::Integer(0));
    };
    let now = ctx.now;
    if let Some(d) = ctx.state.dbs.get_mut(dst_db) {
        d.insert_moved(key, entry, now);
    }
    if ctx.state.config.notify_keyspace_events() & notify::NEW != 0 {
        ctx.effects.keyspace_event(dst_db, notify::NEW, "new", key);
    }
    ctx.state.dirty += 1;
    ctx.effects.modified.push((src_db, key.clone()));
    ctx.effects.modified.push((dst_db, key.clone()));
    ctx.effects
        .keyspace_event(src_db, notify::GENERIC, "move_from", key);
    ctx.effects
        .keyspace_event(dst_db, notify::GENERIC, "move_to", key);
    Ok(Frame::Integer(1))
}

/// ```text
/// SWAPDB index1 index2
/// ```
/// Swaps the data: clients keep their selected index and see the other database's keys.
fn swapdb(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    if ctx.node.cluster.get().is_some() {
        return Err(CommandError::err("SWAPDB is not allowed in cluster mode"));
    }
    let a = args.bytes()?;
    let b = args.bytes()?;
    let a = db_index_or(ctx, a, "invalid first DB index")?;
    let b = db_index_or(ctx, b, "invalid second DB index")?;
    let (a, b) = match (a, b) {
        (Some(a), Some(b)) => (a, b),
        _ => return Err(CommandError::err("DB index is out of range")),
    };
    if a != b {
        // WATCH hears of the swap as Redis's `touchAllWatchedKeysInDb` tells it (client
        // tracking does not, in Redis 7.0); clients blocked on a key of either database are
        // served if the key now there serves them (`scanDatabaseForReadyKeys`).
        crate::transaction::touch_swapped(ctx.state, ctx.node, a, b, ctx.now);
        let waited_on = ctx.state.blocked.keys_in([a, b]);
        ctx.state.dbs.swap(a, b);
        ctx.effects.ready.extend(waited_on);
    }
    ctx.state.dirty += 1;
    Ok(Frame::ok())
}

/// An index for SWAPDB: `Err` with `msg` if not an int, `Ok(None)` if out of range.
fn db_index_or(ctx: &Ctx<'_>, arg: &[u8], msg: &str) -> Result<Option<usize>, CommandError> {
    let v = super::parse_i32(arg, Some(msg))?;
    Ok(usize::try_from(v).ok().filter(|&i| i < ctx.state.dbs.len()))
}

/// `OBJECT` with no known subcommand (the dispatcher answers the arity and unknown
/// subcommand errors before this runs).
fn object(_ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let sub = args
        .argv()
        .get(1)
        .map(|s| super::lossy(s, 128))
        .unwrap_or_default();
    Err(CommandError::UnknownSubcommand {
        container: "OBJECT".into(),
        sub,
    })
}

/// ```text
/// OBJECT ENCODING key
/// ```
fn object_encoding(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.bytes()?;
    Ok(ctx
        .lookup_quiet(key)
        .map_or(Frame::Null, |e| Frame::bulk(e.value.encoding())))
}

/// ```text
/// OBJECT FREQ key
/// ```
fn object_freq(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.bytes()?;
    let now = ctx.now;
    let access = ctx.db().access();
    let Some(entry) = ctx.lookup_quiet(key) else {
        return Ok(Frame::Null);
    };
    match access {
        Access::Lfu { .. } => Ok(Frame::Integer(i64::from(
            access.frequency(entry.accessed, now),
        ))),
        Access::Lru => Err(CommandError::err(NO_LFU)),
    }
}

/// ```text
/// OBJECT IDLETIME key
/// ```
fn object_idletime(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.bytes()?;
    let now = ctx.now;
    let access = ctx.db().access();
    let Some(entry) = ctx.lookup_quiet(key) else {
        return Ok(Frame::Null);
    };
    match access {
        Access::Lru => Ok(Frame::Integer(
            (Access::idle_ms(entry.accessed, now) / 1000) as i64,
        )),
        Access::Lfu { .. } => Err(CommandError::err(NO_LRU)),
    }
}

/// ```text
/// OBJECT REFCOUNT key
/// ```
/// Small integers (0..=9999) are Redis's shared objects, reported as `INT_MAX`.
fn object_refcount(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.bytes()?;
    Ok(ctx.lookup_quiet(key).map_or(Frame::Null, |e| {
        Frame::Integer(i64::from(e.value.refcount()))
    }))
}

/// ```text
/// OBJECT HELP
/// ```
fn object_help(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    Ok(super::client::help_reply(ctx, "OBJECT"))
}
