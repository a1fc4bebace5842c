//! The SCAN family's cursor and options. The cursor is Redis's: a bucket index of the
//! collection's [`crate::db::dict::Dict`] with its bits reversed, so a call costs the buckets
//! it visits (about COUNT elements), and an element present for the whole iteration is
//! returned at least once however the table grows, shrinks or rehashes between calls (some
//! may come twice); cursor 0 starts and ends. Small collections (Redis's listpack and intset
//! encodings) are returned whole by the first call, as Redis does.

use super::{Args, CommandError};
use bytes::Bytes;

/// SCAN's default `COUNT`.
pub(crate) const DEFAULT_COUNT: usize = 10;

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

/// The command of the SCAN family whose options are parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ScanKind {
    /// SCAN (keys): takes TYPE.
    Keys,
    /// SSCAN.
    Set,
    /// HSCAN.
    Hash,
    /// ZSCAN.
    Zset,
}

/// The node's target, taken before the handler borrows the collection: whether it documents
/// the options of the SCAN family a later release added (HSCAN's `NOVALUES`, ZSCAN's
/// `NOSCORES`: Redis 7.4 and Valkey 8.0; looked up only when one is given), and whether it
/// refuses an unknown TYPE name ([`crate::compat::HandlerChecks`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Newer {
    compat: crate::compat::Compat,
}

impl Newer {
    /// The target of `ctx`'s node.
    pub(crate) fn of(ctx: &super::Ctx<'_>) -> Newer {
        Newer {
            compat: ctx.node.config.compat(),
        }
    }

    /// Whether the target documents `token` for `command`.
    fn documents(self, command: &str, token: &str) -> bool {
        super::table::documents(self.compat, command, token)
    }
}

/// `[MATCH pattern] [COUNT count] [TYPE type] [NOVALUES] [NOSCORES]`.
#[derive(Debug)]
pub(crate) struct ScanOptions {
    /// Elements visited per call.
    pub(crate) count: usize,
    /// Glob filter; `None` for none or a lone `*`.
    pub(crate) pattern: Option<Bytes>,
    /// Type filter (SCAN only).
    pub(crate) type_name: Option<Bytes>,
    /// HSCAN without the values, ZSCAN without the scores (`NOVALUES`, `NOSCORES`).
    pub(crate) names_only: bool,
}

impl ScanOptions {
    /// Parses the options of `kind` as Redis's `scanGenericCommand` (or, for the options
    /// `newer` allows, Valkey's, with its errors for one given to another command).
    pub(crate) fn parse(
        args: &mut Args<'_>,
        kind: ScanKind,
        newer: Newer,
    ) -> Result<Self, CommandError> {
        let mut o = ScanOptions {
            count: DEFAULT_COUNT,
            pattern: None,
            type_name: None,
            names_only: false,
        };
        let allow_type = kind == ScanKind::Keys;
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
                o.pattern = (pat.as_ref() != b"*").then_some(pat.clone());
            } else if opt.eq_ignore_ascii_case(b"type") && allow_type && has_value {
                let name = args.bytes()?;
                const TYPES: [&str; 6] = ["string", "list", "set", "zset", "hash", "stream"];
                if newer.compat.profile().checks.scan_rejects_unknown_type
                    && !TYPES
                        .iter()
                        .any(|t| name.eq_ignore_ascii_case(t.as_bytes()))
                {
                    return Err(CommandError::err(format!(
                        "unknown type name '{}'",
                        crate::error::lossy(name, usize::MAX)
                    )));
                }
                o.type_name = Some(name.clone());
            } else if opt.eq_ignore_ascii_case(b"novalues") && newer.documents("hscan", "NOVALUES")
            {
                if kind != ScanKind::Hash {
                    return Err(CommandError::err(
                        "NOVALUES option can only be used in HSCAN",
                    ));
                }
                o.names_only = true;
            } else if opt.eq_ignore_ascii_case(b"noscores") && newer.documents("zscan", "NOSCORES")
            {
                if kind != ScanKind::Zset {
                    return Err(CommandError::err(
                        "NOSCORES option can only be used in ZSCAN",
                    ));
                }
                o.names_only = true;
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

/// Runs bucket steps as Redis's `scanGenericCommand` does: from `cursor`, `step` visits one
/// cursor position (pushing the elements it finds to the vector) and returns the next cursor;
/// steps go on until the iteration ends, `count` elements were collected (a hash field with
/// its value, or a sorted-set member with its score, counts once, as on Redis 7.0), or
/// `10 * count` more steps found too few (sparse tables). Returns the next cursor and what was
/// collected, before any MATCH or TYPE filtering (Redis filters after counting).
pub(crate) fn run<T>(
    cursor: u64,
    count: usize,
    mut step: impl FnMut(u64, &mut Vec<T>) -> u64,
) -> (u64, Vec<T>) {
    let mut out = Vec::new();
    let mut next = cursor;
    let mut steps_left = count.saturating_mul(10);
    // Bounded: by the steps budget, and a full iteration ends after every bucket was visited.
    loop {
        next = step(next, &mut out);
        if next == 0 || steps_left == 0 || out.len() >= count {
            return (next, out);
        }
        steps_left -= 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_stops_at_count_or_the_step_budget_or_the_end() {
        // Every step yields one element: COUNT of them.
        let (next, got) = run(5, 3, |c, out: &mut Vec<u64>| {
            out.push(c);
            c + 1
        });
        assert_eq!((next, got), (8, vec![5, 6, 7]));
        // Empty steps: 10 * COUNT + 1 of them at most, as Redis's `maxiterations--`.
        let mut steps = 0;
        let (next, got) = run(1, 2, |c, _: &mut Vec<u64>| {
            steps += 1;
            c + 1
        });
        assert!(got.is_empty() && steps == 21 && next == 22);
        // The end of the iteration.
        let (next, got) = run(0, 100, |c, out: &mut Vec<u64>| {
            out.push(c);
            if c == 2 {
                0
            } else {
                c + 1
            }
        });
        assert_eq!((next, got.len()), (0, 3));
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
