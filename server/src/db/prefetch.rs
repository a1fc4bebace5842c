//! Asking the CPU for memory a batch of commands is about to read, without waiting for it.
//!
//! Over a keyspace larger than the caches every request of a pipeline misses twice or three
//! times (the bucket, the node, a value kept outside it), each miss a few hundred cycles in
//! which the command waits. A [`Lookahead`] hashes the keys of the requests already read
//! and walks their lookups a few requests ahead of the commands, one dependent step per
//! request, so that each miss is waited for by no one: the bucket when the batch starts,
//! the chain's first node two requests before its command, the next link or the value one
//! request before. Asking for a whole batch and then reading it (as this module did first)
//! waits for each step once per batch; on the 2-vCPU machine of BENCHMARKS.md (session 32)
//! both cost about the same, a third less CPU per request at 10^6 keys than no prefetching,
//! and the lookahead leaves the commands' own lookups without a miss.

use super::Db;

/// Asks the CPU to bring the cache line holding `at` closer, without waiting for it.
#[inline(always)]
pub(crate) fn prefetch(at: *const u8) {
    #[cfg(target_arch = "x86_64")]
    #[allow(unsafe_code)]
    // SAFETY: PREFETCHT0 is a hint: it reads nothing architecturally and cannot fault, whatever
    // the address (here always one inside a live allocation); SSE is part of x86_64's baseline.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(at.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = at;
}

/// Most cache lines [`prefetch_bytes`] asks for: a lock's listpack or a short value spans one
/// or two; the rest of a longer buffer is left to the hardware's own prefetcher.
const MAX_LINES: usize = 4;

/// Bytes of a cache line.
const LINE: usize = 64;

/// Asks for every cache line the `len` bytes at `at` touch (up to [`MAX_LINES`]): a buffer
/// is not aligned to a line, so one of 56 bytes spans two lines seven times in eight.
#[inline(always)]
pub(crate) fn prefetch_bytes(at: *const u8, len: usize) {
    for line in 0..lines(at as usize, len) {
        prefetch(at.wrapping_add(line * LINE));
    }
}

/// How many lines [`prefetch_bytes`] asks for, for `len` bytes at address `at`.
fn lines(at: usize, len: usize) -> usize {
    if len == 0 {
        return 0;
    }
    let first = at / LINE;
    let last = at.saturating_add(len - 1) / LINE;
    (last - first + 1).min(MAX_LINES)
}

/// Most requests one [`Lookahead`] looks at.
pub(crate) const LOOKAHEAD_MAX: usize = 16;

/// Requests before its command at which a request's bucket is read and its first node asked
/// for ([`super::dict::Dict::prefetch_head`]).
const HEAD_AHEAD: usize = 2;
/// Requests before its command at which a request's first node is read and the next link or
/// the value asked for ([`super::dict::Dict::prefetch_past_head`]).
const PAST_HEAD_AHEAD: usize = 1;

/// The hashed keys of the next requests of a connection's read buffer, whose lookups are
/// walked ahead of their commands (module docs). A hint throughout: a request without a key,
/// a command that selects another database or one that reads other keys only makes a
/// prefetch useless, never a result different.
#[derive(Debug, Default)]
pub(crate) struct Lookahead {
    /// The database the hashes are for.
    db: usize,
    /// The hash of each request's first key, in order (`None`: no key seen).
    hashes: [Option<u64>; LOOKAHEAD_MAX],
    /// Requests looked at.
    len: usize,
    /// The request whose command runs next.
    next: usize,
}

