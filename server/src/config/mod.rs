//! Server settings: the start-up [`Config`] a user builds, the table of every parameter Redis
//! knows ([`table`]), and the one run-time configuration a node reads and `CONFIG SET`
//! changes ([`runtime::RuntimeConfig`]).

pub(crate) mod runtime;
pub(crate) mod table;

use std::net::IpAddr;
use std::time::Duration;

use crate::compat::Compat;

/// Start-up settings of one server node. Defaults are Redis's where Redis has one, except the
/// port: an embedded server listens on port 0 (a free port) unless told otherwise; the binary
/// defaults to 6379.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Config {
    /// Address to listen on (`--bind`, default 127.0.0.1).
    pub bind: IpAddr,
    /// Port to listen on (0 = pick a free one).
    pub port: u16,
    /// `requirepass`: clients must `AUTH` first when set.
    pub requirepass: Option<String>,
    /// Number of databases (`databases`, default 16).
    pub databases: usize,
    /// `busy-reply-threshold` (alias `lua-time-limit`): a script running longer makes other
    /// clients get `BUSY` (default 5000 ms).
    pub busy_reply_threshold: Duration,
    /// `maxclients` (default 10000).
    pub maxclients: usize,
    /// `notify-keyspace-events` at start (flag letters as Redis takes them, e.g. `KEA`;
    /// default empty: no keyspace notifications).
    pub notify_keyspace_events: String,
    /// Seed for every random choice the node makes (RANDOMKEY, SPOP, run id…).
    pub seed: Option<u64>,
    /// `cluster-enabled`: the node runs in cluster mode. Alone it is a one-node cluster
    /// serving all 16384 slots (a harness topology gives it its share instead).
    pub cluster_enabled: bool,
    /// `tcp-backlog`: the listen backlog (default 511, as Redis; capped by the kernel's
    /// `net.core.somaxconn`).
    pub tcp_backlog: u32,
    /// `enable-debug-command`: who may run `DEBUG` (default: nobody, as in Redis 7; `DEBUG
    /// SLEEP` freezes every client of the node).
    pub enable_debug_command: EnableCommand,
    /// The most memory, in bytes, the Lua interpreter may hold while a script runs (0: no
    /// bound). A script that allocates past it is stopped with an error and the memory is
    /// given back; the server keeps serving. Redis has no such bound; the default, 1 GiB, is
    /// far above what scripts use with normal data sizes.
    pub lua_memory_limit: u64,
    /// The server the node reproduces (`--compat`; default [`Compat::Redis70`], or the target
    /// the `LOCKSMITH_COMPAT` environment variable names, see [`compat_from_env`]): its
    /// versions, `INFO` fields, parameters and the behaviour that changed after Redis 7.0.
    pub compat: Compat,
    /// Any other `CONFIG SET` parameter at start, as redis-server takes `--name value` (e.g.
    /// `maxmemory`, `maxmemory-policy`, `timeout`), applied in order before the first client
    /// connects. An unknown name or an invalid value fails the start.
    pub settings: Vec<(String, String)>,
}

/// Who may run a protected command (`DEBUG`), as Redis 7's `enable-debug-command` says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EnableCommand {
    /// Nobody (`no`, the default).
    #[default]
    No,
    /// Every client (`yes`).
    Yes,
    /// Clients connected over loopback (`local`).
    Local,
}

impl EnableCommand {
    /// The value as Redis writes it (`no`, `yes`, `local`).
    pub fn as_str(self) -> &'static str {
        match self {
            EnableCommand::No => "no",
            EnableCommand::Yes => "yes",
            EnableCommand::Local => "local",
        }
    }

    /// Whether a client connected from `peer` may run the command.
    pub(crate) fn allows(self, peer: std::net::SocketAddr) -> bool {
        match self {
            EnableCommand::No => false,
            EnableCommand::Yes => true,
            EnableCommand::Local => peer.ip().is_loopback(),
        }
    }
}

impl std::str::FromStr for EnableCommand {
    type Err = String;

    /// Parses `no`, `yes` or `local` (any case).
    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "no" => Ok(EnableCommand::No),
            "yes" => Ok(EnableCommand::Yes),
            "local" => Ok(EnableCommand::Local),
            _ => Err(format!("expected no, yes or local, got {s:?}")),
        }
    }
}

/// The environment variable that names the compatibility target a node starts with when none
/// is given (`redis-7.0` or `valkey-8.1`): what [`Config::default`] and the binary's
/// `--compat` default to, so a whole test run (the lock library's, the harness's) can run
/// against another target unchanged.
pub const COMPAT_ENV: &str = "LOCKSMITH_COMPAT";

/// The target [`COMPAT_ENV`] names: [`Compat::Redis70`] when it is unset or empty, an error
/// naming the accepted targets when it names none.
pub fn compat_from_env() -> Result<Compat, String> {
    match std::env::var(COMPAT_ENV) {
        Ok(name) if !name.is_empty() => name.parse().map_err(|e| format!("{COMPAT_ENV}: {e}")),
        Ok(_) | Err(std::env::VarError::NotPresent) => Ok(Compat::Redis70),
        Err(std::env::VarError::NotUnicode(_)) => {
            Err(format!("{COMPAT_ENV}: not a compatibility target's name"))
        }
    }
}

impl Config {
    /// The same configuration with the compatibility target `compat`.
    pub fn with_compat(mut self, compat: Compat) -> Self {
        self.compat = compat;
        self
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            bind: IpAddr::from([127, 0, 0, 1]),
            port: 0,
            requirepass: None,
            databases: 16,
            busy_reply_threshold: Duration::from_millis(5000),
            maxclients: 10_000,
            seed: None,
            notify_keyspace_events: String::new(),
            cluster_enabled: false,
            enable_debug_command: EnableCommand::No,
            tcp_backlog: 511,
            lua_memory_limit: 1 << 30,
            // A bad name in the environment is reported and the default kept: a default
            // configuration cannot fail (the binary refuses to start instead).
            compat: compat_from_env().unwrap_or_else(|e| {
                tracing::warn!("{e}; using {}", Compat::Redis70);
                Compat::Redis70
            }),
            settings: Vec::new(),
        }
    }
}
