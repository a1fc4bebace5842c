//! RESP codec throughput: decoding pipelined requests the way the server reads them, decoding
//! replies the way a client reads them, and encoding replies for RESP2 and RESP3.
#![allow(missing_docs)]

use bytes::BytesMut;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use locksmith::resp::{encode, Frame, FrameDecoder, Limits, RequestDecoder, Version};
use std::hint::black_box;

/// The Redisson acquire call as Redisson sends it: EVALSHA with 1 key and 3 args.
fn evalsha_request() -> Vec<u8> {
    let args: [&[u8]; 7] = [
        b"EVALSHA",
        b"0123456789abcdef0123456789abcdef01234567",
        b"1",
        b"myLock",
        b"30000",
        b"8743c9c0-0795-4907-87fd-6c719a6b4586:1",
        b"0",
    ];
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
    out
}

fn decode_requests(c: &mut Criterion) {
    let mut group = c.benchmark_group("decode_requests");
    for pipeline in [1usize, 16, 128] {
        let one = evalsha_request();
        let input: Vec<u8> = one
            .iter()
            .copied()
            .cycle()
            .take(one.len() * pipeline)
            .collect();
        group.throughput(Throughput::Elements(pipeline as u64));
        group.bench_with_input(BenchmarkId::from_parameter(pipeline), &input, |b, input| {
            let mut decoder = RequestDecoder::new(Limits::default());
            b.iter(|| {
                let mut buf = BytesMut::from(&input[..]);
                let mut n = 0;
                while let Ok(Some(argv)) = decoder.decode(&mut buf) {
                    n += argv.len();
                }
                black_box(n)
            })
        });
    }
    group.finish();
}

fn reply_frame() -> Frame {
    Frame::Array(vec![
        Frame::bulk("message"),
        Frame::bulk("redisson_lock__channel:{myLock}"),
        Frame::bulk("0"),
        Frame::Integer(29_997),
        Frame::Null,
        Frame::Map(vec![(Frame::bulk("mode"), Frame::bulk("write"))]),
        Frame::Double(0.1),
    ])
}

fn encode_replies(c: &mut Criterion) {
    let frame = reply_frame();
    let mut group = c.benchmark_group("encode_reply");
    for (name, version) in [("resp2", Version::Resp2), ("resp3", Version::Resp3)] {
        group.bench_function(name, |b| {
            let mut out = BytesMut::with_capacity(512);
            b.iter(|| {
                out.clear();
                encode(black_box(&frame), version, &mut out);
                black_box(out.len())
            })
        });
    }
    group.finish();
}

fn decode_replies(c: &mut Criterion) {
    let mut bytes = BytesMut::new();
    encode(&reply_frame(), Version::Resp3, &mut bytes);
    let input = bytes.to_vec();
    c.bench_function("decode_reply_resp3", |b| {
        let mut decoder = FrameDecoder::new(Limits::default());
        b.iter(|| {
            let mut buf = BytesMut::from(&input[..]);
            black_box(decoder.decode(&mut buf).ok().flatten())
        })
    });
}

criterion_group!(benches, decode_requests, encode_replies, decode_replies);
criterion_main!(benches);
