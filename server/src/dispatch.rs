//! The one command pipeline: Redis's `processCommand`, in its order, for every client that
//! sends commands — a TCP connection ([`crate::connection`]) and the in-process
//! [`crate::local_client::LocalClient`] alike.
//!
//! [`Session::process`] takes one request through the steps: commands that wait on other
//! tasks (`WAIT`, `REPLICAOF`, admin hooks) run without the state lock; then the lookup and
//! arity check, protected commands, the cluster slot check, the busy-script rules for
//! transactions, the state lock (or `BUSY`), `maxmemory` (an eviction round, then `OOM`),
//! `min-replicas-to-write`, the `MULTI` gate (subscribed-mode refusals, queueing), and
//! finally [`crate::cmd::call`] (authentication, read-only replica, MONITOR, the handler,
//! statistics, propagation) followed by the command's effects (events, publishes, WATCH,
//! blocked clients served, the replication stream). `EXEC`, scripts, the replication link and
//! blocked-client re-execution enter at [`crate::cmd::call`], as they do in Redis.
//!
//! Waits that involve the client's transport (a `CLIENT PAUSE`, a blocking command) are here
//! too, over a [`Transport`]: the connection writes out what it has before waiting and stops
//! when its peer goes away; the in-process client has nothing to write and never goes away.

use crate::blocking::BlockRequest;
use crate::client::ClientState;
use crate::cmd::{self, CommandError, Resolved};
use crate::node::{Effects, Node, State};
use crate::transaction;
use bytes::Bytes;
use locksmith_resp::Frame;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{broadcast, OwnedMutexGuard};

/// The state lock, held across the commands of one pipelined batch.
pub(crate) type Guard = Option<OwnedMutexGuard<State>>;

/// Where a session runs script commands (`EVAL`, `FCALL`, an `EXEC` holding one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ScriptPlace {
    /// Inline on the tokio worker of a multi-thread runtime, handing the worker's other tasks
    /// to another thread if the script runs long ([`crate::script::InlineRun`]).
    Worker,
    /// On the blocking pool (the current-thread runtime cannot hand its tasks off).
    BlockingPool,
    /// On the caller's own thread, which is not a runtime worker (the in-process client).
    Caller,
}

/// What a session's waits need from its transport.
pub(crate) trait Transport {
    /// Writes out the replies so far (before the client waits, as Redis writes them while a
    /// client is blocked); an error ends the wait and the session.
    async fn flush(&mut self, session: &Session) -> std::io::Result<()>;

    /// Resolves when the peer went away (input arriving meanwhile is kept for later).
    async fn closed(&mut self);
}

/// One client's side of the pipeline: its state and the node it talks to.
#[derive(Debug)]
pub(crate) struct Session {
    /// The node.
    pub(crate) node: Arc<Node>,
    /// The client's own state.
    pub(crate) client: ClientState,
    /// Where script commands run.
    pub(crate) scripts: ScriptPlace,
    /// The last command name looked up.
    names: cmd::NameCache,
}

impl Session {
    /// A session of `client` on `node`.
    pub(crate) fn new(node: Arc<Node>, client: ClientState, scripts: ScriptPlace) -> Self {
        Session {
            node,
            client,
            scripts,
            names: cmd::NameCache::default(),
        }
    }

