//! The `struct` library (Roberto Ierusalimschy's struct.c as bundled by Redis): `pack`,
//! `unpack` and `size` of binary records.

use super::api::{args_vec, bad_type, check_bytes, check_number, lib_fn, parse_lua_number};
use mlua::{Lua, MultiValue, Table, Value};

/// `MAXINTSIZE`.
const MAXINTSIZE: usize = 32;
/// `MAXALIGN` on x86-64.
const MAXALIGN: usize = 8;

#[derive(Clone, Copy, PartialEq)]
enum Endian {
    Little,
    Big,
}

struct Header {
    endian: Endian,
    align: usize,
}

impl Header {
    fn new() -> Self {
        Header {
            endian: Endian::Little,
            align: 1,
        }
    }
}

struct Fmt<'a> {
    s: &'a [u8],
    pos: usize,
}

impl Fmt<'_> {
    fn next(&mut self) -> Option<u8> {
        let c = self.s.get(self.pos).copied();
        if c.is_some() {
            self.pos += 1;
        }
        c
    }

    fn getnum(&mut self, df: usize) -> Result<usize, String> {
        match self.s.get(self.pos) {
            Some(c) if c.is_ascii_digit() => {}
            _ => return Ok(df),
        }
        let mut a: usize = 0;
        while let Some(&c) = self.s.get(self.pos) {
            if !c.is_ascii_digit() {
                break;
            }
            let d = usize::from(c - b'0');
            if a > (i32::MAX as usize) / 10 || a * 10 > (i32::MAX as usize) - d {
                return Err("integral size overflow".into());
            }
            a = a * 10 + d;
            self.pos += 1;
        }
        Ok(a)
    }

    fn optsize(&mut self, opt: u8) -> Result<usize, String> {
        Ok(match opt {
            b'B' | b'b' => 1,
            b'H' | b'h' => 2,
            b'L' | b'l' | b'T' => 8,
            b'f' => 4,
            b'd' => 8,
            b'x' => 1,
            b'c' => self.getnum(1)?,
            b'i' | b'I' => {
                let sz = self.getnum(4)?;
                if sz > MAXINTSIZE {
                    return Err(format!(
                        "integral size {sz} is larger than limit of {MAXINTSIZE}"
                    ));
                }
                sz
            }
            _ => 0,
        })
    }

    fn controloptions(&mut self, opt: u8, h: &mut Header) -> Result<(), String> {
        match opt {
            b' ' => Ok(()),
            b'>' => {
                h.endian = Endian::Big;
                Ok(())
            }
            b'<' => {
                h.endian = Endian::Little;
                Ok(())
            }
            b'!' => {
                let a = self.getnum(MAXALIGN)?;
                if a == 0 || a & (a - 1) != 0 {
                    return Err(format!("alignment {a} is not a power of 2"));
                }
                h.align = a;
                Ok(())
            }
            _ => Err(format!(
                "bad argument #1 to '?' (invalid format option '{}')",
                char::from(opt)
            )),
        }
    }
}

fn gettoalign(len: usize, h: &Header, opt: u8, size: usize) -> usize {
    if size == 0 || opt == b'c' {
        return 0;
    }
    let size = size.min(h.align);
    (size - (len & (size - 1))) & (size - 1)
}

fn fix_fname(msg: String, fname: &str) -> String {
    msg.replace("to '?'", &format!("to '{fname}'"))
}

