//! A node's journal: what its disk would hold with an append-only file that is rewritten
//! periodically (Redis 7's multi-part AOF: a base and the writes since) — checkpoints of the
//! dataset, each followed by the writes made after it, every write stamped with the instant the
//! node made it. From it the dataset as it was at an earlier instant can be rebuilt, as a node
//! restarting after a crash finds what it had written to disk up to its last `fsync`.
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
//! Memory stays bounded: writes are kept encoded (their arguments length-prefixed in one
//! buffer per checkpoint, about the size of their RESP form); a checkpoint is taken once the
//! newest is `window` old, or once the writes after it pass [`MAX_SEGMENT_BYTES`]; and only the
//! newest checkpoint at least `window` old is kept with what follows it, so the journal reaches
//! back at least `window`. At most [`MAX_CHECKPOINTS`] checkpoints are kept (each a copy of the
//! dataset's tables; large strings' bytes are shared, keys copied), so a node written to
//! faster than 3 × 16 MiB per window reaches back less far, and the journal never holds more
//! than three dataset copies and 48 MiB of writes.

use crate::db::Db;
use bytes::Bytes;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::time::Instant;

/// Bytes of writes (encoded, with their index) after which a checkpoint is taken even when the
/// newest one is younger than the window, so a node written to very fast holds a bounded log.
pub(crate) const MAX_SEGMENT_BYTES: usize = 16 << 20;

/// Checkpoints kept at most (two suffice while [`MAX_SEGMENT_BYTES`] is not reached).
pub(crate) const MAX_CHECKPOINTS: usize = 3;

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
    /// `checkpoints[0]` is the dataset the journal started from: on disk before the journal
    /// began, so it stands for any earlier instant too.
    from_origin: bool,
    started_at: Instant,
}

/// A dataset at `at` and the writes made after it, until the next checkpoint.
#[derive(Debug)]
struct Checkpoint {
    at: Instant,
    data: Arc<Snapshot>,
    /// The writes' arguments: for each, the count then each argument's length (`u32`, little
    /// endian) and bytes.
    bytes: Vec<u8>,
    /// Per write, in order: when it was made, its database, and where it ends in `bytes`.
    index: Vec<(Instant, u32, usize)>,
}

impl Checkpoint {
    fn new(at: Instant, data: Snapshot) -> Checkpoint {
        Checkpoint {
            at,
            data: Arc::new(data),
            bytes: Vec::new(),
            index: Vec::new(),
        }
    }

    /// Memory held by the writes after it (their bytes and index).
    fn segment_bytes(&self) -> usize {
        self.bytes.len() + self.index.len() * std::mem::size_of::<(Instant, u32, usize)>()
    }

    fn push(&mut self, at: Instant, db: usize, argv: &[Bytes]) {
        // Arguments are at most 512 MB (`proto-max-bulk-len`), so a `u32` holds every length.
        let word = |n: usize| u32::try_from(n).unwrap_or(u32::MAX).to_le_bytes();
        self.bytes.extend_from_slice(&word(argv.len()));
        for arg in argv {
            self.bytes.extend_from_slice(&word(arg.len()));
            self.bytes.extend_from_slice(arg);
        }
        let db = u32::try_from(db).unwrap_or(u32::MAX);
        self.index.push((at, db, self.bytes.len()));
    }

    /// The writes made at or before `until`, decoded.
    fn writes_until(&self, until: Instant) -> Vec<(usize, Vec<Bytes>)> {
        let mut out = Vec::new();
        let mut start = 0;
        for &(at, db, end) in &self.index {
            if at > until {
                break;
            }
            if let Some(argv) = self.bytes.get(start..end).and_then(decode) {
                out.push((db as usize, argv));
            }
            start = end;
        }
        out
    }
}

