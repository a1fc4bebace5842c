//! Pub/sub commands: SUBSCRIBE, UNSUBSCRIBE, PSUBSCRIBE, PUNSUBSCRIBE, SSUBSCRIBE,
//! SUNSUBSCRIBE, PUBLISH, SPUBLISH and PUBSUB CHANNELS|NUMSUB|NUMPAT|SHARDCHANNELS|SHARDNUMSUB.
//!
//! Subscribe confirmations are pushes (arrays in RESP2), one per channel, as Redis sends them;
//! every one but the last goes through the client's own outbox, which the connection writes
//! before the command's reply. Published messages are recorded in the effects and delivered
//! after the command, script or `EXEC` (see [`crate::pubsub`]).

use super::{flags::*, Args, CmdResult, Command, CommandError, Ctx};
use crate::pubsub::{self, Kind};
use bytes::Bytes;
use locksmith_resp::Frame;

/// The pub/sub family's table.
pub(crate) static COMMANDS: &[Command] = &[
    Command::new("subscribe", subscribe),
    Command::new("unsubscribe", unsubscribe),
    Command::new("psubscribe", psubscribe),
    Command::new("punsubscribe", punsubscribe),
    Command::new("ssubscribe", ssubscribe),
    Command::new("sunsubscribe", sunsubscribe),
    Command::new("publish", publish).extra_flags(MAY_REPLICATE),
    Command::new("spublish", spublish).extra_flags(MAY_REPLICATE),
    Command::new("pubsub", pubsub_help).subs(PUBSUB_SUBCOMMANDS),
];

static PUBSUB_SUBCOMMANDS: &[Command] = &[
    Command::new("channels", pubsub_channels),
    Command::new("numsub", pubsub_numsub),
    Command::new("numpat", pubsub_numpat),
    Command::new("shardchannels", pubsub_shardchannels),
    Command::new("shardnumsub", pubsub_shardnumsub),
    Command::new("help", pubsub_help),
];

/// `[kind, name, count]` as a push (an array in RESP2).
fn confirmation(kind: &'static str, name: Frame, count: usize) -> Frame {
    Frame::Push(vec![
        Frame::Bulk(Bytes::from_static(kind.as_bytes())),
        name,
        Frame::Integer(count as i64),
    ])
}

/// Sends all confirmations but the last ahead of the reply (through the client's outbox,
/// written before the reply) and returns the last as the reply.
fn reply_many(ctx: &mut Ctx<'_>, mut frames: Vec<Frame>) -> Frame {
    let last = frames.pop().unwrap_or(Frame::Null);
    let commandlog = ctx.node.config.commandlog();
    for frame in frames {
        if commandlog {
            // Written for this command: Valkey's large-reply log counts them into its reply.
            ctx.client.count_reply_bytes(&frame);
        }
        let size = pubsub::frame_size(&frame);
        ctx.client.handle.outbox.send(frame, size);
    }
    last
}

/// The count a confirmation shows: shard subscriptions for the S commands, channels plus
/// patterns otherwise (Redis counts them apart).
fn shown_count(ctx: &Ctx<'_>, kind: Kind) -> usize {
    let (channels, patterns, shard) = ctx.state.pubsub.counts(ctx.client.id());
    match kind {
        Kind::Shard => shard,
        _ => channels + patterns,
    }
}

/// Brings the client's subscription count and `CLIENT LIST` fields up to date.
fn refresh(ctx: &mut Ctx<'_>) {
    let counts = ctx.state.pubsub.counts(ctx.client.id());
    ctx.client.subscriptions = counts.0 + counts.1 + counts.2;
    pubsub::show_counts(&ctx.client.handle, counts);
}

fn subscribe_to(ctx: &mut Ctx<'_>, args: &mut Args<'_>, kind: Kind, reply: &'static str) -> Frame {
    let mut frames = Vec::new();
    for name in args.rest() {
        ctx.state.pubsub.subscribe(&ctx.client.handle, kind, name);
        frames.push(confirmation(
            reply,
            Frame::Bulk(name.clone()),
            shown_count(ctx, kind),
        ));
    }
    refresh(ctx);
    reply_many(ctx, frames)
}

fn unsubscribe_from(
    ctx: &mut Ctx<'_>,
    args: &mut Args<'_>,
    kind: Kind,
    reply: &'static str,
) -> Frame {
    let id = ctx.client.id();
    let names: Vec<Bytes> = if args.is_empty() {
        ctx.state.pubsub.subscriptions(id, kind)
    } else {
        args.rest().to_vec()
    };
    let mut frames = Vec::new();
    for name in &names {
        ctx.state.pubsub.unsubscribe(id, kind, name);
        frames.push(confirmation(
            reply,
            Frame::Bulk(name.clone()),
            shown_count(ctx, kind),
        ));
    }
    if frames.is_empty() {
        // Nothing to unsubscribe from: one reply with a null name (Redis's behaviour).
        frames.push(confirmation(reply, Frame::Null, shown_count(ctx, kind)));
    }
    refresh(ctx);
    reply_many(ctx, frames)
}

/// ```text
/// SUBSCRIBE channel [channel ...]
/// ```
fn subscribe(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    Ok(subscribe_to(ctx, args, Kind::Channel, "subscribe"))
}

