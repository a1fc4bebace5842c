//! `MONITOR`: clients that asked to see every command the node runs, and the line format
//! Redis streams to them (`+<sec>.<usec> [<db> <addr>] "cmd" "arg"...`, `[<db> lua]` for
//! commands run by scripts, credentials redacted as in the slow log).

use crate::client::ClientHandle;
use bytes::Bytes;
use locksmith_resp::Frame;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};

/// The clients in MONITOR mode.
#[derive(Debug, Default)]
pub(crate) struct Monitors {
    count: AtomicUsize,
    clients: Mutex<Vec<Weak<ClientHandle>>>,
}

/// Who ran the command a line describes.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Origin<'a> {
    /// A client connection.
    Client(&'a ClientHandle),
    /// A script (`redis.call`).
    Lua,
}

impl Monitors {
    /// Adds `client`; false if it was already monitoring.
    pub(crate) fn add(&self, client: &Arc<ClientHandle>) -> bool {
        let Ok(mut list) = self.clients.lock() else {
            return false;
        };
        if list
            .iter()
            .any(|w| w.upgrade().is_some_and(|c| c.id == client.id))
        {
            return false;
        }
        list.push(Arc::downgrade(client));
        self.count.store(list.len(), Ordering::Release);
        true
    }

    /// Removes client `id` (`RESET`); false if it was not monitoring.
    pub(crate) fn remove(&self, id: u64) -> bool {
        let Ok(mut list) = self.clients.lock() else {
            return false;
        };
        let before = list.len();
        list.retain(|w| w.upgrade().is_some_and(|c| c.id != id));
        self.count.store(list.len(), Ordering::Release);
        list.len() < before
    }

    /// Whether anyone is monitoring.
    pub(crate) fn active(&self) -> bool {
        self.count.load(Ordering::Acquire) > 0
    }

    /// Streams one command line to every monitor (`replicationFeedMonitors`).
    pub(crate) fn feed(
        &self,
        compat: crate::compat::Compat,
        now_us: u64,
        db: usize,
        origin: Origin<'_>,
        argv: &[Bytes],
    ) {
        if !self.active() {
            return;
        }
        let line = format_line(compat, now_us, db, origin, argv);
        let Ok(mut list) = self.clients.lock() else {
            return;
        };
        list.retain(|w| match w.upgrade() {
            Some(c) if !c.is_killed() => {
                c.outbox
                    .send(Frame::Simple(Bytes::from(line.clone())), line.len() + 3);
                true
            }
            _ => false,
        });
        self.count.store(list.len(), Ordering::Release);
    }
}

/// One MONITOR line (without the leading `+` and the CRLF the encoder adds).
pub(crate) fn format_line(
    compat: crate::compat::Compat,
    now_us: u64,
    db: usize,
    origin: Origin<'_>,
    argv: &[Bytes],
) -> String {
    let mut line = format!("{}.{:06} ", now_us / 1_000_000, now_us % 1_000_000);
    match origin {
        Origin::Lua => line.push_str(&format!("[{db} lua]")),
        // Redis names a Unix socket's client `unix:<path>` here.
        Origin::Client(c) => match &c.unix {
            Some(path) => line.push_str(&format!("[{db} unix:{path}]")),
            None => line.push_str(&format!("[{db} {}]", c.addr)),
        },
    }
    let redacted = crate::slowlog::redacted_args(argv, compat);
    for (i, arg) in argv.iter().enumerate() {
        line.push(' ');
        if redacted.contains(&i) {
            line.push_str("\"(redacted)\"");
        } else {
            repr(&mut line, arg);
        }
    }
    line
}

/// Redis's `sdscatrepr`.
fn repr(out: &mut String, s: &[u8]) {
    out.push('"');
    for &c in s {
        match c {
            b'\\' => out.push_str("\\\\"),
            b'"' => out.push_str("\\\""),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            7 => out.push_str("\\a"),
            8 => out.push_str("\\b"),
            0x20..=0x7e => out.push(char::from(c)),
            _ => out.push_str(&format!("\\x{c:02x}")),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lua_lines_match_redis_format() {
        let argv = [
            Bytes::from_static(b"hincrby"),
            Bytes::from_static(b"k\"\n\x01"),
        ];
        assert_eq!(
            format_line(
                crate::compat::Compat::Redis70,
                1_568_357_922_123_701,
                0,
                Origin::Lua,
                &argv
            ),
            "1568357922.123701 [0 lua] \"hincrby\" \"k\\\"\\n\\x01\""
        );
    }
}
