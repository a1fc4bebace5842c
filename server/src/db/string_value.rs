//! The value of a string key: up to [`INLINE`] bytes inside the keyspace's node, longer ones
//! shared (`Bytes`; up to [`super::small::SMALL_MAX`] bytes copied into an allocation of their
//! own by [`super::small::compact`]).
//!
//! Most values are short (counters, tokens, flags). Inline, they cost no allocation of their
//! own, and a GET reads them on the node's cache lines it loaded for the key; it copies them
//! into its reply.

use super::small;
use bytes::{Bytes, BytesMut};
use std::fmt;
use std::ops::Deref;

/// Longest value kept inline (with its length byte, as large as a `Bytes`).
pub(crate) const INLINE: usize = 23;

/// A string value as the keyspace stores it.
#[derive(Clone)]
pub(crate) enum StringValue {
    /// Up to [`INLINE`] bytes.
    Inline {
        /// Bytes used in `buf`.
        len: u8,
        /// The value, then unused bytes.
        buf: [u8; INLINE],
    },
    /// A longer value.
    Shared(Bytes),
}

impl StringValue {
    /// Asks the caches for a long value's bytes (a short one is inline, in the node).
    pub(crate) fn prefetch(&self) {
        if let StringValue::Shared(bytes) = self {
            super::prefetch::prefetch_bytes(bytes.as_ptr(), bytes.len());
        }
    }

    /// The empty string.
    pub(crate) const EMPTY: StringValue = StringValue::Inline {
        len: 0,
        buf: [0; INLINE],
    };

    /// A copy of `bytes` when short enough to be inline.
    fn inline(bytes: &[u8]) -> Option<StringValue> {
        let len = u8::try_from(bytes.len()).ok()?;
        let mut buf = [0; INLINE];
        buf.get_mut(..bytes.len())?.copy_from_slice(bytes);
        Some(StringValue::Inline { len, buf })
    }

    /// A copy of `bytes` (inline when short).
    pub(crate) fn from_slice(bytes: &[u8]) -> StringValue {
        Self::inline(bytes)
            .unwrap_or_else(|| StringValue::Shared(small::compact(Bytes::copy_from_slice(bytes))))
    }

    /// The value's bytes.
    pub(crate) fn as_bytes(&self) -> &[u8] {
        match self {
            StringValue::Inline { len, buf } => buf.get(..usize::from(*len)).unwrap_or(buf),
            StringValue::Shared(b) => b,
        }
    }

    /// The value as `BytesMut`, to change: the shared bytes themselves when nothing else
    /// holds them (a large bitmap is not copied per bit), a copy otherwise.
    pub(crate) fn into_mut(self) -> BytesMut {
        match self {
            StringValue::Shared(b) => b.try_into_mut().unwrap_or_else(|b| BytesMut::from(&b[..])),
            inline => BytesMut::from(inline.as_bytes()),
        }
    }

    /// The value as `Bytes` (a copy of an inline value).
    pub(crate) fn to_bytes(&self) -> Bytes {
        match self {
            StringValue::Inline { .. } => Bytes::copy_from_slice(self.as_bytes()),
            StringValue::Shared(b) => b.clone(),
        }
    }
}

impl From<Bytes> for StringValue {
    /// Inline when short, compacted or shared otherwise.
    fn from(bytes: Bytes) -> StringValue {
        Self::inline(&bytes).unwrap_or_else(|| StringValue::Shared(small::compact(bytes)))
    }
}

impl From<&Bytes> for StringValue {
    /// A copy when short (no reference taken), compacted or shared otherwise.
    fn from(bytes: &Bytes) -> StringValue {
        Self::inline(bytes).unwrap_or_else(|| StringValue::Shared(small::compact(bytes.clone())))
    }
}

impl From<Vec<u8>> for StringValue {
    fn from(bytes: Vec<u8>) -> StringValue {
        Bytes::from(bytes).into()
    }
}

impl Default for StringValue {
    fn default() -> Self {
        Self::EMPTY
    }
}

impl Deref for StringValue {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl PartialEq for StringValue {
    fn eq(&self, other: &Self) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl fmt::Debug for StringValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&Bytes::copy_from_slice(self.as_bytes()), f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_values_are_inline_longer_ones_shared_and_all_read_back() {
        for len in [0, 1, INLINE, INLINE + 1, small::SMALL_MAX + 1, 300] {
            let b = Bytes::from(vec![b'v'; len]);
            let v = StringValue::from(b.clone());
            assert_eq!(matches!(v, StringValue::Inline { .. }), len <= INLINE);
            assert_eq!(v.as_bytes(), &b[..]);
            assert_eq!(v.to_bytes(), b);
        }
        // As large as the `Bytes` it replaces.
        assert_eq!(
            std::mem::size_of::<StringValue>(),
            std::mem::size_of::<Bytes>()
        );
    }
}
