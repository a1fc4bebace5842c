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

use super::stack::{Kind, Scalar, Stack, StackError};
use bytes::Bytes;
use locksmith_resp::{
    double_to_i64, format_double, format_human_double, format_shortest_double, Doubles, Frame,
};
use std::os::raw::c_int;

/// Deepest nesting converted from a script's reply. Redis stops where the Lua stack does
/// (`lua_checkstack`, about 8 000 levels: "reached lua stack limit"), and so does the
/// conversion here (`Stack::reserve`), on the script's stack (`script::SCRIPT_STACK`); this is
/// only a backstop past Lua's `LUAI_MAXCSTACK`.
const MAX_DEPTH: usize = 10_000;

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

/// `luaPushErrorBuff`'s text: `-CODE msg` keeps its code, anything else gets `ERR`; newlines
/// trimmed at both ends of the message.
pub(crate) fn error_text(text: &[u8]) -> Vec<u8> {
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
    full
}

/// Pushes the error table `{err = error_text(text)}`, with `ignore_error_stats_update = true`
/// for errors of commands that already counted them (as Redis marks them).
pub(super) fn push_error_table(
    stack: &mut Stack<'_>,
    text: &[u8],
    ignore_stats: bool,
) -> Result<(), StackError> {
    stack.push_table(0, 2)?;
    stack.push_bytes(&error_text(text))?;
    stack.set_field(-2, b"err")?;
    if ignore_stats {
        stack.push_bool(true)?;
        stack.set_field(-2, b"ignore_error_stats_update")?;
    }
    Ok(())
}

/// Pushes the error table for an error reply of a command (`text` without its `-`), marked
/// `ignore_error_stats_update` as Redis marks errors that were already counted.
pub(super) fn push_reply_error(stack: &mut Stack<'_>, text: &[u8]) -> Result<(), StackError> {
    let mut line = Vec::with_capacity(text.len() + 1);
    line.push(b'-');
    line.extend_from_slice(text);
    push_error_table(stack, &line, true)
}

/// How many `KEYS`/`ARGV` strings a run keeps on its stack for [`Known`] (the rest are copied
/// when a script passes them to `redis.call`).
const MAX_KNOWN: usize = 64;

/// Pushes `items` as strings (up to [`MAX_KNOWN`] of them) and records them in `known`.
pub(super) fn push_known<'a>(
    stack: &mut Stack<'_>,
    items: &'a [Bytes],
    known: &mut Vec<Known<'a>>,
) -> Result<(), StackError> {
    for item in items.iter().take(MAX_KNOWN.saturating_sub(known.len())) {
        stack.push_bytes(item)?;
        let addr = stack.bytes(-1).map_or(0, |s| s.as_ptr() as usize);
        known.push(Known { addr, bytes: item });
    }
    Ok(())
}

/// Pushes a Lua array of strings (`KEYS`, `ARGV`): the first `anchored` taken from the stack
/// values from `first` on (pushed by [`push_known`]), the others created.
pub(super) fn push_bytes_array(
    stack: &mut Stack<'_>,
    items: &[Bytes],
    first: c_int,
    anchored: usize,
) -> Result<(), StackError> {
    stack.push_table(items.len(), 0)?;
    for (i, item) in items.iter().enumerate() {
        if i < anchored {
            stack.push_copy(first + i as c_int)?;
        } else {
            stack.push_bytes(item)?;
        }
        stack.set_index(-2, i + 1)?;
    }
    Ok(())
}

/// Why the arguments of a `redis.call` could not become a command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ArgvError {
    /// No argument.
    NoArguments,
    /// An argument that is neither a string nor a number.
    BadArgument,
}

impl ArgvError {
    /// The error's text under a target.
    pub(super) fn text(self, texts: &crate::compat::ScriptTexts) -> &'static str {
        match self {
            ArgvError::NoArguments => texts.call_without_arguments,
            ArgvError::BadArgument => texts.call_bad_argument,
        }
    }
}

