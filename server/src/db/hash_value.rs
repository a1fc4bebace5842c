//! The value of a hash key: field → value in insertion order.
//!
//! Most hashes are small (a Redisson lock holds one field per owner), and for them a hash
//! table is mostly overhead: hashing the field, then an index table and an entry vector in two
//! more allocations, each a cache miss when many keys are live. As Redis keeps small hashes in
//! one listpack, a hash of up to [`SMALL_MAX`] fields is a [`Listpack`] (the pairs copied into
//! one allocation) searched by a linear scan; a larger one becomes an `IndexMap`. Both keep insertion order and
//! shift on removal, as a listpack does, so `HGETALL` answers in Redis's order.
//!
//! Once Redis would convert its listpack to a hashtable (more than
//! `hash-max-listpack-entries` fields, or a field or value longer than
//! `hash-max-listpack-value` bytes: [`ListpackLimits`], read from the configuration at every
//! write), the hash becomes a [`Dict`] for good, as Redis never converts back: HSCAN then
//! resumes from its cursor in O(COUNT) and HDEL is O(1).

use super::dict::{hash_bytes, Dict, Entry as DictEntry, Iter as DictIter};
use super::listpack::{Iter as ListpackIter, Listpack};
use super::memory::sds;
use bytes::Bytes;
use indexmap::IndexMap;
use rand::Rng;

/// Most fields a hash holds as a vector before it becomes an insertion-ordered table.
const SMALL_MAX: usize = 16;
/// When Redis turns a hash's listpack into a hashtable: once it would hold more than
/// `entries` fields, or a field or value longer than `value` bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ListpackLimits {
    /// `hash-max-listpack-entries`.
    pub(crate) entries: usize,
    /// `hash-max-listpack-value`.
    pub(crate) value: usize,
}

impl ListpackLimits {
    /// Redis's defaults: 512 fields, 64 bytes.
    #[cfg(test)]
    pub(crate) const DEFAULT: ListpackLimits = ListpackLimits {
        entries: 512,
        value: 64,
    };

    /// The hash limits `config` sets now.
    pub(crate) fn of_hashes(config: &crate::config::runtime::RuntimeConfig) -> Self {
        ListpackLimits {
            entries: config.hash_max_listpack_entries(),
            value: config.hash_max_listpack_value(),
        }
    }
}

/// A hash value.
#[derive(Debug, Clone, Default)]
pub(crate) struct HashValue {
    repr: Repr,
}

/// The larger forms are boxed: a hash in the keyspace's node then takes 24 bytes.
#[derive(Debug, Clone)]
enum Repr {
    /// Up to [`SMALL_MAX`] fields of up to [`super::listpack::MAX_ELEMENT`] bytes, insertion
    /// order.
    Small(Listpack),
    /// What Redis keeps as a listpack beyond that, insertion order.
    Large(Box<IndexMap<Bytes, Bytes>>),
    /// What Redis keeps as a hashtable.
    Table(Box<TableHash>),
}

/// A hash Redis keeps as a hashtable, with the bytes its fields and values take as Redis
/// allocates them (two sds strings per pair), kept up to date by every write: measuring a
/// large hash after each write then reads none of its elements.
#[derive(Debug, Clone)]
struct TableHash {
    dict: Dict<(Bytes, Bytes)>,
    bytes: usize,
}

impl TableHash {
    fn from_pairs(pairs: Vec<(Bytes, Bytes)>) -> Self {
        let mut table = TableHash {
            dict: Dict::with_capacity(pairs.len() + 1),
            bytes: 0,
        };
        for (field, value) in pairs {
            table.put(&field, &value);
        }
        table
    }

    /// Sets `field` in one walk of its chain; whether it is new. Fields and values are
    /// copied: a clone of a request's argument would share it through a reference count
    /// allocated beside it, one more allocation to make, drop and miss in the cache.
    fn put(&mut self, field: &[u8], value: &[u8]) -> bool {
        match self.dict.entry(hash_bytes(field), |(f, _)| f[..] == *field) {
            DictEntry::Occupied(mut occupied) => {
                let pair = occupied.get_mut();
                self.bytes = self.bytes + sds(value.len()) - sds(pair.1.len());
                pair.1 = Bytes::copy_from_slice(value);
                false
            }
            DictEntry::Vacant(vacant) => {
                self.bytes += sds(field.len()) + sds(value.len());
                vacant.insert((Bytes::copy_from_slice(field), Bytes::copy_from_slice(value)));
                true
            }
        }
    }

