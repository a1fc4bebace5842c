//! The compatibility target a node is started with ([`Compat`]: `--compat redis-7.0` or
//! `--compat valkey-8.1`) and everything that target decides, as data: the server's name and
//! versions (`HELLO`, `INFO server`, `LOLWUT`, RDB files) and the fields and order of
//! `INFO server`. Each target's [`Profile`] was read from its reference server (redis-server
//! 7.0.15, valkey-server 8.1.8); the commands that print them ask the node's target for its
//! profile instead of naming a server.

use std::fmt::Display;

/// The server a node reproduces: the release whose replies, versions and fields it gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Compat {
    /// Redis 7.0.15 (`redis-7.0`, the default).
    #[default]
    Redis70,
    /// Valkey 8.1.8 (`valkey-8.1`).
    Valkey81,
}

impl Compat {
    /// Every target, the default first.
    pub const ALL: [Compat; 2] = [Compat::Redis70, Compat::Valkey81];

    /// The target's name as `--compat` takes it (`redis-7.0`, `valkey-8.1`).
    pub fn name(self) -> &'static str {
        self.profile().target
    }

    /// What the target decides.
    pub(crate) fn profile(self) -> &'static Profile {
        match self {
            Compat::Redis70 => &REDIS_7_0,
            Compat::Valkey81 => &VALKEY_8_1,
        }
    }
}

impl std::fmt::Display for Compat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Compat {
    type Err = String;

    /// Parses a target's name (any case): `redis-7.0` or `valkey-8.1`.
    fn from_str(s: &str) -> Result<Self, String> {
        Compat::ALL
            .into_iter()
            .find(|c| c.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| {
                let names: Vec<&str> = Compat::ALL.iter().map(|c| c.name()).collect();
                format!(
                    "unknown compatibility target '{s}' (expected {})",
                    names.join(" or ")
                )
            })
    }
}

/// What a target decides about how the node presents itself.
#[derive(Debug)]
pub(crate) struct Profile {
    /// The target's name (`--compat`).
    pub(crate) target: &'static str,
    /// `HELLO`'s `server` (`redis`, `valkey`).
    pub(crate) server_name: &'static str,
    /// The server's own version: `HELLO`'s `version`, `LOLWUT`'s.
    pub(crate) version: &'static str,
    /// The Redis version it claims to be compatible with: `INFO`'s `redis_version` and the RDB
    /// file's `redis-ver` (Valkey reports 7.2.4 there).
    pub(crate) redis_version: &'static str,
    /// `INFO server`'s fields in order.
    pub(crate) info_server: &'static [(&'static str, ServerField)],
    /// What its error texts call the server (`BUSY Redis is busy...`; `Valkey`).
    pub(crate) title: &'static str,
    /// How it names itself while `extended-redis-compatibility` is on (Valkey 8's parameter):
    /// as Redis, for clients that check.
    pub(crate) extended_redis: Option<ExtendedRedis>,
    /// The globals scripts and functions find the Lua API under (`redis`; Valkey also
    /// `server`, the same table).
    pub(crate) lua_api_names: &'static [&'static str],
    /// The texts of the scripting API's errors (`script_lua.c`, `script.c`).
    pub(crate) script_texts: ScriptTexts,
    /// The texts of ACL refusals.
    pub(crate) acl_texts: AclTexts,
    /// What the slow log and MONITOR redact beyond Redis 7.0's rules.
    pub(crate) redaction: Redaction,
    /// The containers' `HELP` replies as the reference gives them (`## NAME` lines, then the
    /// reply's lines; [`crate::redis_table::help_of`]).
    pub(crate) help: &'static str,
    /// The last line of every `HELP` reply built here (`    Prints this help.`).
    pub(crate) help_footer: &'static str,
    /// The version fields of the Lua API table (`redis.REDIS_VERSION`...).
    pub(crate) lua_versions: &'static [(&'static str, LuaConst)],
    /// How its configuration parameters differ from Redis 7.0.15's table (the parameters only
    /// it has are the config module's `added` table of the target).
    pub(crate) config: ConfigChanges,
    /// Its description of its commands (`COMMAND INFO`/`DOCS`, arity, flags, key
    /// specifications, ACL categories): which commands the node has and how it describes them.
    pub(crate) commands: &'static crate::redis_table::Source,
    /// How its command handlers check their arguments where they differ from Redis 7.0.15's
    /// (the options a later release added are found in [`Profile::commands`] instead).
    pub(crate) checks: HandlerChecks,
    /// Behaviour that changed after Redis 7.0 (in Redis 7.2, which Valkey continues).
    pub(crate) semantics: Semantics,
    /// `INFO clients`' fields in order (`INFO`'s code knows how to compute each name).
    pub(crate) info_clients: &'static [&'static str],
    /// `INFO stats`' fields in order (as `info_clients`).
    pub(crate) info_stats: &'static [&'static str],
    /// The fields the target adds to `INFO memory` and `INFO replication`.
    pub(crate) info_extras: InfoExtras,
    /// `CLIENT LIST`/`INFO` lines have Valkey 8.1's fields: `capa` and `watch`, the library
    /// name and version always, and the client's `tot-net-in`, `tot-net-out` and `tot-cmds`.
    pub(crate) client_list_totals: bool,
    /// How values are encoded in memory and in RDB payloads and files.
    pub(crate) encodings: Encodings,
}

