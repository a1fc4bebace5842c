//! The wire protocol: split frames, big pipelines, inline commands, and malformed input (the
//! right `-ERR Protocol error: …`, then close; never a panic or a hang), compared byte for
//! byte with real Redis.

use locksmith_testkit as support;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};
use support::Pair;

/// What a peer sent back, and whether it closed the connection.
#[derive(Debug, PartialEq)]
struct Exchange {
    reply: String,
    closed: bool,
}

/// Writes `chunks` one write each (flushing between them) and reads until the peer closes or
/// 300 ms pass without data (bounded: 10 s in all).
fn exchange_chunks(addr: SocketAddr, chunks: &[Vec<u8>]) -> Exchange {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_nodelay(true).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    for chunk in chunks {
        // The peer may close early on bad input; later writes may then fail.
        if stream.write_all(chunk).is_err() {
            break;
        }
        stream.flush().ok();
    }
    let mut out = Vec::new();
    let mut buf = [0u8; 64 * 1024];
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut closed = false;
    while Instant::now() < deadline {
        match stream.read(&mut buf) {
            Ok(0) => {
                closed = true;
                break;
            }
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e)
                if e.kind() == std::io::ErrorKind::WouldBlock
                    || e.kind() == std::io::ErrorKind::TimedOut =>
            {
                break
            }
            Err(_) => {
                closed = true;
                break;
            }
        }
    }
    Exchange {
        reply: String::from_utf8_lossy(&out).into_owned(),
        closed,
    }
}

async fn exchange(addr: SocketAddr, chunks: Vec<Vec<u8>>) -> Exchange {
    tokio::task::spawn_blocking(move || exchange_chunks(addr, &chunks))
        .await
        .unwrap()
}

/// Runs the same exchange against ours and real Redis (when present); asserts equality and
/// returns ours.
async fn same(pair: &Pair, chunks: Vec<Vec<u8>>) -> Exchange {
    let ours = exchange(pair.ours.addr(), chunks.clone()).await;
    if let Some(real) = &pair.real {
        let theirs = exchange(real.addr(), chunks).await;
        assert_eq!(ours, theirs, "left: ours, right: redis");
    }
    ours
}

fn one(bytes: &[u8]) -> Vec<Vec<u8>> {
    vec![bytes.to_vec()]
}

#[tokio::test]
async fn frames_split_byte_by_byte_are_reassembled() {
    let pair = Pair::start().await;
    let input = b"*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nvalue\r\n*2\r\n$3\r\nGET\r\n$3\r\nkey\r\nPING\r\nECHO \"x y\"\r\n";
    let chunks: Vec<Vec<u8>> = input.iter().map(|b| vec![*b]).collect();
    let ours = same(&pair, chunks).await;
    assert_eq!(ours.reply, "+OK\r\n$5\r\nvalue\r\n+PONG\r\n$3\r\nx y\r\n");
    assert!(!ours.closed);
}

#[tokio::test]
async fn a_pipeline_of_1000_commands_gets_1000_replies_in_order() {
    let pair = Pair::start().await;
    let mut input = Vec::new();
    let mut expected = String::new();
    for i in 0..1000 {
        let v = i.to_string();
        input.extend_from_slice(format!("*2\r\n$4\r\nECHO\r\n${}\r\n{v}\r\n", v.len()).as_bytes());
        expected.push_str(&format!("${}\r\n{v}\r\n", v.len()));
    }
    let ours = same(&pair, vec![input]).await;
    assert_eq!(ours.reply, expected);
}

#[tokio::test]
async fn inline_commands_work_like_redis() {
    let pair = Pair::start().await;
    let ours = same(
        &pair,
        one(b"PING\r\nSET a b\r\nGET a\r\nSET \"a b\" 'c d'\r\nGET \"a b\"\r\n\r\n  \r\nECHO \"\\x41\\n\"\nPING hi\n"),
    )
    .await;
    assert_eq!(
        ours.reply,
        "+PONG\r\n+OK\r\n$1\r\nb\r\n+OK\r\n$3\r\nc d\r\n$2\r\nA\n\r\n$2\r\nhi\r\n"
    );
    // Empty multibulks are skipped, as Redis skips them.
    let ours = same(&pair, one(b"*0\r\n*-1\r\nPING\r\n")).await;
    assert_eq!(ours.reply, "+PONG\r\n");
}

