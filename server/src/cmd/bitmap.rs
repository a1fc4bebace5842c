//! Bitmaps on string values, bit 0 being the most significant bit of the first byte, as Redis
//! numbers them: SETBIT, GETBIT, BITCOUNT, BITPOS, BITOP, BITFIELD and BITFIELD_RO, ported
//! from Redis 7.0's `bitops.c` (ranges in bytes or bits, the overflow modes, the error texts).

use super::{parse_i64, Args, CmdResult, Command, CommandError, Ctx};
use crate::db::{StringValue, Value};
use crate::notify;
use bytes::Bytes;
use locksmith_resp::Frame;

/// The bitmap family's table.
pub(crate) static COMMANDS: &[Command] = &[
    Command::new("setbit", setbit),
    Command::new("getbit", getbit),
    Command::new("bitcount", bitcount),
    Command::new("bitpos", bitpos),
    Command::new("bitop", bitop),
    Command::new("bitfield", bitfield),
    Command::new("bitfield_ro", bitfield_ro),
];

/// Redis's `getBitOffsetFromArgument`: a non-negative integer whose byte lies within
/// `proto-max-bulk-len`.
fn bit_offset(ctx: &Ctx<'_>, arg: &[u8]) -> Result<u64, CommandError> {
    let max_bytes = ctx.node.config.proto_max_bulk_len();
    parse_i64(arg)
        .ok()
        .and_then(|n| u64::try_from(n).ok())
        .filter(|n| n >> 3 < max_bytes)
        .ok_or_else(|| CommandError::err("bit offset is not an integer or out of range"))
}

/// ```text
/// SETBIT key offset value
/// ```
fn setbit(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.bytes()?;
    let offset = bit_offset(ctx, args.bytes()?)?;
    let on = match parse_i64(args.bytes()?) {
        Ok(b @ (0 | 1)) => b == 1,
        _ => return Err(CommandError::err("bit is not an integer or out of range")),
    };
    let byte = usize::try_from(offset >> 3).map_err(|_| CommandError::Overflow)?;
    let mask = 1u8 << (7 - (offset & 7));
    let (entry, existed) = ctx.find_or_insert(key, || Value::String(StringValue::EMPTY));
    let Value::String(current) = &mut entry.value else {
        return Err(CommandError::WrongType);
    };
    let grows = current.len() <= byte;
    let old = current.get(byte).is_some_and(|b| b & mask != 0);
    // As Redis: a key created or grown, or a bit that flips, is a write; setting a bit to
    // the value it has touches nothing (no WATCH, no event, no dirty).
    if existed && !grows && old == on {
        return Ok(Frame::Integer(i64::from(old)));
    }
    // In place when nothing else holds the string (a large bitmap is not copied per bit).
    let mut bits = std::mem::take(current).into_mut();
    if grows {
        bits.resize(byte + 1, 0);
    }
    if on {
        bits[byte] |= mask;
    } else {
        bits[byte] &= !mask;
    }
    *current = bits.freeze().into();
    ctx.modified(key);
    ctx.notify(notify::STRING, "setbit", key);
    Ok(Frame::Integer(i64::from(old)))
}

/// ```text
/// GETBIT key offset
/// ```
fn getbit(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.bytes()?;
    let offset = bit_offset(ctx, args.bytes()?)?;
    let Some(value) = ctx.get_string(key)? else {
        return Ok(Frame::Integer(0));
    };
    let bit = usize::try_from(offset >> 3)
        .ok()
        .and_then(|byte| value.get(byte))
        .is_some_and(|b| b & (1 << (7 - (offset & 7))) != 0);
    Ok(Frame::Integer(i64::from(bit)))
}

/// A `start end [BYTE | BIT]` range resolved against a string of `len` bytes as Redis's
/// BITCOUNT/BITPOS do: the first and last byte, and the masks of the bits outside a BIT
/// range in those bytes. `None` when the range is empty.
struct ByteRange {
    start: usize,
    end: usize,
    /// Bits of the first byte before the range (BIT ranges).
    first_mask: u8,
    /// Bits of the last byte after the range.
    last_mask: u8,
}

/// Clamps `start..=end` (negative from the end) over `total` units, as Redis does.
fn clamp(mut start: i64, mut end: i64, total: i64) -> (i64, i64) {
    if start < 0 {
        start += total;
    }
    if end < 0 {
        end += total;
    }
    start = start.max(0);
    end = end.max(0);
    if end >= total {
        end = total - 1;
    }
    (start, end)
}

