//! What ACLs need to know about each Redis 7.0 command, a leaf: the 21 ACL categories and
//! which commands are in each, and the key specifications whose flags say whether a key is
//! read or written (`%R~`/`%W~` patterns). The table holds, for every command and subcommand
//! of Redis 7.0.15 (by its full name, `config|get`), what real Redis reports in `COMMAND
//! INFO`; [`acl_keys`] finds a command line's keys with their flags as Redis's
//! `getKeysFromCommandWithSpecs` does, with the same fallbacks for the few commands whose
//! specifications are incomplete or whose flags vary (`SORT`, `MIGRATE`, `SET`, `BITFIELD`).

use bytes::Bytes;

/// The categories in Redis's order (`ACL CAT`, `COMMAND INFO`); bit `i` of a mask is
/// `CATEGORIES[i]`.
pub(crate) const CATEGORIES: [&str; 21] = [
    "keyspace",
    "read",
    "write",
    "set",
    "sortedset",
    "list",
    "hash",
    "string",
    "bitmap",
    "hyperloglog",
    "geo",
    "stream",
    "pubsub",
    "admin",
    "fast",
    "slow",
    "blocking",
    "dangerous",
    "connection",
    "transaction",
    "scripting",
];

/// Key specification flags (`COMMAND INFO` names them `RO`, `RW`, `OW`, `RM`, `access`,
/// `update`, `insert`, `delete`, `not_key`, `incomplete`, `variable_flags`).
pub(crate) mod key {
    /// Read-only.
    pub(crate) const RO: u16 = 1;
    /// Read-write.
    pub(crate) const RW: u16 = 1 << 1;
    /// Overwrite.
    pub(crate) const OW: u16 = 1 << 2;
    // Bit 3 is `RM` (remove), which ACLs do not read.
    /// The value is read (an ACL read).
    pub(crate) const ACCESS: u16 = 1 << 4;
    /// The value is updated (an ACL write).
    pub(crate) const UPDATE: u16 = 1 << 5;
    /// A value is added (an ACL write).
    pub(crate) const INSERT: u16 = 1 << 6;
    /// A value is removed (an ACL write).
    pub(crate) const DELETE: u16 = 1 << 7;
    /// Not a key (a shard channel).
    pub(crate) const NOT_KEY: u16 = 1 << 8;
    /// The specification may miss keys.
    pub(crate) const INCOMPLETE: u16 = 1 << 9;
    /// The flags depend on the arguments.
    pub(crate) const VARIABLE_FLAGS: u16 = 1 << 10;

    /// Each flag with the name `COMMAND INFO` and `COMMAND GETKEYSANDFLAGS` give it, in
    /// Redis's order.
    pub(crate) const NAMES: [(u16, &str); 11] = [
        (RO, "RO"),
        (RW, "RW"),
        (OW, "OW"),
        (1 << 3, "RM"),
        (ACCESS, "access"),
        (UPDATE, "update"),
        (INSERT, "insert"),
        (DELETE, "delete"),
        (NOT_KEY, "not_key"),
        (INCOMPLETE, "incomplete"),
        (VARIABLE_FLAGS, "variable_flags"),
    ];
}

