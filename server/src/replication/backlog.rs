//! The replication backlog: the last `repl-backlog-size` bytes of the stream, kept so that a
//! replica that lost its link can continue from its offset (`PSYNC` answered `+CONTINUE`)
//! instead of loading the whole dataset again.
//!
//! Offsets are Redis's: the stream's bytes are numbered from 1, `master_repl_offset` is the
//! number of the last byte written, and a `PSYNC` names the first byte the replica lacks.

use std::collections::VecDeque;

/// The tail of the stream.
#[derive(Debug)]
pub(crate) struct Backlog {
    bytes: VecDeque<u8>,
    /// The offset of `bytes[0]` (Redis's `repl_backlog_first_byte_offset`).
    first: u64,
    /// Most bytes kept.
    size: usize,
}

impl Backlog {
    /// An empty backlog of a stream whose last byte is `offset`.
    pub(crate) fn new(offset: u64, size: usize) -> Self {
        Backlog {
            bytes: VecDeque::new(),
            first: offset + 1,
            size: size.max(1),
        }
    }

    /// The offset of the first byte kept.
    pub(crate) fn first_byte_offset(&self) -> u64 {
        self.first
    }

    /// Bytes kept (Redis's `repl_backlog_histlen`).
    pub(crate) fn histlen(&self) -> u64 {
        self.bytes.len() as u64
    }

    /// Appends the stream's next bytes, dropping the oldest past `size` (the current
    /// `repl-backlog-size`).
    pub(crate) fn append(&mut self, data: &[u8], size: usize) {
        self.size = size.max(1);
        if data.len() >= self.size {
            self.first += (self.bytes.len() + data.len() - self.size) as u64;
            self.bytes.clear();
            self.bytes
                .extend(data.get(data.len() - self.size..).unwrap_or_default());
            return;
        }
        self.bytes.extend(data);
        let excess = self.bytes.len().saturating_sub(self.size);
        if excess > 0 {
            self.bytes.drain(..excess);
            self.first += excess as u64;
        }
    }

    /// The stream from byte `from` (a `PSYNC` offset) to the end, if the backlog still holds
    /// it (`from` one past the end gives nothing to send, which still continues).
    pub(crate) fn since(&self, from: u64) -> Option<Vec<u8>> {
        let skip = from.checked_sub(self.first)?;
        let skip = usize::try_from(skip)
            .ok()
            .filter(|s| *s <= self.bytes.len())?;
        Some(self.bytes.range(skip..).copied().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_last_size_bytes_and_serves_offsets_inside_them() {
        // The stream's last byte is 10 when the backlog starts.
        let mut b = Backlog::new(10, 8);
        assert_eq!(b.first_byte_offset(), 11);
        assert_eq!(b.since(11), Some(vec![]));
        b.append(b"abcde", 8);
        assert_eq!(b.since(11), Some(b"abcde".to_vec()));
        assert_eq!(b.since(13), Some(b"cde".to_vec()));
        assert_eq!(b.since(16), Some(vec![]));
        assert_eq!(b.since(17), None);
        assert_eq!(b.since(10), None);
        b.append(b"fghij", 8);
        // 15 bytes' offsets 11..=20 written, the last 8 (13..=20) kept.
        assert_eq!(b.first_byte_offset(), 13);
        assert_eq!(b.histlen(), 8);
        assert_eq!(b.since(12), None);
        assert_eq!(b.since(13), Some(b"cdefghij".to_vec()));
        b.append(b"0123456789", 8);
        assert_eq!(b.first_byte_offset(), 23);
        assert_eq!(b.since(23), Some(b"23456789".to_vec()));
        // A smaller size applies at the next append.
        b.append(b"x", 4);
        assert_eq!(b.since(b.first_byte_offset()), Some(b"789x".to_vec()));
    }
}