    /// Runs one request through the pipeline (see the module docs) and returns its reply. A
    /// blocking command that found nothing leaves its request in `client.block`; the caller
    /// then calls [`Session::wait_blocked`].
    pub(crate) async fn process(
        &mut self,
        guard: &mut Guard,
        argv: &[Bytes],
        effects: &mut Effects,
    ) -> Frame {
        // The previous command's end is this one's start only while the state lock was held
        // from one to the other (every wait releases it, or clears the reading: a pause wait,
        // a blocked client) and no eviction round runs before this one.
        if guard.is_none() || self.node.config.maxmemory() > 0 {
            self.client.command.end_tick = None;
        }
        // A command only the admin hook knows waits on other nodes, without the state lock.
        if cmd::replication::is_hook_only_command(&self.node, argv) {
            if let Some(mut state) = guard.take() {
                state.finish_effects(&self.node, effects);
            }
            return cmd::replication::run_async_command(&self.node, &self.client, argv).await;
        }
        let resolved = match cmd::resolve_cached(self.node.config.compat(), argv, &mut self.names)
            .and_then(|resolved| {
                self.node
                    .check_protected(resolved.spec, self.client.handle.addr)
                    .map(|()| resolved)
            }) {
            Ok(resolved) => resolved,
            Err(e) => {
                transaction::flag_error(&mut self.client);
                if let Some(named) = cmd::resolve_name(self.node.config.compat(), argv) {
                    self.node.live.reject_call(named);
                }
                return e.into();
            }
        };
        // ACLs, after authentication (checked in `cmd::call`: an unauthenticated client gets
        // NOAUTH first) and before cluster routing, as Redis's `processCommand`; a MULTI
        // refusal of a `no-multi` command comes first. The default user skips it (one load).
        if self.client.authenticated
            && !cmd::acl::user_of(&self.node, &self.client).unrestricted()
            && !(self.client.multi.is_some() && resolved.spec.has(cmd::flags::NO_MULTI))
        {
            let user = cmd::acl::user_of(&self.node, &self.client).clone();
            if let Err(denied) = cmd::acl::check(&user, &resolved, argv) {
                return self
                    .acl_denied(resolved, argv, denied, guard, effects)
                    .await;
            }
        }
        if let Some(e) =
            crate::cluster::check_command(&self.node, &mut self.client, resolved.spec, argv)
        {
            return self.rejected(resolved, e.into());
        }
        if self.client.modes.redirect
            && self.node.replica.load(std::sync::atomic::Ordering::Acquire)
        {
            if let Some(reply) = self.redirect_rules(resolved, guard).await {
                return self.rejected(resolved, reply);
            }
        }
        if let Some(reply) = self.busy_transaction_rules(resolved, guard.is_some()) {
            return self.rejected(resolved, reply);
        }
        if self.node.config.maxmemory() > 0 {
            if let Some(reply) = self.maxmemory_rules(resolved, guard, effects).await {
                return self.rejected(resolved, reply);
            }
        }
        if self.node.config.min_replicas_to_write() > 0 {
            if let Some(reply) = self.min_replicas_rules(resolved, guard).await {
                return self.rejected(resolved, reply);
            }
        }
        if self.node.replica.load(std::sync::atomic::Ordering::Acquire) {
            if let Some(reply) = self.replica_rules(resolved, guard).await {
                return self.rejected(resolved, reply);
            }
        }
        if self.client.multi.is_some() && transaction::would_queue(resolved) {
            self.tracking_before_queue(guard).await;
        }
        // A script queued in MULTI counts with the flags it declares (Redis's
        // `getCommandFlags`), so an EXEC of `no-writes` scripts is a read, as in Redis.
        let command_flags =
            if self.client.multi.is_some() && resolved.spec.has(cmd::flags::RUNS_SCRIPT) {
                cmd::script_command_flags(guard.as_deref(), resolved, argv)
            } else {
                resolved.spec.flags
            };
        if let Some(reply) = transaction::admit(resolved, &mut self.client, argv, command_flags) {
            return self.rejected(resolved, reply);
        }
        // WAIT, WAITAOF and a REPLICAOF the admin hook serves wait on other tasks or nodes:
        // past every check (inside MULTI they were queued above, and answer without waiting
        // at EXEC), they run without the state lock.
        if cmd::replication::runs_without_state_lock(&self.node, resolved) {
            return self
                .run_without_state_lock(resolved, argv, guard, effects)
                .await;
        }
        let runs_script = transaction::runs_script(resolved, &self.client);
        if runs_script && self.scripts == ScriptPlace::BlockingPool {
            if let Some(mut state) = guard.take() {
                state.finish_effects(&self.node, effects);
            }
            self.client.command.end_tick = None;
            return self.run_blocking(resolved, argv.to_vec()).await;
        }
        if guard.is_none() {
            match self.lock_state().await {
                Ok(state) => *guard = Some(state),
                // `allow_busy` commands (SCRIPT KILL) are served without the lock.
                Err(busy) => match crate::cmd::spec_of(&resolved).and_then(|s| s.busy_handler) {
                    Some(handler) => {
                        let reply = handler(&self.node, argv);
                        // SHUTDOWN NOSAVE: Redis exits without replying.
                        if self.node.live.stop_requested() {
                            self.client.reply.skip = true;
                            self.client.close_after_reply = true;
                        }
                        return reply;
                    }
                    None => return self.rejected(resolved, busy),
                },
            }
        }
        let Some(state) = guard.as_mut() else {
            return CommandError::err("internal error: state lock lost").into();
        };
        let _inline = (runs_script && self.scripts == ScriptPlace::Worker)
            .then(crate::script::InlineRun::enter);
        let reply = self.call(resolved, state, argv, effects);
        if !effects.is_empty() {
            state.finish_effects(&self.node, effects);
        }
        reply
    }