fn pack(lua: &Lua, args: MultiValue) -> Result<MultiValue, String> {
    let a = args_vec(args);
    let fmt = check_bytes(&a, 1, "pack")?;
    let mut f = Fmt { s: &fmt, pos: 0 };
    let mut h = Header::new();
    let mut arg = 2;
    let mut out: Vec<u8> = Vec::new();
    while let Some(opt) = f.next() {
        let mut size = f.optsize(opt)?;
        let toalign = gettoalign(out.len(), &h, opt, size);
        out.extend(std::iter::repeat_n(0u8, toalign));
        match opt {
            b'b' | b'B' | b'h' | b'H' | b'l' | b'L' | b'T' | b'i' | b'I' => {
                let n = check_number(&a, arg, "pack")?;
                arg += 1;
                let mut value: u64 = if n < 0.0 { (n as i64) as u64 } else { n as u64 };
                let mut buf = vec![0u8; size];
                if h.endian == Endian::Little {
                    for b in buf.iter_mut() {
                        *b = value as u8;
                        value = value.checked_shr(8).unwrap_or(0);
                    }
                } else {
                    for b in buf.iter_mut().rev() {
                        *b = value as u8;
                        value = value.checked_shr(8).unwrap_or(0);
                    }
                }
                out.extend_from_slice(&buf);
            }
            b'x' => out.push(0),
            b'f' => {
                let v = check_number(&a, arg, "pack")? as f32;
                arg += 1;
                let bytes = if h.endian == Endian::Little {
                    v.to_le_bytes()
                } else {
                    v.to_be_bytes()
                };
                out.extend_from_slice(&bytes);
            }
            b'd' => {
                let v = check_number(&a, arg, "pack")?;
                arg += 1;
                let bytes = if h.endian == Endian::Little {
                    v.to_le_bytes()
                } else {
                    v.to_be_bytes()
                };
                out.extend_from_slice(&bytes);
            }
            b'c' | b's' => {
                let s = check_bytes(&a, arg, "pack")?;
                arg += 1;
                if size == 0 {
                    size = s.len();
                }
                if s.len() < size {
                    return Err(format!("bad argument #{arg} to 'pack' (string too short)"));
                }
                out.extend_from_slice(s.get(..size).unwrap_or_default());
                if opt == b's' {
                    out.push(0);
                }
            }
            _ => f
                .controloptions(opt, &mut h)
                .map_err(|m| fix_fname(m, "pack"))?,
        }
    }
    let mut mv = MultiValue::new();
    mv.push_back(Value::String(
        lua.create_string(&out).map_err(|e| e.to_string())?,
    ));
    Ok(mv)
}

fn getinteger(buf: &[u8], endian: Endian, signed: bool, size: usize) -> f64 {
    let mut l: u64 = 0;
    let mut push = |b: u8| l = (l.checked_shl(8).unwrap_or(0)) | u64::from(b);
    if endian == Endian::Big {
        buf.iter().take(size).for_each(|&b| push(b));
    } else {
        buf.iter().take(size).rev().for_each(|&b| push(b));
    }
    if !signed {
        return l as f64;
    }
    let bits = (size * 8).min(64);
    if bits == 0 {
        return 0.0;
    }
    let mask = u64::MAX.checked_shl((bits - 1) as u32).unwrap_or(0);
    if l & mask != 0 {
        l |= mask;
    }
    (l as i64) as f64
}

fn unpack(lua: &Lua, args: MultiValue) -> Result<MultiValue, String> {
    let a = args_vec(args);
    let fmt = check_bytes(&a, 1, "unpack")?;
    let data = check_bytes(&a, 2, "unpack")?;
    let ld = data.len();
    let start = match a.get(2) {
        None | Some(Value::Nil) => 1.0,
        Some(_) => check_number(&a, 3, "unpack")?,
    };
    // Redis's `size_t pos = luaL_optinteger(L, 3, 1)`: the offset converted as x86-64 does,
    // then taken as a size; only 0 is refused, and a negative offset is a position past any
    // data (which the length check then refuses), computed with wrapping as in C.
    let offset = c_integer(start);
    if offset == 0 {
        return Err("bad argument #3 to 'unpack' (offset must be 1 or greater)".into());
    }
    let mut pos = (offset as u64 as usize).wrapping_sub(1);
    let mut f = Fmt { s: &fmt, pos: 0 };
    let mut h = Header::new();
    let mut out: Vec<Value> = Vec::new();
    let too_short = || "bad argument #2 to 'unpack' (data string too short)".to_string();
    let str_value = |lua: &Lua, b: &[u8]| -> Result<Value, String> {
        lua.create_string(b)
            .map(Value::String)
            .map_err(|e| e.to_string())
    };
    while let Some(opt) = f.next() {
        let mut size = f.optsize(opt)?;
        pos = pos.wrapping_add(gettoalign(pos, &h, opt, size));
        if size > ld || pos > ld - size {
            return Err(too_short());
        }
        let here = data.get(pos..).unwrap_or_default();
        match opt {
            b'b' | b'B' | b'h' | b'H' | b'l' | b'L' | b'T' | b'i' | b'I' => {
                let signed = opt.is_ascii_lowercase();
                out.push(Value::Number(getinteger(here, h.endian, signed, size)));
            }
            b'x' => {}
            b'f' => {
                let mut b = [0u8; 4];
                b.copy_from_slice(here.get(..4).unwrap_or(&[0; 4]));
                let v = if h.endian == Endian::Little {
                    f32::from_le_bytes(b)
                } else {
                    f32::from_be_bytes(b)
                };
                out.push(Value::Number(f64::from(v)));
            }
            b'd' => {
                let mut b = [0u8; 8];
                b.copy_from_slice(here.get(..8).unwrap_or(&[0; 8]));
                let v = if h.endian == Endian::Little {
                    f64::from_le_bytes(b)
                } else {
                    f64::from_be_bytes(b)
                };
                out.push(Value::Number(v));
            }
            b'c' => {
                if size == 0 {
                    let prev = match out.last() {
                        Some(Value::Number(n)) => Some(*n),
                        Some(Value::Integer(n)) => Some(*n as f64),
                        // lua_isnumber: a string read before counts if it reads as a number.
                        Some(Value::String(s)) => {
                            std::str::from_utf8(&s.as_bytes()).ok().and_then(|t| {
                                parse_lua_number(t.trim_matches(|c: char| c.is_ascii_whitespace()))
                            })
                        }
                        _ => None,
                    };
                    let Some(prev) = prev else {
                        return Err("format 'c0' needs a previous size".into());
                    };
                    out.pop();
                    size = c_size_t(prev);
                    if size > ld || pos > ld - size {
                        return Err(too_short());
                    }
                }
                out.push(str_value(
                    lua,
                    data.get(pos..pos + size).unwrap_or_default(),
                )?);
            }
            b's' => {
                let Some(end) = here.iter().position(|&b| b == 0) else {
                    return Err("unfinished string in data".into());
                };
                size = end + 1;
                out.push(str_value(lua, here.get(..end).unwrap_or_default())?);
            }
            _ => f
                .controloptions(opt, &mut h)
                .map_err(|m| fix_fname(m, "unpack"))?,
        }
        pos += size;
    }
    // `lua_pushinteger(L, pos + 1)`: the size read back as a signed lua_Integer.
    out.push(Value::Number(pos.wrapping_add(1) as i64 as f64));
    Ok(out.into_iter().collect())
}