/// Where a key specification's search starts.
#[derive(Debug)]
pub(crate) enum B {
    /// At this argument.
    Index(i32),
    /// After this keyword, searched from this argument (negative: from the end, backwards).
    Keyword(&'static str, i32),
    /// A specification Redis leaves to the command's own key finder.
    Unknown,
}

/// How a key specification finds its keys from where the search began.
#[derive(Debug)]
pub(crate) enum F {
    /// (last key relative to the first, or negative from the end; step; limit).
    Range(i32, i32, i32),
    /// (where the key count is, relative; the first key after it; step).
    Keynum(i32, i32, i32),
    /// Left to the command's own key finder.
    Unknown,
}

/// One key specification: flags ([`key`]), begin search, find keys.
#[derive(Debug)]
pub(crate) struct S(pub(crate) u16, pub(crate) B, pub(crate) F);

/// Every Redis 7.0.15 command and subcommand by full name (sorted): its category mask and
/// its key specifications.
static TABLE: &[(&str, u32, &[S])] = &[
    ("acl", 32768, &[]),
    ("acl|cat", 32768, &[]),
    ("acl|deluser", 172032, &[]),
    ("acl|dryrun", 172032, &[]),
    ("acl|genpass", 32768, &[]),
    ("acl|getuser", 172032, &[]),
    ("acl|help", 32768, &[]),
    ("acl|list", 172032, &[]),
    ("acl|load", 172032, &[]),
    ("acl|log", 172032, &[]),
    ("acl|save", 172032, &[]),
    ("acl|setuser", 172032, &[]),
    ("acl|users", 172032, &[]),
    ("acl|whoami", 32768, &[]),
    ("append", 16516, &[S(66, B::Index(1), F::Range(0, 1, 0))]),
    ("asking", 278528, &[]),
    ("auth", 278528, &[]),
    ("bgrewriteaof", 172032, &[]),
    ("bgsave", 172032, &[]),
    ("bitcount", 33026, &[S(17, B::Index(1), F::Range(0, 1, 0))]),
    (
        "bitfield",
        33028,
        &[S(1074, B::Index(1), F::Range(0, 1, 0))],
    ),
    (
        "bitfield_ro",
        16642,
        &[S(17, B::Index(1), F::Range(0, 1, 0))],
    ),
    (
        "bitop",
        33028,
        &[
            S(36, B::Index(2), F::Range(0, 1, 0)),
            S(17, B::Index(3), F::Range(-1, 1, 0)),
        ],
    ),
    ("bitpos", 33026, &[S(17, B::Index(1), F::Range(0, 1, 0))]),
    (
        "blmove",
        98340,
        &[
            S(146, B::Index(1), F::Range(0, 1, 0)),
            S(66, B::Index(2), F::Range(0, 1, 0)),
        ],
    ),
    ("blmpop", 98340, &[S(146, B::Index(2), F::Keynum(0, 1, 1))]),
    ("blpop", 98340, &[S(146, B::Index(1), F::Range(-2, 1, 0))]),
    ("brpop", 98340, &[S(146, B::Index(1), F::Range(-2, 1, 0))]),
    (
        "brpoplpush",
        98340,
        &[
            S(146, B::Index(1), F::Range(0, 1, 0)),
            S(66, B::Index(2), F::Range(0, 1, 0)),
        ],
    ),
    ("bzmpop", 98324, &[S(146, B::Index(2), F::Keynum(0, 1, 1))]),
    (
        "bzpopmax",
        81940,
        &[S(146, B::Index(1), F::Range(-2, 1, 0))],
    ),
    (
        "bzpopmin",
        81940,
        &[S(146, B::Index(1), F::Range(-2, 1, 0))],
    ),
    ("client", 32768, &[]),
    ("client|caching", 294912, &[]),
    ("client|getname", 294912, &[]),
    ("client|getredir", 294912, &[]),
    ("client|help", 294912, &[]),
    ("client|id", 294912, &[]),
    ("client|info", 294912, &[]),
    ("client|kill", 434176, &[]),
    ("client|list", 434176, &[]),
    ("client|no-evict", 434176, &[]),
    ("client|pause", 434176, &[]),
    ("client|reply", 294912, &[]),
    ("client|setname", 294912, &[]),
    ("client|tracking", 294912, &[]),
    ("client|trackinginfo", 294912, &[]),
    ("client|unblock", 434176, &[]),
    ("client|unpause", 434176, &[]),
    ("cluster", 32768, &[]),
    ("cluster|addslots", 172032, &[]),
    ("cluster|addslotsrange", 172032, &[]),
    ("cluster|bumpepoch", 172032, &[]),
    ("cluster|count-failure-reports", 172032, &[]),
    ("cluster|countkeysinslot", 32768, &[]),
    ("cluster|delslots", 172032, &[]),
    ("cluster|delslotsrange", 172032, &[]),
    ("cluster|failover", 172032, &[]),
    ("cluster|flushslots", 172032, &[]),
    ("cluster|forget", 172032, &[]),
    ("cluster|getkeysinslot", 32768, &[]),
    ("cluster|help", 32768, &[]),
    ("cluster|info", 32768, &[]),
    ("cluster|keyslot", 32768, &[]),
    ("cluster|links", 32768, &[]),
    ("cluster|meet", 172032, &[]),
    ("cluster|myid", 32768, &[]),
    ("cluster|nodes", 32768, &[]),
    ("cluster|replicas", 172032, &[]),
    ("cluster|replicate", 172032, &[]),
    ("cluster|reset", 172032, &[]),
    ("cluster|saveconfig", 172032, &[]),
    ("cluster|set-config-epoch", 172032, &[]),
    ("cluster|setslot", 172032, &[]),
    ("cluster|shards", 32768, &[]),
    ("cluster|slaves", 172032, &[]),
    ("cluster|slots", 32768, &[]),
    ("command", 294912, &[]),
    ("command|count", 294912, &[]),
    ("command|docs", 294912, &[]),
    ("command|getkeys", 294912, &[]),
    ("command|getkeysandflags", 294912, &[]),
    ("command|help", 294912, &[]),
    ("command|info", 294912, &[]),
    ("command|list", 294912, &[]),
    ("config", 32768, &[]),
    ("config|get", 172032, &[]),
    ("config|help", 32768, &[]),
    ("config|resetstat", 172032, &[]),
    ("config|rewrite", 172032, &[]),
    ("config|set", 172032, &[]),
    (
        "copy",
        32773,
        &[
            S(17, B::Index(1), F::Range(0, 1, 0)),
            S(36, B::Index(2), F::Range(0, 1, 0)),
        ],
    ),
    ("dbsize", 16387, &[]),
    ("debug", 172032, &[]),
    ("decr", 16516, &[S(50, B::Index(1), F::Range(0, 1, 0))]),
    ("decrby", 16516, &[S(50, B::Index(1), F::Range(0, 1, 0))]),
    ("del", 32773, &[S(136, B::Index(1), F::Range(-1, 1, 0))]),
    ("discard", 540672, &[]),
    ("dump", 32771, &[S(17, B::Index(1), F::Range(0, 1, 0))]),
    ("echo", 278528, &[]),
    ("eval", 1081344, &[S(50, B::Index(2), F::Keynum(0, 1, 1))]),
    (
        "eval_ro",
        1081344,
        &[S(17, B::Index(2), F::Keynum(0, 1, 1))],
    ),
    (
        "evalsha",
        1081344,
        &[S(50, B::Index(2), F::Keynum(0, 1, 1))],
    ),
    (
        "evalsha_ro",
        1081344,
        &[S(17, B::Index(2), F::Keynum(0, 1, 1))],
    ),
    ("exec", 557056, &[]),
    ("exists", 16387, &[S(1, B::Index(1), F::Range(-1, 1, 0))]),
    ("expire", 16389, &[S(34, B::Index(1), F::Range(0, 1, 0))]),
    ("expireat", 16389, &[S(34, B::Index(1), F::Range(0, 1, 0))]),
    (
        "expiretime",
        16387,
        &[S(17, B::Index(1), F::Range(0, 1, 0))],
    ),
    ("failover", 172032, &[]),
    ("fcall", 1081344, &[S(50, B::Index(2), F::Keynum(0, 1, 1))]),
    (
        "fcall_ro",
        1081344,
        &[S(17, B::Index(2), F::Keynum(0, 1, 1))],
    ),
    ("flushall", 163845, &[]),
    ("flushdb", 163845, &[]),
    ("function", 32768, &[]),
    ("function|delete", 1081348, &[]),
    ("function|dump", 1081344, &[]),
    ("function|flush", 1081348, &[]),
    ("function|help", 1081344, &[]),
    ("function|kill", 1081344, &[]),
    ("function|list", 1081344, &[]),
    ("function|load", 1081348, &[]),
    ("function|restore", 1081348, &[]),
    ("function|stats", 1081344, &[]),
    ("geoadd", 33796, &[S(34, B::Index(1), F::Range(0, 1, 0))]),
    ("geodist", 33794, &[S(17, B::Index(1), F::Range(0, 1, 0))]),
    ("geohash", 33794, &[S(17, B::Index(1), F::Range(0, 1, 0))]),
    ("geopos", 33794, &[S(17, B::Index(1), F::Range(0, 1, 0))]),
    (
        "georadius",
        33796,
        &[
            S(17, B::Index(1), F::Range(0, 1, 0)),
            S(36, B::Keyword("STORE", 6), F::Range(0, 1, 0)),
            S(36, B::Keyword("STOREDIST", 6), F::Range(0, 1, 0)),
        ],
    ),
    (
        "georadius_ro",
        33794,
        &[S(17, B::Index(1), F::Range(0, 1, 0))],
    ),
    (
        "georadiusbymember",
        33796,
        &[
            S(17, B::Index(1), F::Range(0, 1, 0)),
            S(36, B::Keyword("STORE", 5), F::Range(0, 1, 0)),
            S(36, B::Keyword("STOREDIST", 5), F::Range(0, 1, 0)),
        ],
    ),
    (
        "georadiusbymember_ro",
        33794,
        &[S(17, B::Index(1), F::Range(0, 1, 0))],
    ),
    ("geosearch", 33794, &[S(17, B::Index(1), F::Range(0, 1, 0))]),
    (
        "geosearchstore",
        33796,
        &[
            S(36, B::Index(1), F::Range(0, 1, 0)),
            S(17, B::Index(2), F::Range(0, 1, 0)),
        ],
    ),
    ("get", 16514, &[S(17, B::Index(1), F::Range(0, 1, 0))]),
    ("getbit", 16642, &[S(17, B::Index(1), F::Range(0, 1, 0))]),
    ("getdel", 16516, &[S(146, B::Index(1), F::Range(0, 1, 0))]),
    ("getex", 16516, &[S(50, B::Index(1), F::Range(0, 1, 0))]),
    ("getrange", 32898, &[S(17, B::Index(1), F::Range(0, 1, 0))]),
    ("getset", 16516, &[S(50, B::Index(1), F::Range(0, 1, 0))]),
    ("hdel", 16452, &[S(130, B::Index(1), F::Range(0, 1, 0))]),
    ("hello", 278528, &[]),
    ("hexists", 16450, &[S(1, B::Index(1), F::Range(0, 1, 0))]),
    ("hget", 16450, &[S(17, B::Index(1), F::Range(0, 1, 0))]),
    ("hgetall", 32834, &[S(17, B::Index(1), F::Range(0, 1, 0))]),
    ("hincrby", 16452, &[S(50, B::Index(1), F::Range(0, 1, 0))]),
    (
        "hincrbyfloat",
        16452,
        &[S(50, B::Index(1), F::Range(0, 1, 0))],
    ),
    ("hkeys", 32834, &[S(17, B::Index(1), F::Range(0, 1, 0))]),
    ("hlen", 16450, &[S(1, B::Index(1), F::Range(0, 1, 0))]),
    ("hmget", 16450, &[S(17, B::Index(1), F::Range(0, 1, 0))]),
    ("hmset", 16452, &[S(34, B::Index(1), F::Range(0, 1, 0))]),
    (
        "hrandfield",
        32834,
        &[S(17, B::Index(1), F::Range(0, 1, 0))],
    ),
    ("hscan", 32834, &[S(17, B::Index(1), F::Range(0, 1, 0))]),
    ("hset", 16452, &[S(34, B::Index(1), F::Range(0, 1, 0))]),
    ("hsetnx", 16452, &[S(66, B::Index(1), F::Range(0, 1, 0))]),
    ("hstrlen", 16450, &[S(1, B::Index(1), F::Range(0, 1, 0))]),
    ("hvals", 32834, &[S(17, B::Index(1), F::Range(0, 1, 0))]),
    ("incr", 16516, &[S(50, B::Index(1), F::Range(0, 1, 0))]),
    ("incrby", 16516, &[S(50, B::Index(1), F::Range(0, 1, 0))]),
    (
        "incrbyfloat",
        16516,
        &[S(50, B::Index(1), F::Range(0, 1, 0))],
    ),
    ("info", 163840, &[]),
    ("keys", 163843, &[]),
    ("lastsave", 155648, &[]),
    ("latency", 32768, &[]),
    ("latency|doctor", 172032, &[]),
    ("latency|graph", 172032, &[]),
    ("latency|help", 32768, &[]),
    ("latency|histogram", 172032, &[]),
    ("latency|history", 172032, &[]),
    ("latency|latest", 172032, &[]),
    ("latency|reset", 172032, &[]),
    ("lcs", 32898, &[S(17, B::Index(1), F::Range(1, 1, 0))]),
    ("lindex", 32802, &[S(17, B::Index(1), F::Range(0, 1, 0))]),
    ("linsert", 32804, &[S(66, B::Index(1), F::Range(0, 1, 0))]),
    ("llen", 16418, &[S(1, B::Index(1), F::Range(0, 1, 0))]),
    (
        "lmove",
        32804,
        &[
            S(146, B::Index(1), F::Range(0, 1, 0)),
            S(66, B::Index(2), F::Range(0, 1, 0)),
        ],
    ),
    ("lmpop", 32804, &[S(146, B::Index(1), F::Keynum(0, 1, 1))]),
    ("lolwut", 16386, &[]),
    ("lpop", 16420, &[S(146, B::Index(1), F::Range(0, 1, 0))]),
    ("lpos", 32802, &[S(17, B::Index(1), F::Range(0, 1, 0))]),
    ("lpush", 16420, &[S(66, B::Index(1), F::Range(0, 1, 0))]),
    ("lpushx", 16420, &[S(66, B::Index(1), F::Range(0, 1, 0))]),
    ("lrange", 32802, &[S(17, B::Index(1), F::Range(0, 1, 0))]),
    ("lrem", 32804, &[S(130, B::Index(1), F::Range(0, 1, 0))]),
    ("lset", 32804, &[S(34, B::Index(1), F::Range(0, 1, 0))]),
    ("ltrim", 32804, &[S(130, B::Index(1), F::Range(0, 1, 0))]),
    ("memory", 32768, &[]),
    ("memory|doctor", 32768, &[]),
    ("memory|help", 32768, &[]),
    ("memory|malloc-stats", 32768, &[]),
    ("memory|purge", 32768, &[]),
    ("memory|stats", 32768, &[]),
    (
        "memory|usage",
        32770,
        &[S(1, B::Index(2), F::Range(0, 1, 0))],
    ),
    ("mget", 16514, &[S(17, B::Index(1), F::Range(-1, 1, 0))]),
    (
        "migrate",
        163845,
        &[
            S(146, B::Index(3), F::Range(0, 1, 0)),
            S(658, B::Keyword("KEYS", -2), F::Range(-1, 1, 0)),
        ],
    ),
    ("module", 32768, &[]),
    ("module|help", 32768, &[]),
    ("module|list", 172032, &[]),
    ("module|load", 172032, &[]),
    ("module|loadex", 172032, &[]),
    ("module|unload", 172032, &[]),
    ("monitor", 172032, &[]),
    ("move", 16389, &[S(50, B::Index(1), F::Range(0, 1, 0))]),
    ("mset", 32900, &[S(36, B::Index(1), F::Range(-1, 2, 0))]),
    ("msetnx", 32900, &[S(68, B::Index(1), F::Range(-1, 2, 0))]),
    ("multi", 540672, &[]),
    ("object", 32768, &[]),
    (
        "object|encoding",
        32771,
        &[S(1, B::Index(2), F::Range(0, 1, 0))],
    ),
    (
        "object|freq",
        32771,
        &[S(1, B::Index(2), F::Range(0, 1, 0))],
    ),
    ("object|help", 32769, &[]),
    (
        "object|idletime",
        32771,
        &[S(1, B::Index(2), F::Range(0, 1, 0))],
    ),
    (
        "object|refcount",
        32771,
        &[S(1, B::Index(2), F::Range(0, 1, 0))],
    ),
    ("persist", 16389, &[S(34, B::Index(1), F::Range(0, 1, 0))]),
    ("pexpire", 16389, &[S(34, B::Index(1), F::Range(0, 1, 0))]),
    ("pexpireat", 16389, &[S(34, B::Index(1), F::Range(0, 1, 0))]),
    (
        "pexpiretime",
        16387,
        &[S(17, B::Index(1), F::Range(0, 1, 0))],
    ),
    ("pfadd", 16900, &[S(66, B::Index(1), F::Range(0, 1, 0))]),
    ("pfcount", 33282, &[S(18, B::Index(1), F::Range(-1, 1, 0))]),
    ("pfdebug", 172548, &[S(18, B::Index(2), F::Range(0, 1, 0))]),
    (
        "pfmerge",
        33284,
        &[
            S(82, B::Index(1), F::Range(0, 1, 0)),
            S(17, B::Index(2), F::Range(-1, 1, 0)),
        ],
    ),
    ("pfselftest", 172544, &[]),
    ("ping", 278528, &[]),
    ("psetex", 32900, &[S(36, B::Index(1), F::Range(0, 1, 0))]),
    ("psubscribe", 36864, &[]),
    ("psync", 172032, &[]),
    ("pttl", 16387, &[S(17, B::Index(1), F::Range(0, 1, 0))]),
    ("publish", 20480, &[]),
    ("pubsub", 32768, &[]),
    ("pubsub|channels", 36864, &[]),
    ("pubsub|help", 32768, &[]),
    ("pubsub|numpat", 36864, &[]),
    ("pubsub|numsub", 36864, &[]),
    ("pubsub|shardchannels", 36864, &[]),
    ("pubsub|shardnumsub", 36864, &[]),
    ("punsubscribe", 36864, &[]),
    ("quit", 278528, &[]),
    ("randomkey", 32771, &[]),
    ("readonly", 278528, &[]),
    ("readwrite", 278528, &[]),
    (
        "rename",
        32773,
        &[
            S(146, B::Index(1), F::Range(0, 1, 0)),
            S(36, B::Index(2), F::Range(0, 1, 0)),
        ],
    ),
    (
        "renamenx",
        16389,
        &[
            S(146, B::Index(1), F::Range(0, 1, 0)),
            S(68, B::Index(2), F::Range(0, 1, 0)),
        ],
    ),
    ("replconf", 172032, &[]),
    ("replicaof", 172032, &[]),
    ("reset", 278528, &[]),
    ("restore", 163845, &[S(36, B::Index(1), F::Range(0, 1, 0))]),
    (
        "restore-asking",
        163845,
        &[S(36, B::Index(1), F::Range(0, 1, 0))],
    ),
    ("role", 155648, &[]),
    ("rpop", 16420, &[S(146, B::Index(1), F::Range(0, 1, 0))]),
    (
        "rpoplpush",
        32804,
        &[
            S(146, B::Index(1), F::Range(0, 1, 0)),
            S(66, B::Index(2), F::Range(0, 1, 0)),
        ],
    ),
    ("rpush", 16420, &[S(66, B::Index(1), F::Range(0, 1, 0))]),
    ("rpushx", 16420, &[S(66, B::Index(1), F::Range(0, 1, 0))]),
    ("sadd", 16396, &[S(66, B::Index(1), F::Range(0, 1, 0))]),
    ("save", 172032, &[]),
    ("scan", 32771, &[]),
    ("scard", 16394, &[S(1, B::Index(1), F::Range(0, 1, 0))]),
    ("script", 32768, &[]),
    ("script|debug", 1081344, &[]),
    ("script|exists", 1081344, &[]),
    ("script|flush", 1081344, &[]),
    ("script|help", 1081344, &[]),
    ("script|kill", 1081344, &[]),
    ("script|load", 1081344, &[]),
    ("sdiff", 32778, &[S(17, B::Index(1), F::Range(-1, 1, 0))]),
    (
        "sdiffstore",
        32780,
        &[
            S(36, B::Index(1), F::Range(0, 1, 0)),
            S(17, B::Index(2), F::Range(-1, 1, 0)),
        ],
    ),
    ("select", 278528, &[]),
    ("set", 32900, &[S(1074, B::Index(1), F::Range(0, 1, 0))]),
    ("setbit", 33028, &[S(50, B::Index(1), F::Range(0, 1, 0))]),
    ("setex", 32900, &[S(36, B::Index(1), F::Range(0, 1, 0))]),
    ("setnx", 16516, &[S(68, B::Index(1), F::Range(0, 1, 0))]),
    ("setrange", 32900, &[S(34, B::Index(1), F::Range(0, 1, 0))]),
    ("shutdown", 172032, &[]),
    ("sinter", 32778, &[S(17, B::Index(1), F::Range(-1, 1, 0))]),
    (
        "sintercard",
        32778,
        &[S(17, B::Index(1), F::Keynum(0, 1, 1))],
    ),
    (
        "sinterstore",
        32780,
        &[
            S(34, B::Index(1), F::Range(0, 1, 0)),
            S(17, B::Index(2), F::Range(-1, 1, 0)),
        ],
    ),
    ("sismember", 16394, &[S(1, B::Index(1), F::Range(0, 1, 0))]),
    ("slaveof", 172032, &[]),
    ("slowlog", 32768, &[]),
    ("slowlog|get", 172032, &[]),
    ("slowlog|help", 32768, &[]),
    ("slowlog|len", 172032, &[]),
    ("slowlog|reset", 172032, &[]),
    ("smembers", 32778, &[S(17, B::Index(1), F::Range(0, 1, 0))]),
    (
        "smismember",
        16394,
        &[S(17, B::Index(1), F::Range(0, 1, 0))],
    ),
    (
        "smove",
        16396,
        &[
            S(146, B::Index(1), F::Range(0, 1, 0)),
            S(66, B::Index(2), F::Range(0, 1, 0)),
        ],
    ),
    (
        "sort",
        163900,
        &[
            S(17, B::Index(1), F::Range(0, 1, 0)),
            S(17, B::Unknown, F::Unknown),
            S(36, B::Unknown, F::Unknown),
        ],
    ),
    (
        "sort_ro",
        163898,
        &[
            S(17, B::Index(1), F::Range(0, 1, 0)),
            S(17, B::Unknown, F::Unknown),
        ],
    ),
    ("spop", 16396, &[S(146, B::Index(1), F::Range(0, 1, 0))]),
    ("spublish", 20480, &[S(256, B::Index(1), F::Range(0, 1, 0))]),
    (
        "srandmember",
        32778,
        &[S(17, B::Index(1), F::Range(0, 1, 0))],
    ),
    ("srem", 16396, &[S(130, B::Index(1), F::Range(0, 1, 0))]),
    ("sscan", 32778, &[S(17, B::Index(1), F::Range(0, 1, 0))]),
    (
        "ssubscribe",
        36864,
        &[S(256, B::Index(1), F::Range(-1, 1, 0))],
    ),
    ("strlen", 16514, &[S(1, B::Index(1), F::Range(0, 1, 0))]),
    ("subscribe", 36864, &[]),
    ("substr", 32898, &[S(17, B::Index(1), F::Range(0, 1, 0))]),
    ("sunion", 32778, &[S(17, B::Index(1), F::Range(-1, 1, 0))]),
    (
        "sunionstore",
        32780,
        &[
            S(36, B::Index(1), F::Range(0, 1, 0)),
            S(17, B::Index(2), F::Range(-1, 1, 0)),
        ],
    ),
    (
        "sunsubscribe",
        36864,
        &[S(256, B::Index(1), F::Range(-1, 1, 0))],
    ),
    ("swapdb", 147461, &[]),
    ("sync", 172032, &[]),
    ("time", 16384, &[]),
    ("touch", 16387, &[S(1, B::Index(1), F::Range(-1, 1, 0))]),
    ("ttl", 16387, &[S(17, B::Index(1), F::Range(0, 1, 0))]),
    ("type", 16387, &[S(1, B::Index(1), F::Range(0, 1, 0))]),
    ("unlink", 16389, &[S(136, B::Index(1), F::Range(-1, 1, 0))]),
    ("unsubscribe", 36864, &[]),
    ("unwatch", 540672, &[]),
    ("wait", 294912, &[]),
    ("watch", 540672, &[S(1, B::Index(1), F::Range(-1, 1, 0))]),
    ("xack", 18436, &[S(34, B::Index(1), F::Range(0, 1, 0))]),
    ("xadd", 18436, &[S(34, B::Index(1), F::Range(0, 1, 0))]),
    (
        "xautoclaim",
        18436,
        &[S(130, B::Index(1), F::Range(0, 1, 0))],
    ),
    ("xclaim", 18436, &[S(34, B::Index(1), F::Range(0, 1, 0))]),
    ("xdel", 18436, &[S(130, B::Index(1), F::Range(0, 1, 0))]),
    ("xgroup", 32768, &[]),
    (
        "xgroup|create",
        34820,
        &[S(66, B::Index(2), F::Range(0, 1, 0))],
    ),
    (
        "xgroup|createconsumer",
        34820,
        &[S(66, B::Index(2), F::Range(0, 1, 0))],
    ),
    (
        "xgroup|delconsumer",
        34820,
        &[S(130, B::Index(2), F::Range(0, 1, 0))],
    ),
    (
        "xgroup|destroy",
        34820,
        &[S(130, B::Index(2), F::Range(0, 1, 0))],
    ),
    ("xgroup|help", 34816, &[]),
    (
        "xgroup|setid",
        34820,
        &[S(34, B::Index(2), F::Range(0, 1, 0))],
    ),
    ("xinfo", 32768, &[]),
    (
        "xinfo|consumers",
        34818,
        &[S(17, B::Index(2), F::Range(0, 1, 0))],
    ),
    (
        "xinfo|groups",
        34818,
        &[S(17, B::Index(2), F::Range(0, 1, 0))],
    ),
    ("xinfo|help", 34816, &[]),
    (
        "xinfo|stream",
        34818,
        &[S(17, B::Index(2), F::Range(0, 1, 0))],
    ),
    ("xlen", 18434, &[S(1, B::Index(1), F::Range(0, 1, 0))]),
    ("xpending", 34818, &[S(17, B::Index(1), F::Range(0, 1, 0))]),
    ("xrange", 34818, &[S(17, B::Index(1), F::Range(0, 1, 0))]),
    (
        "xread",
        100354,
        &[S(17, B::Keyword("STREAMS", 1), F::Range(-1, 1, 2))],
    ),
    (
        "xreadgroup",
        100356,
        &[S(17, B::Keyword("STREAMS", 4), F::Range(-1, 1, 2))],
    ),
    ("xrevrange", 34818, &[S(17, B::Index(1), F::Range(0, 1, 0))]),
    ("xsetid", 18436, &[S(34, B::Index(1), F::Range(0, 1, 0))]),
    ("xtrim", 34820, &[S(130, B::Index(1), F::Range(0, 1, 0))]),
    ("zadd", 16404, &[S(34, B::Index(1), F::Range(0, 1, 0))]),
    ("zcard", 16402, &[S(1, B::Index(1), F::Range(0, 1, 0))]),
    ("zcount", 16402, &[S(17, B::Index(1), F::Range(0, 1, 0))]),
    ("zdiff", 32786, &[S(17, B::Index(1), F::Keynum(0, 1, 1))]),
    (
        "zdiffstore",
        32788,
        &[
            S(36, B::Index(1), F::Range(0, 1, 0)),
            S(17, B::Index(2), F::Keynum(0, 1, 1)),
        ],
    ),
    ("zincrby", 16404, &[S(50, B::Index(1), F::Range(0, 1, 0))]),
    ("zinter", 32786, &[S(17, B::Index(1), F::Keynum(0, 1, 1))]),
    (
        "zintercard",
        32786,
        &[S(17, B::Index(1), F::Keynum(0, 1, 1))],
    ),
    (
        "zinterstore",
        32788,
        &[
            S(36, B::Index(1), F::Range(0, 1, 0)),
            S(17, B::Index(2), F::Keynum(0, 1, 1)),
        ],
    ),
    ("zlexcount", 16402, &[S(17, B::Index(1), F::Range(0, 1, 0))]),
    ("zmpop", 32788, &[S(146, B::Index(1), F::Keynum(0, 1, 1))]),
    ("zmscore", 16402, &[S(17, B::Index(1), F::Range(0, 1, 0))]),
    ("zpopmax", 16404, &[S(146, B::Index(1), F::Range(0, 1, 0))]),
    ("zpopmin", 16404, &[S(146, B::Index(1), F::Range(0, 1, 0))]),
    (
        "zrandmember",
        32786,
        &[S(17, B::Index(1), F::Range(0, 1, 0))],
    ),
    ("zrange", 32786, &[S(17, B::Index(1), F::Range(0, 1, 0))]),
    (
        "zrangebylex",
        32786,
        &[S(17, B::Index(1), F::Range(0, 1, 0))],
    ),
    (
        "zrangebyscore",
        32786,
        &[S(17, B::Index(1), F::Range(0, 1, 0))],
    ),
    (
        "zrangestore",
        32788,
        &[
            S(36, B::Index(1), F::Range(0, 1, 0)),
            S(17, B::Index(2), F::Range(0, 1, 0)),
        ],
    ),
    ("zrank", 16402, &[S(17, B::Index(1), F::Range(0, 1, 0))]),
    ("zrem", 16404, &[S(130, B::Index(1), F::Range(0, 1, 0))]),
    (
        "zremrangebylex",
        32788,
        &[S(130, B::Index(1), F::Range(0, 1, 0))],
    ),
    (
        "zremrangebyrank",
        32788,
        &[S(130, B::Index(1), F::Range(0, 1, 0))],
    ),
    (
        "zremrangebyscore",
        32788,
        &[S(130, B::Index(1), F::Range(0, 1, 0))],
    ),
    ("zrevrange", 32786, &[S(17, B::Index(1), F::Range(0, 1, 0))]),
    (
        "zrevrangebylex",
        32786,
        &[S(17, B::Index(1), F::Range(0, 1, 0))],
    ),
    (
        "zrevrangebyscore",
        32786,
        &[S(17, B::Index(1), F::Range(0, 1, 0))],
    ),
    ("zrevrank", 16402, &[S(17, B::Index(1), F::Range(0, 1, 0))]),
    ("zscan", 32786, &[S(17, B::Index(1), F::Range(0, 1, 0))]),
    ("zscore", 16402, &[S(17, B::Index(1), F::Range(0, 1, 0))]),
    ("zunion", 32786, &[S(17, B::Index(1), F::Keynum(0, 1, 1))]),
    (
        "zunionstore",
        32788,
        &[
            S(36, B::Index(1), F::Range(0, 1, 0)),
            S(17, B::Index(2), F::Keynum(0, 1, 1)),
        ],
    ),
];

/// The table entry of the command named `fullname` (`get`, `config|set`).
fn entry(fullname: &str) -> Option<&'static (&'static str, u32, &'static [S])> {
    TABLE
        .binary_search_by(|(name, _, _)| name.cmp(&fullname))
        .ok()
        .and_then(|i| TABLE.get(i))
}

