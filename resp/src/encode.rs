//! Frame → bytes, for RESP2 or RESP3 peers. RESP3-only types are downgraded for RESP2 the way
//! Redis's `addReply*` functions do (maps flatten, doubles become bulk strings, booleans become
//! integers, attributes are dropped).

use crate::shortest_double::{double_to_i64, format_shortest_double};
use crate::{Frame, Version};
use bytes::{BufMut, BytesMut};

/// How a server writes its doubles: the form of the release it reproduces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Doubles {
    /// Redis 7.0: a double reply (`addReplyDouble`) is C's `%.17g`, and `d2string` (a
    /// listpack's score) writes an integer within ±2^62 as one and any other number as `%.17g`.
    #[default]
    Redis,
    /// Valkey 8: replies are `d2string`'s, which writes an integer within ±2^62 as one and any
    /// other number in its shortest round-trip form ([`format_shortest_double`], Valkey's
    /// `fpconv_dtoa`): `0.1` where Redis writes `0.10000000000000001`.
    Shortest,
}

impl Doubles {
    /// The text of a double reply (`addReplyDouble`): a RESP3 `,` line, a RESP2 bulk string.
    pub fn reply(self, d: f64) -> String {
        match self {
            Doubles::Redis => format_double(d),
            Doubles::Shortest => self.string(d),
        }
    }

    /// `d2string`: the text of a double kept as a string (a listpack's score, what `ZSCAN`
    /// returns of one): `nan`, `inf`, `-inf`, `0`, `-0`, an integer within ±2^62 as one
    /// (`double2ll`), any other number as `%.17g` (Redis) or in its shortest form (Valkey).
    pub fn string(self, d: f64) -> String {
        if d.is_nan() {
            return "nan".to_string();
        }
        if d.is_infinite() {
            return if d > 0.0 { "inf" } else { "-inf" }.to_string();
        }
        if d == 0.0 {
            return if d.is_sign_negative() { "-0" } else { "0" }.to_string();
        }
        if let Some(v) = double_to_i64(d) {
            return itoa::Buffer::new().format(v).to_string();
        }
        match self {
            Doubles::Redis => format_double(d),
            Doubles::Shortest => format_shortest_double(d),
        }
    }
}

/// Formats a double the way Redis 7.0 replies with it: C's `%.17g`, with `inf`/`-inf`.
pub fn format_double(d: f64) -> String {
    if d.is_nan() {
        return if d.is_sign_negative() { "-nan" } else { "nan" }.to_string();
    }
    if d.is_infinite() {
        return if d > 0.0 { "inf" } else { "-inf" }.to_string();
    }
    if d == 0.0 {
        return if d.is_sign_negative() { "-0" } else { "0" }.to_string();
    }
    const PRECISION: i32 = 17;
    let sci = format!("{:.*e}", (PRECISION - 1) as usize, d);
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if !(-4..PRECISION).contains(&exp) {
        let mantissa = strip_fraction_zeros(mantissa);
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exp.abs())
    } else {
        let fixed = format!("{:.*}", (PRECISION - 1 - exp) as usize, d);
        strip_fraction_zeros(&fixed).to_string()
    }
}

/// Formats a double the way Redis 7.0's `addReplyHumanLongDouble` does (`ld2string` with
/// `LD_STR_HUMAN`): C's `%.17Lf` of the value widened to `long double` (exact, so the exact
/// decimal expansion rounded half to even at 17 fractional digits), trailing zeros and a bare
/// point removed, `-0` written `0`; `inf`/`-inf`.
pub fn format_human_double(d: f64) -> String {
    if d.is_infinite() {
        return if d > 0.0 { "inf" } else { "-inf" }.to_string();
    }
    if d.is_nan() {
        return if d.is_sign_negative() { "-nan" } else { "nan" }.to_string();
    }
    let fixed = format!("{d:.17}");
    let text = strip_fraction_zeros(&fixed);
    if text == "-0" {
        "0".to_string()
    } else {
        text.to_string()
    }
}

fn strip_fraction_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

