//! Values stored under keys.

use bytes::Bytes;
use std::collections::VecDeque;

use super::stream::Stream;

pub(crate) use super::hash_value::{HashValue, ListpackLimits};
pub(crate) use super::set_value::{SetEncoding, SetLimits, SetValue};
pub(crate) use super::string_value::StringValue;

/// A sorted set: member → score, plus members ordered by (score, member).
pub(crate) use super::zset::ZSet;

/// How a list is kept (`OBJECT ENCODING`): Redis 7.0 keeps every list in a quicklist; Redis
/// 7.2 and Valkey keep a small one in a single listpack (`t_list.c`'s
/// `listTypeTryConversion`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ListEncoding {
    /// A quicklist of listpack nodes.
    Quicklist,
    /// One listpack.
    Listpack,
}

/// What decides a list's encoding: `list-max-listpack-size` (`fill`), the packed-node
/// threshold, and whether the target keeps a small list as one listpack
/// ([`crate::compat::Encodings::list_listpack`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ListRules {
    /// `list-max-listpack-size`.
    pub(crate) fill: i64,
    /// Elements of this many bytes or more are a plain quicklist node of their own.
    pub(crate) packed_threshold: u64,
    /// Small lists are a listpack.
    pub(crate) listpack: bool,
}

impl ListRules {
    /// The encoding of a new list (`createListListpackObject` under Redis 7.2).
    pub(crate) fn new_list(self) -> ListEncoding {
        if self.listpack {
            ListEncoding::Listpack
        } else {
            ListEncoding::Quicklist
        }
    }

    /// Before `added` go into `items` (`listTypeTryConversionAppend`): a listpack that would
    /// hold more than a quicklist node becomes a quicklist, counting what is added by its
    /// length.
    pub(crate) fn growing<'a>(
        self,
        items: &VecDeque<Bytes>,
        encoding: &mut ListEncoding,
        added: impl IntoIterator<Item = &'a [u8]>,
    ) {
        if *encoding != ListEncoding::Listpack {
            return;
        }
        let (mut bytes, mut count) = (
            super::memory::listpack_bytes_up_to(items.iter().map(|e| &e[..]), usize::MAX),
            items.len(),
        );
        for e in added {
            bytes += e.len();
            count += 1;
        }
        if super::memory::listpack_exceeds(self.fill, bytes, count) {
            *encoding = ListEncoding::Quicklist;
        }
    }

    /// After `items` shrank (`shrinking`, `LIST_CONV_SHRINKING`) or were built (a load, SORT's
    /// STORE: `LIST_CONV_AUTO`): a quicklist of one packed node within a node's limits
    /// (halved when shrinking) becomes a listpack again, where the target has them.
    pub(crate) fn settle(
        self,
        items: &VecDeque<Bytes>,
        encoding: &mut ListEncoding,
        shrinking: bool,
    ) {
        if self.listpack
            && *encoding == ListEncoding::Quicklist
            && !items.is_empty()
            && super::memory::list_fits_listpack(
                items.iter().map(|e| &e[..]),
                items.len(),
                self.fill,
                self.packed_threshold,
                shrinking,
            )
        {
            *encoding = ListEncoding::Listpack;
        }
    }
}

/// One stored value: 40 bytes (a string's 32 and the tag), the larger aggregates boxed, so
/// the keyspace's node stays small.
#[derive(Debug, Clone)]
pub(crate) enum Value {
    /// A string (also integers and floats, stored as their text).
    String(StringValue),
    /// A list and its encoding (beside the deque, where the tag's padding has room for it).
    List(VecDeque<Bytes>, ListEncoding),
    /// A hash.
    Hash(HashValue),
    /// A set.
    Set(SetValue),
    /// A sorted set.
    ZSet(ZSet),
    /// A stream (boxed: it is large and rare).
    Stream(Box<Stream>),
}

impl Value {
    /// Asks the caches for the part of the value kept outside the keyspace's node, for the
    /// values commands on many keys read most: strings and small hashes (locks).
    pub(crate) fn prefetch_payload(&self) {
        match self {
            Value::String(s) => s.prefetch(),
            Value::Hash(h) => h.prefetch(),
            _ => {}
        }
    }

    /// Whether Redis would keep `h` as a listpack: no write made it hold more than
    /// `hash-max-listpack-entries` fields, nor a field or value longer than
    /// `hash-max-listpack-value`, as those parameters were at the time.
    pub(crate) fn hash_is_listpack(h: &HashValue) -> bool {
        !h.is_table()
    }

