//! The `cjson` library (Lua CJSON 2.1.0 as bundled by Redis 7.0): `encode` with its number
//! format (`%.14g`) and escaping (`/` escaped, DEL as `\u007f`), and `decode` with its
//! tokenizer's error messages.

use super::api::{
    args_vec, bad_type, check_number, lib_fn, type_name, LUAI_MAXCSTACK, MAX_HELD_REFS,
};
use super::format_g;
use mlua::{LightUserData, Lua, MultiValue, Table, Value};

/// The library's settings (`json_config_t`), one set per interpreter, changed by the
/// `encode_*`/`decode_*` configuration functions and kept across scripts as in Redis.
#[derive(Debug, Clone, Copy)]
struct Config {
    /// `encode_sparse_array`: convert excessively sparse arrays to objects instead of failing.
    sparse_convert: bool,
    /// Arrays whose highest index exceeds `ratio` x their items (and `safe`) are sparse;
    /// 0 allows any.
    sparse_ratio: i64,
    sparse_safe: i64,
    encode_max_depth: i64,
    decode_max_depth: i64,
    /// Significant digits of encoded numbers (`%.<n>g`).
    precision: i64,
    /// `encode_keep_buffer`: keep the encoding buffer between calls.
    keep_buffer: bool,
    /// NaN and infinities when encoding: 0 refused, 1 written (`nan`, `inf`), 2 as `null`.
    encode_invalid: i64,
    /// Accept hex, `inf`, `nan` and leading zeros when decoding.
    decode_invalid: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            sparse_convert: false,
            sparse_ratio: 2,
            sparse_safe: 10,
            encode_max_depth: 1000,
            decode_max_depth: 1000,
            precision: 14,
            keep_buffer: true,
            encode_invalid: 0,
            decode_invalid: true,
        }
    }
}

/// The interpreter's settings.
fn config(lua: &Lua) -> Config {
    lua.app_data_ref::<Config>().map(|c| *c).unwrap_or_default()
}

fn exception(v: &Value, reason: &str) -> String {
    format!("Cannot serialise {}: {reason}", type_name(Some(v)))
}

fn append_number(out: &mut Vec<u8>, cfg: &Config, v: &Value, n: f64) -> Result<(), String> {
    let invalid = n.is_nan() || n.is_infinite();
    match cfg.encode_invalid {
        0 if invalid => return Err(exception(v, "must not be NaN or Inf")),
        1 if n.is_nan() => {
            out.extend_from_slice(b"nan");
            return Ok(());
        }
        2 if invalid => {
            out.extend_from_slice(b"null");
            return Ok(());
        }
        _ => {}
    }
    out.extend_from_slice(format_g(n, cfg.precision as usize).as_bytes());
    Ok(())
}