/// Fields a target adds to `INFO memory` and `INFO replication` that are 0 here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct InfoExtras {
    /// `mem_overhead_db_hashtable_rehashing` (Valkey 8: memory of key tables being rehashed
    /// incrementally; ours grow at once).
    pub(crate) hashtable_rehashing: bool,
    /// `replicas_waiting_psync` (Valkey 8's dual-channel replication, not built here).
    pub(crate) replicas_waiting_psync: bool,
}

/// How a Valkey node names itself under `extended-redis-compatibility yes`: `HELLO`'s server
/// and version, the name in error texts, `INFO server`'s `redis_mode` for `server_mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ExtendedRedis {
    /// `HELLO`'s `server`.
    pub(crate) server_name: &'static str,
    /// `HELLO`'s `version`.
    pub(crate) version: &'static str,
    /// The name in error texts.
    pub(crate) title: &'static str,
    /// The name of `INFO server`'s mode field.
    pub(crate) mode_field: &'static str,
}

/// What a target's slow log and MONITOR redact beyond Redis 7.0's rules (its
/// `redactClientCommandArgument` calls).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Redaction {
    /// `ACL GETUSER`'s user name and `ACL DELUSER`'s user names (Valkey 8).
    pub(crate) acl_user_names: bool,
    /// Parameters whose `CONFIG SET` value is redacted besides those Redis 7.0 redacts.
    pub(crate) sensitive_params: &'static [&'static str],
}

/// The texts of a target's ACL refusals, as templates: `{user}` stands for the user's name,
/// `{command}` for the command's full name, `{object}` for the refused key or channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct AclTexts {
    /// A command refused before it ran, by what was refused (after `NOPERM `).
    pub(crate) command: &'static str,
    /// See [`AclTexts::command`].
    pub(crate) key: &'static str,
    /// See [`AclTexts::command`].
    pub(crate) channel: &'static str,
    /// A script's command refused (after `ERR `).
    pub(crate) script_command: &'static str,
    /// See [`AclTexts::script_command`].
    pub(crate) script_key: &'static str,
    /// See [`AclTexts::script_command`].
    pub(crate) script_channel: &'static str,
    /// `ACL DRYRUN`'s answer when refused.
    pub(crate) dryrun_command: &'static str,
    /// See [`AclTexts::dryrun_command`].
    pub(crate) dryrun_key: &'static str,
    /// See [`AclTexts::dryrun_command`].
    pub(crate) dryrun_channel: &'static str,
}

/// The error texts of a target's scripting API, where Valkey reworded Redis 7.0's (it names
/// the API `server` and drops "Redis" and "redis lib").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ScriptTexts {
    /// What the texts call a command (`Unknown Redis command called from script`; Valkey:
    /// `Unknown command called from script`).
    pub(crate) command: &'static str,
    /// `redis.call()` without arguments.
    pub(crate) call_without_arguments: &'static str,
    /// `redis.call` with an argument that is neither a string nor a number.
    pub(crate) call_bad_argument: &'static str,
    /// `redis.acl_check_cmd` of a command the server does not have.
    pub(crate) acl_check_unknown_command: &'static str,
    /// `redis.log` with fewer than two arguments.
    pub(crate) log_arity: &'static str,
    /// `redis.log` with a level outside 0..=3.
    pub(crate) log_level: &'static str,
    /// `redis.setresp` without exactly one argument.
    pub(crate) setresp_arity: &'static str,
    /// `redis.set_repl` without exactly one argument.
    pub(crate) set_repl_arity: &'static str,
    /// A script stopped by `SCRIPT KILL` (with the `ERR` code).
    pub(crate) script_killed: &'static str,
    /// A function stopped by `FUNCTION KILL` (with the `ERR` code).
    pub(crate) function_killed: &'static str,
    /// The sandbox has the `os` library with `os.clock` alone (Redis 7.2); Redis 7.0 has no
    /// `os`.
    pub(crate) os_clock: bool,
}

