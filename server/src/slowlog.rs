//! The slow log (`SLOWLOG`) and Valkey 8.1's command log (`COMMANDLOG`), as Redis's
//! `slowlog.c` and Valkey's `commandlog.c` keep them: per log, the latest commands whose value
//! reached the log's threshold, newest first, at most the log's max length of them, each with an
//! id, the unix time, the value (the duration in µs, or a size in bytes), the arguments (at
//! most [`SLOWLOG_ENTRY_MAX_ARGC`] of them, each cut at [`SLOWLOG_ENTRY_MAX_STRING`] bytes,
//! with credentials redacted as Redis redacts them), the client's address and name. Redis 7.0
//! keeps only the slow log; Valkey 8.1 also keeps the commands whose request or reply was
//! large ([`LogType`]), and its `SLOWLOG` shows the slow one.
//!
//! Whether a command is logged at all (its duration or sizes, `SKIP_SLOWLOG`, a blocked
//! client) is decided in `cmd::call`, Redis's `call()`.

use crate::config::table;
use bytes::{BufMut, Bytes, BytesMut};
use std::collections::VecDeque;

/// Redis's `SLOWLOG_ENTRY_MAX_ARGC`: arguments kept per entry, the last one saying how many
/// more there were.
pub(crate) const SLOWLOG_ENTRY_MAX_ARGC: usize = 32;
/// Redis's `SLOWLOG_ENTRY_MAX_STRING`: bytes kept of each argument.
pub(crate) const SLOWLOG_ENTRY_MAX_STRING: usize = 128;

/// What Redis shows instead of a secret argument.
const REDACTED: &[u8] = b"(redacted)";

/// The logs of Valkey 8.1's `COMMANDLOG`, each with its own entries, ids, threshold and max
/// length (Valkey's `COMMANDLOG_TYPE_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LogType {
    /// Commands that ran for at least `commandlog-execution-slower-than` µs (the slow log).
    Slow,
    /// Commands whose request took at least `commandlog-request-larger-than` bytes.
    LargeRequest,
    /// Commands whose reply took at least `commandlog-reply-larger-than` bytes.
    LargeReply,
}

impl LogType {
    /// Every log, in Valkey's order.
    pub(crate) const ALL: [LogType; 3] =
        [LogType::Slow, LogType::LargeRequest, LogType::LargeReply];

    /// The type a `COMMANDLOG` argument names (any case), as Valkey's `commandlogGetTypeOrReply`.
    pub(crate) fn parse(name: &[u8]) -> Option<LogType> {
        LogType::ALL
            .into_iter()
            .find(|t| name.eq_ignore_ascii_case(t.name().as_bytes()))
    }

    /// The type's name in `COMMANDLOG` commands.
    pub(crate) fn name(self) -> &'static str {
        match self {
            LogType::Slow => "slow",
            LogType::LargeRequest => "large-request",
            LogType::LargeReply => "large-reply",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// One logged command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Entry {
    /// Increasing id, never reused (not even after `SLOWLOG RESET`).
    pub(crate) id: u64,
    /// Unix time in seconds when the command ended.
    pub(crate) time: u64,
    /// What the log measures: how long the command ran in µs (the slow log), or its request's
    /// or reply's size in bytes.
    pub(crate) value: u64,
    /// The arguments as logged ([`logged_argv`]).
    pub(crate) argv: Vec<Bytes>,
    /// The client's address (`ip:port`; `?:0` for a script's commands).
    pub(crate) peer: String,
    /// The client's name (empty without one).
    pub(crate) name: Bytes,
}

/// One log: the slow log of a node, or another of Valkey's command logs.
#[derive(Debug, Default)]
pub(crate) struct SlowLog {
    /// Newest first.
    entries: VecDeque<Entry>,
    /// The id of the next entry.
    next_id: u64,
}

/// Every log of a node ([`LogType`]); under Redis 7.0 only the slow one fills.
#[derive(Debug, Default)]
pub(crate) struct CommandLogs {
    logs: [SlowLog; 3],
}

impl CommandLogs {
    /// The log of type `t`.
    pub(crate) fn get(&self, t: LogType) -> &SlowLog {
        &self.logs[t.index()]
    }

