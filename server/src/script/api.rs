//! The Rust primitives behind the `redis` API and the sandbox (`sandbox.lua` wraps them with
//! Redis's argument checks and error texts): SHA1, logging, RESP and replication settings,
//! Redis's rand48 generator, error location, and the bundled libraries' tables.

use super::stack::{CFunction, Return, Stack};
use super::{CommandExists, RunShared, INTERNAL_CHUNK};
use bytes::Bytes;
use mlua::{LightUserData, Lua, MultiValue, Table, Value};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// rand48's initial state in Redis (`x[3] = { X0, X1, X2 }`, never reseeded between scripts).
pub(super) const RAND48_SEED: u64 = 0x1234_ABCD_330E;
const RAND48_A: u64 = 0x5_DEEC_E66D;
const RAND48_C: u64 = 0xB;
const RAND48_MASK: u64 = (1 << 48) - 1;
/// `REDIS_LRAND48_MAX`.
const LRAND48_MAX: i64 = i32::MAX as i64;

/// `redisSrand48(seed)`.
pub(super) fn srand48(seed: i32) -> u64 {
    (u64::from(seed as u32) << 16) | 0x330E
}

/// `redisLrand48()`: advances `state` and returns 31 random bits.
pub(super) fn lrand48(state: &mut u64) -> i64 {
    *state = (RAND48_A.wrapping_mul(*state).wrapping_add(RAND48_C)) & RAND48_MASK;
    (*state >> 17) as i64
}

/// The table of primitives handed to `sandbox.lua`.
pub(super) fn primitives(
    lua: &Lua,
    shared: Arc<RunShared>,
    command_exists: CommandExists,
    compat: crate::compat::Compat,
) -> mlua::Result<Table> {
    let raw = lua.create_table()?;
    raw.raw_set(
        "where",
        lua.create_function(|lua, ()| Ok(error_location(lua)))?,
    )?;
    raw.raw_set(
        "unwrap",
        lua.create_function(|lua, v: Value| match v {
            Value::Error(e) => match raised(&e) {
                Some(Raised::Table(err, ignore)) => {
                    let t = lua.create_table()?;
                    t.raw_set("err", lua.create_string(err)?)?;
                    if *ignore {
                        t.raw_set("ignore_error_stats_update", true)?;
                    }
                    Ok(Value::Table(t))
                }
                Some(Raised::Message(msg)) => Ok(Value::String(lua.create_string(msg)?)),
                None => Ok(Value::String(lua.create_string(root_message(&e))?)),
            },
            other => Ok(other),
        })?,
    )?;
    let pcall: mlua::Function = lua.globals().raw_get("pcall")?;
    raw.raw_set(
        "cwrap",
        lua.create_function(move |lua, f: mlua::Function| {
            let pcall = pcall.clone();
            lua.create_function(move |lua, args: MultiValue| {
                let mut call_args = args;
                call_args.push_front(Value::Function(f.clone()));
                let mut res: MultiValue = pcall.call(call_args)?;
                if matches!(res.pop_front(), Some(Value::Boolean(true))) {
                    return Ok(res);
                }
                let raised = match res.pop_front().unwrap_or(Value::Nil) {
                    Value::Table(t) => Raised::Table(
                        t.raw_get::<Option<mlua::String>>("err")?
                            .map(|s| s.as_bytes().to_vec())
                            .unwrap_or_default(),
                        false,
                    ),
                    Value::String(s) => {
                        Raised::Message(format!("{}{}", position(lua), s.to_string_lossy()))
                    }
                    other => Raised::Message(format!("{other:?}")),
                };
                Err(mlua::Error::external(raised))
            })
        })?,
    )?;
    raw.raw_set(
        "sha1hex",
        lua.create_function(|_, s: mlua::String| Ok(super::sha1hex(&s.as_bytes())))?,
    )?;
    raw.raw_set(
        "log",
        lua.create_function(|_, (level, msg): (i64, mlua::String)| {
            let msg = msg.to_string_lossy();
            match level {
                0 => tracing::debug!(target: "lua", "{msg}"),
                1 => tracing::debug!(target: "lua", "{msg}"),
                2 => tracing::info!(target: "lua", "{msg}"),
                _ => tracing::warn!(target: "lua", "{msg}"),
            }
            Ok(())
        })?,
    )?;
    let s = shared.clone();
    raw.raw_set(
        "setresp",
        lua.create_function(move |_, v: u8| {
            s.resp.store(v, Ordering::Relaxed);
            Ok(())
        })?,
    )?;
    let s = shared.clone();
    raw.raw_set(
        "setrepl",
        lua.create_function(move |_, v: u8| {
            s.repl.store(v, Ordering::Relaxed);
            Ok(())
        })?,
    )?;
    let s = shared.clone();
    raw.raw_set(
        "rand",
        lua.create_function(move |_, ()| {
            let mut state = s.rand.load(Ordering::Relaxed);
            let r = lrand48(&mut state);
            s.rand.store(state, Ordering::Relaxed);
            Ok((r % LRAND48_MAX) as f64 / LRAND48_MAX as f64)
        })?,
    )?;
    let s = shared.clone();
    raw.raw_set(
        "srand",
        lua.create_function(move |_, seed: f64| {
            s.rand.store(srand48(seed as i32), Ordering::Relaxed);
            Ok(())
        })?,
    )?;
    raw.raw_set(
        "acl_check",
        super::stack::c_function::<AclCheck>(
            lua,
            Arc::new(AclCheckContext {
                command_exists,
                compat,
                shared: shared.clone(),
            }),
        )?,
    )?;
    // Valkey's `os.clock`: C's `clock()`, the process's CPU time in seconds.
    raw.raw_set(
        "clock",
        lua.create_function(|_, ()| Ok(crate::process_cpu::process_clock()))?,
    )?;
    raw.raw_set(
        "readonly",
        super::stack::c_function::<MarkReadonly>(lua, Arc::new(()))?,
    )?;
    raw.raw_set(
        "null",
        Value::LightUserData(LightUserData(std::ptr::null_mut())),
    )?;
    raw.raw_set("bit", super::bit::table(lua)?)?;
    raw.raw_set("struct", super::structlib::table(lua)?)?;
    raw.raw_set("cjson", super::cjson::table(lua)?)?;
    raw.raw_set("cmsgpack", super::cmsgpack::table(lua)?)?;
    Ok(raw)
}

