//! The value of a set key, in the encoding the target's server would keep it in
//! (`t_set.c`): an intset (sorted integers), a listpack (insertion order, removals shifting;
//! Redis 7.2 and Valkey) or a hashtable (a [`Dict`], so SSCAN resumes from its cursor in
//! O(COUNT) whatever the set's size).
//!
//! The encoding is chosen as the server chooses it, by [`SetLimits`] read at every write: a
//! set created for an integer is an intset, one created for anything else a listpack (a
//! hashtable where the target has no listpack sets, as in Redis 7.0: its
//! `set-max-listpack-entries` is taken as 0); an intset becomes a listpack when a
//! non-integer is added while it is small, a hashtable once it outgrows
//! `set-max-intset-entries`; a listpack becomes a hashtable past `set-max-listpack-entries`
//! members or a member longer than `set-max-listpack-value`. As in the server, a set never
//! goes back to a smaller encoding (SINTERSTORE's result excepted, [`SetValue::maybe_intset`]).

use super::dict::{hash_bytes, Dict, Entry};
use bytes::Bytes;
use rand::Rng;

/// `intsetMaxEntries`: `set-max-intset-entries`, capped at 2^30 (intset internals).
const INTSET_MAX_CAP: usize = 1 << 30;

/// The encoding of a set (`OBJECT ENCODING`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SetEncoding {
    /// Sorted integers (`intset`).
    Intset,
    /// Members in insertion order (`listpack`).
    Listpack,
    /// A hash table (`hashtable`).
    Hashtable,
}

impl SetEncoding {
    /// The name `OBJECT ENCODING` answers.
    pub(crate) fn name(self) -> &'static str {
        match self {
            SetEncoding::Intset => "intset",
            SetEncoding::Listpack => "listpack",
            SetEncoding::Hashtable => "hashtable",
        }
    }
}

/// What chooses a set's encoding: the configuration's limits under the target's rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SetLimits {
    /// `set-max-intset-entries` (capped at 2^30).
    pub(crate) intset_entries: usize,
    /// `set-max-listpack-entries`; 0 where the target keeps no set in a listpack (Redis 7.0).
    pub(crate) listpack_entries: usize,
    /// `set-max-listpack-value`.
    pub(crate) listpack_value: usize,
    /// A write converts first by the number of members it brings, duplicates included
    /// (Redis 7.2's size hints, which came with its listpack sets); Redis 7.0 converts as
    /// members are added.
    pub(crate) size_hints: bool,
}

impl SetLimits {
    /// Redis 7.0's defaults: 512 integers in an intset, no listpack.
    #[cfg(test)]
    pub(crate) const REDIS_7_0: SetLimits = SetLimits {
        intset_entries: 512,
        listpack_entries: 0,
        listpack_value: 64,
        size_hints: false,
    };

    /// Valkey 8.1's defaults: 512 integers, 128 members of up to 64 bytes in a listpack.
    #[cfg(test)]
    pub(crate) const VALKEY_8_1: SetLimits = SetLimits {
        intset_entries: 512,
        listpack_entries: 128,
        listpack_value: 64,
        size_hints: true,
    };

    /// The limits `config` sets now, under its target's rules.
    pub(crate) fn of(config: &crate::config::runtime::RuntimeConfig) -> Self {
        let listpack = config.profile().encodings.set_listpack;
        SetLimits {
            intset_entries: config.set_max_intset_entries().min(INTSET_MAX_CAP),
            listpack_entries: if listpack {
                config.set_max_listpack_entries()
            } else {
                0
            },
            listpack_value: config.set_max_listpack_value(),
            size_hints: listpack,
        }
    }
}

/// A set value.
#[derive(Debug, Clone)]
pub(crate) struct SetValue {
    repr: Repr,
}

#[derive(Debug, Clone)]
enum Repr {
    /// Sorted, distinct.
    Intset(Vec<i64>),
    /// Insertion order, distinct.
    Listpack(Vec<Bytes>),
    /// Boxed: a set in the keyspace's node then takes 32 bytes.
    Table(Box<Dict<Bytes>>),
}

impl Default for SetValue {
    /// An empty intset (`createIntsetObject`).
    fn default() -> Self {
        SetValue {
            repr: Repr::Intset(Vec::new()),
        }
    }
}

/// `member` as an intset holds it: the integer of its canonical text (`string2ll`).
fn as_int(member: &[u8]) -> Option<i64> {
    if member.len() > 20 {
        return None;
    }
    locksmith_resp::parse_integer(member)
}