/// The category mask of `fullname` as Redis 7.0.15 has it (`None` for a command Redis lacks).
pub(crate) fn categories(fullname: &str) -> Option<u32> {
    entry(fullname).map(|(_, cats, _)| *cats)
}

/// The bit of category `name` (any case), `None` if there is no such category.
pub(crate) fn category_bit(name: &[u8]) -> Option<u32> {
    CATEGORIES
        .iter()
        .position(|c| c.as_bytes().eq_ignore_ascii_case(name))
        .map(|i| 1 << i)
}

/// Whether a key with specification flags `flags` needs read permission (`%R~`).
pub(crate) fn reads(flags: u16) -> bool {
    flags & key::ACCESS != 0
}

/// Whether a key with specification flags `flags` needs write permission (`%W~`).
pub(crate) fn writes(flags: u16) -> bool {
    flags & (key::INSERT | key::DELETE | key::UPDATE) != 0
}

/// Whether the command may name keys at all (Redis's `doesCommandHaveKeys`).
pub(crate) fn has_keys(fullname: &str) -> bool {
    match entry(fullname) {
        Some((_, _, specs)) => specs.iter().any(|s| s.0 & key::NOT_KEY == 0),
        None => false,
    }
}

/// The keys of `argv` (the command line, the command's name first; for a subcommand the
/// container's name first) as (argument index, flags), found as Redis's
/// `getKeysFromCommandWithSpecs` finds them: by the key specifications, unless one is
/// incomplete, invalid for these arguments or has variable flags, in which case by the
/// command's own key finder. A command line that is a syntax error may yield no keys: the
/// command then fails by itself.
pub(crate) fn acl_keys(fullname: &str, argv: &[Bytes]) -> Vec<(usize, u16)> {
    let Some((_, _, specs)) = entry(fullname) else {
        return Vec::new();
    };
    let variable = specs.iter().any(|s| s.0 & key::VARIABLE_FLAGS != 0);
    if !variable {
        if let Some(keys) = keys_by_specs(specs, argv) {
            return keys;
        }
    }
    own_finder(fullname, argv)
}

