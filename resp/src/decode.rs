//! Incremental decoding.
//!
//! * [`RequestDecoder`] parses what a client sends a server, with the rules of Redis's
//!   `processMultibulkBuffer`/`processInlineBuffer` (`networking.c`): arrays of bulk strings, or
//!   inline commands split like `sdssplitargs`; limits checked before anything is allocated.
//! * [`FrameDecoder`] parses any RESP2/RESP3 frame (what a server sends a client).
//!
//! Both keep their resume state between calls: bytes are consumed as soon as an element is
//! complete, partial aggregates live in the decoder, and a line terminator that has not arrived
//! is not searched for again over bytes already scanned. `Ok(None)` means "need more bytes".
#![cfg_attr(
    not(test),
    deny(
        clippy::panic,
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::indexing_slicing
    )
)]

use crate::{DecodeError, Frame};
use bytes::{Buf, Bytes, BytesMut};

/// Redis's `PROTO_INLINE_MAX_SIZE`: the longest inline request or header line (64 KiB).
pub const PROTO_INLINE_MAX_SIZE: usize = 64 * 1024;
/// Redis's default `proto-max-bulk-len` (512 MiB).
pub const PROTO_MAX_BULK_LEN: usize = 512 * 1024 * 1024;

/// Size limits, enforced before allocating. Defaults are Redis's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Longest bulk string (`proto-max-bulk-len`).
    pub max_bulk_len: usize,
    /// Longest inline request and `*`/`$` header line (`PROTO_INLINE_MAX_SIZE`).
    pub max_inline_len: usize,
    /// Most elements in one multibulk (Redis: `INT_MAX`).
    pub max_multibulk_len: usize,
    /// Deepest aggregate nesting the frame decoder accepts (redis-rs caps it at 100).
    pub max_depth: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_bulk_len: PROTO_MAX_BULK_LEN,
            max_inline_len: PROTO_INLINE_MAX_SIZE,
            max_multibulk_len: i32::MAX as usize,
            max_depth: 100,
        }
    }
}

/// Redis's `string2ll`: optional `-`, no `+`, no leading zeros, no spaces, must fit an i64.
pub(crate) fn parse_strict_i64(digits: &[u8]) -> Option<i64> {
    let (neg, rest) = match digits.split_first() {
        Some((b'-', rest)) => (true, rest),
        Some(_) => (false, digits),
        None => return None,
    };
    match rest {
        [b'0'] if !neg => return Some(0),
        [b'1'..=b'9', ..] => {}
        _ => return None,
    }
    let mut value: i64 = 0;
    for &b in rest {
        if !b.is_ascii_digit() {
            return None;
        }
        let digit = i64::from(b - b'0');
        value = if neg {
            value.checked_mul(10)?.checked_sub(digit)?
        } else {
            value.checked_mul(10)?.checked_add(digit)?
        };
    }
    Some(value)
}

/// Where a search for a request line's terminator stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scan {
    /// The terminator's index.
    Found(usize),
    /// No terminator yet; resume the search at this index.
    Missing(usize),
}

/// Redis finds request line terminators with `strchr`, which stops at a NUL byte: a terminator
/// after a NUL is never seen, and the request can only end in a "too big" error once enough
/// bytes have piled up. The search resumes at the NUL, so it stays stuck without rescanning.
fn c_strchr(buf: &[u8], from: usize, needle: u8) -> Scan {
    let hit = buf
        .get(from..)
        .and_then(|rest| rest.iter().position(|&b| b == needle || b == 0))
        .map(|i| i + from);
    match hit {
        Some(i) if buf.get(i) == Some(&needle) => Scan::Found(i),
        Some(nul) => Scan::Missing(nul),
        None => Scan::Missing(buf.len()),
    }
}

fn find_byte(buf: &[u8], from: usize, needle: u8) -> Option<usize> {
    buf.get(from..)?
        .iter()
        .position(|&b| b == needle)
        .map(|i| i + from)
}

/// C's `isspace` in the "C" locale.
fn is_c_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Splits an inline command line exactly like Redis's `sdssplitargs`: whitespace-separated
/// tokens, `"…"` with `\n \r \t \b \a \xHH` escapes, `'…'` with `\'`; a closing quote must be
/// followed by whitespace or the end. `None` means unbalanced quotes.
pub fn split_inline_args(line: &[u8]) -> Option<Vec<Bytes>> {
    // sdssplitargs walks a C string: a NUL byte ends the line.
    let line = match line.iter().position(|&b| b == 0) {
        Some(nul) => line.get(..nul).unwrap_or(line),
        None => line,
    };
    let at = |i: usize| line.get(i).copied();
    let mut args = Vec::new();
    let mut p = 0;
    loop {
        while at(p).is_some_and(is_c_space) {
            p += 1;
        }
        if at(p).is_none() {
            return Some(args);
        }
        let mut current = Vec::new();
        let (mut in_double, mut in_single) = (false, false);
        loop {
            let Some(c) = at(p) else {
                if in_double || in_single {
                    return None;
                }
                break;
            };
            if in_double {
                match (c, at(p + 1)) {
                    (b'\\', Some(b'x'))
                        if at(p + 2).and_then(hex_value).is_some()
                            && at(p + 3).and_then(hex_value).is_some() =>
                    {
                        let hi = at(p + 2).and_then(hex_value).unwrap_or(0);
                        let lo = at(p + 3).and_then(hex_value).unwrap_or(0);
                        current.push(hi * 16 + lo);
                        p += 3;
                    }
                    (b'\\', Some(next)) => {
                        current.push(match next {
                            b'n' => b'\n',
                            b'r' => b'\r',
                            b't' => b'\t',
                            b'b' => 0x08,
                            b'a' => 0x07,
                            other => other,
                        });
                        p += 1;
                    }
                    (b'"', next) => {
                        // "closing quote must be followed by a space or nothing at all"
                        if next.is_some_and(|n| !is_c_space(n)) {
                            return None;
                        }
                        p += 1;
                        break;
                    }
                    _ => current.push(c),
                }
            } else if in_single {
                match (c, at(p + 1)) {
                    (b'\\', Some(b'\'')) => {
                        current.push(b'\'');
                        p += 1;
                    }
                    (b'\'', next) => {
                        if next.is_some_and(|n| !is_c_space(n)) {
                            return None;
                        }
                        p += 1;
                        break;
                    }
                    _ => current.push(c),
                }
            } else {
                match c {
                    b' ' | b'\n' | b'\r' | b'\t' => break,
                    b'"' => in_double = true,
                    b'\'' => in_single = true,
                    _ => current.push(c),
                }
            }
            p += 1;
        }
        args.push(Bytes::from(current));
    }
}

/// Parses client requests (what a server reads), resuming where the last call stopped.
#[derive(Debug, Default)]
pub struct RequestDecoder {
    limits: Limits,
    auth_required: bool,
    /// Elements still owed by the multibulk being read; 0 between requests.
    pending: usize,
    args: Vec<Bytes>,
    /// Length of the bulk whose header was consumed but whose payload has not fully arrived.
    bulk_len: Option<usize>,
    /// Bytes at the front of the buffer already searched for a line terminator.
    scanned: usize,
    /// An emptied argument vector handed back ([`RequestDecoder::recycle`]) for the next
    /// small request, so a pipeline does not allocate one per request.
    spare: Vec<Bytes>,
    /// The last request decoded was an inline one.
    inline: bool,
}

/// Requests up to this size are copied out of the read buffer (Redis's `PROTO_MBULK_BIG_ARG`:
/// below it Redis copies arguments out of its query buffer too).
const COMPACT_MAX: usize = 32 * 1024;
/// Most arguments a request may have for [`RequestDecoder::decode`]'s one-pass path.
const FAST_MAX_ARGS: usize = 32;
/// Most slots of the argument vector a decoder keeps for reuse ([`RequestDecoder::recycle`]):
/// enough for the common commands and Redisson's scripts by `EVALSHA`.
const SPARE_MAX_ARGS: usize = 8;

/// The arguments of one request, each copied into an allocation of its own when the request
/// is small: arguments split off the read buffer share it, so a key or field a command stores
/// would otherwise keep the whole buffer (kilobytes of other requests) alive.
fn compact(args: Vec<Bytes>) -> Vec<Bytes> {
    let total: usize = args.iter().map(Bytes::len).sum();
    if total > COMPACT_MAX {
        return args;
    }
    copy_each(args.iter().map(|a| &a[..]))
}

/// Copies each of `parts` into an allocation of its own.
///
/// Separate allocations rather than one shared by the request's arguments: an argument owned
/// alone is dropped or stored without touching a shared reference count, where slices of one
/// buffer took an atomic increment and decrement each (about a tenth of a pipelined `SET`'s
/// time in profiles), and what a command stores keeps only itself alive.
fn copy_each<'a>(parts: impl Iterator<Item = &'a [u8]>) -> Vec<Bytes> {
    parts.map(Bytes::copy_from_slice).collect()
}