/// ```text
/// UNSUBSCRIBE [channel [channel ...]]
/// ```
fn unsubscribe(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    Ok(unsubscribe_from(ctx, args, Kind::Channel, "unsubscribe"))
}

/// ```text
/// PSUBSCRIBE pattern [pattern ...]
/// ```
fn psubscribe(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    Ok(subscribe_to(ctx, args, Kind::Pattern, "psubscribe"))
}

/// ```text
/// PUNSUBSCRIBE [pattern [pattern ...]]
/// ```
fn punsubscribe(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    Ok(unsubscribe_from(ctx, args, Kind::Pattern, "punsubscribe"))
}

/// ```text
/// SSUBSCRIBE shardchannel [shardchannel ...]
/// ```
fn ssubscribe(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    if ctx.client.origin.in_exec || ctx.client.origin.in_script {
        // Redis refuses it for clients that may not block (inside EXEC).
        return Err(CommandError::err(
            "SSUBSCRIBE isn't allowed for a DENY BLOCKING client",
        ));
    }
    Ok(subscribe_to(ctx, args, Kind::Shard, "ssubscribe"))
}

/// ```text
/// SUNSUBSCRIBE [shardchannel [shardchannel ...]]
/// ```
fn sunsubscribe(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    Ok(unsubscribe_from(ctx, args, Kind::Shard, "sunsubscribe"))
}

/// ```text
/// PUBLISH channel message
/// ```
///
/// Replies with the number of subscriptions that receive the message; the message itself is
/// delivered once the command (or the script or `EXEC` around it) finished.
fn publish(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let channel = args.bytes()?;
    let message = args.bytes()?;
    let receivers = ctx.state.pubsub.receivers(channel);
    let argv = args.argv().to_vec();
    ctx.effects
        .publishes
        .push((channel.clone(), message.clone()));
    // Replicas deliver it to their own subscribers (Redis forces its propagation); in
    // cluster mode every node gets it over the cluster bus instead.
    if ctx.node.cluster.get().is_none() {
        ctx.propagate(argv);
    }
    Ok(Frame::Integer(receivers as i64))
}

/// ```text
/// SPUBLISH shardchannel message
/// ```
fn spublish(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let channel = args.bytes()?;
    let message = args.bytes()?;
    let receivers = ctx.state.pubsub.shard_receivers(channel);
    let argv = args.argv().to_vec();
    ctx.effects
        .shard_publishes
        .push((channel.clone(), message.clone()));
    ctx.propagate(argv);
    Ok(Frame::Integer(receivers as i64))
}

/// The optional pattern of `PUBSUB CHANNELS|SHARDCHANNELS`; more arguments are refused with
/// the subcommand-syntax error Redis gives.
fn optional_pattern(args: &mut Args<'_>) -> Result<Option<Bytes>, CommandError> {
    if args.remaining() > 1 {
        let sub = args
            .argv()
            .get(1)
            .map(|s| super::lossy(s, 128))
            .unwrap_or_default();
        return Err(CommandError::err(format!(
            "unknown subcommand or wrong number of arguments for '{sub}'. Try PUBSUB HELP."
        )));
    }
    Ok(args.next().cloned())
}

/// ```text
/// PUBSUB CHANNELS [pattern]
/// ```
fn pubsub_channels(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let pattern = optional_pattern(args)?;
    let names = ctx.state.pubsub.active(Kind::Channel, pattern.as_deref());
    Ok(Frame::Array(names.into_iter().map(Frame::Bulk).collect()))
}

/// ```text
/// PUBSUB SHARDCHANNELS [pattern]
/// ```
fn pubsub_shardchannels(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let pattern = optional_pattern(args)?;
    let names = ctx.state.pubsub.active(Kind::Shard, pattern.as_deref());
    Ok(Frame::Array(names.into_iter().map(Frame::Bulk).collect()))
}

fn numsub(ctx: &mut Ctx<'_>, args: &mut Args<'_>, kind: Kind) -> Frame {
    let mut out = Vec::new();
    for name in args.rest() {
        out.push(Frame::Bulk(name.clone()));
        out.push(Frame::Integer(ctx.state.pubsub.numsub(kind, name) as i64));
    }
    Frame::Array(out)
}

/// ```text
/// PUBSUB NUMSUB [channel [channel ...]]
/// ```
fn pubsub_numsub(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    Ok(numsub(ctx, args, Kind::Channel))
}

/// ```text
/// PUBSUB SHARDNUMSUB [shardchannel [shardchannel ...]]
/// ```
fn pubsub_shardnumsub(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    Ok(numsub(ctx, args, Kind::Shard))
}

/// ```text
/// PUBSUB NUMPAT
/// ```
fn pubsub_numpat(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    Ok(Frame::Integer(ctx.state.pubsub.numpat() as i64))
}

/// ```text
/// PUBSUB HELP
/// ```
fn pubsub_help(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    Ok(super::client::help_reply(ctx, "PUBSUB"))
}

/// What `RESET` does to the pub/sub side: drops every subscription without confirmations.
pub(crate) fn reset(ctx: &mut Ctx<'_>) {
    ctx.state.pubsub.remove_client(ctx.client.id());
    refresh(ctx);
}
