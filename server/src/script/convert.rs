//! Conversions between RESP replies and Lua values, exactly as Redis 7.0's `script_lua.c`:
//!
//! | Redis → Lua | Lua → Redis |
//! |---|---|
//! | integer → number | number → integer (truncated, as a C cast) |
//! | bulk → string | string → bulk |
//! | nil bulk / nil array → `false` (RESP2) or `nil` (RESP3) | `false`/`nil` → nil (`false` is `#f` under `setresp(3)`) |
//! | array → table | table → array, up to the first nil |
//! | status → `{ok=...}` | `{ok=...}` → status |
//! | error → `{err=...}` | `{err=...}` → error |
//! | RESP3 map/set/double/big number/boolean/verbatim → `{map=}`/`{set=}`/`{double=}`/`{big_number=}`/boolean/`{verbatim_string=}` | the same tables → the RESP3 types; `true` → 1 (RESP2) or `#t` |

use bytes::Bytes;
use locksmith_resp::{format_double, Frame};
use mlua::{Lua, MultiValue, Table, Value};

/// Deepest nesting converted from a script's reply (Redis stops at the Lua C stack limit).
const MAX_DEPTH: usize = 1000;

/// C's `%.<prec>g`.
pub(crate) fn format_g(x: f64, prec: usize) -> String {
    if x.is_nan() {
        return if x.is_sign_negative() { "-nan" } else { "nan" }.into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.into();
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0" } else { "0" }.into();
    }
    let prec = prec.max(1);
    let sci = format!("{:.*e}", prec - 1, x);
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i64 = exp.parse().unwrap_or(0);
    let strip = |s: &str| -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s.to_string()
        }
    };
    if exp < -4 || exp >= prec as i64 {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", strip(mantissa), exp.abs())
    } else {
        let decimals = (prec as i64 - 1 - exp).max(0) as usize;
        strip(&format!("{x:.decimals$}"))
    }
}

/// A Lua number converted the way Redis does (`(long long)n`; out of range and NaN give
/// `LLONG_MIN`, as the x86 conversion does).
pub(crate) fn number_to_i64(n: f64) -> i64 {
    // 2^63 is exactly representable; every double in [-2^63, 2^63) fits an i64.
    const LIMIT: f64 = 9_223_372_036_854_775_808.0;
    if n.is_nan() || !(-LIMIT..LIMIT).contains(&n) {
        i64::MIN
    } else {
        n as i64
    }
}

/// An error reply line: trailing newlines trimmed, inner ones turned into spaces (as
/// `addReplyErrorSdsEx` does).
pub(crate) fn error_frame(text: &str) -> Frame {
    let trimmed = text.trim_end_matches(['\r', '\n']);
    let clean: String = trimmed
        .chars()
        .map(|c| if c == '\r' || c == '\n' { ' ' } else { c })
        .collect();
    Frame::error(clean)
}

/// `luaPushErrorBuff`: `-CODE msg` keeps its code, anything else gets `ERR`.
pub(crate) fn error_table(lua: &Lua, text: &[u8], ignore_stats: bool) -> mlua::Result<Table> {
    let (code, msg): (&[u8], &[u8]) = match text.strip_prefix(b"-") {
        Some(rest) => match rest.iter().position(|&b| b == b' ') {
            Some(sp) => (
                rest.get(..sp).unwrap_or_default(),
                rest.get(sp + 1..).unwrap_or_default(),
            ),
            None => (b"ERR", rest),
        },
        None => (b"ERR", text),
    };
    let is_nl = |b: &u8| *b == b'\r' || *b == b'\n';
    let start = msg.iter().position(|b| !is_nl(b)).unwrap_or(msg.len());
    let end = msg.iter().rposition(|b| !is_nl(b)).map_or(start, |e| e + 1);
    let msg = msg.get(start..end.max(start)).unwrap_or_default();
    let mut full = Vec::with_capacity(code.len() + 1 + msg.len());
    full.extend_from_slice(code);
    full.push(b' ');
    full.extend_from_slice(msg);
    let t = lua.create_table()?;
    t.raw_set("err", lua.create_string(&full)?)?;
    if ignore_stats {
        t.raw_set("ignore_error_stats_update", true)?;
    }
    Ok(t)
}