    /// Runs a command that waits on other tasks (`WAIT`, see
    /// [`cmd::replication::runs_without_state_lock`]) as Redis's `call()` runs a command that
    /// blocks: MONITOR sees it and `total_commands_processed` counts it when it is called,
    /// `INFO commandstats` when it answers; the state lock is released while it waits.
    async fn run_without_state_lock(
        &mut self,
        resolved: Resolved,
        argv: &[Bytes],
        guard: &mut Guard,
        effects: &mut Effects,
    ) -> Frame {
        if !self.client.authenticated {
            return self.rejected(resolved, CommandError::NoAuth.into());
        }
        let mut state = match guard.take() {
            Some(state) => state,
            None => match self.lock_state().await {
                Ok(state) => state,
                Err(busy) => return self.rejected(resolved, busy),
            },
        };
        state.stats.commands += 1;
        if !resolved
            .spec
            .has(cmd::flags::SKIP_MONITOR | cmd::flags::ADMIN)
            && self.node.monitors.active()
        {
            let origin = crate::monitor::Origin::Client(&self.client.handle);
            self.node.monitors.feed(
                self.node.config.compat(),
                self.node.clock.now_us(),
                self.client.db,
                origin,
                argv,
            );
        }
        state.finish_effects(&self.node, effects);
        drop(state);
        self.client.command.end_tick = None;
        let reply = cmd::replication::run_async_command(&self.node, &self.client, argv).await;
        if let Ok(mut state) = self.lock_state().await {
            state.cmdstats.record(resolved, None, reply.is_error());
            // Not timed: the slow log does not take it (nor, under Redis's target, any log).
            cmd::log_unblocked(&mut state, &self.node, &mut self.client, argv, &reply, None);
            *guard = Some(state);
        }
        self.client
            .handle
            .commands
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        reply
    }

    /// The execution step under the state lock: pending UNWATCH, [`cmd::call`], and the
    /// client's visible last command.
    fn call(
        &mut self,
        resolved: Resolved,
        state: &mut State,
        argv: &[Bytes],
        effects: &mut Effects,
    ) -> Frame {
        if std::mem::take(&mut self.client.unwatch_pending) {
            state.watches.unwatch_all(self.client.id());
            state.watches.clear_dirty(self.client.id());
        }
        // One clock reading per command: the previous command of the batch ended at the
        // reading this one starts from, when nothing ran in between (see `process`). The
        // little time between them (its reply encoded, this request decoded) counts here.
        let tick = self
            .client
            .command
            .end_tick
            .take()
            .unwrap_or_else(|| self.node.clock.tick_us());
        self.client.command.start_tick = Some(tick);
        let now = self.node.clock.us_at(tick) / 1000;
        let reply = cmd::call(
            resolved,
            state,
            &self.node,
            &mut self.client,
            argv,
            now,
            effects,
        );
        if self.client.block.is_some() {
            // The client waits before its next command.
            self.client.command.end_tick = None;
        }
        self.note_command(resolved, now);
        reply
    }

