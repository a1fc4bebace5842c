//! Driving one target: load the scripts, open one connection per client, run the workload's
//! set-up, then every client sends batches of `--pipeline` requests and reads their replies.
//! A request's latency runs from the write of its batch to its own reply; replies are judged
//! (error kind, or unexpected) and NOSCRIPT is answered by `SCRIPT LOAD` and a retry.

use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;
use hdrhistogram::Histogram;
use locksmith_resp::Frame;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use tokio::time::Instant;

use crate::target::{Conn, ConnError, ConnectInfo};
use crate::workload::{describe_reply, encode_templates, Vars, Verdict, Workload};
use locksmith_resp::encode_command;

/// How many times one request is retried after NOSCRIPT (each time after a `SCRIPT LOAD`).
const NOSCRIPT_RETRIES: usize = 3;

/// When the measured part ends.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Mode {
    /// After this many requests (over all clients).
    Requests(u64),
    /// After this long.
    Duration(Duration),
}

/// The run's settings, the same for every target.
#[derive(Debug, Clone)]
pub(crate) struct RunConfig {
    /// Connections, each sending one batch at a time.
    pub(crate) clients: usize,
    /// Requests per batch.
    pub(crate) pipeline: usize,
    /// When to stop.
    pub(crate) mode: Mode,
    /// Time run first and not measured.
    pub(crate) warmup: Duration,
    /// How long a batch may wait for its replies.
    pub(crate) timeout: Duration,
    /// `{rand}` is below this.
    pub(crate) keyspace: u64,
    /// Seed of the clients' random numbers.
    pub(crate) seed: u64,
    /// The owner uuid of `{owner}`.
    pub(crate) run_uuid: String,
    /// `{run}`.
    pub(crate) run_tag: String,
    /// No progress line.
    pub(crate) quiet: bool,
    /// Skip the `SCRIPT LOAD` before the run: EVALSHA meets NOSCRIPT and falls back.
    pub(crate) no_preload: bool,
}

/// How many errors of one kind, and the first one seen.
#[derive(Debug, Clone, Default)]
pub(crate) struct ErrorCount {
    /// How many.
    pub(crate) count: u64,
    /// The first: step and reply (or what went wrong).
    pub(crate) example: String,
}

/// The measured part of one target's run.
#[derive(Debug, Clone)]
pub(crate) struct Outcome {
    /// Requests answered (accepted, error replies and unexpected replies).
    pub(crate) replies: u64,
    /// Replies the step accepted.
    pub(crate) ok: u64,
    /// Errors by kind: an error reply's first word, `unexpected`, `timeout`, `io`.
    pub(crate) errors: BTreeMap<String, ErrorCount>,
    /// `SCRIPT LOAD`s sent because a request got NOSCRIPT.
    pub(crate) noscript_reloads: u64,
    /// From the end of the warm-up to the last reply.
    pub(crate) elapsed: Duration,
    /// Latency of every reply, in nanoseconds.
    pub(crate) latency: Histogram<u64>,
}

impl Outcome {
    /// Nothing measured yet.
    pub(crate) fn new() -> Outcome {
        Outcome {
            replies: 0,
            ok: 0,
            errors: BTreeMap::new(),
            noscript_reloads: 0,
            elapsed: Duration::ZERO,
            latency: new_histogram(),
        }
    }

    /// All errors, every kind.
    pub(crate) fn error_count(&self) -> u64 {
        self.errors.values().map(|e| e.count).sum()
    }

    /// Replies per second over the measured part.
    pub(crate) fn throughput(&self) -> f64 {
        let secs = self.elapsed.as_secs_f64();
        if secs > 0.0 {
            self.replies as f64 / secs
        } else {
            0.0
        }
    }

    fn error(&mut self, kind: &str, n: u64, example: impl FnOnce() -> String) {
        let entry = self.errors.entry(kind.to_owned()).or_default();
        if entry.count == 0 {
            entry.example = example();
        }
        entry.count += n;
    }

    fn merge(&mut self, other: Outcome) {
        self.replies += other.replies;
        self.ok += other.ok;
        self.noscript_reloads += other.noscript_reloads;
        for (kind, e) in other.errors {
            let mine = self.errors.entry(kind).or_default();
            if mine.count == 0 {
                mine.example = e.example;
            }
            mine.count += e.count;
        }
        // Same bounds on both sides, so adding cannot fail.
        let _ = self.latency.add(&other.latency);
    }
}

/// Nanoseconds from 1 ns to one hour, three significant digits (0.1 % resolution).
fn new_histogram() -> Histogram<u64> {
    // Constant, valid bounds: this cannot fail.
    Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("valid histogram bounds")
}

/// Counters the progress line reads.
#[derive(Debug, Default)]
struct Shared {
    claimed: AtomicU64,
    replies: AtomicU64,
    errors: AtomicU64,
    measuring: AtomicBool,
}

