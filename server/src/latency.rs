//! The latency monitor (`LATENCY LATEST|HISTORY|RESET|GRAPH|DOCTOR`): per event class
//! (`command`, `fast-command`, `expire-cycle`), the latest [`LATENCY_TS_LEN`] seconds in which
//! the event took at least `latency-monitor-threshold` milliseconds, the worst sample of each
//! second and the worst of all time, as Redis's `latency.c` keeps them; and the texts Redis
//! derives from them (the sparkline graph, the doctor's report).
//!
//! Samples are added only past the threshold, which the caller checks (one comparison), so
//! with the monitor off (`latency-monitor-threshold 0`, the default) nothing here runs.

use std::fmt::Write as _;

/// Redis's `LATENCY_TS_LEN`: seconds of history kept per event.
pub(crate) const LATENCY_TS_LEN: usize = 160;

/// Columns of `LATENCY GRAPH` (Redis's `LATENCY_GRAPH_COLS`).
const LATENCY_GRAPH_COLS: usize = 80;

/// One second's worst latency of an event.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Sample {
    /// Unix time in seconds (0: an unused slot).
    time: u64,
    /// Milliseconds.
    latency: u64,
}

/// The history of one event: a ring of [`LATENCY_TS_LEN`] samples.
#[derive(Debug, Clone)]
struct Series {
    /// The slot the next sample goes to.
    idx: usize,
    /// The worst latency since the event was first seen (or reset).
    max: u64,
    samples: [Sample; LATENCY_TS_LEN],
}

impl Series {
    /// An empty history.
    fn new() -> Self {
        Series {
            idx: 0,
            max: 0,
            samples: [Sample::default(); LATENCY_TS_LEN],
        }
    }

    /// The used slots, oldest first.
    fn in_order(&self) -> impl Iterator<Item = Sample> + '_ {
        (0..LATENCY_TS_LEN)
            .filter_map(|j| self.samples.get((self.idx + j) % LATENCY_TS_LEN).copied())
            .filter(|s| s.time != 0)
    }

    /// The most recent slot (unused if nothing was recorded).
    fn last(&self) -> Sample {
        let last = (self.idx + LATENCY_TS_LEN - 1) % LATENCY_TS_LEN;
        self.samples.get(last).copied().unwrap_or_default()
    }
}

/// Every event class seen so far, in the order first seen.
#[derive(Debug, Default)]
pub(crate) struct LatencyMonitor {
    events: Vec<(&'static str, Box<Series>)>,
}

/// What `LATENCY DOCTOR` reads besides the samples.
#[derive(Debug, Clone, Copy)]
pub(crate) struct DoctorInput {
    /// Unix time in seconds.
    pub(crate) now: u64,
    /// `latency-monitor-threshold` in ms.
    pub(crate) threshold_ms: u64,
    /// `slowlog-log-slower-than` in µs.
    pub(crate) slowlog_log_slower_than: i64,
    /// `hz`.
    pub(crate) hz: u64,
}

/// The statistics the doctor derives from one event's samples (Redis's `latencyStats`).
#[derive(Debug, Default, PartialEq, Eq)]
struct Stats {
    avg: u64,
    mad: u64,
    samples: u64,
    /// Seconds from the oldest sample to now (at least 1).
    period: u64,
}

impl LatencyMonitor {
    /// Records that `event` took `latency_ms` at unix second `now` (Redis's
    /// `latencyAddSample`): one sample per second, the worst of that second.
    pub(crate) fn add(&mut self, event: &'static str, now: u64, latency_ms: u64) {
        let at = match self.events.iter().position(|(name, _)| *name == event) {
            Some(at) => at,
            None => {
                self.events.push((event, Box::new(Series::new())));
                self.events.len() - 1
            }
        };
        let Some((_, series)) = self.events.get_mut(at) else {
            return;
        };
        series.max = series.max.max(latency_ms);
        let prev = (series.idx + LATENCY_TS_LEN - 1) % LATENCY_TS_LEN;
        if let Some(sample) = series.samples.get_mut(prev) {
            if sample.time == now {
                sample.latency = sample.latency.max(latency_ms);
                return;
            }
        }
        if let Some(sample) = series.samples.get_mut(series.idx) {
            *sample = Sample {
                time: now,
                latency: latency_ms,
            };
        }
        series.idx = (series.idx + 1) % LATENCY_TS_LEN;
    }

    /// `LATENCY RESET [event]`: forgets `event` (any case), or every event; returns how many.
    pub(crate) fn reset(&mut self, event: Option<&[u8]>) -> usize {
        let before = self.events.len();
        match event {
            None => self.events.clear(),
            Some(event) => self
                .events
                .retain(|(name, _)| !name.as_bytes().eq_ignore_ascii_case(event)),
        }
        before - self.events.len()
    }

