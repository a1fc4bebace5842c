//! String commands: GET, SET, SETNX, SETEX, PSETEX, GETSET, GETDEL, GETEX, MGET, MSET,
//! MSETNX, INCR, DECR, INCRBY, DECRBY, INCRBYFLOAT, APPEND, STRLEN, GETRANGE, SUBSTR,
//! SETRANGE.

use super::{ldouble, Args, CmdResult, Command, CommandError, Ctx};
use crate::db::{StringValue, Value};
use crate::notify;
use bytes::{Bytes, BytesMut};
use locksmith_resp::Frame;

/// The string family's table.
pub(crate) static COMMANDS: &[Command] = &[
    Command::new("get", get),
    Command::new("set", set),
    Command::new("setnx", setnx),
    Command::new("setex", setex),
    Command::new("psetex", psetex),
    Command::new("getset", getset),
    Command::new("getdel", getdel),
    Command::new("getex", getex),
    Command::new("mget", mget),
    Command::new("mset", mset),
    Command::new("msetnx", msetnx),
    Command::new("incr", incr),
    Command::new("decr", decr),
    Command::new("incrby", incrby),
    Command::new("decrby", decrby),
    Command::new("incrbyfloat", incrbyfloat),
    Command::new("append", append),
    Command::new("strlen", strlen),
    Command::new("getrange", getrange),
    Command::new("substr", getrange),
    Command::new("lcs", lcs),
    Command::new("setrange", setrange),
];

/// ```text
/// GET key
/// ```
fn get(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.bytes()?;
    Ok(ctx.get_string(key)?.map_or(Frame::Null, Frame::Bulk))
}

/// How SET's expiry was given.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Expiry {
    /// `EX seconds`
    Ex(i64),
    /// `PX milliseconds`
    Px(i64),
    /// `EXAT unix-seconds`
    ExAt(i64),
    /// `PXAT unix-ms`
    PxAt(i64),
}

impl Expiry {
    /// The absolute deadline in ms for this expiry given at `now`, or Redis's
    /// `invalid expire time in '<cmd>' command` error.
    pub(crate) fn deadline(self, now: u64, cmd: &str) -> Result<u64, CommandError> {
        let invalid = || CommandError::err(format!("invalid expire time in '{cmd}' command"));
        let (value, unit_ms, relative) = match self {
            Expiry::Ex(v) => (v, 1000, true),
            Expiry::Px(v) => (v, 1, true),
            Expiry::ExAt(v) => (v, 1000, false),
            Expiry::PxAt(v) => (v, 1, false),
        };
        if value <= 0 {
            return Err(invalid());
        }
        let ms = value.checked_mul(unit_ms).ok_or_else(invalid)?;
        let at = if relative {
            ms.checked_add(now as i64).ok_or_else(invalid)?
        } else {
            ms
        };
        Ok(at as u64)
    }

    /// Whether the deadline is absolute (EXAT/PXAT).
    fn absolute(self) -> bool {
        matches!(self, Expiry::ExAt(_) | Expiry::PxAt(_))
    }
}

/// Which expiry option was given (before its value is parsed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ExpiryKind {
    Ex,
    Px,
    ExAt,
    PxAt,
}

/// Options of SET and GETEX, parsed as Redis's `parseExtendedStringArgumentsOrReply`.
#[derive(Debug, Default)]
struct ExtArgs {
    nx: bool,
    xx: bool,
    get: bool,
    keepttl: bool,
    persist: bool,
    expire: Option<(ExpiryKind, Bytes)>,
    /// Valkey 8.1's `IFEQ comparison-value`: set only if the current value is this string.
    ifeq: Option<Bytes>,
}