    /// Removes `field`; whether it was there.
    fn take(&mut self, field: &[u8]) -> bool {
        match self.dict.take(field) {
            Some((old_field, old_value)) => {
                self.bytes -= sds(old_field.len()) + sds(old_value.len());
                true
            }
            None => false,
        }
    }
}

impl Default for Repr {
    fn default() -> Self {
        Repr::Small(Listpack::default())
    }
}

impl HashValue {
    /// Asks the caches for a small hash's listpack (a lock's fields).
    pub(crate) fn prefetch(&self) {
        if let Repr::Small(listpack) = &self.repr {
            listpack.prefetch();
        }
    }

    /// An empty hash.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Number of fields.
    pub(crate) fn len(&self) -> usize {
        match &self.repr {
            Repr::Small(v) => v.len(),
            Repr::Large(m) => m.len(),
            Repr::Table(t) => t.dict.len(),
        }
    }

    /// Whether the hash has no field.
    pub(crate) fn is_empty(&self) -> bool {
        match &self.repr {
            Repr::Small(v) => v.bytes() == 0,
            _ => self.len() == 0,
        }
    }

    /// The value of `field`.
    pub(crate) fn get(&self, field: &[u8]) -> Option<&[u8]> {
        match &self.repr {
            Repr::Small(v) => v.get(field),
            Repr::Large(m) => m.get(field).map(|x| &x[..]),
            Repr::Table(t) => t.dict.get(field).map(|(_, x)| &x[..]),
        }
    }

    /// Whether `field` is set.
    pub(crate) fn contains_key(&self, field: &[u8]) -> bool {
        self.get(field).is_some()
    }

    /// Whether Redis's listpack would turn into a hashtable to hold `field` and `value`
    /// (`hashTypeTryConversion`, then `hashTypeSet`'s length check).
    fn exceeds_listpack(&self, field: &[u8], value: &[u8], limits: ListpackLimits) -> bool {
        field.len() > limits.value
            || value.len() > limits.value
            || (self.len() >= limits.entries && !self.contains_key(field))
    }

    /// Sets `field` to `value` (a new field goes last while the hash is ordered); returns
    /// whether the field is new. A hash that would outgrow Redis's listpack under `limits`
    /// becomes a table first.
    /// A listpack and a table copy the field and value; the ordered form in between takes a
    /// reference to them.
    pub(crate) fn insert(&mut self, field: &Bytes, value: &Bytes, limits: ListpackLimits) -> bool {
        if !matches!(self.repr, Repr::Table(_)) && self.exceeds_listpack(field, value, limits) {
            let pairs: Vec<(Bytes, Bytes)> = match std::mem::take(&mut self.repr) {
                Repr::Small(v) => v.iter().map(copied).collect(),
                Repr::Large(m) => m.into_iter().collect(),
                Repr::Table(t) => t.dict.iter().cloned().collect(),
            };
            self.repr = Repr::Table(Box::new(TableHash::from_pairs(pairs)));
        }
        match &mut self.repr {
            Repr::Small(v) => {
                if Listpack::fits(field, value) && (v.len() < SMALL_MAX || v.get(field).is_some()) {
                    return v.insert(field, value);
                }
                let mut m: IndexMap<Bytes, Bytes> = v.iter().map(copied).collect();
                let new = m.insert(field.clone(), value.clone()).is_none();
                self.repr = Repr::Large(Box::new(m));
                new
            }
            Repr::Large(m) => m.insert(field.clone(), value.clone()).is_none(),
            Repr::Table(t) => t.put(field, value),
        }
    }

    /// Removes `field`, keeping the order of the others; returns whether it was there.
    pub(crate) fn shift_remove(&mut self, field: &[u8]) -> bool {
        match &mut self.repr {
            Repr::Small(v) => v.remove(field),
            Repr::Large(m) => m.shift_remove(field).is_some(),
            Repr::Table(t) => t.take(field),
        }
    }

