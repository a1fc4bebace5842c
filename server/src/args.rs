//! The argument cursor handlers read their arguments through.

use crate::error::CommandError;
use bytes::Bytes;

/// Cursor over a command's arguments (after the command and subcommand names).
#[derive(Debug)]
pub(crate) struct Args<'a> {
    argv: &'a [Bytes],
    pos: usize,
}

impl<'a> Args<'a> {
    /// A cursor over `argv` starting at index `pos`.
    pub(crate) fn new(argv: &'a [Bytes], pos: usize) -> Self {
        Args { argv, pos }
    }

    /// The whole command line, name included.
    pub(crate) fn argv(&self) -> &'a [Bytes] {
        self.argv
    }

    /// Arguments not read yet.
    pub(crate) fn remaining(&self) -> usize {
        self.argv.len().saturating_sub(self.pos)
    }

    /// Whether every argument was read.
    pub(crate) fn is_empty(&self) -> bool {
        self.remaining() == 0
    }

    /// The rest of the arguments, consumed.
    pub(crate) fn rest(&mut self) -> &'a [Bytes] {
        let rest = self.argv.get(self.pos..).unwrap_or_default();
        self.pos = self.argv.len();
        rest
    }

    /// The next argument, if any.
    pub(crate) fn next(&mut self) -> Option<&'a Bytes> {
        let arg = self.argv.get(self.pos)?;
        self.pos += 1;
        Some(arg)
    }

    /// The next argument without consuming it.
    pub(crate) fn peek(&self) -> Option<&'a Bytes> {
        self.argv.get(self.pos)
    }

    /// The next argument; a missing one is a syntax error.
    pub(crate) fn bytes(&mut self) -> Result<&'a Bytes, CommandError> {
        // Not `ok_or`: the error it builds eagerly is dropped through `CommandError`'s drop
        // glue (a call) on every argument read.
        match self.next() {
            Some(arg) => Ok(arg),
            None => Err(CommandError::Syntax),
        }
    }

    /// The next argument as an i64 (Redis's strict `string2ll`).
    pub(crate) fn i64(&mut self) -> Result<i64, CommandError> {
        parse_i64(self.bytes()?)
    }

    /// Consumes the next argument if it equals `word` ignoring ASCII case.
    pub(crate) fn eat(&mut self, word: &str) -> bool {
        match self.peek() {
            Some(arg) if arg.eq_ignore_ascii_case(word.as_bytes()) => {
                self.pos += 1;
                true
            }
            _ => false,
        }
    }
}

/// Parses an integer argument as Redis does (`ERR value is not an integer or out of range`).
pub(crate) fn parse_i64(arg: &[u8]) -> Result<i64, CommandError> {
    match locksmith_resp::parse_integer(arg) {
        Some(n) => Ok(n),
        None => Err(CommandError::NotInteger),
    }
}

/// Parses an `int` argument as Redis's `getIntFromObjectOrReply` does: `msg` (or the generic
/// integer error) when it is not an integer, `msg` (or Redis's range text) outside `i32`.
pub(crate) fn parse_i32(arg: &[u8], msg: Option<&str>) -> Result<i32, CommandError> {
    let error = |generic: CommandError| msg.map_or(generic, CommandError::err);
    let value = parse_i64(arg).map_err(error)?;
    i32::try_from(value).map_err(|_| {
        error(CommandError::err(format!(
            "value is out of range, value must between {} and {}",
            i32::MIN,
            i32::MAX
        )))
    })
}

/// Parses a float as Redis's `getDoubleFromObject` does (ZADD scores, weights, config values):
/// C's `strtod` syntax over the whole argument (decimal, hexadecimal such as `0x1p3`, `inf`,
/// `infinity`), no leading space, not empty, not NaN, and no overflow or underflow (`1e400` and
/// `1e-400` are refused, as `strtod` sets `ERANGE` for them).
pub(crate) fn parse_f64(arg: &[u8]) -> Option<f64> {
    if arg.first().is_none_or(|b| b.is_ascii_whitespace()) {
        return None;
    }
    match strtod(arg)? {
        (value, false) if !value.is_nan() => Some(value),
        _ => None,
    }
}