impl ExtArgs {
    /// Parses the options; `set` = SET's set of options (`IFEQ` included: SET's handler refuses it
    /// where the target lacks it), else GETEX's.
    fn parse(args: &mut Args<'_>, set: bool) -> Result<ExtArgs, CommandError> {
        let mut o = ExtArgs::default();
        while let Some(opt) = args.next() {
            let opt = opt.to_ascii_uppercase();
            let kind = o.expire.as_ref().map(|(k, _)| *k);
            let timed = |k: ExpiryKind| kind.is_none() || kind == Some(k);
            let has_next = args.peek().is_some();
            let expiry = |o: &mut ExtArgs, k: ExpiryKind, args: &mut Args<'_>| {
                o.expire = args.next().map(|v| (k, v.clone()));
            };
            match opt.as_slice() {
                b"NX" if !o.xx && o.ifeq.is_none() && set => o.nx = true,
                b"XX" if !o.nx && o.ifeq.is_none() && set => o.xx = true,
                b"IFEQ" if set && !o.nx && !o.xx && o.ifeq.is_none() && has_next => {
                    o.ifeq = args.next().cloned();
                }
                b"GET" if set => o.get = true,
                b"KEEPTTL" if !o.persist && kind.is_none() && set => o.keepttl = true,
                b"PERSIST" if !set && kind.is_none() && !o.keepttl => o.persist = true,
                b"EX" if !o.keepttl && !o.persist && timed(ExpiryKind::Ex) && has_next => {
                    expiry(&mut o, ExpiryKind::Ex, args)
                }
                b"PX" if !o.keepttl && !o.persist && timed(ExpiryKind::Px) && has_next => {
                    expiry(&mut o, ExpiryKind::Px, args)
                }
                b"EXAT" if !o.keepttl && !o.persist && timed(ExpiryKind::ExAt) && has_next => {
                    expiry(&mut o, ExpiryKind::ExAt, args)
                }
                b"PXAT" if !o.keepttl && !o.persist && timed(ExpiryKind::PxAt) && has_next => {
                    expiry(&mut o, ExpiryKind::PxAt, args)
                }
                _ => return Err(CommandError::Syntax),
            }
        }
        Ok(o)
    }

    /// The expiry with its value parsed (`ERR value is not an integer…` on a bad number).
    fn expiry(&self) -> Result<Option<Expiry>, CommandError> {
        let Some((kind, raw)) = &self.expire else {
            return Ok(None);
        };
        let v = super::parse_i64(raw)?;
        Ok(Some(match kind {
            ExpiryKind::Ex => Expiry::Ex(v),
            ExpiryKind::Px => Expiry::Px(v),
            ExpiryKind::ExAt => Expiry::ExAt(v),
            ExpiryKind::PxAt => Expiry::PxAt(v),
        }))
    }
}

/// What SET-like commands reply with on success and when NX/XX stopped them.
struct Replies {
    ok: Frame,
    abort: Frame,
}

/// Redis's `setGenericCommand`.
#[allow(clippy::too_many_arguments)]
fn set_generic(
    ctx: &mut Ctx<'_>,
    name: &str,
    key: &Bytes,
    value: &Bytes,
    o: &ExtArgs,
    expiry: Option<Expiry>,
    replies: Replies,
) -> CmdResult {
    let deadline = match expiry {
        Some(e) => Some(e.deadline(ctx.now, name)?),
        None => None,
    };
    let old = if o.get {
        Some(ctx.read_string(key)?)
    } else {
        None
    };
    // A plain SET needs no lookup: `set` replaces what is there with one hash (and gives an
    // expired key its side effects first, as this lookup would).
    let existing = if o.nx || o.xx || o.keepttl {
        ctx.lookup_mut(key).map(|e| e.expire_at())
    } else {
        None
    };
    let found = existing.is_some();
    let reply = |old: Option<Option<Bytes>>, normal: Frame| match old {
        Some(v) => v.map_or(Frame::Null, Frame::Bulk),
        None => normal,
    };
    if (o.nx && found) || (o.xx && !found) {
        return Ok(reply(old, replies.abort));
    }
    if let Some(expected) = &o.ifeq {
        let current = match &old {
            Some(current) => current.clone(),
            None => ctx.read_string(key)?,
        };
        if current.as_ref() != Some(expected) {
            return Ok(reply(old, replies.abort));
        }
    }
    let expire_at = if o.keepttl {
        existing.flatten()
    } else {
        deadline
    };
    ctx.set(key, Value::String(value.into()), expire_at);
    ctx.notify(notify::STRING, "set", key);
    if let Some(at) = deadline {
        ctx.notify(notify::GENERIC, "expire", key);
        // Replicas get the absolute deadline, as Redis 7 rewrites SET/SETEX/PSETEX.
        ctx.propagate(vec![
            Bytes::from_static(b"SET"),
            key.clone(),
            value.clone(),
            Bytes::from_static(b"PXAT"),
            Bytes::from(at.to_string()),
        ]);
    } else if o.get {
        // Propagated without the GET argument.
        let argv: Vec<Bytes> = ctx_argv_without_get(o, key, value);
        ctx.propagate(argv);
    }
    Ok(reply(old, replies.ok))
}