fn byte_range(start: i64, end: i64, len: usize, bits: bool) -> Option<ByteRange> {
    let total = if bits { (len as i64) << 3 } else { len as i64 };
    let (start, end) = clamp(start, end, total);
    if start > end {
        return None;
    }
    if bits {
        Some(ByteRange {
            start: (start >> 3) as usize,
            end: (end >> 3) as usize,
            first_mask: (!((1u16 << (8 - (start & 7))) - 1) & 0xFF) as u8,
            last_mask: ((1u16 << (7 - (end & 7))) - 1) as u8,
        })
    } else {
        Some(ByteRange {
            start: start as usize,
            end: end as usize,
            first_mask: 0,
            last_mask: 0,
        })
    }
}

/// `BYTE` or `BIT` (a syntax error otherwise).
fn unit(arg: Option<&Bytes>) -> Result<bool, CommandError> {
    match arg {
        None => Ok(false),
        Some(a) if a.eq_ignore_ascii_case(b"bit") => Ok(true),
        Some(a) if a.eq_ignore_ascii_case(b"byte") => Ok(false),
        Some(_) => Err(CommandError::Syntax),
    }
}

/// ```text
/// BITCOUNT key [start [end [BYTE | BIT]]]
/// ```
fn bitcount(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.bytes()?;
    let rest = args.rest().to_vec();
    let valkey = ctx.node.config.profile().checks.bit_args_first;
    // `(start, end, bits)`, parsed in the target's order.
    let parsed = || -> Result<Option<(i64, i64, bool)>, CommandError> {
        match rest.as_slice() {
            [] => Ok(None),
            [start] if valkey => Ok(Some((parse_i64(start)?, -1, false))),
            [start, end, unit_arg @ ..] if unit_arg.len() <= 1 => {
                let start = parse_i64(start)?;
                if valkey {
                    let bits = unit(unit_arg.first())?;
                    Ok(Some((start, parse_i64(end)?, bits)))
                } else {
                    let end = parse_i64(end)?;
                    Ok(Some((start, end, unit(unit_arg.first())?)))
                }
            }
            _ => Err(CommandError::Syntax),
        }
    };
    // Valkey checks the arguments first, Redis 7.0 after finding the key.
    if valkey {
        parsed()?;
    }
    let Some(value) = ctx.get_string(key)? else {
        return Ok(Frame::Integer(0));
    };
    let range = match parsed()? {
        None => byte_range(0, -1, value.len(), false),
        Some((start, end, bits)) => {
            if start < 0 && end < 0 && start > end {
                return Ok(Frame::Integer(0));
            }
            byte_range(start, end, value.len(), bits)
        }
    };
    let Some(r) = range else {
        return Ok(Frame::Integer(0));
    };
    let bytes = value.get(r.start..=r.end).unwrap_or_default();
    let mut count: i64 = bytes.iter().map(|b| i64::from(b.count_ones())).sum();
    if r.first_mask != 0 {
        count -= i64::from((bytes.first().copied().unwrap_or(0) & r.first_mask).count_ones());
    }
    if r.last_mask != 0 {
        count -= i64::from((bytes.last().copied().unwrap_or(0) & r.last_mask).count_ones());
    }
    Ok(Frame::Integer(count))
}

/// `redisBitpos`: the first bit equal to `bit` in `bytes`; for a 0 not found, the bit after
/// them (the string is as if padded with zeros), for a 1 not found, -1.
fn first_bit(bytes: &[u8], bit: bool) -> i64 {
    for (i, &b) in bytes.iter().enumerate() {
        let b = if bit { b } else { !b };
        if b != 0 {
            return (i as i64) * 8 + i64::from(b.leading_zeros());
        }
    }
    if bit {
        -1
    } else {
        (bytes.len() as i64) * 8
    }
}