    /// The log of type `t`, to change.
    pub(crate) fn get_mut(&mut self, t: LogType) -> &mut SlowLog {
        &mut self.logs[t.index()]
    }
}

/// A command to log: who ran what, when, and the value the log measures.
#[derive(Debug)]
pub(crate) struct Logged<'a> {
    /// The command line as the client sent it.
    pub(crate) argv: &'a [Bytes],
    /// Unix time in seconds.
    pub(crate) time: u64,
    /// Duration in microseconds, or size in bytes.
    pub(crate) value: u64,
    /// The client's address.
    pub(crate) peer: String,
    /// The client's name.
    pub(crate) name: Bytes,
    /// The node's target (what it redacts).
    pub(crate) compat: crate::compat::Compat,
}

impl SlowLog {
    /// Logs `command` and drops the oldest entries beyond `max_len` (Redis's
    /// `slowlogPushEntryIfNeeded` once the value passed the threshold).
    pub(crate) fn push(&mut self, command: Logged<'_>, max_len: usize) {
        let id = self.next_id;
        self.next_id += 1;
        self.entries.push_front(Entry {
            id,
            time: command.time,
            value: command.value,
            argv: logged_argv(command.argv, command.compat),
            peer: command.peer,
            name: command.name,
        });
        self.trim(max_len);
    }

    /// Drops the oldest entries beyond `max_len`.
    pub(crate) fn trim(&mut self, max_len: usize) {
        self.entries.truncate(max_len);
    }

    /// `SLOWLOG LEN`.
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// `SLOWLOG RESET`: drops every entry (ids keep counting).
    pub(crate) fn reset(&mut self) {
        self.entries.clear();
    }

    /// The `count` newest entries, newest first.
    pub(crate) fn newest(&self, count: usize) -> impl Iterator<Item = &Entry> + '_ {
        self.entries.iter().take(count)
    }
}

/// The arguments of `argv` as a slow log entry keeps them (Redis's `slowlogCreateEntry`): at
/// most [`SLOWLOG_ENTRY_MAX_ARGC`], the last kept one replaced by `... (N more arguments)`
/// when there are more; each longer than [`SLOWLOG_ENTRY_MAX_STRING`] bytes cut there and
/// followed by `... (N more bytes)`; secrets as `(redacted)`. Every argument is copied, so an
/// entry never keeps a large request alive.
pub(crate) fn logged_argv(argv: &[Bytes], compat: crate::compat::Compat) -> Vec<Bytes> {
    let kept = argv.len().min(SLOWLOG_ENTRY_MAX_ARGC);
    let redacted = redacted_args(argv, compat);
    let mut out = Vec::with_capacity(kept);
    for (i, arg) in argv.iter().take(kept).enumerate() {
        if kept != argv.len() && i == kept - 1 {
            let more = argv.len() - kept + 1;
            out.push(Bytes::from(format!("... ({more} more arguments)")));
        } else if redacted.contains(&i) {
            out.push(Bytes::from_static(REDACTED));
        } else if arg.len() > SLOWLOG_ENTRY_MAX_STRING {
            let mut cut = BytesMut::with_capacity(SLOWLOG_ENTRY_MAX_STRING + 24);
            cut.put_slice(arg.get(..SLOWLOG_ENTRY_MAX_STRING).unwrap_or_default());
            let more = arg.len() - SLOWLOG_ENTRY_MAX_STRING;
            cut.put_slice(format!("... ({more} more bytes)").as_bytes());
            out.push(cut.freeze());
        } else {
            out.push(Bytes::copy_from_slice(arg));
        }
    }
    out
}