fn append_string(out: &mut Vec<u8>, s: &[u8]) {
    out.push(b'"');
    for &c in s {
        match c {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'/' => out.extend_from_slice(b"\\/"),
            b'\x08' => out.extend_from_slice(b"\\b"),
            b'\t' => out.extend_from_slice(b"\\t"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\x0c' => out.extend_from_slice(b"\\f"),
            b'\r' => out.extend_from_slice(b"\\r"),
            0..=0x1f | 0x7f => out.extend_from_slice(format!("\\u{c:04x}").as_bytes()),
            _ => out.push(c),
        }
    }
    out.push(b'"');
}

/// `lua_array_length`: the array length, or None for an object.
fn array_length(t: &Table, cfg: &Config) -> Result<Option<i64>, String> {
    let (mut max, mut items) = (0i64, 0i64);
    for (k, _) in t.pairs::<Value, Value>().flatten() {
        let n = match k {
            Value::Integer(i) => i as f64,
            Value::Number(n) => n,
            _ => return Ok(None),
        };
        if n.floor() == n && n >= 1.0 {
            max = max.max(n as i64);
            items += 1;
        } else {
            return Ok(None);
        }
    }
    if cfg.sparse_ratio > 0 && max > items * cfg.sparse_ratio && max > cfg.sparse_safe {
        if !cfg.sparse_convert {
            return Err(exception(
                &Value::Table(t.clone()),
                "excessively sparse array",
            ));
        }
        return Ok(None);
    }
    Ok(Some(max))
}

/// `json_append_data`. Redis's encoder checks `lua_checkstack` besides the configured depth,
/// so a depth raised with `encode_max_depth` still ends at about 8 000 nested arrays or 4 000
/// objects: `slots` counts what it holds on the Lua stack, `v` included. `refs` counts what
/// this encoder holds through mlua ([`MAX_HELD_REFS`]: an array level holds its item, an
/// object level its iterator, key and value), which stops deep objects sooner than Redis.
fn append_value(
    out: &mut Vec<u8>,
    cfg: &Config,
    v: &Value,
    depth: i64,
    (slots, refs): (usize, usize),
) -> Result<(), String> {
    match v {
        Value::String(s) => append_string(out, &s.as_bytes()),
        Value::Integer(i) => append_number(out, cfg, v, *i as f64)?,
        Value::Number(n) => append_number(out, cfg, v, *n)?,
        Value::Boolean(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        Value::Nil => out.extend_from_slice(b"null"),
        Value::LightUserData(p) if p.0.is_null() => out.extend_from_slice(b"null"),
        Value::Table(t) => {
            let depth = depth + 1;
            // json_check_encode_depth: lua_checkstack(l, 3).
            if depth > cfg.encode_max_depth
                || slots + 3 > LUAI_MAXCSTACK
                || refs + 4 > MAX_HELD_REFS
            {
                return Err(format!("Cannot serialise, excessive nesting ({depth})"));
            }
            match array_length(t, cfg)? {
                Some(len) if len > 0 => {
                    out.push(b'[');
                    for i in 1..=len {
                        if i > 1 {
                            out.push(b',');
                        }
                        let item = t.raw_get::<Value>(i).unwrap_or(Value::Nil);
                        append_value(out, cfg, &item, depth, (slots + 1, refs + 1))?;
                    }
                    out.push(b']');
                }
                _ => {
                    out.push(b'{');
                    let mut first = true;
                    for (k, val) in t.pairs::<Value, Value>().flatten() {
                        if !first {
                            out.push(b',');
                        }
                        first = false;
                        match &k {
                            Value::Integer(i) => {
                                out.push(b'"');
                                append_number(out, cfg, &k, *i as f64)?;
                                out.extend_from_slice(b"\":");
                            }
                            Value::Number(n) => {
                                out.push(b'"');
                                append_number(out, cfg, &k, *n)?;
                                out.extend_from_slice(b"\":");
                            }
                            Value::String(s) => {
                                append_string(out, &s.as_bytes());
                                out.push(b':');
                            }
                            _ => return Err(exception(&k, "table key must be a number or string")),
                        }
                        append_value(out, cfg, &val, depth, (slots + 2, refs + 4))?;
                    }
                    out.push(b'}');
                }
            }
        }
        other => return Err(exception(other, "type not supported")),
    }
    Ok(())
}

fn encode(lua: &Lua, args: MultiValue) -> Result<MultiValue, String> {
    let a = args_vec(args);
    if a.len() != 1 {
        return Err("bad argument #1 to 'encode' (expected 1 argument)".into());
    }
    let mut out = Vec::new();
    let cfg = config(lua);
    append_value(&mut out, &cfg, a.first().unwrap_or(&Value::Nil), 0, (1, 1))?;
    let mut mv = MultiValue::new();
    mv.push_back(Value::String(
        lua.create_string(&out).map_err(|e| e.to_string())?,
    ));
    Ok(mv)
}

#[derive(Debug)]
enum Token {
    ObjBegin,
    ObjEnd,
    ArrBegin,
    ArrEnd,
    Str(Vec<u8>),
    Num(f64),
    Bool(bool),
    Null,
    Colon,
    Comma,
    End,
    Error(&'static str),
}

impl Token {
    fn name(&self) -> &'static str {
        match self {
            Token::ObjBegin => "T_OBJ_BEGIN",
            Token::ObjEnd => "T_OBJ_END",
            Token::ArrBegin => "T_ARR_BEGIN",
            Token::ArrEnd => "T_ARR_END",
            Token::Str(_) => "T_STRING",
            Token::Num(_) => "T_NUMBER",
            Token::Bool(_) => "T_BOOLEAN",
            Token::Null => "T_NULL",
            Token::Colon => "T_COLON",
            Token::Comma => "T_COMMA",
            Token::End => "T_END",
            Token::Error(msg) => msg,
        }
    }
}

struct Parser<'a> {
    data: &'a [u8],
    pos: usize,
    depth: i64,
    /// What Redis's decoder holds on the Lua stack: the argument, each open table, each key
    /// whose value is being decoded. Its `lua_checkstack` ends a nesting raised with
    /// `decode_max_depth` at about 8 000 arrays or 4 000 objects.
    slots: usize,
    cfg: Config,
}

/// `json_is_invalid_number`: a number text JSON does not allow (a `+` sign, hex, leading
/// zeros, `inf`, `nan`).
fn is_invalid_number(s: &[u8]) -> bool {
    if s.first() == Some(&b'+') {
        return true;
    }
    let p = s.strip_prefix(b"-").unwrap_or(s);
    match p.first() {
        Some(b'0') => matches!(p.get(1), Some(c) if (c | 0x20) == b'x' || c.is_ascii_digit()),
        Some(c) if *c <= b'9' => false,
        _ => {
            let lower: Vec<u8> = p.iter().take(3).map(u8::to_ascii_lowercase).collect();
            lower == b"inf" || lower == b"nan"
        }
    }
}

/// C's `strtod` prefix: the length of the longest number at the start of `s`.
fn strtod(s: &[u8]) -> Option<(f64, usize)> {
    let mut i = 0;
    if matches!(s.first(), Some(b'-') | Some(b'+')) {
        i += 1;
    }
    let rest = s.get(i..).unwrap_or_default();
    let lower: Vec<u8> = rest
        .iter()
        .take(8)
        .map(|c| c.to_ascii_lowercase())
        .collect();
    let neg = s.first() == Some(&b'-');
    let sign = if neg { -1.0 } else { 1.0 };
    if lower.starts_with(b"infinity") {
        return Some((sign * f64::INFINITY, i + 8));
    }
    if lower.starts_with(b"inf") {
        return Some((sign * f64::INFINITY, i + 3));
    }
    if lower.starts_with(b"nan") {
        return Some((f64::NAN, i + 3));
    }
    if lower.starts_with(b"0x") {
        let digits = rest
            .get(2..)
            .unwrap_or_default()
            .iter()
            .take_while(|c| c.is_ascii_hexdigit())
            .count();
        if digits > 0 {
            let text = std::str::from_utf8(rest.get(2..2 + digits)?).ok()?;
            let v = u64::from_str_radix(text, 16)
                .map(|v| v as f64)
                .unwrap_or(f64::MAX);
            return Some((sign * v, i + 2 + digits));
        }
    }
    let mut j = i;
    let digits = |s: &[u8], from: usize| {
        s.get(from..)
            .unwrap_or_default()
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .count()
    };
    let int_digits = digits(s, j);
    j += int_digits;
    let mut frac_digits = 0;
    if s.get(j) == Some(&b'.') {
        frac_digits = digits(s, j + 1);
        if int_digits + frac_digits > 0 {
            j += 1 + frac_digits;
        }
    }
    if int_digits + frac_digits == 0 {
        return None;
    }
    if matches!(s.get(j), Some(b'e') | Some(b'E')) {
        let mut k = j + 1;
        if matches!(s.get(k), Some(b'-') | Some(b'+')) {
            k += 1;
        }
        let exp_digits = digits(s, k);
        if exp_digits > 0 {
            j = k + exp_digits;
        }
    }
    let text = std::str::from_utf8(s.get(..j)?).ok()?;
    text.parse::<f64>().ok().map(|v| (v, j))
}

impl Parser<'_> {
    /// The next token and its 0-based start index.
    fn next_token(&mut self) -> (Token, usize) {
        while matches!(self.data.get(self.pos), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.pos += 1;
        }
        let start = self.pos;
        let Some(&c) = self.data.get(self.pos) else {
            return (Token::End, start);
        };
        let single = match c {
            b'{' => Some(Token::ObjBegin),
            b'}' => Some(Token::ObjEnd),
            b'[' => Some(Token::ArrBegin),
            b']' => Some(Token::ArrEnd),
            b':' => Some(Token::Colon),
            b',' => Some(Token::Comma),
            _ => None,
        };
        if let Some(t) = single {
            self.pos += 1;
            return (t, start);
        }
        if c == b'"' {
            let token = self.string_token();
            // String errors point at the offending byte, as json_set_token_error does.
            let at = if matches!(token, Token::Error(_)) {
                self.pos
            } else {
                start
            };
            return (token, at);
        }
        let rest = self.data.get(self.pos..).unwrap_or_default();
        if c == b'-' || c.is_ascii_digit() {
            if !self.cfg.decode_invalid && is_invalid_number(rest) {
                return (Token::Error("invalid number"), start);
            }
            return match strtod(rest) {
                Some((v, len)) => {
                    self.pos += len;
                    (Token::Num(v), start)
                }
                None => (Token::Error("invalid number"), start),
            };
        }
        for (word, token) in [
            (&b"true"[..], Token::Bool(true)),
            (b"false", Token::Bool(false)),
            (b"null", Token::Null),
        ] {
            if rest.starts_with(word) {
                self.pos += word.len();
                return (token, start);
            }
        }
        let lower: Vec<u8> = rest
            .iter()
            .take(3)
            .map(|c| c.to_ascii_lowercase())
            .collect();
        if self.cfg.decode_invalid && (lower == b"inf" || lower == b"nan") {
            if let Some((v, len)) = strtod(rest) {
                self.pos += len;
                return (Token::Num(v), start);
            }
        }
        (Token::Error("invalid token"), start)
    }

    fn hex4(&self, at: usize) -> Option<u32> {
        let s = self.data.get(at..at + 4)?;
        u32::from_str_radix(std::str::from_utf8(s).ok()?, 16).ok()
    }

    fn string_token(&mut self) -> Token {
        self.pos += 1;
        let mut out = Vec::new();
        loop {
            let Some(&c) = self.data.get(self.pos) else {
                return Token::Error("unexpected end of string");
            };
            if c == b'"' {
                self.pos += 1;
                return Token::Str(out);
            }
            if c != b'\\' {
                out.push(c);
                self.pos += 1;
                continue;
            }
            let Some(&e) = self.data.get(self.pos + 1) else {
                return Token::Error("unexpected end of string");
            };
            let simple = match e {
                b'"' => Some(b'"'),
                b'\\' => Some(b'\\'),
                b'/' => Some(b'/'),
                b'b' => Some(8),
                b'f' => Some(12),
                b'n' => Some(b'\n'),
                b'r' => Some(b'\r'),
                b't' => Some(b'\t'),
                _ => None,
            };
            if let Some(b) = simple {
                out.push(b);
                self.pos += 2;
                continue;
            }
            if e != b'u' {
                return Token::Error("invalid escape code");
            }
            let Some(mut cp) = self.hex4(self.pos + 2) else {
                return Token::Error("invalid unicode escape code");
            };
            let mut len = 6;
            if (0xd800..0xdc00).contains(&cp) {
                let low = if self.data.get(self.pos + 6) == Some(&b'\\')
                    && self.data.get(self.pos + 7) == Some(&b'u')
                {
                    self.hex4(self.pos + 8)
                } else {
                    None
                };
                match low {
                    Some(l) if (0xdc00..0xe000).contains(&l) => {
                        cp = (((cp & 0x3ff) << 10) | (l & 0x3ff)) + 0x10000;
                        len = 12;
                    }
                    _ => return Token::Error("invalid unicode escape code"),
                }
            } else if (0xdc00..0xe000).contains(&cp) {
                return Token::Error("invalid unicode escape code");
            }
            let ch = char::from_u32(cp).unwrap_or('\u{fffd}');
            let mut buf = [0u8; 4];
            out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
            self.pos += len;
        }
    }

    fn fail(&self, expected: &str, token: &Token, at: usize) -> String {
        format!(
            "Expected {expected} but found {} at character {}",
            token.name(),
            at + 1
        )
    }

    /// `json_decode_descend(l, json, need)`.
    fn descend(&mut self, need: usize) -> Result<(), String> {
        self.depth += 1;
        // Each open table is also held through mlua (see MAX_HELD_REFS).
        if self.depth > self.cfg.decode_max_depth
            || self.slots + need > LUAI_MAXCSTACK
            || self.depth as usize > MAX_HELD_REFS
        {
            return Err(format!(
                "Found too many nested data structures ({}) at character {}",
                self.depth, self.pos
            ));
        }
        Ok(())
    }

    fn value(&mut self, lua: &Lua, token: Token, at: usize) -> Result<Value, String> {
        let lerr = |e: mlua::Error| e.to_string();
        match token {
            Token::Str(s) => Ok(Value::String(lua.create_string(&s).map_err(lerr)?)),
            Token::Num(n) => Ok(Value::Number(n)),
            Token::Bool(b) => Ok(Value::Boolean(b)),
            Token::Null => Ok(Value::LightUserData(LightUserData(std::ptr::null_mut()))),
            Token::ObjBegin => {
                self.descend(3)?;
                let t = lua.create_table().map_err(lerr)?;
                let (mut tok, mut at) = self.next_token();
                if matches!(tok, Token::ObjEnd) {
                    self.depth -= 1;
                    return Ok(Value::Table(t));
                }
                self.slots += 2;
                loop {
                    let Token::Str(key) = tok else {
                        return Err(self.fail("object key string", &tok, at));
                    };
                    let (colon, cat) = self.next_token();
                    if !matches!(colon, Token::Colon) {
                        return Err(self.fail("colon", &colon, cat));
                    }
                    let (vt, vat) = self.next_token();
                    let v = self.value(lua, vt, vat)?;
                    t.raw_set(lua.create_string(&key).map_err(lerr)?, v)
                        .map_err(lerr)?;
                    let (next, nat) = self.next_token();
                    if matches!(next, Token::ObjEnd) {
                        self.depth -= 1;
                        self.slots -= 2;
                        return Ok(Value::Table(t));
                    }
                    if !matches!(next, Token::Comma) {
                        return Err(self.fail("comma or object end", &next, nat));
                    }
                    (tok, at) = self.next_token();
                }
            }
            Token::ArrBegin => {
                self.descend(2)?;
                let t = lua.create_table().map_err(lerr)?;
                let (mut tok, mut at) = self.next_token();
                if matches!(tok, Token::ArrEnd) {
                    self.depth -= 1;
                    return Ok(Value::Table(t));
                }
                self.slots += 1;
                for i in 1usize.. {
                    let v = self.value(lua, tok, at)?;
                    t.raw_set(i, v).map_err(lerr)?;
                    let (next, nat) = self.next_token();
                    if matches!(next, Token::ArrEnd) {
                        break;
                    }
                    if !matches!(next, Token::Comma) {
                        return Err(self.fail("comma or array end", &next, nat));
                    }
                    (tok, at) = self.next_token();
                }
                self.depth -= 1;
                self.slots -= 1;
                Ok(Value::Table(t))
            }
            other => Err(self.fail("value", &other, at)),
        }
    }
}