/// Redis's `getKeysUsingKeySpecs`; `None` when a specification is invalid or incomplete.
fn keys_by_specs(specs: &[S], argv: &[Bytes]) -> Option<Vec<(usize, u16)>> {
    let argc = argv.len() as i64;
    let mut keys = Vec::new();
    for S(flags, begin, find) in specs {
        if flags & key::NOT_KEY != 0 {
            continue;
        }
        let first = match *begin {
            B::Index(i) => i64::from(i),
            B::Keyword(word, startfrom) => {
                let start = i64::from(startfrom);
                let (from, to) = if start > 0 {
                    (start, argc - 1)
                } else {
                    (argc + start, 1)
                };
                let mut found = None;
                let mut i = from;
                while i != to {
                    if i >= argc || i < 1 {
                        break;
                    }
                    // Redis compares C strings: an argument ends at its first NUL.
                    let text = arg(argv, i).split(|&b| b == 0).next().unwrap_or_default();
                    if text.eq_ignore_ascii_case(word.as_bytes()) {
                        found = Some(i + 1);
                        break;
                    }
                    i += if from <= to { 1 } else { -1 };
                }
                match found {
                    Some(first) => first,
                    None => continue,
                }
            }
            B::Unknown => return None,
        };
        let (first, last, step) = match *find {
            F::Range(lastkey, step, limit) => {
                let last = if lastkey >= 0 {
                    first + i64::from(lastkey)
                } else if limit == 0 {
                    argc + i64::from(lastkey)
                } else {
                    first + ((argc - first) / i64::from(limit) + i64::from(lastkey))
                };
                (first, last, step)
            }
            F::Keynum(numidx, firstkey, step) => {
                if i64::from(numidx) >= argc {
                    return None;
                }
                let count = std::str::from_utf8(arg(argv, first + i64::from(numidx)))
                    .ok()
                    .and_then(|s| s.parse::<i64>().ok())
                    .filter(|n| *n >= 0)?;
                let first = first + i64::from(firstkey);
                (first, first + count - 1, step)
            }
            F::Unknown => return None,
        };
        if last >= argc || last < first || first >= argc {
            return None;
        }
        let mut i = first;
        while i <= last {
            keys.push((i as usize, *flags));
            i += i64::from(step.max(1));
        }
        if flags & key::INCOMPLETE != 0 {
            return None;
        }
    }
    Some(keys)
}

