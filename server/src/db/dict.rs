//! A chained hash table with Redis's dict semantics: a power-of-two bucket array, incremental
//! rehashing into a second table, and the reverse-binary cursor of Redis's `dictScan`.
//!
//! The keyspace and the large hashes, sets and sorted sets keep their elements here because
//! SCAN needs what an open-addressing table cannot give: an element's place is fixed by its
//! hash alone (bucket `hash & mask`, whatever else was inserted or removed), so a cursor over
//! buckets survives growing, shrinking and rehashing between calls. The cursor counts buckets
//! with its bits reversed; when the table doubles, bucket `b` splits into `b` and
//! `b + size`, which the reversed increment visits next to each other, so no bucket whose
//! elements were not returned yet is skipped (Redis's `dictScan` comment has the proof).
//! An element present for the whole iteration is returned at least once; some may come twice.
//!
//! Each element lives in its own node (the hash, the link and the value), so a table holds 8
//! bytes per bucket and no empty value slots, and a rehash relinks nodes without recomputing
//! hashes. Growing and shrinking never stop the world: like Redis, each write moves one
//! bucket of the old table into the new one ([`Dict::rehash`] moves more when the node is
//! idle), and lookups read both tables meanwhile.
//!
//! Hashes are given by the caller (the keyspace uses its own keyed SipHash per database);
//! [`Keyed`] elements of aggregates use [`hash_bytes`].

use super::prefetch::{prefetch, prefetch_bytes};
use crate::siphash::SipKey;
use rand::Rng;
use std::fmt;

/// Buckets of a new table (Redis's `DICT_HT_INITIAL_SIZE`).
const INITIAL_SIZE: usize = 4;
/// A table is shrunk once less than 1 in `MIN_FILL` buckets holds an element (Redis's
/// `HASHTABLE_MIN_FILL`, 10 %).
const MIN_FILL: usize = 10;
/// Empty buckets one rehash step may skip per bucket it moves (Redis's `empty_visits`).
const EMPTY_VISITS: usize = 10;
/// Elements [`Dict::random`] samples to pick one fairly (Redis's `GETFAIR_NUM_ENTRIES`).
const FAIR_SAMPLE: usize = 15;

type Link<T> = Option<Box<Node<T>>>;

/// Asks for every cache line of `node` (a node is not aligned to a line).
#[inline(always)]
fn prefetch_node<T>(node: &Node<T>) {
    prefetch_bytes(
        std::ptr::from_ref(node).cast(),
        std::mem::size_of::<Node<T>>(),
    );
}

// Clone only so that `vec![None; n]` can allocate a bucket array zeroed (calloc: the pages are
// mapped as they are first touched, not written up front, which took 20 ms for 2^20 buckets).
// `repr(C)`: the hash and link a lookup reads first share the cache line where the element
// starts (the compiler put them after a keyspace slot, a line away from its key).
#[derive(Clone)]
#[repr(C)]
struct Node<T> {
    hash: u64,
    next: Link<T>,
    value: T,
}

/// One bucket array.
struct Table<T> {
    /// Empty, or a power of two of chains.
    buckets: Box<[Link<T>]>,
    /// Elements in the chains.
    used: usize,
}

impl<T: Clone> Table<T> {
    fn with_buckets(n: usize) -> Self {
        Table {
            buckets: vec![None; n].into_boxed_slice(),
            used: 0,
        }
    }
}

impl<T> Table<T> {
    fn empty() -> Self {
        Table {
            buckets: Box::new([]),
            used: 0,
        }
    }

    fn mask(&self) -> usize {
        self.buckets.len().wrapping_sub(1)
    }

    /// The chain `hash` belongs to (the table must have buckets).
    fn chain(&self, hash: u64) -> &Link<T> {
        &self.buckets[hash as usize & self.mask()]
    }

    fn chain_mut(&mut self, hash: u64) -> &mut Link<T> {
        let mask = self.mask();
        &mut self.buckets[hash as usize & mask]
    }

    fn find(&self, hash: u64, eq: &mut impl FnMut(&T) -> bool) -> Option<&T> {
        if self.buckets.is_empty() {
            return None;
        }
        let mut link = self.chain(hash);
        while let Some(node) = link {
            if node.hash == hash && eq(&node.value) {
                return Some(&node.value);
            }
            link = &node.next;
        }
        None
    }

    fn find_mut(&mut self, hash: u64, eq: &mut impl FnMut(&T) -> bool) -> Option<&mut T> {
        if self.buckets.is_empty() {
            return None;
        }
        let mut link = self.chain_mut(hash);
        while let Some(node) = link {
            if node.hash == hash && eq(&node.value) {
                return Some(&mut node.value);
            }
            link = &mut node.next;
        }
        None
    }

    fn remove(&mut self, hash: u64, eq: &mut impl FnMut(&T) -> bool) -> Option<T> {
        if self.buckets.is_empty() {
            return None;
        }
        let mask = self.mask();
        let mut link = &mut self.buckets[hash as usize & mask];
        loop {
            let node = link.as_deref()?;
            if node.hash == hash && eq(&node.value) {
                let node = *link.take()?;
                *link = node.next;
                self.used -= 1;
                return Some(node.value);
            }
            link = &mut link.as_mut()?.next;
        }
    }