    /// The bytes a hashtable's fields and values take as Redis allocates them (sds strings),
    /// counted as they were written; `None` for the compact forms.
    pub(crate) fn table_bytes(&self) -> Option<usize> {
        match &self.repr {
            Repr::Table(t) => Some(t.bytes),
            _ => None,
        }
    }

    /// Whether Redis would hold this hash as a hashtable (see the module docs).
    pub(crate) fn is_table(&self) -> bool {
        matches!(self.repr, Repr::Table(_))
    }

    /// The field and value at position `i` (insertion order) of an ordered hash; the `i`th in
    /// table order (a walk) of a table.
    pub(crate) fn get_index(&self, i: usize) -> Option<(&[u8], &[u8])> {
        match &self.repr {
            Repr::Large(m) => m.get_index(i).map(|(f, x)| (&f[..], &x[..])),
            _ => self.iter().nth(i),
        }
    }

    /// A random field and its value.
    pub(crate) fn random(&self, rng: &mut impl Rng) -> Option<(&[u8], &[u8])> {
        match &self.repr {
            Repr::Table(t) => t.dict.random(rng).map(|(f, x)| (&f[..], &x[..])),
            _ => {
                let len = self.len();
                if len == 0 {
                    return None;
                }
                self.get_index(rng.random_range(0..len))
            }
        }
    }

    /// One HSCAN step of a table ([`Dict::scan`]); an ordered hash (a listpack in Redis) is
    /// visited whole and the cursor ends.
    pub(crate) fn scan(&self, cursor: u64, mut f: impl FnMut(&[u8], &[u8])) -> u64 {
        match &self.repr {
            Repr::Table(t) => t.dict.scan(cursor, |(k, v)| f(k, v)),
            _ => {
                for (k, v) in self.iter() {
                    f(k, v);
                }
                0
            }
        }
    }

    /// Fields and values in insertion order (table order for a table).
    pub(crate) fn iter(&self) -> Iter<'_> {
        match &self.repr {
            Repr::Small(v) => Iter::Small(v.iter()),
            Repr::Large(m) => Iter::Large(m.iter()),
            Repr::Table(t) => Iter::Table(t.dict.iter()),
        }
    }

    /// Fields in insertion order.
    pub(crate) fn keys(&self) -> impl Iterator<Item = &[u8]> + '_ {
        self.iter().map(|(f, _)| f)
    }

    /// Values in insertion order.
    pub(crate) fn values(&self) -> impl Iterator<Item = &[u8]> + '_ {
        self.iter().map(|(_, v)| v)
    }
}

/// A pair of a [`Listpack`] as owned `Bytes`.
fn copied((f, v): (&[u8], &[u8])) -> (Bytes, Bytes) {
    (Bytes::copy_from_slice(f), Bytes::copy_from_slice(v))
}

