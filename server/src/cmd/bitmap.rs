//! Bitmaps: `SETBIT` and `GETBIT` on string values, bit 0 being the most significant bit of
//! the first byte, as Redis numbers them.

use super::{flags::*, parse_i64, Args, CmdResult, CommandError, CommandSpec, Ctx};
use crate::db::Value;
use crate::notify;
use bytes::{Bytes, BytesMut};
use locksmith_resp::Frame;

/// The bitmap family's table.
pub(crate) static COMMANDS: &[CommandSpec] = &[
    CommandSpec::new("setbit", 4, setbit)
        .flags(WRITE | DENYOOM)
        .keys(1, 1, 1)
        .doc(
            "bitmap",
            "Sets or clears the bit at offset of the string value. Creates the key if it doesn't exist.",
        ),
    CommandSpec::new("getbit", 3, getbit)
        .flags(READONLY | FAST)
        .keys(1, 1, 1)
        .doc("bitmap", "Returns a bit value by offset."),
];

/// Redis's `getBitOffsetFromArgument`: a non-negative integer whose byte lies within
/// `proto-max-bulk-len`.
fn bit_offset(ctx: &Ctx<'_>, arg: &[u8]) -> Result<u64, CommandError> {
    let max_bytes = ctx.proto_max_bulk_len();
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
    let offset = bit_offset(ctx, &args.bytes()?)?;
    let on = match parse_i64(&args.bytes()?) {
        Ok(b @ (0 | 1)) => b == 1,
        _ => return Err(CommandError::err("bit is not an integer or out of range")),
    };
    let byte = usize::try_from(offset >> 3).map_err(|_| CommandError::Overflow)?;
    let mask = 1u8 << (7 - (offset & 7));
    let (entry, _) = ctx.find_or_insert(&key, || Value::String(Bytes::new()));
    let Value::String(current) = &mut entry.value else {
        return Err(CommandError::WrongType);
    };
    // In place when nothing else holds the string (a large bitmap is not copied per bit).
    let mut bits = match std::mem::take(current).try_into_mut() {
        Ok(bits) => bits,
        Err(shared) => BytesMut::from(&shared[..]),
    };
    if bits.len() <= byte {
        bits.resize(byte + 1, 0);
    }
    let old = bits[byte] & mask != 0;
    if on {
        bits[byte] |= mask;
    } else {
        bits[byte] &= !mask;
    }
    *current = bits.freeze();
    ctx.modified(&key);
    ctx.notify(notify::STRING, "setbit", &key);
    Ok(Frame::Integer(i64::from(old)))
}

/// ```text
/// GETBIT key offset
/// ```
fn getbit(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.bytes()?;
    let offset = bit_offset(ctx, &args.bytes()?)?;
    let Some(value) = ctx.get_string(&key)? else {
        return Ok(Frame::Integer(0));
    };
    let bit = usize::try_from(offset >> 3)
        .ok()
        .and_then(|byte| value.get(byte))
        .is_some_and(|b| b & (1 << (7 - (offset & 7))) != 0);
    Ok(Frame::Integer(i64::from(bit)))
}