/// The positions of the arguments Redis replaces by `(redacted)` in the slow log and for
/// MONITOR (its `redactClientCommandArgument` calls): the credentials of `AUTH` (in its valid
/// forms), of `HELLO ... AUTH user pass` and of `MIGRATE ... AUTH|AUTH2`, `ACL SETUSER`'s
/// arguments, and the values of sensitive parameters in `CONFIG SET`.
pub(crate) fn redacted_args(argv: &[Bytes], compat: crate::compat::Compat) -> Vec<usize> {
    let is = |i: usize, word: &[u8]| argv.get(i).is_some_and(|a| a.eq_ignore_ascii_case(word));
    if is(0, b"auth") {
        // `authCommand` refuses more than three arguments before redacting anything.
        return match argv.len() {
            2 => vec![1],
            3 => vec![1, 2],
            _ => Vec::new(),
        };
    }
    if is(0, b"hello") {
        return hello_redacted(argv);
    }
    if is(0, b"migrate") {
        return migrate_redacted(argv);
    }
    if is(0, b"acl") && is(1, b"setuser") && argv.len() >= 3 {
        // `aclCommand` redacts the user name and every rule (passwords among them).
        return (2..argv.len()).collect();
    }
    let redaction = &compat.profile().redaction;
    if redaction.acl_user_names && is(0, b"acl") {
        // Valkey 8 also hides which users are looked up and deleted.
        if is(1, b"getuser") && argv.len() == 3 {
            return vec![2];
        }
        if is(1, b"deluser") && argv.len() >= 3 {
            return (2..argv.len()).collect();
        }
    }
    if is(0, b"config") && is(1, b"set") {
        // `configSetCommand` checks the count first, then redacts every sensitive value,
        // whatever else fails.
        if argv.len() < 4 || !argv.len().is_multiple_of(2) {
            return Vec::new();
        }
        return (2..argv.len())
            .step_by(2)
            .filter(|&i| {
                argv.get(i)
                    .and_then(|name| table::find_any(name))
                    .is_some_and(|p| {
                        p.flags & table::SENSITIVE != 0
                            || redaction.sensitive_params.contains(&p.name)
                    })
            })
            .map(|i| i + 1)
            .collect();
    }
    Vec::new()
}

/// `MIGRATE host port key db timeout [COPY] [REPLACE] [AUTH pw | AUTH2 user pw] [KEYS ...]`:
/// Redis redacts the credentials as it parses the options, stopping at `KEYS` or at the first
/// word it does not know.
fn migrate_redacted(argv: &[Bytes]) -> Vec<usize> {
    let mut out = Vec::new();
    let mut j = 6;
    // Bounded: each pass moves past at least one argument.
    while let Some(opt) = argv.get(j) {
        let more = argv.len() - 1 - j;
        if opt.eq_ignore_ascii_case(b"copy") || opt.eq_ignore_ascii_case(b"replace") {
            j += 1;
        } else if opt.eq_ignore_ascii_case(b"auth") && more >= 1 {
            out.push(j + 1);
            j += 2;
        } else if opt.eq_ignore_ascii_case(b"auth2") && more >= 2 {
            out.extend([j + 1, j + 2]);
            j += 3;
        } else {
            break;
        }
    }
    out
}