/// Runs `workload` against one target.
///
/// # Errors
/// When a connection cannot be opened, a script cannot be loaded or a set-up command fails:
/// nothing was measured.
pub(crate) async fn run_target(
    name: &str,
    info: &ConnectInfo,
    workload: Arc<Workload>,
    cfg: &RunConfig,
) -> Result<Outcome, String> {
    if !cfg.no_preload {
        let mut control = Conn::open(info, cfg.timeout).await?;
        for script in &workload.scripts {
            load_script(&mut control, &script.body, &script.sha1, cfg.timeout).await?;
        }
    }
    let mut conns = Vec::with_capacity(cfg.clients);
    for client in 0..cfg.clients {
        let mut conn = Conn::open(info, cfg.timeout).await?;
        let vars = Vars {
            run_uuid: &cfg.run_uuid,
            run_tag: &cfg.run_tag,
            client: client as u64,
            seq: 0,
            iter: 0,
            rand: 0,
        };
        for command in &workload.setup {
            let mut out = BytesMut::new();
            encode_templates(command, &vars, &mut out, &mut Vec::new());
            conn.send(&out).await.map_err(|e| format!("set-up: {e}"))?;
            match conn.reply(Instant::now() + cfg.timeout).await {
                Ok(Frame::Error(e)) => {
                    return Err(format!("set-up failed: -{}", String::from_utf8_lossy(&e)))
                }
                Ok(_) => {}
                Err(e) => return Err(format!("set-up: {e}")),
            }
        }
        conns.push(conn);
    }
    let shared = Arc::new(Shared::default());
    let start = Instant::now();
    let record_start = start + cfg.warmup;
    let progress = (!cfg.quiet).then(|| {
        tokio::spawn(progress(
            name.to_owned(),
            shared.clone(),
            start,
            record_start,
        ))
    });
    let mut tasks = Vec::with_capacity(cfg.clients);
    for (client, conn) in conns.into_iter().enumerate() {
        let client = Client {
            id: client as u64,
            conn,
            info: info.clone(),
            workload: workload.clone(),
            cfg: cfg.clone(),
            shared: shared.clone(),
            record_start,
        };
        tasks.push(tokio::spawn(client.run()));
    }
    let mut total = Outcome::new();
    let mut last = record_start;
    let mut failure = None;
    for task in tasks {
        match task.await {
            Ok((outcome, done, fatal)) => {
                total.merge(outcome);
                last = last.max(done);
                if let Some(f) = fatal {
                    failure.get_or_insert(f);
                }
            }
            Err(e) => {
                failure.get_or_insert(format!("a client task failed: {e}"));
            }
        }
    }
    if let Some(p) = progress {
        p.abort();
        let _ = p.await;
    }
    total.elapsed = last.saturating_duration_since(record_start);
    if !cfg.quiet {
        let mut err = std::io::stderr().lock();
        let clear = if err.is_terminal() { "\r\x1b[K" } else { "" };
        let _ = writeln!(
            err,
            "{clear}{name}: {} requests in {:.2} s, {:.0} req/s, {} errors",
            total.replies,
            total.elapsed.as_secs_f64(),
            total.throughput(),
            total.error_count()
        );
        if let Some(f) = &failure {
            let _ = writeln!(err, "{name}: a client stopped early: {f}");
        }
    }
    if let Some(f) = failure {
        total.error("io", 0, || f);
    }
    Ok(total)
}

/// `SCRIPT LOAD body`, checking the SHA1 the server answers.
async fn load_script(
    conn: &mut Conn,
    body: &str,
    sha1: &str,
    timeout: Duration,
) -> Result<(), String> {
    match conn
        .call(&[b"SCRIPT", b"LOAD", body.as_bytes()], timeout)
        .await
    {
        Ok(Frame::Bulk(b)) if b.eq_ignore_ascii_case(sha1.as_bytes()) => Ok(()),
        Ok(other) => Err(format!(
            "SCRIPT LOAD answered {} (expected {sha1})",
            describe_reply(&other)
        )),
        Err(e) => Err(format!("SCRIPT LOAD: {e}")),
    }
}