    /// Refuses a command the client's user may not run: the ACL log entry (`multi` context
    /// while queueing), the transaction flagged, Redis's `NOPERM` text.
    async fn acl_denied(
        &mut self,
        resolved: Resolved,
        argv: &[Bytes],
        denied: crate::acl::Denied,
        guard: &mut Guard,
        effects: &mut Effects,
    ) -> Frame {
        transaction::flag_error(&mut self.client);
        if guard.is_none() {
            if let Ok(state) = self.lock_state().await {
                *guard = Some(state);
            }
        }
        if let Some(state) = guard.as_mut() {
            let context = if self.client.multi.is_some() {
                crate::acl::Context::Multi
            } else {
                crate::acl::Context::Toplevel
            };
            let ctx = cmd::Ctx {
                state,
                node: &self.node,
                client: &mut self.client,
                now: self.node.clock.now_ms(),
                effects,
                write: false,
            };
            cmd::acl::log_denial(&ctx, &resolved, argv, denied, context);
        }
        let user = cmd::acl::user_of(&self.node, &self.client).clone();
        let texts = &self.node.config.profile().acl_texts;
        let error = cmd::acl::noperm_error(texts, &user, &resolved, argv, denied);
        self.rejected(resolved, error)
    }

    /// Counts an error reply in `INFO errorstats`, unless it was counted already (a script's
    /// error raised by a command it ran, counted when that command failed).
    pub(crate) fn count_reply(&mut self, reply: &Frame) {
        if let Frame::Error(line) = reply {
            if !std::mem::take(&mut self.client.command.error_counted) {
                self.node.live.count_error(line);
            }
        }
    }

    /// Counts `reply` as a refusal of `resolved` if it is an error (Redis's `rejectCommand`
    /// counts `rejected_calls`); returns it.
    fn rejected(&self, resolved: Resolved, reply: Frame) -> Frame {
        if reply.is_error() {
            self.node.live.reject_call(resolved);
        }
        reply
    }

    /// `CLIENT PAUSE`: holds the command back while a pause covers it, releasing the state
    /// lock and writing out the replies so far (as Redis writes them while a client is
    /// blocked). Returns false when the session must end meanwhile (killed, server shutdown,
    /// transport failed).
    pub(crate) async fn wait_while_paused(
        &mut self,
        transport: &mut impl Transport,
        argv: &[Bytes],
        guard: &mut Guard,
        effects: &mut Effects,
        shutdown: &mut broadcast::Receiver<()>,
    ) -> bool {
        if !self.node.live.pause.maybe_active() {
            return true;
        }
        let node = self.node.clone();
        if !node.live.pause.is_paused(node.clock.now_ms()) {
            return true;
        }
        // What follows may take the state lock or wait: the next command reads the clock
        // afresh (see `process`).
        self.client.command.end_tick = None;
        let Ok(resolved) = cmd::resolve(self.node.config.compat(), argv) else {
            return true;
        };
        // An EXEC is held as the commands it would run (Redis's `is_may_replicate_command`);
        // a script as its declared flags (a `no-writes` script is a read), which for EVALSHA
        // and FCALL only the state knows.
        let mut command_flags = resolved.spec.flags;
        if resolved.top_name() == "exec" {
            if let Some(multi) = &self.client.multi {
                command_flags |= multi.queued_flags();
            }
        } else if resolved.spec.has(cmd::flags::RUNS_SCRIPT) {
            if guard.is_none() {
                if let Ok(state) = self.lock_state().await {
                    *guard = Some(state);
                }
            }
            command_flags = cmd::script_command_flags(guard.as_deref(), resolved, argv);
        }
        let handle = self.client.handle.clone();
        // Bounded: each pass either ends the wait or sleeps until the pause ends or changes.
        loop {
            let now = node.clock.now_ms();
            let Some(end) = node.live.pause.holds(command_flags, now) else {
                if guard.is_some() {
                    return true;
                }
                // Look again under the state lock: CLIENT PAUSE runs under it, so a pause
                // that began while we waited for the lock is seen.
                match self.lock_state().await {
                    Ok(state) => *guard = Some(state),
                    Err(_) => return true,
                }
                continue;
            };
            if let Some(mut state) = guard.take() {
                state.finish_effects(&node, effects);
            }
            if transport.flush(self).await.is_err() || handle.is_killed() {
                return false;
            }
            let changed = node.live.pause.changed.notified();
            // Redis blocks the client meanwhile: `INFO` counts it, `CLIENT LIST` flags it `b`.
            let _blocked = PauseWait::enter(&node, &self.client);
            tokio::select! {
                biased;
                _ = changed => {}
                _ = tokio::time::sleep(Duration::from_millis(end.saturating_sub(now).max(1))) => {}
                _ = handle.kill_notify.notified() => return false,
                _ = shutdown.recv() => return false,
            }
            if handle.is_killed() {
                return false;
            }
        }
    }

