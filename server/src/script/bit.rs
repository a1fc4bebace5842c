//! The `bit` library (LuaBitOp 1.0.2 as bundled by Redis): 32-bit operations on Lua numbers.

use super::api::{args_vec, check_number, lib_fn};
use mlua::{Lua, MultiValue, Table, Value};

/// LuaBitOp's `barg`: the number's low 32 bits after adding 2^52+2^51 (round to nearest).
fn barg(args: &[Value], i: usize, fname: &str) -> Result<u32, String> {
    let n = check_number(args, i, fname)?;
    Ok((n + 6_755_399_441_055_744.0).to_bits() as u32)
}

fn ret(b: u32) -> Result<MultiValue, String> {
    let mut mv = MultiValue::new();
    mv.push_back(Value::Number(f64::from(b as i32)));
    Ok(mv)
}

fn tobit(_: &Lua, a: MultiValue) -> Result<MultiValue, String> {
    let a = args_vec(a);
    ret(barg(&a, 1, "tobit")?)
}

fn bnot(_: &Lua, a: MultiValue) -> Result<MultiValue, String> {
    let a = args_vec(a);
    ret(!barg(&a, 1, "bnot")?)
}

fn fold(a: MultiValue, name: &str, f: fn(u32, u32) -> u32) -> Result<MultiValue, String> {
    let a = args_vec(a);
    let mut acc = barg(&a, 1, name)?;
    for i in 2..=a.len() {
        acc = f(acc, barg(&a, i, name)?);
    }
    ret(acc)
}

fn band(_: &Lua, a: MultiValue) -> Result<MultiValue, String> {
    fold(a, "band", |x, y| x & y)
}

fn bor(_: &Lua, a: MultiValue) -> Result<MultiValue, String> {
    fold(a, "bor", |x, y| x | y)
}

fn bxor(_: &Lua, a: MultiValue) -> Result<MultiValue, String> {
    fold(a, "bxor", |x, y| x ^ y)
}

fn shift(a: MultiValue, name: &str, f: fn(u32, u32) -> u32) -> Result<MultiValue, String> {
    let a = args_vec(a);
    let b = barg(&a, 1, name)?;
    let n = barg(&a, 2, name)? & 31;
    ret(f(b, n))
}

fn lshift(_: &Lua, a: MultiValue) -> Result<MultiValue, String> {
    shift(a, "lshift", |b, n| b << n)
}

fn rshift(_: &Lua, a: MultiValue) -> Result<MultiValue, String> {
    shift(a, "rshift", |b, n| b >> n)
}

fn arshift(_: &Lua, a: MultiValue) -> Result<MultiValue, String> {
    shift(a, "arshift", |b, n| ((b as i32) >> n) as u32)
}

fn rol(_: &Lua, a: MultiValue) -> Result<MultiValue, String> {
    shift(a, "rol", |b, n| b.rotate_left(n))
}

fn ror(_: &Lua, a: MultiValue) -> Result<MultiValue, String> {
    shift(a, "ror", |b, n| b.rotate_right(n))
}

fn bswap(_: &Lua, a: MultiValue) -> Result<MultiValue, String> {
    let a = args_vec(a);
    ret(barg(&a, 1, "bswap")?.swap_bytes())
}

fn tohex(lua: &Lua, a: MultiValue) -> Result<MultiValue, String> {
    let a = args_vec(a);
    let mut b = barg(&a, 1, "tohex")?;
    let mut n: i32 = match a.get(1) {
        None | Some(Value::Nil) => 8,
        Some(_) => barg(&a, 2, "tohex")? as i32,
    };
    // As Redis's fix for CVE-2024-31449: INT32_MIN counts as INT32_MIN + 1 (upper case, 8
    // digits); negated as it is it stayed negative and gave "".
    if n == i32::MIN {
        n = i32::MIN + 1;
    }
    let upper = n < 0;
    if upper {
        n = -n;
    }
    let n = n.clamp(0, 8) as usize;
    let digits: &[u8; 16] = if upper {
        b"0123456789ABCDEF"
    } else {
        b"0123456789abcdef"
    };
    let mut buf = vec![0u8; n];
    for slot in buf.iter_mut().rev() {
        *slot = digits[(b & 15) as usize];
        b >>= 4;
    }
    let mut mv = MultiValue::new();
    mv.push_back(Value::String(
        lua.create_string(&buf).map_err(|e| e.to_string())?,
    ));
    Ok(mv)
}

type LibFn = fn(&Lua, MultiValue) -> Result<MultiValue, String>;

/// The `bit` table.
pub(super) fn table(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    let fns: [(&str, LibFn); 12] = [
        ("tobit", tobit),
        ("bnot", bnot),
        ("band", band),
        ("bor", bor),
        ("bxor", bxor),
        ("lshift", lshift),
        ("rshift", rshift),
        ("arshift", arshift),
        ("rol", rol),
        ("ror", ror),
        ("bswap", bswap),
        ("tohex", tohex),
    ];
    for (name, f) in fns {
        t.raw_set(name, lib_fn(lua, f)?)?;
    }
    Ok(t)
}
