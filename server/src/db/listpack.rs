//! A small hash's fields and values in one allocation, as Redis keeps them in a listpack.
//!
//! A Redisson lock is a hash of one field (`<uuid>:<thread id>`) and a short counter; held as
//! a vector of `Bytes` pairs it cost a vector allocation, two 32-byte handles per element and,
//! worse, the request buffer each argument was sliced from, kept alive by the stored slices.
//! Here the elements are copied, each prefixed by its length in one byte, into one boxed slice
//! of exactly their size: `[len][field][len][value]...` in insertion order. A write builds the
//! slice anew (a handful of elements of at most [`MAX_ELEMENT`] bytes, as a listpack is
//! reallocated on every write), except a value replaced by one of the same length, which is
//! overwritten in place.

/// Longest field or value kept here (its length fits the one-byte prefix).
pub(crate) const MAX_ELEMENT: usize = u8::MAX as usize;

/// Field/value pairs in insertion order, in one allocation.
#[derive(Clone, Default)]
pub(crate) struct Listpack {
    buf: Box<[u8]>,
}

/// Where a pair lies in the buffer: its start, the start of its value's length byte, its end.
struct Place {
    start: usize,
    value: usize,
    end: usize,
}

/// The element whose length byte is at `at` in `buf`, and the offset after it.
fn element(buf: &[u8], at: usize) -> Option<(&[u8], usize)> {
    let len = usize::from(*buf.get(at)?);
    let end = at + 1 + len;
    Some((buf.get(at + 1..end)?, end))
}

/// Appends `bytes` with its length byte (the caller checked it fits).
fn push_element(out: &mut Vec<u8>, bytes: &[u8]) {
    out.push(u8::try_from(bytes.len()).unwrap_or(u8::MAX));
    out.extend_from_slice(bytes);
}

impl Listpack {
    /// Asks the caches for the buffer (a lock's takes one or two lines).
    pub(crate) fn prefetch(&self) {
        super::prefetch::prefetch_bytes(self.buf.as_ptr(), self.buf.len());
    }

    /// Whether a pair of `field` and `value` can be held.
    pub(crate) fn fits(field: &[u8], value: &[u8]) -> bool {
        field.len() <= MAX_ELEMENT && value.len() <= MAX_ELEMENT
    }

    /// Number of pairs.
    pub(crate) fn len(&self) -> usize {
        self.iter().count()
    }

    /// Bytes of the allocation.
    pub(crate) fn bytes(&self) -> usize {
        self.buf.len()
    }

    /// Pairs in insertion order.
    pub(crate) fn iter(&self) -> Iter<'_> {
        Iter {
            buf: &self.buf,
            at: 0,
        }
    }

    fn place(&self, field: &[u8]) -> Option<Place> {
        let mut at = 0;
        while at < self.buf.len() {
            let (f, value) = element(&self.buf, at)?;
            let (_, end) = element(&self.buf, value)?;
            if f == field {
                return Some(Place {
                    start: at,
                    value,
                    end,
                });
            }
            at = end;
        }
        None
    }

    /// The value of `field`.
    pub(crate) fn get(&self, field: &[u8]) -> Option<&[u8]> {
        let place = self.place(field)?;
        element(&self.buf, place.value).map(|(v, _)| v)
    }

    /// Sets `field` to `value` (a new field goes last); returns whether the field is new.
    /// Both must [`Listpack::fits`].
    pub(crate) fn insert(&mut self, field: &[u8], value: &[u8]) -> bool {
        let place = self.place(field);
        // A value replaced by one of the same length (a lock's counter, HSET of the same
        // field again) is overwritten where it lies.
        if let Some(Place { value: at, end, .. }) = place {
            if end - at - 1 == value.len() {
                if let Some(old) = self.buf.get_mut(at + 1..end) {
                    old.copy_from_slice(value);
                    return false;
                }
            }
        }
        let mut out = Vec::with_capacity(self.buf.len() + field.len() + value.len() + 2);
        let new = place.is_none();
        match place {
            Some(Place { value: at, end, .. }) => {
                out.extend_from_slice(self.buf.get(..at).unwrap_or_default());
                push_element(&mut out, value);
                out.extend_from_slice(self.buf.get(end..).unwrap_or_default());
            }
            None => {
                out.extend_from_slice(&self.buf);
                push_element(&mut out, field);
                push_element(&mut out, value);
            }
        }
        self.buf = out.into_boxed_slice();
        new
    }

    /// Removes `field`, keeping the order of the others; returns whether it was there.
    pub(crate) fn remove(&mut self, field: &[u8]) -> bool {
        let Some(Place { start, end, .. }) = self.place(field) else {
            return false;
        };
        let mut out = Vec::with_capacity(self.buf.len() - (end - start));
        out.extend_from_slice(self.buf.get(..start).unwrap_or_default());
        out.extend_from_slice(self.buf.get(end..).unwrap_or_default());
        self.buf = out.into_boxed_slice();
        true
    }
}

