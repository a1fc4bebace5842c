//! Persistence for fixtures: SAVE and BGSAVE write an RDB file (`dir`/`dbfilename`) that
//! redis-server loads; LASTSAVE; loading such a file when the server starts
//! ([`load_at_start`]) and again on `DEBUG RELOAD` ([`reload`]). There is no AOF and no
//! automatic `save` schedule.

use super::{Args, CmdResult, Command, CommandError, Ctx};
use crate::node::{Node, State};
use crate::rdb::file;
use bytes::Bytes;
use locksmith_resp::Frame;
use std::path::PathBuf;
use std::sync::atomic::Ordering;

/// The persistence family's table.
pub(crate) static COMMANDS: &[Command] = &[
    Command::new("save", save),
    Command::new("bgsave", bgsave),
    Command::new("lastsave", lastsave),
];

/// `dir`/`dbfilename`.
fn rdb_path(state: &State) -> PathBuf {
    let dir = state.config.dir();
    let name = state.config.dbfilename();
    if dir.is_empty() {
        PathBuf::from(name)
    } else {
        PathBuf::from(dir).join(name)
    }
}

/// How the node writes values now (`rdbcompression`, its list limits).
pub(crate) fn rdb_encoding(ctx: &Ctx<'_>) -> crate::rdb::Encoding {
    let packed = ctx
        .node
        .live
        .quicklist_packed_threshold
        .load(Ordering::Relaxed);
    crate::rdb::Encoding::of(&ctx.state.config, packed)
}

/// The node's data as an RDB file.
fn encode(state: &State, now_ms: u64, encoding: crate::rdb::Encoding) -> Vec<u8> {
    let functions: Vec<Bytes> = state
        .functions
        .libraries()
        .map(|l| l.code.clone())
        .collect();
    file::encode_dataset(&state.dbs, &functions, now_ms, encoding)
}

/// A replica's full synchronisation: replaces the whole dataset and the function libraries
/// with the RDB payload `data` its master sent (keys already expired kept, as a replica waits
/// for its master's `DEL`), as `FLUSHALL` then a load would; returns the keys loaded. A
/// payload that cannot be parsed changes nothing.
pub(super) fn install_from_master(
    state: &mut State,
    node: &Node,
    data: &[u8],
    now: u64,
) -> Result<usize, String> {
    let packed = node
        .live
        .quicklist_packed_threshold
        .load(std::sync::atomic::Ordering::Relaxed);
    let rules = crate::rdb::Load::of(&state.config, packed);
    let contents = file::read(data, 0, state.dbs.len(), rules)?;
    let mut client = crate::replication::master_client(node);
    let mut effects = crate::node::Effects::default();
    let mut ctx = Ctx {
        state,
        node,
        client: &mut client,
        now,
        effects: &mut effects,
        write: true,
    };
    let dirty = ctx.state.dirty;
    super::server::flush_all(&mut ctx, false);
    ctx.state.functions.flush();
    ctx.state.dirty = dirty;
    let loaded = load(ctx.state, node, contents, true);
    state.finish_effects(node, &mut effects);
    loaded
}

/// Writes `data` to `path` through a temporary file renamed over it (as Redis does).
fn write_file(path: &PathBuf, data: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_file_name(format!("temp-{}.rdb", std::process::id()));
    std::fs::write(&tmp, data)?;
    std::fs::rename(&tmp, path)
}

/// ```text
/// SAVE
/// ```
fn save(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    save_now(ctx)?;
    Ok(Frame::ok())
}

/// Writes the node's data to `dir`/`dbfilename` now (SAVE, `DEBUG RELOAD`); Redis's bare
/// `ERR` when the file cannot be written. Refused while a BGSAVE writes the same file.
fn save_now(ctx: &mut Ctx<'_>) -> Result<(), CommandError> {
    if ctx.node.live.saves.in_progress.load(Ordering::Acquire) {
        return Err(CommandError::err("Background save already in progress"));
    }
    let data = encode(ctx.state, ctx.now, rdb_encoding(ctx));
    let path = rdb_path(ctx.state);
    match write_file(&path, &data) {
        Ok(()) => {
            tracing::info!(path = %path.display(), "DB saved on disk");
            ctx.node
                .live
                .saves
                .saved(ctx.node.clock.now_ms(), ctx.state.dirty);
            Ok(())
        }
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "failed saving the DB");
            Err(CommandError::Raw("ERR".into()))
        }
    }
}

/// ```text
/// BGSAVE [SCHEDULE]
/// ```
/// The dataset is copied under the state lock (a consistent snapshot, as a fork gives Redis:
/// values share their bytes with the live ones); it is encoded, compressed and written on
/// another thread, so clients wait only for the copy.
fn bgsave(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    match args.remaining() {
        0 => {}
        1 if args.eat("schedule") => {}
        _ => return Err(CommandError::Syntax),
    }
    let status = &ctx.node.live.saves;
    if status.in_progress.swap(true, Ordering::AcqRel) {
        return Err(CommandError::err("Background save already in progress"));
    }
    let dbs = ctx.state.dbs.clone();
    let functions: Vec<Bytes> = ctx
        .state
        .functions
        .libraries()
        .map(|l| l.code.clone())
        .collect();
    let (now, encoding) = (ctx.now, rdb_encoding(ctx));
    let path = rdb_path(ctx.state);
    let dirty = ctx.state.dirty;
    let status = ctx.node.live.saves.clone();
    let clock = ctx.node.clock.clone();
    std::thread::spawn(move || {
        let data = file::encode_dataset(&dbs, &functions, now, encoding);
        drop(dbs);
        match write_file(&path, &data) {
            Ok(()) => {
                tracing::info!(path = %path.display(), "Background saving terminated with success");
                status.saved(clock.now_ms(), dirty);
                status.last_bgsave_failed.store(false, Ordering::Relaxed);
            }
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "Background saving error");
                status.last_bgsave_failed.store(true, Ordering::Relaxed);
            }
        }
        status.in_progress.store(false, Ordering::Release);
    });
    Ok(Frame::simple("Background saving started"))
}