    /// The element count and the link holding the element of hash `hash` for which `eq`
    /// holds, or the empty link ending its chain (the table must have buckets).
    fn link(&mut self, hash: u64, eq: &mut impl FnMut(&T) -> bool) -> (&mut usize, &mut Link<T>) {
        let mask = self.mask();
        let mut link = &mut self.buckets[hash as usize & mask];
        while link
            .as_deref()
            .is_some_and(|n| !(n.hash == hash && eq(&n.value)))
        {
            if let Some(node) = link {
                link = &mut node.next;
            }
        }
        (&mut self.used, link)
    }

    /// Pushes a node at the head of its chain (the table must have buckets).
    fn push(&mut self, mut node: Box<Node<T>>) -> &mut T {
        self.used += 1;
        let link = self.chain_mut(node.hash);
        node.next = link.take();
        &mut link.insert(node).value
    }

    /// Visits the chain of bucket `index`.
    fn visit<'a>(&'a self, index: usize, f: &mut impl FnMut(&'a T)) {
        let mut link = &self.buckets[index & self.mask()];
        while let Some(node) = link {
            f(&node.value);
            link = &node.next;
        }
    }
}

impl<T> Drop for Table<T> {
    fn drop(&mut self) {
        // A table emptied by a rehash has nothing to unlink.
        if self.used == 0 {
            return;
        }
        // Unlink chains one node at a time: the default drop of a chain recurses per node.
        for head in self.buckets.iter_mut() {
            let mut link = head.take();
            while let Some(mut node) = link {
                link = node.next.take();
            }
        }
    }
}

/// A table being emptied into a new one (Redis's `ht_table[1]` and `rehashidx`).
struct Rehash<T> {
    to: Table<T>,
    /// Buckets of the old table below this one are empty (moved).
    index: usize,
}

/// A hash table of `T` with Redis's dict behaviour (module docs).
pub(crate) struct Dict<T> {
    table: Table<T>,
    rehash: Option<Box<Rehash<T>>>,
}

impl<T> Default for Dict<T> {
    fn default() -> Self {
        Dict {
            table: Table::empty(),
            rehash: None,
        }
    }
}

impl<T: Clone> Dict<T> {
    /// An empty table (no allocation until the first insert).
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// A table sized for `n` elements.
    pub(crate) fn with_capacity(n: usize) -> Self {
        let mut d = Self::new();
        if n > 0 {
            d.table = Table::with_buckets(n.next_power_of_two().max(INITIAL_SIZE));
        }
        d
    }

    /// Number of elements.
    pub(crate) fn len(&self) -> usize {
        self.table.used + self.rehash.as_ref().map_or(0, |r| r.to.used)
    }

    /// Whether there is no element.
    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Buckets allocated (both tables while rehashing).
    pub(crate) fn buckets(&self) -> usize {
        self.table.buckets.len() + self.rehash.as_ref().map_or(0, |r| r.to.buckets.len())
    }

    /// Whether elements are being moved into a new table.
    #[cfg(test)]
    pub(crate) fn is_rehashing(&self) -> bool {
        self.rehash.is_some()
    }

    /// The element of hash `hash` for which `eq` holds.
    pub(crate) fn find(&self, hash: u64, mut eq: impl FnMut(&T) -> bool) -> Option<&T> {
        if let Some(found) = self.table.find(hash, &mut eq) {
            return Some(found);
        }
        self.rehash.as_ref()?.to.find(hash, &mut eq)
    }

    /// First step of fetching `hash`'s element ahead of its lookup (see
    /// [`super::prefetch::Lookahead`]): asks for the bucket it lives in, in both tables while
    /// rehashing. Only asks: nothing waits for memory.
    pub(crate) fn prefetch_bucket(&self, hash: u64) {
        for table in self.tables() {
            if let Some(bucket) = table.buckets.get(hash as usize & table.mask()) {
                prefetch(std::ptr::from_ref(bucket).cast());
            }
        }
    }

    /// Second step, once the bucket had time to arrive: asks for the first node of `hash`'s
    /// chain.
    pub(crate) fn prefetch_head(&self, hash: u64) {
        for table in self.tables() {
            if let Some(Some(node)) = table.buckets.get(hash as usize & table.mask()) {
                prefetch_node(node);
            }
        }
    }

    /// Third step, once that node had time to arrive: hands it to `found` when it is `hash`'s
    /// element (to ask for what the element keeps out of its node), or else asks for the
    /// next link, a third of the elements sitting behind another at a load factor near 1.
    /// A longer chain is left to the lookup. Another element of the same 64-bit hash may
    /// stand for the one sought: a hint, not a lookup.
    pub(crate) fn prefetch_past_head(&self, hash: u64, mut found: impl FnMut(&T)) {
        for table in self.tables() {
            if let Some(Some(node)) = table.buckets.get(hash as usize & table.mask()) {
                if node.hash == hash {
                    found(&node.value);
                } else if let Some(next) = &node.next {
                    prefetch_node(next);
                }
            }
        }
    }

    /// The table, and the one being filled while rehashing.
    fn tables(&self) -> impl Iterator<Item = &Table<T>> {
        std::iter::once(&self.table).chain(self.rehash.as_ref().map(|r| &r.to))
    }

    /// The element of hash `hash` for which `eq` holds, to change in place (not its hash).
    pub(crate) fn find_mut(&mut self, hash: u64, mut eq: impl FnMut(&T) -> bool) -> Option<&mut T> {
        self.maintain();
        // Disjoint fields: the old table's borrow does not block the new one's.
        if let Some(found) = self.table.find_mut(hash, &mut eq) {
            return Some(found);
        }
        self.rehash.as_mut()?.to.find_mut(hash, &mut eq)
    }