    /// The event named exactly `event`, with its history.
    fn series(&self, event: &[u8]) -> Option<(&'static str, &Series)> {
        self.events
            .iter()
            .find(|(name, _)| name.as_bytes() == event)
            .map(|(name, series)| (*name, &**series))
    }

    /// `LATENCY HISTORY event`: (unix time, ms) oldest first; empty for an unknown event.
    pub(crate) fn history(&self, event: &[u8]) -> Vec<(u64, u64)> {
        self.series(event)
            .map(|(_, s)| s.in_order().map(|s| (s.time, s.latency)).collect())
            .unwrap_or_default()
    }

    /// `LATENCY LATEST`: per event, its name, the time and latency of its latest sample, and
    /// its all-time maximum.
    pub(crate) fn latest(&self) -> Vec<(&'static str, u64, u64, u64)> {
        self.events
            .iter()
            .map(|(name, s)| {
                let last = s.last();
                (*name, last.time, last.latency, s.max)
            })
            .collect()
    }

    /// `LATENCY GRAPH event` at unix second `now`: Redis's header line, a rule and a sparkline
    /// of the samples labelled with their age; `None` for an unknown event.
    pub(crate) fn graph(&self, event: &[u8], now: u64) -> Option<String> {
        let (name, series) = self.series(event)?;
        let mut points = Vec::new();
        let (mut low, mut high) = (0, 0);
        for (n, sample) in series.in_order().enumerate() {
            if n == 0 {
                (low, high) = (sample.latency, sample.latency);
            } else {
                high = high.max(sample.latency);
                low = low.min(sample.latency);
            }
            let elapsed = now.saturating_sub(sample.time);
            let label = if elapsed < 60 {
                format!("{elapsed}s")
            } else if elapsed < 3600 {
                format!("{}m", elapsed / 60)
            } else if elapsed < 3600 * 24 {
                format!("{}h", elapsed / 3600)
            } else {
                format!("{}d", elapsed / (3600 * 24))
            };
            points.push((sample.latency as f64, label));
        }
        let mut graph = format!(
            "{name} - high {high} ms, low {low} ms (all time high {} ms)\n",
            series.max
        );
        graph.push_str(&"-".repeat(LATENCY_GRAPH_COLS));
        graph.push('\n');
        sparkline(&mut graph, &points, LATENCY_GRAPH_COLS, 4);
        Some(graph)
    }

    /// Redis's `analyzeLatencyForEvent`.
    fn stats(series: &Series, now: u64) -> Stats {
        let mut stats = Stats::default();
        let (mut sum, mut oldest) = (0u64, 0u64);
        for sample in series.in_order() {
            stats.samples += 1;
            sum += sample.latency;
            if oldest == 0 || sample.time < oldest {
                oldest = sample.time;
            }
        }
        if stats.samples == 0 {
            return stats;
        }
        stats.avg = sum / stats.samples;
        stats.period = now.saturating_sub(oldest).max(1);
        let deviation: u64 = series
            .in_order()
            .map(|s| s.latency.abs_diff(stats.avg))
            .sum();
        stats.mad = deviation / stats.samples;
        stats
    }

