//! Server commands: INFO, DBSIZE, FLUSHDB, FLUSHALL, TIME, LASTSAVE, DEBUG, SHUTDOWN, and the
//! family's table, which also lists CONFIG (`cmd/config.rs`) and COMMAND (`cmd/command.rs`).

use super::{bulk_str, flags::*, Args, CmdResult, Command, CommandError, Ctx};
use crate::node::lockfree::PauseMode;
use crate::node::Node;
use crate::process_cpu::{cpu_seconds, CpuOf};
use bytes::Bytes;
use locksmith_resp::Frame;
use std::fmt::Write as _;
use std::sync::atomic::Ordering;

/// The server family's table.
pub(crate) static COMMANDS: &[Command] = &[
    Command::new("config", super::config::config_help).subs(super::config::CONFIG_SUBCOMMANDS),
    Command::new("info", info),
    Command::new("dbsize", dbsize),
    Command::new("flushdb", flushdb),
    Command::new("flushall", flushall),
    Command::new("time", time),
    // Runs on the blocking pool (RUNS_SCRIPT) so DEBUG SLEEP can hold the state lock, as
    // Redis blocks, without stalling the reactor.
    Command::new("debug", super::debug::debug).extra_flags(PROTECTED | RUNS_SCRIPT),
    Command::new("command", super::command::command).subs(super::command::COMMAND_SUBCOMMANDS),
    Command::new("shutdown", shutdown).busy(shutdown_busy),
];

// ---------------------------------------------------------------------------------------
// Keyspace-wide commands

/// ```text
/// DBSIZE
/// ```
fn dbsize(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    Ok(Frame::Integer(ctx.db().len() as i64))
}

/// `ASYNC` or `SYNC`: whether the keys are freed off the command path (without a mode, as
/// `lazyfree-lazy-user-flush` says).
fn flush_mode(ctx: &Ctx<'_>, args: &mut Args<'_>) -> Result<bool, CommandError> {
    match args.rest() {
        [] => Ok(ctx.state.config.lazyfree_lazy_user_flush()),
        [mode] if mode.eq_ignore_ascii_case(b"async") => Ok(true),
        [mode] if mode.eq_ignore_ascii_case(b"sync") => Ok(false),
        _ => Err(CommandError::Syntax),
    }
}

/// Empties database `db`, recording every key as modified while a client WATCHes keys or is
/// blocked (otherwise nothing reads them: a copy of a million keys for nothing); its keys
/// are dropped on the lazy free thread if `lazily`.
fn flush_db(ctx: &mut Ctx<'_>, db: usize, lazily: bool) {
    let state = &mut *ctx.state;
    let watched = !state.watches.is_empty() || !state.blocked.is_empty();
    let Some(d) = state.dbs.get_mut(db) else {
        return;
    };
    state.dirty += d.len() as u64;
    if watched {
        let keys: Vec<Bytes> = d.keys().map(crate::db::Key::to_bytes).collect();
        ctx.effects
            .modified
            .extend(keys.into_iter().map(|k| (db, k)));
    }
    match d.len() {
        0 => {}
        keys if lazily => ctx.node.live.lazyfree.free(d.take_all(), keys as u64),
        _ => d.clear(),
    }
    // Client tracking hears of a flush as one null invalidation (`flush_tracking`).
    crate::tracking::skip_modified(ctx.effects);
}

/// Redis's `trackingInvalidateKeysOnFlush` for a flush command.
fn flush_tracking(ctx: &mut Ctx<'_>) {
    let handle = ctx.client.handle.clone();
    crate::tracking::flushed(ctx.state, ctx.node, &handle, ctx.effects);
}

/// ```text
/// FLUSHDB [ASYNC | SYNC]
/// ```
fn flushdb(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let lazily = flush_mode(ctx, args)?;
    let db = ctx.client.db;
    flush_tracking(ctx);
    flush_db(ctx, db, lazily);
    if !lazily {
        crate::db::release::release();
    }
    // Redis always propagates a flush, even of an empty database.
    ctx.state.dirty += 1;
    Ok(Frame::ok())
}