/// Argument `i` of `argv` (empty past the end).
fn arg(argv: &[Bytes], i: i64) -> &[u8] {
    usize::try_from(i)
        .ok()
        .and_then(|i| argv.get(i))
        .map_or(&[][..], |a| &a[..])
}

/// The key finders of the commands whose specifications do not suffice (Redis's
/// `getkeys_proc`s: `sortGetKeys`, `migrateGetKeys`, `setGetKeys`, `bitfieldGetKeys`,
/// `genericGetKeys` for the `numkeys` commands).
fn own_finder(fullname: &str, argv: &[Bytes]) -> Vec<(usize, u16)> {
    use key::*;
    let argc = argv.len();
    let is = |i: usize, word: &str| {
        argv.get(i)
            .is_some_and(|a| a.eq_ignore_ascii_case(word.as_bytes()))
    };
    match fullname {
        "sort" => {
            let mut keys = vec![(1, RO | ACCESS)];
            let mut store = None;
            let mut i = 2;
            while i < argc {
                if is(i, "limit") {
                    i += 2;
                } else if is(i, "get") || is(i, "by") {
                    i += 1;
                } else if is(i, "store") && i + 1 < argc {
                    store = Some(i + 1);
                }
                i += 1;
            }
            keys.extend(store.map(|at| (at, OW | UPDATE)));
            keys
        }
        "sort_ro" => vec![(1, RO | ACCESS)],
        "migrate" => {
            let (mut first, mut num) = (3, 1);
            if argc > 6 {
                let mut i = 6;
                while i < argc {
                    if is(i, "keys") {
                        if argv.get(3).is_some_and(|k| !k.is_empty()) {
                            num = 0;
                        } else {
                            first = i + 1;
                            num = argc - first;
                        }
                        break;
                    }
                    if is(i, "auth") {
                        i += 1;
                    } else if is(i, "auth2") {
                        i += 2;
                    }
                    i += 1;
                }
            }
            (first..first + num)
                .filter(|&i| i < argc)
                .map(|i| (i, RW | ACCESS | DELETE))
                .collect()
        }
        "set" => {
            let get = argv.iter().skip(3).any(|a| a.eq_ignore_ascii_case(b"get"));
            let flags = if get {
                RW | ACCESS | UPDATE
            } else {
                OW | UPDATE
            };
            vec![(1, flags)]
        }
        "bitfield" => {
            let mut readonly = true;
            let mut i = 2;
            while i < argc {
                let rem = argc - i - 1;
                if is(i, "get") && rem >= 2 {
                    i += 2;
                } else if (is(i, "set") || is(i, "incrby")) && rem >= 3 {
                    readonly = false;
                    break;
                } else if is(i, "overflow") && rem >= 1 {
                    i += 1;
                } else {
                    readonly = false;
                    break;
                }
                i += 1;
            }
            let flags = if readonly {
                RO | ACCESS
            } else {
                RW | ACCESS | UPDATE
            };
            vec![(1, flags)]
        }
        "eval" | "evalsha" | "eval_ro" | "evalsha_ro" | "fcall" | "fcall_ro" => {
            generic(argv, 0, 2, 3)
        }
        "zunionstore" | "zinterstore" | "zdiffstore" => generic(argv, 1, 2, 3),
        "zunion" | "zinter" | "zdiff" | "sintercard" | "zintercard" | "lmpop" | "zmpop" => {
            generic(argv, 0, 1, 2)
        }
        "blmpop" | "bzmpop" => generic(argv, 0, 2, 3),
        _ => Vec::new(),
    }
}

