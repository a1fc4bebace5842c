//! Lua scripting as Redis 7.0 runs it: one Lua 5.1 interpreter per node ([`Engine`]), scripts
//! compiled once and cached by the SHA1 of their body, Redis's sandbox and `redis` API, the
//! bundled libraries (`cjson`, `cmsgpack`, `struct`, `bit`), and the RESP ↔ Lua conversions.
//!
//! The engine never reaches into the command table itself: `EVAL` hands it a [`Dispatcher`]
//! that `redis.call`/`redis.pcall` go through, so there is one implementation of every command.

mod api;
mod bit;
mod cjson;
mod cmsgpack;
mod convert;
mod library;
mod stack;
mod structlib;

pub(crate) use library::{Libraries, RestorePolicy};

pub(crate) use convert::format_g;

use crate::config::runtime::LuaSettings;
use bytes::Bytes;
use locksmith_resp::Frame;
use mlua::{ChunkMode, Function, Lua, LuaOptions, StdLib};
use stack::{CFunction, Kind, Return, Stack};
use std::cell::Cell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The chunk name of the engine's own Lua code; its frames are skipped when an error is
/// located, so errors point at the user's line as Redis's C functions do.
pub(crate) const INTERNAL_CHUNK: &str = "=[redis]";

/// The stack a script, a library body or a compilation has at least: twice the 8 MB of
/// Redis's main thread, which runs its Lua. What recurses in C (Lua's pattern matcher, bounded
/// by lstrlib's `MAXMATCHDEPTH`, its parser and nested calls, bounded by `LUAI_MAXCCALLS`) and
/// in Rust (cjson, cmsgpack, replies, bounded by Lua's stack slots) stays well inside it.
pub(crate) const SCRIPT_STACK: usize = 16 << 20;

/// The stack of the threads of a node's own runtime (`server::runtime_builder`): a script
/// finds [`SCRIPT_STACK`] left on it and never switches stacks.
pub(crate) const THREAD_STACK: usize = SCRIPT_STACK + (4 << 20);

/// Runs `f` with at least [`SCRIPT_STACK`] of stack: on this thread's own when that much is
/// left (one comparison), else on a stack kept for the thread (a thread of a user's runtime, a
/// program's main thread calling a `LocalClient`, a blocking-pool thread of another runtime);
/// see `stack::on_stack`. A long script's instruction hook still hands the worker's tasks away
/// (`block_in_place`) from there: it is the same thread.
fn on_script_stack<R>(f: impl FnOnce() -> R) -> R {
    stack::on_stack(SCRIPT_STACK, f)
}

/// Instructions between two checks for `SCRIPT KILL` (Redis's `luaMaskCountHook` period).
const HOOK_PERIOD: u32 = 100_000;
/// Lua's `setpause` for the interpreter (see [`Engine::new`]).
const GC_PAUSE: i32 = 400;
/// Every this many runs, a collection step of this many KiB (Redis's `LUA_GC_CYCLE_PERIOD`):
/// garbage is reclaimed a little at a time instead of growing to the pause's threshold.
const GC_STEP_PERIOD: u32 = 50;
/// `REPL_ALL`.
pub(crate) const REPL_ALL: u8 = 3;
/// `REPL_REPLICA`.
pub(crate) const REPL_REPLICA: u8 = 2;
/// What the hook raises when a library's code runs past `FUNCTION LOAD`'s time limit.
pub(crate) const LOAD_TIMEOUT_ERROR: &str = "FUNCTION LOAD timeout";

/// The error a script stopped by the interpreter's memory bound gets (the bound is
/// [`crate::Config::lua_memory_limit`]; Redis has none).
pub(crate) const MEMORY_ERROR: &str =
    "ERR Script stopped: the Lua interpreter reached its memory limit (lua-memory-limit)";

/// What `redis.call` and `redis.pcall` run commands through.
pub(crate) trait Dispatcher {
    /// Runs `argv` inside the script. `Ok` holds the command's reply (which may be an error
    /// reply); `Err` holds the full text (code included) of a refusal decided before the
    /// command ran (unknown command, arity, not allowed from scripts, write in a read-only
    /// script). `repl` is the script's `redis.set_repl` setting.
    fn call(&mut self, argv: &[Bytes], resp3: bool, repl: u8) -> Result<Frame, String>;

    /// `redis.acl_check_cmd`: whether the user running the script may run `argv` (a line
    /// naming a known command).
    fn acl_check(&mut self, argv: &[Bytes]) -> bool;
}

/// Where `redis.call`/`redis.pcall` — created once per interpreter — find the dispatcher of the
/// run in progress: a type-erased pointer to the [`RunFrame`] that [`Engine::run`] holds on
/// its stack, set for exactly the duration of the run (a guard clears it, also on
/// unwinding) and null otherwise.
///
/// Creating the two functions per run with `Lua::scope` (the safe way to lend a borrowed
/// dispatcher to Lua) cost more than the rest of a short script together; the dispatcher
/// borrows the state lock's contents, the client and the effects for the run, so it cannot be
/// moved into a `'static` slot either. A callback takes the pointer out of the slot while it
/// uses it (so a nested call could never alias it) and puts it back afterwards.
#[derive(Debug, Default)]
struct DispatchSlot(AtomicPtr<()>);

impl DispatchSlot {
    /// Runs `f` with the current run's frame; `None` outside a run.
    fn with<R>(&self, f: impl FnOnce(&mut RunFrame<'_, '_>) -> R) -> Option<R> {
        struct Restore<'a>(&'a AtomicPtr<()>, *mut ());
        impl Drop for Restore<'_> {
            fn drop(&mut self) {
                self.0.store(self.1, Ordering::Release);
            }
        }
        let ptr = self.0.swap(std::ptr::null_mut(), Ordering::AcqRel);
        if ptr.is_null() {
            return None;
        }
        let _restore = Restore(&self.0, ptr);
        // SAFETY: a non-null pointer in the slot was stored by `Engine::run` from a live
        // `&mut RunFrame` on its stack, which it does not touch until its guard nulls the slot
        // before returning (or unwinding); Lua (and so this callback) only runs inside that
        // window, on the thread that called `run`. Swapping the pointer out above makes this
        // the only reference until `_restore` puts it back.
        #[allow(unsafe_code)]
        let frame = unsafe { &mut *ptr.cast::<RunFrame<'_, '_>>() };
        Some(f(frame))
    }
}

