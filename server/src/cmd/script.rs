//! Scripting commands: EVAL, EVALSHA, EVAL_RO, EVALSHA_RO, SCRIPT LOAD|EXISTS|FLUSH|KILL|HELP,
//! and MONITOR (which shows what scripts run as `[db lua]` lines).
//!
//! The Lua engine lives in [`crate::script`]; this module hands it a [`Dispatcher`] that runs
//! `redis.call` through the command table with Redis 7's script rules, and maintains what
//! other connections see of a running script (`BUSY`, `SCRIPT KILL`).

use super::{flags::*, Args, CmdResult, Command, CommandError, Ctx};
use crate::monitor::Origin;
use crate::node::Node;
use crate::script::{self, script_flags, Dispatcher, Engine};
use bytes::Bytes;
use locksmith_resp::{Frame, Version};
use std::sync::atomic::Ordering;

const NOSCRIPT: &str = "NOSCRIPT No matching script. Please use EVAL.";

/// The scripting family's table.
pub(crate) static COMMANDS: &[Command] = &[
    Command::new("eval", eval).extra_flags(MAY_REPLICATE | RUNS_SCRIPT),
    Command::new("evalsha", evalsha).extra_flags(MAY_REPLICATE | RUNS_SCRIPT),
    Command::new("eval_ro", eval_ro).extra_flags(RUNS_SCRIPT),
    Command::new("evalsha_ro", evalsha_ro).extra_flags(RUNS_SCRIPT),
    Command::new("script", script_container).subs(SCRIPT_SUBCOMMANDS),
    Command::new("monitor", monitor),
];

static SCRIPT_SUBCOMMANDS: &[Command] = &[
    Command::new("load", script_load),
    Command::new("exists", script_exists),
    Command::new("flush", script_flush),
    Command::new("kill", script_kill).busy(script_kill_busy),
    Command::new("help", script_help),
    Command::new("show", script_show),
];

/// The node's engine, created on first use.
fn engine<'s>(ctx: &'s mut Ctx<'_>) -> Result<&'s mut Engine, CommandError> {
    if ctx.state.scripting.is_none() {
        let lua = ctx.state.config.lua();
        let engine =
            Engine::new(ctx.node.script.kill.clone(), command_exists, lua).map_err(|e| {
                tracing::error!(error = %e, "cannot create the Lua interpreter");
                CommandError::err("Lua interpreter unavailable")
            })?;
        ctx.state.scripting = Some(Box::new(engine));
    }
    ctx.state
        .scripting
        .as_deref_mut()
        .ok_or_else(|| CommandError::err("Lua interpreter unavailable"))
}

/// Whether `argv` names a command, whatever its arity (`redis.acl_check_cmd`).
pub(crate) fn command_exists(compat: crate::compat::Compat, argv: &[Bytes]) -> bool {
    matches!(
        super::resolve(compat, argv),
        Ok(_) | Err(CommandError::WrongArity(_))
    )
}

/// ```text
/// EVAL script numkeys [key [key ...]] [arg [arg ...]]
/// ```
fn eval(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    eval_generic(ctx, args, false, false)
}

/// ```text
/// EVALSHA sha1 numkeys [key [key ...]] [arg [arg ...]]
/// ```
fn evalsha(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    eval_generic(ctx, args, true, false)
}

/// ```text
/// EVAL_RO script numkeys [key [key ...]] [arg [arg ...]]
/// ```
fn eval_ro(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    eval_generic(ctx, args, false, true)
}

/// ```text
/// EVALSHA_RO sha1 numkeys [key [key ...]] [arg [arg ...]]
/// ```
fn evalsha_ro(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    eval_generic(ctx, args, true, true)
}

/// Feeds the command to MONITOR before the commands the script runs (as `evalCommand` does).
pub(super) fn feed_monitors(ctx: &Ctx<'_>, argv: &[Bytes]) {
    let monitors = &ctx.node.monitors;
    if monitors.active() {
        let origin = if ctx.client.origin.in_script {
            Origin::Lua
        } else {
            Origin::Client(&ctx.client.handle)
        };
        monitors.feed(
            ctx.node.config.compat(),
            ctx.node.clock.now_us(),
            ctx.client.db,
            origin,
            argv,
        );
    }
}