/// Redis's `genericGetKeys` (`atoi` of the count; no flags on the keys).
fn generic(argv: &[Bytes], store: usize, count_at: usize, first: usize) -> Vec<(usize, u16)> {
    let num = argv.get(count_at).map_or(0, |a| crate::args::atoi(a));
    let available = argv.len().saturating_sub(first) as i64;
    if num < 1 || num > available {
        return Vec::new();
    }
    let mut keys: Vec<(usize, u16)> = (first..first + num as usize).map(|i| (i, 0)).collect();
    if store > 0 {
        keys.push((store, 0));
    }
    keys
}

/// A channel a command names, and how ACLs match it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ChannelUse {
    /// Published to (matched against the user's patterns).
    Publish,
    /// Subscribed to (matched against the user's patterns).
    Subscribe,
    /// A pattern subscribed to (`PSUBSCRIBE`: compared literally with the user's patterns).
    SubscribePattern,
}

/// The channels `argv` names that ACLs check (Redis's `getChannelsFromCommand`, publish and
/// subscribe only: unsubscribing is always allowed), as (argument index, use).
pub(crate) fn acl_channels(fullname: &str, argv: &[Bytes]) -> Vec<(usize, ChannelUse)> {
    let (kind, all) = match fullname {
        "publish" | "spublish" => (ChannelUse::Publish, false),
        "subscribe" | "ssubscribe" => (ChannelUse::Subscribe, true),
        "psubscribe" => (ChannelUse::SubscribePattern, true),
        _ => return Vec::new(),
    };
    let end = if all { argv.len() } else { argv.len().min(2) };
    (1..end).map(|i| (i, kind)).collect()
}