/// What `redis.call` needs of the run in progress.
struct RunFrame<'d, 'k> {
    /// Where commands go.
    dispatcher: &'d mut dyn Dispatcher,
    /// The `KEYS`/`ARGV` strings the run holds, for arguments that need no copy.
    known: &'k [convert::Known<'k>],
    /// The engine's cache of short argument strings.
    short: &'k mut convert::ShortStrings,
}

/// Nulls the dispatch slot when a run ends (also on unwinding).
struct ClearSlot<'a>(&'a DispatchSlot);

impl Drop for ClearSlot<'_> {
    fn drop(&mut self) {
        self.0 .0.store(std::ptr::null_mut(), Ordering::Release);
    }
}

thread_local! {
    /// Set while a script runs inline on a worker thread of a multi-thread tokio runtime
    /// ([`InlineRun`]); `HANDED_OFF` once the worker's other tasks were moved to another thread.
    static INLINE: Cell<bool> = const { Cell::new(false) };
    static HANDED_OFF: Cell<bool> = const { Cell::new(false) };
}

/// Marks the scripts run on this thread until the guard drops as running inline on a tokio
/// worker of a multi-thread runtime.
///
/// A script normally takes microseconds, so a connection runs it on its worker like any other
/// command (a `spawn_blocking` hand-off per script cost more than the script). A script that is
/// still running after [`HOOK_PERIOD`] instructions may run for long (`while true do end`), so
/// the instruction hook then calls [`tokio::task::block_in_place`]: the worker's queued tasks
/// move to a new worker thread and keep being served (other clients get `BUSY`, `SCRIPT KILL`
/// works) while this thread finishes the script. The hook waits (bounded) until a probe task
/// ran elsewhere, and retries at the next period if it did not, so the hand-off also holds
/// with a single worker. Only valid on a multi-thread runtime: the current-thread runtime
/// cannot move its tasks, so there connections keep running scripts on the blocking pool.
pub(crate) struct InlineRun(());

impl InlineRun {
    /// Enters inline mode for this thread.
    pub(crate) fn enter() -> Self {
        INLINE.with(|c| c.set(true));
        HANDED_OFF.with(|c| c.set(false));
        InlineRun(())
    }
}

impl Drop for InlineRun {
    fn drop(&mut self) {
        INLINE.with(|c| c.set(false));
        HANDED_OFF.with(|c| c.set(false));
    }
}

/// Called by the instruction hook: moves the worker's other tasks away from a long script.
fn hand_off_if_inline() {
    if !INLINE.with(Cell::get) || HANDED_OFF.with(Cell::get) {
        return;
    }
    let Ok(handle) = tokio::runtime::Handle::try_current() else {
        return;
    };
    if handle.runtime_flavor() != tokio::runtime::RuntimeFlavor::MultiThread {
        return;
    }
    let (tx, rx) = std::sync::mpsc::sync_channel::<()>(1);
    let ran = tokio::task::block_in_place(move || {
        // Once a worker ran the probe, the runtime is served by another thread (with one
        // worker: the new one, which took this worker's core, so it will not come back here).
        handle.spawn(async move {
            let _ = tx.send(());
        });
        rx.recv_timeout(Duration::from_millis(5)).is_ok()
    });
    HANDED_OFF.with(|c| c.set(ran));
}

/// Shebang flags (`#!lua flags=...`), as Redis 7 defines them.
pub(crate) mod script_flags {
    /// No shebang: Redis 6 compatible behaviour.
    pub(crate) const EVAL_COMPAT: u32 = 1 << 0;
    /// `no-writes`
    pub(crate) const NO_WRITES: u32 = 1 << 1;
    /// `allow-oom`
    pub(crate) const ALLOW_OOM: u32 = 1 << 2;
    /// `allow-stale`
    pub(crate) const ALLOW_STALE: u32 = 1 << 3;
    /// `no-cluster`
    pub(crate) const NO_CLUSTER: u32 = 1 << 4;
    /// `allow-cross-slot-keys`
    pub(crate) const ALLOW_CROSS_SLOT: u32 = 1 << 5;

    /// (name, flag) as written in a shebang.
    pub(crate) const NAMES: &[(&str, u32)] = &[
        ("no-writes", NO_WRITES),
        ("allow-oom", ALLOW_OOM),
        ("allow-stale", ALLOW_STALE),
        ("no-cluster", NO_CLUSTER),
        ("allow-cross-slot-keys", ALLOW_CROSS_SLOT),
    ];
}

/// Parses a `#!lua ...` first line as Redis's `evalExtractShebangFlags`: returns the flags and
/// the length of the shebang line (without its newline), or the error reply text.
pub(crate) fn parse_shebang(body: &[u8]) -> Result<(u32, usize), String> {
    if !body.starts_with(b"#!") {
        return Ok((script_flags::EVAL_COMPAT, 0));
    }
    let Some(end) = body.iter().position(|&b| b == b'\n') else {
        return Err("ERR Invalid script shebang".into());
    };
    let line = String::from_utf8_lossy(body.get(..end).unwrap_or_default()).into_owned();
    let mut parts = line.split_ascii_whitespace();
    let Some(engine) = parts.next() else {
        return Err("ERR Invalid engine in script shebang".into());
    };
    if engine != "#!lua" {
        return Err(format!("ERR Unexpected engine in script shebang: {engine}"));
    }
    let mut flags = 0;
    for part in parts {
        let Some(list) = part.strip_prefix("flags=") else {
            return Err(format!("ERR Unknown lua shebang option: {part}"));
        };
        // `flags=` declares none (Redis splits an empty list into no names).
        for name in list.split(',').filter(|_| !list.is_empty()) {
            match script_flags::NAMES.iter().find(|(n, _)| *n == name) {
                Some((_, flag)) => flags |= flag,
                None => return Err(format!("ERR Unexpected flag in script shebang: {name}")),
            }
        }
    }
    Ok((flags, end))
}