/// A string the run pushed (a `KEYS`/`ARGV` element) and still holds on its stack: a
/// `redis.call` argument that is this very Lua string reuses the `Bytes` instead of a copy.
/// The address is only compared, never read; the run's stack slot keeps the string alive, so
/// no other string can have it meanwhile.
#[derive(Debug)]
pub(super) struct Known<'a> {
    /// Address of the Lua string's bytes.
    pub(super) addr: usize,
    /// The bytes, as the client sent them (borrowed from the request, which outlives the run).
    pub(super) bytes: &'a Bytes,
}

/// Copies of short strings recently passed to `redis.call` that were not [`Known`] (command
/// names, literal field names), so a script's constants are not copied on every call. An
/// entry is found by the Lua string's address and used only if its bytes are equal too, so a
/// string collected since and another one at the same address can never be mistaken for it.
#[derive(Debug, Default)]
pub(super) struct ShortStrings {
    slots: [(usize, Bytes); SHORT_SLOTS],
    /// Recently formatted integer arguments (`1`, `-1` of `HINCRBY`), by value.
    ints: [Option<(i64, Bytes)>; INT_SLOTS],
}

/// Entries of [`ShortStrings::ints`].
const INT_SLOTS: usize = 8;

/// Entries of [`ShortStrings`] (direct-mapped by address).
const SHORT_SLOTS: usize = 32;
/// Longest string [`ShortStrings`] keeps.
const SHORT_MAX: usize = 32;

impl ShortStrings {
    /// `s` (a Lua string's bytes, at its address) as `Bytes`.
    fn get(&mut self, s: &[u8]) -> Bytes {
        if s.len() > SHORT_MAX {
            return Bytes::copy_from_slice(s);
        }
        let addr = s.as_ptr() as usize;
        let Some(slot) = self.slots.get_mut((addr >> 4) % SHORT_SLOTS) else {
            return Bytes::copy_from_slice(s);
        };
        if slot.0 != addr || slot.1 != s {
            *slot = (addr, Bytes::copy_from_slice(s));
        }
        slot.1.clone()
    }

    /// `n` in decimal, as `Bytes`.
    fn int(&mut self, n: i64) -> Bytes {
        let Some(slot) = self.ints.get_mut(n.unsigned_abs() as usize % INT_SLOTS) else {
            return Bytes::copy_from_slice(itoa::Buffer::new().format(n).as_bytes());
        };
        match slot {
            Some((v, b)) if *v == n => b.clone(),
            _ => {
                let b = Bytes::copy_from_slice(itoa::Buffer::new().format(n).as_bytes());
                *slot = Some((n, b.clone()));
                b
            }
        }
    }
}