/// Whether the command names channels that ACLs check.
pub(crate) fn has_channels(fullname: &str) -> bool {
    matches!(
        fullname,
        "publish" | "spublish" | "subscribe" | "ssubscribe" | "psubscribe"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(args: &[&str]) -> Vec<Bytes> {
        args.iter().map(|a| Bytes::from(a.to_string())).collect()
    }

    #[test]
    fn table_is_sorted_for_binary_search() {
        assert!(TABLE.windows(2).all(|w| w[0].0 < w[1].0));
        assert_eq!(categories("get").map(|m| m & 1 << 1 != 0), Some(true));
        assert_eq!(category_bit(b"SCRIPTING"), Some(1 << 20));
        assert_eq!(category_bit(b"nosuch"), None);
    }

    #[test]
    fn keys_follow_specs_and_fallbacks() {
        let keys = |name: &str, args: &[&str]| -> Vec<usize> {
            acl_keys(name, &argv(args))
                .into_iter()
                .map(|(i, _)| i)
                .collect()
        };
        assert_eq!(keys("mget", &["mget", "a", "b"]), [1, 2]);
        assert_eq!(keys("eval", &["eval", "", "1", "k"]), [3]);
        assert!(keys("eval", &["eval", "", "3", "a", "b"]).is_empty());
        assert!(keys("eval", &["eval", "", "-1", "a"]).is_empty());
        assert_eq!(keys("sort", &["sort", "a", "store", "b"]), [1, 3]);
        assert_eq!(
            keys("zunionstore", &["zunionstore", "d", "2", "a", "b"]),
            [1, 3, 4]
        );
        assert_eq!(
            keys(
                "migrate",
                &["migrate", "h", "p", "", "0", "5", "auth2", "keys", "keys", "keys", "x"]
            ),
            [10]
        );
        assert_eq!(
            keys(
                "georadius",
                &["georadius", "a", "1", "2", "3", "m", "store", "b"]
            ),
            [1, 7]
        );
        assert_eq!(
            keys("xread", &["xread", "streams", "a", "b", "0", "0"]),
            [2, 3]
        );
        let set = acl_keys("set", &argv(&["set", "k", "v", "get"]));
        assert!(reads(set[0].1) && writes(set[0].1));
        let exists = acl_keys("exists", &argv(&["exists", "k"]));
        assert!(!reads(exists[0].1) && !writes(exists[0].1));
    }
}
