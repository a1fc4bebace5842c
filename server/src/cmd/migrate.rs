//! `MIGRATE` (moving keys to another server as `DUMP` payloads restored there, then deleting
//! them here unless `COPY`) and `RESTORE-ASKING` (the `RESTORE` a cluster node sends, which an
//! importing node accepts; with no slot migration states here it restores as `RESTORE`),
//! ported from Redis 7.0's `migrateCommand`: a cached connection per target, blocking I/O
//! within the timeout, one retry when a cached connection turns out closed, and the
//! migration replicated as a `DEL` of the keys the target acknowledged.

use super::{Args, CmdResult, Command, CommandError, Ctx};
use crate::notify;
use bytes::Bytes;
use locksmith_resp::Frame;
use std::io::ErrorKind;
use std::time::Duration;

/// The family's table.
pub(crate) static COMMANDS: &[Command] = &[
    Command::new("migrate", migrate),
    Command::new("restore-asking", super::keys::restore),
];

/// A MIGRATE line's options.
struct Options {
    copy: bool,
    replace: bool,
    /// `AUTH password` or `AUTH2 username password`.
    auth: Option<(Option<Bytes>, Bytes)>,
    /// The keys to move.
    keys: Vec<Bytes>,
}

/// Parses what follows `timeout` (argument 6 on), as Redis does, in order.
fn options(argv: &[Bytes]) -> Result<Options, CommandError> {
    let mut o = Options {
        copy: false,
        replace: false,
        auth: None,
        keys: argv.get(3).cloned().into_iter().collect(),
    };
    let mut j = 6;
    while let Some(arg) = argv.get(j) {
        let more = argv.len() - 1 - j;
        if arg.eq_ignore_ascii_case(b"copy") {
            o.copy = true;
        } else if arg.eq_ignore_ascii_case(b"replace") {
            o.replace = true;
        } else if arg.eq_ignore_ascii_case(b"auth") && more >= 1 {
            o.auth = Some((None, argv[j + 1].clone()));
            j += 1;
        } else if arg.eq_ignore_ascii_case(b"auth2") && more >= 2 {
            o.auth = Some((Some(argv[j + 1].clone()), argv[j + 2].clone()));
            j += 2;
        } else if arg.eq_ignore_ascii_case(b"keys") {
            if argv.get(3).is_some_and(|k| !k.is_empty()) {
                return Err(CommandError::err(
                    "When using MIGRATE KEYS option, the key argument must be set to the empty string",
                ));
            }
            o.keys = argv[j + 1..].to_vec();
            break;
        } else {
            return Err(CommandError::Syntax);
        }
        j += 1;
    }
    Ok(o)
}

/// How a transfer failed on the connection.
enum SocketError {
    /// Writing the commands failed.
    Write(std::io::Error),
    /// Reading a reply failed, after `replies` RESTORE replies were read.
    Read(std::io::Error, usize),
}

