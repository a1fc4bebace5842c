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
pub(crate) fn split_inline_args(line: &[u8]) -> Option<Vec<Bytes>> {
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

    /// Decodes the next complete request from `buf`, consuming its bytes.
    ///
    /// Returns `Ok(None)` when more bytes are needed. Empty requests (`*0`, `*-1`, blank inline
    /// lines) are skipped, as Redis skips them.
    ///
    /// # Errors
    ///
    /// A [`DecodeError`] whose text is what Redis replies after `Protocol error: `; the
    /// connection should then be closed.
    pub fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<Vec<Bytes>>, DecodeError> {
        loop {
            if self.pending == 0 {
                let Some(&first) = buf.first() else {
                    return Ok(None);
                };
                if first != b'*' {
                    match self.decode_inline(buf)? {
                        Some(args) if args.is_empty() => continue,
                        other => return Ok(other),
                    }
                }
                let Some(cr) = find_byte(buf, self.scanned.max(1), b'\r') else {
                    if buf.len() > self.limits.max_inline_len {
                        return Err(DecodeError::TooBigMultibulkCount);
                    }
                    self.scanned = buf.len();
                    return Ok(None);
                };
                if cr + 2 > buf.len() {
                    self.scanned = cr;
                    return Ok(None);
                }
                let count = buf
                    .get(1..cr)
                    .and_then(parse_strict_i64)
                    .filter(|&n| n <= i64::from(i32::MAX))
                    .ok_or(DecodeError::InvalidMultibulkLength)?;
                if count > self.limits.max_multibulk_len as i64 {
                    return Err(DecodeError::InvalidMultibulkLength);
                }
                if count > 10 && self.auth_required {
                    return Err(DecodeError::UnauthenticatedMultibulkLength);
                }
                buf.advance(cr + 2);
                self.scanned = 0;
                if count <= 0 {
                    continue;
                }
                self.pending = count as usize;
            }
            while self.pending > 0 {
                let len = match self.bulk_len {
                    Some(len) => len,
                    None => {
                        let Some(cr) = find_byte(buf, self.scanned, b'\r') else {
                            if buf.len() > self.limits.max_inline_len {
                                return Err(DecodeError::TooBigBulkCount);
                            }
                            self.scanned = buf.len();
                            return Ok(None);
                        };
                        if cr + 2 > buf.len() {
                            self.scanned = cr;
                            return Ok(None);
                        }
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
                if buf.len() < len + 2 {
                    return Ok(None);
                }
                self.args.push(buf.split_to(len).freeze());
                // Like Redis, the two bytes after the payload are skipped unchecked.
                buf.advance(2);
                self.bulk_len = None;
                self.pending -= 1;
            }
            return Ok(Some(std::mem::take(&mut self.args)));
        }
    }

    fn decode_inline(&mut self, buf: &mut BytesMut) -> Result<Option<Vec<Bytes>>, DecodeError> {
        let Some(nl) = find_byte(buf, self.scanned, b'\n') else {
            if buf.len() > self.limits.max_inline_len {
                return Err(DecodeError::TooBigInlineRequest);
            }
            self.scanned = buf.len();
            return Ok(None);
        };
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
            let top = self.stack.last_mut()?;
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
            if buf.len() < len + 2 {
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
            b'_' => Some(Frame::Null),
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
                } else if n == 0 {
                    Some(match kind {
                        b'*' => Frame::Array(Vec::new()),
                        b'~' => Frame::Set(Vec::new()),
                        b'>' => Frame::Push(Vec::new()),
                        b'%' => Frame::Map(Vec::new()),
                        _ => return Err(DecodeError::InvalidValue("attribute")),
                    })
                } else {
                    if self.stack.len() >= self.limits.max_depth {
                        return Err(DecodeError::TooDeep);
                    }
                    let (kind, remaining) = match kind {
                        b'*' => (AggregateKind::Array, n as usize),
                        b'~' => (AggregateKind::Set, n as usize),
                        b'>' => (AggregateKind::Push, n as usize),
                        b'%' => (AggregateKind::Map, n as usize * 2),
                        _ => (AggregateKind::Attribute, n as usize * 2),
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

/// What one decoding step achieved.
enum Step {
    NeedMore,
    /// An aggregate or bulk header was consumed.
    Opened,
    Frame(Frame),
}

fn parse_double(line: &[u8]) -> Result<f64, DecodeError> {
    let text = std::str::from_utf8(line).map_err(|_| DecodeError::InvalidValue("double"))?;
    match text {
        "inf" | "+inf" => Ok(f64::INFINITY),
        "-inf" => Ok(f64::NEG_INFINITY),
        "nan" | "-nan" => Ok(f64::NAN),
        _ => text
            .parse::<f64>()
            .map_err(|_| DecodeError::InvalidValue("double")),
    }
}
