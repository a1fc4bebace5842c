//! Small string values in one allocation with their reference count.
//!
//! A value arrives as a slice of its request's arguments, whose reference count lives in a
//! separate allocation: reading it back (`GET` clones it into the reply) then misses twice,
//! on the count and on the bytes, and the whole request stays allocated for a 3-byte value.
//! Stored, a value of up to [`SMALL_MAX`] bytes is copied into an allocation of its own that
//! holds the count next to the bytes, as Redis's embstr objects hold the header next to the
//! string.

use bytes::Bytes;

/// Longest value [`compact`] copies (a 64-byte allocation with the count and length).
pub(crate) const SMALL_MAX: usize = 55;

/// Up to `N` bytes and their length, the owner of a compact `Bytes`.
struct Small<const N: usize> {
    len: u8,
    buf: [u8; N],
}

impl<const N: usize> AsRef<[u8]> for Small<N> {
    fn as_ref(&self) -> &[u8] {
        self.buf.get(..usize::from(self.len)).unwrap_or(&self.buf)
    }
}

fn own<const N: usize>(bytes: &[u8]) -> Option<Bytes> {
    let len = u8::try_from(bytes.len()).ok()?;
    let mut buf = [0; N];
    buf.get_mut(..bytes.len())?.copy_from_slice(bytes);
    Some(Bytes::from_owner(Small { len, buf }))
}

/// `value` in an allocation of its own with its reference count (24, 40 or 64 bytes) when
/// it is at most [`SMALL_MAX`] bytes long; unchanged otherwise.
pub(crate) fn compact(value: Bytes) -> Bytes {
    let small = match value.len() {
        0 => return Bytes::new(),
        1..=15 => own::<15>(&value),
        16..=31 => own::<31>(&value),
        32..=SMALL_MAX => own::<SMALL_MAX>(&value),
        _ => None,
    };
    small.unwrap_or(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compact_values_read_back_unchanged_at_every_size() {
        for len in [0, 1, 15, 16, 31, 32, SMALL_MAX, SMALL_MAX + 1, 1000] {
            let request = Bytes::from(vec![b'x'; len + 10]);
            let value = request.slice(5..5 + len);
            let stored = compact(value.clone());
            assert_eq!(stored, value);
            assert_eq!(stored.clone(), value);
            assert_eq!(Vec::from(stored), value.to_vec());
        }
    }
}
