//! Node state read and written without the state lock: `CLIENT PAUSE`, the counters `INFO`
//! reports that connections bump (network bytes, error replies, ops per second), and the
//! `SHUTDOWN` request. (The limits connections check live in the node's
//! [`RuntimeConfig`](crate::config::runtime::RuntimeConfig).)

use crate::flags;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use tokio::sync::{watch, Notify};

/// Lock-free node state; one per [`crate::node::Node`].
#[derive(Debug)]
pub(crate) struct Live {
    /// Persistence: the last save, a background save running, how the last one ended.
    pub(crate) saves: std::sync::Arc<crate::rdb::SaveStatus>,
    /// Open connections (counted at accept, for `maxclients`).
    pub(crate) connected: AtomicU64,
    /// Connections refused because of `maxclients` (`rejected_connections`).
    pub(crate) rejected: AtomicU64,
    /// Bytes read from clients (`total_net_input_bytes`).
    pub(crate) net_input: AtomicU64,
    /// Bytes written to clients (`total_net_output_bytes`).
    pub(crate) net_output: AtomicU64,
    /// Bytes of replication streams read from a master (`total_net_repl_input_bytes`).
    pub(crate) net_repl_input: AtomicU64,
    /// Bytes of replication streams written to replicas (`total_net_repl_output_bytes`).
    pub(crate) net_repl_output: AtomicU64,
    /// Reads from client sockets that returned bytes (`total_reads_processed`).
    pub(crate) reads: AtomicU64,
    /// Writes of replies to client sockets (`total_writes_processed`).
    pub(crate) writes: AtomicU64,
    /// The most `used_memory` seen (`used_memory_peak`; `CONFIG RESETSTAT` keeps it, as in
    /// Redis).
    peak_memory: AtomicU64,
    /// Error replies by error code (`INFO errorstats`).
    errors: Mutex<BTreeMap<String, u64>>,
    /// Commands refused before they ran, some without the state lock (`rejected_calls`).
    pub(crate) rejected_calls: Mutex<crate::cmdstats::CommandStats>,
    /// Error replies in all (`total_error_replies`).
    pub(crate) total_errors: AtomicU64,
    /// Clients closed for passing `client-query-buffer-limit`
    /// (`client_query_buffer_limit_disconnections`).
    pub(crate) query_buffer_limit_disconnections: AtomicU64,
    /// Clients closed for passing their output buffer limit while writing to them (the
    /// subscribers and replicas the state drops are counted there): Valkey's
    /// `client_output_buffer_limit_disconnections`.
    pub(crate) output_buffer_limit_disconnections: AtomicU64,
    /// `DEBUG SET-ACTIVE-EXPIRE`: whether the active expiry cycle runs.
    pub(crate) active_expire: AtomicBool,
    /// `DEBUG SET-DISABLE-DENY-SCRIPTS`: scripts may call commands flagged `noscript`.
    pub(crate) scripts_call_anything: AtomicBool,
    /// `DEBUG PAUSE-CRON`: whether the periodic task (active expiry, rehashing, sampling)
    /// skips its work.
    pub(crate) cron_paused: AtomicBool,
    /// `DEBUG QUICKLIST-PACKED-THRESHOLD`: the size from which Redis keeps a list element in
    /// a node of its own, which `DEBUG OBJECT` shows a list's nodes by.
    pub(crate) quicklist_packed_threshold: AtomicU64,
    /// `CLIENT PAUSE`.
    pub(crate) pause: Pause,
    /// Large values freed off the command path (UNLINK, `FLUSHALL ASYNC`).
    pub(crate) lazyfree: crate::lazyfree::LazyFree,
    /// Samples of the command and byte counters for `instantaneous_ops_per_sec` and
    /// `instantaneous_input_kbps`/`output_kbps`.
    rates: Mutex<Rates>,
    /// Set by `SHUTDOWN`; the accept loop and the binary watch it.
    stop: watch::Sender<bool>,
}

/// Redis's default `packed_threshold` of quicklists (1 GB).
pub(crate) const QUICKLIST_PACKED_THRESHOLD: u64 = 1 << 30;

impl Live {
    /// Fresh counters, no pause, no save yet.
    pub(crate) fn new() -> Self {
        Live {
            saves: Default::default(),
            connected: AtomicU64::new(0),
            rejected: AtomicU64::new(0),
            net_input: AtomicU64::new(0),
            net_output: AtomicU64::new(0),
            query_buffer_limit_disconnections: AtomicU64::new(0),
            output_buffer_limit_disconnections: AtomicU64::new(0),
            net_repl_input: AtomicU64::new(0),
            net_repl_output: AtomicU64::new(0),
            reads: AtomicU64::new(0),
            writes: AtomicU64::new(0),
            peak_memory: AtomicU64::new(0),
            errors: Mutex::new(BTreeMap::new()),
            rejected_calls: Mutex::new(Default::default()),
            total_errors: AtomicU64::new(0),
            active_expire: AtomicBool::new(true),
            cron_paused: AtomicBool::new(false),
            scripts_call_anything: AtomicBool::new(false),
            quicklist_packed_threshold: AtomicU64::new(QUICKLIST_PACKED_THRESHOLD),
            pause: Pause::default(),
            lazyfree: Default::default(),
            rates: Mutex::new(Rates::default()),
            stop: watch::Sender::new(false),
        }
    }