/// The arguments [`Checkpoint::push`] encoded in `bytes`; `None` if they do not parse (they
/// always do: the journal wrote them).
fn decode(bytes: &[u8]) -> Option<Vec<Bytes>> {
    fn word(bytes: &[u8], at: &mut usize) -> Option<usize> {
        let end = at.checked_add(4)?;
        let word: [u8; 4] = bytes.get(*at..end)?.try_into().ok()?;
        *at = end;
        usize::try_from(u32::from_le_bytes(word)).ok()
    }
    let mut at = 0;
    let argc = word(bytes, &mut at)?;
    let mut argv = Vec::with_capacity(argc.min(64));
    for _ in 0..argc {
        let n = word(bytes, &mut at)?;
        let end = at.checked_add(n)?;
        argv.push(Bytes::copy_from_slice(bytes.get(at..end)?));
        at = end;
    }
    Some(argv)
}

impl Journal {
    /// A journal keeping at least `window` of history, starting from `origin` (the dataset
    /// already on disk).
    pub(crate) fn new(window: Duration, origin: Snapshot) -> Journal {
        let now = Instant::now();
        let mut checkpoints = VecDeque::new();
        checkpoints.push_back(Checkpoint::new(now, origin));
        Journal {
            log: Arc::new(Mutex::new(Log {
                window,
                closed: false,
                checkpoints,
                from_origin: true,
                started_at: now,
            })),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Log> {
        // Every step under this lock leaves the log consistent, so a poisoned lock (a panic
        // elsewhere while holding it) is still usable.
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
        let window = log.window;
        let Some(newest) = log.checkpoints.back_mut() else {
            return;
        };
        for (db, argv) in writes {
            newest.push(at, *db, argv);
        }
        if at.saturating_duration_since(newest.at) >= window
            || newest.segment_bytes() >= MAX_SEGMENT_BYTES
        {
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
        Some(Recovery {
            base: base.data.clone(),
            writes: base.writes_until(at),
        })
    }
}

impl Log {
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
        if let Some(sealed) = self.checkpoints.back_mut() {
            // Its segment is complete: give back what growing it reserved.
            sealed.bytes.shrink_to_fit();
            sealed.index.shrink_to_fit();
        }
        self.checkpoints.push_back(Checkpoint::new(at, data));
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

    #[test]
    fn writes_decode_as_they_were_encoded() {
        let mut c = Checkpoint::new(Instant::now(), empty());
        let argv = vec![
            Bytes::from_static(b"HSET"),
            Bytes::new(),
            Bytes::from(vec![0u8, 255, 13, 10]),
        ];
        c.push(c.at, 3, &argv);
        c.push(c.at, 0, &[]);
        assert_eq!(c.writes_until(c.at), [(3, argv), (0, Vec::new())]);
        assert_eq!(decode(&[1, 0, 0, 0, 9, 0, 0, 0, b'x']), None, "truncated");
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
        let writes: usize = log.checkpoints.iter().map(|c| c.index.len()).sum();
        assert!(writes <= 40, "{writes}");
        assert!(!log.from_origin);
        drop(log);
        assert!(j.reaches(Instant::now() - window));
        assert!(!j.reaches(j.started_at()));
        assert!(j.as_of(j.started_at()).is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn a_node_written_to_fast_takes_checkpoints_sooner() {
        let j = Journal::new(Duration::from_secs(10), empty());
        let big = vec![
            Bytes::from_static(b"SET"),
            Bytes::from_static(b"k"),
            Bytes::from(vec![b'x'; 1 << 20]),
        ];
        let per_segment = MAX_SEGMENT_BYTES >> 20;
        let mut taken = 0;
        for _ in 0..4 * per_segment {
            j.record(&[(0, big.clone())], || {
                taken += 1;
                empty()
            });
        }
        assert_eq!(taken, 4);
        let log = j.lock();
        assert_eq!(log.checkpoints.len(), MAX_CHECKPOINTS);
        let held: usize = log.checkpoints.iter().map(Checkpoint::segment_bytes).sum();
        assert!(held < MAX_CHECKPOINTS * MAX_SEGMENT_BYTES, "{held}");
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