    /// Whether Redis would keep `z` as a listpack: `zset-max-listpack-entries` 128 and
    /// `zset-max-listpack-value` 64.
    pub(crate) fn zset_is_listpack(z: &ZSet) -> bool {
        z.len() <= 128 && z.iter().all(|(m, _)| m.len() <= 64)
    }

    /// The hash, if this is one.
    pub(crate) fn as_hash_mut(&mut self) -> Option<&mut HashValue> {
        match self {
            Value::Hash(h) => Some(h),
            _ => None,
        }
    }

    /// The set, if this is one.
    pub(crate) fn as_set_mut(&mut self) -> Option<&mut SetValue> {
        match self {
            Value::Set(s) => Some(s),
            _ => None,
        }
    }

    /// The sorted set, if this is one.
    pub(crate) fn as_zset_mut(&mut self) -> Option<&mut ZSet> {
        match self {
            Value::ZSet(z) => Some(z),
            _ => None,
        }
    }

    /// The name `TYPE` replies with.
    pub(crate) fn type_name(&self) -> &'static str {
        match self {
            Value::String(_) => "string",
            Value::List(..) => "list",
            Value::Hash(_) => "hash",
            Value::Set(_) => "set",
            Value::ZSet(_) => "zset",
            Value::Stream(_) => "stream",
        }
    }

    /// Whether this is an aggregate with no elements left (Redis deletes such keys).
    pub(crate) fn is_empty_aggregate(&self) -> bool {
        match self {
            Value::String(_) => false,
            Value::List(l, _) => l.is_empty(),
            Value::Hash(h) => h.is_empty(),
            Value::Set(s) => s.is_empty(),
            Value::ZSet(z) => z.is_empty(),
            // An empty stream stays (it keeps its last ID and groups).
            Value::Stream(_) => false,
        }
    }

    /// The reference count Redis reports for this value (`OBJECT REFCOUNT`, `DEBUG OBJECT`):
    /// the small integers 0..=9999 are its shared objects, counted as `INT_MAX`.
    pub(crate) fn refcount(&self) -> i32 {
        match self {
            Value::String(s)
                if s.len() <= 20
                    && resp::parse_integer(s).is_some_and(|n| (0..10_000).contains(&n)) =>
            {
                i32::MAX
            }
            _ => 1,
        }
    }

    /// Whether freeing this value takes more than `threshold` allocations, as Redis 7.0's
    /// `lazyfreeGetFreeEffort` counts them: a list's quicklist nodes (under
    /// `list-max-listpack-size` `fill` and the packed-node threshold), the elements of a set,
    /// hash or sorted set in a table or skiplist, a stream's nodes and its groups' pending
    /// entries; one for a string or a compact encoding. Reads a long list only up to its
    /// `threshold`-th node.
    pub(crate) fn costs_more_to_free_than(&self, threshold: usize, fill: i64, packed: u64) -> bool {
        match self {
            Value::String(_) => false,
            Value::List(l, _) => super::memory::quicklist_has_more_nodes_than(
                l.iter().map(|e| &e[..]),
                fill,
                packed,
                threshold,
            ),
            Value::Set(_) | Value::Hash(_) | Value::ZSet(_) => {
                let len = match self {
                    Value::Set(s) => s.len(),
                    Value::Hash(h) => h.len(),
                    Value::ZSet(z) => z.len(),
                    _ => 0,
                };
                len > threshold && !matches!(self.encoding(), "intset" | "listpack")
            }
            Value::Stream(s) => s.free_effort() > threshold,
        }
    }

    /// The encoding `OBJECT ENCODING` reports, following Redis 7.0's thresholds (a set's is
    /// the one it keeps, under its target's rules).
    pub(crate) fn encoding(&self) -> &'static str {
        match self {
            Value::String(s) => {
                if s.len() <= 20 && resp::parse_integer(s).is_some() {
                    "int"
                } else if s.len() <= 44 {
                    "embstr"
                } else {
                    "raw"
                }
            }
            Value::List(_, ListEncoding::Quicklist) => "quicklist",
            Value::List(_, ListEncoding::Listpack) => "listpack",
            Value::Hash(h) => {
                if Value::hash_is_listpack(h) {
                    "listpack"
                } else {
                    "hashtable"
                }
            }
            Value::Set(s) => s.encoding().name(),
            Value::ZSet(z) => {
                if Value::zset_is_listpack(z) {
                    "listpack"
                } else {
                    "skiplist"
                }
            }
            Value::Stream(_) => "stream",
        }
    }
}

use locksmith_resp as resp;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_is_a_string_and_a_tag() {
        assert_eq!(
            std::mem::size_of::<Value>(),
            std::mem::size_of::<StringValue>() + 8
        );
    }
}