/// ```text
/// FLUSHALL [ASYNC | SYNC]
/// ```
fn flushall(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let lazily = flush_mode(ctx, args)?;
    flush_all(ctx, lazily);
    ctx.state.dirty += 1;
    Ok(Frame::ok())
}

/// Empties every database as `FLUSHALL` does (WATCH, client tracking, memory given back: at
/// once, or by the periodic task once the lazy free thread freed the keys if `lazily`).
pub(super) fn flush_all(ctx: &mut Ctx<'_>, lazily: bool) {
    flush_tracking(ctx);
    for db in 0..ctx.state.dbs.len() {
        flush_db(ctx, db, lazily);
    }
    if !lazily {
        crate::db::release::release();
    }
}

/// ```text
/// TIME
/// ```
fn time(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    let us = if ctx.client.origin.in_script
        && ctx.node.config.profile().semantics.script_time_is_cached
    {
        ctx.node.script.started_us.load(Ordering::Acquire)
    } else {
        ctx.node.clock.now_us()
    };
    Ok(Frame::Array(vec![
        bulk_str(&(us / 1_000_000).to_string()),
        bulk_str(&(us % 1_000_000).to_string()),
    ]))
}

/// The options of `SHUTDOWN [NOSAVE | SAVE] [NOW] [FORCE] [ABORT]`: `Ok(nosave)`, or the
/// error for a bad combination or `ABORT` (we never delay a shutdown, so none is in progress).
fn shutdown_options(argv: &[Bytes]) -> Result<bool, CommandError> {
    let mut abort = false;
    let mut nosave = false;
    let mut save = false;
    for arg in argv.get(1..).unwrap_or_default() {
        match arg.to_ascii_lowercase().as_slice() {
            b"nosave" => nosave = true,
            b"save" => save = true,
            b"now" | b"force" => {}
            b"abort" => abort = true,
            _ => return Err(CommandError::Syntax),
        }
    }
    if (nosave && save) || (abort && argv.len() > 2) {
        return Err(CommandError::Syntax);
    }
    if abort {
        return Err(CommandError::err("No shutdown in progress."));
    }
    Ok(nosave)
}

/// ```text
/// SHUTDOWN [NOSAVE | SAVE] [NOW] [FORCE] [ABORT]
/// ```
fn shutdown(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    shutdown_options(args.argv())?;
    // No persistence: SAVE and NOSAVE both just stop. Redis sends no reply on success.
    tracing::info!("User requested shutdown...");
    ctx.node.live.request_stop();
    ctx.client.reply.skip = true;
    ctx.client.close_after_reply = true;
    Ok(Frame::ok())
}

/// `SHUTDOWN` while a script is busy (served without the state lock): `NOSAVE` stops the node
/// whatever the script did (the connection then closes without a reply, as Redis exits);
/// without it, Redis's `BUSY` error.
fn shutdown_busy(node: &Node, argv: &[Bytes]) -> Frame {
    match shutdown_options(argv) {
        Ok(true) => {
            tracing::warn!("User requested shutdown NOSAVE during a busy script...");
            node.live.request_stop();
            // Stop the script too (an embedded node outlives its listener).
            node.script.kill.store(true, Ordering::Release);
            Frame::ok()
        }
        Ok(false) => Frame::error(node.busy_error()),
        Err(e) => e.into(),
    }
}

// ---------------------------------------------------------------------------------------
// INFO

/// Sections in Redis's order, and whether `INFO` without arguments (`default`) shows them.
const SECTIONS: &[(&str, bool)] = &[
    ("server", true),
    ("clients", true),
    ("memory", true),
    ("persistence", true),
    ("stats", true),
    ("replication", true),
    ("cpu", true),
    ("modules", true),
    ("commandstats", false),
    ("errorstats", true),
    ("latencystats", false),
    ("cluster", true),
    ("keyspace", true),
];