/// The name of a command clients send most, spelled all in upper or all in lower case, as a
/// static `Bytes`: the request's first argument then costs no allocation, copy or free.
/// Any other spelling is copied as any argument is; the bytes are the same either way.
fn common_name(arg: &[u8]) -> Option<Bytes> {
    macro_rules! names {
        ($($upper:literal $lower:literal),* $(,)?) => {
            match arg {
                $($upper => Some(Bytes::from_static($upper)),
                  $lower => Some(Bytes::from_static($lower)),)*
                _ => None,
            }
        };
    }
    if arg.len() > 8 {
        return None;
    }
    names!(
        b"GET" b"get", b"SET" b"set", b"DEL" b"del", b"INCR" b"incr", b"DECR" b"decr",
        b"MGET" b"mget", b"MSET" b"mset", b"EXISTS" b"exists", b"EXPIRE" b"expire",
        b"PEXPIRE" b"pexpire", b"TTL" b"ttl", b"PTTL" b"pttl", b"INCRBY" b"incrby",
        b"HGET" b"hget", b"HSET" b"hset", b"HDEL" b"hdel", b"HINCRBY" b"hincrby",
        b"HGETALL" b"hgetall", b"HEXISTS" b"hexists", b"LPUSH" b"lpush", b"RPUSH" b"rpush",
        b"LPOP" b"lpop", b"RPOP" b"rpop", b"LRANGE" b"lrange", b"SADD" b"sadd",
        b"SREM" b"srem", b"SPOP" b"spop", b"ZADD" b"zadd", b"ZREM" b"zrem",
        b"ZSCORE" b"zscore", b"EVAL" b"eval", b"EVALSHA" b"evalsha", b"PUBLISH" b"publish",
        b"PING" b"ping",
    )
}

/// Arguments of each request [`RequestDecoder::peek`] hands over (the command's name and the
/// next three: enough to find the first key of most commands and of `EVALSHA`).
pub const PEEK_ARGS: usize = 4;

/// Most digits of a header [`header`] reads.
const HEADER_DIGITS: usize = 12;

/// The `*`/`$` header line at `at` when it is a plain count (`0`, or digits without a
/// leading zero, at most [`HEADER_DIGITS`] of them) ending in CR with a byte after the
/// CR: the count and where the next line starts (the CR and the byte after it skipped
/// unchecked, as the general path does). Anything else, signs and NUL bytes included,
/// is left to the general path. [`RequestDecoder::peek`] reads headers the same way.
#[inline(always)]
fn header(buf: &[u8], at: usize, kind: u8) -> Option<(usize, usize)> {
    let line = buf.get(at..)?;
    if *line.first()? != kind {
        return None;
    }
    let mut value = 0usize;
    let mut end = 1;
    loop {
        match *line.get(end)? {
            b @ b'0'..=b'9' if end <= HEADER_DIGITS => {
                value = value * 10 + usize::from(b - b'0');
            }
            b'\r' => break,
            _ => return None,
        }
        end += 1;
    }
    // string2ll: at least one digit, and no leading zero unless the number is 0.
    if end == 1 || (end > 2 && line.get(1) == Some(&b'0')) || end + 2 > line.len() {
        return None;
    }
    Some((value, at + end + 2))
}

impl RequestDecoder {
    /// A decoder with the given limits.
    pub fn new(limits: Limits) -> Self {
        RequestDecoder {
            limits,
            ..Default::default()
        }
    }

    /// While true, requests are held to Redis's pre-`AUTH` limits (at most 10 arguments, each
    /// at most 16384 bytes).
    pub fn set_auth_required(&mut self, required: bool) {
        self.auth_required = required;
    }

    /// Changes the limits (e.g. after `CONFIG SET proto-max-bulk-len`).
    pub fn set_limits(&mut self, limits: Limits) {
        self.limits = limits;
    }