/// Decimal digits of `v`, its sign included (`sdigits10`).
fn digits(v: i64) -> usize {
    let mut n = if v < 0 { 2 } else { 1 };
    let mut u = v.unsigned_abs();
    while u >= 10 {
        u /= 10;
        n += 1;
    }
    n
}

impl SetValue {
    /// An empty intset.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// An empty set of `encoding` (a table sized for `n` members).
    pub(crate) fn empty(encoding: SetEncoding, n: usize) -> Self {
        SetValue {
            repr: match encoding {
                SetEncoding::Intset => Repr::Intset(Vec::new()),
                SetEncoding::Listpack => Repr::Listpack(Vec::new()),
                SetEncoding::Hashtable => Repr::Table(Box::new(Dict::with_capacity(n))),
            },
        }
    }

    /// The empty set made to hold `first` and about `size_hint` members (`setTypeCreate`).
    pub(crate) fn for_member(first: &[u8], size_hint: usize, limits: SetLimits) -> Self {
        let size_hint = if limits.size_hints { size_hint } else { 1 };
        let encoding = if as_int(first).is_some() && size_hint <= limits.intset_entries {
            SetEncoding::Intset
        } else if size_hint <= limits.listpack_entries {
            SetEncoding::Listpack
        } else {
            SetEncoding::Hashtable
        };
        Self::empty(encoding, size_hint)
    }

    /// The set of `members` as the server builds it from them one at a time (`RESTORE`'s
    /// `RDB_TYPE_SET`, a computed result): an intset while they fit one, a table from the
    /// start when there are more than an intset holds. `None` when a member repeats.
    pub(crate) fn from_members(
        members: impl IntoIterator<Item = Bytes>,
        len: usize,
        limits: SetLimits,
    ) -> Option<Self> {
        let mut set = if len > limits.intset_entries {
            Self::empty(SetEncoding::Hashtable, len)
        } else {
            Self::new()
        };
        for m in members {
            if !set.insert(m, limits) {
                return None;
            }
        }
        Some(set)
    }

    /// The set of a listpack's `members` (`RDB_TYPE_SET_LISTPACK`): a listpack as it was, or
    /// a table when it holds more than `set-max-listpack-entries`. `None` when a member
    /// repeats.
    pub(crate) fn from_listpack(members: Vec<Bytes>, limits: SetLimits) -> Option<Self> {
        let mut seen = Dict::with_capacity(members.len());
        for m in &members {
            match seen.entry(hash_bytes(m), |x: &Bytes| x == m) {
                Entry::Occupied(_) => return None,
                Entry::Vacant(place) => {
                    place.insert(m.clone());
                }
            }
        }
        if members.len() > limits.listpack_entries {
            return Some(SetValue {
                repr: Repr::Table(Box::new(seen)),
            });
        }
        Some(SetValue {
            repr: Repr::Listpack(members),
        })
    }

    /// Converts to a table a listpack or intset that `size_hint` more members would
    /// outgrow (`setTypeMaybeConvert`).
    pub(crate) fn maybe_convert(&mut self, size_hint: usize, limits: SetLimits) {
        if !limits.size_hints {
            return;
        }
        let outgrown = match &self.repr {
            Repr::Listpack(_) => size_hint > limits.listpack_entries,
            Repr::Intset(_) => size_hint > limits.intset_entries,
            Repr::Table(_) => false,
        };
        if outgrown {
            self.convert_to_table(size_hint);
        }
    }

    /// The encoding the set is in.
    pub(crate) fn encoding(&self) -> SetEncoding {
        match self.repr {
            Repr::Intset(_) => SetEncoding::Intset,
            Repr::Listpack(_) => SetEncoding::Listpack,
            Repr::Table(_) => SetEncoding::Hashtable,
        }
    }

    /// Number of members.
    pub(crate) fn len(&self) -> usize {
        match &self.repr {
            Repr::Intset(v) => v.len(),
            Repr::Listpack(v) => v.len(),
            Repr::Table(d) => d.len(),
        }
    }

    /// Whether there is no member.
    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn convert_to_table(&mut self, capacity: usize) {
        let mut dict = Dict::with_capacity(capacity.max(self.len()));
        for m in self.iter() {
            dict.insert_unique(hash_bytes(&m), m);
        }
        self.repr = Repr::Table(Box::new(dict));
    }

