//! The `cmsgpack` library (lua-cmsgpack 0.4.0 as bundled by Redis): `pack`, `unpack`,
//! `unpack_one`, `unpack_limit`.

use super::api::{
    args_vec, check_bytes, check_number, holds_ref, lib_fn, LUAI_MAXCSTACK, MAX_HELD_REFS,
};
use mlua::{Lua, MultiValue, Table, Value};

/// `LUACMSGPACK_MAX_NESTING`: deeper tables encode as nil.
const MAX_NESTING: usize = 16;

fn encode_int(out: &mut Vec<u8>, n: i64) {
    if n >= 0 {
        if n <= 127 {
            out.push(n as u8);
        } else if n <= 0xff {
            out.extend_from_slice(&[0xcc, n as u8]);
        } else if n <= 0xffff {
            out.push(0xcd);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        } else if n <= 0xffff_ffff {
            out.push(0xce);
            out.extend_from_slice(&(n as u32).to_be_bytes());
        } else {
            out.push(0xcf);
            out.extend_from_slice(&(n as u64).to_be_bytes());
        }
    } else if n >= -32 {
        out.push(n as i8 as u8);
    } else if n >= -128 {
        out.extend_from_slice(&[0xd0, n as i8 as u8]);
    } else if n >= -32768 {
        out.push(0xd1);
        out.extend_from_slice(&(n as i16).to_be_bytes());
    } else if n >= -2_147_483_648 {
        out.push(0xd2);
        out.extend_from_slice(&(n as i32).to_be_bytes());
    } else {
        out.push(0xd3);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

fn encode_number(out: &mut Vec<u8>, n: f64) {
    if !n.is_infinite() && !n.is_nan() && (n as i64) as f64 == n {
        encode_int(out, n as i64);
    } else {
        let f = n as f32;
        if f64::from(f) == n {
            out.push(0xca);
            out.extend_from_slice(&f.to_be_bytes());
        } else {
            out.push(0xcb);
            out.extend_from_slice(&n.to_be_bytes());
        }
    }
}

fn encode_len(out: &mut Vec<u8>, len: usize, fix: u8, fix_max: usize, b16: u8, b32: u8) {
    if len <= fix_max {
        out.push(fix | len as u8);
    } else if len <= 0xffff {
        out.push(b16);
        out.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        out.push(b32);
        out.extend_from_slice(&(len as u32).to_be_bytes());
    }
}

fn encode_bytes(out: &mut Vec<u8>, s: &[u8]) {
    let len = s.len();
    if len < 32 {
        out.push(0xa0 | len as u8);
    } else if len <= 0xff {
        out.extend_from_slice(&[0xd9, len as u8]);
    } else if len <= 0xffff {
        out.push(0xda);
        out.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        out.push(0xdb);
        out.extend_from_slice(&(len as u32).to_be_bytes());
    }
    out.extend_from_slice(s);
}

/// `table_is_an_array`: every key a positive integer and no holes.
fn is_array(t: &Table) -> bool {
    let (mut count, mut max) = (0i64, 0i64);
    for (k, _) in t.pairs::<Value, Value>().flatten() {
        let n = match k {
            Value::Integer(i) => i as f64,
            Value::Number(n) => n,
            _ => return false,
        };
        if n <= 0.0 || (n as i32) as f64 != n {
            return false;
        }
        max = max.max(n as i64);
        count += 1;
    }
    max == count
}

fn encode_value(out: &mut Vec<u8>, v: &Value, level: usize) {
    match v {
        Value::String(s) => encode_bytes(out, &s.as_bytes()),
        Value::Boolean(b) => out.push(if *b { 0xc3 } else { 0xc2 }),
        Value::Integer(i) => encode_int(out, *i),
        Value::Number(n) => encode_number(out, *n),
        Value::Table(t) if level < MAX_NESTING => {
            if is_array(t) {
                let len = t.raw_len();
                encode_len(out, len, 0x90, 15, 0xdc, 0xdd);
                for j in 1..=len {
                    let item = t.raw_get::<Value>(j).unwrap_or(Value::Nil);
                    encode_value(out, &item, level + 1);
                }
            } else {
                // Counted, then walked again (as mp_encode_lua_table_as_map): holding every
                // pair at once would take a Lua reference each, past Lua 5.1's C stack limit.
                let count = t.pairs::<Value, Value>().flatten().count();
                encode_len(out, count, 0x80, 15, 0xde, 0xdf);
                for (k, v) in t.pairs::<Value, Value>().flatten() {
                    encode_value(out, &k, level + 1);
                    encode_value(out, &v, level + 1);
                }
            }
        }
        _ => out.push(0xc0),
    }
}

fn pack(lua: &Lua, args: MultiValue) -> Result<MultiValue, String> {
    if args.is_empty() {
        return Err("bad argument #0 to 'pack' (MessagePack pack needs input.)".into());
    }
    let mut out = Vec::new();
    for v in args.iter() {
        encode_value(&mut out, v, 0);
    }
    let mut mv = MultiValue::new();
    mv.push_back(Value::String(
        lua.create_string(&out).map_err(|e| e.to_string())?,
    ));
    Ok(mv)
}

enum DecodeError {
    Eof,
    BadFormat,
    /// `luaL_checkstack` failed: "stack overflow (<what>)".
    Stack(&'static str),
}

struct Cursor<'a> {
    data: &'a [u8],
    pos: usize,
    /// The Lua stack slots Redis's decoder would hold at this point: it keeps every open
    /// table (and an array's index) there, checking with `luaL_checkstack`, so nesting ends at
    /// about 4 000 levels with its error; the same count bounds the recursion here.
    slots: usize,
    /// The values held through mlua (open tables, a map's key, the results so far), bounded
    /// by [`MAX_HELD_REFS`] with the same error.
    refs: usize,
}

impl Cursor<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], DecodeError> {
        let end = self.pos.checked_add(n).ok_or(DecodeError::Eof)?;
        let s = self.data.get(self.pos..end).ok_or(DecodeError::Eof)?;
        self.pos = end;
        Ok(s)
    }

    fn byte(&mut self) -> Result<u8, DecodeError> {
        Ok(self.take(1)?.first().copied().unwrap_or(0))
    }

    fn be(&mut self, n: usize) -> Result<u64, DecodeError> {
        Ok(self
            .take(n)?
            .iter()
            .fold(0u64, |acc, &b| (acc << 8) | u64::from(b)))
    }

    fn left(&self) -> usize {
        self.data.len().saturating_sub(self.pos)
    }

    /// `luaL_checkstack(L, 1, what)` with the decoder's slots.
    fn check_stack(&self, what: &'static str) -> Result<(), DecodeError> {
        if self.slots + 1 > LUAI_MAXCSTACK || self.refs + 1 > MAX_HELD_REFS {
            return Err(DecodeError::Stack(what));
        }
        Ok(())
    }
}

