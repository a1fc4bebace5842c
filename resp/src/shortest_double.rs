//! Valkey's shortest round-trip form of doubles: our port of its `deps/fpconv/fpconv_dtoa.c`
//! (night-shift's `fpconv`, Grisu2 after Florian Loitsch's "Printing Floating-Point Numbers
//! Quickly and Accurately with Integers", 2010), which Valkey 8 writes doubles with where
//! Redis 7.0 writes C's `%.17g`, and the rules around it (`d2string`, `double2ll`).
//!
//! Grisu2 finds digits that read back as the same double, and almost always the fewest: it
//! can give a longer form (`1e23` is `99999999999999990000000`), and so does valkey-server,
//! which is why this is a port of its steps and not any shortest-form algorithm. Its output
//! rules: an integer of up to 7 digits past its significant ones is written plainly
//! (`100000000000000000000` needs 20, so `1e+20`); a fraction as a decimal when its exponent
//! is above -7 (`0.000001`, then `1e-7`) or the number is at least 1 with fewer than four
//! integer digits; otherwise exponent notation without padding (`1.5e+300`, `1e-7`); `-0`,
//! `inf`, `-inf`, `nan`, `-nan`.

/// `fracmask`: the stored significand.
const FRACMASK: u64 = 0x000F_FFFF_FFFF_FFFF;
/// `expmask`: the biased exponent.
const EXPMASK: u64 = 0x7FF0_0000_0000_0000;
/// `hiddenbit`: the implicit leading one of a normal double.
const HIDDENBIT: u64 = 0x0010_0000_0000_0000;
/// `signmask`.
const SIGNMASK: u64 = 0x8000_0000_0000_0000;
/// `expbias`: the exponent bias with the significand taken as an integer.
const EXPBIAS: i32 = 1023 + 52;

/// `tens`: 10^19 down to 10^0.
const TENS: [u64; 20] = [
    10_000_000_000_000_000_000,
    1_000_000_000_000_000_000,
    100_000_000_000_000_000,
    10_000_000_000_000_000,
    1_000_000_000_000_000,
    100_000_000_000_000,
    10_000_000_000_000,
    1_000_000_000_000,
    100_000_000_000,
    10_000_000_000,
    1_000_000_000,
    100_000_000,
    10_000_000,
    1_000_000,
    100_000,
    10_000,
    1_000,
    100,
    10,
    1,
];

/// `npowers`, `steppowers`, `firstpower`: the cached powers are 10^-348, 10^-340, ... 10^340.
const FIRSTPOWER: i32 = -348;
const STEPPOWERS: i32 = 8;
const NPOWERS: i32 = 87;
/// `expmin`, `expmax`: where a product's binary exponent must land.
const EXPMIN: i32 = -60;
const EXPMAX: i32 = -32;

