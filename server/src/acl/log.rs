//! The ACL log (`ACL LOG`): refused commands, keys, channels and failed authentications,
//! newest first, with Redis's grouping of similar entries (same reason, context, object and
//! user within 60 s bump one entry's count).

use bytes::Bytes;

/// Entries within this many ms of each other are grouped (`ACL_LOG_GROUPING_MAX_TIME_DELTA`).
const GROUPING_MS: u64 = 60_000;
/// How many recent entries are looked at for grouping.
const GROUPING_SCAN: usize = 10;

/// Why an entry was logged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reason {
    /// A command not allowed.
    Command,
    /// A key not allowed.
    Key,
    /// A channel not allowed.
    Channel,
    /// A failed `AUTH`/`HELLO AUTH`.
    Auth,
}

impl Reason {
    /// As `ACL LOG` names it.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Reason::Command => "command",
            Reason::Key => "key",
            Reason::Channel => "channel",
            Reason::Auth => "auth",
        }
    }
}

/// Where the refused command ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Context {
    /// Sent by the client.
    Toplevel,
    /// Queued in, or run by, `MULTI`/`EXEC`.
    Multi,
    /// Run by a script.
    Lua,
}

impl Context {
    /// As `ACL LOG` names it.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Context::Toplevel => "toplevel",
            Context::Multi => "multi",
            Context::Lua => "lua",
        }
    }
}

/// One entry.
#[derive(Debug, Clone)]
pub(crate) struct LogEntry {
    /// How many similar events it stands for.
    pub(crate) count: u64,
    /// Why.
    pub(crate) reason: Reason,
    /// Where.
    pub(crate) context: Context,
    /// The command's full name, the key, the channel, or `AUTH`.
    pub(crate) object: Bytes,
    /// The user.
    pub(crate) username: Bytes,
    /// Node-clock ms of the last event.
    pub(crate) time_ms: u64,
    /// The client's `CLIENT INFO` line at the last event.
    pub(crate) client_info: String,
}

/// The log, newest first.
#[derive(Debug, Default)]
pub(crate) struct AclLog {
    entries: std::collections::VecDeque<LogEntry>,
    /// Every refusal logged since the server started, by reason (Redis 7.2's
    /// `acl_access_denied_*`; neither `ACL LOG RESET` nor `CONFIG RESETSTAT` clears them).
    denied: [u64; 4],
}

impl AclLog {
    /// Adds `entry` (count 1) or bumps a similar recent one (Redis's `addACLLogEntry`),
    /// keeping at most `max_len` entries.
    pub(crate) fn add(&mut self, entry: LogEntry, max_len: usize) {
        if let Some(n) = self.denied.get_mut(entry.reason as usize) {
            *n += 1;
        }
        let similar = self.entries.iter().take(GROUPING_SCAN).position(|e| {
            e.reason == entry.reason
                && e.context == entry.context
                && e.time_ms.abs_diff(entry.time_ms) <= GROUPING_MS
                && e.object == entry.object
                && e.username == entry.username
        });
        match similar.and_then(|at| self.entries.remove(at)) {
            Some(mut found) => {
                found.count += 1;
                found.time_ms = entry.time_ms;
                found.client_info = entry.client_info;
                self.entries.push_front(found);
            }
            None => {
                self.entries.push_front(entry);
                self.entries.truncate(max_len);
            }
        }
    }

    /// The newest `count` entries.
    pub(crate) fn newest(&self, count: usize) -> impl Iterator<Item = &LogEntry> {
        self.entries.iter().take(count)
    }

    /// How many refusals of `reason` were logged since the server started.
    pub(crate) fn denied(&self, reason: Reason) -> u64 {
        self.denied.get(reason as usize).copied().unwrap_or(0)
    }

    /// `ACL LOG RESET`.
    pub(crate) fn clear(&mut self) {
        self.entries.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(object: &'static str, time_ms: u64) -> LogEntry {
        LogEntry {
            count: 1,
            reason: Reason::Command,
            context: Context::Toplevel,
            object: Bytes::from_static(object.as_bytes()),
            username: Bytes::from_static(b"u"),
            time_ms,
            client_info: String::new(),
        }
    }

    #[test]
    fn similar_entries_group_and_the_log_is_bounded() {
        let mut log = AclLog::default();
        log.add(entry("get", 0), 5);
        log.add(entry("set", 10), 5);
        log.add(entry("get", 20), 5);
        let counts: Vec<(u64, &[u8])> = log.newest(10).map(|e| (e.count, &e.object[..])).collect();
        assert_eq!(counts, [(2, &b"get"[..]), (1, &b"set"[..])]);
        log.add(entry("get", 100_000), 5);
        assert_eq!(log.newest(10).count(), 3);
        for i in 0..10 {
            log.add(entry("x", i * 100_000), 2);
        }
        assert_eq!(log.newest(10).count(), 2);
    }
}