/// How a target encodes values: the encodings `OBJECT ENCODING` reports and the bytes `DUMP`,
/// RDB files and replication's payloads hold (`rdb.c`, `t_set.c`, `t_list.c`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Encodings {
    /// A small set of strings is a listpack, under `set-max-listpack-entries` and
    /// `set-max-listpack-value` (Redis 7.2): written as `RDB_TYPE_SET_LISTPACK` (20). Redis
    /// 7.0 keeps every set that is no intset in a hashtable.
    pub(crate) set_listpack: bool,
    /// A small list is one listpack (`OBJECT ENCODING listpack`) until it outgrows one
    /// quicklist node under `list-max-listpack-size`, and one again once it shrinks to half of
    /// that (Redis 7.2); Redis 7.0 keeps every list in a quicklist. Written alike.
    pub(crate) list_listpack: bool,
    /// The RDB version payloads and files carry (`RDB_VERSION`), and the newest `RESTORE` and
    /// a load accept.
    pub(crate) rdb_version: u16,
    /// Streams are written as `RDB_TYPE_STREAM_LISTPACKS_3` (21: each consumer's active time
    /// after its seen time, Redis 7.2); Redis 7.0 writes `RDB_TYPE_STREAM_LISTPACKS_2` (19).
    pub(crate) stream_active_time: bool,
    /// An element larger than a quicklist node holds under `list-max-listpack-size` is a plain
    /// node of its own (Redis 7.2's `isLargeElement`); Redis 7.0 makes a plain node only of an
    /// element of the packed threshold's size (1 GB).
    pub(crate) large_elements_plain: bool,
    /// The RDB file's aux field naming the server's version, and its value.
    pub(crate) rdb_server_version: (&'static str, &'static str),
    /// How doubles are written: in replies (`addReplyDouble`), a listpack's scores (`d2string`),
    /// a script's numbers as command arguments. Redis 7.0 writes C's `%.17g`
    /// (`0.10000000000000001`), Valkey 8 the shortest form that reads back as the same double
    /// (`fpconv_dtoa`: `0.1`).
    pub(crate) doubles: locksmith_resp::Doubles,
}

/// Redis 7.0's encodings.
pub(crate) const REDIS_7_0_ENCODINGS: Encodings = Encodings {
    set_listpack: false,
    list_listpack: false,
    rdb_version: 10,
    stream_active_time: false,
    large_elements_plain: false,
    rdb_server_version: ("redis-ver", "7.0.15"),
    doubles: locksmith_resp::Doubles::Redis,
};

/// Valkey 8.1's (Redis 7.2's) encodings.
pub(crate) const VALKEY_8_1_ENCODINGS: Encodings = Encodings {
    set_listpack: true,
    list_listpack: true,
    rdb_version: 11,
    stream_active_time: true,
    large_elements_plain: true,
    rdb_server_version: ("valkey-ver", "8.1.8"),
    doubles: locksmith_resp::Doubles::Shortest,
};

/// How a target's command handlers check their arguments, where Valkey changed Redis 7.0's.
#[derive(Debug)]
pub(crate) struct HandlerChecks {
    /// `BITCOUNT` and `BITPOS` check their arguments before they look the key up (a syntax
    /// error on a missing key is an error), and `BITCOUNT key start` counts to the end
    /// (Valkey 8.0); Redis 7.0 answers 0 or -1 for a missing key whatever follows, and refuses
    /// a start without an end.
    pub(crate) bit_args_first: bool,
    /// `SCAN ... TYPE name` with a name no type has answers `ERR unknown type name 'name'`
    /// (Valkey 8.0); Redis 7.0 matches nothing.
    pub(crate) scan_rejects_unknown_type: bool,
    /// A blocking command's timeout in seconds is rounded up to whole milliseconds, and one
    /// past the millisecond range is `timeout is out of range` (Valkey's
    /// `getTimeoutFromObjectOrReply`); Redis 7.0 truncates and calls it negative.
    pub(crate) timeout_rounds_up: bool,
    /// `LPOS ... RANK` refuses `LLONG_MIN` (`value is out of range, value must between
    /// -9223372036854775807 and 9223372036854775807`, Valkey); Redis 7.0 takes it.
    pub(crate) lpos_rank_refuses_min: bool,
    /// The error of `XREAD`/`XREADGROUP` with more keys than IDs; `{command}` stands for the
    /// command's name and `{id}` for its special ID (`$`, `>`).
    pub(crate) xread_unbalanced: &'static str,
}

