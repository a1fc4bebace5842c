//! HyperLogLog: PFADD, PFCOUNT, PFMERGE, PFDEBUG and PFSELFTEST, ported from Redis 7.0's `hyperloglog.c` so the
//! string a key holds is byte for byte Redis's (the `HYLL` header with its cached cardinality,
//! the sparse opcodes and the dense 6-bit registers): `GET`/`DUMP` of an HLL moves between
//! redis-server and this server, and PFCOUNT gives Redis's numbers (MurmurHash64A, 16384
//! registers, Ertl's estimator).

use super::{flags::*, Args, CmdResult, Command, CommandError, Ctx};
use crate::db::Value;
use crate::notify;
use bytes::Bytes;
use locksmith_resp::Frame;
use rand::Rng;

/// The HyperLogLog family's table.
pub(crate) static COMMANDS: &[Command] = &[
    Command::new("pfadd", pfadd),
    Command::new("pfcount", pfcount).extra_flags(MAY_REPLICATE),
    Command::new("pfmerge", pfmerge),
    Command::new("pfdebug", pfdebug),
    Command::new("pfselftest", pfselftest),
];

const P: u32 = 14;
const REGISTERS: usize = 1 << P;
const P_MASK: u64 = (REGISTERS as u64) - 1;
const BITS: usize = 6;
const REGISTER_MAX: u8 = 63;
const Q: u32 = 64 - P;
const HDR: usize = 16;
const DENSE_SIZE: usize = HDR + (REGISTERS * BITS).div_ceil(8);
const DENSE: u8 = 0;
const SPARSE: u8 = 1;
const SPARSE_VAL_MAX_VALUE: u8 = 32;
const SPARSE_VAL_MAX_LEN: usize = 4;
const SPARSE_ZERO_MAX_LEN: usize = 64;
const SPARSE_XZERO_MAX_LEN: usize = 16384;
const ALPHA_INF: f64 = 0.721_347_520_444_481_7;

const INVALID_HLL: &str = "INVALIDOBJ Corrupted HLL object detected";
const NOT_HLL: &str = "WRONGTYPE Key is not a valid HyperLogLog string value.";

/// MurmurHash2, 64-bit (`MurmurHash64A`), as Redis hashes elements.
fn murmur64a(key: &[u8], seed: u64) -> u64 {
    const M: u64 = 0xc6a4_a793_5bd1_e995;
    const R: u32 = 47;
    let mut h = seed ^ (key.len() as u64).wrapping_mul(M);
    let mut chunks = key.chunks_exact(8);
    for chunk in &mut chunks {
        let mut k = u64::from_le_bytes(chunk.try_into().unwrap_or([0; 8]));
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h ^= k;
        h = h.wrapping_mul(M);
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        for (i, &b) in rest.iter().enumerate() {
            h ^= u64::from(b) << (8 * i);
        }
        h = h.wrapping_mul(M);
    }
    h ^= h >> R;
    h = h.wrapping_mul(M);
    h ^= h >> R;
    h
}

/// `hllPatLen`: the register an element goes to and the run of zeros it counts.
fn pattern(element: &[u8]) -> (usize, u8) {
    let hash = murmur64a(element, 0xadc8_3b19);
    let index = (hash & P_MASK) as usize;
    let rest = (hash >> P) | (1u64 << Q);
    (index, (rest.trailing_zeros() + 1) as u8)
}

fn dense_get(regs: &[u8], i: usize) -> u8 {
    let byte = i * BITS / 8;
    let fb = (i * BITS) & 7;
    let b0 = u32::from(regs.get(byte).copied().unwrap_or(0));
    let b1 = u32::from(regs.get(byte + 1).copied().unwrap_or(0));
    (((b0 >> fb) | (b1 << (8 - fb))) & u32::from(REGISTER_MAX)) as u8
}

fn dense_set(regs: &mut [u8], i: usize, v: u8) {
    let byte = i * BITS / 8;
    let fb = (i * BITS) & 7;
    let v = u32::from(v);
    let max = u32::from(REGISTER_MAX);
    if let Some(b) = regs.get_mut(byte) {
        *b &= !((max << fb) as u8);
        *b |= (v << fb) as u8;
    }
    if let Some(b) = regs.get_mut(byte + 1) {
        *b &= !((max >> (8 - fb)) as u8);
        *b |= (v >> (8 - fb)) as u8;
    }
}