fn decode(lua: &Lua, args: MultiValue) -> Result<MultiValue, String> {
    let a = args_vec(args);
    if a.len() != 1 {
        return Err("bad argument #1 to 'decode' (expected 1 argument)".into());
    }
    let data = match a.first() {
        Some(Value::String(s)) => s.as_bytes().to_vec(),
        Some(Value::Integer(i)) => i.to_string().into_bytes(),
        Some(Value::Number(n)) => format_g(*n, 14).into_bytes(),
        other => return Err(bad_type(1, "decode", "string", other)),
    };
    if data.len() >= 2 && (data.first() == Some(&0) || data.get(1) == Some(&0)) {
        return Err("JSON parser does not support UTF-16 or UTF-32".into());
    }
    let mut p = Parser {
        data: &data,
        pos: 0,
        depth: 0,
        slots: 1,
        cfg: config(lua),
    };
    let (tok, at) = p.next_token();
    let v = p.value(lua, tok, at)?;
    let (end, eat) = p.next_token();
    if !matches!(end, Token::End) {
        return Err(p.fail("the end", &end, eat));
    }
    let mut mv = MultiValue::new();
    mv.push_back(v);
    Ok(mv)
}

/// `json_arg_init`: at most `n` arguments, padded with nils.
fn config_args(args: MultiValue, n: usize, fname: &str) -> Result<Vec<Value>, String> {
    let mut a = args_vec(args);
    if a.len() > n {
        return Err(format!(
            "bad argument #{} to '{fname}' (found too many arguments)",
            n + 1
        ));
    }
    a.resize(n, Value::Nil);
    Ok(a)
}