#[tokio::test]
async fn malformed_input_gets_redis_protocol_errors_then_close() {
    let pair = Pair::start().await;
    let long_digits = "1".repeat(70 * 1024);
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("bulk length not a number", b"*1\r\n$abc\r\n".to_vec()),
        ("negative bulk length", b"*1\r\n$-5\r\n".to_vec()),
        ("huge bulk length", b"*1\r\n$2147483648\r\n".to_vec()),
        ("huge multibulk length", b"*3000000000\r\n".to_vec()),
        ("multibulk length not a number", b"*x\r\n".to_vec()),
        ("non-bulk element", b"*3\r\n:1\r\n".to_vec()),
        ("unbalanced quotes", b"SET \"a b\r\n".to_vec()),
        (
            "closing quote not followed by space",
            b"SET \"a\"b c\r\n".to_vec(),
        ),
        ("70 KB inline line", vec![b'a'; 70 * 1024]),
        (
            "70 KB multibulk header",
            format!("*{long_digits}").into_bytes(),
        ),
        (
            "70 KB bulk header",
            format!("*1\r\n${long_digits}").into_bytes(),
        ),
    ];
    for (what, input) in cases {
        let ours = same(&pair, one(&input)).await;
        assert!(
            ours.reply.starts_with("-ERR Protocol error: ") && ours.closed,
            "{what}: {ours:?}"
        );
    }
}

#[tokio::test]
async fn commands_before_a_protocol_error_are_answered() {
    let pair = Pair::start().await;
    let ours = same(&pair, one(b"PING\r\nSET k v\r\n*1\r\n$x\r\nPING\r\n")).await;
    assert_eq!(
        ours.reply,
        "+PONG\r\n+OK\r\n-ERR Protocol error: invalid bulk length\r\n"
    );
    assert!(ours.closed);
}

#[tokio::test]
async fn pre_auth_limits_apply_until_auth() {
    let ours = locksmith_server::Server::builder()
        .requirepass("pw")
        .start()
        .await
        .unwrap();
    let real = support::RealRedis::start_with(&["--requirepass", "pw"]);
    for input in [&b"*11\r\n"[..], b"*1\r\n$20000\r\n"] {
        let mine = exchange(ours.addr(), one(input)).await;
        assert!(
            mine.closed
                && mine
                    .reply
                    .starts_with("-ERR Protocol error: unauthenticated")
        );
        if let Some(real) = &real {
            assert_eq!(mine, exchange(real.addr(), one(input)).await);
        }
    }
}

#[tokio::test]
async fn a_client_sending_garbage_does_not_affect_others() {
    let server = support::start().await;
    let mut good = support::conn(&server.url()).await;
    let _: () = support::cmd(&["SET", "k", "v"])
        .query_async(&mut good)
        .await
        .unwrap();
    for garbage in [
        &b"*3\r\n:1\r\n"[..],
        b"\x00\xff\xfe\r\n",
        b"*1\r\n$-5\r\n",
        b"\"\r\n",
    ] {
        // Either an error and a close, or (a NUL-led inline line) nothing at all.
        let bad = exchange(server.addr(), one(garbage)).await;
        assert!(
            bad.reply.is_empty() || bad.reply.starts_with('-'),
            "{bad:?}"
        );
        let v: String = support::cmd(&["GET", "k"])
            .query_async(&mut good)
            .await
            .unwrap();
        assert_eq!(v, "v");
    }
}

#[tokio::test]
async fn proto_max_bulk_len_is_honoured_after_config_set() {
    let pair = Pair::start().await;
    let set = b"*4\r\n$6\r\nCONFIG\r\n$3\r\nSET\r\n$18\r\nproto-max-bulk-len\r\n$7\r\n1048576\r\n";
    same(&pair, one(set)).await;
    let ours = same(&pair, one(b"*2\r\n$4\r\nECHO\r\n$1048577\r\n")).await;
    assert_eq!(ours.reply, "-ERR Protocol error: invalid bulk length\r\n");
}