/// A new, empty HLL: the sparse form (XZERO opcodes over every register).
fn new_hll() -> Vec<u8> {
    let mut s = Vec::with_capacity(HDR + 2);
    s.extend_from_slice(b"HYLL");
    s.extend_from_slice(&[SPARSE, 0, 0, 0]);
    s.extend_from_slice(&[0; 8]);
    let mut left = REGISTERS;
    while left > 0 {
        let run = left.min(SPARSE_XZERO_MAX_LEN);
        push_xzero(&mut s, run);
        left -= run;
    }
    s
}

fn push_xzero(out: &mut Vec<u8>, len: usize) {
    let l = len - 1;
    out.push(((l >> 8) as u8) | 0x40);
    out.push((l & 0xff) as u8);
}

fn is_zero(b: u8) -> bool {
    b & 0xc0 == 0
}
fn is_xzero(b: u8) -> bool {
    b & 0xc0 == 0x40
}
fn zero_len(b: u8) -> usize {
    usize::from(b & 0x3f) + 1
}
fn xzero_len(b0: u8, b1: u8) -> usize {
    ((usize::from(b0 & 0x3f) << 8) | usize::from(b1)) + 1
}
fn val_value(b: u8) -> u8 {
    ((b >> 2) & 0x1f) + 1
}
fn val_len(b: u8) -> usize {
    usize::from(b & 0x3) + 1
}
fn val(value: u8, len: usize) -> u8 {
    (((value - 1) << 2) | (len as u8 - 1)) | 0x80
}

/// `isHLLObjectOrReply`: the header is Redis's and a dense HLL has its exact size.
fn check(s: &[u8]) -> Result<(), CommandError> {
    let ok = s.len() >= HDR
        && &s[..4] == b"HYLL"
        && s[4] <= 1
        && (s[4] != DENSE || s.len() == DENSE_SIZE);
    if ok {
        Ok(())
    } else {
        Err(CommandError::Raw(NOT_HLL.into()))
    }
}

fn invalidate(s: &mut [u8]) {
    if let Some(b) = s.get_mut(15) {
        *b |= 1 << 7;
    }
}

/// `hllSparseToDense`; `None` for a corrupt sparse form.
fn to_dense(s: &[u8]) -> Option<Vec<u8>> {
    if s.get(4) == Some(&DENSE) {
        return Some(s.to_vec());
    }
    let mut d = vec![0u8; DENSE_SIZE];
    d[..HDR].copy_from_slice(&s[..HDR]);
    d[4] = DENSE;
    let mut idx = 0usize;
    let mut p = HDR;
    while p < s.len() {
        let b = s[p];
        if is_zero(b) {
            idx += zero_len(b);
            p += 1;
        } else if is_xzero(b) {
            idx += xzero_len(b, *s.get(p + 1)?);
            p += 2;
        } else {
            let (run, v) = (val_len(b), val_value(b));
            // Past the last register: corrupt (CVE-2025-32023), not the end of the scan.
            if run + idx > REGISTERS {
                return None;
            }
            for _ in 0..run {
                dense_set(&mut d[HDR..], idx, v);
                idx += 1;
            }
            p += 1;
        }
    }
    (idx == REGISTERS).then_some(d)
}