    /// Adds `member` under `limits`, converting the encoding first where the server would;
    /// returns whether it was new (`setTypeAdd`).
    pub(crate) fn insert(&mut self, member: Bytes, limits: SetLimits) -> bool {
        match &mut self.repr {
            Repr::Table(d) => match d.entry(hash_bytes(&member), |m| *m == member) {
                Entry::Occupied(_) => false,
                Entry::Vacant(place) => {
                    place.insert(member);
                    true
                }
            },
            Repr::Listpack(v) => {
                if v.contains(&member) {
                    return false;
                }
                if v.len() < limits.listpack_entries && member.len() <= limits.listpack_value {
                    v.push(member);
                } else {
                    let n = v.len() + 1;
                    self.convert_to_table(n);
                    self.insert(member, limits);
                }
                true
            }
            Repr::Intset(v) => {
                if let Some(x) = as_int(&member) {
                    let Err(at) = v.binary_search(&x) else {
                        return false;
                    };
                    v.insert(at, x);
                    if v.len() > limits.intset_entries {
                        let n = v.len();
                        self.convert_to_table(n);
                    }
                    return true;
                }
                // A string: a listpack if the integers and it fit one, else a table.
                let widest = match (v.first(), v.last()) {
                    (Some(&lo), Some(&hi)) => digits(lo).max(digits(hi)),
                    _ => 0,
                };
                if v.len() < limits.listpack_entries
                    && member.len() <= limits.listpack_value
                    && widest <= limits.listpack_value
                {
                    let mut items: Vec<Bytes> = Vec::with_capacity(v.len() + 1);
                    items.extend(v.iter().map(|x| Bytes::from(x.to_string())));
                    items.push(member);
                    self.repr = Repr::Listpack(items);
                } else {
                    let n = v.len() + 1;
                    self.convert_to_table(n);
                    self.insert(member, limits);
                }
                true
            }
        }
    }

    /// Removes `member`; returns whether it was there.
    pub(crate) fn remove(&mut self, member: &[u8]) -> bool {
        match &mut self.repr {
            Repr::Table(d) => d.take(member).is_some(),
            Repr::Listpack(v) => match v.iter().position(|m| m[..] == *member) {
                Some(at) => {
                    v.remove(at);
                    true
                }
                None => false,
            },
            Repr::Intset(v) => match as_int(member).map(|x| v.binary_search(&x)) {
                Some(Ok(at)) => {
                    v.remove(at);
                    true
                }
                _ => false,
            },
        }
    }

    /// Whether `member` is in the set.
    pub(crate) fn contains(&self, member: &[u8]) -> bool {
        match &self.repr {
            Repr::Table(d) => d.contains(member),
            Repr::Listpack(v) => v.iter().any(|m| m[..] == *member),
            Repr::Intset(v) => as_int(member).is_some_and(|x| v.binary_search(&x).is_ok()),
        }
    }

    /// Every member, in the encoding's order: ascending for an intset, insertion order for a
    /// listpack, table order for a hashtable.
    pub(crate) fn iter(&self) -> impl Iterator<Item = Bytes> + '_ {
        let (ints, items, table) = match &self.repr {
            Repr::Intset(v) => (Some(v.iter()), None, None),
            Repr::Listpack(v) => (None, Some(v.iter()), None),
            Repr::Table(d) => (None, None, Some(d.iter())),
        };
        ints.into_iter()
            .flatten()
            .map(|x| Bytes::from(x.to_string()))
            .chain(items.into_iter().flatten().cloned())
            .chain(table.into_iter().flatten().cloned())
    }

    /// The integers of an intset, ascending.
    pub(crate) fn intset(&self) -> Option<&[i64]> {
        match &self.repr {
            Repr::Intset(v) => Some(v),
            _ => None,
        }
    }

    /// Removes every member into a vector, in the encoding's order.
    pub(crate) fn drain(&mut self) -> Vec<Bytes> {
        let out = match &mut self.repr {
            Repr::Table(d) => return d.drain(),
            Repr::Listpack(v) => return std::mem::take(v),
            Repr::Intset(v) => v.iter().map(|x| Bytes::from(x.to_string())).collect(),
        };
        self.repr = Repr::Intset(Vec::new());
        out
    }

    /// A random member.
    pub(crate) fn random(&self, rng: &mut impl Rng) -> Option<Bytes> {
        match &self.repr {
            Repr::Table(d) => d.random(rng).cloned(),
            Repr::Listpack(v) if !v.is_empty() => v.get(rng.random_range(0..v.len())).cloned(),
            Repr::Intset(v) if !v.is_empty() => v
                .get(rng.random_range(0..v.len()))
                .map(|x| Bytes::from(x.to_string())),
            _ => None,
        }
    }

    /// One SSCAN step over a table ([`Dict::scan`]); `None` for a compact encoding, which
    /// SSCAN returns whole.
    pub(crate) fn scan(&self, cursor: u64, f: impl FnMut(&Bytes)) -> Option<u64> {
        match &self.repr {
            Repr::Table(d) => Some(d.scan(cursor, f)),
            _ => None,
        }
    }

    /// Makes a listpack or table of integers only an intset, if it fits one
    /// (`maybeConvertToIntset`, for SINTERSTORE's result).
    pub(crate) fn maybe_intset(&mut self, limits: SetLimits) {
        if matches!(self.repr, Repr::Intset(_)) || self.len() > limits.intset_entries {
            return;
        }
        let Some(mut ints) = self
            .iter()
            .map(|m| as_int(&m))
            .collect::<Option<Vec<i64>>>()
        else {
            return;
        };
        ints.sort_unstable();
        self.repr = Repr::Intset(ints);
    }
}

