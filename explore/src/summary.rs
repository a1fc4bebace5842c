//! Explorations split over processes or machines: a [`Shard`] of the seed space, the
//! [`Summary`] of one cell (what a [`Report`] found, as plain data that goes to JSON and back),
//! and [`Summary::merge`], which gives from the shards' summaries exactly the summary of the
//! whole seed range run in one process.
//!
//! Merging is exact because a run depends on its seed alone: the shards together make the
//! same runs, their counts add up, and the first unsafe seed of the whole range is the smallest
//! first seed of the shards, shrunk by its shard exactly as one process would have shrunk it.

use crate::{Exploration, FaultClass, LockKind, Report};
use serde_json::{json, Value};
use std::fmt;
use std::ops::Range;
use std::str::FromStr;

/// One of `count` interleaved parts of a seed range: the seeds `s` with `s % count == index`
/// (so every shard gets early and late seeds alike). `0/1` is the whole range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Shard {
    /// Which part, from 0.
    pub index: u64,
    /// How many parts.
    pub count: u64,
}

impl Shard {
    /// The whole seed range, one part.
    pub const WHOLE: Shard = Shard { index: 0, count: 1 };

    /// Part `index` of `count`; `None` unless `index < count`.
    pub fn new(index: u64, count: u64) -> Option<Shard> {
        (index < count).then_some(Shard { index, count })
    }

    /// Whether `seed` belongs to this part.
    pub fn holds(self, seed: u64) -> bool {
        seed % self.count == self.index
    }
}

impl Default for Shard {
    fn default() -> Self {
        Shard::WHOLE
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl FromStr for Shard {
    type Err = String;

    /// `I/N`, with `I < N`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || format!("a shard is I/N with 0 <= I < N, not '{s}'");
        let (index, count) = s.split_once('/').ok_or_else(bad)?;
        let index = index.trim().parse().map_err(|_| bad())?;
        let count = count.trim().parse().map_err(|_| bad())?;
        Shard::new(index, count).ok_or_else(bad)
    }
}

/// The first unsafe run of a cell, as plain data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FirstUnsafe {
    /// Its seed.
    pub seed: u64,
    /// The schedule the seed drew.
    pub schedule: String,
    /// The smallest schedule found that still fails.
    pub minimal: String,
    /// The first unsafe violation of the minimal run.
    pub violation: String,
    /// The command that replays the minimal run.
    pub replay: String,
}

/// What one cell of exploration found, as plain data (a [`Report`] without its histories).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    /// The lock kind.
    pub kind: LockKind,
    /// The fault class.
    pub class: FaultClass,
    /// The seed range explored (all shards together).
    pub seeds: Range<u64>,
    /// Most faults a schedule draws.
    pub max_faults: usize,
    /// The part of the seed range this summary covers.
    pub shard: Shard,
    /// Runs made.
    pub runs: u64,
    /// Runs with a safety violation.
    pub unsafe_runs: u64,
    /// Runs with a liveness problem.
    pub liveness_runs: u64,
    /// Runs where an acquire overran its wait outside faults.
    pub wait_overrun_runs: u64,
    /// Runs that left a lock key without a TTL behind.
    pub leak_runs: u64,
    /// The first unsafe run, shrunk.
    pub first: Option<FirstUnsafe>,
    /// The first run with a liveness problem: its seed and what was found.
    pub first_liveness: Option<(u64, Vec<String>)>,
}

/// Why summaries could not be read or merged.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SummaryError(String);

impl Summary {
    /// The summary of `report`.
    pub fn of(report: &Report) -> Summary {
        let e: &Exploration = &report.exploration;
        Summary {
            kind: e.workload.kind,
            class: e.class,
            seeds: e.seeds.clone(),
            max_faults: e.max_faults,
            shard: e.shard,
            runs: report.runs,
            unsafe_runs: report.unsafe_runs,
            liveness_runs: report.liveness_runs,
            wait_overrun_runs: report.wait_overrun_runs,
            leak_runs: report.leak_runs,
            first: report.first.as_ref().map(|f| FirstUnsafe {
                seed: f.seed,
                schedule: f.schedule.to_string(),
                minimal: f.minimal.to_string(),
                violation: f.outcome.first_unsafe().unwrap_or_default(),
                replay: f.replay.clone(),
            }),
            first_liveness: report.first_liveness.clone(),
        }
    }

    /// The summary as JSON (fields in a fixed order: the same summary gives the same text).
    pub fn to_json(&self) -> Value {
        json!({
            "kind": self.kind.name(),
            "class": self.class.name(),
            "seeds": [self.seeds.start, self.seeds.end],
            "max_faults": self.max_faults,
            "shard": self.shard.to_string(),
            "runs": self.runs,
            "unsafe_runs": self.unsafe_runs,
            "liveness_runs": self.liveness_runs,
            "wait_overrun_runs": self.wait_overrun_runs,
            "leak_runs": self.leak_runs,
            "first_unsafe": self.first.as_ref().map(|f| json!({
                "seed": f.seed,
                "schedule": f.schedule,
                "minimal": f.minimal,
                "violation": f.violation,
                "replay": f.replay,
            })),
            "first_liveness": self.first_liveness.as_ref().map(|(seed, found)| json!({
                "seed": seed,
                "found": found,
            })),
        })
    }