/// Parses a score range bound as Redis's `zslParseRange` does: `strtod` over the whole argument,
/// leading spaces skipped, an empty string is 0, out-of-range values saturate (`1e400` is
/// `inf`), NaN refused.
pub(crate) fn parse_f64_saturating(arg: &[u8]) -> Option<f64> {
    let start = arg
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(arg.len());
    let text = arg.get(start..).unwrap_or_default();
    if text.is_empty() {
        return Some(0.0);
    }
    let (value, _) = strtod(text)?;
    (!value.is_nan()).then_some(value)
}

/// C's `strtod` over all of `text` (no trailing bytes allowed): the value and whether `strtod`
/// would report a range error (a finite literal that overflows to infinity, or a non-zero one
/// that underflows to zero).
pub(crate) fn strtod(text: &[u8]) -> Option<(f64, bool)> {
    let (negative, body) = match text.split_first()? {
        (b'-', rest) => (true, rest),
        (b'+', rest) => (false, rest),
        _ => (false, text),
    };
    let (magnitude, range_error) =
        if body.len() > 1 && body[0] == b'0' && body[1].eq_ignore_ascii_case(&b'x') {
            hex_float(&body[2..])?
        } else {
            let body = std::str::from_utf8(body).ok()?;
            // Rust's parser takes the same decimal, `inf`, `infinity` and `nan` spellings as strtod
            // but no sign here (it was split off above) and no hexadecimal.
            if body.starts_with(['+', '-']) {
                return None;
            }
            let value: f64 = body.parse().ok()?;
            let literal_inf = body.bytes().any(|b| b.eq_ignore_ascii_case(&b'i'));
            let mantissa = body.split(['e', 'E']).next().unwrap_or_default();
            let nonzero = mantissa.bytes().any(|b| (b'1'..=b'9').contains(&b));
            let range_error =
                (value.is_infinite() && !literal_inf) || (value == 0.0 && nonzero && !literal_inf);
            (value, range_error)
        };
    Some((if negative { -magnitude } else { magnitude }, range_error))
}

/// The hexadecimal float after `0x`: hex digits with an optional point, then an optional binary
/// exponent `p[+-]digits`; at least one digit.
fn hex_float(text: &[u8]) -> Option<(f64, bool)> {
    let (mantissa, exponent) = match text.iter().position(|b| b.eq_ignore_ascii_case(&b'p')) {
        Some(at) => (&text[..at], Some(&text[at + 1..])),
        None => (text, None),
    };
    let mut value = 0.0f64;
    let mut scale = 0i64;
    let mut digits = 0usize;
    let mut seen_point = false;
    for &b in mantissa {
        match b {
            b'.' if !seen_point => seen_point = true,
            _ => {
                let d = char::from(b).to_digit(16)?;
                value = value * 16.0 + f64::from(d);
                digits += 1;
                if seen_point {
                    scale -= 4;
                }
            }
        }
    }
    if digits == 0 {
        return None;
    }
    let exp = match exponent {
        None => 0,
        Some(e) => {
            let e = std::str::from_utf8(e).ok()?;
            let digits = e.strip_prefix(['+', '-']).unwrap_or(e);
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            // A huge exponent saturates: the result is then 0 or infinity either way.
            e.parse::<i64>().unwrap_or(if e.starts_with('-') {
                -1_000_000
            } else {
                1_000_000
            })
        }
    };
    let total = exp.saturating_add(scale).clamp(-100_000, 100_000);
    let total = i32::try_from(total).unwrap_or(0);
    let nonzero = value != 0.0;
    // Two steps, so that a large mantissa with a very negative exponent does not underflow early.
    let result = value * 2f64.powi(total / 2) * 2f64.powi(total - total / 2);
    let range_error = result.is_infinite() || (result == 0.0 && nonzero);
    Some((result, range_error))
}

/// The most elements a reply of random picks with repetition may hold (SRANDMEMBER, HRANDFIELD
/// and ZRANDMEMBER with a negative count). Redis has no such bound and builds the reply until the
/// machine runs out of memory; a server shared by a test run answers an error instead.
pub(crate) const MAX_RANDOM_PICKS: u64 = 1 << 24;

