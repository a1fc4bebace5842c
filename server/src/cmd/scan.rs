//! The SCAN family's cursor: elements are visited in the order of a fixed 64-bit hash of their
//! name, and the cursor is the hash to resume from. An element present for the whole
//! iteration is returned at least once however the collection changes between calls (hash
//! collisions are returned together, never split across calls); cursor 0 starts and ends.

use super::{Args, CommandError};
use bytes::Bytes;

/// SCAN's default `COUNT`.
pub(crate) const DEFAULT_COUNT: usize = 10;

/// The fixed hash elements are ordered by (FNV-1a, then a splitmix64 finalizer).
pub(crate) fn hash(name: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in name {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h ^= h >> 30;
    h = h.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h ^= h >> 27;
    h = h.wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^ (h >> 31)
}

/// Parses a cursor as Redis's `parseScanCursorOrReply` (`strtoul`: a leading `-` wraps).
pub(crate) fn parse_cursor(arg: &[u8]) -> Result<u64, CommandError> {
    let invalid = || CommandError::err("invalid cursor");
    let text = std::str::from_utf8(arg).map_err(|_| invalid())?;
    if let Some(neg) = text.strip_prefix('-') {
        if neg.is_empty() || !neg.bytes().all(|b| b.is_ascii_digit()) {
            return Err(invalid());
        }
        let v: u64 = neg.parse().map_err(|_| invalid())?;
        return Ok(v.wrapping_neg());
    }
    let digits = text.strip_prefix('+').unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(invalid());
    }
    digits.parse().map_err(|_| invalid())
}

/// `[MATCH pattern] [COUNT count] [TYPE type]`.
#[derive(Debug)]
pub(crate) struct ScanOptions {
    /// Elements visited per call.
    pub(crate) count: usize,
    /// Glob filter; `None` for none or a lone `*`.
    pub(crate) pattern: Option<Bytes>,
    /// Type filter (SCAN only).
    pub(crate) type_name: Option<Bytes>,
}

impl ScanOptions {
    /// Parses the options as Redis's `scanGenericCommand`; `allow_type` for SCAN.
    pub(crate) fn parse(args: &mut Args<'_>, allow_type: bool) -> Result<Self, CommandError> {
        let mut o = ScanOptions {
            count: DEFAULT_COUNT,
            pattern: None,
            type_name: None,
        };
        while let Some(opt) = args.next() {
            let has_value = args.peek().is_some();
            if opt.eq_ignore_ascii_case(b"count") && has_value {
                let count = args.i64()?;
                if count < 1 {
                    return Err(CommandError::Syntax);
                }
                o.count = usize::try_from(count).unwrap_or(usize::MAX);
            } else if opt.eq_ignore_ascii_case(b"match") && has_value {
                let pat = args.bytes()?;
                o.pattern = (pat.as_ref() != b"*").then_some(pat);
            } else if opt.eq_ignore_ascii_case(b"type") && allow_type && has_value {
                o.type_name = Some(args.bytes()?);
            } else {
                return Err(CommandError::Syntax);
            }
        }
        Ok(o)
    }

    /// Whether `name` passes the MATCH filter.
    pub(crate) fn matches(&self, name: &[u8]) -> bool {
        self.pattern
            .as_ref()
            .is_none_or(|p| crate::glob::glob_match(p, name, false))
    }
}

/// One step of an iteration over `items` (name, payload) starting at `cursor`: at least
/// `count` elements (whole hash groups) in hash order, and the next cursor (0 when done).
pub(crate) fn step<'a, T>(
    items: impl Iterator<Item = (&'a Bytes, T)>,
    cursor: u64,
    count: usize,
) -> (u64, Vec<(&'a Bytes, T)>) {
    let mut candidates: Vec<(u64, &'a Bytes, T)> = items
        .map(|(name, t)| (hash(name), name, t))
        .filter(|(h, _, _)| *h >= cursor)
        .collect();
    candidates.sort_unstable_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.cmp(b.1)));
    let mut take = count.min(candidates.len());
    if take > 0 {
        let last = candidates[take - 1].0;
        while take < candidates.len() && candidates[take].0 == last {
            take += 1;
        }
    }
    let next = candidates.get(take).map_or(0, |c| c.0);
    candidates.truncate(take);
    (
        next,
        candidates.into_iter().map(|(_, n, t)| (n, t)).collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn every_stable_element_is_returned_despite_changes() {
        let mut set: BTreeSet<Bytes> = (0..500).map(|i| Bytes::from(format!("k{i}"))).collect();
        let stable: Vec<Bytes> = set.iter().step_by(3).cloned().collect();
        let mut seen = BTreeSet::new();
        let mut cursor = 0;
        let mut round = 0;
        loop {
            let (next, got) = step(set.iter().map(|k| (k, ())), cursor, 7);
            seen.extend(got.into_iter().map(|(k, _)| k.clone()));
            // Churn: remove some non-stable keys, add new ones.
            round += 1;
            set.insert(Bytes::from(format!("new{round}")));
            let victim = set.iter().find(|k| !stable.contains(k)).cloned();
            if let Some(v) = victim {
                set.remove(&v);
            }
            if next == 0 {
                break;
            }
            cursor = next;
        }
        for k in &stable {
            assert!(seen.contains(k), "{k:?} missed");
        }
    }

    #[test]
    fn cursor_parsing_follows_strtoul() {
        assert_eq!(parse_cursor(b"0"), Ok(0));
        assert_eq!(parse_cursor(b"-1"), Ok(u64::MAX));
        assert!(parse_cursor(b"abc").is_err());
        assert!(parse_cursor(b"18446744073709551616").is_err());
        assert!(parse_cursor(b"").is_err());
    }
}
