//! The value of a set key: members in a [`Dict`], so SSCAN resumes from its cursor in
//! O(COUNT) whatever the set's size, as on Redis's hashtable-encoded sets.

use super::dict::{hash_bytes, Dict, Entry};
use bytes::Bytes;
use rand::Rng;

/// A set value.
#[derive(Debug, Clone, Default)]
pub(crate) struct SetValue {
    members: Dict<Bytes>,
}

impl SetValue {
    /// An empty set.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// An empty set sized for `n` members.
    pub(crate) fn with_capacity(n: usize) -> Self {
        SetValue {
            members: Dict::with_capacity(n),
        }
    }

    /// Number of members.
    pub(crate) fn len(&self) -> usize {
        self.members.len()
    }

    /// Whether there is no member.
    pub(crate) fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// Adds `member`; returns whether it was new.
    pub(crate) fn insert(&mut self, member: Bytes) -> bool {
        match self.members.entry(hash_bytes(&member), |m| *m == member) {
            Entry::Occupied(_) => false,
            Entry::Vacant(place) => {
                place.insert(member);
                true
            }
        }
    }

    /// Removes `member`; returns whether it was there.
    pub(crate) fn remove(&mut self, member: &[u8]) -> bool {
        self.members.take(member).is_some()
    }

    /// Whether `member` is in the set.
    pub(crate) fn contains(&self, member: &[u8]) -> bool {
        self.members.contains(member)
    }

    /// Every member (table order).
    pub(crate) fn iter(&self) -> impl Iterator<Item = &Bytes> + '_ {
        self.members.iter()
    }

    /// Removes every member into a vector.
    pub(crate) fn drain(&mut self) -> Vec<Bytes> {
        self.members.drain()
    }

    /// A random member.
    pub(crate) fn random(&self, rng: &mut impl Rng) -> Option<&Bytes> {
        self.members.random(rng)
    }

    /// One SSCAN step ([`Dict::scan`]).
    pub(crate) fn scan(&self, cursor: u64, f: impl FnMut(&Bytes)) -> u64 {
        self.members.scan(cursor, f)
    }
}

impl FromIterator<Bytes> for SetValue {
    fn from_iter<I: IntoIterator<Item = Bytes>>(iter: I) -> Self {
        let mut set = SetValue::new();
        set.extend(iter);
        set
    }
}

impl Extend<Bytes> for SetValue {
    fn extend<I: IntoIterator<Item = Bytes>>(&mut self, iter: I) {
        for m in iter {
            self.insert(m);
        }
    }
}

impl IntoIterator for SetValue {
    type Item = Bytes;
    type IntoIter = std::vec::IntoIter<Bytes>;

    fn into_iter(mut self) -> Self::IntoIter {
        self.drain().into_iter()
    }
}