/// Updates the progress line on stderr: in place on a terminal, a line every 5 s otherwise.
async fn progress(name: String, shared: Arc<Shared>, start: Instant, record_start: Instant) {
    let tty = std::io::stderr().is_terminal();
    let tick = Duration::from_millis(250);
    let mut prev = (Instant::now(), 0u64);
    let mut n = 0u64;
    loop {
        tokio::time::sleep(tick).await;
        n += 1;
        let now = Instant::now();
        let replies = shared.replies.load(Ordering::Relaxed);
        let errors = shared.errors.load(Ordering::Relaxed);
        let rate = (replies - prev.1.min(replies)) as f64
            / now.duration_since(prev.0).as_secs_f64().max(1e-9);
        prev = (now, replies);
        let phase = if shared.measuring.load(Ordering::Relaxed) || now >= record_start {
            "measuring"
        } else {
            "warming up"
        };
        let line = format!(
            "{name}: {:.1} s {phase}, {replies} requests, {rate:.0} req/s, {errors} errors",
            now.duration_since(start).as_secs_f64()
        );
        let mut err = std::io::stderr().lock();
        if tty {
            let _ = write!(err, "\r\x1b[K{line}");
            let _ = err.flush();
        } else if n.is_multiple_of(20) {
            let _ = writeln!(err, "{line}");
        }
    }
}

/// One connection's loop.
struct Client {
    id: u64,
    conn: Conn,
    info: ConnectInfo,
    workload: Arc<Workload>,
    cfg: RunConfig,
    shared: Arc<Shared>,
    record_start: Instant,
}

impl Client {
    /// Sends batches until the run ends. Returns what it measured, when its last reply came
    /// and, if it had to stop early, why.
    async fn run(mut self) -> (Outcome, Instant, Option<String>) {
        let mut outcome = Outcome::new();
        let mut rng = SmallRng::seed_from_u64(self.cfg.seed ^ self.id.wrapping_mul(0x9E37_79B9));
        let steps = self.workload.steps.len().max(1) as u64;
        let pipeline = self.cfg.pipeline.max(1) as u64;
        let keyspace = self.cfg.keyspace.max(1);
        let mut seq = 0u64;
        let mut rand = 0u64;
        let mut out = BytesMut::with_capacity(4096);
        let mut scratch = Vec::with_capacity(256);
        let mut batch: Vec<(u64, u64)> = Vec::with_capacity(pipeline as usize);
        let mut retry: Vec<(u64, u64)> = Vec::new();
        let mut last = self.record_start;
        loop {
            let now = Instant::now();
            let recording = now >= self.record_start;
            let n = if !recording {
                pipeline
            } else {
                match self.cfg.mode {
                    Mode::Requests(total) => claim(&self.shared.claimed, total, pipeline),
                    Mode::Duration(d) if now >= self.record_start + d => 0,
                    Mode::Duration(_) => pipeline,
                }
            };
            if n == 0 {
                break;
            }
            if recording {
                self.shared.measuring.store(true, Ordering::Relaxed);
            }
            out.clear();
            batch.clear();
            for _ in 0..n {
                if seq.is_multiple_of(steps) {
                    rand = rng.random_range(0..keyspace);
                }
                self.encode(seq, rand, &mut out, &mut scratch);
                batch.push((seq, rand));
                seq += 1;
            }
            let t0 = Instant::now();
            let deadline = t0 + self.cfg.timeout;
            let mut failed = None;
            if let Err(e) = self.conn.send(&out).await {
                failed = Some((e, 0));
            } else {
                retry.clear();
                for (i, &(s, r)) in batch.iter().enumerate() {
                    match self.conn.reply(deadline).await {
                        Ok(reply) => {
                            let verdict = self.workload.judge(s, &reply);
                            if is_noscript(&verdict) && self.workload.script_of(s).is_some() {
                                retry.push((s, r));
                            } else {
                                self.record(&mut outcome, recording, t0, s, &reply, verdict);
                            }
                        }
                        Err(e) => {
                            failed = Some((e, i));
                            break;
                        }
                    }
                }
                if failed.is_none() && !retry.is_empty() {
                    if let Err(e) = self
                        .noscript_fallback(
                            &mut outcome,
                            recording,
                            t0,
                            &mut retry,
                            &mut out,
                            &mut scratch,
                        )
                        .await
                    {
                        // The retried requests' replies are lost with the connection.
                        failed = Some((e, batch.len() - retry.len()));
                    }
                }
            }
            if let Some((e, answered)) = failed {
                let lost = n - answered as u64;
                if recording {
                    let kind = match e {
                        ConnError::Timeout => "timeout",
                        _ => "io",
                    };
                    outcome.error(kind, lost, || e.to_string());
                    self.shared.errors.fetch_add(lost, Ordering::Relaxed);
                }
                // The connection's state is unknown (replies may still arrive): start afresh.
                match Conn::open(&self.info, self.cfg.timeout).await {
                    Ok(conn) => self.conn = conn,
                    Err(e) => return (outcome, last.max(Instant::now()), Some(e)),
                }
            }
            last = Instant::now();
        }
        (outcome, last, None)
    }

    fn encode(&self, seq: u64, rand: u64, out: &mut BytesMut, scratch: &mut Vec<u8>) {
        let steps = self.workload.steps.len().max(1) as u64;
        let vars = Vars {
            run_uuid: &self.cfg.run_uuid,
            run_tag: &self.cfg.run_tag,
            client: self.id,
            seq,
            iter: seq / steps,
            rand,
        };
        self.workload.encode_request(&vars, out, scratch);
    }