/// `hllSparseSet`: sets register `index` to `count` if larger; `Ok(true)` when it changed.
/// Promotes `s` to dense past `max_bytes` or for a value the sparse form cannot hold.
fn sparse_set(s: &mut Vec<u8>, index: usize, count: u8, max_bytes: usize) -> Result<bool, ()> {
    if count > SPARSE_VAL_MAX_VALUE {
        return promote(s, index, count);
    }
    let end = s.len();
    let mut p = HDR;
    let mut first = 0usize;
    let mut prev: Option<usize> = None;
    let mut span = 0usize;
    while p < end {
        let b = s[p];
        let oplen;
        if is_zero(b) {
            span = zero_len(b);
            oplen = 1;
        } else if b & 0x80 != 0 {
            span = val_len(b);
            oplen = 1;
        } else {
            span = xzero_len(b, *s.get(p + 1).ok_or(())?);
            oplen = 2;
        }
        if index < first + span {
            break;
        }
        prev = Some(p);
        p += oplen;
        first += span;
    }
    if span == 0 || p >= end {
        return Err(());
    }
    let b = s[p];
    let (zero, xzero) = (is_zero(b), is_xzero(b));
    let runlen = if zero {
        zero_len(b)
    } else if xzero {
        xzero_len(b, *s.get(p + 1).ok_or(())?)
    } else {
        val_len(b)
    };
    let updated_in_place = if !zero && !xzero {
        if val_value(b) >= count {
            return Ok(false);
        }
        runlen == 1
    } else {
        zero && runlen == 1
    };
    if updated_in_place {
        s[p] = val(count, 1);
    } else {
        let mut seq: Vec<u8> = Vec::with_capacity(5);
        let last = first + span - 1;
        if zero || xzero {
            if index != first {
                let len = index - first;
                if len > SPARSE_ZERO_MAX_LEN {
                    push_xzero(&mut seq, len);
                } else {
                    seq.push((len - 1) as u8);
                }
            }
            seq.push(val(count, 1));
            if index != last {
                let len = last - index;
                if len > SPARSE_ZERO_MAX_LEN {
                    push_xzero(&mut seq, len);
                } else {
                    seq.push((len - 1) as u8);
                }
            }
        } else {
            let cur = val_value(b);
            if index != first {
                seq.push(val(cur, index - first));
            }
            seq.push(val(count, 1));
            if index != last {
                seq.push(val(cur, last - index));
            }
        }
        let oldlen = if xzero { 2 } else { 1 };
        if seq.len() > oldlen && s.len() + (seq.len() - oldlen) > max_bytes {
            return promote(s, index, count);
        }
        s.splice(p..p + oldlen, seq);
    }
    // Merge adjacent VAL opcodes of the same value (up to five opcodes from `prev`).
    let mut p = prev.unwrap_or(HDR);
    let mut scan = 5;
    while p < s.len() && scan > 0 {
        scan -= 1;
        let b = s[p];
        if is_xzero(b) {
            p += 2;
            continue;
        }
        if is_zero(b) {
            p += 1;
            continue;
        }
        if let Some(&next) = s.get(p + 1) {
            if next & 0x80 != 0 && val_value(b) == val_value(next) {
                let len = val_len(b) + val_len(next);
                if len <= SPARSE_VAL_MAX_LEN {
                    s[p + 1] = val(val_value(b), len);
                    s.remove(p);
                    continue;
                }
            }
        }
        p += 1;
    }
    invalidate(s);
    Ok(true)
}

fn promote(s: &mut Vec<u8>, index: usize, count: u8) -> Result<bool, ()> {
    *s = to_dense(s).ok_or(())?;
    let regs = &mut s[HDR..];
    if count > dense_get(regs, index) {
        dense_set(regs, index, count);
    }
    invalidate(s);
    Ok(true)
}

/// Adds one element; `Ok(true)` when a register changed.
fn add(s: &mut Vec<u8>, element: &[u8], max_bytes: usize) -> Result<bool, ()> {
    let (index, count) = pattern(element);
    if s[4] == DENSE {
        let regs = &mut s[HDR..];
        if count > dense_get(regs, index) {
            dense_set(regs, index, count);
            return Ok(true);
        }
        return Ok(false);
    }
    sparse_set(s, index, count, max_bytes)
}

/// `hllMerge`: raises `max` to the registers of `s`.
fn merge(max: &mut [u8], s: &[u8]) -> Result<(), ()> {
    if s[4] == DENSE {
        for (i, m) in max.iter_mut().enumerate() {
            *m = (*m).max(dense_get(&s[HDR..], i));
        }
        return Ok(());
    }
    let mut i = 0usize;
    let mut p = HDR;
    while p < s.len() {
        let b = s[p];
        if is_zero(b) {
            i += zero_len(b);
            p += 1;
        } else if is_xzero(b) {
            i += xzero_len(b, *s.get(p + 1).ok_or(())?);
            p += 2;
        } else {
            let (run, v) = (val_len(b), val_value(b));
            // Past the last register: corrupt (CVE-2025-32023), not the end of the scan.
            if run + i > REGISTERS {
                return Err(());
            }
            for m in &mut max[i..i + run] {
                *m = (*m).max(v);
            }
            i += run;
            p += 1;
        }
    }
    if i == REGISTERS {
        Ok(())
    } else {
        Err(())
    }
}

fn sigma(mut x: f64) -> f64 {
    if x == 1.0 {
        return f64::INFINITY;
    }
    let mut y = 1.0;
    let mut z = x;
    loop {
        x *= x;
        let prev = z;
        z += x * y;
        y += y;
        if prev == z {
            return z;
        }
    }
}

fn tau(mut x: f64) -> f64 {
    if x == 0.0 || x == 1.0 {
        return 0.0;
    }
    let mut y = 1.0;
    let mut z = 1.0 - x;
    loop {
        x = x.sqrt();
        let prev = z;
        y *= 0.5;
        z -= (1.0 - x).powi(2) * y;
        if prev == z {
            return z / 3.0;
        }
    }
}

