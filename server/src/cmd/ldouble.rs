//! x87 80-bit `long double` arithmetic, as Redis's INCRBYFLOAT and HINCRBYFLOAT compute:
//! `strtold` parsing (via `string2ld`), one addition rounded to a 64-bit mantissa, and
//! `ld2string(..., LD_STR_HUMAN)` formatting (`%.17Lf`, trailing zeros trimmed).
//!
//! Computed exactly with big integers, so `INCRBYFLOAT k 0.1` on `10.5` gives `10.6` as on
//! Redis (a plain `f64` would print `10.59999999999999964`).

use num_bigint::{BigInt, BigUint, Sign};

/// Mantissa bits of an x87 extended double (explicit integer bit).
const MANT_BITS: u64 = 64;
/// Largest binary exponent of a normal value (value = 1.x * 2^exp).
const MAX_EXP: i64 = 16383;
/// Smallest binary exponent of a normal value.
const MIN_EXP: i64 = -16382;
/// Redis's `MAX_LONG_DOUBLE_CHARS`.
const MAX_CHARS: usize = 5 * 1024;

/// A finite `long double`: `(-1)^neg * mant * 2^exp`, or zero when `mant` is 0.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LongDouble {
    neg: bool,
    mant: u64,
    exp: i64,
}

/// Result of an operation that may leave the finite range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Ld {
    /// A finite value.
    Finite(LongDouble),
    /// ±infinity (overflow or an `inf` literal).
    Inf,
}

impl LongDouble {
    /// Zero with sign.
    fn zero(neg: bool) -> Self {
        LongDouble {
            neg,
            mant: 0,
            exp: 0,
        }
    }

    /// Exactly `v`.
    pub(crate) fn from_i64(v: i64) -> Self {
        round(v < 0, BigUint::from(v.unsigned_abs()), 0, false)
            .and_then(|r| match r {
                Ld::Finite(f) => Some(f),
                Ld::Inf => None,
            })
            .unwrap_or_else(|| LongDouble::zero(false))
    }

    /// Parses like Redis's `string2ld`: `None` for anything `strtold` would not consume
    /// entirely, leading whitespace, NaN, overflow, or underflow to zero. `Some(Ld::Inf)` for an
    /// infinity literal.
    pub(crate) fn parse(s: &[u8]) -> Option<Ld> {
        if s.is_empty() || s.len() >= MAX_CHARS || s[0].is_ascii_whitespace() {
            return None;
        }
        let (neg, body) = match s[0] {
            b'-' => (true, &s[1..]),
            b'+' => (false, &s[1..]),
            _ => (false, s),
        };
        let lower = body.to_ascii_lowercase();
        if lower == b"inf" || lower == b"infinity" {
            return Some(Ld::Inf);
        }
        let (digits, exp, base_bits) = if lower.starts_with(b"0x") {
            parse_hex(&lower[2..])?
        } else {
            parse_dec(&lower)?
        };
        if digits.bits() == 0 {
            return Some(Ld::Finite(LongDouble::zero(neg)));
        }
        let r = if base_bits {
            round(neg, digits, exp, false)?
        } else {
            decimal_to_ld(neg, digits, exp)?
        };
        match r {
            Ld::Inf => None,
            // strtold sets ERANGE when a non-zero literal rounds to zero: rejected.
            Ld::Finite(f) if f.mant == 0 => None,
            finite => Some(finite),
        }
    }

    /// `self + other`, rounded to nearest-even; `Ld::Inf` on overflow.
    pub(crate) fn add(&self, other: &LongDouble) -> Ld {
        if self.mant == 0 && other.mant == 0 {
            return Ld::Finite(LongDouble::zero(self.neg && other.neg));
        }
        if self.mant == 0 {
            return Ld::Finite(other.clone());
        }
        if other.mant == 0 {
            return Ld::Finite(self.clone());
        }
        let (hi, lo) = if self.exp >= other.exp {
            (self, other)
        } else {
            (other, self)
        };
        // Far apart: the smaller is below half an ulp of the larger, which rounds back to it.
        // (Both are normalized to 64-bit mantissas, so compare top bit positions.)
        let top = |v: &LongDouble| v.exp + 64 - i64::from(v.mant.leading_zeros());
        if top(hi) - top(lo) > 140 {
            return Ld::Finite(hi.clone());
        }
        let base = lo.exp;
        let signed = |v: &LongDouble| {
            let mag = BigInt::from(v.mant) << ((v.exp - base) as usize);
            if v.neg {
                -mag
            } else {
                mag
            }
        };
        let sum = signed(hi) + signed(lo);
        let (sign, mag) = sum.into_parts();
        if mag.bits() == 0 {
            // x + (-x) is +0 under round-to-nearest.
            return Ld::Finite(LongDouble::zero(false));
        }
        round(sign == Sign::Minus, mag, base, false).unwrap_or(Ld::Inf)
    }