    /// Counts an error reply whose text is `line` (`ERR …`, `WRONGTYPE …`).
    pub(crate) fn count_error(&self, line: &[u8]) {
        self.total_errors.fetch_add(1, Ordering::Relaxed);
        let code = line.split(|&b| b == b' ').next().unwrap_or_default();
        let code = String::from_utf8_lossy(code.get(..code.len().min(64)).unwrap_or(code));
        if let Ok(mut errors) = self.errors.lock() {
            // Redis stops adding new codes past 128 (ERRORSTATS_LIMIT).
            if errors.len() < 128 || errors.contains_key(code.as_ref()) {
                *errors.entry(code.into_owned()).or_insert(0) += 1;
            }
        }
    }

    /// Error counts by code.
    pub(crate) fn error_counts(&self) -> Vec<(String, u64)> {
        self.errors
            .lock()
            .map(|e| e.iter().map(|(k, v)| (k.clone(), *v)).collect())
            .unwrap_or_default()
    }

    /// `CONFIG RESETSTAT`.
    pub(crate) fn reset_stats(&self) {
        self.rejected.store(0, Ordering::Relaxed);
        self.net_input.store(0, Ordering::Relaxed);
        self.net_output.store(0, Ordering::Relaxed);
        self.net_repl_input.store(0, Ordering::Relaxed);
        self.net_repl_output.store(0, Ordering::Relaxed);
        self.reads.store(0, Ordering::Relaxed);
        self.writes.store(0, Ordering::Relaxed);
        self.total_errors.store(0, Ordering::Relaxed);
        self.query_buffer_limit_disconnections
            .store(0, Ordering::Relaxed);
        self.output_buffer_limit_disconnections
            .store(0, Ordering::Relaxed);
        self.lazyfree.reset_stats();
        if let Ok(mut errors) = self.errors.lock() {
            errors.clear();
        }
        if let Ok(mut rejected) = self.rejected_calls.lock() {
            rejected.reset();
        }
    }

    /// Counts a call of `resolved` refused before it ran.
    pub(crate) fn reject_call(&self, resolved: crate::command_meta::Resolved) {
        if let Ok(mut rejected) = self.rejected_calls.lock() {
            rejected.reject(resolved);
        }
    }

    /// Records the command counter and the network byte counters at `now_ms` (called every
    /// active expiry tick, as Redis's `serverCron` tracks its instantaneous metrics).
    pub(crate) fn sample_rates(&self, now_ms: u64, commands: u64) {
        let input = self.net_input.load(Ordering::Relaxed);
        let output = self.net_output.load(Ordering::Relaxed);
        if let Ok(mut rates) = self.rates.lock() {
            rates.ops.sample(now_ms, commands);
            rates.input.sample(now_ms, input);
            rates.output.sample(now_ms, output);
        }
    }

    /// Notes `used` bytes of memory in use (every active expiry tick, and when `INFO` or
    /// `MEMORY STATS` reads it, as Redis updates its peak); returns the peak so far.
    pub(crate) fn note_memory(&self, used: u64) -> u64 {
        self.peak_memory
            .fetch_max(used, Ordering::Relaxed)
            .max(used)
    }

    /// Commands per second over the last samples.
    pub(crate) fn ops_per_sec(&self) -> u64 {
        self.rates.lock().map(|r| r.ops.per_sec()).unwrap_or(0)
    }

    /// KB read and written per second over the last samples (`instantaneous_input_kbps`,
    /// `instantaneous_output_kbps`).
    pub(crate) fn net_kbps(&self) -> (f64, f64) {
        self.rates
            .lock()
            .map(|r| {
                (
                    r.input.per_sec() as f64 / 1024.0,
                    r.output.per_sec() as f64 / 1024.0,
                )
            })
            .unwrap_or((0.0, 0.0))
    }

    /// Asks the node to shut down (`SHUTDOWN`).
    pub(crate) fn request_stop(&self) {
        self.stop.send_replace(true);
    }

    /// Whether the node was asked to shut down.
    pub(crate) fn stop_requested(&self) -> bool {
        *self.stop.borrow()
    }

    /// Resolves once `SHUTDOWN` is requested.
    pub(crate) async fn stopped(&self) {
        let mut rx = self.stop.subscribe();
        let _ = rx.wait_for(|stop| *stop).await;
    }
}

/// The sampled counters (Redis's `inst_metric`).
#[derive(Debug, Default)]
struct Rates {
    ops: Sampler,
    input: Sampler,
    output: Sampler,
}

/// Redis samples a counter every 100 ms into 16 slots (`STATS_METRIC_SAMPLES`) and reports
/// their mean rate per second (`trackInstantaneousMetric`).
#[derive(Debug, Default)]
struct Sampler {
    last_ms: u64,
    last_count: u64,
    samples: [u64; 16],
    index: usize,
}