/// A Lua array of strings (`KEYS`, `ARGV`).
pub(crate) fn bytes_table(lua: &Lua, items: &[Bytes]) -> mlua::Result<Table> {
    let t = lua.create_table_with_capacity(items.len(), 0)?;
    for (i, item) in items.iter().enumerate() {
        t.raw_set(i + 1, lua.create_string(item)?)?;
    }
    Ok(t)
}

/// `luaArgsToRedisArgv`: strings as they are, numbers as `%.17g`; anything else (or no
/// argument) is the error table Redis answers with.
pub(crate) fn args_to_argv(lua: &Lua, args: MultiValue) -> mlua::Result<Result<Vec<Bytes>, Table>> {
    if args.is_empty() {
        return Ok(Err(error_table(
            lua,
            b"Please specify at least one argument for this redis lib call",
            false,
        )?));
    }
    // One buffer for every argument (split into `Bytes` that share it): one allocation per
    // call instead of one per argument.
    let mut buf = bytes::BytesMut::with_capacity(128);
    let mut argv = Vec::with_capacity(args.len());
    for v in args {
        match v {
            Value::String(s) => buf.extend_from_slice(&s.as_bytes()),
            Value::Integer(i) if i.unsigned_abs() < 100_000_000_000_000_000 => {
                buf.extend_from_slice(itoa::Buffer::new().format(i).as_bytes())
            }
            Value::Integer(i) => buf.extend_from_slice(format_double(i as f64).as_bytes()),
            Value::Number(n) => buf.extend_from_slice(format_double(n).as_bytes()),
            _ => {
                return Ok(Err(error_table(
                    lua,
                    b"Lua redis lib command arguments must be strings or integers",
                    false,
                )?))
            }
        }
        argv.push(buf.split().freeze());
    }
    Ok(Ok(argv))
}

/// One `redis.call`/`redis.pcall`: returns `(true, reply)` or `(false, error table)`.
pub(crate) fn dispatch(
    lua: &Lua,
    args: MultiValue,
    resp3: bool,
    run: impl FnOnce(&[Bytes]) -> Result<Frame, String>,
) -> mlua::Result<(bool, Value)> {
    let argv = match args_to_argv(lua, args)? {
        Ok(argv) => argv,
        Err(table) => return Ok((false, Value::Table(table))),
    };
    match run(&argv) {
        Err(text) => {
            let mut line = Vec::with_capacity(text.len() + 1);
            line.push(b'-');
            line.extend_from_slice(text.as_bytes());
            Ok((false, Value::Table(error_table(lua, &line, true)?)))
        }
        Ok(Frame::Error(e)) => {
            let mut line = Vec::with_capacity(e.len() + 1);
            line.push(b'-');
            line.extend_from_slice(&e);
            Ok((false, Value::Table(error_table(lua, &line, true)?)))
        }
        Ok(frame) => Ok((true, frame_to_lua(lua, frame, resp3)?)),
    }
}

fn single_field(lua: &Lua, name: &str, value: Value) -> mlua::Result<Value> {
    let t = lua.create_table()?;
    t.raw_set(name, value)?;
    Ok(Value::Table(t))
}