    /// `ld2string(..., LD_STR_HUMAN)`: `%.17Lf`, trailing zeros (and a bare `.`) removed,
    /// `-0` shown as `0`.
    pub(crate) fn to_human(&self) -> String {
        let scale = BigUint::from(10u32).pow(17);
        let scaled = if self.exp >= 0 {
            (BigUint::from(self.mant) << (self.exp as usize)) * &scale
        } else {
            let num = BigUint::from(self.mant) * &scale;
            let shift = (-self.exp) as usize;
            let q: BigUint = &num >> shift;
            let rem = &num - (&q << shift);
            let half = BigUint::from(1u32) << (shift - 1);
            if rem > half || (rem == half && q.bit(0)) {
                q + 1u32
            } else {
                q
            }
        };
        let digits = scaled.to_str_radix(10);
        let digits = format!("{digits:0>18}");
        let (int, frac) = digits.split_at(digits.len() - 17);
        let frac = frac.trim_end_matches('0');
        let mut out = String::new();
        if self.neg {
            out.push('-');
        }
        out.push_str(int);
        if !frac.is_empty() {
            out.push('.');
            out.push_str(frac);
        }
        if out == "-0" {
            out = "0".into();
        }
        out
    }
}

/// Decimal digits with an optional fraction and exponent; (integer of all digits, power of
/// ten, false).
fn parse_dec(s: &[u8]) -> Option<(BigUint, i64, bool)> {
    let mut i = 0;
    let mut digits = Vec::new();
    let mut frac_digits: i64 = 0;
    let mut seen_dot = false;
    let mut any = false;
    while i < s.len() {
        match s[i] {
            c @ b'0'..=b'9' => {
                any = true;
                digits.push(c);
                if seen_dot {
                    frac_digits += 1;
                }
            }
            b'.' if !seen_dot => seen_dot = true,
            _ => break,
        }
        i += 1;
    }
    if !any {
        return None;
    }
    let mut exp: i64 = 0;
    if i < s.len() {
        if s[i] != b'e' {
            return None;
        }
        exp = parse_exp(&s[i + 1..])?;
    }
    let n = BigUint::parse_bytes(&digits, 10)?;
    Some((n, exp.saturating_sub(frac_digits), false))
}

/// Hex digits with an optional fraction and `p` exponent; (integer, power of two, true).
fn parse_hex(s: &[u8]) -> Option<(BigUint, i64, bool)> {
    let mut i = 0;
    let mut digits = Vec::new();
    let mut frac_digits: i64 = 0;
    let mut seen_dot = false;
    while i < s.len() {
        match s[i] {
            c if c.is_ascii_hexdigit() => {
                digits.push(c);
                if seen_dot {
                    frac_digits += 1;
                }
            }
            b'.' if !seen_dot => seen_dot = true,
            _ => break,
        }
        i += 1;
    }
    if digits.is_empty() {
        return None;
    }
    let mut exp: i64 = 0;
    if i < s.len() {
        if s[i] != b'p' {
            return None;
        }
        exp = parse_exp(&s[i + 1..])?;
    }
    let n = BigUint::parse_bytes(&digits, 16)?;
    Some((n, exp.saturating_sub(frac_digits.saturating_mul(4)), true))
}

/// `[+-]digits`, saturating far beyond any representable exponent.
fn parse_exp(s: &[u8]) -> Option<i64> {
    let (neg, d) = match s.first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if d.is_empty() || !d.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut v: i64 = 0;
    for &c in d {
        v = (v * 10 + i64::from(c - b'0')).min(1_000_000_000);
    }
    Some(if neg { -v } else { v })
}