fn eval_generic(ctx: &mut Ctx<'_>, args: &mut Args<'_>, by_sha: bool, ro: bool) -> CmdResult {
    // EVAL is flagged skip_monitor and feeds monitors itself, so that the commands the
    // script runs appear after it (as evalCommand does).
    feed_monitors(ctx, args.argv());
    let body = args.bytes()?;
    let numkeys = args.i64()?;
    let rest = args.rest();
    if numkeys > rest.len() as i64 {
        return Err(CommandError::err(
            "Number of keys can't be greater than number of args",
        ));
    }
    if numkeys < 0 {
        return Err(CommandError::err("Number of keys can't be negative"));
    }
    let (keys, argv) = rest.split_at(numkeys as usize);
    let engine = engine(ctx)?;
    let mut lower = [0u8; 40];
    let sha = if by_sha {
        // Script ids are 40 hex digits, matched case-insensitively.
        match lower.get_mut(..body.len()) {
            Some(buf) if body.len() == 40 => {
                buf.copy_from_slice(body);
                buf.make_ascii_lowercase();
            }
            _ => return Err(CommandError::Raw(NOSCRIPT.into())),
        }
        std::str::from_utf8(&lower).map_err(|_| CommandError::Raw(NOSCRIPT.into()))?
    } else {
        let sha = engine.load(body, true).map_err(CommandError::Raw)?;
        let evicted = engine.take_evicted();
        ctx.state.stats.evicted_scripts += evicted;
        lower.copy_from_slice(sha.as_bytes());
        std::str::from_utf8(&lower).map_err(|_| CommandError::Raw(NOSCRIPT.into()))?
    };
    let Some(mut engine) = ctx.state.scripting.take() else {
        return Err(CommandError::err("Lua interpreter unavailable"));
    };
    let reply = match engine.get(sha) {
        Some(script) => run_checked(
            ctx,
            &engine,
            Runnable::Script(script, sha),
            (keys, argv),
            ro,
        ),
        None => Err(CommandError::Raw(NOSCRIPT.into())),
    };
    engine.ran(sha);
    ctx.state.scripting = Some(engine);
    reply
}

/// What a run executes: a cached script (with its SHA1) or a library's function.
pub(super) enum Runnable<'e> {
    /// `EVAL`/`EVALSHA`.
    Script(&'e script::Compiled, &'e str),
    /// `FCALL`, with its command line (for `FUNCTION STATS`).
    Function(&'e script::FunctionDef, &'e [Bytes]),
}

impl Runnable<'_> {
    fn flags(&self) -> u32 {
        match self {
            Runnable::Script(script, _) => script.flags,
            Runnable::Function(function, _) => function.flags,
        }
    }
}