/// Iterator over a hash's fields and values, in insertion order.
#[derive(Debug)]
pub(crate) enum Iter<'a> {
    /// Over a small hash.
    Small(ListpackIter<'a>),
    /// Over an insertion-ordered table.
    Large(indexmap::map::Iter<'a, Bytes, Bytes>),
    /// Over a [`Dict`].
    Table(DictIter<'a, (Bytes, Bytes)>),
}

impl<'a> Iterator for Iter<'a> {
    type Item = (&'a [u8], &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Iter::Small(it) => it.next(),
            Iter::Large(it) => it.next().map(|(f, v)| (&f[..], &v[..])),
            Iter::Table(it) => it.next().map(|(f, v)| (&f[..], &v[..])),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match self {
            Iter::Small(it) => it.size_hint(),
            Iter::Large(it) => it.size_hint(),
            Iter::Table(it) => it.size_hint(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(s: &str) -> Bytes {
        Bytes::copy_from_slice(s.as_bytes())
    }

    /// A table's bytes, counted as it is written, equal the sum over its pairs.
    #[test]
    fn a_tables_bytes_follow_its_writes() {
        let limits = ListpackLimits::DEFAULT;
        let mut h = HashValue::new();
        let full = |h: &HashValue| h.iter().map(|(f, v)| sds(f.len()) + sds(v.len())).sum();
        assert_eq!(h.table_bytes(), None);
        // A long value makes it a table at once; then new fields, overwrites of other
        // lengths (across sds header sizes) and removals.
        h.insert(&b("long"), &b(&"x".repeat(100)), limits);
        assert_eq!(h.table_bytes(), Some(full(&h)));
        for i in 0..600 {
            h.insert(
                &b(&format!("f{}", i % 300)),
                &b(&"y".repeat(i % 70)),
                limits,
            );
            if i % 7 == 0 {
                h.shift_remove(format!("f{}", i % 50).as_bytes());
            }
            assert_eq!(h.table_bytes(), Some(full(&h)), "after write {i}");
        }
        h.shift_remove(b"long");
        h.shift_remove(b"absent");
        assert_eq!(h.table_bytes(), Some(full(&h)));
    }

    /// The same operations on a `HashValue` and on an `IndexMap` (the reference) agree, across
    /// the switch from the small form to the table.
    #[test]
    fn behaves_as_an_insertion_ordered_map_across_the_switch() {
        let mut h = HashValue::new();
        let mut want: IndexMap<Bytes, Bytes> = IndexMap::new();
        for round in 0..3 {
            for i in 0..(SMALL_MAX + 4) {
                let (f, v) = (
                    b(&format!("f{}", (i * 7 + round) % 23)),
                    b(&format!("v{i}")),
                );
                assert_eq!(
                    h.insert(&f, &v, ListpackLimits::DEFAULT),
                    want.insert(f, v).is_none()
                );
                let gone = b(&format!("f{}", (i * 5) % 23));
                if i % 3 == 0 {
                    assert_eq!(h.shift_remove(&gone), want.shift_remove(&gone).is_some());
                }
                assert_eq!(h.len(), want.len());
                let got: Vec<_> = h.iter().collect();
                let expected: Vec<_> = want.iter().map(|(f, v)| (&f[..], &v[..])).collect();
                assert_eq!(got, expected);
            }
            for i in 0..23 {
                let f = b(&format!("f{i}"));
                assert_eq!(h.get(&f), want.get(&f).map(|v| &v[..]));
                assert_eq!(h.contains_key(&f), want.contains_key(&f));
            }
            assert_eq!(
                h.get_index(2),
                want.get_index(2).map(|(f, v)| (&f[..], &v[..]))
            );
        }
        assert!(matches!(h.repr, Repr::Large(_)));
    }

    #[test]
    fn small_hash_replaces_in_place_and_empties() {
        let mut h = HashValue::new();
        assert!(h.is_empty() && h.get(b"a").is_none());
        assert!(h.insert(&b("a"), &b("1"), ListpackLimits::DEFAULT));
        assert!(h.insert(&b("b"), &b("2"), ListpackLimits::DEFAULT));
        assert!(!h.insert(&b("a"), &b("3"), ListpackLimits::DEFAULT));
        assert_eq!(h.keys().collect::<Vec<_>>(), [b"a", b"b"]);
        assert_eq!(h.values().collect::<Vec<_>>(), [b"3", b"2"]);
        assert!(h.shift_remove(b"a"));
        assert!(!h.shift_remove(b"a"));
        assert!(h.shift_remove(b"b"));
        assert!(h.is_empty() && matches!(h.repr, Repr::Small(_)));
    }

    #[test]
    fn a_value_too_long_for_the_small_form_moves_the_hash_in_order() {
        let limits = ListpackLimits {
            entries: 512,
            value: 1000,
        };
        let mut h = HashValue::new();
        h.insert(&b("a"), &b("1"), limits);
        h.insert(&b("b"), &b("2"), limits);
        assert!(!h.insert(&b("a"), &Bytes::from(vec![b'x'; 300]), limits));
        assert!(matches!(h.repr, Repr::Large(_)));
        assert_eq!(h.keys().collect::<Vec<_>>(), [b"a", b"b"]);
        assert_eq!(h.get(b"a").map(<[u8]>::len), Some(300));
    }
}