/// `redis.acl_check_cmd`: whether the user running the script may run a command line
/// (`true`/`false`), or the error table the sandbox raises for a line naming no command.
struct AclCheck;

/// What `redis.acl_check_cmd` needs: the command table's test and the run's dispatcher.
struct AclCheckContext {
    command_exists: CommandExists,
    /// The node's target, whose command table `command_exists` looks in.
    compat: crate::compat::Compat,
    shared: Arc<RunShared>,
}

impl CFunction for AclCheck {
    type Context = AclCheckContext;
    fn call(stack: &mut Stack<'_>, cx: &AclCheckContext) -> Return {
        let argv =
            super::convert::argv_from_stack(stack, &[], &mut Default::default(), cx.shared.doubles);
        let pushed = match argv {
            Ok(argv) if (cx.command_exists)(cx.compat, &argv) => {
                match cx
                    .shared
                    .dispatch
                    .with(|frame| frame.dispatcher.acl_check(&argv))
                {
                    Some(allowed) => stack.push_bool(allowed),
                    None => super::convert::push_error_table(
                        stack,
                        b"redis.acl_check_cmd can only be called inside a script invocation",
                        false,
                    ),
                }
            }
            Ok(_) => super::convert::push_error_table(
                stack,
                cx.shared.texts.acl_check_unknown_command.as_bytes(),
                false,
            ),
            Err(why) => {
                super::convert::push_error_table(stack, why.text(cx.shared.texts).as_bytes(), false)
            }
        };
        match pushed {
            Ok(()) => Return::Values(1),
            Err(_) => Return::Values(0),
        }
    }
}