/// `SET key value [NX|XX] [KEEPTTL]` as replicas get it when GET was given.
fn ctx_argv_without_get(o: &ExtArgs, key: &Bytes, value: &Bytes) -> Vec<Bytes> {
    let mut argv = vec![Bytes::from_static(b"SET"), key.clone(), value.clone()];
    if o.nx {
        argv.push(Bytes::from_static(b"NX"));
    }
    if o.xx {
        argv.push(Bytes::from_static(b"XX"));
    }
    if o.keepttl {
        argv.push(Bytes::from_static(b"KEEPTTL"));
    }
    argv
}

/// ```text
/// SET key value [NX | XX] [GET] [EX seconds | PX milliseconds |
///   EXAT unix-time-seconds | PXAT unix-time-milliseconds | KEEPTTL]
/// ```
fn set(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.bytes()?;
    let value = args.bytes()?;
    if args.peek().is_none() {
        // No option: what `set_generic` does with none, without building and dropping the
        // options and both replies (SET is the most sent write).
        ctx.set(key, Value::String(value.into()), None);
        ctx.notify(notify::STRING, "set", key);
        return Ok(Frame::ok());
    }
    let o = ExtArgs::parse(args, true)?;
    // IFEQ is Valkey 8.1's: where the target lacks it, it is the syntax error it was (every
    // other refusal of the parse is one too). Looked up only when given: SET is hot.
    if o.ifeq.is_some() && !ctx.documents("set", "IFEQ") {
        return Err(CommandError::Syntax);
    }
    let expiry = o.expiry()?;
    set_generic(
        ctx,
        "set",
        key,
        value,
        &o,
        expiry,
        Replies {
            ok: Frame::ok(),
            abort: Frame::Null,
        },
    )
}

/// ```text
/// SETNX key value
/// ```
fn setnx(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.bytes()?;
    let value = args.bytes()?;
    let o = ExtArgs {
        nx: true,
        ..Default::default()
    };
    set_generic(
        ctx,
        "setnx",
        key,
        value,
        &o,
        None,
        Replies {
            ok: Frame::Integer(1),
            abort: Frame::Integer(0),
        },
    )
}

/// SETEX / PSETEX.
fn setex_generic(ctx: &mut Ctx<'_>, args: &mut Args<'_>, name: &str, ms: bool) -> CmdResult {
    let key = args.bytes()?;
    let t = args.i64()?;
    let value = args.bytes()?;
    let expiry = if ms { Expiry::Px(t) } else { Expiry::Ex(t) };
    set_generic(
        ctx,
        name,
        key,
        value,
        &ExtArgs::default(),
        Some(expiry),
        Replies {
            ok: Frame::ok(),
            abort: Frame::Null,
        },
    )
}

/// ```text
/// SETEX key seconds value
/// ```
fn setex(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    setex_generic(ctx, args, "setex", false)
}

/// ```text
/// PSETEX key milliseconds value
/// ```
fn psetex(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    setex_generic(ctx, args, "psetex", true)
}

