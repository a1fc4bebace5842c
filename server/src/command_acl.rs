//! What ACLs need to know about commands apart from their descriptions, a leaf: the 21 ACL
//! categories in Redis's order (a command's own are in its description,
//! [`crate::command_meta::CommandMeta::categories`]), the key specification flags and which
//! of them need read or write permission (`%R~`/`%W~` patterns; the keys themselves are
//! found by [`crate::command_meta::CommandMeta::keys`]), and the channels a command names.

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

    #[test]
    fn categories_and_key_flags_are_named_as_redis_names_them() {
        assert_eq!(category_bit(b"SCRIPTING"), Some(1 << 20));
        assert_eq!(category_bit(b"read"), Some(1 << 1));
        assert_eq!(category_bit(b"nosuch"), None);
        assert!(reads(key::RO | key::ACCESS) && !writes(key::RO | key::ACCESS));
        assert!(writes(key::OW | key::UPDATE) && !reads(key::OW | key::UPDATE));
        assert!(!reads(key::RO) && !writes(key::RO));
    }

    #[test]
    fn publish_and_subscribe_name_channels() {
        let argv: Vec<Bytes> = ["subscribe", "a", "b"].map(Bytes::from).to_vec();
        let found = acl_channels("subscribe", &argv);
        assert_eq!(
            found,
            [(1, ChannelUse::Subscribe), (2, ChannelUse::Subscribe)]
        );
        assert!(has_channels("spublish") && !has_channels("get"));
    }
}
