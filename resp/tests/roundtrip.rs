//! Parser properties (model: redis-rs `redis/tests/parser.rs`): any frame the encoder writes
//! decodes back to itself however the bytes are split, RESP3 frames written for a RESP2 peer
//! decode to their downgrade, requests survive the request parser, and arbitrary bytes end in
//! `Ok`/`Err` without panicking or looping.

use bytes::{Bytes, BytesMut};
use locksmith_resp::{
    encode, encode_to_vec, encoded_len, format_double, Frame, FrameDecoder, RequestDecoder, Version,
};
use proptest::prelude::*;

/// Few cases per property: the suite runs in debug mode on a 2-core CI machine.
fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 256,
        ..ProptestConfig::default()
    }
}

fn any_bytes(max: usize) -> impl Strategy<Value = Bytes> {
    prop::collection::vec(any::<u8>(), 0..max).prop_map(Bytes::from)
}

/// Payload of a one-line frame: the encoder replaces CR and LF there, so they cannot round-trip.
fn line_bytes() -> impl Strategy<Value = Bytes> {
    prop::collection::vec(
        any::<u8>().prop_filter("no CR/LF", |b| *b != b'\r' && *b != b'\n'),
        0..16,
    )
    .prop_map(Bytes::from)
}

fn big_number() -> impl Strategy<Value = Bytes> {
    (any::<bool>(), "[0-9]{1,40}").prop_map(|(negative, digits)| {
        Bytes::from(format!("{}{digits}", if negative { "-" } else { "" }))
    })
}

fn resp2_leaf() -> impl Strategy<Value = Frame> {
    prop_oneof![
        line_bytes().prop_map(Frame::Simple),
        line_bytes().prop_map(Frame::Error),
        any::<i64>().prop_map(Frame::Integer),
        any_bytes(32).prop_map(Frame::Bulk),
        Just(Frame::Null),
        Just(Frame::NullArray),
    ]
}

/// Frames a RESP2 peer can receive unchanged.
fn resp2_frame() -> impl Strategy<Value = Frame> {
    resp2_leaf().prop_recursive(4, 48, 5, |inner| {
        prop::collection::vec(inner, 0..5).prop_map(Frame::Array)
    })
}

fn finite_double() -> impl Strategy<Value = f64> {
    prop_oneof![
        any::<f64>().prop_filter("finite", |d| d.is_finite()),
        Just(0.0),
        Just(-0.0),
        Just(f64::MIN_POSITIVE),
        Just(f64::MAX),
        (-1_000_000i64..1_000_000).prop_map(|i| i as f64 / 64.0),
    ]
}

/// Every variant; `NullArray` included although RESP3 writes it as `_` (see [`resp3_expected`]).
fn resp3_frame() -> impl Strategy<Value = Frame> {
    let leaf = prop_oneof![
        resp2_leaf(),
        finite_double().prop_map(Frame::Double),
        any::<bool>().prop_map(Frame::Boolean),
        big_number().prop_map(Frame::BigNumber),
        (any::<[u8; 3]>(), any_bytes(24))
            .prop_map(|(format, text)| Frame::Verbatim { format, text }),
    ];
    leaf.prop_recursive(4, 48, 5, |inner| {
        let pairs = prop::collection::vec((inner.clone(), inner.clone()), 0..3);
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Frame::Array),
            prop::collection::vec(inner.clone(), 0..5).prop_map(Frame::Set),
            prop::collection::vec(inner.clone(), 0..5).prop_map(Frame::Push),
            pairs.clone().prop_map(Frame::Map),
            (pairs, inner).prop_map(|(attrs, frame)| Frame::Attribute {
                attrs,
                frame: Box::new(frame),
            }),
        ]
    })
}

/// What a RESP3 frame decodes to: RESP3 has one null, so `NullArray` comes back as `Null`.
fn resp3_expected(frame: &Frame) -> Frame {
    let all = |items: &[Frame]| items.iter().map(resp3_expected).collect();
    let pairs = |pairs: &[(Frame, Frame)]| {
        pairs
            .iter()
            .map(|(k, v)| (resp3_expected(k), resp3_expected(v)))
            .collect()
    };
    match frame {
        Frame::NullArray => Frame::Null,
        Frame::Array(items) => Frame::Array(all(items)),
        Frame::Set(items) => Frame::Set(all(items)),
        Frame::Push(items) => Frame::Push(all(items)),
        Frame::Map(p) => Frame::Map(pairs(p)),
        Frame::Attribute { attrs, frame } => Frame::Attribute {
            attrs: pairs(attrs),
            frame: Box::new(resp3_expected(frame)),
        },
        other => other.clone(),
    }
}

