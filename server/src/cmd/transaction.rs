//! Transaction commands: MULTI, EXEC, DISCARD, WATCH, UNWATCH. Queueing itself is a
//! connection mode (see [`crate::transaction::admit`]); `EXEC` runs the queue here, atomically
//! under the one state lock.

use super::{Args, CmdResult, Command, CommandError, Ctx};
use crate::transaction::{self, EXECABORT};
use locksmith_resp::Frame;

/// The transaction family's table.
pub(crate) static COMMANDS: &[Command] = &[
    Command::new("multi", multi),
    Command::new("exec", exec),
    Command::new("discard", discard),
    Command::new("watch", watch),
    Command::new("unwatch", unwatch),
];

/// ```text
/// MULTI
/// ```
fn multi(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    if ctx.client.multi.is_some() {
        // Not a queueing error: the transaction stays valid (Redis's multiCommand).
        return Err(CommandError::err("MULTI calls can not be nested"));
    }
    ctx.client.multi = Some(Default::default());
    ctx.client.handle.update(|info| {
        info.multi = 0;
        info.set_flag('x', true);
    });
    Ok(Frame::ok())
}

/// ```text
/// EXEC
/// ```
///
/// Runs the queued commands in order and replies with their replies (errors included, one per
/// command); `EXECABORT` when a command was refused while queueing; a null array when a
/// WATCHed key was written or expired since it was watched.
fn exec(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    let Some(multi) = ctx.client.multi.take() else {
        return Err(CommandError::err("EXEC without MULTI"));
    };
    let id = ctx.client.id();
    let invalidated = transaction::exec_invalidated(ctx.state, id, ctx.now);
    // EXEC always ends the transaction and its watches, whatever the outcome.
    transaction::discard(ctx.state, ctx.client);
    crate::cluster::check_exec(ctx.node, ctx.client.modes.cluster_readonly, &multi.queue)?;
    if multi.aborted {
        return Err(CommandError::Raw(EXECABORT.into()));
    }
    if invalidated {
        return Ok(Frame::NullArray);
    }
    let propagated_before = ctx.effects.propagate.len();
    ctx.client.origin.in_exec = true;
    if ctx.node.config.commandlog() {
        // Valkey writes the reply's header before the commands run, and counts each
        // command's reply into the transaction's so far (its large-reply log).
        let header = format!("*{}\r\n", multi.queue.len());
        ctx.client.count_reply_len(header.len());
    }
    let mut replies = Vec::with_capacity(multi.queue.len());
    // Nothing runs between two queued commands: one starts when the last one ended (the
    // first reads the clock: what came before EXEC may have waited, as on a replica's link).
    ctx.client.command.end_tick = None;
    let user = super::acl::user_of(ctx.node, ctx.client).clone();
    for (resolved, argv) in &multi.queue {
        // Checked again: the rules may have changed since the command was queued.
        if let Err(denied) = super::acl::check(&user, resolved, argv) {
            super::acl::log_denial(ctx, resolved, argv, denied, crate::acl::Context::Multi);
            let error = super::acl::exec_noperm_error(denied);
            if ctx.node.config.commandlog() {
                ctx.client.count_reply_bytes(&error);
            }
            replies.push(error);
            continue;
        }
        ctx.client.command.start_tick = ctx.client.command.end_tick.take();
        replies.push(super::call(
            *resolved,
            ctx.state,
            ctx.node,
            ctx.client,
            argv,
            ctx.now,
            ctx.effects,
        ));
    }
    ctx.client.origin.in_exec = false;
    // Replicas get several writes as one MULTI/EXEC block, as Redis propagates them.
    ctx.effects
        .wrap_in_transaction(propagated_before, ctx.client.db);
    Ok(Frame::Array(replies))
}

/// ```text
/// DISCARD
/// ```
fn discard(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    if ctx.client.multi.is_none() {
        return Err(CommandError::err("DISCARD without MULTI"));
    }
    transaction::discard(ctx.state, ctx.client);
    Ok(Frame::ok())
}

/// ```text
/// WATCH key [key ...]
/// ```
fn watch(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    if ctx.client.multi.is_some() {
        // Refused without failing the transaction, as Redis's watchCommand.
        return Err(CommandError::err("WATCH inside MULTI is not allowed"));
    }
    let (id, db, now) = (ctx.client.id(), ctx.client.db, ctx.now);
    for key in args.rest() {
        let expired = transaction::key_is_expired(ctx.state, db, key, now);
        ctx.state.watches.watch(id, db, key, expired);
    }
    Ok(Frame::ok())
}

/// ```text
/// UNWATCH
/// ```
fn unwatch(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    let id = ctx.client.id();
    ctx.state.watches.unwatch_all(id);
    ctx.state.watches.clear_dirty(id);
    ctx.client.handle.update(|info| info.set_flag('d', false));
    Ok(Frame::ok())
}
