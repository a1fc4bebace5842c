//! DEBUG: the subcommands Redis's own test suite and client libraries' tests use, each doing
//! what Redis's does (Redis 7.0's `debug.c`). Allowed by `enable-debug-command`, as in Redis.

use super::{atoi, lossy, Args, CmdResult, CommandError, Ctx};
use crate::db::{memory, Access, Value};
use bytes::Bytes;
use locksmith_resp::{Frame, Version};
use std::sync::atomic::Ordering;
use std::time::Duration;

/// ```text
/// DEBUG SLEEP seconds
/// DEBUG SET-ACTIVE-EXPIRE <0 | 1>
/// DEBUG PAUSE-CRON <0 | 1>
/// DEBUG SET-DISABLE-DENY-SCRIPTS <0 | 1>
/// DEBUG PROTOCOL type
/// DEBUG OBJECT key
/// DEBUG POPULATE count [prefix] [size]
/// DEBUG RELOAD [MERGE] [NOFLUSH] [NOSAVE]
/// DEBUG QUICKLIST-PACKED-THRESHOLD size
/// DEBUG HELP
/// ```
pub(super) fn debug(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let sub = args.bytes()?;
    let lower = sub.to_ascii_lowercase();
    match (lower.as_slice(), args.remaining()) {
        (b"sleep", 1) => {
            // Redis parses with atof: garbage is 0.
            let secs = args
                .next()
                .and_then(|a| super::parse_f64(a))
                .filter(|s| s.is_finite() && *s > 0.0)
                .unwrap_or(0.0);
            sleep(ctx, secs);
            Ok(Frame::ok())
        }
        (b"set-active-expire", 1) => {
            let on = atoi(args.bytes()?) != 0;
            ctx.node.live.active_expire.store(on, Ordering::Relaxed);
            Ok(Frame::ok())
        }
        (b"set-disable-deny-scripts", 1) => {
            let on = atoi(args.bytes()?) != 0;
            ctx.node
                .live
                .scripts_call_anything
                .store(on, Ordering::Relaxed);
            Ok(Frame::ok())
        }
        (b"pause-cron", 1) => {
            let paused = atoi(args.bytes()?) != 0;
            ctx.node.live.cron_paused.store(paused, Ordering::Relaxed);
            Ok(Frame::ok())
        }
        (b"protocol", 1) => protocol(ctx, args.bytes()?),
        (b"object", 1) => object(ctx, args.bytes()?),
        (b"populate", 1..=3) => populate(ctx, args),
        (b"reload", _) => {
            let (mut merge, mut flush, mut save) = (false, true, true);
            for option in args.rest() {
                match option.to_ascii_lowercase().as_slice() {
                    b"merge" => merge = true,
                    b"noflush" => flush = false,
                    b"nosave" => save = false,
                    _ => {
                        return Err(CommandError::err(
                            "DEBUG RELOAD only supports the MERGE, NOFLUSH and NOSAVE options.",
                        ))
                    }
                }
            }
            super::persistence::reload(ctx, merge, flush, save)
        }
        (b"quicklist-packed-threshold", 1) => {
            let size = crate::config::table::parse_memory(args.bytes()?)
                .filter(|&size| size <= (1 << 32) - (1 << 20))
                .ok_or_else(|| {
                    CommandError::err(
                        "argument must be a memory value bigger than 1 and smaller than 4gb",
                    )
                })?;
            let size = if size == 0 {
                crate::node::lockfree::QUICKLIST_PACKED_THRESHOLD
            } else {
                size
            };
            ctx.node
                .live
                .quicklist_packed_threshold
                .store(size, Ordering::Relaxed);
            Ok(Frame::ok())
        }
        (b"help", 0) => Ok(super::client::help_lines(ctx, "DEBUG", HELP)),
        _ => Err(CommandError::err(format!(
            "unknown subcommand or wrong number of arguments for '{}'. Try DEBUG HELP.",
            lossy(sub, 128)
        ))),
    }
}