/// Behaviour a target changed after Redis 7.0, one switch each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Semantics {
    /// Serving a blocked client looks its key up without side effects (Redis 7.2's
    /// `LOOKUP_NOEFFECTS`), at the time of the command that made it ready: an expired key
    /// counts as absent but stays, to be reclaimed by the next command that touches it (the
    /// served command itself, re-run), where Redis 7.0 reclaims it (and propagates its DEL)
    /// then.
    /// A blocked `XREADGROUP` whose stream was deleted, replaced or lost its group is re-run
    /// and answers what the command answers then (`NOGROUP`, `WRONGTYPE`), where Redis 7.0
    /// answers `UNBLOCKED ...` / `NOGROUP the consumer group ...`.
    pub(crate) blocked_serve_reruns: bool,
    /// `SCAN ... TYPE t` reclaims the expired keys it meets that match the pattern whatever
    /// their type (Redis 7.0 looks the type up with a lookup that expires); Redis 7.2 reclaims
    /// only those of type `t`.
    pub(crate) scan_type_lookup_expires: bool,
    /// `XREAD ... STREAMS key +` reads the stream's last entry (Redis 7.4, Valkey 8.0); Redis
    /// 7.0 rejects `+` as an invalid ID.
    pub(crate) xread_last_entry: bool,
    /// The slow log records a script's commands with the calling client's address and name
    /// (Redis 7.2); Redis 7.0 records them as its Lua client's (`?:0`, no name).
    pub(crate) slowlog_script_commands_as_caller: bool,
    /// `XSETID` without `MAXDELETEDID` refuses an ID below the stream's max deleted entry ID
    /// (Valkey); Redis 7.0 sets it.
    pub(crate) xsetid_checks_max_deleted: bool,
    /// A tracking client's script tracks the keys of the read commands it runs (Redis 7.2's
    /// `trackingRememberKeys(c, caller)`); Redis 7.0 tracks all the keys the script declared
    /// once it runs any read command.
    pub(crate) script_tracks_read_keys: bool,
    /// `XREADGROUP` creates its consumer in every group it reads, served or not (Redis 7.2);
    /// Redis 7.0 creates it only where it serves entries (or reads its history).
    pub(crate) xreadgroup_creates_unserved_consumer: bool,
    /// A script's `XREAD`/`XREADGROUP ... BLOCK` runs as without `BLOCK` (the client may not
    /// block: what it serves, else a null array, as inside MULTI; Redis 7.2); Redis 7.0
    /// refuses it (`xread command is not allowed with BLOCK option from scripts`).
    pub(crate) script_stream_reads_never_block: bool,
    /// `TIME` inside a script or function answers the time the script started, as the
    /// commands that read the clock there do (Redis 7.2's `commandTimeSnapshot`); Redis 7.0
    /// answers the time of the call.
    pub(crate) script_time_is_cached: bool,
    /// `READONLY` and `READWRITE` answer `OK` outside cluster mode too (Valkey 8: a replica
    /// then serves the client's reads in spite of `CLIENT CAPA redirect`); Redis 7.0 answers
    /// `ERR This instance has cluster support disabled`.
    pub(crate) readonly_outside_cluster: bool,
    /// The scripts `EVAL` adds are evicted past 500, least recently run first (Valkey 8,
    /// Redis 7.4; `INFO stats`' `evicted_scripts`); Redis 7.0 keeps every script until
    /// `SCRIPT FLUSH`.
    pub(crate) eval_scripts_evicted: bool,
    /// Valkey 8.1's command log: besides the slow log, the commands whose request or reply
    /// reached `commandlog-request-larger-than` / `commandlog-reply-larger-than` bytes are
    /// logged (`COMMANDLOG`), and a log whose max length is 0 takes no entry and drops none
    /// (`commandlogPushEntryIfNeeded`); Redis 7.0 keeps the slow log alone, and its
    /// `slowlog-max-len 0` empties it at the next command.
    pub(crate) commandlog: bool,
}

/// Redis 7.0's behaviour.
const REDIS_7_0_SEMANTICS: Semantics = Semantics {
    blocked_serve_reruns: false,
    scan_type_lookup_expires: true,
    xread_last_entry: false,
    slowlog_script_commands_as_caller: false,
    xsetid_checks_max_deleted: false,
    script_tracks_read_keys: false,
    xreadgroup_creates_unserved_consumer: false,
    script_stream_reads_never_block: false,
    script_time_is_cached: false,
    readonly_outside_cluster: false,
    eval_scripts_evicted: false,
    commandlog: false,
};

/// Valkey 8.1's: Redis 7.2's behaviour and what Valkey changed since.
const VALKEY_8_1_SEMANTICS: Semantics = Semantics {
    blocked_serve_reruns: true,
    scan_type_lookup_expires: false,
    xread_last_entry: true,
    slowlog_script_commands_as_caller: true,
    xsetid_checks_max_deleted: true,
    script_tracks_read_keys: true,
    xreadgroup_creates_unserved_consumer: true,
    script_stream_reads_never_block: true,
    script_time_is_cached: true,
    readonly_outside_cluster: true,
    eval_scripts_evicted: true,
    commandlog: true,
};

/// A constant of the Lua API table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LuaConst {
    /// A string.
    Text(&'static str),
    /// A number.
    Number(i64),
}

/// How a target's configuration parameters differ from Redis 7.0.15's, by name.
#[derive(Debug)]
pub(crate) struct ConfigChanges {
    /// New names of Redis's parameters, `(new, Redis's)`: both names answer, for one value.
    pub(crate) renamed: &'static [(&'static str, &'static str)],
    /// Defaults that differ, `(name, value)`.
    pub(crate) defaults: &'static [(&'static str, &'static str)],
    /// Redis's parameters a `CONFIG GET` pattern does not list (only the exact name finds them).
    pub(crate) hidden: &'static [&'static str],
    /// Redis's parameters the target does not have.
    pub(crate) removed: &'static [&'static str],
}

/// No change: Redis 7.0.15's own table.
const NO_CONFIG_CHANGES: ConfigChanges = ConfigChanges {
    renamed: &[],
    defaults: &[],
    hidden: &[],
    removed: &[],
};