/// `hllCount` over a register histogram.
fn estimate(histo: &[u32; 64]) -> u64 {
    let m = REGISTERS as f64;
    let mut z = m * tau((m - f64::from(histo[Q as usize + 1])) / m);
    for j in (1..=Q as usize).rev() {
        z += f64::from(histo[j]);
        z *= 0.5;
    }
    z += m * sigma(f64::from(histo[0]) / m);
    (ALPHA_INF * m * m / z).round() as u64
}

/// The register histogram of `s`; `None` if the sparse form is corrupt.
fn histogram(s: &[u8]) -> Option<[u32; 64]> {
    let mut h = [0u32; 64];
    if s[4] == DENSE {
        for i in 0..REGISTERS {
            h[usize::from(dense_get(&s[HDR..], i))] += 1;
        }
        return Some(h);
    }
    let mut idx = 0usize;
    let mut p = HDR;
    while p < s.len() {
        let b = s[p];
        if is_zero(b) {
            let run = zero_len(b);
            idx += run;
            h[0] += run as u32;
            p += 1;
        } else if is_xzero(b) {
            let run = xzero_len(b, *s.get(p + 1)?);
            idx += run;
            h[0] += run as u32;
            p += 2;
        } else {
            let run = val_len(b);
            idx += run;
            h[usize::from(val_value(b))] += run as u32;
            p += 1;
        }
    }
    (idx == REGISTERS).then_some(h)
}

/// The HLL string at `key`: `Ok(None)` if absent; Redis's errors for another type or a string
/// that is not an HLL.
fn hll_at(ctx: &mut Ctx<'_>, key: &Bytes) -> Result<Option<Vec<u8>>, CommandError> {
    let s = ctx.get_string(key)?;
    checked_hll(s)
}

/// [`hll_at`] as `PFMERGE` reads its keys ([`Ctx::read_string`]).
fn hll_read(ctx: &mut Ctx<'_>, key: &Bytes) -> Result<Option<Vec<u8>>, CommandError> {
    let s = ctx.read_string(key)?;
    checked_hll(s)
}

fn checked_hll(s: Option<Bytes>) -> Result<Option<Vec<u8>>, CommandError> {
    match s {
        None => Ok(None),
        Some(s) => {
            check(&s)?;
            Ok(Some(s.to_vec()))
        }
    }
}

fn sparse_max(ctx: &Ctx<'_>) -> usize {
    ctx.node.config.hll_sparse_max_bytes()
}

/// Stores `s` at `key`, keeping its deadline (the value changes in place, as in Redis).
fn store(ctx: &mut Ctx<'_>, key: &Bytes, s: Vec<u8>) {
    match ctx.lookup_write(key) {
        Some(entry) => entry.value = Value::String(s.into()),
        None => ctx.set(key, Value::String(s.into()), None),
    }
}

/// ```text
/// PFADD key [element [element ...]]
/// ```
fn pfadd(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.bytes()?;
    let elements = args.rest();
    let max_bytes = sparse_max(ctx);
    let (mut s, mut updated) = match hll_at(ctx, key)? {
        Some(s) => (s, false),
        None => (new_hll(), true),
    };
    for e in elements {
        match add(&mut s, e, max_bytes) {
            Ok(true) => updated = true,
            Ok(false) => {}
            Err(()) => return Err(CommandError::Raw(INVALID_HLL.into())),
        }
    }
    if updated {
        invalidate(&mut s);
        store(ctx, key, s);
        ctx.modified(key);
        ctx.notify(notify::STRING, "pfadd", key);
    }
    Ok(Frame::Integer(i64::from(updated)))
}

/// ```text
/// PFCOUNT key [key ...]
/// ```
fn pfcount(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let keys = args.rest();
    if keys.len() > 1 {
        let mut max = vec![0u8; REGISTERS];
        for key in keys {
            if let Some(s) = hll_at(ctx, key)? {
                merge(&mut max, &s).map_err(|()| CommandError::Raw(INVALID_HLL.into()))?;
            }
        }
        let mut h = [0u32; 64];
        for &r in &max {
            h[usize::from(r)] += 1;
        }
        return Ok(Frame::Integer(estimate(&h) as i64));
    }
    let Some(key) = keys.first() else {
        return Ok(Frame::Integer(0));
    };
    let Some(mut s) = hll_at(ctx, key)? else {
        return Ok(Frame::Integer(0));
    };
    if s[15] & (1 << 7) == 0 {
        let card = u64::from_le_bytes(s[8..16].try_into().unwrap_or([0; 8]));
        return Ok(Frame::Integer(card as i64));
    }
    let h = histogram(&s).ok_or_else(|| CommandError::Raw(INVALID_HLL.into()))?;
    let card = estimate(&h);
    // The cardinality is cached in the header, as Redis writes it.
    s[8..16].copy_from_slice(&card.to_le_bytes());
    store(ctx, key, s);
    ctx.modified(key);
    Ok(Frame::Integer(card as i64))
}