/// ```text
/// LASTSAVE
/// ```
fn lastsave(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    let at = ctx.node.live.saves.last_save_unix.load(Ordering::Relaxed);
    Ok(Frame::Integer(i64::try_from(at).unwrap_or(i64::MAX)))
}

/// Loads the RDB file at `dir`/`dbfilename` into a fresh node, if it exists: its keys (those
/// not expired) and function libraries. Returns how many keys were loaded.
///
/// # Errors
///
/// A file that cannot be read or parsed, as Redis refuses to start on one.
pub(crate) fn load_at_start(state: &mut State, node: &Node) -> Result<usize, String> {
    let path = rdb_path(state);
    let contents = match read_file(state, node, &path) {
        Ok(contents) => contents,
        Err(Unread::Missing) => return Ok(0),
        Err(Unread::Bad(e)) => return Err(e),
    };
    let loaded =
        load(state, node, contents, false).map_err(|e| format!("{}: {e}", path.display()))?;
    tracing::info!(path = %path.display(), keys = loaded, "DB loaded from disk");
    Ok(loaded)
}

/// Why an RDB file gave no contents.
enum Unread {
    /// There is no such file.
    Missing,
    /// It could not be read or parsed: why.
    Bad(String),
}

/// The contents of the RDB file at `path`, its keys expired at the node's time left out.
fn read_file(state: &State, node: &Node, path: &PathBuf) -> Result<file::Contents, Unread> {
    let data = std::fs::read(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => Unread::Missing,
        _ => Unread::Bad(format!("cannot read {}: {e}", path.display())),
    })?;
    let packed = node
        .live
        .quicklist_packed_threshold
        .load(std::sync::atomic::Ordering::Relaxed);
    let load = crate::rdb::Load::of(&state.config, packed);
    file::read(&data, node.clock.now_ms(), state.dbs.len(), load)
        .map_err(|e| Unread::Bad(format!("{}: {e}", path.display())))
}

/// Adds `contents` to the node's data: function libraries, then keys, each replacing one
/// present only if `merge`. Without `merge`, a key already present is an error found before
/// anything is added (Redis's load stops the server on a duplicate key), and so is a library
/// present (the libraries before it in the file stay loaded); returns how many keys were
/// loaded.
fn load(
    state: &mut State,
    node: &Node,
    contents: file::Contents,
    merge: bool,
) -> Result<usize, String> {
    let now = node.clock.now_ms();
    if !merge {
        for (index, keys) in &contents.dbs {
            let Some(db) = state.dbs.get(*index) else {
                continue;
            };
            if let Some(key) = keys.iter().find(|k| db.get(&k.name, now).is_some()) {
                return Err(format!(
                    "duplicate key '{}' in database {index}",
                    String::from_utf8_lossy(&key.name)
                ));
            }
        }
    }
    // Libraries first, as the file holds them before the keys.
    let lua = state.config.lua();
    let mut failed = None;
    for code in contents.functions {
        let kill = node.script.kill.clone();
        let make = move || {
            crate::script::Engine::new_functions(kill, super::command_exists, lua)
                .map_err(|e| e.to_string())
        };
        if let Err(e) = state.functions.load(&code, merge, None, make) {
            failed = Some(format!("function library: {e}"));
            break;
        }
    }
    if let Ok(mut counts) = node.script.function_counts.lock() {
        *counts = state.functions.counts();
    }
    if let Some(failed) = failed {
        return Err(failed);
    }
    let mut loaded = 0;
    for (index, keys) in contents.dbs {
        let Some(db) = state.dbs.get_mut(index) else {
            continue;
        };
        for key in keys {
            db.insert(&key.name, key.value, key.expire_at, now);
            loaded += 1;
        }
    }
    Ok(loaded)
}

/// `DEBUG RELOAD [MERGE] [NOFLUSH] [NOSAVE]`: saves the data to `dir`/`dbfilename` (unless
/// `save` is false), then loads that file back, first emptying every database and the
/// function libraries if `flush`, as `FLUSHALL` would for WATCH and client tracking (but
/// counting no change: a reload is not a write). Keys and libraries the file holds that are
/// present already replace them with `merge`, or else refuse the load before anything
/// changes; a file that cannot be read refuses it before the data is emptied.
pub(super) fn reload(ctx: &mut Ctx<'_>, merge: bool, flush: bool, save: bool) -> CmdResult {
    if save {
        save_now(ctx)?;
    }
    let path = rdb_path(ctx.state);
    let refused = |why: String| {
        tracing::warn!(path = %path.display(), "DEBUG RELOAD: {why}");
        CommandError::err("Error trying to load the RDB dump, check server logs.")
    };
    let contents = match read_file(ctx.state, ctx.node, &path) {
        Ok(contents) => contents,
        Err(Unread::Missing) => return Err(refused("no such file".into())),
        Err(Unread::Bad(why)) => return Err(refused(why)),
    };
    if flush {
        let dirty = ctx.state.dirty;
        super::server::flush_all(ctx, false);
        ctx.state.functions.flush();
        ctx.state.dirty = dirty;
    }
    let loaded = load(ctx.state, ctx.node, contents, merge).map_err(refused)?;
    tracing::warn!(keys = loaded, "DB reloaded by DEBUG RELOAD");
    Ok(Frame::ok())
}