    /// The element of hash `hash` for which `eq` holds, to read, change or remove, found in
    /// one walk of its chain.
    pub(crate) fn find_entry(
        &mut self,
        hash: u64,
        mut eq: impl FnMut(&T) -> bool,
    ) -> Option<OccupiedEntry<'_, T>> {
        self.maintain();
        let Dict { table, rehash } = self;
        if !table.buckets.is_empty() {
            let (used, link) = table.link(hash, &mut eq);
            if link.is_some() {
                return Some(OccupiedEntry { link, used });
            }
        }
        let (used, link) = rehash.as_mut()?.to.link(hash, &mut eq);
        link.is_some().then_some(OccupiedEntry { link, used })
    }

    /// The element of hash `hash` for which `eq` holds, or the place to insert one, found in
    /// one walk of its chain.
    pub(crate) fn entry(&mut self, hash: u64, mut eq: impl FnMut(&T) -> bool) -> Entry<'_, T> {
        self.maintain();
        self.expand_if_needed();
        let Dict { table, rehash } = self;
        // `expand_if_needed` gave the table buckets.
        let (used, link) = table.link(hash, &mut eq);
        if link.is_some() {
            return Entry::Occupied(OccupiedEntry { link, used });
        }
        let Some(r) = rehash.as_mut() else {
            // The end of the chain is where a new element goes.
            return Entry::Vacant(VacantEntry { link, used, hash });
        };
        // While rehashing, new elements go to the new table (as Redis adds to `ht_table[1]`).
        let (used, link) = r.to.link(hash, &mut eq);
        if link.is_some() {
            Entry::Occupied(OccupiedEntry { link, used })
        } else {
            Entry::Vacant(VacantEntry { link, used, hash })
        }
    }

    /// Inserts `value` of hash `hash`, which the caller knows is not there yet.
    pub(crate) fn insert_unique(&mut self, hash: u64, value: T) -> &mut T {
        self.maintain();
        self.expand_if_needed();
        let node = Box::new(Node {
            next: None,
            hash,
            value,
        });
        // While rehashing, new elements go to the new table (as Redis adds to `ht_table[1]`).
        match self.rehash.as_mut() {
            Some(r) => r.to.push(node),
            None => self.table.push(node),
        }
    }

    /// Removes and returns the element of hash `hash` for which `eq` holds.
    pub(crate) fn remove(&mut self, hash: u64, mut eq: impl FnMut(&T) -> bool) -> Option<T> {
        self.maintain();
        let removed = match self.table.remove(hash, &mut eq) {
            Some(v) => Some(v),
            None => self
                .rehash
                .as_mut()
                .and_then(|r| r.to.remove(hash, &mut eq)),
        };
        if removed.is_some() {
            self.finish_if_moved();
            self.shrink_if_needed();
        }
        removed
    }

    /// Removes the element of hash `hash` for which `eq` holds, returning what `take` takes
    /// out of it; the rest is dropped where it lies (no copy of the whole element).
    pub(crate) fn remove_with<R>(
        &mut self,
        hash: u64,
        eq: impl FnMut(&T) -> bool,
        take: impl FnOnce(&mut T) -> R,
    ) -> Option<R> {
        let mut entry = self.find_entry(hash, eq)?;
        let out = take(entry.get_mut());
        entry.discard();
        self.finish_if_moved();
        Some(out)
    }

    /// Every element, in bucket order (the new table last while rehashing).
    pub(crate) fn iter(&self) -> Iter<'_, T> {
        Iter {
            tables: [
                Some(&self.table.buckets[..]),
                self.rehash.as_ref().map(|r| &r.to.buckets[..]),
            ],
            table: 0,
            // The old table's buckets below the rehash index are empty (moved): starting at 0
            // walked up to a million of them before the first element, so sampling a large
            // set's first elements after each write (its memory estimate) took milliseconds
            // while it was being rehashed.
            bucket: self.rehash.as_ref().map_or(0, |r| r.index),
            node: None,
            left: self.len(),
        }
    }

    /// Calls `f` with every element and its hash.
    pub(crate) fn for_each_hashed(&self, mut f: impl FnMut(u64, &T)) {
        for t in [Some(&self.table), self.rehash.as_ref().map(|r| &r.to)]
            .into_iter()
            .flatten()
        {
            for head in t.buckets.iter() {
                let mut link = head.as_deref();
                while let Some(node) = link {
                    f(node.hash, &node.value);
                    link = node.next.as_deref();
                }
            }
        }
    }

    /// Removes every element into a vector.
    pub(crate) fn drain(&mut self) -> Vec<T> {
        let mut out = Vec::with_capacity(self.len());
        let old = std::mem::take(self);
        for mut table in [Some(old.table), old.rehash.map(|r| r.to)]
            .into_iter()
            .flatten()
        {
            for head in table.buckets.iter_mut() {
                let mut link = head.take();
                while let Some(node) = link {
                    let Node { next, value, .. } = *node;
                    out.push(value);
                    link = next;
                }
            }
        }
        out
    }

    /// One call of Redis's `dictScan`: visits the elements of the buckets `cursor` designates
    /// (in the smaller table, and every bucket they expand to in the larger one while
    /// rehashing) and returns the next cursor, 0 when the iteration is complete.
    pub(crate) fn scan<'a>(&'a self, cursor: u64, mut f: impl FnMut(&'a T)) -> u64 {
        if self.is_empty() {
            return 0;
        }
        let mut v = cursor;
        match &self.rehash {
            None => {
                let m0 = self.table.mask() as u64;
                self.table.visit(v as usize, &mut f);
                // Set the bits above the mask so the increment of the reversed cursor
                // carries into the masked bits only.
                v |= !m0;
                v = v.reverse_bits().wrapping_add(1).reverse_bits();
            }
            Some(r) => {
                let (small, large) = if self.table.buckets.len() <= r.to.buckets.len() {
                    (&self.table, &r.to)
                } else {
                    (&r.to, &self.table)
                };
                let m0 = small.mask() as u64;
                let m1 = large.mask() as u64;
                small.visit(v as usize, &mut f);
                // Then every bucket of the larger table that expands the smaller one's.
                loop {
                    large.visit(v as usize, &mut f);
                    v |= !m1;
                    v = v.reverse_bits().wrapping_add(1).reverse_bits();
                    if v & (m0 ^ m1) == 0 {
                        break;
                    }
                }
            }
        }
        v
    }

    /// A random element, picked as Redis's `dictGetFairRandomKey` picks one: up to
    /// [`FAIR_SAMPLE`] elements gathered from consecutive buckets from a random one
    /// (`dictGetSomeKeys`, whole chains, reservoir-sampled past the count), then one of those
    /// uniformly. A random bucket and then a random element of its chain (`dictGetRandomKey`,
    /// the fallback) makes an element sharing its bucket less likely than one alone: HRANDFIELD
    /// -1000 over 10 fields had a chi-square near 150 where Redis's suite requires under 40.
    pub(crate) fn random(&self, rng: &mut impl Rng) -> Option<&T> {
        let len = self.len();
        if len == 0 {
            return None;
        }
        let want = len.min(FAIR_SAMPLE);
        // Buckets below the rehash index of the old table are empty: walk the others, the old
        // table's then the new one's, as one run.
        let old_start = self.rehash.as_ref().map_or(0, |r| r.index);
        let old_len = self.table.buckets.len();
        let span = self.buckets().saturating_sub(old_start);
        let head = |i: usize| {
            let i = old_start + i;
            let link = if i < old_len {
                self.table.buckets.get(i)
            } else {
                self.rehash
                    .as_ref()
                    .and_then(|r| r.to.buckets.get(i - old_len))
            };
            link.and_then(|l| l.as_deref())
        };
        let mut sample: [Option<&T>; FAIR_SAMPLE] = [None; FAIR_SAMPLE];
        let mut stored = 0;
        let mut empty_run = 0;
        let mut i = if span > 0 {
            rng.random_range(0..span)
        } else {
            0
        };
        for _ in 0..want * 10 {
            if span == 0 {
                break;
            }
            match head(i) {
                None => {
                    empty_run += 1;
                    // A long run of empty buckets: look elsewhere, as Redis does, but only in
                    // a table this walk could not cover anyway. In a small one (a rehash's new
                    // table is mostly empty at first) the jump landed on buckets already
                    // walked and sampled their elements twice: HRANDFIELD's chi-square over
                    // 10 fields reached 150-800 in one layout in twenty.
                    if empty_run >= 5 && empty_run > want && span > want * 10 {
                        i = rng.random_range(0..span);
                        empty_run = 0;
                        continue;
                    }
                }
                Some(first) => {
                    empty_run = 0;
                    let mut link = Some(first);
                    while let Some(node) = link {
                        let slot = if stored < want {
                            Some(stored)
                        } else {
                            Some(rng.random_range(0..=stored)).filter(|&r| r < want)
                        };
                        if let Some(slot) = slot.and_then(|r| sample.get_mut(r)) {
                            *slot = Some(&node.value);
                        }
                        stored += 1;
                        link = node.next.as_deref();
                    }
                    if stored >= want {
                        break;
                    }
                }
            }
            i = (i + 1) % span;
        }
        if stored == 0 {
            return self.random_in_chain(rng);
        }
        sample
            .get(rng.random_range(0..stored.min(want)))
            .copied()
            .flatten()
    }

    /// A random non-empty bucket, then a random element of its chain (Redis's
    /// `dictGetRandomKey`).
    fn random_in_chain(&self, rng: &mut impl Rng) -> Option<&T> {
        let len = self.len();
        if len == 0 {
            return None;
        }
        let tables: [Option<&Table<T>>; 2] =
            [Some(&self.table), self.rehash.as_ref().map(|r| &r.to)];
        let old_start = self.rehash.as_ref().map_or(0, |r| r.index);
        let old_len = self.table.buckets.len();
        let total = self.buckets();
        // Tables are at least 10 % full outside a shrink, so few draws find a chain; the
        // bound keeps a sparse table (mid-shrink) from looping long.
        for _ in 0..1000 {
            let i = rng.random_range(old_start.min(total - 1)..total);
            let (table, index) = if i < old_len {
                (tables[0], i)
            } else {
                (tables[1], i - old_len)
            };
            let Some(head) = table
                .and_then(|t| t.buckets.get(index))
                .and_then(|l| l.as_deref())
            else {
                continue;
            };
            let mut chain_len = 0;
            let mut link = Some(head);
            while let Some(node) = link {
                chain_len += 1;
                link = node.next.as_deref();
            }
            let mut node = head;
            for _ in 0..rng.random_range(0..chain_len) {
                node = node.next.as_deref().unwrap_or(node);
            }
            return Some(&node.value);
        }
        self.iter().nth(rng.random_range(0..len))
    }

    /// Moves up to `n` buckets into the new table while rehashing; returns whether a rehash is
    /// still under way (Redis's `dictRehash`).
    pub(crate) fn rehash(&mut self, n: usize) -> bool {
        let Some(r) = self.rehash.as_mut() else {
            return false;
        };
        let old = &mut self.table;
        let mut empty_visits = n.saturating_mul(EMPTY_VISITS);
        for _ in 0..n {
            if old.used == 0 {
                break;
            }
            // Bounded: `used > 0` means a non-empty bucket at or after `index`.
            while old.buckets.get(r.index).is_some_and(Option::is_none) {
                r.index += 1;
                empty_visits = empty_visits.saturating_sub(1);
                if empty_visits == 0 {
                    return true;
                }
            }
            let Some(head) = old.buckets.get_mut(r.index) else {
                break;
            };
            let mut link = head.take();
            while let Some(mut node) = link {
                link = node.next.take();
                old.used -= 1;
                r.to.push(node);
            }
            r.index += 1;
        }
        self.finish_if_moved()
    }

    /// One step of rehashing, as every write of Redis's dict does; or, when not rehashing, the
    /// shrink a removal through an [`OccupiedEntry`] left for later.
    fn maintain(&mut self) {
        if self.rehash.is_some() {
            self.rehash(1);
        } else {
            self.shrink_if_needed();
        }
    }

    /// Ends the rehash once the old table is empty; returns whether one is still under way.
    fn finish_if_moved(&mut self) -> bool {
        match self.rehash.take() {
            Some(r) if self.table.used == 0 => {
                self.table = r.to;
                false
            }
            other => {
                self.rehash = other;
                self.rehash.is_some()
            }
        }
    }

    /// Starts moving into a table of `n` buckets.
    fn start_rehash(&mut self, n: usize) {
        if self.table.used == 0 {
            self.table = Table::with_buckets(n);
            return;
        }
        self.rehash = Some(Box::new(Rehash {
            to: Table::with_buckets(n),
            index: 0,
        }));
    }

    /// Grows once there are as many elements as buckets (Redis's `_dictExpandIfNeeded`).
    fn expand_if_needed(&mut self) {
        if self.rehash.is_some() {
            return;
        }
        let size = self.table.buckets.len();
        if size == 0 {
            self.table = Table::with_buckets(INITIAL_SIZE);
        } else if self.table.used >= size {
            self.start_rehash((self.table.used + 1).next_power_of_two());
        }
    }

    /// Shrinks once under 10 % full (Redis's `htNeedsResize` and `dictResize`).
    fn shrink_if_needed(&mut self) {
        if self.rehash.is_some() {
            return;
        }
        let size = self.table.buckets.len();
        if size > INITIAL_SIZE && self.table.used * MIN_FILL < size {
            let target = self.table.used.max(INITIAL_SIZE).next_power_of_two();
            if self.table.used == 0 {
                self.table = Table::empty();
            } else {
                self.start_rehash(target);
            }
        }
    }
}