/// `powers_ten` (`fpconv_powers.h`): 10^(-348 + 8i) as a normalized 64-bit significand and a
/// binary exponent.
const POWERS_TEN: [(u64, i32); 87] = [
    (18054884314459144840, -1220),
    (13451937075301367670, -1193),
    (10022474136428063862, -1166),
    (14934650266808366570, -1140),
    (11127181549972568877, -1113),
    (16580792590934885855, -1087),
    (12353653155963782858, -1060),
    (18408377700990114895, -1034),
    (13715310171984221708, -1007),
    (10218702384817765436, -980),
    (15227053142812498563, -954),
    (11345038669416679861, -927),
    (16905424996341287883, -901),
    (12595523146049147757, -874),
    (9384396036005875287, -847),
    (13983839803942852151, -821),
    (10418772551374772303, -794),
    (15525180923007089351, -768),
    (11567161174868858868, -741),
    (17236413322193710309, -715),
    (12842128665889583758, -688),
    (9568131466127621947, -661),
    (14257626930069360058, -635),
    (10622759856335341974, -608),
    (15829145694278690180, -582),
    (11793632577567316726, -555),
    (17573882009934360870, -529),
    (13093562431584567480, -502),
    (9755464219737475723, -475),
    (14536774485912137811, -449),
    (10830740992659433045, -422),
    (16139061738043178685, -396),
    (12024538023802026127, -369),
    (17917957937422433684, -343),
    (13349918974505688015, -316),
    (9946464728195732843, -289),
    (14821387422376473014, -263),
    (11042794154864902060, -236),
    (16455045573212060422, -210),
    (12259964326927110867, -183),
    (18268770466636286478, -157),
    (13611294676837538539, -130),
    (10141204801825835212, -103),
    (15111572745182864684, -77),
    (11258999068426240000, -50),
    (16777216000000000000, -24),
    (12500000000000000000, 3),
    (9313225746154785156, 30),
    (13877787807814456755, 56),
    (10339757656912845936, 83),
    (15407439555097886824, 109),
    (11479437019748901445, 136),
    (17105694144590052135, 162),
    (12744735289059618216, 189),
    (9495567745759798747, 216),
    (14149498560666738074, 242),
    (10542197943230523224, 269),
    (15709099088952724970, 295),
    (11704190886730495818, 322),
    (17440603504673385349, 348),
    (12994262207056124023, 375),
    (9681479787123295682, 402),
    (14426529090290212157, 428),
    (10748601772107342003, 455),
    (16016664761464807395, 481),
    (11933345169920330789, 508),
    (17782069995880619868, 534),
    (13248674568444952270, 561),
    (9871031767461413346, 588),
    (14708983551653345445, 614),
    (10959046745042015199, 641),
    (16330252207878254650, 667),
    (12166986024289022870, 694),
    (18130221999122236476, 720),
    (13508068024458167312, 747),
    (10064294952495520794, 774),
    (14996968138956309548, 800),
    (11173611982879273257, 827),
    (16649979327439178909, 853),
    (12405201291620119593, 880),
    (9242595204427927429, 907),
    (13772540099066387757, 933),
    (10261342003245940623, 960),
    (15290591125556738113, 986),
    (11392378155556871081, 1013),
    (16975966327722178521, 1039),
    (12648080533535911531, 1066),
];

/// A "do-it-yourself floating point" value: `frac * 2^exp` (`Fp`).
#[derive(Debug, Clone, Copy)]
struct Fp {
    frac: u64,
    exp: i32,
}

/// `build_fp`: a finite double's significand and exponent (subnormals without the hidden bit).
fn build_fp(d: f64) -> Fp {
    let bits = d.to_bits();
    let frac = bits & FRACMASK;
    let exp = ((bits & EXPMASK) >> 52) as i32;
    if exp != 0 {
        Fp {
            frac: frac + HIDDENBIT,
            exp: exp - EXPBIAS,
        }
    } else {
        Fp {
            frac,
            exp: -EXPBIAS + 1,
        }
    }
}

/// `normalize`: shifts a non-zero significand up until its top bit is set.
fn normalize(fp: Fp) -> Fp {
    // The C shifts one bit at a time up to the hidden bit, then 11 more: as many as the
    // leading zeros. `fp.frac` is never 0 here (zero is written before Grisu runs).
    let shift = fp.frac.leading_zeros() % 64;
    Fp {
        frac: fp.frac << shift,
        exp: fp.exp - shift as i32,
    }
}