/// Lowercase hex SHA1 of `data` (script ids, `redis.sha1hex`).
/// The message of a chunk's compile error: Lua's own text for a syntax error.
fn compile_error(e: mlua::Error) -> String {
    match e {
        mlua::Error::SyntaxError { message, .. } => message,
        other => other.to_string(),
    }
}

pub(crate) fn sha1hex(data: &[u8]) -> String {
    use sha1::{Digest, Sha1};
    hex::encode(Sha1::digest(data))
}

/// One cached script.
#[derive(Debug)]
pub(crate) struct Compiled {
    /// Shebang flags ([`script_flags`]).
    pub(crate) flags: u32,
    /// The compiled chunk.
    func: stack::Registered,
    /// The script as loaded (`SCRIPT SHOW`).
    pub(crate) body: Bytes,
    /// For a script `EVAL` added where such scripts are evicted: when it last ran (or was
    /// added), in [`EvalEviction::tick`]s. `None` for one `SCRIPT LOAD` added (or promoted).
    last_run: Option<u64>,
}

/// Valkey's (and Redis 7.4's) eviction of the scripts `EVAL` adds, so that a client sending a
/// new script body each time cannot grow the cache without bound: at most
/// [`EVAL_SCRIPTS_MAX`], the one run least recently evicted first; `SCRIPT LOAD`'s never.
#[derive(Debug, Default)]
struct EvalEviction {
    /// Ticks handed out to runs so far.
    tick: u64,
    /// Cached scripts that may be evicted.
    evictable: usize,
    /// Scripts evicted since the last [`Engine::take_evicted`].
    evicted: u64,
}

/// At most this many scripts added by `EVAL` stay cached (`LRU_LIST_LENGTH`).
pub(crate) const EVAL_SCRIPTS_MAX: usize = 500;

/// State shared between the engine and its Rust primitives for the current run.
#[derive(Debug)]
struct RunShared {
    /// `redis.setresp` (2 or 3).
    resp: AtomicU8,
    /// `redis.set_repl` flags.
    repl: AtomicU8,
    /// rand48 state.
    rand: AtomicU64,
    /// Where the kill hook stopped the script: (source, line).
    killed_at: Mutex<Option<(String, i64)>>,
    /// The last run's reply is an error already counted in the error statistics (it came
    /// from a command the script ran: `ignore_error_stats_update`).
    error_counted: AtomicBool,
    /// The dispatcher of the run in progress.
    dispatch: DispatchSlot,
    /// While `FUNCTION LOAD` runs a library's code: the functions it registered so far.
    loading: Mutex<Option<Vec<FunctionDef>>>,
    /// How the node's target writes doubles (a script's numbers as arguments, a double reply
    /// read in RESP2).
    doubles: locksmith_resp::Doubles,
    /// The target's texts of the API's errors.
    texts: &'static crate::compat::ScriptTexts,
    /// The error a killed run ends with (`SCRIPT KILL`'s, or `FUNCTION KILL`'s in the
    /// interpreter of functions).
    killed_error: &'static str,
}

impl RunShared {
    fn new(compat: crate::compat::Compat, for_functions: bool) -> Self {
        let texts = &compat.profile().script_texts;
        Self {
            resp: AtomicU8::default(),
            repl: AtomicU8::default(),
            rand: AtomicU64::default(),
            killed_at: Mutex::default(),
            error_counted: AtomicBool::default(),
            dispatch: DispatchSlot::default(),
            loading: Mutex::default(),
            doubles: compat.profile().encodings.doubles,
            texts,
            killed_error: if for_functions {
                texts.function_killed
            } else {
                texts.script_killed
            },
        }
    }
}

/// A function a library registered with `redis.register_function`.
#[derive(Debug)]
pub(crate) struct FunctionDef {
    /// Its name (letters, digits and `_`; looked up ignoring case).
    pub(crate) name: String,
    /// `description`, if given.
    pub(crate) description: Option<Bytes>,
    /// Its flags ([`script_flags`], never `EVAL_COMPAT`).
    pub(crate) flags: u32,
    /// The Lua function, held in the interpreter's registry.
    callback: mlua::RegistryKey,
}

/// The environments of a functions interpreter (see `functions.lua`).
#[derive(Debug)]
struct FunctionsEnv {
    /// The empty, read-only globals table of library code and functions.
    env: mlua::Table,
    /// Its metatable, whose `__index` the engine switches.
    env_mt: stack::Registered,
    /// The library API table (`__index` while a library loads).
    lib: stack::Registered,
}

/// A node's Lua interpreter and script cache.
pub(crate) struct Engine {
    lua: Lua,
    /// The interpreter's main thread, which scripts run on.
    main: stack::MainState,
    scripts: HashMap<String, Compiled>,
    /// What Redis counts for the cached scripts' SHA1s and bodies (`lua_scripts_mem`): the
    /// allocation of each as an sds string.
    scripts_bytes: usize,
    /// The globals table (read-only, as every table the sandbox reaches).
    globals: stack::Registered,
    /// `__redis__err__handler`.
    handler: stack::Registered,
    /// Short `redis.call` argument strings, shared by runs.
    short: std::cell::RefCell<convert::ShortStrings>,
    /// Runs since the last collection step (see [`GC_STEP_PERIOD`]).
    runs_since_step: Cell<u32>,
    /// Bytes the interpreter held once built and collected (its live heap, about).
    baseline: Cell<usize>,
    shared: Arc<RunShared>,
    kill: Arc<AtomicBool>,
    command_exists: CommandExists,
    /// How it was made (memory bound, compatibility target), for `SCRIPT FLUSH`'s new one.
    settings: LuaSettings,
    /// Where the target evicts `EVAL`'s scripts: their order of use.
    eviction: Option<EvalEviction>,
    /// Set for the interpreter of functions (`FUNCTION LOAD`, `FCALL`).
    functions: Option<FunctionsEnv>,
    /// The instruction hook's context and the memory bound (the allocator's userdata);
    /// declared after `lua`, so it outlives the interpreter.
    hook: Box<stack::HookContext>,
}