/// Appends `argv` as a request, an array of bulk strings (what a client sends, and what a
/// master sends its replicas), to `out` (a `BytesMut`, a `Vec<u8>`...).
pub fn encode_command(argv: &[impl AsRef<[u8]>], out: &mut impl BufMut) {
    header(out, b'*', argv.len() as i64);
    for arg in argv {
        bulk(out, arg.as_ref());
    }
}

/// Nesting encoded by recursion; deeper aggregates (a script's reply nests up to about 8 000
/// levels, as Redis's Lua stack allows) are walked with a stack of their own, so encoding never
/// needs more of the thread's stack than these levels take.
const RECURSION_DEPTH: usize = 32;

/// Encodes `frame` for a peer speaking `version`, appending to `out`; doubles as Redis 7.0
/// writes them.
pub fn encode(frame: &Frame, version: Version, out: &mut BytesMut) {
    encode_at(frame, version, Doubles::Redis, out, 0);
}

/// [`encode`] with doubles written in the form `doubles` (a server's compatibility target).
pub fn encode_with(frame: &Frame, version: Version, doubles: Doubles, out: &mut BytesMut) {
    encode_at(frame, version, doubles, out, 0);
}

/// [`encode`] of a frame nested `depth` aggregates deep.
fn encode_at(frame: &Frame, version: Version, doubles: Doubles, out: &mut BytesMut, depth: usize) {
    if depth >= RECURSION_DEPTH && is_aggregate(frame) {
        return encode_deep(frame, version, doubles, out);
    }
    let resp3 = version == Version::Resp3;
    match frame {
        Frame::Simple(s) => line(out, b'+', s),
        Frame::Error(s) => line(out, b'-', s),
        Frame::Integer(i) => header(out, b':', *i),
        Frame::Bulk(b) => bulk(out, b),
        Frame::Null if resp3 => out.put_slice(b"_\r\n"),
        Frame::NullArray if resp3 => out.put_slice(b"_\r\n"),
        Frame::Null => out.put_slice(b"$-1\r\n"),
        Frame::NullArray => out.put_slice(b"*-1\r\n"),
        Frame::Array(items) => aggregate(out, b'*', items, version, doubles, depth),
        Frame::Set(items) => {
            aggregate(
                out,
                if resp3 { b'~' } else { b'*' },
                items,
                version,
                doubles,
                depth,
            );
        }
        Frame::Push(items) => {
            aggregate(
                out,
                if resp3 { b'>' } else { b'*' },
                items,
                version,
                doubles,
                depth,
            );
        }
        Frame::Map(pairs) => {
            map_header(out, pairs.len(), resp3);
            for (k, v) in pairs {
                encode_at(k, version, doubles, out, depth + 1);
                encode_at(v, version, doubles, out, depth + 1);
            }
        }
        Frame::Double(d) => {
            let text = doubles.reply(*d);
            if resp3 {
                line(out, b',', text.as_bytes());
            } else {
                bulk(out, text.as_bytes());
            }
        }
        Frame::HumanDouble(d) => {
            let text = format_human_double(*d);
            if resp3 {
                line(out, b',', text.as_bytes());
            } else {
                bulk(out, text.as_bytes());
            }
        }
        Frame::Boolean(b) if resp3 => out.put_slice(if *b { b"#t\r\n" } else { b"#f\r\n" }),
        Frame::Boolean(b) => header(out, b':', i64::from(*b)),
        Frame::BigNumber(n) if resp3 => line(out, b'(', n),
        Frame::BigNumber(n) => bulk(out, n),
        Frame::Verbatim { format, text } if resp3 => {
            header(out, b'=', (text.len() + 4) as i64);
            out.put_slice(format);
            out.put_u8(b':');
            out.put_slice(text);
            out.put_slice(b"\r\n");
        }
        Frame::Verbatim { text, .. } => bulk(out, text),
        Frame::Attribute { attrs, frame } => {
            if resp3 {
                header(out, b'|', attrs.len() as i64);
                for (k, v) in attrs {
                    encode_at(k, version, doubles, out, depth + 1);
                    encode_at(v, version, doubles, out, depth + 1);
                }
            }
            encode_at(frame, version, doubles, out, depth + 1);
        }
    }
}