/// `get_normalized_boundaries`: the midpoints to the neighbouring doubles, `(lower, upper)`,
/// on the exponent of the normalized upper one.
fn normalized_boundaries(fp: Fp) -> (Fp, Fp) {
    let mut upper = Fp {
        frac: (fp.frac << 1) + 1,
        exp: fp.exp - 1,
    };
    // Up to bit 53, then 10 more: the upper boundary's significand fills 64 bits.
    let to_bit_53 = upper.frac.leading_zeros().saturating_sub(10);
    upper.frac <<= to_bit_53;
    upper.exp -= to_bit_53 as i32;
    let u_shift = 64 - 52 - 2;
    upper.frac <<= u_shift;
    upper.exp -= u_shift;
    // The gap below a power of two is half the gap above it.
    let l_shift = if fp.frac == HIDDENBIT { 2 } else { 1 };
    let mut lower = Fp {
        frac: (fp.frac << l_shift) - 1,
        exp: fp.exp - l_shift,
    };
    lower.frac = lower
        .frac
        .checked_shl((lower.exp - upper.exp) as u32)
        .unwrap_or(0);
    lower.exp = upper.exp;
    (lower, upper)
}

/// `multiply`: the high 64 bits of the 128-bit product, rounded.
fn multiply(a: Fp, b: Fp) -> Fp {
    const LOMASK: u64 = 0x0000_0000_FFFF_FFFF;
    let ah_bl = (a.frac >> 32) * (b.frac & LOMASK);
    let al_bh = (a.frac & LOMASK) * (b.frac >> 32);
    let al_bl = (a.frac & LOMASK) * (b.frac & LOMASK);
    let ah_bh = (a.frac >> 32) * (b.frac >> 32);
    let mut tmp = (ah_bl & LOMASK) + (al_bh & LOMASK) + (al_bl >> 32);
    // Round up.
    tmp += 1 << 31;
    Fp {
        frac: ah_bh
            .wrapping_add(ah_bl >> 32)
            .wrapping_add(al_bh >> 32)
            .wrapping_add(tmp >> 32),
        exp: a.exp + b.exp + 64,
    }
}

/// `find_cachedpow10`: the cached power of ten that brings a value of binary exponent `exp`
/// into `[EXPMIN, EXPMAX]`, with its decimal exponent.
fn cached_pow10(exp: i32) -> (Fp, i32) {
    const ONE_LOG_TEN: f64 = 0.30102999566398114;
    let approx = (f64::from(-(exp + NPOWERS)) * ONE_LOG_TEN) as i32;
    let mut idx = (approx - FIRSTPOWER) / STEPPOWERS;
    // The C walks until the power fits; one step or two from the estimate, bounded here.
    for _ in 0..POWERS_TEN.len() {
        let clamped = idx.clamp(0, NPOWERS - 1);
        let (frac, pexp) = POWERS_TEN[clamped as usize];
        let current = exp + pexp + 64;
        if current < EXPMIN && clamped < NPOWERS - 1 {
            idx = clamped + 1;
            continue;
        }
        if current > EXPMAX && clamped > 0 {
            idx = clamped - 1;
            continue;
        }
        return (Fp { frac, exp: pexp }, FIRSTPOWER + clamped * STEPPOWERS);
    }
    let (frac, pexp) = POWERS_TEN[idx.clamp(0, NPOWERS - 1) as usize];
    (Fp { frac, exp: pexp }, FIRSTPOWER + idx * STEPPOWERS)
}

/// The digits Grisu2 generates (at most 18: `char digits[18]`).
struct Digits {
    buf: [u8; 18],
    len: usize,
}

impl Digits {
    fn push(&mut self, digit: u64) {
        if let Some(slot) = self.buf.get_mut(self.len) {
            *slot = b'0' + (digit % 10) as u8;
            self.len += 1;
        }
    }

    fn as_slice(&self) -> &[u8] {
        &self.buf[..self.len]
    }

    /// `round_digit`: moves the last digit down while that brings the number closer to the
    /// exact value and stays inside the boundaries.
    fn round(&mut self, delta: u64, mut rem: u64, kappa: u64, frac: u64) {
        let Some(last) = self.len.checked_sub(1) else {
            return;
        };
        while rem < frac
            && delta.wrapping_sub(rem) >= kappa
            && (rem.wrapping_add(kappa) < frac
                || frac.wrapping_sub(rem) > rem.wrapping_add(kappa).wrapping_sub(frac))
        {
            self.buf[last] = self.buf[last].wrapping_sub(1);
            rem = rem.wrapping_add(kappa);
        }
    }
}