impl Drop for Engine {
    /// As Redis's fix for CVE-2024-46981: a full collection, from whatever state a script left
    /// the collector in (`collectgarbage('stop')`, a cycle half done), before the interpreter
    /// closes (`SCRIPT FLUSH`, `FUNCTION FLUSH`, a node stopping).
    fn drop(&mut self) {
        self.lua.gc_restart();
        let _ = self.lua.gc_collect();
    }
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("scripts", &self.scripts.len())
            .finish_non_exhaustive()
    }
}

/// Checks whether a command line names a known command (for `redis.acl_check_cmd`, which
/// raises an error otherwise).
pub(crate) type CommandExists = fn(crate::compat::Compat, &[Bytes]) -> bool;

/// The compatibility target's part of the sandbox, for `sandbox.lua` and `functions.lua`:
/// `{names = {...}, versions = {...}, texts = {...}, os_clock = bool}` from the target's
/// profile.
fn target_table(lua: &Lua, compat: crate::compat::Compat) -> mlua::Result<mlua::Table> {
    use crate::compat::LuaConst;
    let profile = compat.profile();
    let versions = lua.create_table()?;
    for &(name, value) in profile.lua_versions {
        match value {
            LuaConst::Text(text) => versions.raw_set(name, text)?,
            LuaConst::Number(n) => versions.raw_set(name, n)?,
        }
    }
    let target = lua.create_table()?;
    target.raw_set(
        "names",
        lua.create_sequence_from(profile.lua_api_names.iter().copied())?,
    )?;
    target.raw_set("versions", versions)?;
    let texts = &profile.script_texts;
    let messages = lua.create_table()?;
    for (name, text) in [
        ("log_arity", texts.log_arity),
        ("log_level", texts.log_level),
        ("setresp_arity", texts.setresp_arity),
        ("set_repl_arity", texts.set_repl_arity),
    ] {
        messages.raw_set(name, text)?;
    }
    target.raw_set("texts", messages)?;
    target.raw_set("os_clock", texts.os_clock)?;
    Ok(target)
}

impl Engine {
    /// A fresh interpreter with Redis's sandbox. `kill` is the node's `SCRIPT KILL` flag, checked
    /// by the instruction hook.
    pub(crate) fn new(
        kill: Arc<AtomicBool>,
        command_exists: CommandExists,
        lua: LuaSettings,
    ) -> mlua::Result<Self> {
        Self::build(kill, command_exists, lua, false)
    }

    /// A fresh interpreter for functions: Redis's sandbox, plus the library API that
    /// `FUNCTION LOAD` runs a library's code with.
    pub(crate) fn new_functions(
        kill: Arc<AtomicBool>,
        command_exists: CommandExists,
        lua: LuaSettings,
    ) -> mlua::Result<Self> {
        Self::build(kill, command_exists, lua, true)
    }

    fn build(
        kill: Arc<AtomicBool>,
        command_exists: CommandExists,
        settings: LuaSettings,
        for_functions: bool,
    ) -> mlua::Result<Self> {
        let memory_limit = settings.memory_limit;
        let lua = Lua::new_with(
            StdLib::TABLE | StdLib::STRING | StdLib::MATH,
            LuaOptions::default(),
        )?;
        let shared = Arc::new(RunShared::new(settings.compat, for_functions));
        // Redis's rand48 state is process-wide and never reseeded between scripts.
        shared.rand.store(api::RAND48_SEED, Ordering::Relaxed);
        let raw = api::primitives(&lua, shared.clone(), command_exists, settings.compat)?;
        raw.raw_set(
            "call",
            stack::c_function::<RedisCall>(&lua, shared.clone())?,
        )?;
        raw.raw_set(
            "pcall",
            stack::c_function::<RedisPcall>(&lua, shared.clone())?,
        )?;
        let globals = lua.globals();
        let target = target_table(&lua, settings.compat)?;
        let (protect, missing_global): (Function, Function) = lua
            .load(include_str!("sandbox.lua"))
            .set_name(INTERNAL_CHUNK)
            .set_mode(ChunkMode::Text)
            .call((raw, globals.clone(), target.clone()))?;
        let handler: Function = globals.raw_get("__redis__err__handler")?;
        let main = stack::MainState::of(&lua)?;
        let functions = if for_functions {
            let prims = library::primitives(&lua, shared.clone())?;
            let (env, env_mt, lib): (mlua::Table, mlua::Table, mlua::Table) = lua
                .load(include_str!("functions.lua"))
                .set_name(INTERNAL_CHUNK)
                .set_mode(ChunkMode::Text)
                .call((prims, globals.clone(), protect, missing_global, target))?;
            Some(FunctionsEnv {
                env,
                env_mt: main.register(&lua, env_mt)?,
                lib: main.register(&lua, lib)?,
            })
        } else {
            None
        };
        let handler = main.register(&lua, handler)?;
        let globals = main.register(&lua, globals)?;
        // Each run leaves two small tables (KEYS, ARGV) as garbage over a heap that is mostly
        // the sandbox itself; with Lua's default pause (200 %) the collector re-marked that
        // heap so often that it cost ~5 % of a Redisson acquire. 400 % lets garbage grow to
        // 3x the live heap (a few hundred KiB) between cycles.
        lua.gc_set_pause(GC_PAUSE);
        // What building the sandbox left is garbage: collected now, the count that remains
        // is the interpreter's live heap.
        lua.gc_collect()?;
        let hook = main.install_hook(kill.clone(), shared.clone(), memory_limit);
        let baseline = hook.memory.used();
        Ok(Engine {
            lua,
            main,
            short: Default::default(),
            runs_since_step: Cell::new(0),
            baseline: Cell::new(baseline),
            scripts: HashMap::new(),
            scripts_bytes: 0,
            globals,
            handler,
            shared,
            kill,
            command_exists,
            settings,
            functions,
            hook,
            eviction: settings
                .compat
                .profile()
                .semantics
                .eval_scripts_evicted
                .then(EvalEviction::default),
        })
    }