fn is_aggregate(frame: &Frame) -> bool {
    matches!(
        frame,
        Frame::Array(_) | Frame::Set(_) | Frame::Push(_) | Frame::Map(_) | Frame::Attribute { .. }
    )
}

fn map_header(out: &mut BytesMut, pairs: usize, resp3: bool) {
    if resp3 {
        header(out, b'%', pairs as i64);
    } else {
        header(out, b'*', pairs as i64 * 2);
    }
}

/// What is left to encode of a deep frame, in [`encode_deep`]'s stack.
enum Pending<'a> {
    Items(std::slice::Iter<'a, Frame>),
    Pairs(std::slice::Iter<'a, (Frame, Frame)>),
    One(&'a Frame),
}

/// [`encode`] with an explicit stack instead of recursion, for frames nested deeper than
/// [`RECURSION_DEPTH`]: the same bytes.
fn encode_deep(frame: &Frame, version: Version, doubles: Doubles, out: &mut BytesMut) {
    let resp3 = version == Version::Resp3;
    let mut pending = vec![Pending::One(frame)];
    while let Some(top) = pending.pop() {
        let frame = match top {
            Pending::One(frame) => frame,
            Pending::Items(mut items) => {
                let Some(item) = items.next() else { continue };
                pending.push(Pending::Items(items));
                item
            }
            Pending::Pairs(mut pairs) => {
                let Some((k, v)) = pairs.next() else { continue };
                pending.push(Pending::Pairs(pairs));
                pending.push(Pending::One(v));
                k
            }
        };
        match frame {
            Frame::Array(items) => {
                header(out, b'*', items.len() as i64);
                pending.push(Pending::Items(items.iter()));
            }
            Frame::Set(items) => {
                header(out, if resp3 { b'~' } else { b'*' }, items.len() as i64);
                pending.push(Pending::Items(items.iter()));
            }
            Frame::Push(items) => {
                header(out, if resp3 { b'>' } else { b'*' }, items.len() as i64);
                pending.push(Pending::Items(items.iter()));
            }
            Frame::Map(pairs) => {
                map_header(out, pairs.len(), resp3);
                pending.push(Pending::Pairs(pairs.iter()));
            }
            Frame::Attribute { attrs, frame } => {
                pending.push(Pending::One(frame));
                if resp3 {
                    header(out, b'|', attrs.len() as i64);
                    pending.push(Pending::Pairs(attrs.iter()));
                }
            }
            // Scalars: the recursive encoder at depth 0 writes them without recursing.
            scalar => encode_at(scalar, version, doubles, out, 0),
        }
    }
}

/// Encodes `frame` into a fresh byte vector.
pub fn encode_to_vec(frame: &Frame, version: Version) -> Vec<u8> {
    let mut out = BytesMut::new();
    encode(frame, version, &mut out);
    out.to_vec()
}

/// How many bytes [`encode`] appends for `frame` under `version`, counted without encoding
/// it: what a server reports as a reply's size (Valkey's `COMMANDLOG` large-reply log).
pub fn encoded_len(frame: &Frame, version: Version) -> usize {
    len_at(frame, version == Version::Resp3, 0)
}

/// [`encoded_len`] of a frame nested `depth` aggregates deep: recursion for the first
/// [`RECURSION_DEPTH`] levels, an explicit stack below them (as [`encode`] does).
fn len_at(frame: &Frame, resp3: bool, depth: usize) -> usize {
    if depth >= RECURSION_DEPTH && is_aggregate(frame) {
        return len_deep(frame, resp3);
    }
    let own = scalar_or_header_len(frame, resp3);
    own + match frame {
        Frame::Array(items) | Frame::Set(items) | Frame::Push(items) => items
            .iter()
            .map(|item| len_at(item, resp3, depth + 1))
            .sum(),
        Frame::Map(pairs) => pairs
            .iter()
            .map(|(k, v)| len_at(k, resp3, depth + 1) + len_at(v, resp3, depth + 1))
            .sum(),
        Frame::Attribute { attrs, frame } => {
            let attrs: usize = if resp3 {
                attrs
                    .iter()
                    .map(|(k, v)| len_at(k, resp3, depth + 1) + len_at(v, resp3, depth + 1))
                    .sum()
            } else {
                0
            };
            attrs + len_at(frame, resp3, depth + 1)
        }
        _ => 0,
    }
}

/// [`len_at`] with an explicit stack, for frames nested deeper than [`RECURSION_DEPTH`].
fn len_deep(frame: &Frame, resp3: bool) -> usize {
    let mut total = 0;
    let mut pending = vec![frame];
    while let Some(frame) = pending.pop() {
        total += scalar_or_header_len(frame, resp3);
        match frame {
            Frame::Array(items) | Frame::Set(items) | Frame::Push(items) => {
                pending.extend(items.iter());
            }
            Frame::Map(pairs) => pending.extend(pairs.iter().flat_map(|(k, v)| [k, v])),
            Frame::Attribute { attrs, frame } => {
                pending.push(frame);
                if resp3 {
                    pending.extend(attrs.iter().flat_map(|(k, v)| [k, v]));
                }
            }
            _ => {}
        }
    }
    total
}

/// The bytes of a scalar frame, or of an aggregate's header alone.
fn scalar_or_header_len(frame: &Frame, resp3: bool) -> usize {
    match frame {
        Frame::Simple(s) | Frame::Error(s) => s.len() + 3,
        Frame::Integer(i) => header_len(*i),
        Frame::Bulk(b) => bulk_len(b.len()),
        Frame::Null | Frame::NullArray if resp3 => 3,
        Frame::Null | Frame::NullArray => 5,
        Frame::Array(items) | Frame::Set(items) | Frame::Push(items) => {
            header_len(items.len() as i64)
        }
        Frame::Map(pairs) if resp3 => header_len(pairs.len() as i64),
        Frame::Map(pairs) => header_len(pairs.len() as i64 * 2),
        Frame::Double(d) => text_len(format_double(*d).len(), resp3),
        Frame::HumanDouble(d) => text_len(format_human_double(*d).len(), resp3),
        Frame::Boolean(_) => 4,
        Frame::BigNumber(n) => text_len(n.len(), resp3),
        Frame::Verbatim { format, text } if resp3 => {
            header_len((text.len() + 4) as i64) + format.len() + 1 + text.len() + 2
        }
        Frame::Verbatim { text, .. } => bulk_len(text.len()),
        Frame::Attribute { attrs, .. } if resp3 => header_len(attrs.len() as i64),
        Frame::Attribute { .. } => 0,
    }
}

/// A type byte, `n` in decimal and CRLF.
fn header_len(n: i64) -> usize {
    itoa::Buffer::new().format(n).len() + 3
}

/// A bulk string of `n` bytes.
fn bulk_len(n: usize) -> usize {
    header_len(n as i64) + n + 2
}

/// A RESP3 one-line frame of `n` bytes, or the bulk string RESP2 gets instead.
fn text_len(n: usize, resp3: bool) -> usize {
    if resp3 {
        n + 3
    } else {
        bulk_len(n)
    }
}

/// A one-line frame; CR and LF inside are replaced by spaces, as Redis does for error and
/// status replies, so a reply can never break the framing.
fn line(out: &mut BytesMut, kind: u8, body: &[u8]) {
    out.put_u8(kind);
    if body.iter().any(|&b| b == b'\r' || b == b'\n') {
        out.extend(
            body.iter()
                .map(|&b| if b == b'\r' || b == b'\n' { b' ' } else { b }),
        );
    } else {
        out.put_slice(body);
    }
    out.put_slice(b"\r\n");
}

fn header(out: &mut impl BufMut, kind: u8, n: i64) {
    out.put_u8(kind);
    out.put_slice(itoa::Buffer::new().format(n).as_bytes());
    out.put_slice(b"\r\n");
}

fn bulk(out: &mut impl BufMut, data: &[u8]) {
    header(out, b'$', data.len() as i64);
    out.put_slice(data);
    out.put_slice(b"\r\n");
}

fn aggregate(
    out: &mut BytesMut,
    kind: u8,
    items: &[Frame],
    version: Version,
    doubles: Doubles,
    depth: usize,
) {
    header(out, kind, items.len() as i64);
    for item in items {
        encode_at(item, version, doubles, out, depth + 1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    /// A frame nested `depth` arrays (of two items) deep around `inner`.
    fn nested(depth: usize, inner: Frame) -> Frame {
        (0..depth).fold(inner, |f, _| Frame::Array(vec![f, Frame::Integer(1)]))
    }

    fn nested_text(depth: usize, inner: &str) -> Vec<u8> {
        let mut s = "*2\r\n".repeat(depth);
        s.push_str(inner);
        s.push_str(&":1\r\n".repeat(depth));
        s.into_bytes()
    }

    #[test]
    fn deep_frames_encode_as_shallow_ones_do() {
        for depth in [
            0,
            1,
            RECURSION_DEPTH - 1,
            RECURSION_DEPTH,
            RECURSION_DEPTH + 1,
            100,
        ] {
            let f = nested(depth, Frame::Bulk(Bytes::from_static(b"x")));
            assert_eq!(
                encode_to_vec(&f, Version::Resp2),
                nested_text(depth, "$1\r\nx\r\n")
            );
            assert_eq!(
                encoded_len(&f, Version::Resp2),
                nested_text(depth, "$1\r\nx\r\n").len()
            );
        }
        // Maps, sets, pushes and attributes below the recursion depth, in both versions.
        let inner = Frame::Attribute {
            attrs: vec![(Frame::Simple(Bytes::from_static(b"a")), Frame::Integer(2))],
            frame: Box::new(Frame::Map(vec![(
                Frame::Set(vec![Frame::Boolean(true)]),
                Frame::Push(vec![Frame::Null]),
            )])),
        };
        for version in [Version::Resp2, Version::Resp3] {
            let shallow = encode_to_vec(&inner, version);
            let deep = encode_to_vec(&nested(RECURSION_DEPTH + 3, inner.clone()), version);
            let mut want = "*2\r\n".repeat(RECURSION_DEPTH + 3).into_bytes();
            want.extend_from_slice(&shallow);
            want.extend_from_slice(":1\r\n".repeat(RECURSION_DEPTH + 3).as_bytes());
            assert_eq!(deep, want, "{version:?}");
            let deep = nested(RECURSION_DEPTH + 3, inner.clone());
            assert_eq!(encoded_len(&deep, version), want.len(), "{version:?}");
        }
    }

    #[test]
    fn encoded_len_counts_every_scalar_as_encode_writes_it() {
        let frames = [
            Frame::Integer(i64::MIN),
            Frame::Integer(-1),
            Frame::Double(f64::INFINITY),
            Frame::Double(f64::NEG_INFINITY),
            Frame::Double(f64::NAN),
            Frame::Double(-0.5e-300),
            Frame::HumanDouble(1.5),
            Frame::HumanDouble(f64::NEG_INFINITY),
            Frame::Simple(Bytes::from_static(b"a\r\nb")),
            Frame::Error(Bytes::from_static(b"ERR x")),
            Frame::Null,
            Frame::NullArray,
            Frame::Boolean(false),
            Frame::Bulk(Bytes::from(vec![b'x'; 12345])),
            Frame::Map(vec![]),
            Frame::Attribute {
                attrs: vec![],
                frame: Box::new(Frame::Set(vec![])),
            },
        ];
        for frame in &frames {
            for version in [Version::Resp2, Version::Resp3] {
                assert_eq!(
                    encoded_len(frame, version),
                    encode_to_vec(frame, version).len(),
                    "{frame:?} {version:?}"
                );
            }
        }
    }

    // What a script's reply may nest to (Lua's stack allows about 8 000 levels), on a thread
    // of 256 KiB: the encoder does not recurse past its first levels.
    #[test]
    fn a_reply_nested_8000_deep_encodes_on_a_small_stack() {
        let handle = std::thread::Builder::new()
            .stack_size(256 << 10)
            .spawn(|| {
                let f = (0..8000).fold(Frame::Array(vec![]), |f, _| Frame::Array(vec![f]));
                let out = encode_to_vec(&f, Version::Resp3);
                // Taken apart level by level: dropping it whole recurses.
                let mut f = f;
                while let Frame::Array(mut items) = f {
                    f = items.pop().unwrap_or(Frame::Null);
                }
                out
            })
            .unwrap();
        let out = handle.join().unwrap();
        let mut want = "*1\r\n".repeat(8000);
        want.push_str("*0\r\n");
        assert_eq!(out, want.into_bytes());
    }

    #[test]
    fn a_command_is_an_array_of_bulk_strings_in_any_buffer() {
        let mut vec = Vec::new();
        encode_command(&[&b"SET"[..], b"k", b""], &mut vec);
        assert_eq!(vec, b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n");
        let mut buf = BytesMut::new();
        encode_command(&[bytes::Bytes::from_static(b"PING")], &mut buf);
        assert_eq!(&buf[..], b"*1\r\n$4\r\nPING\r\n");
    }

    #[test]
    fn doubles_format_like_percent_17g() {
        for (d, want) in [
            (1.5, "1.5"),
            (0.1, "0.10000000000000001"),
            (3.0, "3"),
            (-2.25, "-2.25"),
            (1e20, "1e+20"),
            (1.0e-5, "1.0000000000000001e-05"),
            (123456789012345680.0, "1.2345678901234568e+17"),
            (0.0001, "0.0001"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
            (10.5, "10.5"),
            (12345678901234567.0, "12345678901234568"),
        ] {
            assert_eq!(format_double(d), want, "{d}");
        }
    }

    #[test]
    fn human_doubles_format_like_percent_17_lf_trimmed() {
        // GEOPOS replies of Redis 7.0.15.
        for (d, want) in [
            (13.361389338970184, "13.36138933897018433"),
            (38.115_556_395_496_3, "38.11555639549629859"),
            (-179.99999731779099, "-179.99999731779098511"),
            (85.05112878, "85.0511287799999991"),
            (180.0, "180"),
            (2.682_209_014_892_578e-6, "0.00000268220901489"),
            (-2.682_209_014_892_578e-6, "-0.00000268220901489"),
            (-1e-19, "0"),
            (-0.0, "0"),
            (0.5, "0.5"),
            // A tie at the 18th decimal rounds to even, as glibc's printf does.
            (0.000003814697265625, "0.00000381469726562"),
            (1e20, "100000000000000000000"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
        ] {
            assert_eq!(format_human_double(d), want, "{d}");
        }
        assert_eq!(
            encode_to_vec(&Frame::HumanDouble(180.0), Version::Resp2),
            b"$3\r\n180\r\n"
        );
        assert_eq!(
            encode_to_vec(&Frame::HumanDouble(0.5), Version::Resp3),
            b",0.5\r\n"
        );
    }

    #[test]
    fn resp3_types_downgrade_for_resp2() {
        let map = Frame::Map(vec![(Frame::bulk("a"), Frame::Integer(1))]);
        assert_eq!(
            encode_to_vec(&map, Version::Resp2),
            b"*2\r\n$1\r\na\r\n:1\r\n"
        );
        assert_eq!(
            encode_to_vec(&map, Version::Resp3),
            b"%1\r\n$1\r\na\r\n:1\r\n"
        );
        assert_eq!(
            encode_to_vec(&Frame::Boolean(true), Version::Resp2),
            b":1\r\n"
        );
        assert_eq!(
            encode_to_vec(&Frame::Double(1.5), Version::Resp2),
            b"$3\r\n1.5\r\n"
        );
        assert_eq!(
            encode_to_vec(&Frame::Double(1.5), Version::Resp3),
            b",1.5\r\n"
        );
        assert_eq!(encode_to_vec(&Frame::Null, Version::Resp2), b"$-1\r\n");
        assert_eq!(encode_to_vec(&Frame::NullArray, Version::Resp2), b"*-1\r\n");
        assert_eq!(encode_to_vec(&Frame::NullArray, Version::Resp3), b"_\r\n");
    }

    #[test]
    fn error_lines_never_break_framing() {
        let frame = Frame::error("ERR bad\r\nthing");
        assert_eq!(
            encode_to_vec(&frame, Version::Resp2),
            b"-ERR bad  thing\r\n"
        );
    }
}
