//! Redis's `call()`: the step every command takes to run ([`call`]), from a client, `EXEC`, a
//! script's `redis.call` or the replication link.

use super::*;
use crate::client::ClientState;
use crate::node::{Effects, Node, State};
use crate::slowlog::LogType;
use bytes::Bytes;
use locksmith_resp::Frame;

/// Runs one command for `client` under the state lock and returns its reply: [`call`] after
/// the lookup. For the replication link and blocked-client re-execution, which enter the
/// pipeline here (see [`crate::dispatch`]).
pub(crate) fn call_argv(
    state: &mut State,
    node: &Node,
    client: &mut ClientState,
    argv: &[Bytes],
    now: u64,
    effects: &mut Effects,
) -> Frame {
    match resolve(node.config.compat(), argv) {
        Ok(resolved) => call(resolved, state, node, client, argv, now, effects),
        Err(e) => e.into(),
    }
}

/// Redis's `call()`: the execution step every command takes, from a client
/// ([`crate::dispatch::Session::process`]), `EXEC`, a script's `redis.call` or the
/// replication link. Checks authentication and the read-only replica, feeds MONITOR, runs the
/// handler, counts the call, and propagates a write that changed data and did not propagate
/// explicitly as sent. Errors become error replies.
pub(crate) fn call(
    resolved @ Resolved {
        spec, first_arg, ..
    }: Resolved,
    state: &mut State,
    node: &Node,
    client: &mut ClientState,
    argv: &[Bytes],
    now: u64,
    effects: &mut Effects,
) -> Frame {
    if !client.authenticated && !spec.has(flags::NO_AUTH) {
        state.cmdstats.reject(resolved);
        return CommandError::NoAuth.into();
    }
    // A top-level command was checked by the pipeline's replica rules, and a transaction's
    // commands when EXEC was (Redis's `processCommand`); a script's are checked here, as
    // Redis's `scriptCall` does.
    if client.origin.in_script
        && spec.has(flags::WRITE)
        && state.repl.refuses_write_from(client, &state.config)
    {
        state.cmdstats.reject(resolved);
        return CommandError::Raw(crate::replication::READONLY_ERROR.into()).into();
    }
    let tracking_top = !client.origin.in_script && !client.origin.in_exec;
    if tracking_top && state.tracking.is_active() {
        crate::tracking::before_call(state, node, client);
    }
    let dirty_before = state.dirty;
    let propagated_before = effects.propagate.len();
    if state.repl.observer().is_some() && effects.client.is_none() {
        effects.client = Some(client.handle.clone());
    }
    state.stats.commands += 1;
    effects.command_now = Some(now);
    let db = client.db;
    let mut args = Args::new(argv, first_arg);
    // Every call is timed while the slow log or the latency monitor is on, as Redis times
    // every call; otherwise a sample of calls for `INFO commandstats` (see `cmdstats`). The
    // pipeline may have read the clock for this command already (and EXEC for the commands
    // it runs), so a pipelined command costs no extra reading. The commands a script runs
    // cannot reuse one (Lua runs between them): timing them would cost two readings each
    // (~9 % of a Redisson lock script), so they are timed only with `slowlog-log-slower-than
    // 0`, which logs every command anyway; otherwise the script's own call stands for them.
    // Administrative commands are always timed: they are rare, and `CONFIG SET` may turn the
    // slow log on, which Redis then applies to that very command.
    let given_start = client.command.start_tick.take();
    let watched = node.config.watch_calls_from_us() != u64::MAX
        && (!client.origin.in_script || node.config.slowlog_log_slower_than() == 0);
    let timed = watched
        || spec.has(flags::ADMIN)
        || (!client.origin.in_script && state.cmdstats.should_time(resolved));
    let started = timed.then(|| given_start.unwrap_or_else(|| node.clock.tick_us()));
    // CLIENT NO-TOUCH: the command's lookups leave access times alone, but TOUCH's (Redis
    // 7.2's `lookupKey`).
    let no_touch = client.modes.no_touch && resolved.top_name() != "touch";
    if no_touch {
        if let Some(db) = state.dbs.get_mut(client.db) {
            db.no_touch = true;
        }
    }
    let reply = {
        let mut ctx = Ctx {
            state,
            node,
            client,
            now,
            effects,
            write: spec.has(flags::WRITE),
        };
        match spec_of(&resolved) {
            Some(command) => (command.handler)(&mut ctx, &mut args),
            None => Err(CommandError::unknown_command(argv)),
        }
    };
    if no_touch {
        for db in state.dbs.iter_mut() {
            db.no_touch = false;
        }
    }
    // MONITOR sees the command once it ran, in the database it left selected (Redis's
    // `call()`); EVAL and FCALL show themselves before the commands they run, and a blocked
    // command served later is not shown again.
    if !client.origin.reprocessing
        && !spec.has(flags::SKIP_MONITOR | flags::ADMIN)
        && node.monitors.active()
    {
        let origin = if client.origin.in_script {
            crate::monitor::Origin::Lua
        } else {
            crate::monitor::Origin::Client(&client.handle)
        };
        node.monitors.feed(
            node.config.compat(),
            node.clock.now_us(),
            client.db,
            origin,
            argv,
        );
    }
    let failed = matches!(reply, Err(_) | Ok(Frame::Error(_)));
    let ended = started.map(|_| node.clock.tick_us());
    let elapsed_us = started.zip(ended).map(|(s, e)| e.saturating_sub(s));
    if !client.origin.in_script {
        client.command.end_tick = ended;
    }
    // A command that blocked is counted once, when it is served or times out (as Redis's
    // updateStatsOnUnblock does).
    if client.block.is_none() {
        state.cmdstats.record(resolved, elapsed_us, failed);
        client
            .handle
            .commands
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    } else {
        client.command.blocked_call_us = elapsed_us;
    }
    // Nothing more unless the slow log or the latency monitor wants this call: one
    // comparison, with the thresholds as they are now (as Redis checks them after the call).
    if let (Some(us), Some(end)) = (elapsed_us, ended) {
        if us >= node.config.watch_calls_from_us() {
            record_slow_call(state, node, client, resolved, argv, end, us);
        }
    }
    // Valkey's large-request and large-reply logs: one check under Redis's target.
    if node.config.commandlog() {
        record_sizes(state, node, client, resolved, argv, reply.as_ref());
    }
    let prevented = std::mem::take(&mut client.command.prevent_propagation);
    if state.dirty != dirty_before
        && !prevented
        && effects.propagate.len() == propagated_before
        && spec.has(flags::WRITE)
        && effects.propagating(&state.repl)
    {
        effects.propagate.push((db, argv.to_vec()));
    }
    // Client-side caching: one check while nobody tracks keys.
    if state.tracking.is_active() {
        crate::tracking::after_call(state, node, client, resolved, argv, effects, tracking_top);
    }
    reply.unwrap_or_else(Frame::from)
}