    /// `SCRIPT FLUSH`: a fresh interpreter and an empty cache. The random generator's state
    /// carries over, as Redis's is process-wide.
    pub(crate) fn reset(&mut self) -> mlua::Result<()> {
        let rand = self.shared.rand.load(Ordering::Relaxed);
        *self = Engine::build(
            self.kill.clone(),
            self.command_exists,
            self.settings,
            self.functions.is_some(),
        )?;
        let evicted = self.eviction.as_ref().map_or(0, |e| e.evicted);
        self.shared.rand.store(rand, Ordering::Relaxed);
        if let Some(eviction) = &mut self.eviction {
            eviction.evicted = evicted;
        }
        Ok(())
    }

    /// Compiles `body` (if not cached) and returns its SHA1, or the error reply text
    /// (shebang errors, `Error compiling script (new function): ...`). `by_eval`: `EVAL` adds
    /// it (evictable where the target evicts such scripts), else `SCRIPT LOAD`, which also
    /// keeps a script `EVAL` added from eviction.
    pub(crate) fn load(&mut self, body: &Bytes, by_eval: bool) -> Result<String, String> {
        let sha = sha1hex(body);
        if let Some(cached) = self.scripts.get_mut(&sha) {
            if !by_eval && cached.last_run.take().is_some() {
                if let Some(eviction) = &mut self.eviction {
                    eviction.evictable -= 1;
                }
            }
            return Ok(sha);
        }
        let (flags, shebang_len) = parse_shebang(body)?;
        // The shebang line is skipped but its line feed kept, so line numbers stay right.
        let source = body.get(shebang_len..).unwrap_or_default();
        // The parser recurses (up to LUAI_MAXCCALLS levels of big frames). No mode: a binary
        // chunk reaches the patched Lua, which parses it as text and gives Redis's error.
        let func = on_script_stack(|| {
            self.lua
                .load(source)
                .set_name("@user_script")
                .into_function()
        })
        .map_err(|e| {
            format!(
                "ERR Error compiling script (new function): {}",
                compile_error(e)
            )
        })?;
        let func = self
            .main
            .register(&self.lua, func)
            .map_err(|e| e.to_string())?;
        let last_run = match &mut self.eviction {
            Some(eviction) if by_eval => {
                eviction.tick += 1;
                Some(eviction.tick)
            }
            _ => None,
        };
        if last_run.is_some() {
            self.evict_to(EVAL_SCRIPTS_MAX - 1);
            if let Some(eviction) = &mut self.eviction {
                eviction.evictable += 1;
            }
        }
        self.scripts_bytes +=
            crate::db::memory::sds(sha.len()) + crate::db::memory::sds(body.len());
        self.scripts.insert(
            sha.clone(),
            Compiled {
                flags,
                func,
                body: Bytes::copy_from_slice(body),
                last_run,
            },
        );
        Ok(sha)
    }

    /// Evicts the evictable scripts run least recently until at most `keep` are left.
    fn evict_to(&mut self, keep: usize) {
        while self.eviction.as_ref().is_some_and(|e| e.evictable > keep) {
            let oldest = self
                .scripts
                .iter()
                .filter_map(|(sha, c)| Some((c.last_run?, sha)))
                .min()
                .map(|(_, sha)| sha.clone());
            let Some(sha) = oldest else {
                break;
            };
            if let Some(gone) = self.scripts.remove(&sha) {
                self.main.unregister(gone.func);
                self.scripts_bytes = self.scripts_bytes.saturating_sub(
                    crate::db::memory::sds(sha.len()) + crate::db::memory::sds(gone.body.len()),
                );
            }
            if let Some(eviction) = &mut self.eviction {
                eviction.evictable -= 1;
                eviction.evicted += 1;
            }
        }
    }

    /// Notes that the script cached as `sha` ran (the most recently used of the evictable).
    pub(crate) fn ran(&mut self, sha: &str) {
        if let Some(eviction) = &mut self.eviction {
            if let Some(last_run) = self.scripts.get_mut(sha).and_then(|c| c.last_run.as_mut()) {
                eviction.tick += 1;
                *last_run = eviction.tick;
            }
        }
    }

    /// Scripts evicted since the last call (`INFO stats`' `evicted_scripts` adds them up).
    pub(crate) fn take_evicted(&mut self) -> u64 {
        self.eviction
            .as_mut()
            .map_or(0, |e| std::mem::take(&mut e.evicted))
    }