/// Where a field of `INFO server` takes its value from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ServerField {
    /// The same text in every process.
    Fixed(&'static str),
    /// [`Profile::redis_version`].
    RedisVersion,
    /// [`Profile::server_name`].
    ServerName,
    /// [`Profile::version`].
    Version,
    /// `redis_mode` / `server_mode`: `standalone` or `cluster`.
    Mode,
    /// The operating system (`uname`'s name, release and machine).
    Os,
    /// The pointer width.
    ArchBits,
    /// The process id.
    ProcessId,
    /// The node's run id.
    RunId,
    /// The port listened on.
    TcpPort,
    /// The node clock's now, in µs.
    ServerTimeUsec,
    /// Seconds since the node started.
    UptimeSeconds,
    /// Days since the node started.
    UptimeDays,
    /// `hz` as configured (`hz`, `configured_hz`, `clients_hz`: the same while idle).
    Hz,
    /// Redis's 24-bit LRU clock (seconds).
    LruClock,
    /// The running executable's path.
    Executable,
    /// `availability-zone` (Valkey's parameter; empty unless set).
    AvailabilityZone,
    /// The TCP listener: `name=tcp,bind=<address>,port=<port>`.
    Listener,
}

/// The values of `INFO server`'s fields that vary per process or configuration.
#[derive(Debug)]
pub(crate) struct ServerFacts {
    /// Whether the node runs in cluster mode.
    pub(crate) cluster: bool,
    /// `uname`'s name, release and machine.
    pub(crate) os: String,
    /// The node's run id.
    pub(crate) run_id: String,
    /// The address listened on.
    pub(crate) bind: std::net::IpAddr,
    /// The port listened on.
    pub(crate) port: u16,
    /// The node clock's now, in µs.
    pub(crate) now_us: u64,
    /// Seconds since the node started.
    pub(crate) uptime_s: u64,
    /// `hz`.
    pub(crate) hz: u64,
    /// The node clock's now, in ms.
    pub(crate) now_ms: u64,
    /// `availability-zone`.
    pub(crate) availability_zone: String,
    /// `extended-redis-compatibility` is on.
    pub(crate) extended_redis: bool,
}

impl Profile {
    /// Writes `INFO server`'s fields (without the section's title) through `line`.
    pub(crate) fn info_server(
        &self,
        facts: &ServerFacts,
        line: &mut dyn FnMut(&str, &dyn Display),
    ) {
        for &(name, field) in self.info_server {
            match field {
                ServerField::Fixed(text) => line(name, &text),
                ServerField::RedisVersion => line(name, &self.redis_version),
                ServerField::ServerName => line(name, &self.server_name),
                ServerField::Version => line(name, &self.version),
                ServerField::Mode => line(
                    match self.extended_redis {
                        Some(alias) if facts.extended_redis => alias.mode_field,
                        _ => name,
                    },
                    &if facts.cluster {
                        "cluster"
                    } else {
                        "standalone"
                    },
                ),
                ServerField::Os => line(name, &facts.os),
                ServerField::ArchBits => line(name, &usize::BITS),
                ServerField::ProcessId => line(name, &std::process::id()),
                ServerField::RunId => line(name, &facts.run_id),
                ServerField::TcpPort => line(name, &facts.port),
                ServerField::ServerTimeUsec => line(name, &facts.now_us),
                ServerField::UptimeSeconds => line(name, &facts.uptime_s),
                ServerField::UptimeDays => line(name, &(facts.uptime_s / 86_400)),
                ServerField::Hz => line(name, &facts.hz),
                ServerField::LruClock => line(name, &((facts.now_ms / 1000) & ((1 << 24) - 1))),
                ServerField::Executable => {
                    let exe = std::env::current_exe()
                        .map(|p| p.display().to_string())
                        .unwrap_or_default();
                    line(name, &exe);
                }
                ServerField::AvailabilityZone => line(name, &facts.availability_zone),
                ServerField::Listener => line(
                    name,
                    &format!("name=tcp,bind={},port={}", facts.bind, facts.port),
                ),
            }
        }
    }
}

