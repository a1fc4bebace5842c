//! LZF decompression (liblzf's `lzf_decompress`), for the compressed strings of RDB payloads.

/// Decompresses `input` into exactly `expected` bytes; `None` if the data is corrupt, refers
/// before the start of the output, or does not produce exactly `expected` bytes.
pub(crate) fn decompress(input: &[u8], expected: usize) -> Option<Vec<u8>> {
    // A byte of input yields at most 264 bytes of output (a back reference of the longest
    // length): a larger claim is corrupt, so it never sizes an allocation.
    if expected > input.len().saturating_mul(264) {
        return None;
    }
    let mut out: Vec<u8> = Vec::with_capacity(expected);
    let mut ip = 0usize;
    while ip < input.len() {
        let ctrl = usize::from(*input.get(ip)?);
        ip += 1;
        if ctrl < 32 {
            let run = ctrl + 1;
            let literal = input.get(ip..ip + run)?;
            if out.len() + run > expected {
                return None;
            }
            out.extend_from_slice(literal);
            ip += run;
        } else {
            let mut len = ctrl >> 5;
            if len == 7 {
                len += usize::from(*input.get(ip)?);
                ip += 1;
            }
            let low = usize::from(*input.get(ip)?);
            ip += 1;
            let back = ((ctrl & 0x1f) << 8) + low + 1;
            len += 2;
            let start = out.len().checked_sub(back)?;
            if out.len() + len > expected {
                return None;
            }
            for i in 0..len {
                let b = *out.get(start + i)?;
                out.push(b);
            }
        }
    }
    (out.len() == expected).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::decompress;

    #[test]
    fn literals_and_back_references() {
        // "abcabcabc": literal "abc", then a back reference of 6 bytes at distance 3.
        let input = [0x02, b'a', b'b', b'c', 0x80, 0x02];
        assert_eq!(decompress(&input, 9).as_deref(), Some(&b"abcabcabc"[..]));
        assert_eq!(decompress(&input, 8), None);
        assert_eq!(decompress(&[0x80, 0x05], 3), None);
        assert_eq!(decompress(&[0x05, b'a'], 6), None);
        assert_eq!(decompress(&[0x00, b'a'], usize::MAX), None);
    }
}