/// A call that ran for at least `watch-calls-from` µs (the smaller of the two thresholds),
/// ending at clock reading `end_tick`: the latency monitor's `command` or `fast-command`
/// event, and the slow log unless the command is `SKIP_SLOWLOG` or blocked (a blocked
/// command is logged when it is served), as Redis's `call()` does. A script's commands are
/// logged with the address `?:0` and no name (Redis 7.0's Lua client), or as the caller's
/// under a target that does so.
#[cold]
fn record_slow_call(
    state: &mut State,
    node: &Node,
    client: &ClientState,
    resolved: Resolved,
    argv: &[Bytes],
    end_tick: u64,
    elapsed_us: u64,
) {
    let now_s = node.clock.us_at(end_tick) / 1_000_000;
    let latency_ms = node.config.latency_monitor_threshold_ms();
    if latency_ms > 0 && elapsed_us / 1000 >= latency_ms {
        let event = if resolved.spec.has(flags::FAST) {
            "fast-command"
        } else {
            "command"
        };
        state.latency.add(event, now_s, elapsed_us / 1000);
    }
    let slower_than = node.config.slowlog_log_slower_than();
    let max_len = node.config.slowlog_max_len();
    let semantics = node.config.profile().semantics;
    if u64::try_from(slower_than).is_ok_and(|t| elapsed_us >= t)
        && client.block.is_none()
        && !resolved.spec.has(flags::SKIP_SLOWLOG)
        && (max_len > 0 || !semantics.commandlog)
    {
        let (peer, name) =
            if client.origin.in_script && !semantics.slowlog_script_commands_as_caller {
                ("?:0".to_string(), Bytes::new())
            } else {
                (client.handle.addr_text(), client.handle.name())
            };
        let command = crate::slowlog::Logged {
            argv,
            time: now_s,
            value: elapsed_us,
            peer,
            name,
            compat: node.config.compat(),
        };
        state
            .commandlog
            .get_mut(LogType::Slow)
            .push(command, max_len);
    }
}