/// The elements of a [`Dict`] ([`Dict::iter`]).
pub(crate) struct Iter<'a, T> {
    tables: [Option<&'a [Link<T>]>; 2],
    table: usize,
    bucket: usize,
    node: Option<&'a Node<T>>,
    left: usize,
}

impl<'a, T> Iterator for Iter<'a, T> {
    type Item = &'a T;

    fn next(&mut self) -> Option<&'a T> {
        loop {
            if let Some(node) = self.node {
                self.node = node.next.as_deref();
                self.left = self.left.saturating_sub(1);
                return Some(&node.value);
            }
            // Bounded: each round moves to the next bucket or table.
            let buckets = (*self.tables.get(self.table)?)?;
            match buckets.get(self.bucket) {
                Some(head) => {
                    self.node = head.as_deref();
                    self.bucket += 1;
                }
                None => {
                    self.table += 1;
                    self.bucket = 0;
                }
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl<T> fmt::Debug for Iter<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Iter").field("left", &self.left).finish()
    }
}

/// A found element ([`Dict::find_entry`], [`Dict::entry`]).
pub(crate) struct OccupiedEntry<'a, T> {
    /// The link holding the element's node.
    link: &'a mut Link<T>,
    /// Its table's element count.
    used: &'a mut usize,
}

