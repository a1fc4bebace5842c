//! A node's journal: what its disk would hold with an append-only file that is rewritten
//! periodically (Redis 7's multi-part AOF: a base and the writes since) — checkpoints of the
//! dataset and every write after them, each stamped with the instant the node made it. From it
//! the dataset as it was at an earlier instant can be rebuilt, as a node restarting after a
//! crash finds what it had written to disk up to its last `fsync`.
//!
//! What is recorded is what the node's replicas would get: its own write effects as a master,
//! the stream it applied as a replica (see [`crate::replication`]), and a checkpoint whenever
//! its dataset is replaced wholesale (a replica's full synchronisation), all under the state
//! lock, so in execution order.
//!
//! Time is tokio's monotonic clock, not the node's [`crate::clock::Clock`]: how much a crash
//! loses depends on how long ago a write was made (an `fsync` every second), which jumping the
//! node's clock does not change. Under `tokio::time::pause()` it is the paused clock.
//!
//! Memory stays bounded: a checkpoint is taken once the newest is `window` old (or after
//! [`MAX_WRITES_PER_CHECKPOINT`] writes), and only the newest checkpoint at least `window` old
//! is kept with what follows it, so the journal reaches back at least `window` (at most
//! [`MAX_CHECKPOINTS`] checkpoints; under more writes than that allows, less far).

use crate::db::Db;
use bytes::Bytes;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::time::Instant;

/// Writes after which a checkpoint is taken even when the newest one is younger than the
/// window, so a node written to very fast does not hold an unbounded log.
pub(crate) const MAX_WRITES_PER_CHECKPOINT: u64 = 100_000;

/// Checkpoints kept at most (two suffice while [`MAX_WRITES_PER_CHECKPOINT`] is not reached).
pub(crate) const MAX_CHECKPOINTS: usize = 4;

/// A node's dataset at one instant: its databases and function libraries (as the payload
/// `FUNCTION DUMP` gives).
#[derive(Debug, Clone)]
pub(crate) struct Snapshot {
    pub(crate) dbs: Vec<Db>,
    pub(crate) functions: Vec<u8>,
}

/// A node's journal (see the module docs), from
/// [`NodeControl::start_journal`](crate::control::NodeControl::start_journal). Clones share it;
/// it stays readable after the node stopped.
#[derive(Debug, Clone)]
pub struct Journal {
    log: Arc<Mutex<Log>>,
}

/// The dataset a [`Journal`] held at an instant: a checkpoint and the writes made after it up
/// to that instant. A node loads it with
/// [`NodeControl::recover`](crate::control::NodeControl::recover).
#[derive(Debug, Clone)]
pub struct Recovery {
    pub(crate) base: Arc<Snapshot>,
    pub(crate) writes: Vec<(usize, Vec<Bytes>)>,
}

impl Recovery {
    /// How many writes are replayed on top of the checkpoint.
    pub fn writes(&self) -> usize {
        self.writes.len()
    }
}

#[derive(Debug)]
struct Log {
    window: Duration,
    /// The node stopped: nothing more is recorded.
    closed: bool,
    /// Oldest first; never empty.
    checkpoints: VecDeque<Checkpoint>,
    /// The writes made after the oldest checkpoint, oldest first.
    writes: VecDeque<Write>,
    /// Sequence number of `writes[0]` (of the next write when there is none).
    first_seq: u64,
    /// `checkpoints[0]` is the dataset the journal started from: on disk before the journal
    /// began, so it stands for any earlier instant too.
    from_origin: bool,
    started_at: Instant,
}

#[derive(Debug)]
struct Checkpoint {
    at: Instant,
    /// Sequence number of the first write not in it.
    seq: u64,
    data: Arc<Snapshot>,
}

#[derive(Debug)]
struct Write {
    at: Instant,
    db: usize,
    argv: Vec<Bytes>,
}