/// ```text
/// INFO [section [section ...]]
/// ```
fn info(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let mut wanted: Vec<&str> = Vec::new();
    let requested = args.rest();
    if requested.is_empty() {
        wanted.extend(SECTIONS.iter().filter(|(_, d)| *d).map(|(n, _)| *n));
    }
    for arg in requested {
        let lower = arg.to_ascii_lowercase();
        match lower.as_slice() {
            b"default" => wanted.extend(SECTIONS.iter().filter(|(_, d)| *d).map(|(n, _)| *n)),
            b"all" | b"everything" => wanted.extend(SECTIONS.iter().map(|(n, _)| *n)),
            other => {
                if let Some((name, _)) = SECTIONS.iter().find(|(n, _)| n.as_bytes() == other) {
                    wanted.push(name);
                }
            }
        }
    }
    let mut out = String::with_capacity(4096);
    for (name, _) in SECTIONS {
        if !wanted.contains(name) {
            continue;
        }
        if !out.is_empty() {
            out.push_str("\r\n");
        }
        info_section(ctx, name, &mut out);
    }
    Ok(Frame::Verbatim {
        format: *b"txt",
        text: Bytes::from(out),
    })
}

/// Redis's `bytesToHuman`.
fn human_bytes(n: u64) -> String {
    let n_f = n as f64;
    match n {
        0..=1023 => format!("{n}B"),
        1024..=1_048_575 => format!("{:.2}K", n_f / 1024.0),
        1_048_576..=1_073_741_823 => format!("{:.2}M", n_f / 1_048_576.0),
        1_073_741_824..=1_099_511_627_775 => format!("{:.2}G", n_f / 1_073_741_824.0),
        _ => format!("{:.2}T", n_f / 1_099_511_627_776.0),
    }
}

fn os_name() -> String {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_default();
    let os = match std::env::consts::OS {
        "linux" => "Linux",
        "macos" => "Darwin",
        other => other,
    };
    format!("{os} {release} {}", std::env::consts::ARCH)
}