impl<'a, T> OccupiedEntry<'a, T> {
    /// The element.
    pub(crate) fn get(&self) -> &T {
        match self.link.as_deref() {
            Some(node) => &node.value,
            None => unreachable!("an occupied entry's link holds a node"),
        }
    }

    /// The element, to change in place (not its hash).
    pub(crate) fn get_mut(&mut self) -> &mut T {
        match self.link.as_deref_mut() {
            Some(node) => &mut node.value,
            None => unreachable!("an occupied entry's link holds a node"),
        }
    }

    /// The element, for the table's borrow.
    pub(crate) fn into_mut(self) -> &'a mut T {
        match self.link.as_deref_mut() {
            Some(node) => &mut node.value,
            None => unreachable!("an occupied entry's link holds a node"),
        }
    }

    /// Removes and drops the element where it lies.
    pub(crate) fn discard(self) {
        if let Some(mut node) = self.link.take() {
            *self.link = node.next.take();
            *self.used -= 1;
        }
    }

    /// Removes the element (the table shrinks, if it should, on its next write).
    pub(crate) fn remove(self) -> T {
        match self.link.take() {
            Some(node) => {
                let Node { next, value, .. } = *node;
                *self.link = next;
                *self.used -= 1;
                value
            }
            None => unreachable!("an occupied entry's link holds a node"),
        }
    }
}