    /// Reads a summary written by [`Summary::to_json`].
    ///
    /// # Errors
    /// When a field is missing or of the wrong type, or names an unknown kind, class or shard.
    pub fn from_json(value: &Value) -> Result<Summary, SummaryError> {
        let seeds = value
            .get("seeds")
            .and_then(Value::as_array)
            .filter(|a| a.len() == 2)
            .ok_or_else(|| SummaryError("'seeds' is not [start, end]".into()))?;
        let bound = |v: &Value| {
            v.as_u64()
                .ok_or_else(|| SummaryError("'seeds' is not [start, end]".into()))
        };
        let first = match value.get("first_unsafe") {
            None | Some(Value::Null) => None,
            Some(f) => Some(FirstUnsafe {
                seed: uint(f, "seed")?,
                schedule: text(f, "schedule")?.to_string(),
                minimal: text(f, "minimal")?.to_string(),
                violation: text(f, "violation")?.to_string(),
                replay: text(f, "replay")?.to_string(),
            }),
        };
        let first_liveness = match value.get("first_liveness") {
            None | Some(Value::Null) => None,
            Some(f) => {
                let found = f
                    .get("found")
                    .and_then(Value::as_array)
                    .ok_or_else(|| SummaryError("'found' is not an array".into()))?
                    .iter()
                    .map(|v| {
                        v.as_str()
                            .map(str::to_string)
                            .ok_or_else(|| SummaryError("'found' holds a non-string".into()))
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                Some((uint(f, "seed")?, found))
            }
        };
        Ok(Summary {
            kind: parse(text(value, "kind")?)?,
            class: parse(text(value, "class")?)?,
            seeds: bound(&seeds[0])?..bound(&seeds[1])?,
            max_faults: usize::try_from(uint(value, "max_faults")?)
                .map_err(|_| SummaryError("'max_faults' is too large".into()))?,
            shard: parse(text(value, "shard")?)?,
            runs: uint(value, "runs")?,
            unsafe_runs: uint(value, "unsafe_runs")?,
            liveness_runs: uint(value, "liveness_runs")?,
            wait_overrun_runs: uint(value, "wait_overrun_runs")?,
            leak_runs: uint(value, "leak_runs")?,
            first,
            first_liveness,
        })
    }

    /// Merges the summaries of every shard of one cell into the summary of the whole seed
    /// range, exactly what one process exploring the whole range gives.
    ///
    /// # Errors
    /// When the summaries are of different cells, seed ranges or fault bounds, or their
    /// shards are not each of `0/N .. N-1/N` exactly once.
    pub fn merge(parts: &[Summary]) -> Result<Summary, SummaryError> {
        let first = parts
            .first()
            .ok_or_else(|| SummaryError("no summaries to merge".into()))?;
        let count = first.shard.count;
        if u64::try_from(parts.len()).ok() != Some(count) {
            return Err(SummaryError(format!(
                "{} summaries for {count} shards",
                parts.len()
            )));
        }
        let mut seen = vec![false; parts.len()];
        for part in parts {
            if (part.kind, part.class, &part.seeds, part.max_faults)
                != (first.kind, first.class, &first.seeds, first.max_faults)
            {
                return Err(SummaryError(format!(
                    "{} × {} (seeds {:?}, {} faults) cannot merge with {} × {} (seeds {:?}, {} faults)",
                    part.kind,
                    part.class.name(),
                    part.seeds,
                    part.max_faults,
                    first.kind,
                    first.class.name(),
                    first.seeds,
                    first.max_faults
                )));
            }
            let slot = usize::try_from(part.shard.index)
                .ok()
                .filter(|_| part.shard.count == count)
                .and_then(|i| seen.get_mut(i))
                .ok_or_else(|| {
                    SummaryError(format!("shard {} is not one of {count}", part.shard))
                })?;
            if std::mem::replace(slot, true) {
                return Err(SummaryError(format!("shard {} given twice", part.shard)));
            }
        }
        Ok(Summary {
            shard: Shard::WHOLE,
            runs: parts.iter().map(|p| p.runs).sum(),
            unsafe_runs: parts.iter().map(|p| p.unsafe_runs).sum(),
            liveness_runs: parts.iter().map(|p| p.liveness_runs).sum(),
            wait_overrun_runs: parts.iter().map(|p| p.wait_overrun_runs).sum(),
            leak_runs: parts.iter().map(|p| p.leak_runs).sum(),
            first: parts
                .iter()
                .filter_map(|p| p.first.clone())
                .min_by_key(|f| f.seed),
            first_liveness: parts
                .iter()
                .filter_map(|p| p.first_liveness.clone())
                .min_by_key(|(seed, _)| *seed),
            ..first.clone()
        })
    }
}

fn text<'a>(value: &'a Value, field: &str) -> Result<&'a str, SummaryError> {
    value
        .get(field)
        .and_then(Value::as_str)
        .ok_or_else(|| SummaryError(format!("'{field}' is missing or not a string")))
}

fn uint(value: &Value, field: &str) -> Result<u64, SummaryError> {
    value
        .get(field)
        .and_then(Value::as_u64)
        .ok_or_else(|| SummaryError(format!("'{field}' is missing or not a count")))
}

fn parse<T: FromStr>(s: &str) -> Result<T, SummaryError>
where
    T::Err: fmt::Display,
{
    s.parse()
        .map_err(|e: T::Err| SummaryError(format!("'{s}': {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_parse_and_partition_the_seeds() {
        assert_eq!("2/5".parse::<Shard>(), Ok(Shard { index: 2, count: 5 }));
        for bad in ["5/5", "1/0", "x/2", "3", "-1/2", ""] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
        let shards: Vec<Shard> = (0..4).filter_map(|i| Shard::new(i, 4)).collect();
        for seed in 0..100 {
            assert_eq!(shards.iter().filter(|s| s.holds(seed)).count(), 1);
        }
    }
}