/// ```text
/// BITPOS key bit [start [end [BYTE | BIT]]]
/// ```
fn bitpos(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.bytes()?;
    let bit = match args.i64() {
        Ok(b @ (0 | 1)) => b == 1,
        Ok(_) => return Err(CommandError::err("The bit argument must be 1 or 0.")),
        Err(e) => return Err(e),
    };
    let rest = args.rest().to_vec();
    if ctx.node.config.profile().checks.bit_args_first {
        // Valkey checks the range before it looks the key up (Redis 7.0 after), in
        // `bitposCommand`'s order: start, the unit, then end.
        match rest.as_slice() {
            [] => {}
            [start, more @ ..] if more.len() <= 2 => {
                parse_i64(start)?;
                unit(more.get(1))?;
                if let Some(end) = more.first() {
                    parse_i64(end)?;
                }
            }
            _ => return Err(CommandError::Syntax),
        }
    }
    let Some(value) = ctx.get_string(key)? else {
        return Ok(Frame::Integer(if bit { -1 } else { 0 }));
    };
    let len = value.len();
    let mut end_given = false;
    let range = match rest.len() {
        0 => byte_range(0, len as i64 - 1, len, false),
        1..=3 => {
            let start = parse_i64(&rest[0])?;
            let bits = unit(rest.get(2))?;
            let end = match rest.get(1) {
                Some(e) => {
                    end_given = true;
                    parse_i64(e)?
                }
                None if bits => ((len as i64) << 3) + 7,
                None => len as i64 - 1,
            };
            byte_range(start, end, len, bits)
        }
        _ => return Err(CommandError::Syntax),
    };
    let Some(ByteRange {
        mut start,
        end,
        first_mask,
        last_mask,
    }) = range
    else {
        return Ok(Frame::Integer(-1));
    };
    let byte = |i: usize| value.get(i).copied().unwrap_or(0);
    let mut bytes = end - start + 1;
    let pos = 'found: {
        if first_mask != 0 {
            let mut c = if bit {
                byte(start) & !first_mask
            } else {
                byte(start) | first_mask
            };
            if last_mask != 0 && bytes == 1 {
                c = if bit { c & !last_mask } else { c | last_mask };
            }
            let pos = first_bit(&[c], bit);
            if bytes == 1 || (pos != -1 && pos != 8) {
                break 'found pos;
            }
            start += 1;
            bytes -= 1;
        }
        let cur = bytes - usize::from(last_mask != 0);
        if cur > 0 {
            let pos = first_bit(value.get(start..start + cur).unwrap_or_default(), bit);
            if bytes == cur || (pos != -1 && pos != (cur as i64) << 3) {
                break 'found pos;
            }
            start += cur;
            bytes -= cur;
        }
        let c = if bit {
            byte(end) & !last_mask
        } else {
            byte(end) | last_mask
        };
        first_bit(&[c], bit)
    };
    if end_given && !bit && pos == (bytes as i64) << 3 {
        return Ok(Frame::Integer(-1));
    }
    Ok(Frame::Integer(if pos == -1 {
        -1
    } else {
        pos + ((start as i64) << 3)
    }))
}

/// ```text
/// BITOP <AND | OR | XOR | NOT> destkey key [key ...]
/// ```
fn bitop(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let op = args.bytes()?.to_ascii_lowercase();
    let dest = args.bytes()?;
    let sources = args.rest().to_vec();
    if !matches!(op.as_slice(), b"and" | b"or" | b"xor" | b"not") {
        return Err(CommandError::Syntax);
    }
    if op == b"not" && sources.len() != 1 {
        return Err(CommandError::err(
            "BITOP NOT must be called with a single source key.",
        ));
    }
    let mut values: Vec<Bytes> = Vec::with_capacity(sources.len());
    for key in &sources {
        values.push(ctx.read_string(key)?.unwrap_or_default());
    }
    let maxlen = values.iter().map(Bytes::len).max().unwrap_or(0);
    if maxlen == 0 {
        if ctx.delete(dest) {
            ctx.notify(notify::GENERIC, "del", dest);
        }
        return Ok(Frame::Integer(0));
    }
    let mut out = vec![0u8; maxlen];
    for (i, o) in out.iter_mut().enumerate() {
        let at = |v: &Bytes| v.get(i).copied().unwrap_or(0);
        *o = match op.as_slice() {
            b"not" => !at(&values[0]),
            b"and" => values.iter().fold(0xFF, |acc, v| acc & at(v)),
            b"or" => values.iter().fold(0, |acc, v| acc | at(v)),
            _ => values.iter().fold(0, |acc, v| acc ^ at(v)),
        };
    }
    ctx.set(dest, Value::String(out.into()), None);
    ctx.notify(notify::STRING, "set", dest);
    Ok(Frame::Integer(maxlen as i64))
}

/// One BITFIELD operation.
#[derive(Debug, Clone, Copy)]
enum FieldOp {
    Get,
    Set(i64),
    IncrBy(i64),
}

/// What an overflowing SET/INCRBY does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Overflow {
    Wrap,
    Sat,
    Fail,
}

/// `getBitfieldTypeFromArgument`: `i1`..`i64` or `u1`..`u63`.
fn field_type(arg: &[u8]) -> Result<(bool, u32), CommandError> {
    let err = || {
        CommandError::err(
            "Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported \
             but i64 is.",
        )
    };
    let signed = match arg.first() {
        Some(b'i') => true,
        Some(b'u') => false,
        _ => return Err(err()),
    };
    let bits = parse_i64(&arg[1..]).map_err(|_| err())?;
    if bits < 1 || (signed && bits > 64) || (!signed && bits > 63) {
        return Err(err());
    }
    Ok((signed, bits as u32))
}

