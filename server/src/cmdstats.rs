//! Per-command statistics, as Redis keeps them in each command's table entry: calls, time
//! spent, calls that failed (replied an error) and calls rejected before they ran
//! (`INFO commandstats`), and a latency histogram per command (`INFO latencystats`).
//!
//! Durations are whole microseconds, as Redis measures them. While the slow log or the
//! latency monitor is on (the slow log is, by default) every call is timed for them and
//! counted here; otherwise time is measured on one call in [`TIME_SAMPLE`] of each command
//! (the first, then every 16th), and `usec` is the sampled mean times the calls: reading the
//! clock around every command cost ~7 % of pipelined SETs, more than everything else these
//! counters do.

use crate::command_meta::Resolved;
use std::fmt::Write as _;

/// One call in this many of each command is timed.
const TIME_SAMPLE: u64 = 16;

/// Sub-buckets per power of two of the latency histogram: values are kept to 1/16 (about
/// 6 %) of their size, as an HDR histogram with one significant digit would.
const SUB_BUCKETS: usize = 16;
/// Powers of two covered (nanoseconds up to 2^40, about 18 minutes).
const MAGNITUDES: usize = 41;

/// The ranges `LATENCY HISTOGRAM` reports: Redis iterates its HDR histogram (1 ns to 1 s,
/// two significant digits) logarithmically from 1024 ns, doubling; range `k` ends at the
/// highest value equivalent to `1024 << k` at that precision, `(1024 << k) * 129 / 128 - 1`
/// ns, and is labelled with that in whole microseconds. 21 ranges reach 1 s.
const LEVELS: usize = 21;

/// Redis's `LATENCY_HISTOGRAM_MAX_VALUE`: longer calls are recorded as 1 s.
const LEVELS_MAX_NS: u64 = 1_000_000_000;

/// The last nanosecond value of `LATENCY HISTOGRAM` range `k`.
fn level_end_ns(k: usize) -> u64 {
    let base = 1024u64 << k;
    base + base / 128 - 1
}

/// The `LATENCY HISTOGRAM` range of a latency of `ns` (clamped to 1 ns..1 s, as Redis does).
fn level(ns: u64) -> usize {
    let ns = ns.clamp(1, LEVELS_MAX_NS);
    if ns <= level_end_ns(0) {
        return 0;
    }
    // The first power of two ≥ ns is 1024 << k; the range before it ends a little past the
    // power of two below, so ns falls in range k or k - 1.
    let k = (64 - (ns - 1).leading_zeros() as usize).saturating_sub(10);
    if k > 0 && ns <= level_end_ns(k - 1) {
        k - 1
    } else {
        k.min(LEVELS - 1)
    }
}

/// A log-linear histogram of latencies in nanoseconds, with the counts per
/// `LATENCY HISTOGRAM` range beside it.
#[derive(Debug, Clone)]
struct Histogram {
    counts: Box<[u64]>,
    total: u64,
    levels: [u64; LEVELS],
}

impl Histogram {
    fn new() -> Self {
        Histogram {
            counts: vec![0; MAGNITUDES * SUB_BUCKETS].into_boxed_slice(),
            total: 0,
            levels: [0; LEVELS],
        }
    }

    /// The bucket of `ns`: its power of two, then the next four bits below the top one.
    fn bucket(ns: u64) -> usize {
        if ns < SUB_BUCKETS as u64 {
            return ns as usize;
        }
        let magnitude = 63 - ns.leading_zeros() as usize; // ≥ 4
        let sub = ((ns >> (magnitude - 4)) & 0xf) as usize;
        ((magnitude - 3) * SUB_BUCKETS + sub).min(MAGNITUDES * SUB_BUCKETS - 1)
    }

    /// The largest value that falls in `bucket`.
    fn upper_bound(bucket: usize) -> u64 {
        if bucket < SUB_BUCKETS {
            return bucket as u64;
        }
        let magnitude = bucket / SUB_BUCKETS + 3;
        let sub = (bucket % SUB_BUCKETS) as u64;
        ((SUB_BUCKETS as u64 + sub + 1) << (magnitude - 4)) - 1
    }

    fn record(&mut self, ns: u64) {
        if let Some(c) = self.counts.get_mut(Self::bucket(ns)) {
            *c += 1;
            self.total += 1;
        }
        if let Some(c) = self.levels.get_mut(level(ns)) {
            *c += 1;
        }
    }

