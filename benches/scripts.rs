//! Script execution in-process: Redisson's acquire and release scripts compiled once and run
//! many times through EVALSHA (no socket), to time the engine and `redis.call` alone. Results
//! and how to read them: the "Scripts" section of BENCHMARKS.md at the workspace root.
#![allow(missing_docs)]

use bytes::Bytes;
use criterion::{criterion_group, criterion_main, Criterion};
use locksmith_resp::Frame;

const ACQUIRE: &str = "if (redis.call('exists', KEYS[1]) == 0) then redis.call('hincrby', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then redis.call('hincrby', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; return redis.call('pttl', KEYS[1]);";
const RELEASE: &str = "if (redis.call('exists', KEYS[1]) == 0) then redis.call('publish', KEYS[2], ARGV[1]); return 1; end;if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then return nil;end; local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1); if (counter > 0) then redis.call('pexpire', KEYS[1], ARGV[2]); return 0; else redis.call('del', KEYS[1]); redis.call('publish', KEYS[2], ARGV[1]); return 1; end; return nil;";

fn argv(parts: &[&str]) -> Vec<Bytes> {
    parts
        .iter()
        .map(|p| Bytes::copy_from_slice(p.as_bytes()))
        .collect()
}

fn sha(client: &mut locksmith_server::LocalClient, body: &str) -> String {
    match client.execute(&argv(&["SCRIPT", "LOAD", body])) {
        Frame::Bulk(b) => String::from_utf8_lossy(&b).into_owned(),
        other => panic!("SCRIPT LOAD failed: {other:?}"),
    }
}

fn scripts(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let server = rt
        .block_on(locksmith_server::Server::builder().start())
        .unwrap();
    let mut client = server.local_client();
    let acquire = sha(&mut client, ACQUIRE);
    let release = sha(&mut client, RELEASE);
    let owner = "58c62432-bb74-4d14-8a00-9908cc8b828f:1";
    // Redisson's acquire and release of lock `name` by `owner`.
    let acquire_of = |name: &str| argv(&["EVALSHA", &acquire, "1", name, "30000", owner]);
    let release_of = |name: &str| {
        let channel = format!("redisson_lock__channel:{{{name}}}");
        argv(&[
            "EVALSHA", &release, "2", name, &channel, "0", "30000", owner,
        ])
    };
    let acquire_cmd = acquire_of("lock");
    let release_cmd = release_of("lock");
    let mut group = c.benchmark_group("redisson_scripts");
    let empty = sha(&mut client, "return 1");
    let empty_cmd = argv(&["EVALSHA", &empty, "0"]);
    group.bench_function("evalsha_return_1", |b| {
        b.iter(|| client.execute(&empty_cmd))
    });
    let one_call = sha(&mut client, "return redis.call('exists', KEYS[1])");
    let one_call_cmd = argv(&["EVALSHA", &one_call, "1", "lock"]);
    group.bench_function("evalsha_one_call", |b| {
        b.iter(|| client.execute(&one_call_cmd))
    });
    let get_cmd = argv(&["EXISTS", "lock"]);
    group.bench_function("plain_exists", |b| b.iter(|| client.execute(&get_cmd)));
    // Steady state of a held lock: the re-entrant acquire (exists, hexists, hincrby, pexpire)…
    client.execute(&acquire_cmd);
    group.bench_function("acquire_reentrant", |b| {
        b.iter(|| client.execute(&acquire_cmd))
    });
    // …and a partial release (exists, hexists, hincrby -1, pexpire), balanced by an acquire.
    group.bench_function("acquire_then_partial_release", |b| {
        b.iter(|| {
            client.execute(&acquire_cmd);
            client.execute(&release_cmd)
        })
    });
    // The partial release alone: each timed release undoes an untimed acquire made first.
    group.bench_function("release_partial", |b| {
        b.iter_custom(|iters| {
            for _ in 0..iters {
                client.execute(&acquire_cmd);
            }
            let start = std::time::Instant::now();
            for _ in 0..iters {
                std::hint::black_box(client.execute(&release_cmd));
            }
            start.elapsed()
        })
    });
    // A whole uncontended cycle on a free lock: the first acquire (exists, hincrby, pexpire)
    // and the full release (exists, hexists, hincrby, del, publish).
    let free_acquire = acquire_of("free");
    let free_release = release_of("free");
    group.bench_function("acquire_then_full_release", |b| {
        b.iter(|| {
            client.execute(&free_acquire);
            client.execute(&free_release)
        })
    });
    let hset_cmd = argv(&["HSET", "plain:hash", "field", "value"]);
    group.bench_function("plain_hset", |b| b.iter(|| client.execute(&hset_cmd)));
    let hincrby_cmd = argv(&["HINCRBY", "plain:hash", "counter", "1"]);
    group.bench_function("plain_hincrby", |b| b.iter(|| client.execute(&hincrby_cmd)));
    client.execute(&hset_cmd);
    let pexpire_cmd = argv(&["PEXPIRE", "plain:hash", "30000"]);
    group.bench_function("plain_pexpire", |b| b.iter(|| client.execute(&pexpire_cmd)));
    group.finish();
    drop(client);
    rt.block_on(server.shutdown());
}

criterion_group!(benches, scripts);
criterion_main!(benches);