/// `getBitOffsetFromArgument` with the `#<n>` form (n fields of `bits` bits).
fn field_offset(ctx: &Ctx<'_>, arg: &[u8], bits: u32) -> Result<u64, CommandError> {
    let err = || CommandError::err("bit offset is not an integer or out of range");
    let (hash, digits) = match arg.strip_prefix(b"#") {
        Some(rest) => (true, rest),
        None => (false, arg),
    };
    let mut n = parse_i64(digits).map_err(|_| err())?;
    if hash {
        n = n.checked_mul(i64::from(bits)).ok_or_else(err)?;
    }
    let n = u64::try_from(n).map_err(|_| err())?;
    if n >> 3 >= ctx.node.config.proto_max_bulk_len() {
        return Err(err());
    }
    Ok(n)
}

fn get_field(bytes: &[u8], offset: u64, bits: u32) -> u64 {
    (0..u64::from(bits)).fold(0u64, |value, j| {
        let at = offset + j;
        let byte = bytes.get((at >> 3) as usize).copied().unwrap_or(0);
        (value << 1) | u64::from((byte >> (7 - (at & 7))) & 1)
    })
}

fn get_signed_field(bytes: &[u8], offset: u64, bits: u32) -> i64 {
    let v = get_field(bytes, offset, bits) as i64;
    if bits < 64 && v & (1 << (bits - 1)) != 0 {
        v | (-1i64 << bits)
    } else {
        v
    }
}

fn set_field(bytes: &mut [u8], offset: u64, bits: u32, value: u64) {
    for j in 0..u64::from(bits) {
        let on = value & (1u64 << (u64::from(bits) - 1 - j)) != 0;
        let at = offset + j;
        if let Some(byte) = bytes.get_mut((at >> 3) as usize) {
            let mask = 1u8 << (7 - (at & 7));
            if on {
                *byte |= mask;
            } else {
                *byte &= !mask;
            }
        }
    }
}

/// `checkUnsignedBitfieldOverflow`: `Some(value)` to store (wrapped or saturated) when
/// `value + incr` overflows `bits` bits, or `None` if it fits; the flag says it overflowed.
fn unsigned_overflow(value: u64, incr: i64, bits: u32, mode: Overflow) -> (bool, u64) {
    let max = if bits == 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    };
    let max_incr = max.wrapping_sub(value) as i64;
    let min_incr = (value as i64).wrapping_neg();
    let wrap = || value.wrapping_add(incr as u64) & max;
    if value > max || (incr > 0 && incr > max_incr) {
        return (true, if mode == Overflow::Sat { max } else { wrap() });
    }
    if incr < 0 && incr < min_incr {
        return (true, if mode == Overflow::Sat { 0 } else { wrap() });
    }
    (false, value.wrapping_add(incr as u64))
}

/// `checkSignedBitfieldOverflow`, in the same form.
fn signed_overflow(value: i64, incr: i64, bits: u32, mode: Overflow) -> (bool, i64) {
    let max = if bits == 64 {
        i64::MAX
    } else {
        (1i64 << (bits - 1)) - 1
    };
    let min = -max - 1;
    let max_incr = (max as u64).wrapping_sub(value as u64) as i64;
    let min_incr = min.wrapping_sub(value);
    let wrap = || {
        let c = (value as u64).wrapping_add(incr as u64);
        if bits < 64 {
            let mask = u64::MAX << bits;
            if c & (1u64 << (bits - 1)) != 0 {
                (c | mask) as i64
            } else {
                (c & !mask) as i64
            }
        } else {
            c as i64
        }
    };
    if value > max || (bits != 64 && incr > max_incr) || (value >= 0 && incr > 0 && incr > max_incr)
    {
        return (true, if mode == Overflow::Sat { max } else { wrap() });
    }
    if value < min || (bits != 64 && incr < min_incr) || (value < 0 && incr < 0 && incr < min_incr)
    {
        return (true, if mode == Overflow::Sat { min } else { wrap() });
    }
    (false, value.wrapping_add(incr))
}

fn bitfield(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    bitfield_generic(ctx, args, false)
}

fn bitfield_ro(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    bitfield_generic(ctx, args, true)
}

