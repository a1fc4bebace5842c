//! `MEMORY USAGE|STATS|DOCTOR|MALLOC-STATS|PURGE|HELP`, from the memory estimate of
//! [`crate::db::memory`] (Redis's layout, not the allocator's real numbers: there is no
//! allocator to ask, so the allocator's ratios are 1; the peak is the highest estimate seen
//! and the fragmentation is the process's resident size over the estimate).

use super::client::help_reply;
use super::{bulk_str, Args, CmdResult, Command, CommandError, Ctx};
use crate::db::memory;
use bytes::Bytes;
use locksmith_resp::Frame;

/// `MEMORY` and its subcommands.
pub(crate) static COMMANDS: &[Command] =
    &[Command::new("memory", memory_container).subs(MEMORY_SUBCOMMANDS)];

/// In Redis's `COMMAND INFO` order.
static MEMORY_SUBCOMMANDS: &[Command] = &[
    Command::new("help", memory_help),
    Command::new("usage", memory_usage),
    Command::new("malloc-stats", memory_malloc_stats),
    Command::new("doctor", memory_doctor),
    Command::new("purge", memory_purge),
    Command::new("stats", memory_stats),
];

/// `MEMORY USAGE`'s default `SAMPLES` (Redis's `OBJ_COMPUTE_SIZE_DEF_SAMPLES`).
const DEFAULT_SAMPLES: usize = 5;

/// `MEMORY` alone (the arity check answers first; kept for the table).
fn memory_container(_ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    Err(CommandError::WrongArity("memory".into()))
}

/// An integer reply of a count of bytes or keys.
fn integer(n: u64) -> Frame {
    Frame::Integer(i64::try_from(n).unwrap_or(i64::MAX))
}

/// ```text
/// MEMORY USAGE key [SAMPLES count]
/// ```
///
/// The key's estimated bytes ([`memory::usage`]), aggregates sampled on `count` elements (5;
/// 0: all); null if there is no such key. Like Redis, it reads the key as stored, without
/// expiring it or touching its access time.
fn memory_usage(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.bytes()?;
    let mut samples = DEFAULT_SAMPLES;
    let options = args.rest();
    let mut j = 0;
    // Bounded: each pass consumes two arguments or fails.
    while let Some(option) = options.get(j) {
        match options.get(j + 1) {
            Some(count) if option.eq_ignore_ascii_case(b"samples") => {
                let n = super::parse_i64(count)?;
                if n < 0 {
                    return Err(CommandError::Syntax);
                }
                samples = usize::try_from(n).unwrap_or(usize::MAX);
                j += 2;
            }
            _ => return Err(CommandError::Syntax),
        }
    }
    let cluster = ctx.node.config.cluster_enabled();
    let doubles = ctx.node.config.profile().encodings.doubles;
    let db = ctx.client.db;
    let usage = ctx
        .state
        .dbs
        .get(db)
        .and_then(|d| d.raw(key))
        .map(|entry| memory::usage(key, &entry.value, samples, cluster, doubles));
    Ok(usage.map_or(Frame::Null, |bytes| integer(bytes as u64)))
}

/// What `MEMORY STATS` and `MEMORY DOCTOR` report (Redis's `redisMemOverhead`), from the
/// estimate.
pub(super) struct Overhead {
    /// `used_memory`.
    pub(super) total: u64,
    /// `used_memory_startup`.
    pub(super) startup: u64,
    backlog: u64,
    /// The script cache (`used_memory_scripts_eval`).
    pub(super) lua_caches: u64,
    /// The function libraries' overhead (`used_memory_functions`).
    pub(super) functions_caches: u64,
    /// Per database with keys: (index, main dict, expires dict, slot-to-keys links).
    dbs: Vec<(usize, u64, u64, u64)>,
    keys: u64,
    /// `used_memory_overhead`.
    pub(super) overhead_total: u64,
    /// `used_memory_peak`: the highest `total` seen, this one included.
    pub(super) peak: u64,
    /// `used_memory_rss`: the process's resident size (the estimate where the OS does not
    /// tell).
    pub(super) rss: u64,
}