/// ```text
/// MIGRATE host port <key | ""> destination-db timeout [COPY] [REPLACE]
///     [AUTH password | AUTH2 username password] [KEYS key [key ...]]
/// ```
fn migrate(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let argv = args.argv().to_vec();
    let (host, port) = (argv[1].clone(), argv[2].clone());
    let opts = options(&argv)?;
    let timeout = super::parse_i64(&argv[5])?;
    let db = super::parse_i64(&argv[4])?;
    let timeout = Duration::from_millis(if timeout <= 0 { 1000 } else { timeout as u64 });
    // The keys that are here; none: nothing to do (often a key that just expired).
    let present: Vec<Bytes> = opts
        .keys
        .iter()
        .filter(|k| ctx.lookup(k).is_some())
        .cloned()
        .collect();
    if present.is_empty() {
        return Ok(Frame::Simple(Bytes::from_static(b"NOKEY")));
    }
    let restore: &[u8] = if ctx.node.cluster.get().is_some() {
        b"RESTORE-ASKING"
    } else {
        b"RESTORE"
    };
    // Each key still here, with its remaining TTL (at least 1 ms) and its payload.
    let now = ctx.now;
    let encoding = super::persistence::rdb_encoding(ctx);
    let mut restores = Vec::new();
    let mut sent: Vec<Bytes> = Vec::new();
    for key in &present {
        let Some(entry) = ctx.lookup(key) else {
            continue;
        };
        let ttl = entry
            .expire_at()
            .map_or(0, |at| at.saturating_sub(now).max(1))
            .to_string();
        let payload = crate::rdb::dump_value(&entry.value, encoding);
        let mut line: Vec<&[u8]> = vec![restore, key, ttl.as_bytes(), &payload];
        if opts.replace {
            line.push(b"REPLACE");
        }
        locksmith_resp::encode_command(&line, &mut restores);
        sent.push(key.clone());
    }
    // The transfer blocks the thread up to the timeout per step, as Redis's does; the
    // runtime's other tasks move elsewhere meanwhile.
    crate::outbound::run_blocking(|| {
        let mut may_retry = true;
        loop {
            let conn = match ctx.state.migrate.get(&host, &port, timeout, now) {
                Ok(conn) => conn,
                // Redis's connect only waits for the socket to be writable, so a refused
                // connection fails at the first write (and its one retry).
                Err(e) if e.kind() == ErrorKind::ConnectionRefused => {
                    if std::mem::take(&mut may_retry) {
                        continue;
                    }
                    return Err(io_error(true));
                }
                Err(_) => {
                    return Err(CommandError::Raw(
                        "IOERR error or timeout connecting to the client".into(),
                    ))
                }
            };
            let mut out = Vec::new();
            if let Some((user, password)) = &opts.auth {
                match user {
                    Some(user) => {
                        locksmith_resp::encode_command(&[&b"AUTH"[..], user, password], &mut out)
                    }
                    None => locksmith_resp::encode_command(&[&b"AUTH"[..], password], &mut out),
                }
            }
            let select = conn.last_db != Some(db);
            if select {
                locksmith_resp::encode_command(
                    &[&b"SELECT"[..], db.to_string().as_bytes()],
                    &mut out,
                );
            }
            out.extend_from_slice(&restores);
            let outcome = exchange(conn, &out, opts.auth.is_some(), select, sent.len(), timeout);
            match outcome {
                Ok(replies) => {
                    let error = replies.first_error;
                    conn.last_db = if error.is_some() { None } else { Some(db) };
                    let acked: Vec<Bytes> = sent
                        .iter()
                        .zip(&replies.restored)
                        .filter(|(_, ok)| **ok)
                        .map(|(k, _)| k.clone())
                        .collect();
                    forget_moved(ctx, &acked, opts.copy);
                    return match error {
                        Some(text) => Err(CommandError::err(format!(
                            "Target instance replied with error: {}",
                            String::from_utf8_lossy(&text)
                        ))),
                        None => Ok(Frame::ok()),
                    };
                }
                Err(e) => {
                    ctx.state.migrate.close(&host, &port);
                    let timed_out = |e: &std::io::Error| {
                        matches!(e.kind(), ErrorKind::TimedOut | ErrorKind::WouldBlock)
                    };
                    let (retry, writing) = match &e {
                        SocketError::Write(io) => (!timed_out(io), true),
                        SocketError::Read(io, replies) => (*replies == 0 && !timed_out(io), false),
                    };
                    if retry && may_retry {
                        may_retry = false;
                        continue;
                    }
                    return Err(io_error(writing));
                }
            }
        }
    })
}

/// Redis's error after a failed transfer.
fn io_error(writing: bool) -> CommandError {
    CommandError::Raw(format!(
        "IOERR error or timeout {} to target instance",
        if writing { "writing" } else { "reading" }
    ))
}

/// The target's answers to one transfer.
struct Replies {
    /// Per RESTORE sent: whether it succeeded (and AUTH and SELECT before it).
    restored: Vec<bool>,
    /// The first error line (AUTH's, SELECT's or a RESTORE's), without its `-`.
    first_error: Option<Vec<u8>>,
}

/// Sends `out` and reads the AUTH, SELECT and `restores` RESTORE replies.
fn exchange(
    conn: &mut crate::outbound::Cached,
    out: &[u8],
    auth: bool,
    select: bool,
    restores: usize,
    timeout: Duration,
) -> Result<Replies, SocketError> {
    conn.write_all(out, timeout).map_err(SocketError::Write)?;
    let mut first_error = None;
    let mut prelude_ok = true;
    for sent in [auth, select] {
        if sent {
            let line = conn
                .read_line(timeout)
                .map_err(|e| SocketError::Read(e, 0))?;
            if let Some(err) = line.strip_prefix(b"-") {
                prelude_ok = false;
                first_error.get_or_insert_with(|| err.to_vec());
            }
        }
    }
    let mut restored = Vec::with_capacity(restores);
    for i in 0..restores {
        let line = conn
            .read_line(timeout)
            .map_err(|e| SocketError::Read(e, i))?;
        match line.strip_prefix(b"-") {
            Some(err) => {
                first_error.get_or_insert_with(|| err.to_vec());
                restored.push(false);
            }
            None => restored.push(prelude_ok),
        }
    }
    Ok(Replies {
        restored,
        first_error,
    })
}

/// Deletes the keys the target acknowledged (unless COPY), with Redis's `del` events, and
/// replicates the migration as a `DEL` of them.
fn forget_moved(ctx: &mut Ctx<'_>, acked: &[Bytes], copy: bool) {
    if copy || acked.is_empty() {
        return;
    }
    for key in acked {
        if ctx.delete(key) {
            ctx.notify(notify::GENERIC, "del", key);
        }
    }
    if ctx.propagating() {
        let mut argv = vec![Bytes::from_static(b"DEL")];
        argv.extend(acked.iter().cloned());
        ctx.propagate(argv);
    }
}