/// `generate_digits`: the digits of `upper` down to where they fall within `delta` of it; `k`
/// gets the decimal exponent of the last digit added.
fn generate_digits(fp: Fp, upper: Fp, lower: Fp, k: &mut i32) -> Digits {
    let mut digits = Digits {
        buf: [0; 18],
        len: 0,
    };
    let wfrac = upper.frac.wrapping_sub(fp.frac);
    let mut delta = upper.frac.wrapping_sub(lower.frac);
    // `-upper.exp` is within [32, 60] after the cached power's product.
    let shift = (-upper.exp).clamp(0, 63) as u32;
    let one_frac = 1u64 << shift;
    let mut part1 = upper.frac >> shift;
    let mut part2 = upper.frac & (one_frac - 1);

    // The integer part, from the 10^9 digit down.
    let mut kappa: i32 = 10;
    for &div in &TENS[10..] {
        let digit = part1 / div;
        if digit != 0 || digits.len != 0 {
            digits.push(digit);
        }
        part1 -= digit * div;
        kappa -= 1;
        let tmp = (part1 << shift).wrapping_add(part2);
        if tmp <= delta {
            *k += kappa;
            digits.round(delta, tmp, div << shift, wfrac);
            return digits;
        }
    }

    // The fraction, one digit at a time.
    let mut unit = 18usize;
    loop {
        part2 = part2.wrapping_mul(10);
        delta = delta.wrapping_mul(10);
        kappa -= 1;
        let digit = part2 >> shift;
        if digit != 0 || digits.len != 0 {
            digits.push(digit);
        }
        part2 &= one_frac - 1;
        if part2 < delta || digits.len == digits.buf.len() {
            *k += kappa;
            digits.round(delta, part2, one_frac, wfrac.wrapping_mul(TENS[unit]));
            return digits;
        }
        unit = unit.saturating_sub(1);
    }
}

/// `grisu2`: the digits of a finite non-zero `d` and the decimal exponent of the last one.
fn grisu2(d: f64) -> (Digits, i32) {
    let w = build_fp(d);
    let (lower, upper) = normalized_boundaries(w);
    let w = normalize(w);
    let (cp, k) = cached_pow10(upper.exp);
    let w = multiply(w, cp);
    let mut upper = multiply(upper, cp);
    let mut lower = multiply(lower, cp);
    lower.frac = lower.frac.wrapping_add(1);
    upper.frac = upper.frac.wrapping_sub(1);
    let mut exp10 = -k;
    let digits = generate_digits(w, upper, lower, &mut exp10);
    (digits, exp10)
}

/// `emit_digits`: `digits × 10^k` as fpconv writes it (see the module's rules).
fn emit_digits(digits: &[u8], k: i32, neg: bool, out: &mut String) {
    let ndigits = digits.len() as i32;
    let mut exp = (k + ndigits - 1).abs();
    let text = |d: &[u8], out: &mut String| out.extend(d.iter().map(|&b| b as char));

    // A plain integer.
    if k >= 0 && exp < ndigits + 7 {
        text(digits, out);
        out.extend(std::iter::repeat_n('0', k as usize));
        return;
    }

    // A decimal without exponent.
    if k < 0 && (k > -7 || exp < 4) {
        let offset = ndigits - k.abs();
        if offset <= 0 {
            // Below 1: a leading zero.
            out.push_str("0.");
            out.extend(std::iter::repeat_n('0', (-offset) as usize));
            text(digits, out);
        } else {
            let (int, frac) = digits.split_at(offset as usize);
            text(int, out);
            out.push('.');
            text(frac, out);
        }
        return;
    }

    // Exponent notation, at most 17 significant digits after a minus sign (18 without).
    let ndigits = ndigits.min(18 - i32::from(neg));
    let shown = digits.get(..ndigits as usize).unwrap_or(digits);
    if let Some((first, rest)) = shown.split_first() {
        out.push(*first as char);
        if !rest.is_empty() {
            out.push('.');
            text(rest, out);
        }
    }
    out.push('e');
    out.push(if k + ndigits - 1 < 0 { '-' } else { '+' });
    let mut cent = 0;
    if exp > 99 {
        cent = exp / 100;
        out.push(char::from(b'0' + cent as u8));
        exp -= cent * 100;
    }
    if exp > 9 {
        let dec = exp / 10;
        out.push(char::from(b'0' + dec as u8));
        exp -= dec * 10;
    } else if cent != 0 {
        out.push('0');
    }
    out.push(char::from(b'0' + (exp % 10) as u8));
}