/// Checks a script's or function's flags against the command and the node, then runs it.
pub(super) fn run_checked(
    ctx: &mut Ctx<'_>,
    engine: &Engine,
    runnable: Runnable<'_>,
    (keys, argv): (&[Bytes], &[Bytes]),
    ro: bool,
) -> CmdResult {
    let flags = runnable.flags();
    if flags & script_flags::EVAL_COMPAT == 0 && flags & script_flags::NO_WRITES == 0 && ro {
        return Err(CommandError::err(
            "Can not execute a script with write flag using *_ro command.",
        ));
    }
    if flags & script_flags::EVAL_COMPAT == 0
        && flags & script_flags::NO_CLUSTER != 0
        && ctx.node.cluster.get().is_some()
    {
        return Err(CommandError::err(
            "Can not run script on cluster, 'no-cluster' flag is set.",
        ));
    }
    let compat = flags & script_flags::EVAL_COMPAT != 0;
    if !compat
        && flags & (script_flags::ALLOW_OOM | script_flags::NO_WRITES) == 0
        && ctx.client.command.pre_command_oom
        && ctx.node.config.maxmemory() > 0
    {
        // A flagged script that may write is `denyoom`: at top level Redis refuses it as any
        // such command; run by EXEC, its own check speaks of the flag.
        return Err(if ctx.client.origin.in_exec {
            CommandError::Raw(
                "OOM allow-oom flag is not set on the script, can not run it when used memory > \
                 'maxmemory'"
                    .into(),
            )
        } else {
            CommandError::Raw(crate::evict::OOM_ERROR.into())
        });
    }
    if !compat && flags & script_flags::NO_WRITES == 0 && !ctx.state.enough_good_replicas(ctx.node)
    {
        return Err(CommandError::Raw(crate::node::NOREPLICAS_ERROR.into()));
    }
    // A flagged script that may write is a write command (Redis's `scriptFlagsToCmdFlags`),
    // which a read-only replica refuses to anyone but its master.
    if !compat
        && flags & script_flags::NO_WRITES == 0
        && ctx
            .state
            .repl
            .refuses_write_from(ctx.client, &ctx.state.config)
    {
        return Err(CommandError::Raw(crate::replication::READONLY_ERROR.into()));
    }
    let allow_oom = !compat && flags & script_flags::ALLOW_OOM != 0;
    let read_only = ro || flags & script_flags::NO_WRITES != 0;
    // Scripts without a shebang may touch keys of several local slots (Redis 7 keeps Redis
    // 6's behaviour for them); others only with `allow-cross-slot-keys`.
    let slots = crate::cluster::ScriptSlots::new(
        keys,
        flags & (script_flags::EVAL_COMPAT | script_flags::ALLOW_CROSS_SLOT) != 0,
    );
    Ok(run_script(
        ctx,
        engine,
        runnable,
        (keys, argv),
        read_only,
        allow_oom,
        slots,
    ))
}

/// Runs a script or function with the script status other connections see set around it.
fn run_script(
    ctx: &mut Ctx<'_>,
    engine: &Engine,
    runnable: Runnable<'_>,
    (keys, argv): (&[Bytes], &[Bytes]),
    read_only: bool,
    allow_oom: bool,
    slots: crate::cluster::ScriptSlots,
) -> Frame {
    let status = &ctx.node.script;
    status.kill.store(false, Ordering::Release);
    status.wrote.store(false, Ordering::Release);
    if let Runnable::Function(function, command) = &runnable {
        if let Ok(mut running) = status.function.lock() {
            *running = Some((function.name.clone(), command.to_vec()));
        }
        status.is_function.store(true, Ordering::Release);
    }
    let started_us = ctx.node.clock.now_us();
    status
        .started_ms
        .store(started_us / 1000, Ordering::Release);
    status.started_us.store(started_us, Ordering::Release);
    status.running.store(true, Ordering::Release);
    let saved_db = ctx.client.db;
    let saved_resp = ctx.client.resp;
    let propagated_before = ctx.effects.propagate.len();
    // A tracking caller's reads inside the script remember the script's declared keys.
    let tracking = ctx.state.tracking.is_active();
    if tracking {
        ctx.state
            .tracking
            .set_script_keys(ctx.client.id(), Some(keys));
    }
    let reply = {
        let mut caller = ScriptCaller {
            ctx,
            read_only,
            allow_oom,
            slots,
        };
        match runnable {
            Runnable::Script(script, sha) => engine.run(script, sha, (keys, argv), &mut caller),
            Runnable::Function(function, _) => {
                engine.call_function(function, (keys, argv), &mut caller)
            }
        }
    };
    if reply.is_error() && engine.last_error_counted() {
        ctx.client.command.error_counted = true;
    }
    ctx.client.db = saved_db;
    ctx.client.resp = saved_resp;
    ctx.client.origin.in_script = false;
    if tracking {
        ctx.state.tracking.set_script_keys(ctx.client.id(), None);
    }
    // Redis 7 replicates a script as its effects, wrapped in MULTI/EXEC when there are several.
    ctx.effects.wrap_in_transaction(propagated_before, saved_db);
    let status = &ctx.node.script;
    status.running.store(false, Ordering::Release);
    status.kill.store(false, Ordering::Release);
    if status.is_function.swap(false, Ordering::AcqRel) {
        if let Ok(mut running) = status.function.lock() {
            *running = None;
        }
    }
    status.done.notify_waiters();
    reply
}