    /// Runs a library's code (what follows its `#!lua` line) with the library API, as
    /// `FUNCTION LOAD` does, and returns the functions it registered; stopped with
    /// `FUNCTION LOAD timeout` past `timeout`. Errors are the reply's text without its code
    /// (`Error compiling function: ...`, `Error registering functions: ...`).
    pub(crate) fn load_library(
        &self,
        code: &[u8],
        timeout: Option<Duration>,
    ) -> Result<Vec<FunctionDef>, String> {
        let Some(env) = &self.functions else {
            return Err("the interpreter does not run functions".into());
        };
        let chunk = on_script_stack(|| {
            self.lua
                .load(code)
                .set_name("@user_function")
                .set_environment(env.env.clone())
                .into_function()
        })
        .map_err(|e| format!("Error compiling function: {}", compile_error(e)))?;
        let chunk = self
            .lua
            .create_registry_value(chunk)
            .map_err(|e| e.to_string())?;
        let chunk_ref = stack::Registered::of_key(&chunk);
        if let Ok(mut loading) = self.shared.loading.lock() {
            *loading = Some(Vec::new());
        }
        if let Some(timeout) = timeout {
            let limit = u64::try_from(timeout.as_micros()).unwrap_or(u64::MAX);
            let deadline = stack::load_clock_us().saturating_add(limit).max(1);
            self.hook.load_deadline.store(deadline, Ordering::Relaxed);
        }
        self.kill.store(false, Ordering::Release);
        self.main.arm_hook();
        let memory = &self.hook.memory;
        let (globals, handler, lib, env_mt) = (self.globals, self.handler, env.lib, env.env_mt);
        let outcome = on_script_stack(|| {
            self.main
                .with(|stack| -> Result<Result<(), String>, stack::StackError> {
                    let h = stack.top() + 1;
                    stack.push_registered(handler)?;
                    set_index(stack, env_mt, lib)?;
                    stack.push_registered(chunk_ref)?;
                    memory.arm();
                    let status = stack.call(0, h);
                    memory.disarm();
                    let result = match status {
                        Ok(()) => Ok(()),
                        Err(_) => {
                            let top = stack.top();
                            let msg = match stack.kind(top) {
                                Kind::Table => convert::string_field(stack, top, b"err"),
                                _ => stack.bytes(top).map(<[u8]>::to_vec),
                            };
                            let msg = msg.map_or_else(
                                || "execution failure".into(),
                                |m| String::from_utf8_lossy(&m).into_owned(),
                            );
                            Err(format!("Error registering functions: {msg}"))
                        }
                    };
                    set_index(stack, env_mt, globals)?;
                    Ok(result)
                })
        });
        self.hook.load_deadline.store(0, Ordering::Relaxed);
        self.main.arm_hook();
        let registered = self
            .shared
            .loading
            .lock()
            .ok()
            .and_then(|mut l| l.take())
            .unwrap_or_default();
        drop(chunk);
        // One incremental step, as a script's run takes: a full collection per load made each
        // FUNCTION LOAD cost O(libraries loaded) (84 % of a REPLACE at 20 000 libraries).
        let _ = self.lua.gc_step();
        self.lua.gc_set_pause(GC_PAUSE);
        match outcome {
            Some(Ok(Ok(()))) => Ok(registered),
            Some(Ok(Err(msg))) => Err(msg),
            Some(Err(stack::StackError)) => Err("reached lua stack limit".into()),
            None => Err("the interpreter is busy".into()),
        }
    }

    /// The cached script with this (lowercase) SHA1.
    pub(crate) fn get(&self, sha: &str) -> Option<&Compiled> {
        self.scripts.get(sha)
    }

    /// Whether the last run's reply is an error that was already counted when the command
    /// the script ran failed (Redis's `ignore_error_stats_update`): not to be counted again.
    pub(crate) fn last_error_counted(&self) -> bool {
        self.shared.error_counted.load(Ordering::Relaxed)
    }

    /// Bytes the interpreter holds (`used_memory_lua`).
    pub(crate) fn memory_used(&self) -> usize {
        self.hook.memory.used()
    }

    /// Number of cached scripts.
    pub(crate) fn len(&self) -> usize {
        self.scripts.len()
    }

    /// Redis's `evalScriptsMemory` (`MEMORY STATS` `lua.caches`): the cached scripts' SHA1s
    /// and bodies, a dict entry and a `luaScript` (16 bytes) each, and the dict's buckets.
    pub(crate) fn cache_memory(&self) -> usize {
        let n = self.scripts.len();
        let buckets = if n == 0 {
            0
        } else {
            n.next_power_of_two().max(4)
        };
        self.scripts_bytes + n * (24 + 16) + 8 * buckets
    }

    /// Runs `script` (cached as `sha`) with `KEYS`/`ARGV`, sending `redis.call` through
    /// `dispatcher`, and returns the reply as Redis would send it.
    pub(crate) fn run(
        &self,
        script: &Compiled,
        sha: &str,
        keys_args: (&[Bytes], &[Bytes]),
        dispatcher: &mut dyn Dispatcher,
    ) -> Frame {
        self.run_chunk(script.func, sha, false, keys_args, dispatcher)
    }

    /// Calls `function` (registered on this interpreter) with the keys and arguments as its two
    /// parameters, sending `redis.call` through `dispatcher`; errors name the function.
    pub(crate) fn call_function(
        &self,
        function: &FunctionDef,
        keys_args: (&[Bytes], &[Bytes]),
        dispatcher: &mut dyn Dispatcher,
    ) -> Frame {
        let func = stack::Registered::of_key(&function.callback);
        self.run_chunk(func, &function.name, true, keys_args, dispatcher)
    }