    /// Loads the scripts the `retry` requests need and sends them again, up to
    /// [`NOSCRIPT_RETRIES`] rounds; requests still answered NOSCRIPT then count as errors.
    /// On a connection error, `retry` holds the requests that got no reply.
    async fn noscript_fallback(
        &mut self,
        outcome: &mut Outcome,
        recording: bool,
        t0: Instant,
        retry: &mut Vec<(u64, u64)>,
        out: &mut BytesMut,
        scratch: &mut Vec<u8>,
    ) -> Result<(), ConnError> {
        for _ in 0..NOSCRIPT_RETRIES {
            if retry.is_empty() {
                return Ok(());
            }
            out.clear();
            let mut scripts: Vec<usize> = Vec::new();
            for &(s, _) in retry.iter() {
                if let Some(script) = self.workload.script_of(s) {
                    let i = self
                        .workload
                        .scripts
                        .iter()
                        .position(|x| x.sha1 == script.sha1)
                        .unwrap_or_default();
                    if !scripts.contains(&i) {
                        scripts.push(i);
                    }
                }
            }
            for &i in &scripts {
                encode_command(
                    &[
                        &b"SCRIPT"[..],
                        b"LOAD",
                        self.workload.scripts[i].body.as_bytes(),
                    ],
                    out,
                );
            }
            for &(s, r) in retry.iter() {
                self.encode(s, r, out, scratch);
            }
            self.conn.send(out).await?;
            let deadline = Instant::now() + self.cfg.timeout;
            for _ in &scripts {
                // A refused load shows in the retried requests' replies.
                self.conn.reply(deadline).await?;
                outcome.noscript_reloads += 1;
            }
            let pending = std::mem::take(retry);
            for (k, &(s, r)) in pending.iter().enumerate() {
                let reply = match self.conn.reply(deadline).await {
                    Ok(reply) => reply,
                    Err(e) => {
                        retry.extend_from_slice(&pending[k..]);
                        return Err(e);
                    }
                };
                let verdict = self.workload.judge(s, &reply);
                if is_noscript(&verdict) {
                    retry.push((s, r));
                } else {
                    self.record(outcome, recording, t0, s, &reply, verdict);
                }
            }
        }
        for &(s, _) in retry.iter() {
            let label = &self.workload.step(s).label;
            if recording {
                outcome.error("NOSCRIPT", 1, || {
                    format!("{label}: still NOSCRIPT after {NOSCRIPT_RETRIES} SCRIPT LOADs")
                });
                self.shared.errors.fetch_add(1, Ordering::Relaxed);
            }
        }
        retry.clear();
        Ok(())
    }

    fn record(
        &self,
        outcome: &mut Outcome,
        recording: bool,
        t0: Instant,
        seq: u64,
        reply: &Frame,
        verdict: Verdict,
    ) {
        if !recording {
            return;
        }
        let latency = t0.elapsed().as_nanos().min(u64::MAX as u128) as u64;
        outcome.latency.saturating_record(latency.max(1));
        outcome.replies += 1;
        self.shared.replies.fetch_add(1, Ordering::Relaxed);
        let step = self.workload.step(seq);
        match verdict {
            Verdict::Ok => outcome.ok += 1,
            Verdict::Error(kind) => {
                self.shared.errors.fetch_add(1, Ordering::Relaxed);
                outcome.error(&kind, 1, || {
                    format!("{}: {}", step.label, describe_reply(reply))
                });
            }
            Verdict::Unexpected => {
                self.shared.errors.fetch_add(1, Ordering::Relaxed);
                outcome.error("unexpected", 1, || {
                    let expected: Vec<String> = step.expect.iter().map(|e| e.to_string()).collect();
                    format!(
                        "{}: got {}, expected {}",
                        step.label,
                        describe_reply(reply),
                        expected.join(" or ")
                    )
                });
            }
        }
    }
}

fn is_noscript(verdict: &Verdict) -> bool {
    matches!(verdict, Verdict::Error(kind) if kind == "NOSCRIPT")
}

/// Takes up to `want` of the `total` requests; 0 once all are taken.
fn claim(claimed: &AtomicU64, total: u64, want: u64) -> u64 {
    let mut got = 0;
    let _ = claimed.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |c| {
        got = want.min(total.saturating_sub(c));
        (got > 0).then_some(c + got)
    });
    got
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claims_stop_at_the_total() {
        let c = AtomicU64::new(0);
        assert_eq!(claim(&c, 10, 4), 4);
        assert_eq!(claim(&c, 10, 4), 4);
        assert_eq!(claim(&c, 10, 4), 2);
        assert_eq!(claim(&c, 10, 4), 0);
    }
}