/// `json_integer_option`: sets `setting` from argument `i` if given (within `min..=max`) and
/// returns the value in force.
fn integer_option(
    args: &[Value],
    i: usize,
    fname: &str,
    setting: &mut i64,
    (min, max): (i64, i64),
) -> Result<Value, String> {
    if !matches!(args.get(i - 1), None | Some(Value::Nil)) {
        let v = check_number(args, i, fname)? as i64;
        if v < min || v > max {
            return Err(format!(
                "bad argument #1 to '{fname}' (expected integer between {min} and {max})"
            ));
        }
        *setting = v;
    }
    Ok(Value::Integer(*setting))
}

/// `json_enum_option` over `options` (`off`/`on` when empty; a boolean sets 0 or 1): sets
/// `setting` from argument `i` if given and returns the value in force (a boolean for 0/1).
fn enum_option(
    lua: &Lua,
    args: &[Value],
    i: usize,
    fname: &str,
    setting: &mut i64,
    options: &[&str],
) -> Result<Value, String> {
    let options = if options.is_empty() {
        &["off", "on"][..]
    } else {
        options
    };
    match args.get(i - 1) {
        None | Some(Value::Nil) => {}
        Some(Value::Boolean(b)) => *setting = i64::from(*b),
        Some(v @ (Value::String(_) | Value::Integer(_) | Value::Number(_))) => {
            // luaL_checkoption reads a string (a number converts).
            let name = match v {
                Value::String(s) => s.to_string_lossy(),
                Value::Integer(n) => n.to_string(),
                Value::Number(n) => format_g(*n, 14),
                _ => String::new(),
            };
            let Some(found) = options.iter().position(|o| *o == name) else {
                return Err(format!(
                    "bad argument #{i} to '{fname}' (invalid option '{name}')"
                ));
            };
            *setting = found as i64;
        }
        other => return Err(bad_type(i, fname, "string", other)),
    }
    if *setting <= 1 {
        return Ok(Value::Boolean(*setting == 1));
    }
    let name = options.get(*setting as usize).copied().unwrap_or_default();
    Ok(Value::String(
        lua.create_string(name).map_err(|e| e.to_string())?,
    ))
}