/// `DEBUG HELP`'s lines for the subcommands served, in Redis's words.
const HELP: &[&str] = &[
    "OBJECT <key>",
    "    Show low level info about `key` and associated value.",
    "POPULATE <count> [<prefix>] [<size>]",
    "    Create <count> string keys named key:<num>. If <prefix> is specified then",
    "    it is used instead of the 'key' prefix. These are not propagated to",
    "    replicas. Cluster slots are not respected so keys not belonging to the",
    "    current node can be created in cluster mode.",
    "PROTOCOL <type>",
    "    Reply with a test value of the specified type. <type> can be: string,",
    "    integer, double, bignum, null, array, set, map, attrib, push, verbatim,",
    "    true, false.",
    "RELOAD [option ...]",
    "    Save the RDB on disk and reload it back to memory. Valid <option> values:",
    "    * MERGE: conflicting keys will be loaded from RDB.",
    "    * NOFLUSH: the existing database will not be removed before load, but",
    "      conflicting keys will generate an exception and kill the server.",
    "    * NOSAVE: the database will be loaded from an existing RDB file.",
    "    Examples:",
    "    * DEBUG RELOAD: verify that the server is able to persist, flush and reload",
    "      the database.",
    "    * DEBUG RELOAD NOSAVE: replace the current database with the contents of an",
    "      existing RDB file.",
    "    * DEBUG RELOAD NOSAVE NOFLUSH MERGE: add the contents of an existing RDB",
    "      file to the database.",
    "SET-ACTIVE-EXPIRE <0|1>",
    "    Setting it to 0 disables expiring keys in background when they are not",
    "    accessed (otherwise the Redis behavior). Setting it to 1 reenables back the",
    "    default.",
    "QUICKLIST-PACKED-THRESHOLD <size>",
    "    Sets the threshold for elements to be inserted as plain vs packed nodes",
    "    Default value is 1GB, allows values up to 4GB. Setting to 0 restores to default.",
    "SLEEP <seconds>",
    "    Stop the server for <seconds>. Decimals allowed.",
    "PAUSE-CRON <0|1>",
    "    Stop periodic cron job processing.",
];

/// `DEBUG SLEEP`: the state lock stays held, so every other client waits, as when Redis
/// sleeps; a shutdown ends the sleep early.
fn sleep(ctx: &Ctx<'_>, secs: f64) {
    let deadline = std::time::Instant::now() + Duration::from_secs_f64(secs.min(3600.0));
    let live = &ctx.node.live;
    let sleep = || {
        while !live.stop_requested() {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                break;
            }
            std::thread::sleep(left.min(Duration::from_millis(10)));
        }
    };
    crate::outbound::run_blocking(sleep);
}

/// `DEBUG PROTOCOL type`: a test value of each RESP3 type, as Redis sends it (RESP2 clients
/// get the RESP2 forms; `attrib`'s attribute is left out for them, `push` refused).
fn protocol(ctx: &mut Ctx<'_>, name: &[u8]) -> CmdResult {
    let count = || (0..3).map(Frame::Integer).collect::<Vec<_>>();
    Ok(match name.to_ascii_lowercase().as_slice() {
        b"string" => Frame::bulk("Hello World"),
        b"integer" => Frame::Integer(12345),
        // Redis's test value, not pi.
        #[allow(clippy::approx_constant)]
        b"double" => Frame::Double(3.141),
        b"bignum" => Frame::BigNumber(Bytes::from_static(b"1234567999999999999999999999999999999")),
        b"null" => Frame::Null,
        b"array" => Frame::Array(count()),
        b"set" => Frame::Set(count()),
        b"map" => Frame::Map(
            (0..3)
                .map(|j| (Frame::Integer(j), Frame::Boolean(j == 1)))
                .collect(),
        ),
        b"attrib" => Frame::Attribute {
            attrs: vec![(
                Frame::bulk("key-popularity"),
                Frame::Array(vec![Frame::bulk("key:123"), Frame::Integer(90)]),
            )],
            frame: Box::new(Frame::bulk("Some real reply following the attribute")),
        },
        b"push" => {
            if ctx.client.resp == Version::Resp2 {
                return Err(CommandError::err("RESP2 is not supported by this command"));
            }
            // Ahead of the reply, as a push is not a reply: a client that skips pushes still
            // reads one.
            let push = Frame::Push(vec![Frame::bulk("server-cpu-usage"), Frame::Integer(42)]);
            let size = crate::pubsub::frame_size(&push);
            ctx.client.handle.outbox.send(push, size);
            Frame::bulk("Some real reply following the push reply")
        }
        b"true" => Frame::Boolean(true),
        b"false" => Frame::Boolean(false),
        b"verbatim" => Frame::Verbatim {
            format: *b"txt",
            text: Bytes::from_static(b"This is a verbatim\nstring"),
        },
        _ => {
            return Err(CommandError::err(
                "Wrong protocol type name. Please use one of the following: \
                 string|integer|double|bignum|null|array|set|map|attrib|push|verbatim|true|false",
            ))
        }
    })
}