    /// `LATENCY DOCTOR`: Redis's `createLatencyReport`, word for word. Its advice about
    /// transparent huge pages is left out: Redis 7.0 turns them off for its own process at
    /// start (`disable-thp yes`), so by default it never gives it.
    pub(crate) fn doctor(&self, input: DoctorInput) -> String {
        if self.events.is_empty() && input.threshold_ms == 0 {
            return "I'm sorry, Dave, I can't do that. Latency monitoring is disabled in this Redis instance. You may use \"CONFIG SET latency-monitor-threshold <milliseconds>.\" in order to enable it. If we weren't in a deep space mission I'd suggest to take a look at https://redis.io/topics/latency-monitor.\n".into();
        }
        let mut report = String::new();
        let mut advice = Advice::default();
        let mut advices = 0;
        for (n, (event, series)) in self.events.iter().enumerate() {
            if n == 0 {
                report.push_str("Dave, I have observed latency spikes in this Redis instance. You don't mind talking about it, do you Dave?\n\n");
            }
            let stats = Self::stats(series, input.now);
            let per_sample = stats.period as f64 / stats.samples.max(1) as f64;
            let _ = write!(
                report,
                "{}. {event}: {} latency spikes (average {}ms, mean deviation {}ms, period {per_sample:.2} sec). Worst all time event {}ms.",
                n + 1,
                stats.samples,
                stats.avg,
                stats.mad,
                series.max
            );
            advices += advice.note(event, input);
            report.push('\n');
        }
        if self.events.is_empty() && advices == 0 {
            report.push_str("Dave, no latency spike was observed during the lifetime of this Redis instance, not in the slightest bit. I honestly think you ought to sit down calmly, take a stress pill, and think things over.\n");
        } else if !self.events.is_empty() && advices == 0 {
            report.push_str("\nWhile there are latency events logged, I'm not able to suggest any easy fix. Please use the Redis community to get some help, providing this report in your help request.\n");
        } else {
            report.push_str("\nI have a few advices for you:\n\n");
            advice.write(&mut report, input);
        }
        report
    }
}

/// The advice `LATENCY DOCTOR` accumulates over the events (the flags of
/// `createLatencyReport`; the fork, AOF and disk ones never apply here).
#[derive(Debug, Default)]
struct Advice {
    slowlog_enabled: bool,
    slowlog_tuning: bool,
    slowlog_inspect: bool,
    scheduler: bool,
    hz: bool,
    large_objects: bool,
    mass_eviction: bool,
}

impl Advice {
    /// Notes the advice for `event`; returns how many advices Redis counts for it.
    fn note(&mut self, event: &str, input: DoctorInput) -> usize {
        let is = |name: &str| event.eq_ignore_ascii_case(name);
        let mut count = 0;
        if is("command") {
            if input.slowlog_log_slower_than < 0 {
                self.slowlog_enabled = true;
                count += 1;
            } else if input.slowlog_log_slower_than / 1000 > input.threshold_ms as i64 {
                self.slowlog_tuning = true;
                count += 1;
            }
            self.slowlog_inspect = true;
            self.large_objects = true;
            count += 2;
        }
        if is("fast-command") {
            self.scheduler = true;
            count += 1;
        }
        if is("expire-cycle") {
            self.hz = true;
            self.large_objects = true;
            count += 2;
        }
        if is("eviction-del") {
            self.large_objects = true;
            count += 1;
        }
        if is("eviction-cycle") {
            self.mass_eviction = true;
            count += 1;
        }
        count
    }