impl Overhead {
    /// The node's figures now.
    pub(super) fn of(ctx: &Ctx<'_>) -> Overhead {
        let state = &*ctx.state;
        let total = state.used_memory();
        let startup = crate::evict::BASELINE_MEMORY;
        // The backlog's buffer holds what was written since it exists, up to its 1 MB.
        let backlog = if state.repl.has_backlog() {
            state.repl.offset().min(1 << 20)
        } else {
            0
        };
        let lua_caches = state
            .scripting
            .as_ref()
            .map_or(0, |engine| engine.cache_memory() as u64);
        let functions_caches = functions_overhead(state);
        let cluster = ctx.node.config.cluster_enabled();
        let mut dbs = Vec::new();
        let mut keys = 0;
        for (index, db) in state.dbs.iter().enumerate() {
            let (n, expires) = (db.len() as u64, db.volatile_len() as u64);
            if n == 0 {
                continue;
            }
            keys += n;
            // dictEntry (24) and the object header (16) per key, 8 bytes per bucket.
            let main = n * (24 + 16) + 8 * buckets(n);
            let expires = expires * 24 + 8 * buckets(expires);
            let slots = if cluster { n * 16 } else { 0 };
            dbs.push((index, main, expires, slots));
        }
        let overhead_total = startup
            + backlog
            + lua_caches
            + functions_caches
            + dbs.iter().map(|(_, m, e, s)| m + e + s).sum::<u64>();
        Overhead {
            total,
            startup,
            backlog,
            lua_caches,
            functions_caches,
            dbs,
            keys,
            overhead_total,
            peak: ctx.node.live.note_memory(total),
            rss: crate::process_memory::rss().unwrap_or(total),
        }
    }

    /// `used_memory_dataset`: what is not overhead.
    pub(super) fn dataset(&self) -> u64 {
        self.total.saturating_sub(self.overhead_total)
    }

    /// `used_memory_dataset_perc`: the dataset's share of what was added since start-up.
    pub(super) fn dataset_percent(&self) -> f64 {
        percent(self.dataset(), self.total.saturating_sub(self.startup))
    }

    /// `used_memory_peak_perc`.
    pub(super) fn peak_percent(&self) -> f64 {
        percent(self.total, self.peak)
    }

    /// `mem_fragmentation_ratio`: the resident size over the memory in use.
    pub(super) fn fragmentation(&self) -> f64 {
        f64::from(self.rss as f32 / self.total.max(1) as f32)
    }

    /// `mem_fragmentation_bytes`.
    pub(super) fn fragmentation_bytes(&self) -> i64 {
        self.rss as i64 - self.total as i64
    }
}

/// The buckets of a dict of `n` entries (none while empty).
fn buckets(n: u64) -> u64 {
    if n == 0 {
        0
    } else {
        n.next_power_of_two().max(4)
    }
}

/// Redis's `functionsMemoryOverhead`: 200 bytes for the empty registry (the engine's entry
/// and the library context) and, per function, its dict entry and about its name and
/// description kept twice.
fn functions_overhead(state: &crate::node::State) -> u64 {
    let per_function: u64 = state
        .functions
        .libraries()
        .flat_map(|lib| lib.functions.iter())
        .map(|f| 24 + 2 * memory::sds(f.name.len()) as u64 + 64)
        .sum();
    200 + per_function
}

/// `part` in percent of `whole`, in single precision as Redis computes it.
fn percent(part: u64, whole: u64) -> f64 {
    f64::from(part as f32 * 100.0 / whole.max(1) as f32)
}

