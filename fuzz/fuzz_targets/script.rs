//! Random Lua programs against an in-process server: the input's bytes choose the fragments,
//! their counts and numbers, and `ARGV[1]` (`locksmith_fuzz::from_bytes`). A program still
//! running after 20 ms is ended with SCRIPT KILL; a panic, an abort (a stack overflow) or a
//! server that no longer answers PING is a crash, and libFuzzer's `-timeout` catches a script
//! that SCRIPT KILL cannot end.
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use locksmith_fuzz::{from_bytes, program, Kill, Watchdog};
use locksmith_resp::Frame;
use locksmith_server::{LocalClient, Server, ServerHandle};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

/// How long a program runs before the watchdog kills it.
const BOUND: Duration = Duration::from_millis(20);

/// Programs between two `SCRIPT FLUSH`es (the script cache keeps every `EVAL` body).
const FLUSH_EVERY: u64 = 1000;

struct Fuzz {
    client: LocalClient,
    watchdog: Watchdog,
    programs: u64,
    // Declared last: the clients go before the server.
    _server: ServerHandle,
    _runtime: tokio::runtime::Runtime,
}

fn argv(args: &[&[u8]]) -> Vec<Bytes> {
    args.iter().map(|a| Bytes::copy_from_slice(a)).collect()
}

fn start() -> Fuzz {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("a runtime");
    let server = runtime
        .block_on(
            Server::builder()
                .busy_reply_threshold(BOUND)
                .lua_memory_limit(256 << 20)
                .start(),
        )
        .expect("a server");
    let mut admin = server.local_client();
    let watchdog = Watchdog::new(BOUND, move || {
        match admin.execute(&argv(&[b"SCRIPT", b"KILL"])) {
            Frame::Simple(_) => Ok(Kill::Sent),
            Frame::Error(e) if e.starts_with(b"NOTBUSY") => Ok(Kill::NotBusy),
            other => Err(format!("SCRIPT KILL answered {other:?}")),
        }
    });
    Fuzz {
        client: server.local_client(),
        watchdog,
        programs: 0,
        _server: server,
        _runtime: runtime,
    }
}

static FUZZ: OnceLock<Mutex<Fuzz>> = OnceLock::new();

fuzz_target!(|data: &[u8]| {
    let (parts, arg) = from_bytes(data);
    let script = program(&parts);
    let mut fuzz = FUZZ
        .get_or_init(|| Mutex::new(start()))
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    let fuzz = &mut *fuzz;
    fuzz.programs += 1;
    if fuzz.programs % FLUSH_EVERY == 0 {
        let flushed = fuzz.client.execute(&argv(&[b"SCRIPT", b"FLUSH"]));
        assert_eq!(flushed, Frame::ok(), "SCRIPT FLUSH");
    }
    let client = &mut fuzz.client;
    let request = argv(&[b"EVAL", script.as_bytes(), b"0", &arg]);
    let reply = fuzz.watchdog.run(|| client.execute(&request));
    if let Some(failure) = fuzz.watchdog.failure() {
        panic!("{failure} during:\n{script}\nARGV[1] = {arg:?}\nreply {reply:?}");
    }
    let pong = fuzz.client.execute(&argv(&[b"PING"]));
    assert_eq!(
        pong,
        Frame::simple("PONG"),
        "after:\n{script}\nARGV[1] = {arg:?}\nreply {reply:?}"
    );
});