/// Runs a configuration function on the interpreter's settings and returns its values.
fn configure(
    lua: &Lua,
    f: impl FnOnce(&mut Config) -> Result<Vec<Value>, String>,
) -> Result<MultiValue, String> {
    let mut cfg = config(lua);
    let out = f(&mut cfg)?;
    lua.set_app_data(cfg);
    Ok(out.into_iter().collect())
}

fn encode_sparse_array(lua: &Lua, args: MultiValue) -> Result<MultiValue, String> {
    let a = config_args(args, 3, "encode_sparse_array")?;
    configure(lua, |cfg| {
        let mut convert = i64::from(cfg.sparse_convert);
        let name = "encode_sparse_array";
        let out = vec![
            enum_option(lua, &a, 1, name, &mut convert, &[])?,
            integer_option(&a, 2, name, &mut cfg.sparse_ratio, (0, i64::from(i32::MAX)))?,
            integer_option(&a, 3, name, &mut cfg.sparse_safe, (0, i64::from(i32::MAX)))?,
        ];
        cfg.sparse_convert = convert == 1;
        Ok(out)
    })
}

fn encode_max_depth(lua: &Lua, args: MultiValue) -> Result<MultiValue, String> {
    let a = config_args(args, 1, "encode_max_depth")?;
    configure(lua, |cfg| {
        let range = (1, i64::from(i32::MAX));
        Ok(vec![integer_option(
            &a,
            1,
            "encode_max_depth",
            &mut cfg.encode_max_depth,
            range,
        )?])
    })
}