/// ```text
/// MEMORY STATS
/// ```
///
/// Redis's fields in its order; figures from the estimate (`total.allocated` is `INFO`'s
/// `used_memory`, `peak.allocated` its highest), the allocator's ratios 1 and their byte
/// differences 0, the fragmentation the resident size over the estimate.
fn memory_stats(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    let o = Overhead::of(ctx);
    let field = |name: &str, value: Frame| (bulk_str(name), value);
    let mut out = vec![
        field("peak.allocated", integer(o.peak)),
        field("total.allocated", integer(o.total)),
        field("startup.allocated", integer(o.startup)),
        field("replication.backlog", integer(o.backlog)),
        field("clients.slaves", integer(0)),
        field("clients.normal", integer(0)),
        field("cluster.links", integer(0)),
        field("aof.buffer", integer(0)),
        field("lua.caches", integer(o.lua_caches)),
        field("functions.caches", integer(o.functions_caches)),
    ];
    for &(index, main, expires, slots) in &o.dbs {
        out.push(field(
            &format!("db.{index}"),
            Frame::Map(vec![
                field("overhead.hashtable.main", integer(main)),
                field("overhead.hashtable.expires", integer(expires)),
                field("overhead.hashtable.slot-to-keys", integer(slots)),
            ]),
        ));
    }
    let net = o.total.saturating_sub(o.startup).max(1);
    out.extend([
        field("overhead.total", integer(o.overhead_total)),
        field("keys.count", integer(o.keys)),
        field(
            "keys.bytes-per-key",
            integer(net.checked_div(o.keys).unwrap_or(0)),
        ),
        field("dataset.bytes", integer(o.dataset())),
        field("dataset.percentage", Frame::Double(o.dataset_percent())),
        field("peak.percentage", Frame::Double(o.peak_percent())),
        field("allocator.allocated", integer(o.total)),
        field("allocator.active", integer(o.total)),
        field("allocator.resident", integer(o.total)),
        field("allocator-fragmentation.ratio", Frame::Double(1.0)),
        field("allocator-fragmentation.bytes", integer(0)),
        field("allocator-rss.ratio", Frame::Double(1.0)),
        field("allocator-rss.bytes", integer(0)),
        field("rss-overhead.ratio", Frame::Double(1.0)),
        field("rss-overhead.bytes", integer(0)),
        field("fragmentation", Frame::Double(o.fragmentation())),
        field(
            "fragmentation.bytes",
            Frame::Integer(o.fragmentation_bytes()),
        ),
    ]);
    Ok(Frame::Map(out))
}

/// Redis's `getMemoryDoctorReport`, in part: beyond an almost empty instance only a large
/// script cache is reported. Its peak and fragmentation advice is not given (the resident
/// size of this process also holds what an embedding program allocates), nor client-buffer
/// advice (no client buffer is counted).
fn memory_doctor(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    let o = Overhead::of(ctx);
    let scripts = ctx.state.scripting.as_ref().map_or(0, |e| e.len());
    let text = if o.total < 5 * 1024 * 1024 {
        "Hi Sam, this instance is empty or is using very little memory, my issues detector can't be used in these conditions. Please, leave for your mission on Earth and fill it with some data. The new Sam and I will be back to our programming as soon as I finished rebooting.\n"
    } else if scripts > 1000 {
        "Sam, I detected a few issues in this Redis instance memory implants:\n\n * Many scripts: There seem to be many cached scripts in this instance (more than 1000). This may be because scripts are generated and `EVAL`ed, instead of being parameterized (with KEYS and ARGV), `SCRIPT LOAD`ed and `EVALSHA`ed. Unless `SCRIPT FLUSH` is called periodically, the scripts' caches may end up consuming most of your memory.\n\nI'm here to keep you safe, Sam. I want to help you.\n"
    } else {
        "Hi Sam, I can't find any memory issue in your instance. I can only account for what occurs on this base.\n"
    };
    Ok(Frame::Verbatim {
        format: *b"txt",
        text: Bytes::from_static(text.as_bytes()),
    })
}

/// ```text
/// MEMORY MALLOC-STATS
/// ```
///
/// Redis's answer when it was not built with jemalloc.
fn memory_malloc_stats(_ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    Ok(bulk_str("Stats not supported for the current allocator"))
}

/// ```text
/// MEMORY PURGE
/// ```
///
/// Returns the allocator's free memory to the operating system (Redis asks jemalloc to purge).
fn memory_purge(_ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    crate::db::release::release();
    Ok(Frame::ok())
}

/// ```text
/// MEMORY HELP
/// ```
fn memory_help(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    Ok(help_reply(ctx, "MEMORY"))
}