/// 2^63 as a double.
const TWO_63: f64 = 9_223_372_036_854_775_808.0;

/// `(lua_Integer)x` as Redis's x86-64 build computes it (cvttsd2si): NaN and what does not fit
/// in an i64 give i64::MIN, what fits is truncated.
fn c_integer(x: f64) -> i64 {
    if x.is_nan() || !(-TWO_63..TWO_63).contains(&x) {
        i64::MIN
    } else {
        x as i64
    }
}

/// `(size_t)x` as Redis's x86-64 build computes it (`size = lua_tonumber(L, -1)`): a negative
/// count or NaN is a huge size (the data is then too short), +inf and values past 2^64 wrap
/// to 0, what fits is truncated.
fn c_size_t(x: f64) -> usize {
    let cvt = c_integer;
    let n = if x >= TWO_63 {
        (cvt(x - TWO_63) as u64) ^ (1 << 63)
    } else {
        cvt(x) as u64
    };
    usize::try_from(n).unwrap_or(usize::MAX)
}

fn size(_: &Lua, args: MultiValue) -> Result<MultiValue, String> {
    let a = args_vec(args);
    let fmt = match a.first() {
        Some(Value::String(_)) | Some(Value::Number(_)) | Some(Value::Integer(_)) => {
            check_bytes(&a, 1, "size")?
        }
        other => return Err(bad_type(1, "size", "string", other)),
    };
    let mut f = Fmt { s: &fmt, pos: 0 };
    let mut h = Header::new();
    let mut pos = 0usize;
    while let Some(opt) = f.next() {
        let size = f.optsize(opt)?;
        pos += gettoalign(pos, &h, opt, size);
        if opt == b's' {
            return Err("bad argument #1 to 'size' (options 's' has no fixed size)".into());
        } else if opt == b'c' && size == 0 {
            return Err("bad argument #1 to 'size' (option 'c0' has no fixed size)".into());
        }
        if !opt.is_ascii_alphanumeric() {
            f.controloptions(opt, &mut h)
                .map_err(|m| fix_fname(m, "size"))?;
        }
        pos += size;
    }
    let mut mv = MultiValue::new();
    mv.push_back(Value::Number(pos as f64));
    Ok(mv)
}

/// The raw `struct` table (wrapped by `sandbox.lua`).
pub(super) fn table(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.raw_set("pack", lib_fn(lua, pack)?)?;
    t.raw_set("unpack", lib_fn(lua, unpack)?)?;
    t.raw_set("size", lib_fn(lua, size)?)?;
    Ok(t)
}