/// A command reply as the script sees it (`resp3` = the script called `redis.setresp(3)`).
pub(crate) fn frame_to_lua(lua: &Lua, frame: Frame, resp3: bool) -> mlua::Result<Value> {
    Ok(match frame {
        Frame::Simple(s) => single_field(lua, "ok", Value::String(lua.create_string(&s)?))?,
        Frame::Error(e) => {
            let mut line = Vec::with_capacity(e.len() + 1);
            line.push(b'-');
            line.extend_from_slice(&e);
            Value::Table(error_table(lua, &line, true)?)
        }
        Frame::Integer(i) => Value::Number(i as f64),
        Frame::Bulk(b) => Value::String(lua.create_string(&b)?),
        Frame::Null | Frame::NullArray => {
            if resp3 {
                Value::Nil
            } else {
                Value::Boolean(false)
            }
        }
        Frame::Array(items) | Frame::Push(items) => array(lua, items, resp3)?,
        Frame::Map(pairs) => {
            if resp3 {
                let t = lua.create_table()?;
                for (k, v) in pairs {
                    let k = frame_to_lua(lua, k, resp3)?;
                    let v = frame_to_lua(lua, v, resp3)?;
                    if !matches!(k, Value::Nil) {
                        t.raw_set(k, v)?;
                    }
                }
                single_field(lua, "map", Value::Table(t))?
            } else {
                array(
                    lua,
                    pairs.into_iter().flat_map(|(k, v)| [k, v]).collect(),
                    resp3,
                )?
            }
        }
        Frame::Set(items) => {
            if resp3 {
                let t = lua.create_table()?;
                for item in items {
                    let k = frame_to_lua(lua, item, resp3)?;
                    if !matches!(k, Value::Nil) {
                        t.raw_set(k, true)?;
                    }
                }
                single_field(lua, "set", Value::Table(t))?
            } else {
                array(lua, items, resp3)?
            }
        }
        Frame::Double(d) => {
            if resp3 {
                single_field(lua, "double", Value::Number(d))?
            } else {
                Value::String(lua.create_string(format_double(d))?)
            }
        }
        Frame::Boolean(b) => {
            if resp3 {
                Value::Boolean(b)
            } else {
                Value::Number(if b { 1.0 } else { 0.0 })
            }
        }
        Frame::BigNumber(n) => {
            if resp3 {
                single_field(lua, "big_number", Value::String(lua.create_string(&n)?))?
            } else {
                Value::String(lua.create_string(&n)?)
            }
        }
        Frame::Verbatim { format, text } => {
            if resp3 {
                let t = lua.create_table()?;
                t.raw_set("format", lua.create_string(format)?)?;
                t.raw_set("string", lua.create_string(&text)?)?;
                single_field(lua, "verbatim_string", Value::Table(t))?
            } else {
                Value::String(lua.create_string(&text)?)
            }
        }
        Frame::Attribute { frame, .. } => frame_to_lua(lua, *frame, resp3)?,
    })
}

fn array(lua: &Lua, items: Vec<Frame>, resp3: bool) -> mlua::Result<Value> {
    let t = lua.create_table_with_capacity(items.len(), 0)?;
    for (i, item) in items.into_iter().enumerate() {
        let v = frame_to_lua(lua, item, resp3)?;
        t.raw_set(i + 1, v)?;
    }
    Ok(Value::Table(t))
}

fn field(t: &Table, name: &str) -> Value {
    t.raw_get::<Value>(name).unwrap_or(Value::Nil)
}

fn lua_bytes(s: &mlua::String) -> Bytes {
    Bytes::copy_from_slice(&s.as_bytes())
}

/// A script's return value as the reply Redis sends (`luaReplyToRedisReply`).
pub(crate) fn lua_to_frame(v: &Value, resp3: bool, depth: usize) -> Frame {
    if depth > MAX_DEPTH {
        return Frame::error("ERR reached lua stack limit");
    }
    match v {
        Value::String(s) => Frame::Bulk(lua_bytes(s)),
        Value::Boolean(b) => {
            if resp3 {
                Frame::Boolean(*b)
            } else if *b {
                Frame::Integer(1)
            } else {
                Frame::Null
            }
        }
        Value::Integer(i) => Frame::Integer(*i),
        Value::Number(n) => Frame::Integer(number_to_i64(*n)),
        Value::Table(t) => table_to_frame(t, resp3, depth),
        _ => Frame::Null,
    }
}