fn info_section(ctx: &Ctx<'_>, name: &str, out: &mut String) {
    let node = ctx.node;
    let state = &*ctx.state;
    let now = ctx.now;
    let title = {
        let mut t = name.to_string();
        if let Some(first) = t.get_mut(0..1) {
            first.make_ascii_uppercase();
        }
        match name {
            "cpu" => "CPU".to_string(),
            "errorstats" => "Errorstats".to_string(),
            _ => t,
        }
    };
    let _ = write!(out, "# {title}\r\n");
    let mut line = |k: &str, v: &dyn std::fmt::Display| {
        let _ = write!(out, "{k}:{v}\r\n");
    };
    match name {
        "server" => {
            let config = &state.config;
            let facts = crate::compat::ServerFacts {
                cluster: node.cluster.get().is_some(),
                os: os_name(),
                run_id: node.run_id.to_string(),
                bind: node.addr.ip(),
                port: node.addr.port(),
                now_us: node.clock.now_us(),
                uptime_s: now.saturating_sub(node.started_ms) / 1000,
                hz: config.hz(),
                now_ms: now,
                availability_zone: config.availability_zone(),
                extended_redis: config.extended_redis().is_some(),
            };
            config.profile().info_server(&facts, &mut line);
        }
        "clients" => {
            let clients = node.clients.all();
            let blocked = state.blocked_clients() + node.live.pause.waiting.load(Ordering::Relaxed);
            let now = node.clock.now_ms();
            let (pause, pause_end) = node.live.pause.current(now);
            for &name in node.config.profile().info_clients {
                match name {
                    "connected_clients" => line(name, &clients.len()),
                    "maxclients" => line(name, &node.config.maxclients()),
                    "blocked_clients" => line(name, &blocked),
                    "tracking_clients" => line(name, &state.tracking.clients()),
                    "pubsub_clients" => line(name, &state.pubsub.clients()),
                    "watching_clients" => line(name, &state.watches.clients()),
                    "total_watched_keys" => line(name, &state.watches.keys()),
                    "total_blocking_keys" => line(name, &state.blocked.keys()),
                    "total_blocking_keys_on_nokey" => line(name, &state.blocked.keys_on_nokey()),
                    "paused_reason" => line(
                        name,
                        &if pause == PauseMode::Off {
                            "none"
                        } else {
                            "client_pause"
                        },
                    ),
                    "paused_actions" => line(
                        name,
                        &match pause {
                            PauseMode::Off => "none",
                            PauseMode::Write => "write",
                            PauseMode::All => "all",
                        },
                    ),
                    "paused_timeout_milliseconds" => line(
                        name,
                        &if pause == PauseMode::Off {
                            0
                        } else {
                            pause_end.saturating_sub(now)
                        },
                    ),
                    // Connections of a cluster bus, buffer peaks, the timeout table: none here.
                    _ => line(name, &0),
                }
            }
        }
        "memory" => {
            let o = super::memory::Overhead::of(ctx);
            let used = o.total;
            let maxmemory = state.config.maxmemory();
            line("used_memory", &used);
            line("used_memory_human", &human_bytes(used));
            line("used_memory_rss", &o.rss);
            line("used_memory_rss_human", &human_bytes(o.rss));
            line("used_memory_peak", &o.peak);
            line("used_memory_peak_human", &human_bytes(o.peak));
            line(
                "used_memory_peak_perc",
                &format!("{:.2}%", o.peak_percent()),
            );
            line("used_memory_overhead", &o.overhead_total);
            line("used_memory_startup", &o.startup);
            line("used_memory_dataset", &o.dataset());
            line(
                "used_memory_dataset_perc",
                &format!("{:.2}%", o.dataset_percent()),
            );
            if let Some(total) = crate::process_memory::total_system_memory() {
                line("total_system_memory", &total);
                line("total_system_memory_human", &human_bytes(total));
            }
            // Before the first script there is no interpreter; Redis's empty one holds 31 KB.
            let lua = state
                .scripting
                .as_ref()
                .map_or(31_744, |engine| engine.memory_used() as u64);
            line("used_memory_lua", &lua);
            line("used_memory_vm_eval", &lua);
            line("used_memory_lua_human", &human_bytes(lua));
            line("used_memory_scripts_eval", &o.lua_caches);
            let cached_scripts = state.scripting.as_ref().map_or(0, |engine| engine.len());
            line("number_of_cached_scripts", &cached_scripts);
            let (libraries, functions) = state.functions.counts();
            line("number_of_functions", &functions);
            line("number_of_libraries", &libraries);
            let vm_functions = match state.functions.memory_used() {
                0 => 32_768,
                used => used as u64,
            };
            line("used_memory_vm_functions", &vm_functions);
            line("used_memory_vm_total", &(lua + vm_functions));
            line(
                "used_memory_vm_total_human",
                &human_bytes(lua + vm_functions),
            );
            line("used_memory_functions", &o.functions_caches);
            let scripts = o.lua_caches + o.functions_caches;
            line("used_memory_scripts", &scripts);
            line("used_memory_scripts_human", &human_bytes(scripts));
            line("maxmemory", &maxmemory);
            line("maxmemory_human", &human_bytes(maxmemory));
            line("maxmemory_policy", &state.config.maxmemory_policy());
            line(
                "mem_fragmentation_ratio",
                &format!("{:.2}", o.fragmentation()),
            );
            line("mem_fragmentation_bytes", &o.fragmentation_bytes());
            // Redis leaves replica and AOF buffers out of `maxmemory`; nothing is left out here.
            line("mem_not_counted_for_evict", &0);
            line("mem_allocator", &crate::process_memory::allocator_name());
            if node.config.profile().info_extras.hashtable_rehashing {
                // Valkey's tables of keys being rehashed: ours grow at once.
                line("mem_overhead_db_hashtable_rehashing", &0);
            }
            let lazyfree = &node.live.lazyfree;
            line("lazyfree_pending_objects", &lazyfree.pending());
            line("lazyfreed_objects", &lazyfree.freed());
        }
        "persistence" => {
            line("loading", &0);
            line("async_loading", &0);
            let saves = &node.live.saves;
            let changes = state
                .dirty
                .saturating_sub(saves.dirty_at_save.load(Ordering::Relaxed));
            line("rdb_changes_since_last_save", &changes);
            line(
                "rdb_bgsave_in_progress",
                &u8::from(saves.in_progress.load(Ordering::Relaxed)),
            );
            line(
                "rdb_last_save_time",
                &saves.last_save_unix.load(Ordering::Relaxed),
            );
            let failed = saves.last_bgsave_failed.load(Ordering::Relaxed);
            line("rdb_last_bgsave_status", &if failed { "err" } else { "ok" });
            line("rdb_saves", &saves.saves.load(Ordering::Relaxed));
            line("aof_enabled", &0);
            line("aof_rewrite_in_progress", &0);
            line("aof_rewrite_scheduled", &0);
            line("aof_last_bgrewrite_status", &"ok");
            line("aof_last_write_status", &"ok");
        }
        "stats" => {
            let live = &node.live;
            let relaxed = |n: &std::sync::atomic::AtomicU64| n.load(Ordering::Relaxed);
            let (input_kbps, output_kbps) = live.net_kbps();
            let denied = |reason| node.acl.log.lock().map_or(0, |log| log.denied(reason));
            for &name in node.config.profile().info_stats {
                match name {
                    "total_connections_received" => {
                        line(name, &relaxed(&node.connections_received))
                    }
                    "total_commands_processed" => line(name, &state.stats.commands),
                    "instantaneous_ops_per_sec" => line(name, &live.ops_per_sec()),
                    "total_net_input_bytes" => line(name, &relaxed(&live.net_input)),
                    "total_net_output_bytes" => line(name, &relaxed(&live.net_output)),
                    "total_net_repl_input_bytes" => line(name, &relaxed(&live.net_repl_input)),
                    "total_net_repl_output_bytes" => line(name, &relaxed(&live.net_repl_output)),
                    "instantaneous_input_kbps" => line(name, &format!("{input_kbps:.2}")),
                    "instantaneous_output_kbps" => line(name, &format!("{output_kbps:.2}")),
                    "rejected_connections" => line(name, &relaxed(&live.rejected)),
                    "sync_full" => line(name, &state.stats.sync_full),
                    "sync_partial_ok" => line(name, &state.stats.sync_partial_ok),
                    "sync_partial_err" => line(name, &state.stats.sync_partial_err),
                    "expired_keys" => line(name, &state.stats.expired_keys),
                    // The deadline index finds due keys without sampling: none found is ever
                    // stale.
                    "expired_stale_perc" => line(name, &"0.00"),
                    "expired_time_cap_reached_count" => {
                        line(name, &state.stats.expired_time_cap_reached_count)
                    }
                    "expire_cycle_cpu_milliseconds" => {
                        line(name, &(state.stats.expire_cycle_us / 1000))
                    }
                    "evicted_keys" => line(name, &state.stats.evicted_keys),
                    "evicted_scripts" => line(name, &state.stats.evicted_scripts),
                    "keyspace_hits" => line(name, &state.stats.keyspace_hits),
                    "keyspace_misses" => line(name, &state.stats.keyspace_misses),
                    "pubsub_channels" => line(
                        name,
                        &state.pubsub.num_channels(crate::pubsub::Kind::Channel),
                    ),
                    "pubsub_patterns" => line(
                        name,
                        &state.pubsub.num_channels(crate::pubsub::Kind::Pattern),
                    ),
                    "pubsubshard_channels" => {
                        line(name, &state.pubsub.num_channels(crate::pubsub::Kind::Shard))
                    }
                    // The server never forks (a save is written by a thread of its own).
                    "latest_fork_usec" | "total_forks" => line(name, &0),
                    "migrate_cached_sockets" => line(name, &state.migrate.len()),
                    "tracking_total_keys" => line(name, &state.tracking.total_keys()),
                    "tracking_total_items" => line(name, &state.tracking.total_items()),
                    "tracking_total_prefixes" => line(name, &state.tracking.total_prefixes()),
                    "total_error_replies" => line(name, &relaxed(&live.total_errors)),
                    "total_reads_processed" => line(name, &relaxed(&live.reads)),
                    "total_writes_processed" => line(name, &relaxed(&live.writes)),
                    // Connections are served without I/O threads.
                    "io_threaded_reads_processed"
                    | "io_threaded_writes_processed"
                    | "io_threaded_freed_objects"
                    | "io_threaded_accept_processed"
                    | "io_threaded_poll_processed"
                    | "io_threaded_total_prefetch_batches"
                    | "io_threaded_total_prefetch_entries" => line(name, &0),
                    "client_query_buffer_limit_disconnections" => {
                        line(name, &relaxed(&live.query_buffer_limit_disconnections))
                    }
                    "client_output_buffer_limit_disconnections" => line(
                        name,
                        &(relaxed(&live.output_buffer_limit_disconnections)
                            + state.pubsub.output_limit_disconnections
                            + state.repl.output_limit_disconnections),
                    ),
                    "acl_access_denied_auth" => line(name, &denied(crate::acl::Reason::Auth)),
                    "acl_access_denied_cmd" => line(name, &denied(crate::acl::Reason::Command)),
                    "acl_access_denied_key" => line(name, &denied(crate::acl::Reason::Key)),
                    "acl_access_denied_channel" => line(name, &denied(crate::acl::Reason::Channel)),
                    // A name the profile lists that is not computed here is a bug caught by
                    // the INFO tests; it prints nothing.
                    _ => {}
                }
            }
        }
        "replication" => out.push_str(&crate::replication::replication_info(
            &state.repl,
            node.clock.now_ms(),
            state.config.repl_backlog_size(),
            node.config.profile(),
        )),
        "cpu" => {
            let (user, sys) = cpu_seconds(CpuOf::Process).unwrap_or_default();
            line("used_cpu_sys", &format!("{sys:.6}"));
            line("used_cpu_user", &format!("{user:.6}"));
            // The server never forks: no child ever used CPU.
            line("used_cpu_sys_children", &"0.000000");
            line("used_cpu_user_children", &"0.000000");
            if let Some((user, sys)) = cpu_seconds(CpuOf::Thread) {
                line("used_cpu_sys_main_thread", &format!("{sys:.6}"));
                line("used_cpu_user_main_thread", &format!("{user:.6}"));
            }
        }
        "commandstats" | "latencystats" => {
            let merged = match node.live.rejected_calls.lock() {
                Ok(rejected) => state.cmdstats.merged(&rejected),
                Err(_) => state.cmdstats.merged(&Default::default()),
            };
            if name == "commandstats" {
                merged.commandstats(out);
            } else {
                merged.latencystats(out);
            }
        }
        "errorstats" => {
            for (code, count) in node.live.error_counts() {
                line(&format!("errorstat_{code}"), &format!("count={count}"));
            }
        }
        "cluster" => line("cluster_enabled", &u8::from(node.cluster.get().is_some())),
        "keyspace" => {
            for (i, db) in state.dbs.iter().enumerate() {
                if db.len() == 0 {
                    continue;
                }
                let (expires, avg_ttl) = volatile_stats(db, now);
                line(
                    &format!("db{i}"),
                    &format!("keys={},expires={expires},avg_ttl={avg_ttl}", db.len()),
                );
            }
        }
        _ => {}
    }
}

/// Keys with a TTL and their average remaining TTL in ms (exact for small databases; Redis
/// itself only estimates it).
fn volatile_stats(db: &crate::db::Db, now: u64) -> (usize, u64) {
    let expires = db.volatile_len();
    if expires == 0 || db.len() > 100_000 {
        return (expires, 0);
    }
    let ttls: Vec<u64> = db
        .keys()
        .filter_map(|k| db.get(k, now).and_then(|e| e.expire_at()))
        .map(|at| at.saturating_sub(now))
        .collect();
    let avg = if ttls.is_empty() {
        0
    } else {
        ttls.iter().sum::<u64>() / ttls.len() as u64
    };
    (expires, avg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_bytes_matches_redis() {
        assert_eq!(human_bytes(0), "0B");
        assert_eq!(human_bytes(1_137_592), "1.08M");
        assert_eq!(human_bytes(83_968), "82.00K");
    }
}