/// ```text
/// GETSET key value
/// ```
fn getset(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.bytes()?;
    let value = args.bytes()?;
    let old = ctx.read_string(key)?;
    ctx.set(key, Value::String(value.into()), None);
    ctx.notify(notify::STRING, "set", key);
    ctx.propagate(vec![Bytes::from_static(b"SET"), key.clone(), value.clone()]);
    Ok(old.map_or(Frame::Null, Frame::Bulk))
}

/// ```text
/// GETDEL key
/// ```
fn getdel(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.bytes()?;
    let Some(old) = ctx.read_string(key)? else {
        return Ok(Frame::Null);
    };
    ctx.delete(key);
    ctx.notify(notify::GENERIC, "del", key);
    ctx.propagate(vec![Bytes::from_static(b"DEL"), key.clone()]);
    Ok(Frame::Bulk(old))
}

/// ```text
/// GETEX key [EX seconds | PX milliseconds | EXAT unix-time-seconds |
///   PXAT unix-time-milliseconds | PERSIST]
/// ```
fn getex(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.bytes()?;
    let o = ExtArgs::parse(args, false)?;
    let Some(value) = ctx.read_string(key)? else {
        return Ok(Frame::Null);
    };
    let expiry = o.expiry()?;
    let deadline = match expiry {
        Some(e) => Some(e.deadline(ctx.now, "getex")?),
        None => None,
    };
    match (expiry, deadline) {
        (Some(e), Some(at)) if e.absolute() && at <= ctx.now => {
            ctx.db().remove(key);
            ctx.modified(key);
            ctx.notify(notify::GENERIC, "del", key);
            let del = crate::node::deletion_command(ctx.state.config.lazyfree_lazy_expire());
            ctx.propagate(vec![del, key.clone()]);
        }
        (_, Some(at)) => {
            ctx.db().set_expire(key, Some(at));
            ctx.modified(key);
            ctx.notify(notify::GENERIC, "expire", key);
            ctx.propagate(vec![
                Bytes::from_static(b"PEXPIREAT"),
                key.clone(),
                Bytes::from(at.to_string()),
            ]);
        }
        _ if o.persist => {
            let had_ttl = ctx.db().raw(key).is_some_and(|e| e.expire_at().is_some());
            if had_ttl {
                ctx.db().set_expire(key, None);
                ctx.modified(key);
                ctx.notify(notify::GENERIC, "persist", key);
                ctx.propagate(vec![Bytes::from_static(b"PERSIST"), key.clone()]);
            }
        }
        _ => {}
    }
    Ok(Frame::Bulk(value))
}

/// ```text
/// MGET key [key ...]
/// ```
fn mget(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let mut out = Vec::new();
    for key in args.rest() {
        let v = match ctx.lookup(key).map(|e| &e.value) {
            Some(Value::String(s)) => Frame::Bulk(s.to_bytes()),
            _ => Frame::Null,
        };
        out.push(v);
    }
    Ok(Frame::Array(out))
}

/// The (key, value) pairs of MSET/MSETNX, or the arity error.
fn pairs<'a>(args: &mut Args<'a>, name: &str) -> Result<&'a [Bytes], CommandError> {
    let rest = args.rest();
    if !rest.len().is_multiple_of(2) {
        return Err(CommandError::WrongArity(name.into()));
    }
    Ok(rest)
}

/// ```text
/// MSET key value [key value ...]
/// ```
fn mset(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    for kv in pairs(args, "mset")?.chunks(2) {
        if let [k, v] = kv {
            ctx.set(k, Value::String(v.into()), None);
            ctx.notify(notify::STRING, "set", k);
        }
    }
    Ok(Frame::ok())
}