fn decode_max_depth(lua: &Lua, args: MultiValue) -> Result<MultiValue, String> {
    let a = config_args(args, 1, "decode_max_depth")?;
    configure(lua, |cfg| {
        let range = (1, i64::from(i32::MAX));
        Ok(vec![integer_option(
            &a,
            1,
            "decode_max_depth",
            &mut cfg.decode_max_depth,
            range,
        )?])
    })
}

fn encode_number_precision(lua: &Lua, args: MultiValue) -> Result<MultiValue, String> {
    let a = config_args(args, 1, "encode_number_precision")?;
    configure(lua, |cfg| {
        let name = "encode_number_precision";
        Ok(vec![integer_option(
            &a,
            1,
            name,
            &mut cfg.precision,
            (1, 14),
        )?])
    })
}

fn encode_keep_buffer(lua: &Lua, args: MultiValue) -> Result<MultiValue, String> {
    let a = config_args(args, 1, "encode_keep_buffer")?;
    configure(lua, |cfg| {
        // Our encoder builds each result in a fresh buffer either way; the setting is kept and
        // reported as Lua CJSON does.
        let mut keep = i64::from(cfg.keep_buffer);
        let out = enum_option(lua, &a, 1, "encode_keep_buffer", &mut keep, &[])?;
        cfg.keep_buffer = keep == 1;
        Ok(vec![out])
    })
}