/// Where a new element goes ([`Dict::entry`]).
pub(crate) struct VacantEntry<'a, T> {
    link: &'a mut Link<T>,
    used: &'a mut usize,
    hash: u64,
}

impl<'a, T> VacantEntry<'a, T> {
    /// Inserts `value` (of the hash the entry was looked up with).
    pub(crate) fn insert(self, value: T) -> &'a mut T {
        *self.used += 1;
        let node = self.link.insert(Box::new(Node {
            next: None,
            hash: self.hash,
            value,
        }));
        &mut node.value
    }
}

/// An element found or the place for one ([`Dict::entry`]).
pub(crate) enum Entry<'a, T> {
    /// The element is there.
    Occupied(OccupiedEntry<'a, T>),
    /// It is not.
    Vacant(VacantEntry<'a, T>),
}

impl<T: Clone> Clone for Dict<T> {
    fn clone(&self) -> Self {
        if self.is_empty() {
            return Dict::new();
        }
        let mut out = Dict {
            table: Table::with_buckets(self.len().next_power_of_two().max(INITIAL_SIZE)),
            rehash: None,
        };
        for t in [Some(&self.table), self.rehash.as_ref().map(|r| &r.to)]
            .into_iter()
            .flatten()
        {
            for head in t.buckets.iter() {
                let mut link = head.as_deref();
                while let Some(node) = link {
                    out.table.push(Box::new(Node {
                        next: None,
                        hash: node.hash,
                        value: node.value.clone(),
                    }));
                    link = node.next.as_deref();
                }
            }
        }
        out
    }
}

impl<T: fmt::Debug + Clone> fmt::Debug for Dict<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// An element of an aggregate, found by its name (a set member, a hash field, a sorted-set
/// member).
pub(crate) trait Keyed {
    /// The name the element is found by.
    fn name(&self) -> &[u8];
}

impl Keyed for bytes::Bytes {
    fn name(&self) -> &[u8] {
        self
    }
}

impl<V> Keyed for (bytes::Bytes, V) {
    fn name(&self) -> &[u8] {
        &self.0
    }
}

/// The hash of an aggregate's element names: SipHash-1-2 under a key drawn once per process
/// (as Redis seeds its dict hash once at start), so a cursor stays valid for the process's
/// life and clients cannot aim for collisions.
#[inline]
pub(crate) fn hash_bytes(name: &[u8]) -> u64 {
    SipKey::process().hash(name)
}

impl<T: Keyed + Clone> Dict<T> {
    /// The element named `name`.
    pub(crate) fn get(&self, name: &[u8]) -> Option<&T> {
        self.find(hash_bytes(name), |e| e.name() == name)
    }

    /// The element named `name`, to change in place (not its name).
    #[cfg(test)]
    pub(crate) fn get_mut(&mut self, name: &[u8]) -> Option<&mut T> {
        self.find_mut(hash_bytes(name), |e| e.name() == name)
    }

    /// Whether an element is named `name`.
    pub(crate) fn contains(&self, name: &[u8]) -> bool {
        self.get(name).is_some()
    }

    /// Stores `element`, replacing the one of the same name; returns the replaced one.
    pub(crate) fn put(&mut self, element: T) -> Option<T> {
        let hash = hash_bytes(element.name());
        if let Some(slot) = self.find_mut(hash, |e| e.name() == element.name()) {
            return Some(std::mem::replace(slot, element));
        }
        self.insert_unique(hash, element);
        None
    }

    /// Removes and returns the element named `name`.
    pub(crate) fn take(&mut self, name: &[u8]) -> Option<T> {
        self.remove(hash_bytes(name), |e| e.name() == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use rand::SeedableRng;
    use std::collections::BTreeSet;

    fn b(s: String) -> Bytes {
        Bytes::from(s)
    }

    /// Runs a full scan of `d` calling `between` after every call; returns every name seen.
    fn full_scan(
        d: &mut Dict<Bytes>,
        mut between: impl FnMut(&mut Dict<Bytes>, usize),
    ) -> BTreeSet<Bytes> {
        let mut seen = BTreeSet::new();
        let mut cursor = 0;
        for round in 0..1_000_000 {
            cursor = d.scan(cursor, |e| {
                seen.insert(e.clone());
            });
            between(d, round);
            if cursor == 0 {
                return seen;
            }
        }
        panic!("scan did not end");
    }

    #[test]
    fn behaves_as_a_set_through_growth_and_shrinking() {
        let mut d: Dict<Bytes> = Dict::new();
        let mut want = BTreeSet::new();
        for i in 0..5000u32 {
            let k = b(format!("k{}", i % 3000));
            assert_eq!(d.put(k.clone()).is_none(), want.insert(k));
            if i % 3 == 0 {
                let gone = b(format!("k{}", (i * 7) % 3000));
                assert_eq!(d.take(&gone).is_some(), want.remove(&gone));
            }
            assert_eq!(d.len(), want.len());
        }
        let got: BTreeSet<Bytes> = d.iter().cloned().collect();
        assert_eq!(got, want);
        for k in &want {
            assert!(d.contains(k));
        }
        for k in want.clone() {
            assert_eq!(d.take(&k), Some(k));
        }
        assert!(d.is_empty() && d.iter().next().is_none());
        assert!(d.buckets() <= INITIAL_SIZE);
    }

    #[test]
    fn iteration_during_a_rehash_sees_every_element_once_from_past_the_moved_buckets() {
        let mut d: Dict<Bytes> = Dict::new();
        for i in 0..1024 {
            d.put(b(format!("k{i}")));
        }
        d.put(b("one more".into()));
        let want: BTreeSet<Bytes> = d.iter().cloned().collect();
        assert_eq!(want.len(), 1025);
        // Part of the old table moved: its first buckets are empty, and the iterator
        // starts past them.
        while d.rehash(1) {
            let index = d.rehash.as_ref().map_or(0, |r| r.index);
            assert!(d.table.buckets[..index].iter().all(Option::is_none));
            assert_eq!(d.iter().bucket, index);
            let seen: Vec<Bytes> = d.iter().cloned().collect();
            assert_eq!(seen.len(), 1025);
            assert_eq!(seen.into_iter().collect::<BTreeSet<_>>(), want);
            if index > 512 {
                break;
            }
        }
    }

    #[test]
    fn prefetch_steps_hand_over_the_heads_of_chains_and_nothing_else() {
        let mut d: Dict<Bytes> = Dict::new();
        for i in 0..1024 {
            d.put(b(format!("k{i}")));
        }
        // Mid-rehash included: both tables are looked at.
        d.put(b("one more".into()));
        for rehashing in [true, false] {
            assert_eq!(d.is_rehashing(), rehashing);
            let mut found_any = 0;
            for name in d.iter().cloned().collect::<Vec<_>>() {
                let hash = hash_bytes(&name);
                d.prefetch_bucket(hash);
                d.prefetch_head(hash);
                let mut found = Vec::new();
                d.prefetch_past_head(hash, |e| found.push(e.clone()));
                // Only the element sought, and only at the head of its chain in a table.
                assert!(found.len() <= 1, "{found:?}");
                if let Some(e) = found.first() {
                    assert_eq!(e, &name);
                    found_any += 1;
                }
            }
            // Most elements are at the head of their chain at a load factor of 1.
            assert!(found_any > d.len() / 2, "{found_any} of {}", d.len());
            // Absent hashes and an empty table find nothing.
            let mut none = 0;
            d.prefetch_past_head(hash_bytes(b"absent"), |_| none += 1);
            Dict::<Bytes>::new().prefetch_past_head(1, |_| none += 1);
            Dict::<Bytes>::new().prefetch_head(1);
            Dict::<Bytes>::new().prefetch_bucket(1);
            assert_eq!(none, 0);
            while d.rehash(100) {}
        }
    }

    #[test]
    fn rehash_moves_everything_and_ends() {
        let mut d: Dict<Bytes> = Dict::new();
        for i in 0..1024 {
            d.put(b(format!("k{i}")));
        }
        // 1024 elements in 1024 buckets: the next insert starts a rehash to 2048.
        d.put(b("one more".into()));
        assert!(d.is_rehashing());
        assert_eq!(d.len(), 1025);
        let mut rounds = 0;
        while d.rehash(100) {
            rounds += 1;
            assert!(rounds < 100);
        }
        assert!(!d.is_rehashing());
        assert_eq!((d.len(), d.buckets()), (1025, 2048));
        assert!(d.contains(b"k77") && d.contains(b"one more"));
    }

    #[test]
    fn scan_returns_every_element_once_on_a_stable_table() {
        let mut d: Dict<Bytes> = Dict::new();
        for i in 0..1000 {
            d.put(b(format!("k{i}")));
        }
        let mut count = 0;
        let mut cursor = 0;
        loop {
            cursor = d.scan(cursor, |_| count += 1);
            if cursor == 0 {
                break;
            }
        }
        assert_eq!(count, 1000);
    }

    /// Redis's guarantee: an element present from the start to the end of an iteration is
    /// returned, while the table grows, shrinks and rehashes between calls.
    #[test]
    fn scan_keeps_stable_elements_through_growth_shrinking_and_rehashing() {
        for (stable_n, churn) in [(300usize, 40usize), (2000, 7), (50, 500)] {
            let mut d: Dict<Bytes> = Dict::new();
            let stable: Vec<Bytes> = (0..stable_n).map(|i| b(format!("s{i}"))).collect();
            for s in &stable {
                d.put(s.clone());
            }
            let mut buckets_seen = BTreeSet::new();
            let mut rehashing_seen = false;
            let seen = full_scan(&mut d, |d, round| {
                // Grow for a while, then shrink back, several times over.
                let phase = (round / 20) % 2 == 0;
                for j in 0..churn {
                    let k = b(format!("c{round}-{j}"));
                    if phase {
                        d.put(k);
                    } else {
                        let old = b(format!("c{}-{j}", round - 20));
                        d.take(&old);
                    }
                }
                buckets_seen.insert(d.buckets());
                rehashing_seen |= d.is_rehashing();
            });
            for s in &stable {
                assert!(seen.contains(s), "{s:?} missed ({stable_n}, {churn})");
            }
            assert!(buckets_seen.len() > 2 && rehashing_seen, "{buckets_seen:?}");
        }
    }

    #[test]
    fn scan_keeps_stable_elements_when_emptied_around_them() {
        let mut d: Dict<Bytes> = Dict::new();
        for i in 0..20_000 {
            d.put(b(format!("x{i}")));
        }
        let stable: Vec<Bytes> = (0..10).map(|i| b(format!("s{i}"))).collect();
        for s in &stable {
            d.put(s.clone());
        }
        // Remove the others a few thousand at a time: the table shrinks several times.
        let seen = full_scan(&mut d, |d, round| {
            for i in round * 3000..(round + 1) * 3000 {
                d.take(format!("x{i}").as_bytes());
            }
        });
        for s in &stable {
            assert!(seen.contains(s), "{s:?} missed");
        }
        assert!(d.buckets() <= 64, "{}", d.buckets());
    }

    #[test]
    fn scan_of_an_empty_table_ends_at_once() {
        let d: Dict<Bytes> = Dict::new();
        assert_eq!(d.scan(12345, |_| panic!("no element")), 0);
    }

    #[test]
    fn random_finds_elements_of_both_tables_and_clone_keeps_them() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let mut d: Dict<Bytes> = Dict::new();
        assert!(d.random(&mut rng).is_none());
        for i in 0..1024 {
            d.put(b(format!("k{i}")));
        }
        d.put(b("new".into()));
        assert!(d.is_rehashing());
        let picked: BTreeSet<Bytes> = (0..5000)
            .filter_map(|_| d.random(&mut rng).cloned())
            .collect();
        assert!(picked.len() > 900, "{}", picked.len());
        let copy = d.clone();
        assert_eq!(copy.len(), d.len());
        let a: BTreeSet<&Bytes> = copy.iter().collect();
        let b: BTreeSet<&Bytes> = d.iter().collect();
        assert_eq!(a, b);
        let mut drained = d.drain();
        drained.sort();
        assert_eq!(drained.len(), 1025);
        assert!(d.is_empty());
    }

    /// Redis's suite draws 1000 fields of a 10-field hash and wants a chi-square under 40
    /// (df 9, p = 0.00001). Up to [`FAIR_SAMPLE`] elements the sample holds them all, so the
    /// pick is exactly uniform; 10 000 draws per element leave no room for a chain bias.
    #[test]
    fn random_picks_elements_uniformly_whatever_their_chains() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(11);
        for n in [2usize, 10, FAIR_SAMPLE] {
            let mut d: Dict<Bytes> = Dict::new();
            for i in 0..n {
                d.put(b(format!("f{i}")));
            }
            let draws = 10_000 * n;
            let mut counts = std::collections::HashMap::new();
            for _ in 0..draws {
                if let Some(f) = d.random(&mut rng) {
                    *counts.entry(f.clone()).or_insert(0usize) += 1;
                }
            }
            assert_eq!(counts.len(), n);
            let expected = (draws / n) as f64;
            let chi: f64 = counts
                .values()
                .map(|&c| (c as f64 - expected).powi(2) / expected)
                .sum();
            // df = n - 1 <= 14: 40 is beyond the 0.9999 quantile.
            assert!(chi < 40.0, "{n} elements: chi-square {chi}");
        }
    }

    #[test]
    fn random_stays_fair_in_many_layouts_mid_rehash_included() {
        // The layout depends on the process's hash key: 100 sets of names give 100 layouts,
        // most of them in the middle of the rehash from 8 to 16 buckets, whose new table is
        // mostly empty.
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let mut mid_rehash = 0;
        for salt in 0..100 {
            let n = 10;
            let mut d: Dict<Bytes> = Dict::new();
            for i in 0..n {
                d.put(b(format!("f{i}_{salt}")));
            }
            mid_rehash += usize::from(d.is_rehashing());
            let draws = 10_000;
            let mut counts = std::collections::HashMap::new();
            for _ in 0..draws {
                if let Some(f) = d.random(&mut rng) {
                    *counts.entry(f.clone()).or_insert(0usize) += 1;
                }
            }
            assert_eq!(counts.len(), n, "layout {salt}");
            let expected = (draws / n) as f64;
            let chi: f64 = counts
                .values()
                .map(|&c| (c as f64 - expected).powi(2) / expected)
                .sum();
            // df = 9: 50 is beyond the 0.9999999 quantile.
            assert!(chi < 50.0, "layout {salt}: chi-square {chi}");
        }
        assert!(mid_rehash > 10, "{mid_rehash} layouts mid-rehash");
    }

    #[test]
    fn put_replaces_and_get_mut_changes_in_place() {
        let mut d: Dict<(Bytes, u32)> = Dict::new();
        assert_eq!(d.put((b("a".into()), 1)), None);
        assert_eq!(d.put((b("a".into()), 2)), Some((b("a".into()), 1)));
        if let Some(e) = d.get_mut(b"a") {
            e.1 = 3;
        }
        assert_eq!(d.get(b"a").map(|e| e.1), Some(3));
        assert_eq!(d.len(), 1);
        match d.entry(hash_bytes(b"b"), |e| e.0 == "b") {
            Entry::Vacant(v) => assert_eq!(v.insert((b("b".into()), 9)).1, 9),
            Entry::Occupied(_) => panic!("b is new"),
        }
        match d.entry(hash_bytes(b"b"), |e| e.0 == "b") {
            Entry::Occupied(o) => assert_eq!(o.get().1, 9),
            Entry::Vacant(_) => panic!("b is there"),
        }
        let removed = d
            .find_entry(hash_bytes(b"b"), |e| e.0 == "b")
            .map(|o| o.remove());
        assert_eq!(removed.map(|e| e.1), Some(9));
        assert_eq!(d.len(), 1);
    }
}