/// `redis.call` for one script run: Redis 7's `scriptCall` checks, then the command table.
struct ScriptCaller<'c, 'a> {
    ctx: &'c mut Ctx<'a>,
    read_only: bool,
    /// `allow-oom`: commands that may grow memory run even past `maxmemory`.
    allow_oom: bool,
    /// The slot checks of cluster mode.
    slots: crate::cluster::ScriptSlots,
}

impl Dispatcher for ScriptCaller<'_, '_> {
    fn call(&mut self, argv: &[Bytes], resp3: bool, repl: u8) -> Result<Frame, String> {
        // Errors of the commands a script runs are counted when they happen (the script's
        // reply, if it passes one on, is marked as counted), as Redis's scriptCall does.
        let outcome = self.dispatch(argv, resp3, repl);
        match &outcome {
            Err(text) => {
                self.ctx.node.live.count_error(text.as_bytes());
                // Refused before it ran: a rejected call of that command (if it is one).
                if let Some(resolved) = super::resolve_name(self.ctx.node.config.compat(), argv) {
                    self.ctx.state.cmdstats.reject(resolved);
                }
            }
            Ok(Frame::Error(line)) => self.ctx.node.live.count_error(line),
            Ok(_) => {}
        }
        outcome
    }

    fn acl_check(&mut self, argv: &[Bytes]) -> bool {
        let user = super::acl::user_of(self.ctx.node, self.ctx.client);
        match super::resolve_name(self.ctx.node.config.compat(), argv) {
            Some(resolved) => super::acl::check(user, &resolved, argv).is_ok(),
            None => false,
        }
    }
}

impl ScriptCaller<'_, '_> {
    fn dispatch(&mut self, argv: &[Bytes], resp3: bool, repl: u8) -> Result<Frame, String> {
        // "Redis command", or Valkey's "command".
        let command = self.ctx.node.config.profile().script_texts.command;
        let resolved = match super::resolve(self.ctx.node.config.compat(), argv) {
            Ok(resolved) => resolved,
            Err(CommandError::WrongArity(_)) => {
                return Err(format!(
                    "ERR Wrong number of args calling {command} from script"
                ))
            }
            Err(_) => return Err(format!("ERR Unknown {command} called from script")),
        };
        let spec = resolved.spec;
        if spec.has(super::flags::NOSCRIPT)
            && !self
                .ctx
                .node
                .live
                .scripts_call_anything
                .load(std::sync::atomic::Ordering::Relaxed)
        {
            // Valkey 8.1.8 keeps Redis's text here.
            return Err("ERR This Redis command is not allowed from script".into());
        }
        // Redis's `scriptVerifyACL`: the caller's user.
        let user = super::acl::user_of(self.ctx.node, self.ctx.client);
        if !user.unrestricted() {
            let user = user.clone();
            if let Err(denied) = super::acl::check(&user, &resolved, argv) {
                super::acl::log_denial(self.ctx, &resolved, argv, denied, crate::acl::Context::Lua);
                let texts = &self.ctx.node.config.profile().acl_texts;
                return Err(super::acl::script_noperm_error(
                    texts, &user, &resolved, argv, denied,
                ));
            }
        }
        if self.read_only && spec.has(WRITE | MAY_REPLICATE) {
            return Err("ERR Write commands are not allowed from read-only scripts.".into());
        }
        let ctx = &mut self.ctx;
        if spec.has(WRITE) && !ctx.state.enough_good_replicas(ctx.node) {
            return Err(crate::node::NOREPLICAS_ERROR.into());
        }
        let readonly = ctx.client.modes.cluster_readonly;
        self.slots.check(ctx.node, readonly, spec, argv)?;
        // Redis's `scriptVerifyOOM`: past `maxmemory` when the script started, it may not
        // begin writing with a command that can grow memory (once it wrote, it must finish).
        if spec.has(super::flags::DENYOOM)
            && !self.allow_oom
            && ctx.client.command.pre_command_oom
            && ctx.node.config.maxmemory() > 0
            && !ctx.node.script.wrote.load(Ordering::Acquire)
        {
            return Err(crate::evict::OOM_ERROR.into());
        }
        if spec.has(WRITE) {
            if ctx.node.script.kill.load(Ordering::Acquire) {
                let texts = &self.ctx.node.config.profile().script_texts;
                let function = self.ctx.node.script.is_function.load(Ordering::Acquire);
                return Err(if function {
                    texts.function_killed
                } else {
                    texts.script_killed
                }
                .into());
            }
            ctx.node.script.wrote.store(true, Ordering::Release);
        }
        ctx.client.origin.in_script = true;
        ctx.client.resp = if resp3 {
            Version::Resp3
        } else {
            Version::Resp2
        };
        let before = ctx.effects.propagate.len();
        let reply = super::call(
            resolved,
            ctx.state,
            ctx.node,
            ctx.client,
            argv,
            ctx.now,
            ctx.effects,
        );
        if repl & script::REPL_REPLICA == 0 {
            ctx.effects.propagate.truncate(before);
        }
        Ok(reply)
    }
}