/// Redis 7.0.15, as redis-server 7.0.15 answers.
static REDIS_7_0: Profile = Profile {
    target: "redis-7.0",
    server_name: "redis",
    version: "7.0.15",
    redis_version: "7.0.15",
    title: "Redis",
    extended_redis: None,
    info_server: &[
        ("redis_version", ServerField::RedisVersion),
        ("redis_git_sha1", ServerField::Fixed("00000000")),
        ("redis_git_dirty", ServerField::Fixed("0")),
        ("redis_build_id", ServerField::Fixed("0")),
        ("redis_mode", ServerField::Mode),
        ("os", ServerField::Os),
        ("arch_bits", ServerField::ArchBits),
        ("monotonic_clock", ServerField::Fixed("POSIX clock_gettime")),
        ("multiplexing_api", ServerField::Fixed("epoll")),
        ("atomicvar_api", ServerField::Fixed("c11-builtin")),
        ("gcc_version", ServerField::Fixed("0.0.0")),
        ("process_id", ServerField::ProcessId),
        ("process_supervised", ServerField::Fixed("no")),
        ("run_id", ServerField::RunId),
        ("tcp_port", ServerField::TcpPort),
        ("server_time_usec", ServerField::ServerTimeUsec),
        ("uptime_in_seconds", ServerField::UptimeSeconds),
        ("uptime_in_days", ServerField::UptimeDays),
        ("hz", ServerField::Hz),
        ("configured_hz", ServerField::Hz),
        ("lru_clock", ServerField::LruClock),
        ("executable", ServerField::Executable),
        ("config_file", ServerField::Fixed("")),
        ("io_threads_active", ServerField::Fixed("0")),
    ],
    lua_api_names: &["redis"],
    redaction: Redaction {
        acl_user_names: false,
        sensitive_params: &[],
    },
    help: include_str!("redis_table/help.txt"),
    help_footer: "    Prints this help.",
    acl_texts: AclTexts {
        command: "this user has no permissions to run the '{command}' command",
        key: "this user has no permissions to access one of the keys used as arguments",
        channel: "this user has no permissions to access one of the channels used as arguments",
        script_command: "The user executing the script can't run this command or subcommand",
        script_key: "The user executing the script can't access at least one of the keys \
                     mentioned in the command arguments",
        script_channel: "The user executing the script can't publish to the channel mentioned \
                         in the command",
        dryrun_command: "This user has no permissions to run the '{command}' command",
        dryrun_key: "This user has no permissions to access the '{object}' key",
        dryrun_channel: "This user has no permissions to access the '{object}' channel",
    },
    script_texts: ScriptTexts {
        command: "Redis command",
        call_without_arguments: "Please specify at least one argument for this redis lib call",
        call_bad_argument: "Lua redis lib command arguments must be strings or integers",
        acl_check_unknown_command: "Invalid command passed to redis.acl_check_cmd()",
        log_arity: "redis.log() requires two arguments or more.",
        log_level: "Invalid debug level.",
        setresp_arity: "redis.setresp() requires one argument.",
        set_repl_arity: "redis.set_repl() requires two arguments.",
        script_killed: "ERR Script killed by user with SCRIPT KILL...",
        function_killed: "ERR Script killed by user with SCRIPT KILL...",
        os_clock: false,
    },
    lua_versions: &[
        ("REDIS_VERSION", LuaConst::Text("7.0.15")),
        ("REDIS_VERSION_NUM", LuaConst::Number(0x07_00_0f)),
    ],
    config: NO_CONFIG_CHANGES,
    commands: &crate::redis_table::REDIS_7_0,
    checks: HandlerChecks {
        bit_args_first: false,
        scan_rejects_unknown_type: false,
        timeout_rounds_up: false,
        lpos_rank_refuses_min: false,
        xread_unbalanced:
            "Unbalanced XREAD list of streams: for each stream key an ID or '$' must \
                           be specified.",
    },
    semantics: REDIS_7_0_SEMANTICS,
    info_clients: &[
        "connected_clients",
        "cluster_connections",
        "maxclients",
        "client_recent_max_input_buffer",
        "client_recent_max_output_buffer",
        "blocked_clients",
        "tracking_clients",
        "clients_in_timeout_table",
    ],
    info_stats: &[
        "total_connections_received",
        "total_commands_processed",
        "instantaneous_ops_per_sec",
        "total_net_input_bytes",
        "total_net_output_bytes",
        "total_net_repl_input_bytes",
        "total_net_repl_output_bytes",
        "instantaneous_input_kbps",
        "instantaneous_output_kbps",
        "rejected_connections",
        "sync_full",
        "sync_partial_ok",
        "sync_partial_err",
        "expired_keys",
        "expired_stale_perc",
        "expired_time_cap_reached_count",
        "expire_cycle_cpu_milliseconds",
        "evicted_keys",
        "keyspace_hits",
        "keyspace_misses",
        "pubsub_channels",
        "pubsub_patterns",
        "pubsubshard_channels",
        "latest_fork_usec",
        "total_forks",
        "migrate_cached_sockets",
        "tracking_total_keys",
        "tracking_total_items",
        "tracking_total_prefixes",
        "total_error_replies",
        "total_reads_processed",
        "total_writes_processed",
        "io_threaded_reads_processed",
        "io_threaded_writes_processed",
    ],
    info_extras: InfoExtras {
        hashtable_rehashing: false,
        replicas_waiting_psync: false,
    },
    client_list_totals: false,
    encodings: REDIS_7_0_ENCODINGS,
};