#[cfg(test)]
impl FromIterator<Bytes> for SetValue {
    /// The set Redis 7.0 builds of these members (test values).
    fn from_iter<I: IntoIterator<Item = Bytes>>(iter: I) -> Self {
        let mut set = SetValue::new();
        for m in iter {
            set.insert(m, SetLimits::REDIS_7_0);
        }
        set
    }
}

impl IntoIterator for SetValue {
    type Item = Bytes;
    type IntoIter = std::vec::IntoIter<Bytes>;

    fn into_iter(mut self) -> Self::IntoIter {
        self.drain().into_iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(s: &str) -> Bytes {
        Bytes::copy_from_slice(s.as_bytes())
    }

    fn members(s: &SetValue) -> Vec<String> {
        s.iter()
            .map(|m| String::from_utf8_lossy(&m).into_owned())
            .collect()
    }

    #[test]
    fn valkey_sets_go_from_intset_to_listpack_to_hashtable() {
        let lim = SetLimits::VALKEY_8_1;
        let mut s = SetValue::for_member(b"3", 3, lim);
        for m in ["3", "1", "2"] {
            assert!(s.insert(b(m), lim));
        }
        assert_eq!(s.encoding(), SetEncoding::Intset);
        assert!(!s.insert(b("2"), lim));
        assert!(s.insert(b("x"), lim));
        assert_eq!(s.encoding(), SetEncoding::Listpack);
        assert_eq!(members(&s), ["1", "2", "3", "x"]);
        assert!(s.remove(b"2"));
        assert!(s.insert(b("2"), lim));
        assert_eq!(members(&s), ["1", "3", "x", "2"]);
        assert!(s.insert(b(&"v".repeat(65)), lim));
        assert_eq!(s.encoding(), SetEncoding::Hashtable);
        assert!(s.remove(&b"v".repeat(65)));
        assert_eq!(s.encoding(), SetEncoding::Hashtable);
    }

    #[test]
    fn redis_7_0_sets_are_intsets_or_tables() {
        let lim = SetLimits::REDIS_7_0;
        let mut s = SetValue::for_member(b"a", 1, lim);
        assert_eq!(s.encoding(), SetEncoding::Hashtable);
        assert!(s.insert(b("a"), lim));
        let mut i = SetValue::for_member(b"1", 1, lim);
        assert!(i.insert(b("1"), lim));
        assert!(i.insert(b("x"), lim));
        assert_eq!(i.encoding(), SetEncoding::Hashtable);
        let big = SetValue::from_members((0..513).map(|n| b(&n.to_string())), 513, lim).unwrap();
        assert_eq!(big.encoding(), SetEncoding::Hashtable);
        let small = SetValue::from_members((0..512).map(|n| b(&n.to_string())), 512, lim).unwrap();
        assert_eq!(small.encoding(), SetEncoding::Intset);
        assert!(SetValue::from_members([b("a"), b("a")], 2, lim).is_none());
    }

    #[test]
    fn an_intset_of_wide_integers_is_not_a_listpack_under_a_small_value_limit() {
        let lim = SetLimits {
            listpack_value: 3,
            ..SetLimits::VALKEY_8_1
        };
        let mut s = SetValue::new();
        assert!(s.insert(b("12345"), lim));
        assert!(s.insert(b("ab"), lim));
        assert_eq!(s.encoding(), SetEncoding::Hashtable);
        assert_eq!(digits(-10), 3);
        assert_eq!(digits(0), 1);
        assert_eq!(digits(i64::MIN), 20);
    }
}