    /// Appends the advice noted, in Redis's order.
    fn write(&self, report: &mut String, input: DoctorInput) {
        let threshold_us = input.threshold_ms.saturating_mul(1000);
        if self.slowlog_enabled {
            let _ = writeln!(report, "- There are latency issues with potentially slow commands you are using. Try to enable the Slow Log Redis feature using the command 'CONFIG SET slowlog-log-slower-than {threshold_us}'. If the Slow log is disabled Redis is not able to log slow commands execution for you.");
        }
        if self.slowlog_tuning {
            let _ = writeln!(report, "- Your current Slow Log configuration only logs events that are slower than your configured latency monitor threshold. Please use 'CONFIG SET slowlog-log-slower-than {threshold_us}'.");
        }
        if self.slowlog_inspect {
            report.push_str("- Check your Slow Log to understand what are the commands you are running which are too slow to execute. Please check https://redis.io/commands/slowlog for more information.\n");
        }
        if self.scheduler {
            report.push_str("- The system is slow to execute Redis code paths not containing system calls. This usually means the system does not provide Redis CPU time to run for long periods. You should try to:\n  1) Lower the system load.\n  2) Use a computer / VM just for Redis if you are running other software in the same system.\n  3) Check if you have a \"noisy neighbour\" problem.\n  4) Check with 'redis-cli --intrinsic-latency 100' what is the intrinsic latency in your system.\n  5) Check if the problem is allocator-related by recompiling Redis with MALLOC=libc, if you are using Jemalloc. However this may create fragmentation problems.\n");
        }
        if self.hz && input.hz < 100 {
            report.push_str("- In order to make the Redis keys expiring process more incremental, try to set the 'hz' configuration parameter to 100 using 'CONFIG SET hz 100'.\n");
        }
        if self.large_objects {
            report.push_str("- Deleting, expiring or evicting (because of maxmemory policy) large objects is a blocking operation. If you have very large objects that are often deleted, expired, or evicted, try to fragment those objects into multiple smaller objects.\n");
        }
        if self.mass_eviction {
            report.push_str("- Sudden changes to the 'maxmemory' setting via 'CONFIG SET', or allocation of large objects via sets or sorted sets intersections, STORE option of SORT, Redis Cluster large keys migrations (RESTORE command), may create sudden memory pressure forcing the server to block trying to evict keys. \n");
        }
    }
}

/// Redis's `sparklineRender` with `SPARKLINE_FILL`: `rows` rows of `_o#` (and `|` below the
/// top of a bar) scaled between the smallest and largest value, a blank line, then each
/// sample's label written downwards; at most `columns` samples per block, blocks separated by
/// an empty line.
fn sparkline(out: &mut String, points: &[(f64, String)], columns: usize, rows: usize) {
    let (mut min, mut max) = (0.0f64, 0.0f64);
    for (n, (value, _)) in points.iter().enumerate() {
        if n == 0 {
            (min, max) = (*value, *value);
        } else if *value < min {
            min = *value;
        } else if *value > max {
            max = *value;
        }
    }
    for (n, block) in points.chunks(columns.max(1)).enumerate() {
        if n != 0 {
            out.push('\n');
        }
        render_range(out, block, min, max, rows);
    }
}

/// One block of [`sparkline`] (Redis's `sparklineRenderRange`).
fn render_range(out: &mut String, points: &[(f64, String)], min: f64, max: f64, rows: usize) {
    const FILL: &[u8] = b"_o#";
    let charset_len = FILL.len() as i64;
    let relmax = if max - min == 0.0 { 1.0 } else { max - min };
    let steps = charset_len * rows as i64;
    let labelled = points.iter().any(|(_, label)| !label.is_empty());
    let longest = points.iter().map(|(_, l)| l.len()).max().unwrap_or(0);
    // The sparkline rows, the blank line and one row per label character: bounded.
    for row in 0..rows + 1 + longest {
        let mut line = vec![b' '; points.len()];
        let mut any = false;
        if row < rows {
            any = !points.is_empty();
            for ((value, _), c) in points.iter().zip(line.iter_mut()) {
                // C: `(int)(relval*steps)/relmax`, truncated again when stored in an int.
                let scaled = ((value - min) * steps as f64).trunc();
                let step = ((scaled / relmax) as i64).clamp(0, steps - 1);
                let charidx = step - (rows - row - 1) as i64 * charset_len;
                if (0..charset_len).contains(&charidx) {
                    *c = FILL.get(charidx as usize).copied().unwrap_or(b' ');
                } else if charidx >= charset_len {
                    *c = b'|';
                }
            }
        } else if row == rows {
            // The margin between the graph and its labels (Redis's `label_margin_top`).
            any = labelled;
        } else {
            let at = row - rows - 1;
            for ((_, label), c) in points.iter().zip(line.iter_mut()) {
                if let Some(&ch) = label.as_bytes().get(at) {
                    *c = ch;
                    any = true;
                }
            }
        }
        if !any {
            break;
        }
        out.push_str(&String::from_utf8_lossy(&line));
        out.push('\n');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_sample_per_second_keeps_the_worst() {
        let mut monitor = LatencyMonitor::default();
        monitor.add("command", 100, 5);
        monitor.add("command", 100, 9);
        monitor.add("command", 100, 7);
        monitor.add("command", 101, 3);
        assert_eq!(monitor.history(b"command"), [(100, 9), (101, 3)]);
        assert_eq!(monitor.latest(), [("command", 101, 3, 9)]);
        assert!(monitor.history(b"COMMAND").is_empty());
        assert_eq!(monitor.reset(Some(b"COMMAND")), 1);
        assert!(monitor.latest().is_empty());
    }

    #[test]
    fn the_history_is_a_ring_of_160_seconds() {
        let mut monitor = LatencyMonitor::default();
        for t in 1..=200 {
            monitor.add("expire-cycle", t, t);
        }
        let history = monitor.history(b"expire-cycle");
        assert_eq!(history.len(), LATENCY_TS_LEN);
        assert_eq!(history.first(), Some(&(41, 41)));
        assert_eq!(history.last(), Some(&(200, 200)));
    }

    #[test]
    fn the_graph_matches_redis_layout() {
        let mut monitor = LatencyMonitor::default();
        monitor.add("command", 1000, 300);
        monitor.add("command", 1001, 400);
        monitor.add("command", 1002, 500);
        let graph = monitor.graph(b"command", 1012).unwrap();
        let expected = format!(
            "command - high 500 ms, low 300 ms (all time high 500 ms)\n{}\n  #\n _|\n ||\n_||\n   \n111\n210\nsss\n",
            "-".repeat(80)
        );
        assert_eq!(graph, expected);
        assert!(monitor.graph(b"nope", 0).is_none());
    }

    #[test]
    fn the_doctor_speaks_as_redis() {
        let input = DoctorInput {
            now: 1010,
            threshold_ms: 0,
            slowlog_log_slower_than: 10_000,
            hz: 10,
        };
        let monitor = LatencyMonitor::default();
        assert!(monitor.doctor(input).starts_with("I'm sorry, Dave"));
        let on = DoctorInput {
            threshold_ms: 100,
            ..input
        };
        assert!(monitor.doctor(on).starts_with("Dave, no latency spike"));
        let mut monitor = LatencyMonitor::default();
        monitor.add("command", 1000, 300);
        monitor.add("command", 1002, 500);
        let report = monitor.doctor(on);
        assert!(report.starts_with(
            "Dave, I have observed latency spikes in this Redis instance. You don't mind talking about it, do you Dave?\n\n\
             1. command: 2 latency spikes (average 400ms, mean deviation 100ms, period 5.00 sec). Worst all time event 500ms.\n\
             \nI have a few advices for you:\n\n- Check your Slow Log"
        ), "{report}");
    }
}
