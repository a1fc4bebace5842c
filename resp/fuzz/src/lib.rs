//! What the fuzz targets check, kept out of the `fuzz_target!` bodies so that
//! `resp/tests/fuzz_corpus.rs` compiles this same file on stable and runs the seed corpus
//! through it in CI.
//!
//! Beyond "no panic, no hang" (libFuzzer reports both), each input is decoded whole, one byte
//! at a time and in chunks, and the three runs must agree; and whatever decodes must encode to
//! bytes that decode to the same thing again.

use bytes::BytesMut;
use locksmith_resp::{
    encode_to_vec, DecodeError, Frame, FrameDecoder, RequestDecoder, Version, PROTO_INLINE_MAX_SIZE,
};

/// Everything a decoder produced from one input: the items in order, then the error that
/// stopped it, if any.
#[derive(Debug)]
pub struct Outcome<T> {
    /// Frames or requests, in order.
    pub items: Vec<T>,
    /// The error that ended decoding; `None` if the input ran out first.
    pub error: Option<DecodeError>,
}

/// Feeds `data` to `decode` in pieces of `chunk` bytes, decoding everything available after
/// each piece.
///
/// # Panics
///
/// If the decoder returns an item without consuming a byte (the caller would loop forever).
pub fn run<T>(
    data: &[u8],
    chunk: usize,
    mut decode: impl FnMut(&mut BytesMut) -> Result<Option<T>, DecodeError>,
) -> Outcome<T> {
    let mut buf = BytesMut::new();
    let mut items = Vec::new();
    for piece in data.chunks(chunk.max(1)) {
        buf.extend_from_slice(piece);
        loop {
            let before = buf.len();
            match decode(&mut buf) {
                Ok(Some(item)) => {
                    assert!(buf.len() < before, "decoder returned an item from no bytes");
                    items.push(item);
                }
                Ok(None) => break,
                Err(error) => {
                    return Outcome {
                        items,
                        error: Some(error),
                    }
                }
            }
        }
    }
    Outcome { items, error: None }
}

/// Chunk sizes to try besides "whole" and "one byte at a time", picked by the input itself.
fn chunk_size(data: &[u8]) -> usize {
    1 + usize::from(data.first().copied().unwrap_or(0) % 64)
}

/// Debug text stands in for equality: it is bit-exact for doubles and treats NaN as NaN.
fn same<T: std::fmt::Debug>(a: &Outcome<T>, b: &Outcome<T>) -> bool {
    format!("{a:?}") == format!("{b:?}")
}

/// The `decode` target: [`FrameDecoder`] on raw bytes.
///
/// # Panics
///
/// If whole, bytewise and chunked decoding disagree, or a decoded frame does not survive
/// encode → decode → encode for RESP2 and RESP3 unchanged.
pub fn fuzz_frames(data: &[u8]) {
    let decode = |chunk| {
        let mut decoder = FrameDecoder::default();
        run(data, chunk, |buf| decoder.decode(buf))
    };
    let whole = decode(data.len());
    for chunk in [1, chunk_size(data)] {
        let split = decode(chunk);
        assert!(
            same(&whole, &split),
            "chunk {chunk}: {whole:?} vs {split:?}"
        );
    }
    for frame in &whole.items {
        for version in [Version::Resp2, Version::Resp3] {
            let bytes = encode_to_vec(frame, version);
            let mut buf = BytesMut::from(&bytes[..]);
            let again = FrameDecoder::default().decode(&mut buf);
            let Ok(Some(again)) = again else {
                panic!("{version:?} encoding of {frame:?} does not decode: {again:?}");
            };
            assert!(
                buf.is_empty(),
                "{version:?} encoding of {frame:?} has extra bytes"
            );
            assert_eq!(
                encode_to_vec(&again, version),
                bytes,
                "{version:?}: {frame:?} decoded as {again:?}"
            );
        }
    }
}

/// The `decode_request` target: [`RequestDecoder`] on raw bytes, as an authenticated and as
/// an unauthenticated client.
///
/// # Panics
///
/// If whole, bytewise and chunked decoding disagree (on inputs short enough that Redis's
/// "too big" limits cannot depend on how the bytes arrived), or a request re-encoded as a
/// multibulk does not decode to the same arguments.
pub fn fuzz_requests(data: &[u8]) {
    for auth_required in [false, true] {
        let decode = |chunk| {
            let mut decoder = RequestDecoder::default();
            decoder.set_auth_required(auth_required);
            run(data, chunk, |buf| decoder.decode(buf))
        };
        let whole = decode(data.len());
        if data.len() <= PROTO_INLINE_MAX_SIZE {
            for chunk in [1, chunk_size(data)] {
                let split = decode(chunk);
                assert!(
                    same(&whole, &split),
                    "chunk {chunk}: {whole:?} vs {split:?}"
                );
            }
        }
        if auth_required {
            continue;
        }
        for args in &whole.items {
            assert!(!args.is_empty(), "empty requests are skipped");
            let bytes = encode_to_vec(&Frame::bulk_array(args.iter().cloned()), Version::Resp2);
            let mut buf = BytesMut::from(&bytes[..]);
            let again = RequestDecoder::default().decode(&mut buf);
            assert_eq!(again.as_ref(), Ok(&Some(args.clone())));
            assert!(buf.is_empty());
        }
    }
}