/// `HELLO [protover [AUTH username password] [SETNAME clientname]]`: Redis redacts the
/// credentials of each `AUTH` it reaches, parsing the options in order and stopping at the
/// first bad one (after a bad protocol version, nothing is redacted).
fn hello_redacted(argv: &[Bytes]) -> Vec<usize> {
    let mut out = Vec::new();
    let Some(version) = argv.get(1) else {
        return out;
    };
    if !matches!(locksmith_resp::parse_integer(version), Some(2 | 3)) {
        return out;
    }
    let mut j = 2;
    // Bounded: each pass moves past at least one argument.
    while let Some(opt) = argv.get(j) {
        let more = argv.len() - 1 - j;
        if opt.eq_ignore_ascii_case(b"auth") && more >= 2 {
            out.extend([j + 1, j + 2]);
            j += 3;
        } else if opt.eq_ignore_ascii_case(b"setname") && more >= 1 {
            // A name with spaces or control characters ends the command with an error.
            let valid = argv
                .get(j + 1)
                .is_some_and(|name| name.iter().all(|&b| (b'!'..=b'~').contains(&b)));
            if !valid {
                break;
            }
            j += 2;
        } else {
            break;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(args: &[&str]) -> Vec<Bytes> {
        args.iter().map(|a| Bytes::from(a.to_string())).collect()
    }

    fn logged(args: &[&str]) -> Vec<String> {
        logged_argv(&argv(args), crate::compat::Compat::Redis70)
            .iter()
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect()
    }

    #[test]
    fn long_command_lines_keep_31_arguments_and_a_count() {
        let mut args = vec!["sadd", "set"];
        let members: Vec<String> = (3..=33).map(|i| i.to_string()).collect();
        args.extend(members.iter().map(String::as_str));
        let out = logged(&args);
        assert_eq!(out.len(), 32);
        assert_eq!(out[30], "31");
        assert_eq!(out[31], "... (2 more arguments)");
        assert_eq!(logged(&args[..32]).len(), 32);
        assert_eq!(logged(&args[..32])[31], "32");
    }

    #[test]
    fn long_arguments_are_cut_at_128_bytes() {
        let long = "A".repeat(129);
        let out = logged(&["sadd", "set", "foo", &long]);
        assert_eq!(out[3], format!("{}... (1 more bytes)", "A".repeat(128)));
        let exact = "B".repeat(128);
        assert_eq!(logged(&["get", &exact])[1], exact);
    }

    #[test]
    fn credentials_are_redacted_as_redis_does() {
        assert_eq!(logged(&["AUTH", "pw"]), ["AUTH", "(redacted)"]);
        assert_eq!(
            logged(&["MIGRATE", "h", "1", "", "0", "5", "COPY", "AUTH2", "u", "p", "KEYS", "k"]),
            [
                "MIGRATE",
                "h",
                "1",
                "",
                "0",
                "5",
                "COPY",
                "AUTH2",
                "(redacted)",
                "(redacted)",
                "KEYS",
                "k"
            ]
        );
        assert_eq!(
            logged(&["MIGRATE", "h", "1", "k", "0", "5", "AUTH", "p"]),
            ["MIGRATE", "h", "1", "k", "0", "5", "AUTH", "(redacted)"]
        );
        assert_eq!(
            logged(&["auth", "user", "pw"]),
            ["auth", "(redacted)", "(redacted)"]
        );
        // Refused before redacting.
        assert_eq!(logged(&["AUTH", "a", "b", "c"]), ["AUTH", "a", "b", "c"]);
        assert_eq!(
            logged(&["HELLO", "3", "SETNAME", "x", "AUTH", "u", "p"]),
            [
                "HELLO",
                "3",
                "SETNAME",
                "x",
                "AUTH",
                "(redacted)",
                "(redacted)"
            ]
        );
        assert_eq!(
            logged(&["HELLO", "4", "AUTH", "u", "p"]),
            ["HELLO", "4", "AUTH", "u", "p"]
        );
        assert_eq!(
            logged(&["HELLO", "3", "SETNAME", "a b", "AUTH", "u", "p"]),
            ["HELLO", "3", "SETNAME", "a b", "AUTH", "u", "p"]
        );
        assert_eq!(
            logged(&["config", "set", "masterauth", "x", "maxmemory", "1"]),
            [
                "config",
                "set",
                "masterauth",
                "(redacted)",
                "maxmemory",
                "1"
            ]
        );
        assert_eq!(
            logged(&["config", "set", "requirepass"]),
            ["config", "set", "requirepass"]
        );
    }

    #[test]
    fn the_log_keeps_the_newest_entries_and_counts_ids_on() {
        let mut log = SlowLog::default();
        for i in 0..5u64 {
            let args = argv(&["ping", &i.to_string()]);
            let command = Logged {
                argv: &args,
                time: 1,
                value: i,
                peer: "127.0.0.1:1".into(),
                name: Bytes::new(),
                compat: crate::compat::Compat::Redis70,
            };
            log.push(command, 3);
        }
        assert_eq!(log.len(), 3);
        let ids: Vec<u64> = log.newest(10).map(|e| e.id).collect();
        assert_eq!(ids, [4, 3, 2]);
        log.trim(1);
        assert_eq!(log.newest(10).map(|e| e.id).collect::<Vec<_>>(), [4]);
        log.reset();
        assert_eq!(log.len(), 0);
        let args = argv(&["ping"]);
        let command = Logged {
            argv: &args,
            time: 1,
            value: 0,
            peer: String::new(),
            name: Bytes::new(),
            compat: crate::compat::Compat::Redis70,
        };
        log.push(command, 3);
        assert_eq!(log.newest(1).next().map(|e| e.id), Some(5));
    }
}