/// ```text
/// MSETNX key value [key value ...]
/// ```
fn msetnx(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let kvs = pairs(args, "msetnx")?;
    for kv in kvs.chunks(2) {
        if ctx.lookup_mut(&kv[0]).is_some() {
            return Ok(Frame::Integer(0));
        }
    }
    for kv in kvs.chunks(2) {
        if let [k, v] = kv {
            ctx.set(k, Value::String(v.into()), None);
            ctx.notify(notify::STRING, "set", k);
        }
    }
    Ok(Frame::Integer(1))
}

/// Stores a new string value at `key`, keeping its TTL if it exists (Redis's `dbOverwrite`),
/// or creating it without one. For a command that looked `key` up already (that lookup
/// touched it).
pub(crate) fn overwrite_string(ctx: &mut Ctx<'_>, key: &Bytes, value: Bytes) {
    match ctx.entry_again(key) {
        Some(entry) => {
            entry.value = Value::String(value.into());
            ctx.modified(key);
        }
        None => ctx.set(key, Value::String(value.into()), None),
    }
}

/// Redis's `incrDecrCommand`.
///
/// One lookup: an existing counter is changed in place (its TTL kept, as `dbOverwrite`), and
/// as an integer before and after it keeps the accounted size of an integer.
fn incr_decr(ctx: &mut Ctx<'_>, key: &Bytes, by: i64) -> CmdResult {
    let mut digits = itoa::Buffer::new();
    match ctx.lookup_mut(key).map(|e| &mut e.value) {
        Some(Value::String(s)) => {
            let Some(new) = super::parse_i64(s.as_bytes())?.checked_add(by) else {
                return Err(CommandError::Overflow);
            };
            *s = StringValue::from_slice(digits.format(new).as_bytes());
            ctx.modified_measured(key);
            ctx.notify(notify::STRING, "incrby", key);
            Ok(Frame::Integer(new))
        }
        Some(_) => Err(CommandError::WrongType),
        None => {
            let value = StringValue::from_slice(digits.format(by).as_bytes());
            ctx.set(key, Value::String(value), None);
            ctx.notify(notify::STRING, "incrby", key);
            Ok(Frame::Integer(by))
        }
    }
}

/// ```text
/// INCR key
/// ```
fn incr(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.bytes()?;
    incr_decr(ctx, key, 1)
}

/// ```text
/// DECR key
/// ```
fn decr(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.bytes()?;
    incr_decr(ctx, key, -1)
}

/// ```text
/// INCRBY key increment
/// ```
fn incrby(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.bytes()?;
    let by = args.i64()?;
    incr_decr(ctx, key, by)
}

/// ```text
/// DECRBY key decrement
/// ```
fn decrby(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.bytes()?;
    let by = args.i64()?;
    if by == i64::MIN {
        return Err(CommandError::err("decrement would overflow"));
    }
    incr_decr(ctx, key, -by)
}

/// ```text
/// INCRBYFLOAT key increment
/// ```
fn incrbyfloat(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.bytes()?;
    let by = args.bytes()?;
    let current = ctx.get_string(key)?;
    let current = current.unwrap_or_else(|| Bytes::from_static(b"0"));
    let new = match ldouble::incr_text(&current, by) {
        Ok(s) => Bytes::from(s),
        Err(true) => return Err(CommandError::NotFloat),
        Err(false) => return Err(CommandError::err("increment would produce NaN or Infinity")),
    };
    overwrite_string(ctx, key, new.clone());
    ctx.notify(notify::STRING, "incrbyfloat", key);
    ctx.propagate(vec![
        Bytes::from_static(b"SET"),
        key.clone(),
        new.clone(),
        Bytes::from_static(b"KEEPTTL"),
    ]);
    Ok(Frame::Bulk(new))
}

/// Redis's `checkStringLength`, against the live `proto-max-bulk-len` (CONFIG SET applies).
fn check_string_length(ctx: &Ctx<'_>, size: u64, append: u64) -> Result<(), CommandError> {
    let max = ctx.node.config.proto_max_bulk_len();
    if size.saturating_add(append) > max {
        return Err(CommandError::err(
            "string exceeds maximum allowed size (proto-max-bulk-len)",
        ));
    }
    Ok(())
}

