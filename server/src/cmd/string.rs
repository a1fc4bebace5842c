//! String commands: GET, SET.

use super::{flags::*, Args, CmdResult, CommandError, CommandSpec, Ctx};
use crate::db::Value;
use crate::notify;
use bytes::Bytes;
use locksmith_resp::Frame;

/// The string family's table.
pub(crate) static COMMANDS: &[CommandSpec] = &[
    CommandSpec::new("get", 2, get)
        .flags(READONLY | FAST)
        .keys(1, 1, 1)
        .doc("string", "Returns the string value of a key."),
    CommandSpec::new("set", -3, set)
        .flags(WRITE | DENYOOM)
        .keys(1, 1, 1)
        .doc("string", "Sets the string value of a key, ignoring its type. The key is created if it doesn't exist."),
];

/// ```text
/// GET key
/// ```
fn get(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.bytes()?;
    Ok(ctx.get_string(&key)?.map_or(Frame::Null, Frame::Bulk))
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
    /// `KEEPTTL`
    KeepTtl,
}

impl Expiry {
    /// The absolute deadline in ms for this expiry given at `now`, or Redis's
    /// `invalid expire time in '<cmd>' command` error.
    pub(crate) fn deadline(self, now: u64, cmd: &str) -> Result<Option<u64>, CommandError> {
        let invalid = || CommandError::err(format!("invalid expire time in '{cmd}' command"));
        let (value, unit_ms, relative) = match self {
            Expiry::Ex(v) => (v, 1000, true),
            Expiry::Px(v) => (v, 1, true),
            Expiry::ExAt(v) => (v, 1000, false),
            Expiry::PxAt(v) => (v, 1, false),
            Expiry::KeepTtl => return Ok(None),
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
        Ok(Some(at as u64))
    }
}

/// ```text
/// SET key value [NX | XX] [GET] [EX seconds | PX milliseconds |
///   EXAT unix-time-seconds | PXAT unix-time-milliseconds | KEEPTTL]
/// ```
fn set(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.bytes()?;
    let value = args.bytes()?;
    let (mut nx, mut xx, mut get) = (false, false, false);
    let mut expiry: Option<Expiry> = None;
    while let Some(opt) = args.next() {
        let opt = opt.to_ascii_uppercase();
        let mut timed = |kind: fn(i64) -> Expiry, args: &mut Args<'_>| {
            if expiry.is_some() {
                return Err(CommandError::Syntax);
            }
            let v = args.next().ok_or(CommandError::Syntax)?;
            expiry = Some(kind(super::parse_i64(v)?));
            Ok(())
        };
        match opt.as_slice() {
            b"NX" if !xx => nx = true,
            b"XX" if !nx => xx = true,
            b"GET" => get = true,
            b"EX" => timed(Expiry::Ex, args)?,
            b"PX" => timed(Expiry::Px, args)?,
            b"EXAT" => timed(Expiry::ExAt, args)?,
            b"PXAT" => timed(Expiry::PxAt, args)?,
            b"KEEPTTL" if expiry.is_none() => expiry = Some(Expiry::KeepTtl),
            _ => return Err(CommandError::Syntax),
        }
    }
    let deadline = match expiry {
        Some(e) => e.deadline(ctx.now, "set")?,
        None => None,
    };
    let existing = ctx.lookup(&key).map(|e| (e.value.clone(), e.expire_at));
    let old = match &existing {
        Some((Value::String(s), _)) => Some(s.clone()),
        Some(_) if get => return Err(CommandError::WrongType),
        _ => None,
    };
    let reply = |old: Option<Bytes>| {
        if get {
            old.map_or(Frame::Null, Frame::Bulk)
        } else {
            Frame::ok()
        }
    };
    if (nx && existing.is_some()) || (xx && existing.is_none()) {
        return Ok(if get { reply(old) } else { Frame::Null });
    }
    let expire_at = match expiry {
        Some(Expiry::KeepTtl) => existing.and_then(|(_, at)| at),
        _ => deadline,
    };
    ctx.set(key.clone(), Value::String(value.clone()), expire_at);
    ctx.notify(notify::STRING, "set", &key);
    if let (Some(at), Some(e)) = (deadline, expiry) {
        ctx.notify(notify::GENERIC, "expire", &key);
        // Replicas get the absolute deadline, as Redis 7 rewrites EX/PX/EXAT to PXAT.
        if !matches!(e, Expiry::PxAt(_)) {
            let mut argv = vec![Bytes::from_static(b"SET"), key, value];
            argv.push(Bytes::from_static(b"PXAT"));
            argv.push(Bytes::from(at.to_string()));
            ctx.propagate(argv);
        }
    }
    Ok(reply(old))
}