    /// `LATENCY HISTOGRAM`'s `histogram_usec`: (range label in µs, calls up to its end),
    /// cumulative, ranges that add no call left out.
    fn cumulative_levels(&self) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        let mut seen = 0;
        for (k, &count) in self.levels.iter().enumerate() {
            if count > 0 {
                seen += count;
                out.push((level_end_ns(k) / 1000, seen));
            }
        }
        out
    }

    /// The value at percentile `p` (0..=100), in nanoseconds.
    fn percentile(&self, p: f64) -> u64 {
        let rank = ((p / 100.0) * self.total as f64).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return Self::upper_bound(i);
            }
        }
        0
    }
}

/// One command's counters.
#[derive(Debug, Clone)]
struct Entry {
    /// `parent|name` for a subcommand.
    name: String,
    calls: u64,
    /// Calls timed, and the nanoseconds they took.
    timed: u64,
    timed_ns: u64,
    failed: u64,
    rejected: u64,
    latency: Option<Histogram>,
}

/// One command's `LATENCY HISTOGRAM` entry.
#[derive(Debug)]
pub(crate) struct LatencyHistogram<'a> {
    /// The command's name (`parent|sub` for a subcommand).
    pub(crate) name: &'a str,
    /// The calls timed.
    pub(crate) calls: u64,
    /// (range label in µs, calls up to the range's end), ranges that add no call left out.
    pub(crate) ranges: Vec<(u64, u64)>,
}

/// More statistics indexes than the command table has.
const MAX_STATS: usize = 1 << 16;

/// Counters of the commands used so far, indexed by [`Resolved::stat`] (a vector, so
/// counting a call is one index, not a lookup).
#[derive(Debug, Default)]
pub(crate) struct CommandStats {
    entries: Vec<Option<Entry>>,
}

impl CommandStats {
    fn entry(&mut self, resolved: Resolved) -> Option<&mut Entry> {
        let i = resolved.stat as usize;
        if self.entries.len() <= i {
            // Statistics indexes are the command table's (a few hundred); the bound only keeps
            // a bad index from allocating.
            if i >= MAX_STATS {
                return None;
            }
            self.entries.resize_with(i + 1, || None);
        }
        let slot = self.entries.get_mut(i)?;
        Some(slot.get_or_insert_with(|| Entry {
            name: match resolved.parent {
                Some(p) => format!("{}|{}", p.name, resolved.spec.name),
                None => resolved.spec.name.to_string(),
            },
            calls: 0,
            timed: 0,
            timed_ns: 0,
            failed: 0,
            rejected: 0,
            latency: None,
        }))
    }

    /// Whether the next call of `resolved` is one to time.
    pub(crate) fn should_time(&self, resolved: Resolved) -> bool {
        match self.entries.get(resolved.stat as usize) {
            Some(Some(e)) => e.calls % TIME_SAMPLE == 0,
            _ => true,
        }
    }

    /// A call of `resolved` that failed or not, with how long it took in µs if it was timed.
    pub(crate) fn record(&mut self, resolved: Resolved, elapsed_us: Option<u64>, failed: bool) {
        let Some(entry) = self.entry(resolved) else {
            return;
        };
        entry.calls += 1;
        entry.failed += u64::from(failed);
        if let Some(us) = elapsed_us {
            // Redis records `duration * 1000` in its histograms.
            let ns = us.saturating_mul(1000);
            entry.timed += 1;
            entry.timed_ns = entry.timed_ns.saturating_add(ns);
            entry.latency.get_or_insert_with(Histogram::new).record(ns);
        }
    }

    /// A call of `resolved` refused before it ran (arity, OOM, BUSY, NOAUTH, READONLY, ...).
    pub(crate) fn reject(&mut self, resolved: Resolved) {
        if let Some(entry) = self.entry(resolved) {
            entry.rejected += 1;
        }
    }

    /// These counters with the rejections counted in `rejected` added.
    pub(crate) fn merged(&self, rejected: &CommandStats) -> CommandStats {
        let len = self.entries.len().max(rejected.entries.len());
        let mut entries = self.entries.clone();
        entries.resize_with(len, || None);
        for (slot, r) in entries.iter_mut().zip(&rejected.entries) {
            let Some(r) = r else { continue };
            slot.get_or_insert_with(|| Entry {
                name: r.name.clone(),
                calls: 0,
                timed: 0,
                timed_ns: 0,
                failed: 0,
                rejected: 0,
                latency: None,
            })
            .rejected += r.rejected;
        }
        CommandStats { entries }
    }

    /// `CONFIG RESETSTAT`.
    pub(crate) fn reset(&mut self) {
        self.entries.clear();
    }