/// Sends a request whose last argument never ends, 100 KB at a time up to `total` bytes;
/// whether the server closed the connection meanwhile.
async fn closed_while_sending(addr: std::net::SocketAddr, total: usize) -> bool {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    if s.write_all(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$3000000\r\n")
        .await
        .is_err()
    {
        return true;
    }
    let chunk = vec![b'x'; 100_000];
    for _ in 0..total / chunk.len() {
        if s.write_all(&chunk).await.is_err() {
            return true;
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    let mut buf = [0u8; 64];
    matches!(
        tokio::time::timeout(std::time::Duration::from_secs(5), s.read(&mut buf)).await,
        Ok(Ok(0)) | Ok(Err(_))
    )
}

// client-query-buffer-limit: a client whose unprocessed input grows past it is closed, as
// Redis does; under the limit the same request is served.
#[tokio::test]
async fn a_client_past_the_query_buffer_limit_is_closed() {
    let mut pair = support::Pair::start().await;
    pair.same(&["CONFIG", "SET", "client-query-buffer-limit", "1mb"])
        .await;
    assert!(closed_while_sending(pair.ours.addr(), 2_000_000).await);
    if let Some(real) = &pair.real {
        assert!(closed_while_sending(real.addr(), 2_000_000).await);
    }
    pair.same(&["CONFIG", "GET", "client-query-buffer-limit"])
        .await;
    assert!(!closed_while_sending(pair.ours.addr(), 500_000).await);
    pair.same(&["PING"]).await;
}

/// GETs `key` on a fresh connection: the reply's length in bytes, or `None` when the server
/// closed the connection without sending it.
async fn reply_len_or_closed(addr: std::net::SocketAddr, key: &str) -> Option<usize> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let req = format!("*2\r\n$3\r\nGET\r\n${}\r\n{key}\r\n", key.len());
    s.write_all(req.as_bytes()).await.unwrap();
    let mut got = 0;
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let read = tokio::time::timeout(Duration::from_secs(2), s.read(&mut buf)).await;
        match read {
            // Closed: a complete reply first counts as sent, nothing as not sent.
            Ok(Ok(0)) | Ok(Err(_)) => return (got > 0).then_some(got),
            Ok(Ok(n)) => got += n,
            // Still open and quiet: the reply is complete.
            Err(_) => return Some(got),
        }
    }
}

// client-output-buffer-limit for normal clients: a reply past the hard limit closes the
// client instead of being sent, as Redis does; the default (no limit) sends it.
#[tokio::test]
async fn a_reply_past_the_normal_output_buffer_limit_closes_the_client() {
    let mut pair = support::Pair::start().await;
    let big = "x".repeat(200_000);
    pair.same(&["SET", "big", &big]).await;
    let full = Some(200_000 + "$200000\r\n\r\n".len());
    assert_eq!(reply_len_or_closed(pair.ours.addr(), "big").await, full);
    pair.same(&[
        "CONFIG",
        "SET",
        "client-output-buffer-limit",
        "normal 100000 0 0",
    ])
    .await;
    assert_eq!(reply_len_or_closed(pair.ours.addr(), "big").await, None);
    if let Some(real) = &pair.real {
        assert_eq!(reply_len_or_closed(real.addr(), "big").await, None);
    }
    pair.same(&["GET", "missing"]).await;
}

/// RESP-encodes one command.
fn resp(args: &[&str]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n{a}\r\n", a.len()).as_bytes());
    }
    out
}

/// Writes `bytes` on `stream` and reads exactly `n` bytes back (bounded by its read timeout).
fn write_then_read(stream: &mut TcpStream, bytes: &[u8], n: usize) -> String {
    stream.write_all(bytes).unwrap();
    let mut got = vec![0u8; n];
    stream.read_exact(&mut got).unwrap();
    String::from_utf8_lossy(&got).into_owned()
}

// Past 32768 keys (`db::PREFETCH_MIN_KEYS`) the keys of a pipeline are prefetched: before
// its first request runs once the connection has seen the large database, and every 16
// requests. A hint that must change no reply, whatever the requests are (reads, writes,
// deletes, scripts with and without keys, another database), on ours as on Redis.
#[tokio::test]
async fn a_pipeline_over_a_large_keyspace_gets_the_same_replies() {
    let pair = Pair::start().await;
    let mut fill = Vec::new();
    for chunk in 0..40 {
        let mut args = vec!["MSET".to_string()];
        for i in chunk * 1000..(chunk + 1) * 1000 {
            args.push(format!("key:{i}"));
            args.push(format!("v{i}"));
        }
        fill.extend(resp(&args.iter().map(String::as_str).collect::<Vec<_>>()));
    }
    let get = "return redis.call('GET', KEYS[1])";
    let cmds: &[&[&str]] = &[
        &["GET", "key:1"],
        &["GET", "key:39999"],
        &["SET", "key:5", "new"],
        &["GET", "key:5"],
        &["INCR", "counter"],
        &["GET", "missing"],
        &["EVAL", get, "1", "key:7"],
        &["EVAL", "return 1", "0"],
        &["DEL", "key:8"],
        &["EXISTS", "key:8"],
        &["SELECT", "1"],
        &["GET", "key:1"],
        &["SELECT", "0"],
        &["PING"],
        &["HSET", "h", "f", "v"],
        &["DBSIZE"],
        &["GET", "key:16"],
        &["GET", "key:17"],
    ];
    let pipeline: Vec<u8> = cmds.iter().flat_map(|c| resp(c)).collect();
    let expected = "$2\r\nv1\r\n$6\r\nv39999\r\n+OK\r\n$3\r\nnew\r\n:1\r\n$-1\r\n$2\r\nv7\r\n:1\r\n\
                    :1\r\n:0\r\n+OK\r\n$-1\r\n+OK\r\n+PONG\r\n:1\r\n:40001\r\n$3\r\nv16\r\n$3\r\nv17\r\n";
    let mut addrs = vec![pair.ours.addr()];
    addrs.extend(pair.real.as_ref().map(|r| r.addr()));
    for addr in addrs {
        let (fill, pipeline) = (fill.clone(), pipeline.clone());
        let replies = tokio::task::spawn_blocking(move || {
            let mut stream = TcpStream::connect(addr).unwrap();
            stream
                .set_read_timeout(Some(Duration::from_secs(10)))
                .unwrap();
            let filled = write_then_read(&mut stream, &fill, 5 * 40);
            (
                filled,
                write_then_read(&mut stream, &pipeline, expected.len()),
            )
        })
        .await
        .unwrap();
        assert_eq!(
            replies,
            ("+OK\r\n".repeat(40), expected.to_string()),
            "{addr}"
        );
    }
}