    /// Looks ahead, without consuming anything, at up to `max` complete multibulk requests at
    /// the front of `buf`, handing `each` the first [`PEEK_ARGS`] arguments of each (all of
    /// them when it has fewer). It sees nothing while a request is half read and stops at the
    /// first request that is incomplete, inline or not well formed: what it finds is a hint
    /// (which keys a pipeline is about to touch), never a decode.
    pub fn peek<'a>(&self, buf: &'a [u8], max: usize, mut each: impl FnMut(&[&'a [u8]])) {
        if self.pending != 0 || self.bulk_len.is_some() {
            return;
        }
        let mut at = 0;
        for _ in 0..max {
            let Some((count, mut next)) = header(buf, at, b'*') else {
                return;
            };
            let mut args: [&'a [u8]; PEEK_ARGS] = [&[]; PEEK_ARGS];
            for i in 0..count {
                let Some((len, start)) = header(buf, next, b'$') else {
                    return;
                };
                let Some(arg) = start.checked_add(len).and_then(|end| buf.get(start..end)) else {
                    return;
                };
                if let Some(slot) = args.get_mut(i) {
                    *slot = arg;
                }
                next = start + len + 2;
            }
            if next > buf.len() {
                return;
            }
            each(args.get(..count.min(PEEK_ARGS)).unwrap_or(&args));
            at = next;
        }
    }

    /// Decodes the next complete request from `buf`, consuming its bytes.
    ///
    /// Returns `Ok(None)` when more bytes are needed. Empty requests (`*0`, `*-1`, blank inline
    /// lines) are skipped, as Redis skips them. As in Redis, the two bytes after a header's CR
    /// and after a bulk payload are skipped without being checked, and a NUL byte in an inline
    /// or header line hides the line's end (Redis uses `strchr`), so such a request only ends
    /// in a "too big" error once more than `max_inline_len` bytes are buffered.
    ///
    /// # Errors
    ///
    /// A [`DecodeError`] whose text is what Redis replies after `Protocol error: `; the
    /// connection should then be closed.
    pub fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<Vec<Bytes>>, DecodeError> {
        if self.pending == 0 && !self.auth_required {
            if let Some(args) = self.decode_whole_small(buf) {
                return Ok(Some(args));
            }
        }
        loop {
            if self.pending == 0 {
                let Some(&first) = buf.first() else {
                    return Ok(None);
                };
                if first != b'*' {
                    match self.decode_inline(buf)? {
                        Some(args) if args.is_empty() => continue,
                        Some(args) => {
                            self.inline = true;
                            return Ok(Some(args));
                        }
                        None => return Ok(None),
                    }
                }
                let Some(cr) = self.header_line(buf, DecodeError::TooBigMultibulkCount)? else {
                    return Ok(None);
                };
                // string2ll, then `ll > INT_MAX` is "invalid multibulk length"; our own
                // `max_multibulk_len` only ever tightens that.
                let count = buf
                    .get(1..cr)
                    .and_then(parse_strict_i64)
                    .filter(|&n| {
                        n <= i64::from(i32::MAX)
                            && (n <= 0 || n as u64 <= self.limits.max_multibulk_len as u64)
                    })
                    .ok_or(DecodeError::InvalidMultibulkLength)?;
                if count > 10 && self.auth_required {
                    return Err(DecodeError::UnauthenticatedMultibulkLength);
                }
                // The byte after the CR is skipped unchecked, as Redis does.
                buf.advance(cr + 2);
                self.scanned = 0;
                // `*0` and any negative count are an empty request that Redis skips.
                if count <= 0 {
                    continue;
                }
                self.pending = count as usize;
                // One allocation for the argument vector (bounded, as Redis bounds its own
                // preallocation to 1024 slots, so a huge count costs nothing up front).
                self.args.reserve_exact(self.pending.min(1024));
            }
            while self.pending > 0 {
                let len = match self.bulk_len {
                    Some(len) => len,
                    None => {
                        let Some(cr) = self.header_line(buf, DecodeError::TooBigBulkCount)? else {
                            return Ok(None);
                        };
                        match buf.first() {
                            Some(b'$') => {}
                            Some(&other) => return Err(DecodeError::ExpectedBulk(other)),
                            None => return Ok(None),
                        }
                        let len = buf
                            .get(1..cr)
                            .and_then(parse_strict_i64)
                            .filter(|&n| n >= 0 && n as u64 <= self.limits.max_bulk_len as u64)
                            .ok_or(DecodeError::InvalidBulkLength)?
                            as usize;
                        if len > 16384 && self.auth_required {
                            return Err(DecodeError::UnauthenticatedBulkLength);
                        }
                        buf.advance(cr + 2);
                        self.scanned = 0;
                        self.bulk_len = Some(len);
                        len
                    }
                };
                if buf.len() < len.saturating_add(2) {
                    return Ok(None);
                }
                self.args.push(buf.split_to(len).freeze());
                // Like Redis, the two bytes after the payload are skipped unchecked.
                buf.advance(2);
                self.bulk_len = None;
                self.pending -= 1;
            }
            self.inline = false;
            return Ok(Some(compact(std::mem::take(&mut self.args))));
        }
    }

    /// The common case in one pass: a well-formed multibulk request of at most
    /// [`FAST_MAX_ARGS`] arguments and [`COMPACT_MAX`] payload bytes that is wholly in `buf`.
    /// Its arguments are copied straight out of the read buffer as their headers are read
    /// (what [`compact`] makes of the general path's result, through the same [`copy_each`],
    /// without first splitting each argument off the read buffer). Anything else (an
    /// incomplete, empty, large or malformed request) returns `None` with nothing consumed, and
    /// the general path decides, so both agree on every input.
    fn decode_whole_small(&mut self, buf: &mut BytesMut) -> Option<Vec<Bytes>> {
        let (count, at) = header(buf, 0, b'*')?;
        if count < 1 || count > FAST_MAX_ARGS.min(self.limits.max_multibulk_len) {
            return None;
        }
        let mut args = if self.spare.capacity() >= count {
            std::mem::take(&mut self.spare)
        } else {
            Vec::with_capacity(count)
        };
        match self.copy_small_args(buf, count, at, &mut args) {
            Some(end) => {
                buf.advance(end);
                self.scanned = 0;
                self.inline = false;
                Some(args)
            }
            None => {
                // An incomplete request drops the arguments copied so far (once per read at
                // most: the request that straddles the end of what arrived).
                self.recycle(args);
                None
            }
        }
    }

    /// Copies the `count` arguments whose headers start at `at` into `args`: where the
    /// request ends, or `None` when it is incomplete or not one for the one-pass path.
    fn copy_small_args(
        &self,
        buf: &[u8],
        count: usize,
        mut at: usize,
        args: &mut Vec<Bytes>,
    ) -> Option<usize> {
        let mut total = 0usize;
        for i in 0..count {
            let (len, start) = header(buf, at, b'$')?;
            total += len;
            if len > self.limits.max_bulk_len || total > COMPACT_MAX {
                return None;
            }
            at = start.checked_add(len)?.checked_add(2)?;
            let arg = buf.get(start..start + len)?;
            let name = if i == 0 { common_name(arg) } else { None };
            args.push(name.unwrap_or_else(|| Bytes::copy_from_slice(arg)));
            if at > buf.len() {
                return None;
            }
        }
        Some(at)
    }

    /// The size of `args`, the request [`RequestDecoder::decode`] returned last, as Valkey
    /// counts a request's bytes (its `net_input_bytes_curr_cmd`): a multibulk request's bytes
    /// (its canonical form: the decoder accepts no other); for an inline one, its arguments
    /// with one space between each and CRLF, however it was spaced, quoted or ended.
    pub fn request_len(&self, args: &[Bytes]) -> usize {
        let payload: usize = args.iter().map(Bytes::len).sum();
        if self.inline {
            return payload + args.len().saturating_sub(1) + 2;
        }
        let headers: usize = args.iter().map(|a| decimal_len(a.len()) + 3).sum();
        decimal_len(args.len()) + 3 + headers + payload + 2 * args.len()
    }

    /// Hands back the argument vector of a request that has run: emptied, it holds the
    /// next small request's arguments instead of a new allocation. One of more than 8 slots
    /// is dropped (an idle connection keeps at most 256 bytes).
    pub fn recycle(&mut self, mut args: Vec<Bytes>) {
        if args.capacity() <= SPARE_MAX_ARGS && args.capacity() > self.spare.capacity() {
            args.clear();
            self.spare = args;
        }
    }

    /// Finds the CR ending the `*`/`$` header line at the front of `buf`, as
    /// `processMultibulkBuffer` does: `Some(cr)` once the byte after the CR has arrived too.
    fn header_line(
        &mut self,
        buf: &BytesMut,
        too_big: DecodeError,
    ) -> Result<Option<usize>, DecodeError> {
        // Redis searches from the type byte itself, so a bulk header that is a bare CR is
        // "expected '$', got '\r'", not a longer line.
        match c_strchr(buf, self.scanned, b'\r') {
            // "Buffer should also contain \n": wait for the byte after the CR.
            Scan::Found(cr) if cr + 2 <= buf.len() => Ok(Some(cr)),
            Scan::Found(cr) => {
                self.scanned = cr;
                Ok(None)
            }
            Scan::Missing(resume) => {
                // Redis: more than PROTO_INLINE_MAX_SIZE bytes without a CR is "too big mbulk
                // count string" / "too big bulk count string".
                if buf.len() > self.limits.max_inline_len {
                    return Err(too_big);
                }
                self.scanned = resume;
                Ok(None)
            }
        }
    }

    fn decode_inline(&mut self, buf: &mut BytesMut) -> Result<Option<Vec<Bytes>>, DecodeError> {
        let nl = match c_strchr(buf, self.scanned, b'\n') {
            Scan::Found(nl) => nl,
            Scan::Missing(resume) => {
                // Redis: more than PROTO_INLINE_MAX_SIZE bytes without a newline.
                if buf.len() > self.limits.max_inline_len {
                    return Err(DecodeError::TooBigInlineRequest);
                }
                self.scanned = resume;
                return Ok(None);
            }
        };
        // "Handle the \r\n case": one CR before the LF is part of the terminator.
        let mut end = nl;
        if end > 0 && buf.get(end - 1) == Some(&b'\r') {
            end -= 1;
        }
        let args = split_inline_args(buf.get(..end).unwrap_or_default())
            .ok_or(DecodeError::UnbalancedQuotes)?;
        buf.advance(nl + 1);
        self.scanned = 0;
        Ok(Some(args))
    }
}

/// The digits of `n` in decimal.
fn decimal_len(n: usize) -> usize {
    itoa::Buffer::new().format(n).len()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AggregateKind {
    Array,
    Set,
    Push,
    Map,
    Attribute,
    /// The frame an attribute describes: one element, wrapped with the attributes.
    Attributed,
}

#[derive(Debug)]
struct Partial {
    kind: AggregateKind,
    remaining: usize,
    items: Vec<Frame>,
    attrs: Vec<(Frame, Frame)>,
}

fn pairs(items: Vec<Frame>) -> Vec<(Frame, Frame)> {
    let mut out = Vec::with_capacity(items.len() / 2);
    let mut iter = items.into_iter();
    while let (Some(k), Some(v)) = (iter.next(), iter.next()) {
        out.push((k, v));
    }
    out
}

/// Parses RESP2 and RESP3 frames (what a server sends), resuming where the last call stopped.
#[derive(Debug, Default)]
pub struct FrameDecoder {
    limits: Limits,
    stack: Vec<Partial>,
    /// (type byte, length) of a bulk-like frame whose header was consumed.
    bulk: Option<(u8, usize)>,
    scanned: usize,
}

impl FrameDecoder {
    /// A decoder with the given limits.
    pub fn new(limits: Limits) -> Self {
        FrameDecoder {
            limits,
            ..Default::default()
        }
    }

    /// Decodes the next complete frame from `buf`, consuming its bytes.
    ///
    /// # Errors
    ///
    /// A [`DecodeError`] on malformed input; the stream cannot be resumed after it.
    pub fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<Frame>, DecodeError> {
        loop {
            match self.step(buf)? {
                Step::NeedMore => return Ok(None),
                Step::Opened => continue,
                Step::Frame(frame) => {
                    if let Some(frame) = self.complete(frame) {
                        return Ok(Some(frame));
                    }
                }
            }
        }
    }

    /// Pushes a finished frame into the open aggregates; returns the top-level frame once one
    /// is complete.
    fn complete(&mut self, mut frame: Frame) -> Option<Frame> {
        loop {
            let Some(top) = self.stack.last_mut() else {
                // Nothing open: this is the top-level frame.
                return Some(frame);
            };
            top.items.push(frame);
            top.remaining -= 1;
            if top.remaining > 0 {
                return None;
            }
            let done = self.stack.pop()?;
            frame = match done.kind {
                AggregateKind::Array => Frame::Array(done.items),
                AggregateKind::Set => Frame::Set(done.items),
                AggregateKind::Push => Frame::Push(done.items),
                AggregateKind::Map => Frame::Map(pairs(done.items)),
                AggregateKind::Attributed => Frame::Attribute {
                    attrs: done.attrs,
                    frame: Box::new(done.items.into_iter().next()?),
                },
                AggregateKind::Attribute => {
                    self.stack.push(Partial {
                        kind: AggregateKind::Attributed,
                        remaining: 1,
                        items: Vec::new(),
                        attrs: pairs(done.items),
                    });
                    return None;
                }
            };
        }
    }

    /// Reads one scalar frame, or consumes one aggregate or bulk header.
    fn step(&mut self, buf: &mut BytesMut) -> Result<Step, DecodeError> {
        if let Some((kind, len)) = self.bulk {
            if buf.len() < len.saturating_add(2) {
                return Ok(Step::NeedMore);
            }
            let payload = buf.split_to(len).freeze();
            if buf.get(..2) != Some(b"\r\n") {
                return Err(DecodeError::InvalidBulkLength);
            }
            buf.advance(2);
            self.bulk = None;
            return Ok(Step::Frame(match kind {
                b'!' => Frame::Error(payload),
                b'=' => {
                    let mut format = [0u8; 3];
                    if payload.len() < 4 || payload.get(3) != Some(&b':') {
                        return Err(DecodeError::InvalidValue("verbatim"));
                    }
                    format.copy_from_slice(payload.get(..3).unwrap_or(b"txt"));
                    Frame::Verbatim {
                        format,
                        text: payload.slice(4..),
                    }
                }
                _ => Frame::Bulk(payload),
            }));
        }
        // Reject an unknown type byte at once instead of waiting for a line that may never come.
        match buf.first() {
            None => return Ok(Step::NeedMore),
            Some(&kind) if !FRAME_TYPES.contains(&kind) => {
                return Err(DecodeError::InvalidType(kind))
            }
            Some(_) => {}
        }
        let Some(nl) = find_byte(buf, self.scanned.max(1), b'\n') else {
            if buf.len() > self.limits.max_bulk_len {
                return Err(DecodeError::TooBigInlineRequest);
            }
            self.scanned = buf.len();
            return Ok(Step::NeedMore);
        };
        if buf.get(nl - 1) != Some(&b'\r') || nl < 2 {
            return Err(DecodeError::InvalidValue("line terminator"));
        }
        let kind = buf.first().copied().unwrap_or(0);
        let line = buf.get(1..nl - 1).unwrap_or_default();
        let integer = |what| parse_strict_i64(line).ok_or(DecodeError::InvalidValue(what));
        let frame = match kind {
            b'+' => Some(Frame::Simple(Bytes::copy_from_slice(line))),
            b'-' => Some(Frame::Error(Bytes::copy_from_slice(line))),
            b':' => Some(Frame::Integer(integer("integer")?)),
            // hiredis: "Bad nil value" unless the line is empty.
            b'_' if line.is_empty() => Some(Frame::Null),
            b'_' => return Err(DecodeError::InvalidValue("null")),
            b'#' => Some(Frame::Boolean(match line {
                b"t" => true,
                b"f" => false,
                _ => return Err(DecodeError::InvalidValue("boolean")),
            })),
            b',' => Some(Frame::Double(parse_double(line)?)),
            b'(' => {
                let digits = line.strip_prefix(b"-").unwrap_or(line);
                if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
                    return Err(DecodeError::InvalidValue("big number"));
                }
                Some(Frame::BigNumber(Bytes::copy_from_slice(line)))
            }
            b'$' | b'!' | b'=' => {
                let len = parse_strict_i64(line).ok_or(DecodeError::InvalidBulkLength)?;
                if len == -1 && kind == b'$' {
                    Some(Frame::Null)
                } else if len < 0 || len as u64 > self.limits.max_bulk_len as u64 {
                    return Err(DecodeError::InvalidBulkLength);
                } else {
                    self.bulk = Some((kind, len as usize));
                    None
                }
            }
            b'*' | b'~' | b'>' | b'%' | b'|' => {
                let n = parse_strict_i64(line).ok_or(DecodeError::InvalidMultibulkLength)?;
                if n == -1 && kind == b'*' {
                    Some(Frame::NullArray)
                } else if n < 0 || n as u64 > self.limits.max_multibulk_len as u64 {
                    return Err(DecodeError::InvalidMultibulkLength);
                } else if n == 0 && kind != b'|' {
                    Some(match kind {
                        b'*' => Frame::Array(Vec::new()),
                        b'~' => Frame::Set(Vec::new()),
                        b'>' => Frame::Push(Vec::new()),
                        _ => Frame::Map(Vec::new()),
                    })
                } else {
                    if self.stack.len() >= self.limits.max_depth {
                        return Err(DecodeError::TooDeep);
                    }
                    let n = n as usize;
                    // Keys and values are separate elements; a count too large to double
                    // cannot be a real map under any limit.
                    let pairs_len = n
                        .checked_mul(2)
                        .ok_or(DecodeError::InvalidMultibulkLength)?;
                    let (kind, remaining) = match kind {
                        b'*' => (AggregateKind::Array, n),
                        b'~' => (AggregateKind::Set, n),
                        b'>' => (AggregateKind::Push, n),
                        b'%' => (AggregateKind::Map, pairs_len),
                        // `|0` still describes the frame that follows it.
                        _ if n == 0 => (AggregateKind::Attributed, 1),
                        _ => (AggregateKind::Attribute, pairs_len),
                    };
                    self.stack.push(Partial {
                        kind,
                        remaining,
                        items: Vec::new(),
                        attrs: Vec::new(),
                    });
                    None
                }
            }
            other => return Err(DecodeError::InvalidType(other)),
        };
        buf.advance(nl + 1);
        self.scanned = 0;
        Ok(match frame {
            Some(frame) => Step::Frame(frame),
            None => Step::Opened,
        })
    }
}

/// Every RESP2 and RESP3 type byte.
const FRAME_TYPES: &[u8] = b"+-:$*_#,(!=%~>|";

/// What one decoding step achieved.
enum Step {
    NeedMore,
    /// An aggregate or bulk header was consumed.
    Opened,
    Frame(Frame),
}

fn parse_double(line: &[u8]) -> Result<f64, DecodeError> {
    let text = std::str::from_utf8(line).map_err(|_| DecodeError::InvalidValue("double"))?;
    let d = match text {
        "inf" | "+inf" => f64::INFINITY,
        "-inf" => f64::NEG_INFINITY,
        _ => text
            .parse::<f64>()
            .map_err(|_| DecodeError::InvalidValue("double"))?,
    };
    // One NaN: `str::parse` keeps the sign of `-NaN`, which would re-encode as `-nan` and then
    // decode differently. A NaN's sign means nothing in a reply.
    Ok(if d.is_nan() { f64::NAN } else { d })
}

#[cfg(test)]
mod tests {
    //! Table-driven decoder cases in the style of redis-protocol.rs `src/resp2/decode.rs`: each
    //! case is decoded alone, with trailing bytes appended (checking the consumed length), and one
    //! byte at a time. Request-parser errors and behaviours were checked against redis-server
    //! 7.0.15 by sending the raw bytes and reading the reply.

    use super::*;

    const TRAILING: &[u8] = b"*1\r\n$4\r\nPING\r\n";

    fn peeked(decoder: &RequestDecoder, buf: &[u8], max: usize) -> Vec<Vec<String>> {
        let mut seen = Vec::new();
        decoder.peek(buf, max, |args| {
            seen.push(
                args.iter()
                    .map(|a| String::from_utf8_lossy(a).into_owned())
                    .collect(),
            );
        });
        seen
    }

    #[test]
    fn request_len_counts_inline_requests_as_valkey_does() {
        // valkey-server 8.1.8's large-request log: the arguments, one space between each and
        // CRLF, whatever the spacing; multibulk requests by their bytes.
        let mut decoder = RequestDecoder::default();
        let mut buf = BytesMut::from(
            &b"SET  a   b\nECHO  x \r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\nPING\r\n\r\n\"a b\" c\n"[..],
        );
        let mut lens = Vec::new();
        while let Some(args) = decoder.decode(&mut buf).unwrap() {
            lens.push(decoder.request_len(&args));
        }
        assert_eq!(lens, [9, 8, 20, 6, 7]);
    }

    #[test]
    fn recycled_vectors_and_common_names_give_the_same_arguments() {
        let mut d = RequestDecoder::new(Limits::default());
        let mut buf = BytesMut::from(
            &b"*2\r\n$3\r\nget\r\n$1\r\nk\r\n*3\r\n$3\r\nGet\r\n$1\r\na\r\n$1\r\nb\r\n\
               *1\r\n$4\r\nPING\r\n*2\r\n$3\r\nSET\r\n$3\r\nGET\r\n*1\r\n$3\r\nge"[..],
        );
        let mut seen = Vec::new();
        while let Ok(Some(args)) = d.decode(&mut buf) {
            seen.push(args.iter().map(|a| a.to_vec()).collect::<Vec<_>>());
            d.recycle(args);
        }
        let want: Vec<Vec<Vec<u8>>> = vec![
            vec![b"get".to_vec(), b"k".to_vec()],
            vec![b"Get".to_vec(), b"a".to_vec(), b"b".to_vec()],
            vec![b"PING".to_vec()],
            vec![b"SET".to_vec(), b"GET".to_vec()],
        ];
        assert_eq!(seen, want);
        buf.extend_from_slice(b"t\r\n");
        let last = d.decode(&mut buf).unwrap().unwrap();
        assert_eq!(
            last,
            vec![Bytes::from_static(b"get")],
            "the incomplete request completes"
        );
        // A name is shared static bytes only as the command's own spelling, never an argument.
        assert_eq!(common_name(b"GET").as_deref(), Some(&b"GET"[..]));
        assert_eq!(common_name(b"evalsha").as_deref(), Some(&b"evalsha"[..]));
        assert_eq!(common_name(b"Get"), None);
        assert_eq!(common_name(b"GETS"), None);
        // Only small vectors are kept for reuse.
        d.recycle(Vec::with_capacity(64));
        assert!(d.spare.capacity() <= SPARE_MAX_ARGS);
    }

    #[test]
    fn peek_sees_the_complete_requests_ahead_without_consuming_them() {
        let decoder = RequestDecoder::default();
        let pipeline: &[u8] = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n\
            *6\r\n$7\r\nEVALSHA\r\n$3\r\nsha\r\n$1\r\n1\r\n$4\r\nlock\r\n$1\r\na\r\n$1\r\nb\r\n\
            *0\r\n*2\r\n$3\r\nGET\r\n$2\r\nk";
        let all = peeked(&decoder, pipeline, 16);
        assert_eq!(
            all,
            [
                vec!["SET", "k", "v"],
                vec!["EVALSHA", "sha", "1", "lock"],
                vec![],
            ],
            "the half-read GET is not seen"
        );
        assert_eq!(peeked(&decoder, pipeline, 1), [vec!["SET", "k", "v"]]);
        // Stops at an inline request, a bad header, or a null multibulk.
        for stop in [&b"PING\r\n"[..], b"*1\r\n$x\r\n", b"*-1\r\n"] {
            let mut buf = b"*1\r\n$4\r\nPING\r\n".to_vec();
            buf.extend_from_slice(stop);
            buf.extend_from_slice(b"*1\r\n$4\r\nPING\r\n");
            assert_eq!(peeked(&decoder, &buf, 16), [vec!["PING"]], "{stop:?}");
        }
        assert!(peeked(&decoder, b"*99999999999999999999\r\n", 16).is_empty());
        // Nothing while a request is half read: the buffer does not start at a request.
        let mut half = RequestDecoder::default();
        let mut buf = BytesMut::from(&b"*2\r\n$3\r\nGET\r\n"[..]);
        assert_eq!(half.decode(&mut buf).unwrap(), None);
        assert!(peeked(&half, b"*1\r\n$4\r\nPING\r\n", 16).is_empty());
    }

    #[test]
    fn small_requests_are_copied_out_of_the_read_buffer_and_large_ones_are_not() {
        let mut buf = BytesMut::from(&b"*3\r\n$3\r\nSET\r\n$0\r\n\r\n$5\r\nvalue\r\n"[..]);
        let start = buf.as_ptr() as usize;
        let end = start + buf.len();
        let args = RequestDecoder::default().decode(&mut buf).unwrap().unwrap();
        assert_eq!(args, [b("SET"), b(""), b("value")]);
        for arg in args.iter().filter(|a| !a.is_empty()) {
            let at = arg.as_ptr() as usize;
            assert!(
                !(start..end).contains(&at),
                "argument still in the read buffer"
            );
        }
        let big = vec![b'x'; COMPACT_MAX + 1];
        let mut raw = format!("*2\r\n$3\r\nSET\r\n${}\r\n", big.len()).into_bytes();
        raw.extend_from_slice(&big);
        raw.extend_from_slice(b"\r\n");
        let mut buf = BytesMut::from(&raw[..]);
        let start = buf.as_ptr() as usize;
        let end = start + buf.len();
        let args = RequestDecoder::default().decode(&mut buf).unwrap().unwrap();
        assert_eq!(args[1].len(), big.len());
        assert!((start..end).contains(&(args[1].as_ptr() as usize)));
    }

    fn b(s: &str) -> Bytes {
        Bytes::copy_from_slice(s.as_bytes())
    }

    fn bulk(s: &str) -> Frame {
        Frame::Bulk(b(s))
    }

    fn args(items: &[&str]) -> Vec<Bytes> {
        items.iter().map(|s| b(s)).collect()
    }

    fn raw(items: &[&[u8]]) -> Vec<Bytes> {
        items.iter().map(|s| Bytes::copy_from_slice(s)).collect()
    }

    /// Decodes `input` with a fresh decoder; returns the result and the bytes consumed.
    fn frame_once(input: &[u8]) -> (Result<Option<Frame>, DecodeError>, usize) {
        let mut buf = BytesMut::from(input);
        let result = FrameDecoder::default().decode(&mut buf);
        (result, input.len() - buf.len())
    }

    /// Feeds `input` one byte at a time; returns the first non-`Ok(None)` result and the number
    /// of bytes fed when it came.
    fn frame_bytewise(input: &[u8]) -> (Result<Option<Frame>, DecodeError>, usize) {
        let mut decoder = FrameDecoder::default();
        let mut buf = BytesMut::new();
        for (i, &byte) in input.iter().enumerate() {
            buf.extend_from_slice(&[byte]);
            match decoder.decode(&mut buf) {
                Ok(None) => {}
                other => return (other, i + 1),
            }
        }
        (Ok(None), input.len())
    }

    fn request_once(
        input: &[u8],
        auth_required: bool,
    ) -> (Result<Option<Vec<Bytes>>, DecodeError>, usize) {
        let mut decoder = RequestDecoder::default();
        decoder.set_auth_required(auth_required);
        let mut buf = BytesMut::from(input);
        let result = decoder.decode(&mut buf);
        (result, input.len() - buf.len())
    }

    fn request_bytewise(
        input: &[u8],
        auth_required: bool,
    ) -> (Result<Option<Vec<Bytes>>, DecodeError>, usize) {
        let mut decoder = RequestDecoder::default();
        decoder.set_auth_required(auth_required);
        let mut buf = BytesMut::new();
        for (i, &byte) in input.iter().enumerate() {
            buf.extend_from_slice(&[byte]);
            match decoder.decode(&mut buf) {
                Ok(None) => {}
                other => return (other, i + 1),
            }
        }
        (Ok(None), input.len())
    }

    fn assert_frame(input: &[u8], want: &Frame) {
        let shown = String::from_utf8_lossy(input);
        assert_eq!(
            frame_once(input),
            (Ok(Some(want.clone())), input.len()),
            "{shown:?}"
        );

        let mut buf = BytesMut::from(input);
        buf.extend_from_slice(b"+trailing\r\n");
        let mut decoder = FrameDecoder::default();
        assert_eq!(
            decoder.decode(&mut buf),
            Ok(Some(want.clone())),
            "{shown:?}"
        );
        assert_eq!(
            &buf[..],
            b"+trailing\r\n",
            "consumed too much or too little: {shown:?}"
        );
        assert_eq!(
            decoder.decode(&mut buf),
            Ok(Some(Frame::simple("trailing")))
        );

        assert_eq!(
            frame_bytewise(input),
            (Ok(Some(want.clone())), input.len()),
            "{shown:?}"
        );
    }

    fn assert_frame_error(input: &[u8], want: DecodeError) {
        let shown = String::from_utf8_lossy(input);
        assert_eq!(frame_once(input).0, Err(want.clone()), "{shown:?}");
        let mut with_trailing = input.to_vec();
        with_trailing.extend_from_slice(b"+trailing\r\n");
        assert_eq!(frame_once(&with_trailing).0, Err(want.clone()), "{shown:?}");
        assert_eq!(frame_bytewise(input).0, Err(want), "{shown:?}");
    }

    fn assert_request(input: &[u8], want: &[Bytes]) {
        let shown = String::from_utf8_lossy(input);
        let want = Ok(Some(want.to_vec()));
        assert_eq!(
            request_once(input, false),
            (want.clone(), input.len()),
            "{shown:?}"
        );

        let mut buf = BytesMut::from(input);
        buf.extend_from_slice(TRAILING);
        let mut decoder = RequestDecoder::default();
        assert_eq!(decoder.decode(&mut buf), want, "{shown:?}");
        assert_eq!(
            &buf[..],
            TRAILING,
            "consumed too much or too little: {shown:?}"
        );
        assert_eq!(decoder.decode(&mut buf), Ok(Some(args(&["PING"]))));
        assert!(buf.is_empty());

        assert_eq!(
            request_bytewise(input, false),
            (want, input.len()),
            "{shown:?}"
        );
    }

    fn assert_request_error(input: &[u8], auth_required: bool, want: DecodeError) {
        let shown = String::from_utf8_lossy(&input[..input.len().min(40)]);
        assert_eq!(
            request_once(input, auth_required).0,
            Err(want.clone()),
            "{shown:?}"
        );
        assert_eq!(
            request_bytewise(input, auth_required).0,
            Err(want),
            "{shown:?}"
        );
    }

    // ---- FrameDecoder: valid frames ----

    #[test]
    fn frame_decoder_reads_every_resp3_type() {
        let cases: Vec<(&[u8], Frame)> = vec![
            (b"+OK\r\n", Frame::ok()),
            (b"+\r\n", Frame::Simple(Bytes::new())),
            (b"-ERR bad thing\r\n", Frame::error("ERR bad thing")),
            (b":0\r\n", Frame::Integer(0)),
            (b":-42\r\n", Frame::Integer(-42)),
            (b":9223372036854775807\r\n", Frame::Integer(i64::MAX)),
            (b":-9223372036854775808\r\n", Frame::Integer(i64::MIN)),
            (b"$3\r\nfoo\r\n", bulk("foo")),
            (b"$0\r\n\r\n", bulk("")),
            (b"$4\r\na\r\nb\r\n", bulk("a\r\nb")),
            (
                b"$3\r\n\x00\xff\n\r\n",
                Frame::Bulk(Bytes::from_static(b"\x00\xff\n")),
            ),
            (b",1.5\r\n", Frame::Double(1.5)),
            (b",-2\r\n", Frame::Double(-2.0)),
            (b",1e+20\r\n", Frame::Double(1e20)),
            (b",0.10000000000000001\r\n", Frame::Double(0.1)),
            (b",inf\r\n", Frame::Double(f64::INFINITY)),
            (b",-inf\r\n", Frame::Double(f64::NEG_INFINITY)),
            (b"#t\r\n", Frame::Boolean(true)),
            (b"#f\r\n", Frame::Boolean(false)),
            (
                b"(3492890328409238509324850943850943825024385\r\n",
                Frame::BigNumber(b("3492890328409238509324850943850943825024385")),
            ),
            (b"(-1\r\n", Frame::BigNumber(b("-1"))),
            (
                b"!21\r\nSYNTAX invalid syntax\r\n",
                Frame::error("SYNTAX invalid syntax"),
            ),
            (b"!0\r\n\r\n", Frame::Error(Bytes::new())),
            (
                b"=15\r\ntxt:Some string\r\n",
                Frame::Verbatim {
                    format: *b"txt",
                    text: b("Some string"),
                },
            ),
            (
                b"=4\r\nmkd:\r\n",
                Frame::Verbatim {
                    format: *b"mkd",
                    text: Bytes::new(),
                },
            ),
            (
                b"~2\r\n:1\r\n+a\r\n",
                Frame::Set(vec![Frame::Integer(1), Frame::simple("a")]),
            ),
            (b"~0\r\n", Frame::Set(vec![])),
            (
                b">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$2\r\nhi\r\n",
                Frame::Push(vec![bulk("message"), bulk("ch"), bulk("hi")]),
            ),
            (b">0\r\n", Frame::Push(vec![])),
        ];
        for (input, want) in &cases {
            assert_frame(input, want);
        }
    }

    #[test]
    fn frame_decoder_reads_nulls() {
        assert_frame(b"$-1\r\n", &Frame::Null);
        assert_frame(b"*-1\r\n", &Frame::NullArray);
        assert_frame(b"_\r\n", &Frame::Null);
        assert_frame(
            b"*3\r\n$-1\r\n*-1\r\n_\r\n",
            &Frame::Array(vec![Frame::Null, Frame::NullArray, Frame::Null]),
        );
    }

    #[test]
    fn frame_decoder_reads_nested_aggregates_and_maps() {
        let cases: Vec<(&[u8], Frame)> = vec![
            (b"*0\r\n", Frame::Array(vec![])),
            (
                b"*2\r\n$1\r\na\r\n:1\r\n",
                Frame::Array(vec![bulk("a"), Frame::Integer(1)]),
            ),
            (
                b"*2\r\n*1\r\n:1\r\n*0\r\n",
                Frame::Array(vec![
                    Frame::Array(vec![Frame::Integer(1)]),
                    Frame::Array(vec![]),
                ]),
            ),
            (
                b"*1\r\n*1\r\n*1\r\n*1\r\n+deep\r\n",
                Frame::Array(vec![Frame::Array(vec![Frame::Array(vec![Frame::Array(
                    vec![Frame::simple("deep")],
                )])])]),
            ),
            (b"%0\r\n", Frame::Map(vec![])),
            (
                b"%2\r\n+first\r\n:1\r\n+second\r\n:2\r\n",
                Frame::Map(vec![
                    (Frame::simple("first"), Frame::Integer(1)),
                    (Frame::simple("second"), Frame::Integer(2)),
                ]),
            ),
            (
                // Aggregate keys and values, and a map inside an array.
                b"*2\r\n%1\r\n*1\r\n:1\r\n~1\r\n#t\r\n_\r\n",
                Frame::Array(vec![
                    Frame::Map(vec![(
                        Frame::Array(vec![Frame::Integer(1)]),
                        Frame::Set(vec![Frame::Boolean(true)]),
                    )]),
                    Frame::Null,
                ]),
            ),
            (
                b">2\r\n*0\r\n%1\r\n$1\r\nk\r\n$1\r\nv\r\n",
                Frame::Push(vec![
                    Frame::Array(vec![]),
                    Frame::Map(vec![(bulk("k"), bulk("v"))]),
                ]),
            ),
        ];
        for (input, want) in &cases {
            assert_frame(input, want);
        }
    }

    #[test]
    fn frame_decoder_attaches_attributes_to_the_next_frame() {
        // The example from the RESP3 specification.
        let spec: &[u8] = b"|1\r\n+key-popularity\r\n%2\r\n$1\r\na\r\n,0.1923\r\n$1\r\nb\r\n,0.0012\r\n*2\r\n:2039123\r\n:9543892\r\n";
        let want = Frame::Attribute {
            attrs: vec![(
                Frame::simple("key-popularity"),
                Frame::Map(vec![
                    (bulk("a"), Frame::Double(0.1923)),
                    (bulk("b"), Frame::Double(0.0012)),
                ]),
            )],
            frame: Box::new(Frame::Array(vec![
                Frame::Integer(2039123),
                Frame::Integer(9543892),
            ])),
        };
        assert_frame(spec, &want);

        let cases: Vec<(&[u8], Frame)> = vec![
            (
                b"|0\r\n+OK\r\n",
                Frame::Attribute {
                    attrs: vec![],
                    frame: Box::new(Frame::ok()),
                },
            ),
            (
                b"*2\r\n|1\r\n+a\r\n+b\r\n:1\r\n:2\r\n",
                Frame::Array(vec![
                    Frame::Attribute {
                        attrs: vec![(Frame::simple("a"), Frame::simple("b"))],
                        frame: Box::new(Frame::Integer(1)),
                    },
                    Frame::Integer(2),
                ]),
            ),
            (
                b"|1\r\n+a\r\n:1\r\n|1\r\n+b\r\n:2\r\n$1\r\nx\r\n",
                Frame::Attribute {
                    attrs: vec![(Frame::simple("a"), Frame::Integer(1))],
                    frame: Box::new(Frame::Attribute {
                        attrs: vec![(Frame::simple("b"), Frame::Integer(2))],
                        frame: Box::new(bulk("x")),
                    }),
                },
            ),
        ];
        for (input, want) in &cases {
            assert_frame(input, want);
        }
    }

    #[test]
    fn frame_decoder_reads_every_nan_as_one_positive_nan() {
        for input in [&b",nan\r\n"[..], b",-nan\r\n", b",NaN\r\n", b",-NaN\r\n"] {
            let (result, consumed) = frame_once(input);
            assert!(
                matches!(result, Ok(Some(Frame::Double(d))) if d.is_nan() && d.is_sign_positive()),
                "{input:?}: {result:?}"
            );
            assert_eq!(consumed, input.len());
            // So it re-encodes to bytes that decode to the same thing (found by the fuzzer).
            let again = crate::encode_to_vec(&result.unwrap().unwrap(), crate::Version::Resp3);
            assert_eq!(again, b",nan\r\n");
        }
    }

    #[test]
    fn frame_decoder_returns_pipelined_frames_in_order() {
        let mut buf = BytesMut::from(&b"+OK\r\n:1\r\n*1\r\n$1\r\na\r\n_\r\n+par"[..]);
        let mut decoder = FrameDecoder::default();
        assert_eq!(decoder.decode(&mut buf), Ok(Some(Frame::ok())));
        assert_eq!(decoder.decode(&mut buf), Ok(Some(Frame::Integer(1))));
        assert_eq!(
            decoder.decode(&mut buf),
            Ok(Some(Frame::bulk_array([&b"a"[..]])))
        );
        assert_eq!(decoder.decode(&mut buf), Ok(Some(Frame::Null)));
        assert_eq!(decoder.decode(&mut buf), Ok(None));
        buf.extend_from_slice(b"tial\r\n");
        assert_eq!(decoder.decode(&mut buf), Ok(Some(Frame::simple("partial"))));
        assert!(buf.is_empty());
    }

    #[test]
    fn frame_decoder_accepts_depth_up_to_the_limit() {
        let limits = Limits {
            max_depth: 3,
            ..Limits::default()
        };
        let mut buf = BytesMut::from(&b"*1\r\n*1\r\n*1\r\n:1\r\n"[..]);
        let want = Frame::Array(vec![Frame::Array(vec![Frame::Array(vec![
            Frame::Integer(1),
        ])])]);
        assert_eq!(FrameDecoder::new(limits).decode(&mut buf), Ok(Some(want)));

        let mut buf = BytesMut::from(&b"*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n"[..]);
        assert_eq!(
            FrameDecoder::new(limits).decode(&mut buf),
            Err(DecodeError::TooDeep)
        );
        let deep = b"*1\r\n".repeat(101);
        assert_eq!(frame_once(&deep).0, Err(DecodeError::TooDeep));
    }

    // ---- FrameDecoder: malformed input ----

    #[test]
    fn frame_decoder_rejects_malformed_frames() {
        use DecodeError::*;
        let cases: Vec<(&[u8], DecodeError)> = vec![
            (b"?x\r\n", InvalidType(b'?')),
            (b"PING\r\n", InvalidType(b'P')),
            (b"\r\n", InvalidType(b'\r')),
            (b":abc\r\n", InvalidValue("integer")),
            (b":\r\n", InvalidValue("integer")),
            (b":01\r\n", InvalidValue("integer")),
            (b":+1\r\n", InvalidValue("integer")),
            (b":9223372036854775808\r\n", InvalidValue("integer")),
            (b"#x\r\n", InvalidValue("boolean")),
            (b"#\r\n", InvalidValue("boolean")),
            (b",abc\r\n", InvalidValue("double")),
            (b",\r\n", InvalidValue("double")),
            (b"(12a\r\n", InvalidValue("big number")),
            (b"(-\r\n", InvalidValue("big number")),
            (b"_x\r\n", InvalidValue("null")),
            (b"+OK\n", InvalidValue("line terminator")),
            (b"$-2\r\n", InvalidBulkLength),
            (b"$abc\r\n", InvalidBulkLength),
            (b"$\r\n", InvalidBulkLength),
            (b"!-1\r\n", InvalidBulkLength),
            (b"$536870913\r\n", InvalidBulkLength),
            (b"$3\r\nfooXY", InvalidBulkLength),
            (b"=3\r\ntxt\r\n", InvalidValue("verbatim")),
            (b"=4\r\ntxt;\r\n", InvalidValue("verbatim")),
            (b"*-2\r\n", InvalidMultibulkLength),
            (b"~-1\r\n", InvalidMultibulkLength),
            (b"%-1\r\n", InvalidMultibulkLength),
            (b"|x\r\n", InvalidMultibulkLength),
            (b"*2147483648\r\n", InvalidMultibulkLength),
            (b"*1\r\n:x\r\n", InvalidValue("integer")),
        ];
        for (input, want) in cases {
            assert_frame_error(input, want);
        }
    }

    #[test]
    fn frame_decoder_rejects_an_unknown_type_byte_without_waiting_for_a_line() {
        assert_eq!(frame_once(b"x").0, Err(DecodeError::InvalidType(b'x')));
    }

    #[test]
    fn frame_decoder_waits_for_partial_frames() {
        for input in [
            &b"+OK"[..],
            b"+OK\r",
            b"$3\r\nfo",
            b"$3\r\nfoo\r",
            b"*2\r\n:1\r\n",
            b"%1\r\n+k\r\n",
            b"|1\r\n+a\r\n+b\r\n",
        ] {
            assert_eq!(frame_once(input), (Ok(None), frame_once(input).1));
        }
    }

    // ---- RequestDecoder: valid requests ----

    #[test]
    fn request_decoder_reads_multibulk_requests() {
        let cases: Vec<(&[u8], Vec<Bytes>)> = vec![
            (b"*1\r\n$4\r\nPING\r\n", args(&["PING"])),
            (
                b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n",
                args(&["SET", "k", ""]),
            ),
            (
                b"*2\r\n$4\r\nECHO\r\n$5\r\na\r\n\x00b\r\n",
                raw(&[b"ECHO", b"a\r\n\x00b"]),
            ),
            (b"*1\r\n$1\r\n\xff\r\n", raw(&[b"\xff"])),
            // Redis skips the two bytes after a payload or a header's CR without looking.
            (b"*1\r\n$4\r\nPINGxx", args(&["PING"])),
            (b"*1\rx$4\r\nPING\r\n", args(&["PING"])),
            (b"*1\r\n$4\rxPING\r\n", args(&["PING"])),
        ];
        for (input, want) in &cases {
            assert_request(input, want);
        }
    }

    #[test]
    fn request_decoder_splits_inline_commands_like_sdssplitargs() {
        let cases: Vec<(&[u8], Vec<Bytes>)> = vec![
            (b"PING\r\n", args(&["PING"])),
            (b"PING\n", args(&["PING"])),
            (b"SET k v\r\n", args(&["SET", "k", "v"])),
            (b"  SET \t k   v  \r\n", args(&["SET", "k", "v"])),
            (b"ECHO \"a b\"\r\n", args(&["ECHO", "a b"])),
            (b"ECHO \"\"\r\n", args(&["ECHO", ""])),
            (b"ECHO ''\r\n", args(&["ECHO", ""])),
            (
                b"ECHO \"a\\x41\\x4a\\xff\"\r\n",
                raw(&[b"ECHO", b"aAJ\xff"]),
            ),
            // `\x` without two hex digits is an ordinary escape of `x`.
            (b"ECHO \"\\x4\"\r\n", args(&["ECHO", "x4"])),
            (b"ECHO \"\\xg1\"\r\n", args(&["ECHO", "xg1"])),
            (
                b"ECHO \"\\n\\r\\t\\b\\a\\q\\\\\\\"\"\r\n",
                raw(&[b"ECHO", b"\n\r\t\x08\x07q\\\""]),
            ),
            (b"ECHO 'a\\'b'\r\n", args(&["ECHO", "a'b"])),
            // Inside single quotes only `\'` is an escape.
            (b"ECHO 'a\\nb'\r\n", args(&["ECHO", "a\\nb"])),
            (b"ECHO '\"'\r\n", args(&["ECHO", "\""])),
            // A quote inside a token opens a quoted part of that token.
            (b"ECHO a\"b c\"\r\n", args(&["ECHO", "ab c"])),
            (b"ECHO a'b c'\r\n", args(&["ECHO", "ab c"])),
            // A closing quote may be followed by any isspace() byte.
            (b"ECHO \"a\"\x0b\r\n", args(&["ECHO", "a"])),
            (b"ECHO \"a\"\tb\r\n", args(&["ECHO", "a", "b"])),
            // Tokens end at space, tab, CR or LF only; VT and FF are skipped between tokens.
            (b"ECHO a\x0bb\r\n", args(&["ECHO", "a\x0bb"])),
            (b"\x0b\x0cPING\r\n", args(&["PING"])),
            (b"ECHO a\rb\r\n", args(&["ECHO", "a", "b"])),
            // Only one CR before the LF belongs to the terminator.
            (b"ECHO a\r\r\n", args(&["ECHO", "a"])),
            (b"ECHO \"a\"\r\r\n", args(&["ECHO", "a"])),
            (b"\rPING\r\n", args(&["PING"])),
            // `$` and other type bytes start inline commands unless the first byte is `*`.
            (b"$4\r\n", args(&["$4"])),
            (b"+OK\r\n", args(&["+OK"])),
        ];
        for (input, want) in &cases {
            assert_request(input, want);
        }
    }

    #[test]
    fn request_decoder_accepts_an_inline_line_of_exactly_the_limit() {
        let mut line = vec![b'x'; PROTO_INLINE_MAX_SIZE];
        line.push(b'\n');
        let (result, consumed) = request_once(&line, false);
        assert_eq!(consumed, line.len());
        assert_eq!(
            result,
            Ok(Some(vec![Bytes::from(vec![b'x'; PROTO_INLINE_MAX_SIZE])]))
        );
        // Redis also takes a longer line when its newline arrives in the same read.
        let mut long = b"ECHO ".to_vec();
        long.extend(vec![b'x'; 70 * 1024]);
        long.extend_from_slice(b"\r\n");
        let (result, consumed) = request_once(&long, false);
        assert_eq!(consumed, long.len());
        assert_eq!(result.map(|a| a.map(|a| a.len())), Ok(Some(2)));
    }

    #[test]
    fn request_decoder_skips_blank_lines_and_empty_multibulks() {
        for input in [
            &b"\r\n\r\nPING\r\n"[..],
            b"\n\n\nPING\r\n",
            b"   \t \r\nPING\r\n",
            b"*0\r\n*-1\r\n*-5\r\nPING\r\n",
            b"*-2147483649\r\n*-9223372036854775808\r\nPING\r\n",
            b"\r\n*0\r\n\n*-1\r\nPING\n",
        ] {
            assert_request(input, &args(&["PING"]));
        }
        for input in [&b"\r\n"[..], b"\n", b"*0\r\n", b"*-1\r\n", b" \r\n*0\r\n"] {
            assert_eq!(request_once(input, false), (Ok(None), input.len()));
        }
    }

    #[test]
    fn request_decoder_returns_pipelined_requests_in_order() {
        let input: &[u8] = b"*1\r\n$4\r\nPING\r\nPING\r\n*0\r\n*2\r\n$4\r\nECHO\r\n$1\r\na\r\nSET k \"v w\"\n*1\r\n$4\r\nPI";
        let mut buf = BytesMut::from(input);
        let mut decoder = RequestDecoder::default();
        assert_eq!(decoder.decode(&mut buf), Ok(Some(args(&["PING"]))));
        assert_eq!(decoder.decode(&mut buf), Ok(Some(args(&["PING"]))));
        assert_eq!(decoder.decode(&mut buf), Ok(Some(args(&["ECHO", "a"]))));
        assert_eq!(
            decoder.decode(&mut buf),
            Ok(Some(args(&["SET", "k", "v w"])))
        );
        assert_eq!(decoder.decode(&mut buf), Ok(None));
        assert_eq!(&buf[..], b"PI", "the partial bulk's header is consumed");
        buf.extend_from_slice(b"NG\r\n");
        assert_eq!(decoder.decode(&mut buf), Ok(Some(args(&["PING"]))));
        assert!(buf.is_empty());
        assert_eq!(decoder.decode(&mut buf), Ok(None));
    }

    #[test]
    fn request_decoder_waits_for_the_byte_after_a_header_cr() {
        for input in [
            &b"*1\r"[..],
            b"*1\r\n$4\r",
            b"*1\r\n$4\r\nPING\r",
            b"*1\r\n$1\r\n",
        ] {
            assert_eq!(request_once(input, false).0, Ok(None));
        }
    }

    // ---- RequestDecoder: malformed requests (texts as redis-server 7.0.15 replies) ----

    #[test]
    fn request_decoder_rejects_malformed_requests_with_redis_errors() {
        use DecodeError::*;
        let cases: Vec<(&[u8], DecodeError)> = vec![
            (b"*abc\r\n", InvalidMultibulkLength),
            (b"*\r\n", InvalidMultibulkLength),
            (b"*+1\r\n", InvalidMultibulkLength),
            (b"*01\r\n", InvalidMultibulkLength),
            (b"* 1\r\n", InvalidMultibulkLength),
            (b"*1 \r\n", InvalidMultibulkLength),
            (b"*-0\r\n", InvalidMultibulkLength),
            (b"*2147483648\r\n", InvalidMultibulkLength),
            (b"*9223372036854775808\r\n", InvalidMultibulkLength),
            (b"*99999999999999999999\r\n", InvalidMultibulkLength),
            // The count runs to the first CR, LF included.
            (b"*1\n$4\r\nPING\r\n", InvalidMultibulkLength),
            (b"*1\r\n$-1\r\n", InvalidBulkLength),
            (b"*1\r\n$-0\r\n", InvalidBulkLength),
            (b"*1\r\n$abc\r\n", InvalidBulkLength),
            (b"*1\r\n$01\r\n", InvalidBulkLength),
            (b"*1\r\n$\r\n", InvalidBulkLength),
            (b"*1\r\n$536870913\r\n", InvalidBulkLength),
            (b"*1\r\n$9223372036854775807\r\n", InvalidBulkLength),
            (b"*1\r\n$4\nPING\r\n", InvalidBulkLength),
            (b"*2\r\n$4\r\nECHO\r\n$x\r\n", InvalidBulkLength),
            (b"*1\r\n:1\r\n", ExpectedBulk(b':')),
            (b"*1\r\nx\r\n", ExpectedBulk(b'x')),
            (b"*1\r\n\r\n", ExpectedBulk(b'\r')),
            (b"*1\r\n\n\r\n", ExpectedBulk(b'\n')),
            (b"*1\r\n\xff\r\n", ExpectedBulk(0xff)),
            (b"*2\r\n$1\r\na\r\n*1\r\n", ExpectedBulk(b'*')),
            (b"ECHO \"a\"b\r\n", UnbalancedQuotes),
            (b"ECHO 'a'b\r\n", UnbalancedQuotes),
            (b"ECHO \"abc\r\n", UnbalancedQuotes),
            (b"ECHO 'abc\r\n", UnbalancedQuotes),
            (b"ECHO \"a\\\"\r\n", UnbalancedQuotes),
            (b"ECHO \"a\"\"b\"\r\n", UnbalancedQuotes),
            // `\\` then `\'` inside single quotes: the escaped quote leaves it open.
            (b"ECHO 'a\\\\'\r\n", UnbalancedQuotes),
            (b"\"\n", UnbalancedQuotes),
        ];
        for (input, want) in cases {
            assert_request_error(input, false, want.clone());
            let mut with_trailing = input.to_vec();
            with_trailing.extend_from_slice(TRAILING);
            assert_eq!(request_once(&with_trailing, false).0, Err(want));
        }
    }

    #[test]
    fn request_errors_display_redis_protocol_error_texts() {
        use DecodeError::*;
        // Each text is what redis-server 7.0.15 replies after "-ERR Protocol error: ".
        for (error, text) in [
            (InvalidMultibulkLength, "invalid multibulk length"),
            (InvalidBulkLength, "invalid bulk length"),
            (UnbalancedQuotes, "unbalanced quotes in request"),
            (TooBigInlineRequest, "too big inline request"),
            (TooBigMultibulkCount, "too big mbulk count string"),
            (TooBigBulkCount, "too big bulk count string"),
            (ExpectedBulk(b':'), "expected '$', got ':'"),
            (ExpectedBulk(b'\r'), "expected '$', got ' '"),
            (ExpectedBulk(b'\n'), "expected '$', got ' '"),
            (
                UnauthenticatedMultibulkLength,
                "unauthenticated multibulk length",
            ),
            (UnauthenticatedBulkLength, "unauthenticated bulk length"),
        ] {
            assert_eq!(error.to_string(), text);
        }
    }

    #[test]
    fn request_decoder_rejects_lines_longer_than_the_inline_limit() {
        use DecodeError::*;
        let over = PROTO_INLINE_MAX_SIZE + 1;
        let inline = vec![b'x'; over];
        assert_request_error(&inline, false, TooBigInlineRequest);
        assert_eq!(request_once(&inline[..over - 1], false).0, Ok(None));

        let mut count = b"*".to_vec();
        count.extend(vec![b'1'; over]);
        assert_request_error(&count, false, TooBigMultibulkCount);

        let mut len = b"*1\r\n$".to_vec();
        len.extend(vec![b'1'; over]);
        assert_request_error(&len, false, TooBigBulkCount);

        // A long header whose CR did arrive is parsed (and rejected) as a number instead.
        let mut count = b"*".to_vec();
        count.extend(vec![b'1'; over]);
        count.extend_from_slice(b"\r\n");
        assert_eq!(request_once(&count, false).0, Err(InvalidMultibulkLength));
    }

    #[test]
    fn request_decoder_stops_at_nul_in_a_line_like_strchr() {
        use DecodeError::*;
        // Redis searches for the terminator with strchr, so a NUL before it hides it: the
        // request never completes and becomes "too big" once 64 KiB have piled up.
        let padding = vec![b'x'; PROTO_INLINE_MAX_SIZE];
        for (head, too_big) in [
            (&b"PI\x00NG\r\nPING\r\n"[..], TooBigInlineRequest),
            (b"\x00PING\r\n", TooBigInlineRequest),
            (b"ECHO \"a\x00b\"\r\n", TooBigInlineRequest),
            (b"*\x001\r\n$4\r\nPING\r\n", TooBigMultibulkCount),
            (b"*1\r\n$\x004\r\nPING\r\n", TooBigBulkCount),
            (b"*1\r\n\x00\r\n", TooBigBulkCount),
        ] {
            assert_eq!(request_once(head, false).0, Ok(None), "{head:?}");
            assert_eq!(request_bytewise(head, false).0, Ok(None), "{head:?}");
            let mut input = head.to_vec();
            input.extend_from_slice(&padding);
            assert_request_error(&input, false, too_big);
        }
        // NUL inside a bulk payload is just data.
        assert_request(b"*1\r\n$4\r\nPI\x00G\r\n", &raw(&[b"PI\x00G"]));
    }

    #[test]
    fn request_decoder_holds_unauthenticated_clients_to_redis_limits() {
        use DecodeError::*;
        let ten = format!("*10\r\n{}", "$1\r\na\r\n".repeat(10));
        let (result, consumed) = request_once(ten.as_bytes(), true);
        assert_eq!(result, Ok(Some(args(&["a"; 10]))));
        assert_eq!(consumed, ten.len());

        assert_request_error(b"*11\r\n", true, UnauthenticatedMultibulkLength);
        assert_request_error(b"*11\r\n$16385\r\n", true, UnauthenticatedMultibulkLength);
        assert_request_error(b"*1\r\n$16385\r\n", true, UnauthenticatedBulkLength);
        // Malformed numbers are reported as such first.
        assert_request_error(b"*11x\r\n", true, InvalidMultibulkLength);
        assert_request_error(b"*1\r\n$16385x\r\n", true, InvalidBulkLength);
        assert_request_error(b"*1\r\n$536870913\r\n", true, InvalidBulkLength);
        // 16384 bytes is still allowed; the decoder waits for them.
        assert_eq!(request_once(b"*1\r\n$16384\r\n", true).0, Ok(None));
        // Empty requests are still skipped.
        assert_eq!(
            request_once(b"*-1\r\n*0\r\nPING\r\n", true).0,
            Ok(Some(args(&["PING"])))
        );
        // Redis applies no unauthenticated limit to inline commands.
        let (result, _) = request_once(format!("{}\r\n", "a ".repeat(20)).as_bytes(), true);
        assert_eq!(result.map(|a| a.map(|a| a.len())), Ok(Some(20)));
        let mut echo = b"ECHO ".to_vec();
        echo.extend(vec![b'x'; 20_000]);
        echo.extend_from_slice(b"\r\n");
        assert_eq!(
            request_once(&echo, true).0.map(|a| a.map(|a| a.len())),
            Ok(Some(2))
        );
        // Once authenticated the limits are gone.
        assert_eq!(request_once(b"*11\r\n", false).0, Ok(None));
        assert_eq!(request_once(b"*1\r\n$16385\r\n", false).0, Ok(None));
    }

    #[test]
    fn request_decoder_honours_custom_limits() {
        let limits = Limits {
            max_bulk_len: 4,
            max_inline_len: 8,
            max_multibulk_len: 2,
            ..Limits::default()
        };
        let decode = |input: &[u8]| RequestDecoder::new(limits).decode(&mut BytesMut::from(input));
        assert_eq!(decode(b"*1\r\n$4\r\nPING\r\n"), Ok(Some(args(&["PING"]))));
        assert_eq!(decode(b"*1\r\n$5\r\n"), Err(DecodeError::InvalidBulkLength));
        assert_eq!(decode(b"*3\r\n"), Err(DecodeError::InvalidMultibulkLength));
        assert_eq!(decode(b"123456789"), Err(DecodeError::TooBigInlineRequest));
        // Negative and zero counts stay "empty request" under any multibulk limit.
        assert_eq!(decode(b"*0\r\n*-1\r\n"), Ok(None));

        // A limit above i64::MAX must not wrap around and reject everything.
        let huge = Limits {
            max_multibulk_len: usize::MAX,
            max_bulk_len: usize::MAX,
            ..Limits::default()
        };
        let mut buf = BytesMut::from(&b"*0\r\n*1\r\n$4\r\nPING\r\n"[..]);
        assert_eq!(
            RequestDecoder::new(huge).decode(&mut buf),
            Ok(Some(args(&["PING"])))
        );
        let mut buf = BytesMut::from(&b"*2147483648\r\n"[..]);
        assert_eq!(
            RequestDecoder::new(huge).decode(&mut buf),
            Err(DecodeError::InvalidMultibulkLength)
        );
    }

    // ---- Split delivery ----

    #[test]
    fn decoders_give_the_same_result_for_every_split_point() {
        let frame: &[u8] =
            b"*4\r\n$5\r\nhello\r\n%1\r\n+k\r\n,1.5\r\n|1\r\n+a\r\n#t\r\n_\r\n=7\r\ntxt:abc\r\n";
        let (want, _) = frame_once(frame);
        let request: &[u8] = b"*2\r\n$4\r\nECHO\r\n$5\r\nhello\r\nECHO \"a b\"\r\n";
        for split in 0..=frame.len() {
            let mut decoder = FrameDecoder::default();
            let mut buf = BytesMut::from(&frame[..split]);
            let first = decoder.decode(&mut buf);
            buf.extend_from_slice(&frame[split..]);
            let got = match first {
                Ok(None) => decoder.decode(&mut buf),
                other => other,
            };
            assert_eq!(got, want.clone(), "split at {split}");
            assert!(buf.is_empty());
        }
        for split in 0..=request.len() {
            let mut decoder = RequestDecoder::default();
            let mut buf = BytesMut::from(&request[..split]);
            let mut got = Vec::new();
            while let Ok(Some(req)) = decoder.decode(&mut buf) {
                got.push(req);
            }
            buf.extend_from_slice(&request[split..]);
            while let Ok(Some(req)) = decoder.decode(&mut buf) {
                got.push(req);
            }
            assert_eq!(got, vec![args(&["ECHO", "hello"]), args(&["ECHO", "a b"])]);
        }
    }

    #[test]
    fn request_decoder_reads_a_one_mib_bulk_fed_in_one_kib_chunks() {
        let payload: Vec<u8> = (0..1024 * 1024).map(|i| (i % 251) as u8).collect();
        let mut input = format!("*2\r\n$3\r\nSET\r\n${}\r\n", payload.len()).into_bytes();
        input.extend_from_slice(&payload);
        input.extend_from_slice(b"\r\n");
        let mut decoder = RequestDecoder::default();
        let mut buf = BytesMut::new();
        let mut got = None;
        for chunk in input.chunks(1024) {
            assert!(got.is_none(), "request finished before its last byte");
            buf.extend_from_slice(chunk);
            got = decoder.decode(&mut buf).unwrap();
        }
        let got = got.unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(&got[1][..], &payload[..]);
        assert!(buf.is_empty());
    }

    #[test]
    fn frame_decoder_reads_a_one_mib_bulk_fed_in_one_kib_chunks() {
        let payload: Vec<u8> = (0..1024 * 1024).map(|i| (i % 253) as u8).collect();
        let mut input = format!("*1\r\n${}\r\n", payload.len()).into_bytes();
        input.extend_from_slice(&payload);
        input.extend_from_slice(b"\r\n");
        let mut decoder = FrameDecoder::default();
        let mut buf = BytesMut::new();
        let mut got = None;
        for chunk in input.chunks(1024) {
            assert!(got.is_none(), "frame finished before its last byte");
            buf.extend_from_slice(chunk);
            got = decoder.decode(&mut buf).unwrap();
        }
        assert_eq!(got, Some(Frame::Array(vec![Frame::Bulk(payload.into())])));
        assert!(buf.is_empty());
    }

    #[test]
    fn decoders_do_not_rescan_a_long_line_fed_one_byte_at_a_time() {
        // 64 KiB fed bytewise: rescanning from the start on every call would be ~2^31 byte
        // comparisons; resuming keeps this linear.
        let line = vec![b'x'; PROTO_INLINE_MAX_SIZE];
        assert_eq!(request_bytewise(&line, false), (Ok(None), line.len()));
        let mut simple = b"+".to_vec();
        simple.extend_from_slice(&line);
        simple.extend_from_slice(b"\r\n");
        let (result, fed) = frame_bytewise(&simple);
        assert_eq!(fed, simple.len());
        assert!(matches!(result, Ok(Some(Frame::Simple(s))) if s.len() == line.len()));
    }
}
