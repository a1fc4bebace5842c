//! `LATENCY LATEST|HISTORY|RESET|GRAPH|DOCTOR|HISTOGRAM|HELP`: the latency monitor
//! ([`crate::latency`]) and the per-command latency histograms of [`crate::cmdstats`], in
//! Redis 7.0's shapes.

use super::client::help_reply;
use super::{bulk_str, lossy, Args, CmdResult, Command, CommandError, Ctx};
use crate::latency::DoctorInput;
use bytes::Bytes;
use locksmith_resp::Frame;

/// `LATENCY` and its subcommands.
pub(crate) static COMMANDS: &[Command] =
    &[Command::new("latency", latency).subs(LATENCY_SUBCOMMANDS)];

/// In Redis's `COMMAND INFO` order.
static LATENCY_SUBCOMMANDS: &[Command] = &[
    Command::new("help", latency_help),
    Command::new("latest", latency_latest),
    Command::new("histogram", latency_histogram),
    Command::new("history", latency_history),
    Command::new("doctor", latency_doctor),
    Command::new("graph", latency_graph),
    Command::new("reset", latency_reset),
];

/// `LATENCY` alone (the arity check answers first; kept for the table).
fn latency(_ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    Err(CommandError::WrongArity("latency".into()))
}

/// The node time in whole seconds.
fn now_s(ctx: &Ctx<'_>) -> u64 {
    ctx.node.clock.now_us() / 1_000_000
}

/// An integer reply of a count or a time.
fn integer(n: u64) -> Frame {
    Frame::Integer(i64::try_from(n).unwrap_or(i64::MAX))
}

/// ```text
/// LATENCY LATEST
/// ```
///
/// Per event: `[name, unix time of the latest sample, its latency, all-time maximum]`.
fn latency_latest(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    let events = ctx
        .state
        .latency
        .latest()
        .into_iter()
        .map(|(name, time, latency, max)| {
            Frame::Array(vec![
                bulk_str(name),
                integer(time),
                integer(latency),
                integer(max),
            ])
        })
        .collect();
    Ok(Frame::Array(events))
}

/// ```text
/// LATENCY HISTORY event
/// ```
///
/// `[unix time, latency]` pairs, oldest first; empty for an event never seen.
fn latency_history(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let event = args.bytes()?;
    let samples = ctx
        .state
        .latency
        .history(event)
        .into_iter()
        .map(|(time, latency)| Frame::Array(vec![integer(time), integer(latency)]))
        .collect();
    Ok(Frame::Array(samples))
}

/// ```text
/// LATENCY RESET [event [event ...]]
/// ```
///
/// Forgets the named events (any case), or all; replies how many were forgotten.
fn latency_reset(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let events = args.rest();
    let resets = if events.is_empty() {
        ctx.state.latency.reset(None)
    } else {
        events
            .iter()
            .map(|event| ctx.state.latency.reset(Some(event)))
            .sum()
    };
    Ok(integer(resets as u64))
}

/// ```text
/// LATENCY GRAPH event
/// ```
fn latency_graph(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let event = args.bytes()?;
    let now = now_s(ctx);
    match ctx.state.latency.graph(event, now) {
        Some(graph) => Ok(Frame::Verbatim {
            format: *b"txt",
            text: Bytes::from(graph),
        }),
        None => Err(CommandError::err(format!(
            "No samples available for event '{}'",
            lossy(event, event.len())
        ))),
    }
}

/// ```text
/// LATENCY DOCTOR
/// ```
fn latency_doctor(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    let config = &ctx.node.config;
    let input = DoctorInput {
        now: now_s(ctx),
        threshold_ms: config.latency_monitor_threshold_ms(),
        slowlog_log_slower_than: config.slowlog_log_slower_than(),
        hz: config.hz(),
    };
    Ok(Frame::Verbatim {
        format: *b"txt",
        text: Bytes::from(ctx.state.latency.doctor(input)),
    })
}

/// ```text
/// LATENCY HISTOGRAM [command [command ...]]
/// ```
///
/// A map from command name to `{calls, histogram_usec: {µs: cumulative calls}}` for every
/// command with timed calls, or for the named ones (a container name stands for its
/// subcommands; unknown names are skipped).
fn latency_histogram(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let names = args.rest();
    let stats = &ctx.state.cmdstats;
    let stat_indexes: Vec<u32> = if names.is_empty() {
        stats.timed_commands()
    } else {
        let compat = ctx.node.config.compat();
        names
            .iter()
            .flat_map(|name| stat_indexes_of(compat, name))
            .collect()
    };
    let entries = stat_indexes
        .into_iter()
        .filter_map(|stat| stats.latency_histogram(stat))
        .map(|h| {
            let histogram = h
                .ranges
                .into_iter()
                .map(|(us, count)| (integer(us), integer(count)))
                .collect();
            (
                bulk_str(h.name),
                Frame::Map(vec![
                    (bulk_str("calls"), integer(h.calls)),
                    (bulk_str("histogram_usec"), Frame::Map(histogram)),
                ]),
            )
        })
        .collect();
    Ok(Frame::Map(entries))
}

/// The statistics indexes `name` stands for in `LATENCY HISTOGRAM` (Redis's
/// `lookupCommandBySds`): a command, `container|sub`, or a container and its subcommands.
fn stat_indexes_of(compat: crate::compat::Compat, name: &Bytes) -> Vec<u32> {
    let mut parts = name.split(|&b| b == b'|');
    let (Some(first), second, None) = (parts.next(), parts.next(), parts.next()) else {
        return Vec::new();
    };
    let Some(spec) = super::lookup(compat, first) else {
        return Vec::new();
    };
    let container = Bytes::copy_from_slice(first);
    let resolve = |sub: &[u8]| {
        super::resolve_name(compat, &[container.clone(), Bytes::copy_from_slice(sub)])
            .map(|r| r.stat)
    };
    match second {
        Some(sub) if !spec.subcommands.is_empty() => resolve(sub).into_iter().collect(),
        Some(_) => Vec::new(),
        None => {
            let own = super::resolve_name(compat, std::slice::from_ref(&container)).map(|r| r.stat);
            own.into_iter()
                .chain(
                    spec.subcommands
                        .iter()
                        .filter_map(|s| resolve(s.name.as_bytes())),
                )
                .collect()
        }
    }
}

/// ```text
/// LATENCY HELP
/// ```
fn latency_help(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    Ok(help_reply(ctx, "LATENCY"))
}