/// Valkey 8.1.8, as valkey-server 8.1.8 answers: its own name and version beside the Redis
/// version it stays compatible with, `server_mode` for `redis_mode`, no `atomicvar_api`,
/// `clients_hz`, `availability_zone` and the listener line.
static VALKEY_8_1: Profile = Profile {
    target: "valkey-8.1",
    server_name: "valkey",
    version: "8.1.8",
    redis_version: "7.2.4",
    title: "Valkey",
    extended_redis: Some(ExtendedRedis {
        server_name: "redis",
        version: "7.2.4",
        title: "Redis",
        mode_field: "redis_mode",
    }),
    info_server: &[
        ("redis_version", ServerField::RedisVersion),
        ("server_name", ServerField::ServerName),
        ("valkey_version", ServerField::Version),
        ("valkey_release_stage", ServerField::Fixed("ga")),
        ("redis_git_sha1", ServerField::Fixed("00000000")),
        ("redis_git_dirty", ServerField::Fixed("0")),
        ("redis_build_id", ServerField::Fixed("0")),
        ("server_mode", ServerField::Mode),
        ("os", ServerField::Os),
        ("arch_bits", ServerField::ArchBits),
        ("monotonic_clock", ServerField::Fixed("POSIX clock_gettime")),
        ("multiplexing_api", ServerField::Fixed("epoll")),
        ("gcc_version", ServerField::Fixed("0.0.0")),
        ("process_id", ServerField::ProcessId),
        ("process_supervised", ServerField::Fixed("no")),
        ("run_id", ServerField::RunId),
        ("tcp_port", ServerField::TcpPort),
        ("server_time_usec", ServerField::ServerTimeUsec),
        ("uptime_in_seconds", ServerField::UptimeSeconds),
        ("uptime_in_days", ServerField::UptimeDays),
        ("hz", ServerField::Hz),
        ("configured_hz", ServerField::Hz),
        ("clients_hz", ServerField::Hz),
        ("lru_clock", ServerField::LruClock),
        ("executable", ServerField::Executable),
        ("config_file", ServerField::Fixed("")),
        ("io_threads_active", ServerField::Fixed("0")),
        ("availability_zone", ServerField::AvailabilityZone),
        ("listener0", ServerField::Listener),
    ],
    lua_api_names: &["server", "redis"],
    redaction: Redaction {
        acl_user_names: true,
        sensitive_params: &["tls-key-file-pass", "tls-client-key-file-pass"],
    },
    help: include_str!("redis_table/valkey-8.1/help.txt"),
    help_footer: "    Print this help.",
    // Valkey's `getAclErrorMessage`: the user named, the key or channel not (but in DRYRUN).
    acl_texts: AclTexts {
        command: "User {user} has no permissions to run the '{command}' command",
        key: "No permissions to access a key",
        channel: "No permissions to access a channel",
        script_command: "ACL failure in script: User {user} has no permissions to run the \
                         '{command}' command",
        script_key: "ACL failure in script: No permissions to access a key",
        script_channel: "ACL failure in script: No permissions to access a channel",
        dryrun_command: "User {user} has no permissions to run the '{command}' command",
        dryrun_key: "User {user} has no permissions to access the '{object}' key",
        dryrun_channel: "User {user} has no permissions to access the '{object}' channel",
    },
    script_texts: ScriptTexts {
        command: "command",
        call_without_arguments: "Please specify at least one argument for this call",
        call_bad_argument: "Command arguments must be strings or integers",
        acl_check_unknown_command: "Invalid command passed to server.acl_check_cmd()",
        log_arity: "server.log() requires two arguments or more.",
        log_level: "Invalid log level.",
        setresp_arity: "server.setresp() requires one argument.",
        set_repl_arity: "server.set_repl() requires one argument.",
        script_killed: "ERR Script killed by user with SCRIPT KILL.",
        function_killed: "ERR Script killed by user with FUNCTION KILL.",
        os_clock: true,
    },
    lua_versions: &[
        ("REDIS_VERSION", LuaConst::Text("7.2.4")),
        ("REDIS_VERSION_NUM", LuaConst::Number(0x07_02_04)),
        ("VALKEY_VERSION", LuaConst::Text("8.1.8")),
        ("VALKEY_VERSION_NUM", LuaConst::Number(0x08_01_08)),
        ("SERVER_NAME", LuaConst::Text("valkey")),
    ],
    // valkey-server 8.1.8's `CONFIG GET *` against redis-server 7.0.15's.
    config: ConfigChanges {
        renamed: &[
            ("aof-rewrite-cpulist", "aof_rewrite_cpulist"),
            ("bgsave-cpulist", "bgsave_cpulist"),
            ("bio-cpulist", "bio_cpulist"),
            (
                "commandlog-execution-slower-than",
                "slowlog-log-slower-than",
            ),
            ("commandlog-slow-execution-max-len", "slowlog-max-len"),
            ("primaryauth", "masterauth"),
            ("primaryuser", "masteruser"),
            ("server-cpulist", "server_cpulist"),
        ],
        defaults: &[
            ("lazyfree-lazy-eviction", "yes"),
            ("lazyfree-lazy-expire", "yes"),
            ("lazyfree-lazy-server-del", "yes"),
            ("lazyfree-lazy-user-del", "yes"),
            ("lazyfree-lazy-user-flush", "yes"),
            ("replica-lazy-flush", "yes"),
            ("repl-backlog-size", "10485760"),
            ("syslog-ident", "valkey"),
        ],
        hidden: &["aof-disable-auto-gc"],
        removed: &["dynamic-hz", "io-threads-do-reads"],
    },
    commands: &crate::redis_table::VALKEY_8_1,
    checks: HandlerChecks {
        bit_args_first: true,
        scan_rejects_unknown_type: true,
        timeout_rounds_up: true,
        lpos_rank_refuses_min: true,
        xread_unbalanced: "Unbalanced '{command}' list of streams: for each stream key an ID or \
                           '{id}' must be specified.",
    },
    semantics: VALKEY_8_1_SEMANTICS,
    // Redis 7.2's additions (pub/sub, WATCH and blocking key counts) and Valkey 8.0's pause.
    info_clients: &[
        "connected_clients",
        "cluster_connections",
        "maxclients",
        "client_recent_max_input_buffer",
        "client_recent_max_output_buffer",
        "blocked_clients",
        "tracking_clients",
        "pubsub_clients",
        "watching_clients",
        "clients_in_timeout_table",
        "total_watched_keys",
        "total_blocking_keys",
        "total_blocking_keys_on_nokey",
        "paused_reason",
        "paused_actions",
        "paused_timeout_milliseconds",
    ],
    // Redis 7.4's evicted scripts, Valkey's I/O threads' counters (none here), the clients
    // closed for their buffer limits and Redis 7.2's ACL refusals. Left out: Redis 7.2's
    // event-loop counters (`eventloop_*`; the server has no single event loop to measure).
    info_stats: &[
        "total_connections_received",
        "total_commands_processed",
        "instantaneous_ops_per_sec",
        "total_net_input_bytes",
        "total_net_output_bytes",
        "total_net_repl_input_bytes",
        "total_net_repl_output_bytes",
        "instantaneous_input_kbps",
        "instantaneous_output_kbps",
        "rejected_connections",
        "sync_full",
        "sync_partial_ok",
        "sync_partial_err",
        "expired_keys",
        "expired_stale_perc",
        "expired_time_cap_reached_count",
        "expire_cycle_cpu_milliseconds",
        "evicted_keys",
        "evicted_scripts",
        "keyspace_hits",
        "keyspace_misses",
        "pubsub_channels",
        "pubsub_patterns",
        "pubsubshard_channels",
        "latest_fork_usec",
        "total_forks",
        "migrate_cached_sockets",
        "tracking_total_keys",
        "tracking_total_items",
        "tracking_total_prefixes",
        "total_error_replies",
        "total_reads_processed",
        "total_writes_processed",
        "io_threaded_reads_processed",
        "io_threaded_writes_processed",
        "io_threaded_freed_objects",
        "io_threaded_accept_processed",
        "io_threaded_poll_processed",
        "io_threaded_total_prefetch_batches",
        "io_threaded_total_prefetch_entries",
        "client_query_buffer_limit_disconnections",
        "client_output_buffer_limit_disconnections",
        "acl_access_denied_auth",
        "acl_access_denied_cmd",
        "acl_access_denied_key",
        "acl_access_denied_channel",
    ],
    info_extras: InfoExtras {
        hashtable_rehashing: true,
        replicas_waiting_psync: true,
    },
    client_list_totals: true,
    encodings: VALKEY_8_1_ENCODINGS,
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_parse_by_name_and_bad_names_say_what_is_accepted() {
        for c in Compat::ALL {
            assert_eq!(c.name().parse::<Compat>(), Ok(c));
            assert_eq!(c.name().to_uppercase().parse::<Compat>(), Ok(c));
        }
        assert_eq!(Compat::default(), Compat::Redis70);
        assert_eq!(
            "valkey-9".parse::<Compat>(),
            Err(
                "unknown compatibility target 'valkey-9' (expected redis-7.0 or valkey-8.1)"
                    .to_string()
            )
        );
    }

    #[test]
    fn info_server_prints_each_profiles_versions() {
        let facts = ServerFacts {
            cluster: false,
            os: "Linux".into(),
            run_id: "0".repeat(40),
            bind: std::net::IpAddr::from([127, 0, 0, 1]),
            port: 6379,
            now_us: 0,
            uptime_s: 0,
            hz: 10,
            now_ms: 0,
            availability_zone: String::new(),
            extended_redis: false,
        };
        let text = |c: Compat| {
            let mut out = String::new();
            c.profile()
                .info_server(&facts, &mut |k, v| out.push_str(&format!("{k}:{v}\n")));
            out
        };
        let redis = text(Compat::Redis70);
        assert!(
            redis.starts_with("redis_version:7.0.15\nredis_git_sha1:"),
            "{redis}"
        );
        assert!(redis.contains("\nredis_mode:standalone\n"), "{redis}");
        let valkey = text(Compat::Valkey81);
        assert!(
            valkey.starts_with(
                "redis_version:7.2.4\nserver_name:valkey\nvalkey_version:8.1.8\n\
                 valkey_release_stage:ga\n"
            ),
            "{valkey}"
        );
        assert!(
            valkey.ends_with("availability_zone:\nlistener0:name=tcp,bind=127.0.0.1,port=6379\n"),
            "{valkey}"
        );
    }
}