/// A script-less stand-in for the container name alone (`SCRIPT` without a subcommand).
fn script_container(_ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    Err(CommandError::WrongArity("script".into()))
}

/// ```text
/// SCRIPT LOAD script
/// ```
fn script_load(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let body = args.bytes()?;
    let sha = engine(ctx)?.load(body, false).map_err(CommandError::Raw)?;
    Ok(Frame::Bulk(Bytes::from(sha)))
}

/// ```text
/// SCRIPT EXISTS sha1 [sha1 ...]
/// ```
fn script_exists(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let shas: Vec<String> = args
        .rest()
        .iter()
        .map(|s| String::from_utf8_lossy(s).to_ascii_lowercase())
        .collect();
    let engine = ctx.state.scripting.as_deref();
    Ok(Frame::Array(
        shas.iter()
            .map(|sha| Frame::Integer(i64::from(engine.is_some_and(|e| e.get(sha).is_some()))))
            .collect(),
    ))
}

/// ```text
/// SCRIPT SHOW sha1
/// ```
///
/// Valkey 8.1's: the body of a cached script.
fn script_show(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let sha = String::from_utf8_lossy(args.bytes()?).to_ascii_lowercase();
    match ctx.state.scripting.as_deref().and_then(|e| e.get(&sha)) {
        Some(script) => Ok(Frame::Bulk(script.body.clone())),
        None => Err(CommandError::Raw("NOSCRIPT No matching script.".into())),
    }
}

/// ```text
/// SCRIPT FLUSH [ASYNC | SYNC]
/// ```
fn script_flush(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    match args.remaining() {
        0 => {}
        1 if args.eat("sync") || args.eat("async") => {}
        _ => {
            return Err(CommandError::err(
                "SCRIPT FLUSH only support SYNC|ASYNC option",
            ))
        }
    }
    // Redis releases the interpreter and starts a fresh one: the cache and any Lua state go.
    if let Some(engine) = ctx.state.scripting.as_deref_mut() {
        engine.reset().map_err(|e| {
            tracing::error!(error = %e, "cannot create the Lua interpreter");
            CommandError::err("Lua interpreter unavailable")
        })?;
    }
    Ok(Frame::ok())
}

/// ```text
/// SCRIPT KILL
/// ```
fn script_kill(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    Ok(script_kill_busy(ctx.node, &[]))
}