impl Lookahead {
    /// Starts over with the requests about to run, given by their first keys (up to
    /// [`LOOKAHEAD_MAX`]): hashes them and asks for every bucket, then takes the first
    /// requests' steps at once (nothing runs before them to hide their misses), and those
    /// [`advance`] takes before the first request's command.
    ///
    /// [`advance`]: Lookahead::advance
    pub(crate) fn start<'a>(
        &mut self,
        db_index: usize,
        db: &Db,
        keys: impl IntoIterator<Item = Option<&'a [u8]>>,
    ) {
        self.len = 0;
        self.next = 0;
        self.db = db_index;
        if !db.worth_prefetching() {
            return;
        }
        for (slot, key) in self.hashes.iter_mut().zip(keys) {
            *slot = key.map(|key| super::hash_key(&db.hasher, key));
            if let Some(hash) = *slot {
                db.entries.prefetch_bucket(hash);
            }
            self.len += 1;
        }
        for i in 0..HEAD_AHEAD {
            self.head(db, i);
        }
        for i in 0..PAST_HEAD_AHEAD {
            self.past_head(db, i);
        }
        self.advance(db_index, db);
    }

    /// Called as the next request's command is about to run (by [`start`] for the first):
    /// takes the steps of the requests behind it.
    ///
    /// [`start`]: Lookahead::start
    pub(crate) fn advance(&mut self, db_index: usize, db: &Db) {
        if self.next >= self.len || db_index != self.db {
            return;
        }
        self.head(db, self.next + HEAD_AHEAD);
        self.past_head(db, self.next + PAST_HEAD_AHEAD);
        self.next += 1;
    }

    /// The hash of request `i`'s key, if it was looked at and has one.
    fn hash(&self, i: usize) -> Option<u64> {
        if i < self.len {
            self.hashes.get(i).copied().flatten()
        } else {
            None
        }
    }

    fn head(&self, db: &Db, i: usize) {
        if let Some(hash) = self.hash(i) {
            db.entries.prefetch_head(hash);
        }
    }

    fn past_head(&self, db: &Db, i: usize) {
        if let Some(hash) = self.hash(i) {
            db.entries
                .prefetch_past_head(hash, |slot| slot.entry.value.prefetch_payload());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::db::{Db, Value};

    #[test]
    fn a_lookahead_walks_its_requests_once_and_only_over_a_large_keyspace() {
        let names: Vec<String> = (0..40_000).map(|i| format!("key:{i}")).collect();
        let mut db = Db::default();
        let keys = || names.iter().map(|n| Some(n.as_bytes())).chain([None, None]);
        let mut ahead = Lookahead::default();
        ahead.start(0, &db, keys());
        assert_eq!(ahead.len, 0, "a small keyspace is not looked at");
        for name in &names {
            let value = Value::String(bytes::Bytes::copy_from_slice(name.as_bytes()).into());
            db.insert(name.as_bytes(), value, None, 0);
        }
        assert!(db.worth_prefetching());
        // More requests than it takes: the first LOOKAHEAD_MAX, keyless ones included.
        ahead.start(0, &db, keys().skip(names.len() - 3));
        assert_eq!(ahead.len, 5);
        assert_eq!(
            ahead.next, 1,
            "the first request's steps are taken at the start"
        );
        assert_eq!(ahead.hash(3), None);
        assert!(ahead.hash(2).is_some());
        ahead.advance(1, &db);
        assert_eq!(ahead.next, 1, "another database's requests are not walked");
        for want in 2..=5 {
            ahead.advance(0, &db);
            assert_eq!(ahead.next, want);
        }
        ahead.advance(0, &db);
        assert_eq!(ahead.next, 5, "past its requests it does nothing");
        assert_eq!(ahead.hash(LOOKAHEAD_MAX + 2), None);
        ahead.start(0, &db, keys());
        assert_eq!(ahead.len, LOOKAHEAD_MAX);
    }

    #[test]
    fn a_buffer_is_asked_for_by_every_line_it_touches() {
        assert_eq!(lines(0, 0), 0);
        assert_eq!(lines(0, 56), 1);
        assert_eq!(lines(8, 56), 1);
        assert_eq!(lines(16, 56), 2);
        assert_eq!(lines(32, 96), 2);
        assert_eq!(lines(40, 96), 3);
        assert_eq!(lines(63, 2), 2);
        assert_eq!(lines(0, 1 << 20), MAX_LINES);
        assert_eq!(lines(usize::MAX - 10, 100), 1);
        // The loop asks for lines within the buffer only: the last one starts before its end.
        for at in 0..LINE {
            for len in 1..300 {
                let n = lines(at, len);
                assert!(n >= 1 && (n - 1) * LINE < len + at % LINE, "{at} {len}");
            }
        }
    }
}