/// What a RESP2 peer decodes from a RESP3 frame: Redis's `addReply*` downgrades.
fn resp2_downgrade(frame: &Frame) -> Frame {
    let all = |items: &[Frame]| items.iter().map(resp2_downgrade).collect();
    match frame {
        Frame::Array(items) | Frame::Set(items) | Frame::Push(items) => Frame::Array(all(items)),
        Frame::Map(pairs) => Frame::Array(
            pairs
                .iter()
                .flat_map(|(k, v)| [resp2_downgrade(k), resp2_downgrade(v)])
                .collect(),
        ),
        Frame::Double(d) => Frame::Bulk(Bytes::from(format_double(*d))),
        Frame::Boolean(b) => Frame::Integer(i64::from(*b)),
        Frame::BigNumber(n) => Frame::Bulk(n.clone()),
        Frame::Verbatim { text, .. } => Frame::Bulk(text.clone()),
        Frame::Attribute { frame, .. } => resp2_downgrade(frame),
        other => other.clone(),
    }
}

/// Frame equality with doubles compared bit for bit (`Frame`'s `PartialEq` has `0.0 == -0.0`):
/// `Debug` prints every finite double in its shortest round-trip form, sign included.
fn assert_same(got: &Frame, want: &Frame) {
    assert_eq!(format!("{got:?}"), format!("{want:?}"));
}

fn version_frame() -> impl Strategy<Value = (Version, Frame)> {
    prop_oneof![
        resp2_frame().prop_map(|f| (Version::Resp2, f)),
        resp3_frame().prop_map(|f| (Version::Resp3, f)),
    ]
}

fn expected(version: Version, frame: &Frame) -> Frame {
    match version {
        Version::Resp2 => frame.clone(),
        Version::Resp3 => resp3_expected(frame),
    }
}

/// Chunk sizes for random delivery.
fn chunks() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(1usize..24, 1..64)
}

/// Splits `bytes` into pieces of the given sizes, cycling through them.
fn split<'a>(bytes: &'a [u8], sizes: &'a [usize]) -> impl Iterator<Item = &'a [u8]> + 'a {
    let mut rest = bytes;
    let mut sizes = sizes.iter().cycle();
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let n = (*sizes.next()?).min(rest.len());
        let (head, tail) = rest.split_at(n);
        rest = tail;
        Some(head)
    })
}

/// Decodes every frame in `input`, fed in `sizes`-sized chunks; panics on an error.
fn decode_frames_chunked(input: &[u8], sizes: &[usize]) -> Vec<Frame> {
    let mut decoder = FrameDecoder::default();
    let mut buf = BytesMut::new();
    let mut frames = Vec::new();
    for chunk in split(input, sizes) {
        buf.extend_from_slice(chunk);
        while let Some(frame) = decoder.decode(&mut buf).unwrap() {
            frames.push(frame);
        }
    }
    assert!(buf.is_empty(), "bytes left over");
    frames
}

fn request_bytes(args: &[Vec<u8>]) -> Vec<u8> {
    encode_to_vec(
        &Frame::bulk_array(args.iter().cloned().map(Bytes::from)),
        Version::Resp2,
    )
}