/// `luaArgsToRedisArgv`: the values `1..=top` as a command line; strings as they are, numbers
/// as the target writes them (`doubles`): Redis 7.0 as `%.17g` (integral ones below 1e17 are
/// then integers), Valkey 8 an integer within 2^62 as one (`double2ll`) and any other number
/// in its shortest form (`fpconv_dtoa`). Anything else (or no argument) is the error Redis
/// answers with.
pub(super) fn argv_from_stack(
    stack: &Stack<'_>,
    known: &[Known<'_>],
    short: &mut ShortStrings,
    doubles: Doubles,
) -> Result<Vec<Bytes>, ArgvError> {
    let argc = stack.top();
    if argc <= 0 {
        return Err(ArgvError::NoArguments);
    }
    let mut argv = Vec::with_capacity(argc as usize);
    for i in 1..=argc {
        let arg = match stack.scalar(i) {
            Scalar::Bytes(s) => {
                let addr = s.as_ptr() as usize;
                match known
                    .iter()
                    .find(|k| k.addr == addr && k.bytes.len() == s.len())
                {
                    Some(k) => k.bytes.clone(),
                    None => short.get(s),
                }
            }
            Scalar::Number(n) => match doubles {
                Doubles::Redis => {
                    if n.fract() == 0.0 && n.abs() < 1e17 && !(n == 0.0 && n.is_sign_negative()) {
                        short.int(n as i64)
                    } else {
                        Bytes::from(format_double(n))
                    }
                }
                Doubles::Shortest => match double_to_i64(n) {
                    Some(i) => short.int(i),
                    None => Bytes::from(format_shortest_double(n)),
                },
            },
            Scalar::Other => return Err(ArgvError::BadArgument),
        };
        argv.push(arg);
    }
    Ok(argv)
}

/// Pushes a command reply as the script sees it (`resp3` = the script called
/// `redis.setresp(3)`; `doubles`: how the node's target writes a double reply, which a RESP2
/// script reads as that text).
pub(super) fn push_reply(
    stack: &mut Stack<'_>,
    frame: Frame,
    resp3: bool,
    doubles: Doubles,
) -> Result<(), StackError> {
    match frame {
        Frame::Simple(s) => {
            stack.push_table(0, 1)?;
            stack.push_bytes(&s)?;
            stack.set_field(-2, b"ok")?;
        }
        Frame::Error(e) => push_reply_error(stack, &e)?,
        Frame::Integer(i) => stack.push_number(i as f64)?,
        Frame::Bulk(b) => stack.push_bytes(&b)?,
        Frame::Null | Frame::NullArray => {
            if resp3 {
                stack.push_nil()?
            } else {
                stack.push_bool(false)?
            }
        }
        Frame::Array(items) | Frame::Push(items) => push_array(stack, items, resp3, doubles)?,
        Frame::Map(pairs) => {
            if resp3 {
                stack.push_table(0, 1)?;
                // Not presized: Redis fills an empty table (`lua_newtable`), whose array and
                // hash parts then hold the keys as `pairs` (`next`) will visit them, e.g. the
                // integer keys 1..n before 0.
                stack.push_table(0, 0)?;
                for (k, v) in pairs {
                    push_reply(stack, k, resp3, doubles)?;
                    push_reply(stack, v, resp3, doubles)?;
                    if stack.kind(-2) == Kind::Nil {
                        stack.pop(2);
                    } else {
                        stack.raw_set(-3)?;
                    }
                }
                stack.set_field(-2, b"map")?;
            } else {
                let items = pairs.into_iter().flat_map(|(k, v)| [k, v]).collect();
                push_array(stack, items, resp3, doubles)?;
            }
        }
        Frame::Set(items) => {
            if resp3 {
                stack.push_table(0, 1)?;
                // Not presized, as for a map.
                stack.push_table(0, 0)?;
                for item in items {
                    push_reply(stack, item, resp3, doubles)?;
                    if stack.kind(-1) == Kind::Nil {
                        stack.pop(1);
                    } else {
                        stack.push_bool(true)?;
                        stack.raw_set(-3)?;
                    }
                }
                stack.set_field(-2, b"set")?;
            } else {
                push_array(stack, items, resp3, doubles)?;
            }
        }
        Frame::Double(d) => {
            if resp3 {
                stack.push_table(0, 1)?;
                stack.push_number(d)?;
                stack.set_field(-2, b"double")?;
            } else {
                stack.push_bytes(doubles.reply(d).as_bytes())?;
            }
        }
        // Redis's Lua client parses the reply it wrote: the text, or in RESP3 `{double=...}`
        // of the text read back (17 decimals: fewer significant digits than `d` when small).
        Frame::HumanDouble(d) => {
            let text = format_human_double(d);
            if resp3 {
                stack.push_table(0, 1)?;
                stack.push_number(text.parse().unwrap_or(d))?;
                stack.set_field(-2, b"double")?;
            } else {
                stack.push_bytes(text.as_bytes())?;
            }
        }
        Frame::Boolean(b) => {
            if resp3 {
                stack.push_bool(b)?
            } else {
                stack.push_number(if b { 1.0 } else { 0.0 })?
            }
        }
        Frame::BigNumber(n) => {
            if resp3 {
                stack.push_table(0, 1)?;
                stack.push_bytes(&n)?;
                stack.set_field(-2, b"big_number")?;
            } else {
                stack.push_bytes(&n)?;
            }
        }
        Frame::Verbatim { format, text } => {
            if resp3 {
                stack.push_table(0, 1)?;
                stack.push_table(0, 2)?;
                stack.push_bytes(&format)?;
                stack.set_field(-2, b"format")?;
                stack.push_bytes(&text)?;
                stack.set_field(-2, b"string")?;
                stack.set_field(-2, b"verbatim_string")?;
            } else {
                stack.push_bytes(&text)?;
            }
        }
        Frame::Attribute { frame, .. } => push_reply(stack, *frame, resp3, doubles)?,
    }
    Ok(())
}

fn push_array(
    stack: &mut Stack<'_>,
    items: Vec<Frame>,
    resp3: bool,
    doubles: Doubles,
) -> Result<(), StackError> {
    stack.push_table(items.len(), 0)?;
    for (i, item) in items.into_iter().enumerate() {
        push_reply(stack, item, resp3, doubles)?;
        stack.set_index(-2, i + 1)?;
    }
    Ok(())
}

/// The string (or number, as `tostring` shows it) in field `name` of the table at `table`.
pub(super) fn string_field(stack: &mut Stack<'_>, table: c_int, name: &[u8]) -> Option<Vec<u8>> {
    stack.get_field(table, name).ok()?;
    let out = stack.coerce_bytes(-1);
    stack.pop(1);
    out
}

/// The value at `idx` as the reply Redis sends for a script's return value
/// (`luaReplyToRedisReply`).
pub(super) fn reply_at(stack: &mut Stack<'_>, idx: c_int, resp3: bool) -> Frame {
    let idx = if idx < 0 { stack.top() + 1 + idx } else { idx };
    reply_from(stack, idx, resp3, 0)
}

fn reply_from(stack: &mut Stack<'_>, idx: c_int, resp3: bool, depth: usize) -> Frame {
    if depth > MAX_DEPTH {
        return Frame::error("ERR reached lua stack limit");
    }
    match stack.kind(idx) {
        Kind::String => Frame::Bulk(Bytes::copy_from_slice(stack.bytes(idx).unwrap_or_default())),
        Kind::Boolean => {
            let b = stack.boolean(idx).unwrap_or(false);
            if resp3 {
                Frame::Boolean(b)
            } else if b {
                Frame::Integer(1)
            } else {
                Frame::Null
            }
        }
        Kind::Number => Frame::Integer(number_to_i64(stack.number(idx).unwrap_or(0.0))),
        Kind::Table => match stack.reserve(4) {
            Ok(()) => table_reply(stack, idx, resp3, depth),
            Err(_) => Frame::error("ERR reached lua stack limit"),
        },
        _ => Frame::Null,
    }
}

/// Pushes field `name` of the table at `t` and returns its kind.
fn field(stack: &mut Stack<'_>, t: c_int, name: &[u8]) -> Kind {
    stack.get_field(t, name).unwrap_or(Kind::None)
}

/// Replaces `\r` and `\n` with spaces (status and big-number replies).
fn one_line(s: &[u8]) -> Bytes {
    s.iter()
        .map(|&b| if b == b'\r' || b == b'\n' { b' ' } else { b })
        .collect::<Vec<u8>>()
        .into()
}

fn table_reply(stack: &mut Stack<'_>, t: c_int, resp3: bool, depth: usize) -> Frame {
    let top = stack.top();
    let reply = special_table_reply(stack, t, resp3, depth);
    stack.pop(stack.top() - top);
    if let Some(reply) = reply {
        return reply;
    }
    let mut items = Vec::new();
    for j in 1.. {
        let kind = stack.get_index(t, j).unwrap_or(Kind::None);
        if matches!(kind, Kind::Nil | Kind::None) {
            stack.pop(stack.top() - top);
            break;
        }
        let item = reply_from(stack, top + 1, resp3, depth + 1);
        stack.pop(stack.top() - top);
        items.push(item);
    }
    Frame::Array(items)
}

/// The reply for a table with one of the special fields (`err`, `ok`, `double`, `big_number`,
/// `verbatim_string`, `map`, `set`), checked in Redis's order; values it pushes are left for
/// the caller to pop.
fn special_table_reply(
    stack: &mut Stack<'_>,
    t: c_int,
    resp3: bool,
    depth: usize,
) -> Option<Frame> {
    if field(stack, t, b"err") == Kind::String {
        let msg = String::from_utf8_lossy(stack.bytes(-1).unwrap_or_default()).into_owned();
        return Some(error_frame(&msg));
    }
    if field(stack, t, b"ok") == Kind::String {
        return Some(Frame::Simple(one_line(stack.bytes(-1).unwrap_or_default())));
    }
    if field(stack, t, b"double") == Kind::Number {
        return Some(Frame::Double(stack.number(-1).unwrap_or(0.0)));
    }
    if field(stack, t, b"big_number") == Kind::String {
        return Some(Frame::BigNumber(one_line(
            stack.bytes(-1).unwrap_or_default(),
        )));
    }
    if field(stack, t, b"verbatim_string") == Kind::Table {
        let vt = stack.top();
        let f = field(stack, vt, b"format");
        let s = field(stack, vt, b"string");
        if f == Kind::String && s == Kind::String {
            let mut format = [0u8; 3];
            for (dst, src) in format.iter_mut().zip(stack.bytes(-2).unwrap_or_default()) {
                *dst = *src;
            }
            let text = Bytes::copy_from_slice(stack.bytes(-1).unwrap_or_default());
            return Some(Frame::Verbatim { format, text });
        }
    }
    if field(stack, t, b"map") == Kind::Table {
        let m = stack.top();
        let mut pairs = Vec::new();
        let mut more = stack.push_nil().is_ok();
        while more {
            more = stack.next(m).unwrap_or(false);
            if more {
                let top = stack.top();
                let k = reply_from(stack, top - 1, resp3, depth + 1);
                let v = reply_from(stack, top, resp3, depth + 1);
                stack.pop(stack.top() - (top - 1));
                pairs.push((k, v));
            }
        }
        return Some(Frame::Map(pairs));
    }
    if field(stack, t, b"set") == Kind::Table {
        let s = stack.top();
        let mut items = Vec::new();
        let mut more = stack.push_nil().is_ok();
        while more {
            more = stack.next(s).unwrap_or(false);
            if more {
                let top = stack.top();
                items.push(reply_from(stack, top - 1, resp3, depth + 1));
                stack.pop(stack.top() - (top - 1));
            }
        }
        return Some(Frame::Set(items));
    }
    None
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
    fn short_strings_never_return_stale_bytes_for_a_reused_address() {
        let mut cache = ShortStrings::default();
        let mut buf = b"hincrby".to_vec();
        assert_eq!(cache.get(&buf), &b"hincrby"[..]);
        assert_eq!(cache.get(&buf), &b"hincrby"[..]);
        // Same address and length, other bytes (as a collected string's memory reused).
        buf.copy_from_slice(b"hexists");
        assert_eq!(cache.get(&buf), &b"hexists"[..]);
        let long = vec![b'x'; SHORT_MAX + 1];
        assert_eq!(cache.get(&long), &long[..]);
        for n in [-1, 0, 1, 7, 8, 9, -9, 123_456_789] {
            assert_eq!(cache.int(n), n.to_string().as_bytes());
            assert_eq!(cache.int(n), n.to_string().as_bytes());
        }
    }

    #[test]
    fn error_texts_follow_push_error_rules() {
        assert_eq!(
            error_text(b"-WRONGTYPE Operation\r\n"),
            b"WRONGTYPE Operation"
        );
        assert_eq!(error_text(b"My msg"), b"ERR My msg");
        assert_eq!(error_text(b"-NOSPACE"), b"ERR NOSPACE");
    }
}
