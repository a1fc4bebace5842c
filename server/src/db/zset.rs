//! Sorted set storage: member → score map plus an ordered index by (score, member).
//!
//! The map is a [`Dict`], as Redis's skiplist encoding keeps a dict beside the skiplist: ZSCAN
//! of a large sorted set resumes from its cursor in O(COUNT).

use super::dict::Dict;
use bytes::Bytes;
use std::cmp::Ordering;
use std::collections::BTreeSet;

/// A score with a total order (scores are never NaN: commands reject NaN before storing).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Score(pub(crate) f64);

impl Eq for Score {}

impl PartialOrd for Score {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Score {
    fn cmp(&self, other: &Self) -> Ordering {
        // Plain `<` as Redis's skiplist compares: -0 and 0 are equal (members then decide).
        self.0.partial_cmp(&other.0).unwrap_or(Ordering::Equal)
    }
}

/// A sorted set ordered like Redis's skiplist: by score, then by member bytes.
#[derive(Debug, Clone, Default)]
pub(crate) struct ZSet {
    /// Boxed, so that a sorted set fits the keyspace's node as a string does.
    scores: Box<Dict<(Bytes, f64)>>,
    order: BTreeSet<(Score, Bytes)>,
}

impl ZSet {
    /// Number of members.
    pub(crate) fn len(&self) -> usize {
        self.scores.len()
    }

    /// Whether there are no members.
    pub(crate) fn is_empty(&self) -> bool {
        self.scores.is_empty()
    }

    /// The score of `member`.
    pub(crate) fn score(&self, member: &[u8]) -> Option<f64> {
        self.scores.get(member).map(|(_, s)| *s)
    }

    /// Sets `member`'s score; returns the previous score.
    pub(crate) fn insert(&mut self, member: Bytes, mut score: f64) -> Option<f64> {
        if score == 0.0 && score.is_sign_negative() && self.stays_listpack_with(&member) {
            // A listpack holds a score as text, and `zzlInsertAt` writes -0 as the integer 0
            // (`double2ll`): a small sorted set reads it back as 0, a skiplist keeps -0.
            score = 0.0;
        }
        let old = self.scores.put((member.clone(), score)).map(|(_, s)| s);
        if let Some(old) = old {
            self.order.remove(&(Score(old), member.clone()));
        }
        self.order.insert((Score(score), member));
        old
    }

    /// Whether the set is a listpack once `member` is in it (`Value::zset_is_listpack`).
    fn stays_listpack_with(&self, member: &[u8]) -> bool {
        let len = self.len() + usize::from(self.score(member).is_none());
        len <= 128 && member.len() <= 64 && self.iter().all(|(m, _)| m.len() <= 64)
    }

    /// Removes `member`; returns its score.
    pub(crate) fn remove(&mut self, member: &[u8]) -> Option<f64> {
        let (member, score) = self.scores.take(member)?;
        self.order.remove(&(Score(score), member));
        Some(score)
    }

    /// Members in ascending (score, member) order.
    pub(crate) fn iter(&self) -> impl DoubleEndedIterator<Item = (&Bytes, f64)> + '_ {
        self.order.iter().map(|(s, m)| (m, s.0))
    }

    /// Members in ascending order from the first whose score is at least `min` (Redis's
    /// `zslFirstInRange` with an inclusive minimum, then the list onwards).
    pub(crate) fn scores_from(&self, min: f64) -> impl Iterator<Item = (&Bytes, f64)> + '_ {
        self.order
            .range((Score(min), Bytes::new())..)
            .map(|(s, m)| (m, s.0))
    }

    /// One ZSCAN step over the members ([`Dict::scan`]).
    pub(crate) fn scan<'a>(&'a self, cursor: u64, mut f: impl FnMut(&'a Bytes, f64)) -> u64 {
        self.scores.scan(cursor, |(m, s)| f(m, *s))
    }

    /// 0-based ascending rank of `member`.
    pub(crate) fn rank(&self, member: &[u8]) -> Option<usize> {
        let score = self.score(member)?;
        Some(
            self.order
                .range(..(Score(score), Bytes::copy_from_slice(member)))
                .count(),
        )
    }

    /// 0-based descending rank of `member`.
    pub(crate) fn rev_rank(&self, member: &[u8]) -> Option<usize> {
        self.rank(member).map(|r| self.len() - 1 - r)
    }

    /// Members in ascending order if `!rev`, else descending.
    pub(crate) fn ordered(&self, rev: bool) -> Box<dyn Iterator<Item = (&Bytes, f64)> + '_> {
        if rev {
            Box::new(self.iter().rev())
        } else {
            Box::new(self.iter())
        }
    }
}