/// `DEBUG OBJECT key`: the key's value as Redis describes its object: where it is, its
/// reference count, encoding, serialized length (of this server's RDB serialization), the
/// access field of its header and the idle time Redis reads from it; for a list, the
/// quicklist Redis would hold it in. Like Redis, a key whose TTL ran out but is still stored
/// is shown.
fn object(ctx: &mut Ctx<'_>, key: &Bytes) -> CmdResult {
    let now = ctx.now;
    let encoding = super::persistence::rdb_encoding(ctx);
    let threshold = encoding.packed_threshold;
    let config = &ctx.state.config;
    let (fill, compress) = (
        config.list_max_listpack_size(),
        config.list_compress_depth(),
    );
    let db = ctx.db();
    let access = db.access();
    let entry = db.raw(key).ok_or(CommandError::NoSuchKey)?;
    let value = &entry.value;
    let lru = access.redis_field(entry.accessed, now);
    let mut text = format!(
        "Value at:{:p} refcount:{} encoding:{} serializedlength:{} lru:{lru} \
         lru_seconds_idle:{}",
        std::ptr::from_ref(value),
        value.refcount(),
        value.encoding(),
        crate::rdb::serialized_len(value, encoding),
        Access::redis_idle_secs(lru, now),
    );
    if let Value::List(list, crate::db::ListEncoding::Quicklist) = value {
        let shape = memory::quicklist_shape(list.iter().map(|e| &e[..]), fill, threshold);
        let average = shape.nodes.max(1);
        text.push_str(&format!(
            " ql_nodes:{} ql_avg_node:{:.2} ql_listpack_max:{} ql_compressed:{} \
             ql_uncompressed_size:{}",
            shape.nodes,
            list.len() as f64 / average as f64,
            fill.clamp(-5, (1 << 15) - 1),
            u8::from(compress != 0),
            shape.bytes,
        ));
    }
    Ok(Frame::Simple(Bytes::from(text)))
}

/// Bytes a populated key takes beyond its name and value, for the check that a `DEBUG
/// POPULATE` fits in the machine (a node, its bucket, an allocator's rounding).
const POPULATE_KEY_OVERHEAD: u64 = 128;

/// `DEBUG POPULATE count [prefix] [size]`: creates the string keys `prefix:0` ..
/// `prefix:count-1` (`key:` without a prefix; a name is cut at 127 bytes, as Redis's buffer
/// cuts it) that do not exist yet, each holding `value:<n>`, or with a `size` that text cut
/// or padded with zero bytes to `size` bytes. Each new key raises the `new` event and
/// touches WATCHes; nothing is propagated and the dirty count stays (not a write). A count
/// whose keys could not fit in the machine's memory is refused, as Redis refuses one its
/// table cannot be sized for, instead of running out of memory halfway.
fn populate(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let count = positive(args.bytes()?)?;
    let prefix = args.next().cloned();
    let size = match args.next() {
        Some(size) => positive(size)?,
        None => 0,
    };
    let prefix_len = prefix.as_ref().map_or(3, |p| p.len()).min(127);
    let per_key = POPULATE_KEY_OVERHEAD + prefix_len as u64 + size.max(16);
    let memory = crate::process_memory::total_system_memory().unwrap_or(u64::MAX);
    if count.saturating_mul(per_key) > memory {
        return Err(CommandError::err("OOM in dictTryExpand"));
    }
    let prefix = prefix.as_deref().unwrap_or(b"key");
    let db = ctx.client.db;
    let mut name = Vec::with_capacity(128);
    for n in 0..count {
        name.clear();
        name.extend_from_slice(prefix);
        name.extend_from_slice(format!(":{n}").as_bytes());
        name.truncate(127);
        let key = Bytes::copy_from_slice(&name);
        let make = || {
            let text = format!("value:{n}");
            let value = match usize::try_from(size) {
                Ok(0) | Err(_) => Bytes::from(text),
                Ok(size) => {
                    let mut bytes = text.into_bytes();
                    bytes.resize(size, 0);
                    Bytes::from(bytes)
                }
            };
            Value::String(value.into())
        };
        let (_, existed) = ctx.find_or_insert(&key, make);
        if !existed && ctx.state.hears_modified_keys() {
            ctx.effects.modified_measured(db, key);
        }
    }
    Ok(Frame::ok())
}

/// A count Redis reads with `getPositiveLongFromObjectOrReply`, whose one error also answers
/// what is not a number.
fn positive(arg: &[u8]) -> Result<u64, CommandError> {
    locksmith_resp::parse_integer(arg)
        .and_then(|n| u64::try_from(n).ok())
        .ok_or_else(|| CommandError::err("value is out of range, must be positive"))
}