/// The count argument of SRANDMEMBER, HRANDFIELD and ZRANDMEMBER: an integer in
/// `-i64::MAX..=i64::MAX`, with Redis's `getRangeLongFromObjectOrReply` text otherwise.
pub(crate) fn random_count(arg: &[u8]) -> Result<i64, CommandError> {
    match parse_i64(arg)? {
        i64::MIN => Err(CommandError::err(format!(
            "value is out of range, value must between {} and {}",
            -i64::MAX,
            i64::MAX
        ))),
        count => Ok(count),
    }
}

/// How many picks a negative random count asks for, refused above [`MAX_RANDOM_PICKS`]
/// (`picks_per_element` is 2 where each pick replies with a field and its value).
pub(crate) fn repeated_picks(count: i64, picks_per_element: u64) -> Result<usize, CommandError> {
    let picks = count.unsigned_abs();
    if picks.saturating_mul(picks_per_element) > MAX_RANDOM_PICKS {
        return Err(CommandError::err(format!(
            "value is out of range, a negative count may ask for at most {MAX_RANDOM_PICKS} \
             reply elements"
        )));
    }
    usize::try_from(picks).map_err(|_| CommandError::err("value is out of range"))
}

/// C's `atoi`: optional spaces and sign, then digits, whatever follows.
pub(crate) fn atoi(s: &[u8]) -> i64 {
    let s = s.trim_ascii_start();
    let (negative, digits) = match s.first() {
        Some(b'-') => (true, s.get(1..).unwrap_or_default()),
        Some(b'+') => (false, s.get(1..).unwrap_or_default()),
        _ => (false, s),
    };
    let n = digits
        .iter()
        .take_while(|c| c.is_ascii_digit())
        .fold(0i64, |n, c| {
            n.saturating_mul(10).saturating_add(i64::from(c - b'0'))
        });
    if negative {
        -n
    } else {
        n
    }
}

#[cfg(test)]
mod tests {
    use super::{atoi, parse_f64, parse_f64_saturating};

    #[test]
    fn atoi_reads_leading_digits_as_c_does() {
        assert_eq!(atoi(b"1"), 1);
        assert_eq!(atoi(b"0"), 0);
        assert_eq!(atoi(b"12abc"), 12);
        assert_eq!(atoi(b"abc"), 0);
        assert_eq!(atoi(b"-3"), -3);
        assert_eq!(atoi(b"+7"), 7);
        assert_eq!(atoi(b""), 0);
        assert_eq!(atoi(b"  42"), 42);
    }

    #[test]
    fn floats_parse_as_strtod_with_redis_range_checks() {
        let ok = |s: &str| parse_f64(s.as_bytes());
        assert_eq!(ok("1.5"), Some(1.5));
        assert_eq!(ok("-2"), Some(-2.0));
        assert_eq!(ok("+.5"), Some(0.5));
        assert_eq!(ok("1e3"), Some(1000.0));
        assert_eq!(ok("inf"), Some(f64::INFINITY));
        assert_eq!(ok("-Infinity"), Some(f64::NEG_INFINITY));
        assert_eq!(ok("0x10"), Some(16.0));
        assert_eq!(ok("0x1p3"), Some(8.0));
        assert_eq!(ok("-0x.8"), Some(-0.5));
        assert_eq!(ok("0"), Some(0.0));
        assert_eq!(ok("0e400"), Some(0.0));
        assert_eq!(ok("4.9e-324"), Some(4.9e-324));
        for bad in [
            "", " 1", "1 ", "nan", "-nan", "1e400", "-1e400", "1e-400", "0x", "0xg", "1e", ".",
            "+-1", "--1", "infinit", "0x1p", "0x1p+-2", "1,5",
        ] {
            assert_eq!(ok(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn range_bounds_saturate_and_skip_leading_space() {
        let b = |s: &str| parse_f64_saturating(s.as_bytes());
        assert_eq!(b("1e400"), Some(f64::INFINITY));
        assert_eq!(b("-1e400"), Some(f64::NEG_INFINITY));
        assert_eq!(b("  2"), Some(2.0));
        assert_eq!(b(""), Some(0.0));
        assert_eq!(b("nan"), None);
        assert_eq!(b("2 "), None);
    }
}