fn encode_invalid_numbers(lua: &Lua, args: MultiValue) -> Result<MultiValue, String> {
    let a = config_args(args, 1, "encode_invalid_numbers")?;
    configure(lua, |cfg| {
        let name = "encode_invalid_numbers";
        let options = ["off", "on", "null"];
        Ok(vec![enum_option(
            lua,
            &a,
            1,
            name,
            &mut cfg.encode_invalid,
            &options,
        )?])
    })
}

fn decode_invalid_numbers(lua: &Lua, args: MultiValue) -> Result<MultiValue, String> {
    let a = config_args(args, 1, "decode_invalid_numbers")?;
    configure(lua, |cfg| {
        let mut on = i64::from(cfg.decode_invalid);
        let out = enum_option(lua, &a, 1, "decode_invalid_numbers", &mut on, &[])?;
        cfg.decode_invalid = on == 1;
        Ok(vec![out])
    })
}

/// The raw `cjson` table (wrapped by `sandbox.lua`, which adds `null`).
pub(super) fn table(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    lua.set_app_data(Config::default());
    t.raw_set("encode", lib_fn(lua, encode)?)?;
    t.raw_set("decode", lib_fn(lua, decode)?)?;
    t.raw_set("encode_sparse_array", lib_fn(lua, encode_sparse_array)?)?;
    t.raw_set("encode_max_depth", lib_fn(lua, encode_max_depth)?)?;
    t.raw_set("decode_max_depth", lib_fn(lua, decode_max_depth)?)?;
    t.raw_set(
        "encode_number_precision",
        lib_fn(lua, encode_number_precision)?,
    )?;
    t.raw_set("encode_keep_buffer", lib_fn(lua, encode_keep_buffer)?)?;
    t.raw_set(
        "encode_invalid_numbers",
        lib_fn(lua, encode_invalid_numbers)?,
    )?;
    t.raw_set(
        "decode_invalid_numbers",
        lib_fn(lua, decode_invalid_numbers)?,
    )?;
    t.raw_set("_NAME", "cjson")?;
    t.raw_set("_VERSION", "2.1.0")?;
    Ok(t)
}