/// A command that answered `reply` after waiting outside [`call`] (a blocked command that
/// timed out, `WAIT`), under a target with Valkey's command log: logged then, as Valkey's
/// `updateStatsOnUnblock` logs it (the slow log with `elapsed_us`, the duration of the run
/// that blocked, when it was timed; its request and the reply). Redis 7.0 logs none.
pub(crate) fn log_unblocked(
    state: &mut State,
    node: &Node,
    client: &mut ClientState,
    argv: &[Bytes],
    reply: &Frame,
    elapsed_us: Option<u64>,
) {
    if !node.config.commandlog() {
        return;
    }
    let Ok(resolved) = resolve(node.config.compat(), argv) else {
        return;
    };
    let slower_than = u64::try_from(node.config.slowlog_log_slower_than()).ok();
    let max_len = node.config.slowlog_max_len();
    if let (Some(us), Some(threshold)) = (elapsed_us, slower_than) {
        if us >= threshold && max_len > 0 && !resolved.spec.has(flags::SKIP_SLOWLOG) {
            let command = crate::slowlog::Logged {
                argv,
                time: node.clock.now_us() / 1_000_000,
                value: us,
                peer: client.handle.addr_text(),
                name: client.handle.name(),
                compat: node.config.compat(),
            };
            state
                .commandlog
                .get_mut(LogType::Slow)
                .push(command, max_len);
        }
    }
    record_sizes(state, node, client, resolved, argv, Ok(reply));
}

/// Valkey's large-request and large-reply logs (its `commandlogPushCurrentCommand`, for the
/// commands the slow log would take: not a blocked one until it is served, not
/// `SKIP_COMMANDLOG`'s). The request's size is the bytes the client sent for the command it
/// is running (a transaction's or script's commands are logged with those of `EXEC` or the
/// script's call); the reply's, the bytes written to the client since its last command:
/// messages that arrived in between and this reply (a transaction's commands count the
/// transaction's reply so far; a script's commands none, as Valkey's Lua client writes to
/// nobody). Each log that is on (threshold not negative, max length not 0) takes the command
/// once its value reaches the threshold and is trimmed to its max length, as Valkey's
/// `commandlogPushEntryIfNeeded`.
#[cold]
fn record_sizes(
    state: &mut State,
    node: &Node,
    client: &mut ClientState,
    resolved: Resolved,
    argv: &[Bytes],
    reply: Result<&Frame, &CommandError>,
) {
    if client.block.is_some() {
        return;
    }
    let skip = resolved.spec.has(flags::SKIP_SLOWLOG);
    let on = |t| {
        let max_len = node.config.commandlog_max_len(t);
        let threshold = u64::try_from(node.config.commandlog_threshold(t)).ok();
        threshold.filter(|_| max_len > 0).map(|t| (t, max_len))
    };
    // A skipped transaction's commands still add to the transaction's reply.
    if !client.origin.in_script
        && (!skip || client.origin.in_exec)
        && on(LogType::LargeReply).is_some()
    {
        match reply {
            Ok(frame) => client.count_reply_bytes(frame),
            Err(e) => client.count_reply_bytes(&Frame::error(e.to_string())),
        }
    }
    if skip {
        return;
    }
    let reply_bytes = if client.origin.in_script {
        0
    } else {
        client.command.reply_bytes
    };
    let mut now_s = None;
    for (t, value) in [
        (LogType::LargeRequest, client.command.request_bytes),
        (LogType::LargeReply, reply_bytes),
    ] {
        let Some((threshold, max_len)) = on(t) else {
            continue;
        };
        let log = state.commandlog.get_mut(t);
        if value < threshold {
            log.trim(max_len);
            continue;
        }
        let time = *now_s.get_or_insert_with(|| node.clock.now_us() / 1_000_000);
        let command = crate::slowlog::Logged {
            argv,
            time,
            value,
            peer: client.handle.addr_text(),
            name: client.handle.name(),
            compat: node.config.compat(),
        };
        log.push(command, max_len);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::ClientState;
    use crate::node::{Effects, Node, State};
    use bytes::Bytes;

    #[test]
    fn writes_are_not_copied_for_replication_without_a_backlog() {
        let node = Node::for_tests();
        let mut state = State::for_tests();
        let mut client = ClientState::for_tests(1);
        let mut effects = Effects {
            record_propagation: false,
            ..Effects::default()
        };
        let argv = |args: &[&str]| -> Vec<Bytes> {
            args.iter().map(|a| Bytes::from(a.to_string())).collect()
        };
        for args in [
            &["SET", "k", "v", "EX", "10"][..],
            &["PEXPIRE", "k", "100"],
            &["HSET", "h", "f", "v"],
        ] {
            let reply = call_argv(&mut state, &node, &mut client, &argv(args), 0, &mut effects);
            assert!(!reply.is_error(), "{args:?}: {reply:?}");
        }
        // The expired key is reclaimed with its event but no DEL for a replica.
        call_argv(
            &mut state,
            &node,
            &mut client,
            &argv(&["GET", "k"]),
            200,
            &mut effects,
        );
        assert!(effects.propagate.is_empty());
        // PEXPIRE and the expiry; the SET stored a value it measured, the HSET measured the
        // hash it changed in place, and nobody (WATCH, a blocked client, tracking) listens, so
        // they left nothing to do afterwards.
        assert_eq!(effects.modified.len(), 2);
        assert_eq!(state.stats.expired_keys, 1);
    }
}