/// ```text
/// BITFIELD key [GET encoding offset | [OVERFLOW <WRAP | SAT | FAIL>]
///     <SET encoding offset value | INCRBY encoding offset increment> ...]
/// BITFIELD_RO key [GET encoding offset ...]
/// ```
fn bitfield_generic(ctx: &mut Ctx<'_>, args: &mut Args<'_>, read_only: bool) -> CmdResult {
    let key = args.bytes()?;
    let argv = args.rest().to_vec();
    let mut ops: Vec<(FieldOp, bool, u32, u64, Overflow)> = Vec::new();
    let mut mode = Overflow::Wrap;
    let mut writes = false;
    let mut highest: u64 = 0;
    let mut j = 0;
    while j < argv.len() {
        let rem = argv.len() - j - 1;
        let sub = &argv[j][..];
        let is = |name: &[u8]| sub.eq_ignore_ascii_case(name);
        let kind = if is(b"get") && rem >= 2 {
            0
        } else if is(b"set") && rem >= 3 {
            1
        } else if is(b"incrby") && rem >= 3 {
            2
        } else if is(b"overflow") && rem >= 1 {
            let m = &argv[j + 1];
            mode = if m.eq_ignore_ascii_case(b"wrap") {
                Overflow::Wrap
            } else if m.eq_ignore_ascii_case(b"sat") {
                Overflow::Sat
            } else if m.eq_ignore_ascii_case(b"fail") {
                Overflow::Fail
            } else {
                return Err(CommandError::err("Invalid OVERFLOW type specified"));
            };
            j += 2;
            continue;
        } else {
            return Err(CommandError::Syntax);
        };
        let (signed, bits) = field_type(&argv[j + 1])?;
        let offset = field_offset(ctx, &argv[j + 2], bits)?;
        let op = if kind == 0 {
            FieldOp::Get
        } else {
            writes = true;
            highest = highest.max(offset + u64::from(bits) - 1);
            let v = parse_i64(&argv[j + 3])?;
            if kind == 1 {
                FieldOp::Set(v)
            } else {
                FieldOp::IncrBy(v)
            }
        };
        ops.push((op, signed, bits, offset, mode));
        j += if kind == 0 { 3 } else { 4 };
    }
    if !writes {
        let value = ctx.read_string(key)?.unwrap_or_default();
        return Ok(Frame::Array(
            ops.iter()
                .map(|&(_, signed, bits, offset, _)| {
                    Frame::Integer(if signed {
                        get_signed_field(&value, offset, bits)
                    } else {
                        get_field(&value, offset, bits) as i64
                    })
                })
                .collect(),
        ));
    }
    if read_only {
        return Err(CommandError::err(
            "BITFIELD_RO only supports the GET subcommand",
        ));
    }
    let need = usize::try_from((highest >> 3) + 1).map_err(|_| CommandError::Overflow)?;
    let (entry, existed) = ctx.find_or_insert(key, || Value::String(StringValue::EMPTY));
    let Value::String(current) = &mut entry.value else {
        return Err(CommandError::WrongType);
    };
    let mut bytes = std::mem::take(current).into_mut();
    let grew = bytes.len() < need;
    if grew {
        bytes.resize(need, 0);
    }
    let dirty = !existed || grew;
    let mut changes = 0;
    let mut out = Vec::with_capacity(ops.len());
    for (op, signed, bits, offset, mode) in ops {
        let (incr, is_incr) = match op {
            FieldOp::Get => {
                out.push(Frame::Integer(if signed {
                    get_signed_field(&bytes, offset, bits)
                } else {
                    get_field(&bytes, offset, bits) as i64
                }));
                continue;
            }
            FieldOp::Set(v) => (v, false),
            FieldOp::IncrBy(v) => (v, true),
        };
        let (reply, overflow, old, new) = if signed {
            let old = get_signed_field(&bytes, offset, bits);
            let (overflow, new) = if is_incr {
                signed_overflow(old, incr, bits, mode)
            } else {
                signed_overflow(incr, 0, bits, mode)
            };
            let reply = if is_incr { new } else { old };
            (reply, overflow, old as u64, new as u64)
        } else {
            let old = get_field(&bytes, offset, bits);
            let (overflow, new) = if is_incr {
                unsigned_overflow(old, incr, bits, mode)
            } else {
                unsigned_overflow(incr as u64, 0, bits, mode)
            };
            let reply = if is_incr { new as i64 } else { old as i64 };
            (reply, overflow, old, new)
        };
        if overflow && mode == Overflow::Fail {
            out.push(Frame::Null);
            continue;
        }
        out.push(Frame::Integer(reply));
        set_field(&mut bytes, offset, bits, new);
        if dirty || old != new {
            changes += 1;
        }
    }
    *current = bytes.freeze().into();
    if changes > 0 {
        ctx.modified(key);
        ctx.notify(notify::STRING, "setbit", key);
    }
    Ok(Frame::Array(out))
}