/// ```text
/// PFMERGE destkey [sourcekey [sourcekey ...]]
/// ```
fn pfmerge(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let dest = args.bytes()?;
    let mut max = vec![0u8; REGISTERS];
    let mut use_dense = false;
    // Every key is read, the destination first, as Redis merges them all (one read lookup
    // each, counted in INFO's keyspace hits and misses).
    let mut dest_hll = None;
    for (i, key) in args.argv().get(1..).unwrap_or_default().iter().enumerate() {
        if let Some(s) = hll_read(ctx, key)? {
            use_dense |= s[4] == DENSE;
            merge(&mut max, &s).map_err(|()| CommandError::Raw(INVALID_HLL.into()))?;
            if i == 0 {
                dest_hll = Some(s);
            }
        }
    }
    let mut s = dest_hll.unwrap_or_else(new_hll);
    if use_dense {
        s = to_dense(&s).ok_or_else(|| CommandError::Raw(INVALID_HLL.into()))?;
    }
    let max_bytes = sparse_max(ctx);
    for (j, &m) in max.iter().enumerate() {
        if m == 0 {
            continue;
        }
        if s[4] == DENSE {
            let regs = &mut s[HDR..];
            if m > dense_get(regs, j) {
                dense_set(regs, j, m);
            }
        } else {
            let _ = sparse_set(&mut s, j, m, max_bytes);
        }
    }
    invalidate(&mut s);
    store(ctx, dest, s);
    ctx.modified(dest);
    ctx.notify(notify::STRING, "pfadd", dest);
    Ok(Frame::ok())
}

/// ```text
/// PFDEBUG GETREG|DECODE|ENCODING|TODENSE key
/// ```
/// Redis's debugging view of an HLL: its 16384 registers (converting a sparse HLL to dense, as
/// Redis does), its sparse opcodes, its encoding, or a conversion to dense.
fn pfdebug(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let sub = args.bytes()?;
    let key = args.bytes()?;
    let Some(mut s) = hll_at(ctx, key)? else {
        return Err(CommandError::err("The specified key does not exist"));
    };
    let sparse = s[4] == SPARSE;
    let densify = |ctx: &mut Ctx<'_>, s: &mut Vec<u8>| -> Result<(), CommandError> {
        *s = to_dense(s).ok_or_else(|| CommandError::Raw(INVALID_HLL.into()))?;
        store(ctx, key, s.clone());
        // An encoding change is propagated (Redis's `server.dirty++`) but signals no write.
        ctx.state.dirty += 1;
        Ok(())
    };
    match sub.to_ascii_lowercase().as_slice() {
        b"getreg" => {
            if sparse {
                densify(ctx, &mut s)?;
            }
            let regs = &s[HDR..];
            Ok(Frame::Array(
                (0..REGISTERS)
                    .map(|i| Frame::Integer(i64::from(dense_get(regs, i))))
                    .collect(),
            ))
        }
        b"decode" => {
            if !sparse {
                return Err(CommandError::err("HLL encoding is not sparse"));
            }
            Ok(Frame::Bulk(Bytes::from(decode_sparse(&s))))
        }
        b"encoding" => Ok(Frame::Simple(
            if sparse { "sparse" } else { "dense" }.into(),
        )),
        b"todense" => {
            if sparse {
                densify(ctx, &mut s)?;
            }
            Ok(Frame::Integer(i64::from(sparse)))
        }
        _ => Err(CommandError::err(format!(
            "Unknown PFDEBUG subcommand '{}'",
            String::from_utf8_lossy(sub)
        ))),
    }
}