/// `raw.readonly(t)`: marks table `t` read-only (Redis's `lua_enablereadonlytable`) and
/// returns whether it already was, so the sandbox's recursive protection stops at tables it
/// has seen (`_G._G`).
struct MarkReadonly;

impl CFunction for MarkReadonly {
    type Context = ();
    fn call(stack: &mut Stack<'_>, (): &()) -> Return {
        let was = stack.is_readonly(1);
        let pushed = stack
            .set_readonly(1, true)
            .and_then(|()| stack.push_bool(was));
        match pushed {
            Ok(()) => Return::Values(1),
            Err(_) => match stack.push_bytes(b"readonly: table expected") {
                Ok(()) => Return::Raise,
                Err(_) => Return::Values(0),
            },
        }
    }
}

/// An error raised from a Rust function (a C function to Lua, so the caller's frame stays on
/// the stack for the error location, as with Redis's C functions). The error handler and the
/// sandbox's `pcall` turn it back into the Lua value Redis raises.
#[derive(Debug)]
pub(super) enum Raised {
    /// An error table: its `err` text and whether it has `ignore_error_stats_update`.
    Table(Vec<u8>, bool),
    /// A `luaL_error`-style message, position included.
    Message(String),
}

impl std::fmt::Display for Raised {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Raised::Table(err, _) => f.write_str(&String::from_utf8_lossy(err)),
            Raised::Message(msg) => f.write_str(msg),
        }
    }
}

/// `luaL_where(L, 1)` from a Rust function: `chunk:line: ` of its caller, or empty.
pub(super) fn position(lua: &Lua) -> String {
    lua.inspect_stack(1, |debug| {
        let line = debug.current_line();
        let short = debug.source().short_src.map(|s| s.into_owned());
        match (short, line) {
            (Some(src), Some(line)) if line > 0 => format!("{src}:{line}: "),
            _ => String::new(),
        }
    })
    .unwrap_or_default()
}

impl std::error::Error for Raised {}

fn raised(e: &mlua::Error) -> Option<&Raised> {
    match e {
        mlua::Error::CallbackError { cause, .. } => raised(cause),
        mlua::Error::ExternalError(inner) => inner.downcast_ref::<Raised>(),
        _ => None,
    }
}

fn root_message(e: &mlua::Error) -> String {
    match e {
        mlua::Error::CallbackError { cause, .. } => root_message(cause),
        mlua::Error::RuntimeError(msg) => msg.clone(),
        other => other.to_string(),
    }
}

/// (source, line) of the innermost frame of user code, skipping C functions, tail-call
/// markers and the engine's own Lua code (what Redis's error handler reports).
fn error_location(lua: &Lua) -> (Option<String>, Option<i64>) {
    // Level 0 is this function, level 1 the error handler.
    for level in 2..64 {
        let found = lua.inspect_stack(level, |debug| {
            let source = debug.source();
            let what = source.what;
            let src = source.source.map(|s| s.into_owned());
            (what, src, debug.current_line().map_or(-1, |l| l as i64))
        });
        let Some((what, source, line)) = found else {
            break;
        };
        if what == "C" || what == "tail" || source.as_deref() == Some(INTERNAL_CHUNK) {
            continue;
        }
        return (source, Some(line));
    }
    (None, None)
}

/// A library function whose errors are raised as `luaL_error` does: the message prefixed with
/// the caller's position.
pub(super) fn lib_fn(
    lua: &Lua,
    f: fn(&Lua, MultiValue) -> Result<MultiValue, String>,
) -> mlua::Result<mlua::Function> {
    lua.create_function(move |lua, args: MultiValue| {
        let out = match f(lua, args) {
            Ok(values) => values,
            Err(msg) => {
                let msg = format!("{}{msg}", position(lua));
                return Err(mlua::Error::external(Raised::Message(msg)));
            }
        };
        Ok(out)
    })
}