impl Sampler {
    fn sample(&mut self, now_ms: u64, count: u64) {
        if self.last_ms != 0 && now_ms > self.last_ms {
            let ops = count.saturating_sub(self.last_count) * 1000 / (now_ms - self.last_ms);
            if let Some(slot) = self.samples.get_mut(self.index % 16) {
                *slot = ops;
            }
            self.index = (self.index + 1) % 16;
        }
        self.last_ms = now_ms;
        self.last_count = count;
    }

    fn per_sec(&self) -> u64 {
        self.samples.iter().sum::<u64>() / 16
    }
}

/// What `CLIENT PAUSE` holds back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub(crate) enum PauseMode {
    /// Nothing paused.
    #[default]
    Off,
    /// Commands that write or may replicate (`WRITE`).
    Write,
    /// Every command (`ALL`).
    All,
}

/// `CLIENT PAUSE` state: the mode and the node-clock ms it ends at.
#[derive(Debug, Default)]
pub(crate) struct Pause {
    /// Fast check: a pause may be in effect.
    active: AtomicBool,
    state: Mutex<(PauseMode, u64)>,
    /// Signalled on `CLIENT UNPAUSE` and on a new pause.
    pub(crate) changed: Notify,
    /// Clients whose command waits for the pause to end (Redis counts them in
    /// `blocked_clients`).
    pub(crate) waiting: std::sync::atomic::AtomicUsize,
}

impl Pause {
    /// Pauses until `end_ms`. As Redis's `pauseClients`, a pause never weakens one in effect:
    /// the stricter mode and the later end win.
    pub(crate) fn pause(&self, mode: PauseMode, end_ms: u64, now_ms: u64) {
        if let Ok(mut state) = self.state.lock() {
            let (old_mode, old_end) = *state;
            let (old_mode, old_end) = if old_end > now_ms {
                (old_mode, old_end)
            } else {
                (PauseMode::Off, 0)
            };
            *state = (mode.max(old_mode), end_ms.max(old_end));
            self.active.store(true, Ordering::Release);
        }
        self.changed.notify_waiters();
    }

    /// `CLIENT UNPAUSE`.
    pub(crate) fn unpause(&self) {
        if let Ok(mut state) = self.state.lock() {
            *state = (PauseMode::Off, 0);
            self.active.store(false, Ordering::Release);
        }
        self.changed.notify_waiters();
    }

    /// Whether a pause may be in effect (one atomic load, no clock read: the per-command
    /// fast path).
    pub(crate) fn maybe_active(&self) -> bool {
        self.active.load(Ordering::Acquire)
    }

    /// The mode in effect at `now_ms` and when it ends.
    pub(crate) fn current(&self, now_ms: u64) -> (PauseMode, u64) {
        if !self.active.load(Ordering::Acquire) {
            return (PauseMode::Off, 0);
        }
        match self.state.lock() {
            Ok(state) if state.1 > now_ms => *state,
            Ok(mut state) => {
                // Expired: later checks take the fast path again.
                *state = (PauseMode::Off, 0);
                self.active.store(false, Ordering::Release);
                (PauseMode::Off, 0)
            }
            Err(_) => (PauseMode::Off, 0),
        }
    }

    /// Whether a command with `command_flags` must wait at `now_ms`, and until when.
    pub(crate) fn holds(&self, command_flags: u32, now_ms: u64) -> Option<u64> {
        let (mode, end) = self.current(now_ms);
        let held = match mode {
            PauseMode::Off => false,
            PauseMode::All => true,
            PauseMode::Write => command_flags & (flags::WRITE | flags::MAY_REPLICATE) != 0,
        };
        held.then_some(end)
    }

    /// Whether any pause is in effect at `now_ms` (the active expiry cycle stops meanwhile).
    pub(crate) fn is_paused(&self, now_ms: u64) -> bool {
        self.current(now_ms).0 != PauseMode::Off
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pause_never_weakens_the_one_in_effect() {
        let p = Pause::default();
        p.pause(PauseMode::All, 1000, 0);
        p.pause(PauseMode::Write, 500, 0);
        assert_eq!(p.current(10), (PauseMode::All, 1000));
        assert_eq!(p.holds(0, 10), Some(1000));
        assert_eq!(p.current(1000), (PauseMode::Off, 0));
        p.pause(PauseMode::Write, 3000, 2000);
        assert_eq!(p.holds(0, 2001), None);
        assert_eq!(p.holds(flags::WRITE, 2001), Some(3000));
        p.unpause();
        assert_eq!(p.holds(flags::WRITE, 2001), None);
    }

    #[test]
    fn error_codes_are_counted_by_first_word() {
        let live = Live::new();
        live.count_error(b"ERR syntax error");
        live.count_error(b"ERR x");
        live.count_error(b"WRONGTYPE Operation");
        assert_eq!(
            live.error_counts(),
            vec![("ERR".to_string(), 2), ("WRONGTYPE".to_string(), 1)]
        );
    }
}