/// The sparse opcodes of `s` as `PFDEBUG DECODE` prints them (`z:len`, `Z:len`,
/// `v:value,len`, space separated).
fn decode_sparse(s: &[u8]) -> String {
    let mut out = Vec::new();
    let mut p = HDR;
    while let Some(&b) = s.get(p) {
        if is_zero(b) {
            out.push(format!("z:{}", zero_len(b)));
            p += 1;
        } else if is_xzero(b) {
            out.push(format!(
                "Z:{}",
                xzero_len(b, s.get(p + 1).copied().unwrap_or(0))
            ));
            p += 2;
        } else {
            out.push(format!("v:{},{}", val_value(b), val_len(b)));
            p += 1;
        }
    }
    out.join(" ")
}

/// ```text
/// PFSELFTEST
/// ```
/// Redis's self test of the HLL code: random register values read back as written (1000
/// rounds), then 10^7 distinct elements added to a dense and a sparse HLL, whose estimates must
/// agree and stay within six standard errors at every power of ten (one at 10); a sparse HLL
/// must stay sparse below half of `hll-sparse-max-bytes`.
fn pfselftest(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    let failed = |msg: String| Err(CommandError::Raw(format!("TESTFAILED {msg}")));
    let max_bytes = sparse_max(ctx);
    let rng = &mut ctx.state.rng;
    let mut regs = vec![0u8; DENSE_SIZE - HDR];
    let mut expected = vec![0u8; REGISTERS];
    for _ in 0..1000 {
        for (i, e) in expected.iter_mut().enumerate() {
            *e = rng.random::<u8>() & REGISTER_MAX;
            dense_set(&mut regs, i, *e);
        }
        for (i, &e) in expected.iter().enumerate() {
            let v = dense_get(&regs, i);
            if v != e {
                return failed(format!("Register {i} should be {e} but is {v}"));
            }
        }
    }
    let mut dense = to_dense(&new_hll()).unwrap_or_default();
    let mut sparse = new_hll();
    let count = |s: &[u8]| histogram(s).map(|h| estimate(&h));
    let relerr = 1.04 / (REGISTERS as f64).sqrt();
    let seed: u64 = rng.random();
    let mut checkpoint: u64 = 1;
    for j in 1..=10_000_000u64 {
        let ele = (j ^ seed).to_le_bytes();
        let added = add(&mut dense, &ele, max_bytes).and(add(&mut sparse, &ele, max_bytes));
        if added.is_err() {
            return Err(CommandError::Raw(INVALID_HLL.into()));
        }
        if j != checkpoint {
            continue;
        }
        if j < max_bytes as u64 / 2 && sparse[4] != SPARSE {
            return failed("sparse encoding not used".into());
        }
        let card = count(&dense);
        if card != count(&sparse) {
            return failed("dense/sparse disagree".into());
        }
        let abserr = checkpoint.abs_diff(card.unwrap_or(0));
        let maxerr = if j == 10 {
            1
        } else {
            (relerr * 6.0 * checkpoint as f64).ceil() as u64
        };
        if abserr > maxerr {
            return failed(format!("Too big error. card:{checkpoint} abserr:{abserr}"));
        }
        checkpoint *= 10;
    }
    Ok(Frame::ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_hll_is_redis_s_sparse_form() {
        let s = new_hll();
        assert_eq!(s.len(), HDR + 2);
        assert_eq!(&s[HDR..], &[0x7f, 0xff]);
        assert_eq!(estimate(&histogram(&s).unwrap()), 0);
    }

    #[test]
    fn sparse_and_dense_forms_agree() {
        let mut s = new_hll();
        for i in 0..2000u32 {
            add(&mut s, i.to_string().as_bytes(), 3000).unwrap();
        }
        let d = to_dense(&s).unwrap();
        assert_eq!(histogram(&s), histogram(&d));
        let n = estimate(&histogram(&d).unwrap());
        assert!((1900..2100).contains(&n), "{n}");
    }

    #[test]
    fn opcodes_past_the_last_register_make_a_sparse_hll_corrupt() {
        // VAL opcodes of 4 registers at 32: 4096 of them cover every register exactly.
        let sparse = |vals: usize| {
            let mut s = new_hll();
            s.truncate(HDR);
            s.extend(std::iter::repeat_n(0xffu8, vals));
            s
        };
        let exact = sparse(4096);
        assert!(to_dense(&exact).is_some());
        assert!(merge(&mut vec![0; REGISTERS], &exact).is_ok());
        assert!(histogram(&exact).is_some());
        // CVE-2025-32023: 20 000 of them run past the last register.
        let past = sparse(20_000);
        assert!(to_dense(&past).is_none());
        assert!(merge(&mut vec![0; REGISTERS], &past).is_err());
        assert!(histogram(&past).is_none());
    }
}