impl Journal {
    /// A journal keeping at least `window` of history, starting from `origin` (the dataset
    /// already on disk).
    pub(crate) fn new(window: Duration, origin: Snapshot) -> Journal {
        let now = Instant::now();
        let mut checkpoints = VecDeque::new();
        checkpoints.push_back(Checkpoint {
            at: now,
            seq: 0,
            data: Arc::new(origin),
        });
        Journal {
            log: Arc::new(Mutex::new(Log {
                window,
                closed: false,
                checkpoints,
                writes: VecDeque::new(),
                first_seq: 0,
                from_origin: true,
                started_at: now,
            })),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Log> {
        // A panic while holding this lock left a consistent log (every step is a push or a
        // pop), so a poisoned lock is still usable.
        self.log.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records the writes of one atomic unit (`(db, argv)`, as propagated), now. `snapshot`
    /// gives the dataset after them, called only when a checkpoint is due.
    pub(crate) fn record(
        &self,
        writes: &[(usize, Vec<Bytes>)],
        snapshot: impl FnOnce() -> Snapshot,
    ) {
        if writes.is_empty() {
            return;
        }
        let mut log = self.lock();
        if log.closed {
            return;
        }
        let at = Instant::now();
        for (db, argv) in writes {
            log.writes.push_back(Write {
                at,
                db: *db,
                argv: argv.clone(),
            });
        }
        let next = log.next_seq();
        let due = log.checkpoints.back().is_none_or(|c| {
            at.saturating_duration_since(c.at) >= log.window
                || next.saturating_sub(c.seq) >= MAX_WRITES_PER_CHECKPOINT
        });
        if due {
            log.checkpoint(at, snapshot());
        }
    }

    /// Records that the dataset was replaced by `snapshot` now (a full synchronisation).
    pub(crate) fn reset(&self, snapshot: Snapshot) {
        let mut log = self.lock();
        if !log.closed {
            log.checkpoint(Instant::now(), snapshot);
        }
    }

    /// How far back the journal keeps history.
    pub fn window(&self) -> Duration {
        self.lock().window
    }

    /// When the journal started.
    pub fn started_at(&self) -> Instant {
        self.lock().started_at
    }

    /// Stops recording (the node crashed); what was recorded stays readable.
    pub fn close(&self) {
        self.lock().closed = true;
    }

    /// Whether [`Journal::as_of`] can rebuild the dataset as of `at`.
    pub fn reaches(&self, at: Instant) -> bool {
        self.lock().base_for(at).is_some()
    }

    /// The dataset as it was at `at`: every write made at or before `at`, none made after.
    /// `None` when the journal no longer reaches back that far (see [`Journal::reaches`]).
    pub fn as_of(&self, at: Instant) -> Option<Recovery> {
        let log = self.lock();
        let base = log.base_for(at)?;
        let from = base.seq.saturating_sub(log.first_seq);
        let writes = log
            .writes
            .iter()
            .skip(usize::try_from(from).unwrap_or(usize::MAX))
            .take_while(|w| w.at <= at)
            .map(|w| (w.db, w.argv.clone()))
            .collect();
        Some(Recovery {
            base: base.data.clone(),
            writes,
        })
    }
}

impl Log {
    fn next_seq(&self) -> u64 {
        self.first_seq + self.writes.len() as u64
    }

    /// The newest checkpoint taken at or before `at` (the origin for an earlier instant).
    fn base_for(&self, at: Instant) -> Option<&Checkpoint> {
        match self.checkpoints.iter().rposition(|c| c.at <= at) {
            Some(i) => self.checkpoints.get(i),
            None if self.from_origin => self.checkpoints.front(),
            None => None,
        }
    }

    /// Adds a checkpoint of the dataset at `at` (after every write recorded so far), then
    /// forgets what the journal no longer needs.
    fn checkpoint(&mut self, at: Instant, data: Snapshot) {
        let seq = self.next_seq();
        self.checkpoints.push_back(Checkpoint {
            at,
            seq,
            data: Arc::new(data),
        });
        // Keep the newest checkpoint at least `window` old and everything after it: any
        // instant within the window then has a checkpoint at or before it.
        let keep_from = at.checked_sub(self.window).map_or(0, |horizon| {
            self.checkpoints
                .iter()
                .rposition(|c| c.at <= horizon)
                .unwrap_or(0)
        });
        let drop = keep_from.max(self.checkpoints.len().saturating_sub(MAX_CHECKPOINTS));
        if drop > 0 {
            self.checkpoints.drain(..drop);
            self.from_origin = false;
        }
        let oldest = self.checkpoints.front().map_or(seq, |c| c.seq);
        while self.first_seq < oldest && self.writes.pop_front().is_some() {
            self.first_seq += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn empty() -> Snapshot {
        Snapshot {
            dbs: vec![Db::default()],
            functions: Vec::new(),
        }
    }

    fn set(key: &str) -> (usize, Vec<Bytes>) {
        (
            0,
            vec![
                Bytes::from_static(b"SET"),
                Bytes::copy_from_slice(key.as_bytes()),
                Bytes::from_static(b"v"),
            ],
        )
    }

    fn keys(r: &Recovery) -> Vec<String> {
        r.writes
            .iter()
            .map(|(_, argv)| String::from_utf8_lossy(&argv[1]).into_owned())
            .collect()
    }

    #[tokio::test(start_paused = true)]
    async fn as_of_keeps_the_writes_made_at_or_before_the_instant() {
        let j = Journal::new(Duration::from_secs(10), empty());
        j.record(&[set("a")], empty);
        let after_a = Instant::now();
        tokio::time::advance(Duration::from_secs(1)).await;
        j.record(&[set("b")], empty);
        assert_eq!(keys(&j.as_of(after_a).unwrap()), ["a"]);
        assert_eq!(keys(&j.as_of(Instant::now()).unwrap()), ["a", "b"]);
        // Before the journal started: the dataset it started from.
        let before = j.started_at() - Duration::from_secs(1);
        assert_eq!(j.as_of(before).unwrap().writes(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn old_writes_fold_into_checkpoints_and_the_window_stays_reachable() {
        let window = Duration::from_secs(2);
        let j = Journal::new(window, empty());
        let mut taken = 0;
        for i in 0..100 {
            j.record(&[set(&format!("k{i}"))], || {
                taken += 1;
                empty()
            });
            tokio::time::advance(Duration::from_millis(100)).await;
        }
        // One checkpoint per window (10 s of writes, a 2 s window).
        assert_eq!(taken, 4);
        let log = j.lock();
        assert!(log.checkpoints.len() <= 2, "{}", log.checkpoints.len());
        assert!(log.writes.len() <= 40, "{}", log.writes.len());
        assert!(!log.from_origin);
        drop(log);
        assert!(j.reaches(Instant::now() - window));
        assert!(!j.reaches(j.started_at()));
        assert!(j.as_of(j.started_at()).is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn a_closed_journal_records_nothing_more() {
        let j = Journal::new(Duration::from_secs(10), empty());
        j.record(&[set("a")], empty);
        j.close();
        j.record(&[set("b")], empty);
        j.reset(empty());
        assert_eq!(keys(&j.as_of(Instant::now()).unwrap()), ["a"]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_reset_is_a_checkpoint_replacing_what_came_before() {
        let j = Journal::new(Duration::from_secs(10), empty());
        j.record(&[set("a")], empty);
        let before = Instant::now();
        tokio::time::advance(Duration::from_millis(10)).await;
        j.reset(empty());
        j.record(&[set("b")], empty);
        assert_eq!(keys(&j.as_of(before).unwrap()), ["a"]);
        assert_eq!(keys(&j.as_of(Instant::now()).unwrap()), ["b"]);
    }
}