impl std::fmt::Debug for Listpack {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map()
            .entries(self.iter().map(|(k, v)| {
                (
                    bytes::Bytes::copy_from_slice(k),
                    bytes::Bytes::copy_from_slice(v),
                )
            }))
            .finish()
    }
}

/// The pairs of a [`Listpack`].
#[derive(Debug, Clone)]
pub(crate) struct Iter<'a> {
    buf: &'a [u8],
    at: usize,
}

impl<'a> Iterator for Iter<'a> {
    type Item = (&'a [u8], &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        let (field, value) = element(self.buf, self.at)?;
        let (value, end) = element(self.buf, value)?;
        self.at = end;
        Some((field, value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_replace_and_remove_keep_insertion_order_in_an_exact_allocation() {
        let mut lp = Listpack::default();
        assert!(lp.insert(b"a", b"1"));
        assert!(lp.insert(b"bb", b""));
        assert!(lp.insert(b"", b"x"));
        assert!(!lp.insert(b"a", b"longer value"));
        assert_eq!(lp.get(b"a"), Some(&b"longer value"[..]));
        assert_eq!(lp.get(b""), Some(&b"x"[..]));
        assert_eq!(lp.get(b"b"), None);
        let pairs: Vec<_> = lp.iter().collect();
        assert_eq!(
            pairs,
            [(&b"a"[..], &b"longer value"[..]), (b"bb", b""), (b"", b"x")]
        );
        // a=longer value, bb=(empty), (empty)=x: a length byte before each element.
        assert_eq!(lp.bytes(), (1 + 1) + (1 + 12) + (1 + 2) + 1 + 1 + (1 + 1));
        // Same length: overwritten in place, nothing else moves.
        assert!(!lp.insert(b"bb", b""));
        assert!(!lp.insert(b"", b"y"));
        assert!(!lp.insert(b"a", b"shorter valu"));
        assert_eq!(
            lp.iter().collect::<Vec<_>>(),
            [(&b"a"[..], &b"shorter valu"[..]), (b"bb", b""), (b"", b"y")]
        );
        assert_eq!(lp.bytes(), (1 + 1) + (1 + 12) + (1 + 2) + 1 + 1 + (1 + 1));
        assert!(lp.remove(b"bb") && !lp.remove(b"bb"));
        assert_eq!(
            lp.iter().map(|(f, _)| f).collect::<Vec<_>>(),
            [&b"a"[..], b""]
        );
        assert!(lp.remove(b"a") && lp.remove(b""));
        assert_eq!((lp.len(), lp.bytes()), (0, 0));
    }

    #[test]
    fn elements_up_to_the_length_byte_fit() {
        let long = vec![b'v'; MAX_ELEMENT];
        assert!(Listpack::fits(&long, &long));
        assert!(!Listpack::fits(b"f", &vec![b'v'; MAX_ELEMENT + 1]));
        let mut lp = Listpack::default();
        lp.insert(&long, &long);
        lp.insert(b"f", b"v");
        assert_eq!(lp.get(&long), Some(&long[..]));
        assert_eq!(lp.get(b"f"), Some(&b"v"[..]));
    }
}
