//! Generic key commands: DEL, UNLINK, EXISTS, TYPE.

use super::{flags::*, Args, CmdResult, CommandSpec, Ctx};
use crate::notify;
use locksmith_resp::Frame;

/// The generic family's table.
pub(crate) static COMMANDS: &[CommandSpec] = &[
    CommandSpec::new("del", -2, del)
        .flags(WRITE)
        .keys(1, -1, 1)
        .doc("generic", "Deletes one or more keys."),
    CommandSpec::new("unlink", -2, del)
        .flags(WRITE | FAST)
        .keys(1, -1, 1)
        .doc("generic", "Asynchronously deletes one or more keys."),
    CommandSpec::new("exists", -2, exists)
        .flags(READONLY | FAST)
        .keys(1, -1, 1)
        .doc("generic", "Determines whether one or more keys exist."),
    CommandSpec::new("type", 2, type_)
        .flags(READONLY | FAST)
        .keys(1, 1, 1)
        .doc("generic", "Determines the type of value stored at a key."),
];

/// ```text
/// DEL key [key ...]
/// UNLINK key [key ...]
/// ```
fn del(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let mut deleted = 0;
    for key in args.rest() {
        if ctx.delete(key) {
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
        if ctx.lookup(key).is_some() {
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
    let name = ctx.lookup(&key).map_or("none", |e| e.value.type_name());
    Ok(Frame::simple(name))
}