fn lua_err(e: mlua::Error) -> DecodeError {
    tracing::debug!(error = %e, "cmsgpack decode");
    DecodeError::BadFormat
}

/// Decodes one value (`mp_decode_to_lua_type`); it counts as one slot once returned.
fn decode(lua: &Lua, c: &mut Cursor<'_>) -> Result<Value, DecodeError> {
    if c.left() == 0 {
        return Err(DecodeError::Eof);
    }
    c.check_stack("too many return values at once; use unpack_one or unpack_limit instead.")?;
    let b = c.byte()?;
    let string = |lua: &Lua, c: &mut Cursor<'_>, n: usize| -> Result<Value, DecodeError> {
        let s = c.take(n)?;
        lua.create_string(s).map(Value::String).map_err(lua_err)
    };
    Ok(match b {
        0x00..=0x7f => Value::Number(f64::from(b)),
        0x80..=0x8f => map(lua, c, usize::from(b & 0x0f))?,
        0x90..=0x9f => array(lua, c, usize::from(b & 0x0f))?,
        0xa0..=0xbf => string(lua, c, usize::from(b & 0x1f))?,
        0xc0 => Value::Nil,
        0xc2 => Value::Boolean(false),
        0xc3 => Value::Boolean(true),
        0xc4 | 0xd9 => {
            let n = c.be(1)? as usize;
            string(lua, c, n)?
        }
        0xc5 | 0xda => {
            let n = c.be(2)? as usize;
            string(lua, c, n)?
        }
        0xc6 | 0xdb => {
            let n = c.be(4)? as usize;
            string(lua, c, n)?
        }
        0xca => Value::Number(f64::from(f32::from_bits(c.be(4)? as u32))),
        0xcb => Value::Number(f64::from_bits(c.be(8)?)),
        0xcc => Value::Number(c.be(1)? as f64),
        0xcd => Value::Number(c.be(2)? as f64),
        0xce => Value::Number(c.be(4)? as f64),
        0xcf => Value::Number(c.be(8)? as f64),
        0xd0 => Value::Number(f64::from(c.be(1)? as u8 as i8)),
        0xd1 => Value::Number(f64::from(c.be(2)? as u16 as i16)),
        0xd2 => Value::Number(f64::from(c.be(4)? as u32 as i32)),
        0xd3 => Value::Number(c.be(8)? as i64 as f64),
        0xdc => {
            let n = c.be(2)? as usize;
            array(lua, c, n)?
        }
        0xdd => {
            let n = c.be(4)? as usize;
            array(lua, c, n)?
        }
        0xde => {
            let n = c.be(2)? as usize;
            map(lua, c, n)?
        }
        0xdf => {
            let n = c.be(4)? as usize;
            map(lua, c, n)?
        }
        0xe0..=0xff => Value::Number(f64::from(b as i8)),
        _ => return Err(DecodeError::BadFormat),
    })
}