    /// One run: `func` called with `KEYS`/`ARGV` as globals (`EVAL`) or as its two arguments
    /// (`FCALL`, `as_function`); `name` (the SHA1 or the function's name) locates errors.
    fn run_chunk(
        &self,
        func: stack::Registered,
        sha: &str,
        as_function: bool,
        (keys, args): (&[Bytes], &[Bytes]),
        dispatcher: &mut dyn Dispatcher,
    ) -> Frame {
        let shared = &*self.shared;
        shared.resp.store(2, Ordering::Relaxed);
        shared.repl.store(REPL_ALL, Ordering::Relaxed);
        if let Ok(mut at) = shared.killed_at.lock() {
            *at = None;
        }
        let kill = &self.kill;
        let memory = &self.hook.memory;
        let ended = std::cell::Cell::new((false, false));
        let exhausted_cell = &ended;
        self.main.arm_hook();
        let (globals, handler) = (self.globals, self.handler);
        let Ok(mut short) = self.short.try_borrow_mut() else {
            return convert::error_frame(&format!(
                "ERR Error running script {sha}, the interpreter is busy"
            ));
        };
        let outcome = on_script_stack(|| {
            self.main
                .with(move |stack| -> Result<Frame, stack::StackError> {
                    // Stack from `base`: the real globals, the error handler, then the KEYS/ARGV
                    // strings `redis.call` recognises ([`convert::Known`]).
                    let base = stack.top();
                    let (g, h, first) = (base + 1, base + 2, base + 3);
                    stack.push_registered(globals)?;
                    stack.push_registered(handler)?;
                    let mut known = Vec::with_capacity(keys.len() + args.len());
                    convert::push_known(stack, keys, &mut known)?;
                    let anchored_keys = known.len();
                    convert::push_known(stack, args, &mut known)?;
                    let anchored_args = known.len() - anchored_keys;
                    let nargs = if as_function {
                        // Functions get KEYS and ARGV as their two parameters.
                        stack.push_registered(func)?;
                        convert::push_bytes_array(stack, keys, first, anchored_keys)?;
                        convert::push_bytes_array(
                            stack,
                            args,
                            first + anchored_keys as i32,
                            anchored_args,
                        )?;
                        2
                    } else {
                        // The globals are read-only to scripts; the run opens them for KEYS and
                        // ARGV only (as Redis's luaSetGlobalArray), and closes them again either way.
                        stack.set_readonly(g, false)?;
                        let set = (|| {
                            stack.push_bytes(b"KEYS")?;
                            convert::push_bytes_array(stack, keys, first, anchored_keys)?;
                            stack.raw_set(g)?;
                            stack.push_bytes(b"ARGV")?;
                            convert::push_bytes_array(
                                stack,
                                args,
                                first + anchored_keys as i32,
                                anchored_args,
                            )?;
                            stack.raw_set(g)
                        })();
                        stack.set_readonly(g, true)?;
                        set?;
                        stack.push_registered(func)?;
                        0
                    };
                    let mut frame = RunFrame {
                        dispatcher,
                        known: &known,
                        short: &mut short,
                    };
                    let ptr: *mut RunFrame<'_, '_> = &mut frame;
                    shared.dispatch.0.store(ptr.cast(), Ordering::Release);
                    let status = {
                        let _clear = ClearSlot(&shared.dispatch);
                        memory.arm();
                        let status = stack.call(nargs, h);
                        exhausted_cell.set(memory.disarm());
                        status
                    };
                    let exhausted = exhausted_cell.get();
                    let resp3 = shared.resp.load(Ordering::Relaxed) == 3;
                    shared
                        .error_counted
                        .store(counted_error(stack), Ordering::Relaxed);
                    let killed = kill.load(Ordering::Acquire);
                    Ok(match status {
                        _ if killed => killed_reply(stack, shared, sha, shared.killed_error),
                        _ if exhausted.0 => killed_reply(stack, shared, sha, MEMORY_ERROR),
                        Ok(()) => {
                            // Converted with the result right above the globals, as Redis's is
                            // above its error handler alone: the handler and the KEYS/ARGV strings
                            // are no longer needed, and the Lua stack left for a nested reply is
                            // Redis's ("reached lua stack limit" at the same depth).
                            stack.move_top_to(h);
                            convert::reply_at(stack, -1, resp3)
                        }
                        Err(_) if stack.kind(-1) == Kind::Table => {
                            let top = stack.top();
                            let msg = convert::string_field(stack, top, b"err").unwrap_or_default();
                            let source = convert::string_field(stack, top, b"source");
                            let line = convert::string_field(stack, top, b"line");
                            error_reply(&msg, sha, source, line)
                        }
                        Err(_) => {
                            let msg = match stack.bytes(-1) {
                                Some(s) => String::from_utf8_lossy(s).into_owned(),
                                None => "execution failure".into(),
                            };
                            let msg: String = msg.chars().take(100).collect();
                            convert::error_frame(&format!("ERR Error running script {sha}, {msg}"))
                        }
                    })
                })
        });
        let runs = self.runs_since_step.get() + 1;
        if runs >= GC_STEP_PERIOD {
            // Only once garbage is past half the live heap: a step started from the collector's
            // pause begins a whole new cycle, which a lock script would pay for every time.
            if self.hook.memory.used() > self.baseline.get() + self.baseline.get() / 2 {
                let _ = self.lua.gc_step_kbytes(GC_STEP_PERIOD as i32);
            }
            self.runs_since_step.set(0);
        } else {
            self.runs_since_step.set(runs);
        }
        let (exceeded, pressed) = ended.get();
        if exceeded || pressed {
            // Give back what the script held (it is garbage now) and the collector's pace.
            let _ = self.lua.gc_collect();
            self.lua.gc_set_pause(GC_PAUSE);
        }
        match outcome {
            Some(Ok(reply)) => reply,
            Some(Err(stack::StackError)) => convert::error_frame("ERR reached lua stack limit"),
            None => convert::error_frame(&format!(
                "ERR Error running script {sha}, the interpreter is busy"
            )),
        }
    }
}

/// Whether the value on top is an error table marked `ignore_error_stats_update`.
fn counted_error(stack: &mut Stack<'_>) -> bool {
    if stack.kind(-1) != Kind::Table {
        return false;
    }
    let top = stack.top();
    let marked = matches!(
        stack.get_field(top, b"ignore_error_stats_update"),
        Ok(Kind::Boolean)
    ) && stack.boolean(-1) == Some(true);
    if stack.top() > top {
        stack.pop(stack.top() - top);
    }
    marked
}

/// Sets `__index` of the (read-only) metatable `mt` to `value`, keeping it read-only.
fn set_index(
    stack: &mut Stack<'_>,
    mt: stack::Registered,
    value: stack::Registered,
) -> Result<(), stack::StackError> {
    stack.push_registered(mt)?;
    let t = stack.top();
    stack.set_readonly(t, false)?;
    stack.push_registered(value)?;
    let set = stack.set_field(t, b"__index");
    stack.set_readonly(t, true)?;
    stack.pop(1);
    set
}