/// ```text
/// APPEND key value
/// ```
fn append(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.bytes()?;
    let value = args.bytes()?;
    let len = match ctx.get_string(key)? {
        None => {
            let len = value.len();
            ctx.set(key, Value::String(value.into()), None);
            len
        }
        Some(old) => {
            check_string_length(ctx, old.len() as u64, value.len() as u64)?;
            let mut buf = BytesMut::with_capacity(old.len() + value.len());
            buf.extend_from_slice(&old);
            buf.extend_from_slice(value);
            let len = buf.len();
            overwrite_string(ctx, key, buf.freeze());
            len
        }
    };
    ctx.notify(notify::STRING, "append", key);
    Ok(Frame::Integer(len as i64))
}

/// ```text
/// STRLEN key
/// ```
fn strlen(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.bytes()?;
    let len = ctx.get_string(key)?.map_or(0, |s| s.len());
    Ok(Frame::Integer(len as i64))
}

/// ```text
/// GETRANGE key start end
/// SUBSTR key start end
/// ```
fn getrange(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.bytes()?;
    let mut start = args.i64()?;
    let mut end = args.i64()?;
    let empty = Frame::Bulk(Bytes::new());
    let Some(s) = ctx.get_string(key)? else {
        return Ok(empty);
    };
    let len = s.len() as i64;
    if start < 0 && end < 0 && start > end {
        return Ok(empty);
    }
    if start < 0 {
        start = start.saturating_add(len);
    }
    if end < 0 {
        end = end.saturating_add(len);
    }
    start = start.max(0);
    end = end.max(0);
    if end >= len {
        end = len - 1;
    }
    if start > end || len == 0 {
        return Ok(empty);
    }
    Ok(Frame::Bulk(s.slice(start as usize..=end as usize)))
}

/// ```text
/// SETRANGE key offset value
/// ```
fn setrange(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.bytes()?;
    let offset = args.i64()?;
    let value = args.bytes()?;
    if offset < 0 {
        return Err(CommandError::err("offset is out of range"));
    }
    let offset = offset as u64;
    let old = ctx.get_string(key)?;
    let exists = old.is_some();
    let old = old.unwrap_or_default();
    if value.is_empty() {
        return Ok(Frame::Integer(old.len() as i64));
    }
    check_string_length(ctx, offset, value.len() as u64)?;
    let offset = offset as usize;
    let mut buf = BytesMut::from(&old[..]);
    let needed = offset + value.len();
    if buf.len() < needed {
        buf.resize(needed, 0);
    }
    buf[offset..needed].copy_from_slice(value);
    let len = buf.len();
    if exists {
        overwrite_string(ctx, key, buf.freeze());
    } else {
        ctx.set(key, Value::String(buf.freeze().into()), None);
    }
    ctx.notify(notify::STRING, "setrange", key);
    Ok(Frame::Integer(len as i64))
}