    /// `INFO commandstats` lines, by command name.
    pub(crate) fn commandstats(&self, out: &mut String) {
        let mut entries: Vec<&Entry> = self.entries.iter().flatten().collect();
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        for e in entries {
            let per_call = if e.timed == 0 {
                0.0
            } else {
                e.timed_ns as f64 / e.timed as f64 / 1000.0
            };
            let usec = (per_call * e.calls as f64).round() as u64;
            let _ = write!(
                out,
                "cmdstat_{}:calls={},usec={},usec_per_call={:.2},rejected_calls={},failed_calls={}\r\n",
                e.name, e.calls, usec, per_call, e.rejected, e.failed
            );
        }
    }

    /// `LATENCY HISTOGRAM` of the command with statistics index `stat`; `None` if no call
    /// was timed.
    pub(crate) fn latency_histogram(&self, stat: u32) -> Option<LatencyHistogram<'_>> {
        let entry = self.entries.get(usize::try_from(stat).ok()?)?.as_ref()?;
        let histogram = entry.latency.as_ref()?;
        Some(LatencyHistogram {
            name: entry.name.as_str(),
            calls: histogram.total,
            ranges: histogram.cumulative_levels(),
        })
    }

    /// The statistics indexes of every command with a latency histogram, by name.
    pub(crate) fn timed_commands(&self) -> Vec<u32> {
        let mut timed: Vec<(&str, u32)> = self
            .entries
            .iter()
            .enumerate()
            .filter_map(|(i, e)| {
                let e = e.as_ref()?;
                e.latency.as_ref()?;
                Some((e.name.as_str(), u32::try_from(i).ok()?))
            })
            .collect();
        timed.sort_unstable();
        timed.into_iter().map(|(_, i)| i).collect()
    }

    /// `INFO latencystats` lines (p50, p99, p99.9 in microseconds), by command name.
    pub(crate) fn latencystats(&self, out: &mut String) {
        let mut entries: Vec<&Entry> = self.entries.iter().flatten().collect();
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        for e in entries {
            let Some(h) = &e.latency else { continue };
            let us = |p: f64| h.percentile(p) as f64 / 1000.0;
            let _ = write!(
                out,
                "latency_percentiles_usec_{}:p50={:.3},p99={:.3},p99.9={:.3}\r\n",
                e.name,
                us(50.0),
                us(99.0),
                us(99.9)
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{level, level_end_ns, Histogram, LEVELS};

    #[test]
    fn latency_histogram_ranges_are_redis_ones() {
        let labels: Vec<u64> = (0..LEVELS).map(|k| level_end_ns(k) / 1000).collect();
        assert_eq!(
            labels,
            [
                1, 2, 4, 8, 16, 33, 66, 132, 264, 528, 1056, 2113, 4227, 8454, 16908, 33816, 67633,
                135266, 270532, 541065, 1082130
            ]
        );
        // Whole microseconds, as Redis records them.
        for (us, label) in [
            (0, 1),
            (1, 1),
            (2, 2),
            (3, 4),
            (33, 33),
            (34, 66),
            (66, 66),
            (67, 132),
            (1_000_000, 1_082_130),
            (5_000_000, 1_082_130),
        ] {
            assert_eq!(level_end_ns(level(us * 1000)) / 1000, label, "{us} µs");
        }
        let mut h = Histogram::new();
        for us in [1, 1, 3, 40] {
            h.record(us * 1000);
        }
        assert_eq!(h.cumulative_levels(), [(1, 2), (4, 3), (66, 4)]);
    }

    #[test]
    fn buckets_bound_their_values_within_a_sixteenth() {
        for ns in [0u64, 1, 15, 16, 17, 31, 32, 1000, 123_456, 10_000_000_000] {
            let b = Histogram::bucket(ns);
            let upper = Histogram::upper_bound(b);
            assert!(upper >= ns, "{ns}: {upper}");
            assert!(upper - ns <= ns / 16 + 1, "{ns}: {upper}");
            if b > 0 {
                assert!(Histogram::upper_bound(b - 1) < ns, "{ns}");
            }
        }
    }

    #[test]
    fn percentiles_follow_the_distribution() {
        let mut h = Histogram::new();
        for ns in 1..=1000u64 {
            h.record(ns * 1000);
        }
        let p50 = h.percentile(50.0);
        assert!((480_000..=540_000).contains(&p50), "{p50}");
        let p99 = h.percentile(99.0);
        assert!((980_000..=1_060_000).contains(&p99), "{p99}");
    }
}