/// The reply of a script stopped by `SCRIPT KILL`, located where the hook stopped it (or
/// where the error value says).
fn killed_reply(stack: &mut Stack<'_>, shared: &RunShared, sha: &str, message: &str) -> Frame {
    let (source, line) = if stack.kind(-1) == Kind::Table {
        let top = stack.top();
        (
            convert::string_field(stack, top, b"source"),
            convert::string_field(stack, top, b"line"),
        )
    } else {
        (None, None)
    };
    let (source, line) = match (source, line) {
        (Some(s), Some(l)) => (Some(s), Some(l)),
        _ => match shared.killed_at.lock().ok().and_then(|a| a.clone()) {
            Some((s, l)) => (Some(s.into_bytes()), Some(l.to_string().into_bytes())),
            None => (None, None),
        },
    };
    error_reply(message.as_bytes(), sha, source, line)
}

/// `redis.call`: runs a command through the run's dispatcher; an error reply is raised.
struct RedisCall;
/// `redis.pcall`: as `redis.call`, but an error reply is returned as its error table.
struct RedisPcall;

impl CFunction for RedisCall {
    type Context = RunShared;
    fn call(stack: &mut Stack<'_>, shared: &RunShared) -> Return {
        match redis_call(stack, shared) {
            Ok(true) => Return::Values(1),
            Ok(false) => Return::Raise,
            Err(_) => stack_limit(stack),
        }
    }
}

impl CFunction for RedisPcall {
    type Context = RunShared;
    fn call(stack: &mut Stack<'_>, shared: &RunShared) -> Return {
        match redis_call(stack, shared) {
            Ok(_) => Return::Values(1),
            Err(_) => stack_limit(stack),
        }
    }
}

/// Raises the error for a reply too deep for the Lua stack.
fn stack_limit(stack: &mut Stack<'_>) -> Return {
    stack.pop(stack.top());
    match stack.push_bytes(b"reached lua stack limit") {
        Ok(()) => Return::Raise,
        Err(_) => Return::Values(0),
    }
}

/// One `redis.call`/`redis.pcall` (Redis's `luaRedisGenericCommand`): pushes the reply and
/// returns `true`, or pushes the error table and returns `false`.
fn redis_call(stack: &mut Stack<'_>, shared: &RunShared) -> Result<bool, stack::StackError> {
    let resp3 = shared.resp.load(Ordering::Relaxed) == 3;
    let repl = shared.repl.load(Ordering::Relaxed);
    let outcome = shared
        .dispatch
        .with(|frame| {
            let argv = convert::argv_from_stack(stack, frame.known, frame.short, shared.doubles);
            // The arguments are copied: pop them (as luaArgsToRedisArgv does), so the
            // reply has the whole C stack even after `unpack` of thousands of values.
            stack.pop(stack.top());
            match argv {
                Ok(argv) => Ok(frame.dispatcher.call(&argv, resp3, repl)),
                Err(why) => Err(why.text(shared.texts).as_bytes()),
            }
        })
        .unwrap_or_else(|| {
            Ok(Err(
                "ERR redis.call is only available inside a script".into()
            ))
        });
    let outcome = match outcome {
        Ok(outcome) => outcome,
        Err(msg) => {
            convert::push_error_table(stack, msg, false)?;
            return Ok(false);
        }
    };
    match outcome {
        Err(text) => {
            convert::push_reply_error(stack, text.as_bytes())?;
            Ok(false)
        }
        Ok(Frame::Error(e)) => {
            convert::push_reply_error(stack, &e)?;
            Ok(false)
        }
        Ok(frame) => {
            convert::push_reply(stack, frame, resp3, shared.doubles)?;
            Ok(true)
        }
    }
}

/// The reply for a script that raised `msg`: `-<msg> script: <sha>, on <source>:<line>.`
fn error_reply(msg: &[u8], sha: &str, source: Option<Vec<u8>>, line: Option<Vec<u8>>) -> Frame {
    let mut text = String::from_utf8_lossy(msg).into_owned();
    if let (Some(source), Some(line)) = (source, line) {
        let source = String::from_utf8_lossy(&source);
        let line = String::from_utf8_lossy(&line);
        text.push_str(&format!(" script: {sha}, on {source}:{line}."));
    }
    convert::error_frame(&text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shebang_flags_parse_as_redis() {
        assert_eq!(
            parse_shebang(b"return 1"),
            Ok((script_flags::EVAL_COMPAT, 0))
        );
        assert_eq!(parse_shebang(b"#!lua\nreturn 1"), Ok((0, 5)));
        assert_eq!(
            parse_shebang(b"#!lua flags=no-writes,allow-stale\nreturn 1"),
            Ok((script_flags::NO_WRITES | script_flags::ALLOW_STALE, 33))
        );
        assert_eq!(
            parse_shebang(b"#!lua"),
            Err("ERR Invalid script shebang".into())
        );
        assert_eq!(
            parse_shebang(b"#!py\n"),
            Err("ERR Unexpected engine in script shebang: #!py".into())
        );
        assert_eq!(
            parse_shebang(b"#!lua flags=bad\n"),
            Err("ERR Unexpected flag in script shebang: bad".into())
        );
        assert_eq!(
            parse_shebang(b"#!lua x=1\n"),
            Err("ERR Unknown lua shebang option: x=1".into())
        );
        // An empty list declares no flag; an empty name in a list is not one.
        assert_eq!(parse_shebang(b"#!lua flags=\nreturn 1"), Ok((0, 12)));
        assert_eq!(
            parse_shebang(b"#!lua flags=no-writes,,allow-oom\n"),
            Err("ERR Unexpected flag in script shebang: ".into())
        );
    }

    #[test]
    fn sha1hex_is_lowercase_hex() {
        assert_eq!(sha1hex(b""), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
    }
}