fn table_to_frame(t: &Table, resp3: bool, depth: usize) -> Frame {
    if let Value::String(e) = field(t, "err") {
        let msg = String::from_utf8_lossy(&e.as_bytes()).into_owned();
        return error_frame(&msg);
    }
    if let Value::String(s) = field(t, "ok") {
        let text: Vec<u8> = s
            .as_bytes()
            .iter()
            .map(|&b| if b == b'\r' || b == b'\n' { b' ' } else { b })
            .collect();
        return Frame::Simple(Bytes::from(text));
    }
    match field(t, "double") {
        Value::Number(n) => return Frame::Double(n),
        Value::Integer(i) => return Frame::Double(i as f64),
        _ => {}
    }
    if let Value::String(s) = field(t, "big_number") {
        let text: Vec<u8> = s
            .as_bytes()
            .iter()
            .map(|&b| if b == b'\r' || b == b'\n' { b' ' } else { b })
            .collect();
        return Frame::BigNumber(Bytes::from(text));
    }
    if let Value::Table(vt) = field(t, "verbatim_string") {
        if let (Value::String(f), Value::String(s)) = (field(&vt, "format"), field(&vt, "string")) {
            let mut format = [0u8; 3];
            for (dst, src) in format.iter_mut().zip(f.as_bytes().iter()) {
                *dst = *src;
            }
            return Frame::Verbatim {
                format,
                text: lua_bytes(&s),
            };
        }
    }
    if let Value::Table(m) = field(t, "map") {
        let mut pairs = Vec::new();
        for (k, v) in m.pairs::<Value, Value>().flatten() {
            pairs.push((
                lua_to_frame(&k, resp3, depth + 1),
                lua_to_frame(&v, resp3, depth + 1),
            ));
        }
        return Frame::Map(pairs);
    }
    if let Value::Table(s) = field(t, "set") {
        let mut items = Vec::new();
        for (k, _) in s.pairs::<Value, Value>().flatten() {
            items.push(lua_to_frame(&k, resp3, depth + 1));
        }
        return Frame::Set(items);
    }
    let mut items = Vec::new();
    for j in 1.. {
        let v = t.raw_get::<Value>(j).unwrap_or(Value::Nil);
        if matches!(v, Value::Nil) {
            break;
        }
        items.push(lua_to_frame(&v, resp3, depth + 1));
    }
    Frame::Array(items)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_g_matches_c() {
        assert_eq!(format_g(1.5, 14), "1.5");
        assert_eq!(format_g(1e20, 14), "1e+20");
        assert_eq!(format_g(123456789012345.0, 14), "1.2345678901234e+14");
        assert_eq!(format_g(0.1, 17), "0.10000000000000001");
        assert_eq!(format_g(100.0, 14), "100");
        assert_eq!(format_g(0.0001, 14), "0.0001");
        assert_eq!(format_g(0.00001, 14), "1e-05");
    }

    #[test]
    fn numbers_truncate_like_a_c_cast() {
        assert_eq!(number_to_i64(3.99), 3);
        assert_eq!(number_to_i64(-3.99), -3);
        assert_eq!(number_to_i64(f64::INFINITY), i64::MIN);
        assert_eq!(number_to_i64(f64::NAN), i64::MIN);
        assert_eq!(number_to_i64(9.3e18), i64::MIN);
    }

    #[test]
    fn error_tables_follow_push_error_rules() {
        let lua = Lua::new();
        let t = error_table(&lua, b"-WRONGTYPE Operation\r\n", true).unwrap();
        assert_eq!(t.raw_get::<String>("err").unwrap(), "WRONGTYPE Operation");
        let t = error_table(&lua, b"My msg", false).unwrap();
        assert_eq!(t.raw_get::<String>("err").unwrap(), "ERR My msg");
        let t = error_table(&lua, b"-NOSPACE", false).unwrap();
        assert_eq!(t.raw_get::<String>("err").unwrap(), "ERR NOSPACE");
    }
}