/// ```text
/// LCS key1 key2 [LEN] [IDX] [MINMATCHLEN min-match-len] [WITHMATCHLEN]
/// ```
///
/// Redis's `lcsCommand`: the classic dynamic-programming table (bounded by
/// `proto-max-bulk-len`, as Redis bounds its transient memory), then one walk back from the
/// end that rebuilds the subsequence and, with `IDX`, its matching ranges, last first.
fn lcs(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let ka = args.bytes()?;
    let kb = args.bytes()?;
    let string_or_empty = |ctx: &mut Ctx<'_>, key: &Bytes| match ctx.lookup(key).map(|e| &e.value) {
        None => Ok(Bytes::new()),
        Some(Value::String(s)) => Ok(s.to_bytes()),
        Some(_) => Err(CommandError::err(
            "The specified keys must contain string values",
        )),
    };
    let a = string_or_empty(ctx, ka);
    let b = string_or_empty(ctx, kb);
    let (a, b) = (a?, b?);
    let (mut getlen, mut getidx, mut withmatchlen, mut minmatchlen) = (false, false, false, 0u64);
    while let Some(opt) = args.next() {
        if opt.eq_ignore_ascii_case(b"idx") {
            getidx = true;
        } else if opt.eq_ignore_ascii_case(b"len") {
            getlen = true;
        } else if opt.eq_ignore_ascii_case(b"withmatchlen") {
            withmatchlen = true;
        } else if opt.eq_ignore_ascii_case(b"minmatchlen") && !args.is_empty() {
            minmatchlen = args.i64()?.max(0) as u64;
        } else {
            return Err(CommandError::Syntax);
        }
    }
    if getlen && getidx {
        return Err(CommandError::err(
            "If you want both the length and indexes, please just use IDX.",
        ));
    }
    if a.len() >= u32::MAX as usize - 1 || b.len() >= u32::MAX as usize - 1 {
        return Err(CommandError::err("String too long for LCS"));
    }
    let (alen, blen) = (a.len(), b.len());
    let cells = (alen + 1) as u64 * (blen + 1) as u64;
    let max = ctx.node.config.proto_max_bulk_len();
    if cells.saturating_mul(4) > max {
        return Err(CommandError::err(
            "Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len",
        ));
    }
    let mut table: Vec<u32> = Vec::new();
    if table.try_reserve_exact(cells as usize).is_err() {
        return Err(CommandError::err(
            "Insufficient memory, failed allocating transient memory for LCS",
        ));
    }
    table.resize(cells as usize, 0);
    let width = blen + 1;
    let at = |i: usize, j: usize| j + i * width;
    for i in 1..=alen {
        for j in 1..=blen {
            table[at(i, j)] = if a[i - 1] == b[j - 1] {
                table[at(i - 1, j - 1)] + 1
            } else {
                table[at(i - 1, j)].max(table[at(i, j - 1)])
            };
        }
    }
    let total = table[at(alen, blen)];
    let compute = getidx || !getlen;
    let mut result = vec![0u8; if compute { total as usize } else { 0 }];
    let mut matches = Vec::new();
    // `alen` as the start means "no range open".
    let (mut a_start, mut a_end, mut b_start, mut b_end) = (alen, 0usize, 0usize, 0usize);
    let (mut i, mut j, mut idx) = (alen, blen, total as usize);
    while compute && i > 0 && j > 0 {
        let mut emit = false;
        if a[i - 1] == b[j - 1] {
            result[idx - 1] = a[i - 1];
            if a_start == alen {
                (a_start, a_end, b_start, b_end) = (i - 1, i - 1, j - 1, j - 1);
            } else if a_start == i && b_start == j {
                a_start -= 1;
                b_start -= 1;
            } else {
                emit = true;
            }
            if a_start == 0 || b_start == 0 {
                emit = true;
            }
            idx -= 1;
            i -= 1;
            j -= 1;
        } else {
            if table[at(i - 1, j)] > table[at(i, j - 1)] {
                i -= 1;
            } else {
                j -= 1;
            }
            if a_start != alen {
                emit = true;
            }
        }
        let match_len = (a_end + 1).saturating_sub(a_start) as u64;
        if emit {
            if getidx && (minmatchlen == 0 || match_len >= minmatchlen) {
                let pair = |s: usize, e: usize| {
                    Frame::Array(vec![Frame::Integer(s as i64), Frame::Integer(e as i64)])
                };
                let mut entry = vec![pair(a_start, a_end), pair(b_start, b_end)];
                if withmatchlen {
                    entry.push(Frame::Integer(match_len as i64));
                }
                matches.push(Frame::Array(entry));
            }
            a_start = alen;
        }
    }
    Ok(if getidx {
        Frame::Map(vec![
            (Frame::bulk("matches"), Frame::Array(matches)),
            (Frame::bulk("len"), Frame::Integer(i64::from(total))),
        ])
    } else if getlen {
        Frame::Integer(i64::from(total))
    } else {
        Frame::Bulk(Bytes::from(result))
    })
}