/// SCRIPT KILL as run without the state lock while a script is busy.
fn script_kill_busy(node: &Node, _argv: &[Bytes]) -> Frame {
    kill_running(node, false)
}

/// Redis's `scriptKill`: stops the running script if it has not written; `SCRIPT KILL` does
/// not stop a function nor `FUNCTION KILL` a script (`function`: called as `FUNCTION KILL`).
pub(super) fn kill_running(node: &Node, function: bool) -> Frame {
    let status = &node.script;
    if !status.running.load(Ordering::Acquire) {
        return Frame::error("NOTBUSY No scripts in execution right now.");
    }
    if status.wrote.load(Ordering::Acquire) {
        return Frame::error(
            "UNKILLABLE Sorry the script already executed write commands against the dataset. \
             You can either wait the script termination or kill the server in a hard way using \
             the SHUTDOWN NOSAVE command.",
        );
    }
    if status.is_function.load(Ordering::Acquire) != function {
        return Frame::error(node.busy_error());
    }
    status.kill.store(true, Ordering::Release);
    Frame::ok()
}

/// ```text
/// SCRIPT HELP
/// ```
fn script_help(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    Ok(super::client::help_reply(ctx, "SCRIPT"))
}

/// ```text
/// MONITOR
/// ```
fn monitor(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    if ctx.node.monitors.add(&ctx.client.handle) {
        ctx.client.handle.update(|info| info.set_flag('O', true));
    }
    Ok(Frame::ok())
}

/// Redis's `getCommandFlags` for the script commands (`evalGetCommandFlags`,
/// `fcallGetCommandFlags`): a script or function that declares flags replaces the command's
/// `write`, `denyoom`, `stale` and `may_replicate` flags with what it declared, so the checks
/// made before running it (`CLIENT PAUSE WRITE`, …) see a `no-writes` script as a read. A
/// script without a shebang, one not found, or (without `state`) one only known by its SHA1
/// keeps the command's flags.
pub(crate) fn command_flags(
    state: Option<&crate::node::State>,
    resolved: super::Resolved,
    argv: &[Bytes],
) -> u32 {
    let spec_flags = resolved.spec.flags;
    if !resolved.spec.has(RUNS_SCRIPT) || resolved.first_arg != 1 {
        return spec_flags;
    }
    let Some(target) = argv.get(1) else {
        return spec_flags;
    };
    let declared = match resolved.spec.name {
        "eval" | "eval_ro" => {
            let cached = state
                .and_then(|s| s.scripting.as_deref())
                .and_then(|engine| engine.get(&script::sha1hex(target)).map(|c| c.flags));
            match cached {
                Some(flags) => Some(flags),
                None => script::parse_shebang(target).ok().map(|(flags, _)| flags),
            }
        }
        "evalsha" | "evalsha_ro" => {
            let sha = String::from_utf8_lossy(target).to_ascii_lowercase();
            state
                .and_then(|s| s.scripting.as_deref())
                .and_then(|engine| engine.get(&sha).map(|c| c.flags))
        }
        "fcall" | "fcall_ro" => state
            .and_then(|s| s.functions.function(target))
            .map(|(_, function)| function.flags),
        _ => None,
    };
    match declared {
        Some(flags) if flags & script_flags::EVAL_COMPAT == 0 => {
            script_flags_to_command_flags(spec_flags, flags)
        }
        _ => spec_flags,
    }
}

/// Redis's `scriptFlagsToCmdFlags`.
fn script_flags_to_command_flags(command: u32, script: u32) -> u32 {
    let mut flags = command & !(STALE | DENYOOM | WRITE | MAY_REPLICATE);
    if script & (script_flags::ALLOW_OOM | script_flags::NO_WRITES) == 0 {
        flags |= DENYOOM;
    }
    if script & script_flags::NO_WRITES == 0 {
        flags |= WRITE;
    }
    if script & script_flags::ALLOW_STALE != 0 {
        flags |= STALE;
    }
    flags
}