    /// Blocks the client (a blocking command found nothing): registers the wait, releases the
    /// state lock, writes the replies of earlier pipelined commands, then waits for a write
    /// to serve it (the reply comes over a oneshot) or for its timeout (tokio time, so paused
    /// clocks work). `None` when the session must end meanwhile (peer gone, killed,
    /// shutdown). `CLIENT LIST` flags the client `b` while it waits.
    pub(crate) async fn wait_blocked(
        &mut self,
        transport: &mut impl Transport,
        guard: &mut Guard,
        effects: &mut Effects,
        argv: &[Bytes],
        request: BlockRequest,
        shutdown: &mut broadcast::Receiver<()>,
    ) -> Option<Frame> {
        let Some(mut state) = guard.take() else {
            return Some(Frame::NullArray);
        };
        self.client.handle.update(|info| info.set_flag('b', true));
        let mut served = state.blocked.register(&self.client, argv, &request);
        state.finish_effects(&self.node, effects);
        drop(state);
        let waited = async {
            transport.flush(self).await.ok()?;
            let handle = self.client.handle.clone();
            let timeout = async {
                match request.timeout {
                    Some(d) => tokio::time::sleep(d).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                biased;
                reply = &mut served => Some(Some(reply.unwrap_or(Frame::NullArray))),
                _ = timeout => Some(None),
                _ = handle.kill_notify.notified() => None,
                _ = shutdown.recv() => None,
                _ = transport.closed() => None,
            }
        }
        .await;
        self.client.handle.update(|info| info.set_flag('b', false));
        match waited? {
            Some(reply) => Some(reply),
            None => {
                // Timed out: stop waiting, unless a write served the client just now.
                let mut state = self.node.state.clone().lock_owned().await;
                state.blocked.remove(self.client.id());
                let reply = match served.try_recv() {
                    Ok(reply) => reply,
                    Err(_) => {
                        // The call is counted now (a served one was counted when it ran),
                        // without a latency: Redis's histograms leave timed-out calls out.
                        if let Ok(resolved) = cmd::resolve(self.node.config.compat(), argv) {
                            state.cmdstats.record(resolved, None, false);
                        }
                        self.client
                            .handle
                            .commands
                            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let reply = Frame::NullArray;
                        let elapsed_us = self.client.command.blocked_call_us.take();
                        let client = &mut self.client;
                        cmd::log_unblocked(
                            &mut state, &self.node, client, argv, &reply, elapsed_us,
                        );
                        reply
                    }
                };
                *guard = Some(state);
                Some(reply)
            }
        }
    }

    /// Records the command as the client's last one (`CLIENT LIST`'s `cmd`, `db`, `resp`).
    fn note_command(&mut self, resolved: Resolved, now: u64) {
        let db = self.client.db;
        let resp = match self.client.resp {
            locksmith_resp::Version::Resp2 => 2,
            locksmith_resp::Version::Resp3 => 3,
        };
        let handle = &self.client.handle;
        handle.last_interaction_ms.store(now, Ordering::Relaxed);
        let noted = Some((db, resp, resolved.stat));
        if self.client.noted == noted {
            return;
        }
        self.client.noted = noted;
        handle.update(|info| {
            info.db = db;
            info.resp = resp;
            info.last_cmd.clear();
            if let Some(parent) = resolved.parent {
                info.last_cmd.push_str(parent.name);
                info.last_cmd.push('|');
            }
            info.last_cmd.push_str(resolved.spec.name);
        });
    }

    /// Runs a script command on the blocking pool with the state lock held, so a long script
    /// never stalls the reactor and other clients can be told `BUSY`.
    async fn run_blocking(&mut self, resolved: Resolved, argv: Vec<Bytes>) -> Frame {
        let mut state = match self.lock_state().await {
            Ok(state) => state,
            Err(busy) => return busy,
        };
        let placeholder = Session::new(
            self.node.clone(),
            ClientState::new(self.client.handle.clone(), false),
            self.scripts,
        );
        let mut session = std::mem::replace(self, placeholder);
        let task = tokio::task::spawn_blocking(move || {
            let mut effects = Effects::default();
            let reply = session.call(resolved, &mut state, &argv, &mut effects);
            state.finish_effects(&session.node, &mut effects);
            (session, reply)
        });
        match task.await {
            Ok((session, reply)) => {
                *self = session;
                reply
            }
            Err(e) => {
                tracing::error!(error = %e, "script task failed");
                self.client.close_after_reply = true;
                CommandError::err("internal error while running the script").into()
            }
        }
    }

    /// Redis's `processCommand` while a script is busy, for transactions: a command that is not
    /// `allow_busy` is refused with `BUSY` and flags the transaction (so a later EXEC aborts
    /// rather than run half of it), EXEC is refused by discarding its transaction (`EXECABORT
    /// Transaction discarded because of: BUSY ...`), and MULTI and DISCARD work (they only touch
    /// the client). `None` when not busy or nothing applies (`holding`: this session has the
    /// state lock, so no script of another can be running).
    fn busy_transaction_rules(&mut self, resolved: Resolved, holding: bool) -> Option<Frame> {
        if holding {
            return None;
        }
        let threshold = self.node.config.busy_reply_threshold_ms();
        if self
            .node
            .script_running_for()
            .is_none_or(|elapsed| elapsed < threshold)
        {
            return None;
        }
        match resolved.top_name() {
            "multi" if self.client.multi.is_none() => {
                self.client.multi = Some(Default::default());
                self.client.handle.update(|info| {
                    info.multi = 0;
                    info.set_flag('x', true);
                });
                Some(Frame::ok())
            }
            "discard" if self.client.multi.is_some() => {
                self.end_transaction_while_busy();
                Some(Frame::ok())
            }
            "exec" if self.client.multi.is_some() => Some(self.exec_abort(self.node.busy_error())),
            _ if self.client.multi.is_some() && !resolved.spec.has(cmd::flags::ALLOW_BUSY) => {
                transaction::flag_error(&mut self.client);
                Some(Frame::error(self.node.busy_error()))
            }
            _ => None,
        }
    }

    /// Redis's `processCommand` under `maxmemory`: an eviction round first; then, if memory is
    /// still over the limit, `OOM` for a command that may grow memory (`denyoom`), for an
    /// EXEC whose queue holds one (`EXECABORT`, the transaction discarded), and for any command
    /// but EXEC, DISCARD, QUIT and RESET inside MULTI (queueing costs memory too). Whether
    /// memory was over is kept for the scripts this command runs.
    async fn maxmemory_rules(
        &mut self,
        resolved: Resolved,
        guard: &mut Guard,
        effects: &mut Effects,
    ) -> Option<Frame> {
        if guard.is_none() {
            // Busy: the command is refused (or served without the lock) further on.
            *guard = Some(self.lock_state().await.ok()?);
        }
        let state = guard.as_mut()?;
        let now = self.node.clock.now_ms();
        let limit = self.node.config.maxmemory();
        let oom =
            state.perform_evictions(limit, now, effects) == crate::evict::Outcome::OutOfMemory;
        if !effects.is_empty() {
            state.finish_effects(&self.node, effects);
        }
        self.client.command.pre_command_oom = oom;
        if !oom {
            return None;
        }
        let top = resolved.top_name();
        let denyoom = cmd::flags::DENYOOM;
        let in_multi = self.client.multi.is_some();
        let queued_denyoom = top == "exec" && self.queue_holds(denyoom);
        let reject = resolved.spec.has(denyoom)
            || queued_denyoom
            || (in_multi && !matches!(top, "exec" | "discard" | "quit" | "reset"));
        if !reject {
            return None;
        }
        if top == "exec" && in_multi {
            return Some(self.exec_abort(crate::evict::OOM_ERROR));
        }
        transaction::flag_error(&mut self.client);
        Some(Frame::error(crate::evict::OOM_ERROR))
    }

    /// Redis's `processCommand` under `min-replicas-to-write`: a write command, or an EXEC
    /// whose queue holds one, is refused with `NOREPLICAS` (the transaction discarded) while
    /// fewer good replicas are attached.
    async fn min_replicas_rules(&mut self, resolved: Resolved, guard: &mut Guard) -> Option<Frame> {
        let write = cmd::flags::WRITE;
        let is_exec = resolved.top_name() == "exec" && self.client.multi.is_some();
        if !(resolved.spec.has(write) || (is_exec && self.queue_holds(write))) {
            return None;
        }
        if guard.is_none() {
            *guard = Some(self.lock_state().await.ok()?);
        }
        if guard.as_ref()?.enough_good_replicas(&self.node) {
            return None;
        }
        if is_exec {
            return Some(self.exec_abort(crate::node::NOREPLICAS_ERROR));
        }
        transaction::flag_error(&mut self.client);
        Some(Frame::error(crate::node::NOREPLICAS_ERROR))
    }

    /// Valkey's `processCommand` for a client that declared `CLIENT CAPA redirect`, on a
    /// replica outside cluster mode: a write command, or a read command unless the client
    /// asked for `READONLY` (or an EXEC whose queue holds one), is answered `-REDIRECT
    /// host:port` of the master (a transaction discarded at EXEC, or flagged while
    /// queueing).
    async fn redirect_rules(&mut self, resolved: Resolved, guard: &mut Guard) -> Option<Frame> {
        if self.node.cluster.get().is_some()
            || self.client.id() == crate::replication::MASTER_CLIENT_ID
        {
            return None;
        }
        let is_exec = resolved.top_name() == "exec" && self.client.multi.is_some();
        let has = |flag: u32| resolved.spec.has(flag) || (is_exec && self.queue_holds(flag));
        let writes = has(cmd::flags::WRITE);
        let reads = has(cmd::flags::READONLY);
        if !(writes || (reads && !self.client.modes.cluster_readonly)) {
            return None;
        }
        if guard.is_none() {
            *guard = Some(self.lock_state().await.ok()?);
        }
        let crate::replication::Role::Replica { master } = guard.as_ref()?.repl.role() else {
            return None;
        };
        let error = format!("REDIRECT {}:{}", master.ip(), master.port());
        if is_exec {
            // Valkey discards the transaction and answers the redirection itself.
            self.end_transaction_while_busy();
            return Some(Frame::error(error));
        }
        transaction::flag_error(&mut self.client);
        Some(Frame::error(error))
    }

    /// Redis's `processCommand` on a replica: a write command, or an EXEC whose queue holds
    /// one, is refused with `READONLY` under `replica-read-only`; a command not flagged
    /// `stale`, or an EXEC whose queue holds one, with `MASTERDOWN` while the link to the
    /// master is down under `replica-serve-stale-data no` (the transaction discarded, or
    /// flagged when the command was only being queued).
    async fn replica_rules(&mut self, resolved: Resolved, guard: &mut Guard) -> Option<Frame> {
        // `NOAUTH` comes first (from `cmd::call`).
        if !self.client.authenticated {
            return None;
        }
        if guard.is_none() {
            *guard = Some(self.lock_state().await.ok()?);
        }
        let state = guard.as_ref()?;
        let is_exec = resolved.top_name() == "exec" && self.client.multi.is_some();
        let multi = self.client.multi.as_ref();
        let writes = resolved.spec.has(cmd::flags::WRITE)
            || (is_exec && self.queue_holds(cmd::flags::WRITE));
        let error = if writes && state.repl.refuses_write_from(&self.client, &state.config) {
            crate::replication::READONLY_ERROR
        } else if (!resolved.spec.has(cmd::flags::STALE)
            || (is_exec && multi.is_some_and(|m| m.queued_lacking(cmd::flags::STALE))))
            && state.repl.refuses_stale(&self.client, &state.config)
        {
            crate::replication::MASTERDOWN_ERROR
        } else {
            return None;
        };
        if is_exec {
            return Some(self.exec_abort(error));
        }
        transaction::flag_error(&mut self.client);
        Some(Frame::error(error))
    }

    /// Redis holds the client-tracking table to `tracking-table-max-keys` before every
    /// command it processes, one it only queues in a transaction too (its invalidations go
    /// out before the `+QUEUED`); a command that runs does it in [`cmd::call`].
    async fn tracking_before_queue(&mut self, guard: &mut Guard) {
        if guard.is_none() {
            let Ok(state) = self.lock_state().await else {
                return;
            };
            *guard = Some(state);
        }
        if let Some(state) = guard.as_mut() {
            if state.tracking.is_active() {
                crate::tracking::before_call(state, &self.node, &self.client);
            }
        }
    }

    /// Whether the open transaction queued a command with `flag`.
    fn queue_holds(&self, flag: u32) -> bool {
        self.client
            .multi
            .as_ref()
            .is_some_and(|multi| multi.queued_flags() & flag != 0)
    }

    /// Redis's `execCommandAbort`: EXEC refused before it runs (`reason`, an error line)
    /// discards the transaction and answers `EXECABORT`.
    fn exec_abort(&mut self, reason: &str) -> Frame {
        self.end_transaction_while_busy();
        Frame::error(format!(
            "EXECABORT Transaction discarded because of: {}",
            reason.trim_start_matches('-')
        ))
    }

    /// Leaves the transaction without the state lock; its WATCHes go at the next locked command.
    fn end_transaction_while_busy(&mut self) {
        self.client.multi = None;
        self.client.unwatch_pending = true;
        self.client.handle.update(|info| {
            info.multi = -1;
            info.set_flag('x', false);
            info.set_flag('d', false);
        });
    }

    /// Takes the state lock, or answers `BUSY` while a script runs past the threshold.
    pub(crate) async fn lock_state(&self) -> Result<OwnedMutexGuard<State>, Frame> {
        if let Ok(state) = self.node.state.clone().try_lock_owned() {
            return Ok(state);
        }
        let lock = self.node.state.clone().lock_owned();
        tokio::pin!(lock);
        loop {
            let threshold = self.node.config.busy_reply_threshold_ms();
            let wait = match self.node.script_running_for() {
                Some(elapsed) if elapsed >= threshold => {
                    return Err(Frame::error(self.node.busy_error()))
                }
                Some(elapsed) => Duration::from_millis(threshold - elapsed),
                // Re-check now and then: a script may start while we wait for the lock.
                None => Duration::from_millis(threshold.clamp(1, 50)),
            };
            tokio::select! {
                biased;
                state = &mut lock => return Ok(state),
                _ = tokio::time::sleep(wait) => {}
            }
        }
    }
}

/// A client waiting for a `CLIENT PAUSE` to end, counted as blocked while the guard lives.
struct PauseWait<'a> {
    node: &'a Node,
    client: &'a ClientState,
}

impl<'a> PauseWait<'a> {
    fn enter(node: &'a Node, client: &'a ClientState) -> Self {
        node.live.pause.waiting.fetch_add(1, Ordering::Relaxed);
        client.handle.update(|info| info.set_flag('b', true));
        PauseWait { node, client }
    }
}

impl Drop for PauseWait<'_> {
    fn drop(&mut self) {
        self.node.live.pause.waiting.fetch_sub(1, Ordering::Relaxed);
        self.client.handle.update(|info| info.set_flag('b', false));
    }
}
