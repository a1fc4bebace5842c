//! Key expiry commands: EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT, TTL, PTTL, EXPIRETIME,
//! PEXPIRETIME, PERSIST.

use super::{Args, CmdResult, Command, CommandError, Ctx};
use crate::notify;
use bytes::Bytes;
use locksmith_resp::Frame;

/// The expiry family's table.
pub(crate) static COMMANDS: &[Command] = &[
    Command::new("expire", expire),
    Command::new("pexpire", pexpire),
    Command::new("expireat", expireat),
    Command::new("pexpireat", pexpireat),
    Command::new("ttl", ttl),
    Command::new("pttl", pttl),
    Command::new("expiretime", expiretime),
    Command::new("pexpiretime", pexpiretime),
    Command::new("persist", persist),
];

fn expire(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let now = ctx.now;
    expire_generic(ctx, args, "expire", now, true)
}

fn pexpire(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let now = ctx.now;
    expire_generic(ctx, args, "pexpire", now, false)
}

fn expireat(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    expire_generic(ctx, args, "expireat", 0, true)
}

fn pexpireat(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    expire_generic(ctx, args, "pexpireat", 0, false)
}

/// ```text
/// EXPIRE key seconds [NX | XX | GT | LT]   (and PEXPIRE, EXPIREAT, PEXPIREAT)
/// ```
/// Redis's `expireGenericCommand`: options first, then the time, then the key.
fn expire_generic(
    ctx: &mut Ctx<'_>,
    args: &mut Args<'_>,
    name: &str,
    basetime: u64,
    seconds: bool,
) -> CmdResult {
    let key = args.bytes()?;
    let param = args.bytes()?;
    let options = args.rest();
    let (mut nx, mut xx, mut gt, mut lt) = (false, false, false, false);
    for opt in options {
        match opt.to_ascii_lowercase().as_slice() {
            b"nx" => nx = true,
            b"xx" => xx = true,
            b"gt" => gt = true,
            b"lt" => lt = true,
            _ => {
                return Err(CommandError::err(format!(
                    "Unsupported option {}",
                    super::lossy(opt, usize::MAX)
                )))
            }
        }
    }
    if nx && (xx || gt || lt) {
        return Err(CommandError::err(
            "NX and XX, GT or LT options at the same time are not compatible",
        ));
    }
    if gt && lt {
        return Err(CommandError::err(
            "GT and LT options at the same time are not compatible",
        ));
    }
    let mut when = super::parse_i64(param)?;
    let invalid = || CommandError::err(format!("invalid expire time in '{name}' command"));
    if seconds {
        when = when.checked_mul(1000).ok_or_else(invalid)?;
    }
    let basetime = basetime as i64;
    if when > i64::MAX - basetime {
        return Err(invalid());
    }
    when += basetime;
    let Some(current) = ctx.lookup_mut(key).map(|e| e.expire_at()) else {
        return Ok(Frame::Integer(0));
    };
    if nx || xx || gt || lt {
        let current = current.map(|c| c as i64);
        if nx && current.is_some() {
            return Ok(Frame::Integer(0));
        }
        if xx && current.is_none() {
            return Ok(Frame::Integer(0));
        }
        if gt && current.is_none_or(|c| when <= c) {
            return Ok(Frame::Integer(0));
        }
        if lt && current.is_some_and(|c| when >= c) {
            return Ok(Frame::Integer(0));
        }
    }
    if when <= ctx.now as i64 {
        ctx.db().remove(key);
        ctx.modified(key);
        ctx.notify(notify::GENERIC, "del", key);
        let del = crate::node::deletion_command(ctx.state.config.lazyfree_lazy_expire());
        ctx.propagate(vec![del, key.clone()]);
        return Ok(Frame::Integer(1));
    }
    ctx.db().set_expire(key, Some(when as u64));
    ctx.modified(key);
    ctx.notify(notify::GENERIC, "expire", key);
    if ctx.propagating() {
        let mut argv = vec![
            Bytes::from_static(b"PEXPIREAT"),
            key.clone(),
            Bytes::from(when.to_string()),
        ];
        argv.extend(options.iter().cloned());
        ctx.propagate(argv);
    }
    Ok(Frame::Integer(1))
}

/// The deadline of `key` without touching its access time: `None` if the key is missing,
/// `Some(None)` if it has no TTL.
fn deadline(ctx: &mut Ctx<'_>, key: &Bytes) -> Option<Option<u64>> {
    ctx.find(key, false).map(|e| e.expire_at())
}

/// Redis's `ttlGenericCommand`.
fn ttl_generic(ctx: &mut Ctx<'_>, args: &mut Args<'_>, ms: bool, absolute: bool) -> CmdResult {
    let key = args.bytes()?;
    let reply = match deadline(ctx, key) {
        None => -2,
        Some(None) => -1,
        Some(Some(at)) => {
            let t = if absolute {
                at as i64
            } else {
                (at as i64 - ctx.now as i64).max(0)
            };
            if ms {
                t
            } else {
                (t + 500) / 1000
            }
        }
    };
    Ok(Frame::Integer(reply))
}

/// ```text
/// TTL key
/// ```
fn ttl(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    ttl_generic(ctx, args, false, false)
}

/// ```text
/// PTTL key
/// ```
fn pttl(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    ttl_generic(ctx, args, true, false)
}

/// ```text
/// EXPIRETIME key
/// ```
fn expiretime(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    ttl_generic(ctx, args, false, true)
}

/// ```text
/// PEXPIRETIME key
/// ```
fn pexpiretime(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    ttl_generic(ctx, args, true, true)
}

/// ```text
/// PERSIST key
/// ```
fn persist(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.bytes()?;
    let has_ttl = ctx.lookup_mut(key).is_some_and(|e| e.expire_at().is_some());
    if !has_ttl {
        return Ok(Frame::Integer(0));
    }
    ctx.db().set_expire(key, None);
    ctx.modified(key);
    ctx.notify(notify::GENERIC, "persist", key);
    Ok(Frame::Integer(1))
}