/// Drives a decoder over `input` in chunks until it has nothing more to say; the iteration cap
/// turns an infinite loop into a test failure.
fn drain<T, E>(
    input: &[u8],
    sizes: &[usize],
    mut decode: impl FnMut(&mut BytesMut) -> Result<Option<T>, E>,
) {
    let mut buf = BytesMut::new();
    for chunk in split(input, sizes) {
        buf.extend_from_slice(chunk);
        // Every Ok(Some) consumes at least one byte, so more rounds than bytes means a loop.
        for round in 0..=input.len() + 1 {
            assert!(
                round <= input.len(),
                "decoder keeps returning without consuming"
            );
            let before = buf.len();
            match decode(&mut buf) {
                Ok(Some(_)) => assert!(buf.len() < before, "frame from no bytes"),
                Ok(None) => break,
                Err(_) => return,
            }
        }
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn frames_round_trip_at_every_split_point((version, frame) in version_frame()) {
        let bytes = encode_to_vec(&frame, version);
        let want = expected(version, &frame);
        for at in 0..=bytes.len() {
            let mut decoder = FrameDecoder::default();
            let mut buf = BytesMut::from(&bytes[..at]);
            let first = decoder.decode(&mut buf).unwrap();
            let got = if at == bytes.len() {
                first.unwrap()
            } else {
                prop_assert!(first.is_none(), "frame complete after {at} of {} bytes", bytes.len());
                buf.extend_from_slice(&bytes[at..]);
                decoder.decode(&mut buf).unwrap().unwrap()
            };
            assert_same(&got, &want);
            prop_assert!(buf.is_empty());
        }
    }

    #[test]
    fn frame_pipelines_round_trip_in_random_chunks(
        frames in prop::collection::vec(version_frame(), 1..6),
        sizes in chunks(),
    ) {
        let mut bytes = BytesMut::new();
        for (version, frame) in &frames {
            encode(frame, *version, &mut bytes);
        }
        let got = decode_frames_chunked(&bytes, &sizes);
        prop_assert_eq!(got.len(), frames.len());
        for (got, (version, frame)) in got.iter().zip(&frames) {
            assert_same(got, &expected(*version, frame));
        }
    }

    #[test]
    fn encoded_len_counts_the_bytes_the_encoder_writes(frame in resp3_frame()) {
        for version in [Version::Resp2, Version::Resp3] {
            prop_assert_eq!(encoded_len(&frame, version), encode_to_vec(&frame, version).len());
        }
    }

    #[test]
    fn resp3_frames_written_for_resp2_decode_to_their_downgrade(frame in resp3_frame()) {
        let bytes = encode_to_vec(&frame, Version::Resp2);
        let got = decode_frames_chunked(&bytes, &[bytes.len().max(1)]);
        prop_assert_eq!(got.len(), 1);
        assert_same(&got[0], &resp2_downgrade(&frame));
    }

    #[test]
    fn requests_round_trip_through_the_request_decoder(
        args in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..40), 1..8),
        sizes in chunks(),
    ) {
        let want: Vec<Bytes> = args.iter().cloned().map(Bytes::from).collect();
        let bytes = request_bytes(&args);
        for at in 0..=bytes.len() {
            let mut decoder = RequestDecoder::default();
            let mut buf = BytesMut::from(&bytes[..at]);
            let mut got = decoder.decode(&mut buf).unwrap();
            if at < bytes.len() {
                prop_assert!(got.is_none(), "request complete after {at} of {} bytes", bytes.len());
                buf.extend_from_slice(&bytes[at..]);
                got = decoder.decode(&mut buf).unwrap();
            }
            prop_assert_eq!(got.as_ref(), Some(&want));
            prop_assert_eq!(decoder.request_len(&want), bytes.len());
            prop_assert!(buf.is_empty());
        }
        // The same request pipelined three times, in random chunks.
        let pipeline = bytes.repeat(3);
        let mut decoder = RequestDecoder::default();
        let mut buf = BytesMut::new();
        let mut seen = 0;
        for chunk in split(&pipeline, &sizes) {
            buf.extend_from_slice(chunk);
            while let Some(got) = decoder.decode(&mut buf).unwrap() {
                prop_assert_eq!(&got, &want);
                seen += 1;
            }
        }
        prop_assert_eq!(seen, 3);
    }

    #[test]
    fn whole_requests_decode_as_they_do_byte_by_byte(
        requests in prop::collection::vec(
            prop::collection::vec(prop::collection::vec(any::<u8>(), 0..24), 1..6),
            0..4,
        ),
        garbage in prop::collection::vec(
            prop::sample::select(vec![
                &b"*"[..], b"$", b"\r\n", b"\r", b"-1", b"0", b"1", b"2", b"3", b"\x00", b"x",
                b"*1\r\n$", b"*2\r\n", b"$3\r\nabc\r\n", b"$1\r\n", b"*0\r\n",
            ]).prop_map(<[u8]>::to_vec),
            0..16,
        ),
        auth in any::<bool>(),
    ) {
        // A whole buffer takes the decoder's one-pass path where it can; one byte at a time
        // never can (a request is never complete at its start). Both must say the same.
        let mut input: Vec<u8> = requests.iter().flat_map(|r| request_bytes(r)).collect();
        input.extend(garbage.concat());
        input.extend(request_bytes(&[b"tail".to_vec()]));
        let outcomes = |chunk: usize| {
            let mut decoder = RequestDecoder::default();
            decoder.set_auth_required(auth);
            let mut buf = BytesMut::new();
            let mut seen = Vec::new();
            for piece in input.chunks(chunk) {
                buf.extend_from_slice(piece);
                for _ in 0..=input.len() {
                    match decoder.decode(&mut buf) {
                        Ok(Some(args)) => seen.push(Ok(args)),
                        Ok(None) => break,
                        Err(e) => {
                            seen.push(Err(e.to_string()));
                            return seen;
                        }
                    }
                }
            }
            seen
        };
        prop_assert_eq!(outcomes(input.len().max(1)), outcomes(1));
    }

    #[test]
    fn hex_escaped_inline_arguments_round_trip(
        args in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..24), 1..6),
        crlf in any::<bool>(),
    ) {
        // Every byte written as \xHH inside double quotes comes back as itself (sdssplitargs).
        let mut line = Vec::new();
        for arg in &args {
            line.push(b'"');
            for b in arg {
                line.extend_from_slice(format!("\\x{b:02x}").as_bytes());
            }
            line.extend_from_slice(b"\" ");
        }
        line.extend_from_slice(if crlf { b"\r\n" } else { b"\n" });
        let mut buf = BytesMut::from(&line[..]);
        let got = RequestDecoder::default().decode(&mut buf).unwrap();
        let want: Vec<Bytes> = args.into_iter().map(Bytes::from).collect();
        prop_assert_eq!(got, Some(want));
        prop_assert!(buf.is_empty());
    }

    #[test]
    fn arbitrary_bytes_never_panic_or_loop(
        bytes in prop::collection::vec(any::<u8>(), 0..512),
        sizes in chunks(),
        auth in any::<bool>(),
    ) {
        let mut frames = FrameDecoder::default();
        drain(&bytes, &sizes, |buf| frames.decode(buf));
        let mut requests = RequestDecoder::default();
        requests.set_auth_required(auth);
        drain(&bytes, &sizes, |buf| requests.decode(buf));
    }

    #[test]
    fn arbitrary_bytes_after_a_valid_prefix_never_panic_or_loop(
        (version, frame) in version_frame(),
        args in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..16), 1..4),
        tail in prop::collection::vec(any::<u8>(), 0..256),
        cut in any::<prop::sample::Index>(),
        sizes in chunks(),
        auth in any::<bool>(),
    ) {
        // The valid prefix is cut short somewhere, so the garbage may land mid-frame too.
        let mut input = encode_to_vec(&frame, version);
        input.truncate(cut.index(input.len() + 1));
        input.extend_from_slice(&tail);
        let mut frames = FrameDecoder::default();
        drain(&input, &sizes, |buf| frames.decode(buf));

        let mut input = request_bytes(&args);
        input.truncate(cut.index(input.len() + 1));
        input.extend_from_slice(&tail);
        let mut requests = RequestDecoder::default();
        requests.set_auth_required(auth);
        drain(&input, &sizes, |buf| requests.decode(buf));
    }

    #[test]
    fn resp_like_garbage_never_panics_or_loops(
        pieces in prop::collection::vec(
            prop_oneof![
                prop::sample::select(vec![
                    &b"*"[..], b"$", b"%", b"|", b"~", b">", b"+", b"-", b":", b"_", b",", b"#",
                    b"(", b"!", b"=", b"\r\n", b"\r", b"\n", b"-1", b"0", b"1", b"2", b"3",
                    b"\"", b"'", b"\\x4", b" ", b"\x00", b"txt:", b"inf", b"t",
                ]).prop_map(<[u8]>::to_vec),
                prop::collection::vec(any::<u8>(), 0..4),
            ],
            0..64,
        ),
        sizes in chunks(),
        auth in any::<bool>(),
    ) {
        // Mostly protocol tokens, so the decoders get deep into their states before failing.
        let input = pieces.concat();
        let mut frames = FrameDecoder::default();
        drain(&input, &sizes, |buf| frames.decode(buf));
        let mut requests = RequestDecoder::default();
        requests.set_auth_required(auth);
        drain(&input, &sizes, |buf| requests.decode(buf));
    }
}