fn array(lua: &Lua, c: &mut Cursor<'_>, n: usize) -> Result<Value, DecodeError> {
    let t = lua
        .create_table_with_capacity(n.min(c.left()), 0)
        .map_err(lua_err)?;
    // The table, then the index pushed before each element.
    c.slots += 1;
    c.refs += 1;
    c.check_stack("in function mp_decode_to_lua_array")?;
    c.slots += 1;
    for i in 1..=n {
        let v = decode(lua, c)?;
        t.raw_set(i, v).map_err(lua_err)?;
    }
    c.slots -= 2;
    c.refs -= 1;
    Ok(Value::Table(t))
}

fn map(lua: &Lua, c: &mut Cursor<'_>, n: usize) -> Result<Value, DecodeError> {
    let t = lua.create_table().map_err(lua_err)?;
    // The table, then each key while its value is decoded.
    c.slots += 1;
    c.refs += 1;
    for _ in 0..n {
        let k = decode(lua, c)?;
        let key_ref = usize::from(holds_ref(&k));
        c.slots += 1;
        c.refs += key_ref;
        let v = decode(lua, c)?;
        c.slots -= 1;
        c.refs -= key_ref;
        if matches!(k, Value::Nil) {
            continue;
        }
        t.raw_set(k, v).map_err(lua_err)?;
    }
    c.slots -= 1;
    c.refs -= 1;
    Ok(Value::Table(t))
}

/// `mp_unpack_full`; `args` is the number of arguments left on the Lua stack below the results.
fn unpack_full(
    lua: &Lua,
    data: &[u8],
    limit: i64,
    offset: i64,
    args: usize,
) -> Result<MultiValue, String> {
    let decode_all = limit == 0 && offset == 0;
    if offset < 0 || limit < 0 {
        return Err(format!(
            "Invalid request to unpack with offset of {offset} and limit of {}.",
            data.len()
        ));
    }
    if offset as usize > data.len() {
        return Err(format!(
            "Start offset {offset} greater than input length {}.",
            data.len()
        ));
    }
    let limit = if decode_all { i64::MAX } else { limit };
    let mut c = Cursor {
        data,
        pos: offset as usize,
        slots: args,
        refs: 0,
    };
    let mut out = MultiValue::new();
    let mut count = 0;
    while c.left() > 0 && count < limit {
        match decode(lua, &mut c) {
            Ok(v) => out.push_back(v),
            Err(DecodeError::Eof) => return Err("Missing bytes in input.".into()),
            Err(DecodeError::BadFormat) => return Err("Bad data format in input.".into()),
            Err(DecodeError::Stack(what)) => return Err(format!("stack overflow ({what})")),
        }
        // Each top-level value stays on the stack as a result.
        c.slots += 1;
        c.refs += out.back().map_or(0, |v| usize::from(holds_ref(v)));
        count += 1;
    }
    if !decode_all {
        let next = if c.left() == 0 { -1 } else { c.pos as i64 };
        out.push_front(Value::Number(next as f64));
    }
    Ok(out)
}

fn unpack(lua: &Lua, args: MultiValue) -> Result<MultiValue, String> {
    let a = args_vec(args);
    let data = check_bytes(&a, 1, "unpack")?;
    unpack_full(lua, &data, 0, 0, a.len().max(1))
}

fn unpack_one(lua: &Lua, args: MultiValue) -> Result<MultiValue, String> {
    let a = args_vec(args);
    let data = check_bytes(&a, 1, "unpack_one")?;
    let offset = match a.get(1) {
        None | Some(Value::Nil) => 0,
        Some(_) => check_number(&a, 2, "unpack_one")? as i64,
    };
    unpack_full(lua, &data, 1, offset, 1)
}

fn unpack_limit(lua: &Lua, args: MultiValue) -> Result<MultiValue, String> {
    let a = args_vec(args);
    let data = check_bytes(&a, 1, "unpack_limit")?;
    let limit = check_number(&a, 2, "unpack_limit")? as i64;
    let offset = match a.get(2) {
        None | Some(Value::Nil) => 0,
        Some(_) => check_number(&a, 3, "unpack_limit")? as i64,
    };
    unpack_full(lua, &data, limit, offset, 1)
}

/// The raw `cmsgpack` table (wrapped by `sandbox.lua`).
pub(super) fn table(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.raw_set("pack", lib_fn(lua, pack)?)?;
    t.raw_set("unpack", lib_fn(lua, unpack)?)?;
    t.raw_set("unpack_one", lib_fn(lua, unpack_one)?)?;
    t.raw_set("unpack_limit", lib_fn(lua, unpack_limit)?)?;
    t.raw_set("_NAME", "cmsgpack")?;
    t.raw_set("_VERSION", "lua-cmsgpack 0.4.0")?;
    t.raw_set("_COPYRIGHT", "Copyright (C) 2012, Salvatore Sanfilippo")?;
    t.raw_set("_DESCRIPTION", "MessagePack C implementation for Lua")?;
    Ok(t)
}