/// Valkey's `fpconv_dtoa`: `d` in its shortest round-trip form as Valkey 8 writes it (see the
/// module's rules), e.g. `0.1` where `%.17g` writes `0.10000000000000001`. Zero, infinities and
/// NaN keep their sign: `-0`, `-inf`, `-nan`.
pub fn format_shortest_double(d: f64) -> String {
    let mut out = String::with_capacity(25);
    let neg = d.to_bits() & SIGNMASK != 0;
    if neg {
        out.push('-');
    }
    // `filter_special`.
    if d == 0.0 {
        out.push('0');
    } else if d.is_nan() {
        out.push_str("nan");
    } else if d.is_infinite() {
        out.push_str("inf");
    } else {
        let (digits, k) = grisu2(d);
        emit_digits(digits.as_slice(), k, neg, &mut out);
    }
    out
}

/// Redis's and Valkey's `double2ll`: `d` as an integer when it is one and lies within
/// ±2^62 (`LLONG_MAX / 2`), where the conversion is exact; None otherwise (NaN included).
pub fn double_to_i64(d: f64) -> Option<i64> {
    const LIMIT: f64 = (i64::MAX / 2) as f64;
    if !(-LIMIT..=LIMIT).contains(&d) {
        return None;
    }
    let v = d as i64;
    (v as f64 == d).then_some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_output_rule_writes_as_fpconv_does() {
        // One row per branch of `emit_digits` and `filter_special`, with the C's outputs.
        for (d, want) in [
            (0.0, "0"),
            (-0.0, "-0"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
            (f64::NAN, "nan"),
            (-f64::NAN, "-nan"),
            (3.0, "3"),
            (1e7, "10000000"),
            (1.5e7, "15000000"),
            (1e8, "1e+8"),
            (1e17, "1e+17"),
            (123456789012345678.0, "123456789012345680"),
            (1e23, "99999999999999990000000"),
            (0.1, "0.1"),
            (-0.1, "-0.1"),
            (1e-6, "0.000001"),
            (1e-7, "1e-7"),
            (123.456, "123.456"),
            (123_456_789.123_456_79, "1.2345678912345679e+8"),
            (33_333.333_333_333_336, "3.3333333333333336e+4"),
            (1.5e300, "1.5e+300"),
            (5e-324, "5e-324"),
            (f64::MAX, "1.7976931348623157e+308"),
            (-f64::MIN_POSITIVE, "-2.2250738585072014e-308"),
        ] {
            assert_eq!(format_shortest_double(d), want, "{d:e}");
        }
    }

    #[test]
    fn double2ll_takes_exact_integers_within_two_to_the_62() {
        assert_eq!(double_to_i64(3.0), Some(3));
        assert_eq!(double_to_i64(-0.0), Some(0));
        assert_eq!(double_to_i64(4611686018427387904.0), Some(1 << 62));
        assert_eq!(double_to_i64(-4611686018427387904.0), Some(-(1 << 62)));
        assert_eq!(double_to_i64(4611686018427388928.0), None);
        assert_eq!(double_to_i64(0.5), None);
        assert_eq!(double_to_i64(f64::NAN), None);
        assert_eq!(double_to_i64(f64::INFINITY), None);
    }
}