/// `n * 10^exp10` rounded to a long double.
fn decimal_to_ld(neg: bool, n: BigUint, exp10: i64) -> Option<Ld> {
    // Magnitude bounds: 10^4933 overflows, below 10^-4951 (denormal min) rounds to zero.
    let ndigits = n.to_str_radix(10).len() as i64;
    if ndigits + exp10 > 4940 {
        return Some(Ld::Inf);
    }
    if ndigits + exp10 < -4960 {
        return Some(Ld::Finite(LongDouble::zero(neg)));
    }
    if exp10 >= 0 {
        let v = n * BigUint::from(10u32).pow(exp10 as u32);
        return round(neg, v, 0, false);
    }
    let den = BigUint::from(10u32).pow((-exp10) as u32);
    // Enough quotient bits for a 64-bit mantissa plus guard bits.
    let shift = (MANT_BITS as i64 + 3 + den.bits() as i64 - n.bits() as i64).max(0);
    let num = n << (shift as usize);
    let q = &num / &den;
    let sticky = &q * &den != num;
    round(neg, q, -shift, sticky)
}

/// Rounds `n * 2^exp` (plus a sticky fraction below `n`'s last bit) to nearest-even with a
/// 64-bit mantissa. Values below the normal range lose precision as denormals do.
fn round(neg: bool, n: BigUint, exp: i64, sticky: bool) -> Option<Ld> {
    let bits = n.bits() as i64;
    if bits == 0 {
        return Some(Ld::Finite(LongDouble::zero(neg)));
    }
    // The value's leading bit is 2^(exp + bits - 1).
    let lead = exp + bits - 1;
    let mut keep = MANT_BITS as i64;
    if lead < MIN_EXP {
        // Denormal: fewer mantissa bits remain.
        keep -= MIN_EXP - lead;
        if keep < 0 {
            return Some(Ld::Finite(LongDouble::zero(neg)));
        }
    }
    let drop = bits - keep;
    let (mut mant, mut e) = if drop <= 0 {
        (n << ((-drop) as usize), exp + drop)
    } else {
        let drop_u = drop as usize;
        let q: BigUint = &n >> drop_u;
        let rem = &n - (&q << drop_u);
        let half = BigUint::from(1u32) << (drop_u - 1);
        let up = rem > half || (rem == half && (sticky || q.bit(0)));
        (if up { q + 1u32 } else { q }, exp + drop)
    };
    if mant.bits() as i64 > MANT_BITS as i64 {
        mant >>= 1;
        e += 1;
    }
    if mant.bits() == 0 {
        return Some(Ld::Finite(LongDouble::zero(neg)));
    }
    let lead = e + mant.bits() as i64 - 1;
    if lead > MAX_EXP {
        return Some(Ld::Inf);
    }
    let digits = mant.to_u64_digits();
    let m = digits.first().copied().unwrap_or(0);
    Some(Ld::Finite(LongDouble {
        neg,
        mant: m,
        exp: e,
    }))
}

/// `INCRBYFLOAT`'s arithmetic on text: `Err(true)` if either is not a valid float,
/// `Err(false)` if the sum is infinite.
pub(crate) fn incr_text(current: &[u8], incr: &[u8]) -> Result<String, bool> {
    let a = LongDouble::parse(current).ok_or(true)?;
    let b = LongDouble::parse(incr).ok_or(true)?;
    add_values(a, b).ok_or(false)
}

/// Adds two parsed values; `None` if the sum is infinite.
pub(crate) fn add_values(a: Ld, b: Ld) -> Option<String> {
    match (a, b) {
        (Ld::Finite(a), Ld::Finite(b)) => match a.add(&b) {
            Ld::Finite(s) => Some(s.to_human()),
            Ld::Inf => None,
        },
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn incr(a: &str, b: &str) -> String {
        incr_text(a.as_bytes(), b.as_bytes()).unwrap_or_else(|e| format!("err {e}"))
    }

    #[test]
    fn matches_redis_long_double_outputs() {
        assert_eq!(incr("10.5", "0.1"), "10.6");
        assert_eq!(incr("0", "3.0e3"), "3000");
        assert_eq!(incr("0.1", "0.2"), "0.3");
        assert_eq!(incr("5.0e3", "2.0e2"), "5200");
        assert_eq!(incr("10", "-10"), "0");
        assert_eq!(incr("-0.0", "0"), "0");
        assert_eq!(incr("1", "0x10"), "17");
        assert_eq!(incr("1", "inf"), "err false");
        assert_eq!(incr("1", "nan"), "err true");
        assert_eq!(incr("1", " 1"), "err true");
        assert_eq!(incr("1", "1e"), "err true");
        assert_eq!(incr("1", "1e-99999"), "err true");
        assert_eq!(incr("1", "1e99999"), "err true");
        assert_eq!(incr("1", "1.5e4932"), "err true");
        assert_eq!(incr("1e4932", "1e4932"), "err false");
    }
}