/// Lua's type name of `v` as error messages print it.
pub(super) fn type_name(v: Option<&Value>) -> &'static str {
    match v {
        None => "no value",
        Some(Value::Nil) => "nil",
        Some(Value::Boolean(_)) => "boolean",
        Some(Value::LightUserData(_)) => "userdata",
        Some(Value::Integer(_)) | Some(Value::Number(_)) => "number",
        Some(Value::String(_)) => "string",
        Some(Value::Table(_)) => "table",
        Some(Value::Function(_)) => "function",
        Some(Value::Thread(_)) => "thread",
        Some(Value::UserData(_)) => "userdata",
        Some(_) => "userdata",
    }
}

/// `luaL_checknumber` on argument `i` (1-based) of `fname`.
pub(super) fn check_number(args: &[Value], i: usize, fname: &str) -> Result<f64, String> {
    let v = args.get(i - 1);
    match v {
        Some(Value::Integer(n)) => Ok(*n as f64),
        Some(Value::Number(n)) => Ok(*n),
        Some(Value::String(s)) => {
            let text = s.to_string_lossy();
            parse_lua_number(text.trim()).ok_or_else(|| bad_type(i, fname, "number", v))
        }
        _ => Err(bad_type(i, fname, "number", v)),
    }
}

/// `luaL_checklstring` on argument `i` (numbers are converted as Lua does, `%.14g`).
pub(super) fn check_bytes(args: &[Value], i: usize, fname: &str) -> Result<Bytes, String> {
    let v = args.get(i - 1);
    match v {
        Some(Value::String(s)) => Ok(Bytes::copy_from_slice(&s.as_bytes())),
        Some(Value::Integer(n)) => Ok(Bytes::from(n.to_string())),
        Some(Value::Number(n)) => Ok(Bytes::from(super::format_g(*n, 14))),
        _ => Err(bad_type(i, fname, "string", v)),
    }
}

/// `bad argument #i to 'f' (T expected, got U)`.
pub(super) fn bad_type(i: usize, fname: &str, expected: &str, got: Option<&Value>) -> String {
    format!(
        "bad argument #{i} to '{fname}' ({expected} expected, got {})",
        type_name(got)
    )
}

/// Lua's `lua_str2number` (decimal or hex).
pub(super) fn parse_lua_number(s: &str) -> Option<f64> {
    if let Some(hex) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        return u64::from_str_radix(hex, 16).ok().map(|v| v as f64);
    }
    let lower = s.to_ascii_lowercase();
    if lower.contains("inf") || lower.contains("nan") || s.is_empty() {
        return None;
    }
    s.parse::<f64>().ok()
}

/// Lua 5.1's `LUAI_MAXCSTACK`: the stack slots a C function may use (`lua_checkstack` fails
/// past them). Redis's cjson and cmsgpack keep what they decode or encode there, so their
/// nesting ends where these run out, with their errors; ours count the same slots.
pub(super) const LUAI_MAXCSTACK: usize = 8000;

/// The Lua values (tables, strings) a library function of ours holds at once at most while it
/// nests. mlua keeps each in a slot of one auxiliary Lua stack of [`LUAI_MAXCSTACK`] slots
/// shared by the whole interpreter, and panics past them; cjson and cmsgpack stop at this many
/// with the error Redis gives where its Lua stack ends, leaving room for what callers hold.
pub(super) const MAX_HELD_REFS: usize = 5000;

/// Whether mlua holds `v` through a reference (a slot of its auxiliary stack).
pub(super) fn holds_ref(v: &Value) -> bool {
    !matches!(
        v,
        Value::Nil
            | Value::Boolean(_)
            | Value::Integer(_)
            | Value::Number(_)
            | Value::LightUserData(_)
    )
}

/// Arguments as a vector (for index-based checks).
pub(super) fn args_vec(args: MultiValue) -> Vec<Value> {
    args.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rand48_matches_redis_sequence() {
        // A fresh redis-server 7.0.15: tostring(math.random()) == "0.39646477363839".
        let mut s = RAND48_SEED;
        let r = (lrand48(&mut s) % LRAND48_MAX) as f64 / LRAND48_MAX as f64;
        assert_eq!(crate::script::format_g(r, 14), "0.39646477363839");
        let mut c = srand48(0);
        assert!((0..=i64::from(i32::MAX)).contains(&lrand48(&mut c)));
    }
}
