//! The script fuzzer's generator and watchdog (issue 37), shared by the property test
//! (`server/tests/server/script_fuzz.rs`, which compiles this file on stable) and the cargo-fuzz
//! target (`fuzz_targets/script.rs`).
//!
//! A program is up to [`MAX_PARTS`] fragments of Redis's script API and libraries (cjson,
//! cmsgpack, bit, struct, string, table, load, redis.pcall) with pathological arguments: counts
//! around the limits (deep nesting, long patterns, many results), integers past int32, binary
//! chunks, and `ARGV[1]`, a byte string fed to the decoders, the pattern matcher, the format
//! and the compiler. Each fragment runs in its own `pcall`, so a program goes on after an error.
//! No fragment writes, so every program can be ended with `SCRIPT KILL`; the [`Watchdog`] sends
//! it when a program runs past its bound.

use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Numbers that break careless integer code: the ends of int32, beyond them, zero, small.
pub const NUMBERS: &[&str] = &[
    "0",
    "1",
    "-1",
    "2",
    "7",
    "100",
    "8000",
    "65535",
    "2147483647",
    "-2147483648",
    "2^31",
    "-2^31",
    "2^32",
    "2^53",
    "2^63",
    "2^64",
    "-2^63",
    "1e10",
    "-1e10",
    "1/0",
    "-1/0",
    "0/0",
    "0.5",
    "-0.5",
];

/// Counts for repetitions and nesting: around the limits of Redis and ours.
pub const COUNTS: &[u32] = &[
    0, 1, 15, 16, 17, 255, 1000, 1001, 3999, 4000, 5001, 8000, 50000, 70000,
];

/// `ARGV[1]` seeds: a binary chunk's header, formats, patterns, JSON, msgpack and struct
/// formats that reach the edges of their parsers.
pub const BYTE_SEEDS: &[&[u8]] = &[
    b"\x1bLuaQ\x00\x01\x04\x08\x04\x08\x00",
    b"\x1bLua",
    b"return 1",
    b"%99999999999d",
    b"%-+ #0999.999f",
    b"%s%s%s%s%q",
    b"%b()%f[%a]%1",
    b"((((((((((((((((((((((((((((((((((.))))))))))))))))))))))))))))))))))",
    b"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[",
    b"[1,2,{\"a\":[true,null,-1e400,\"\\ud800\"]}]",
    b"\xdc\xff\xff",
    b"\xdf\xff\xff\xff\xff",
    b"\xdb\xff\xff\xff\xff",
    b"\xc4\xff",
    b"ic0",
    b">i16<I0c99999999999",
    b"!17d",
    b"",
];

/// The most fragments in one program.
pub const MAX_PARTS: usize = 6;

/// The number of fragment kinds [`fragment`] knows.
pub const KINDS: u8 = 30;

/// The kind that runs until it is killed from a count of 15 on (a backtracking pattern): the
/// property test draws it less often, so the time goes to programs that end.
pub const ENDLESS_KIND: u8 = 3;

/// One fragment of a program: its kind and indices into [`COUNTS`] and [`NUMBERS`] (any
/// value; they wrap).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Part {
    /// Which fragment ([`fragment`]'s `kind`).
    pub kind: u8,
    /// Index of the count `n` in [`COUNTS`].
    pub n: usize,
    /// Index of the number `x` in [`NUMBERS`].
    pub x: usize,
    /// Index of the number `y` in [`NUMBERS`].
    pub y: usize,
}

impl Part {
    /// The count this part uses.
    pub fn count(&self) -> u32 {
        COUNTS[self.n % COUNTS.len()]
    }
}

/// One Lua expression or statement of the API, with `n` a count, `x` and `y` numbers and
/// `ARGV[1]` the program's byte string.
pub fn fragment(kind: u8, n: u32, x: &str, y: &str) -> String {
    match kind % KINDS {
        0 => format!("unpack({{1,2,3}}, {x}, {y})"),
        1 => format!("#{{unpack({{}}, 1, {n})}}"),
        2 => format!("string.match(string.rep('a', {n}), string.rep('a?', {n}))"),
        3 => format!("string.find(string.rep('a', {n}), string.rep('.-', {n}) .. 'b')"),
        4 => format!("string.gsub(string.rep('ab', {n}), string.rep('(a)', {n} % 40), '%1')"),
        5 => format!("cjson.decode(string.rep('[', {n}) .. string.rep(']', {n}))"),
        6 => format!("cjson.decode(string.rep('{{\"a\":', {n}))"),
        7 => format!("cjson.encode(deep({n}, {}))", n.is_multiple_of(2)),
        8 => format!("cjson.decode_max_depth({x}) cjson.encode_max_depth({y})"),
        9 => format!("cmsgpack.unpack(string.rep(string.char(0x91), {n}) .. string.char(0xc0))"),
        10 => format!(
            "cmsgpack.unpack(string.rep(string.char(0x81, 0xa1, 0x61), {n}) .. string.char(0xc0))"
        ),
        11 => format!("cmsgpack.unpack(string.rep(string.char(0xa1, 0x61), {n}))"),
        12 => format!("cmsgpack.pack(deep({n}, {}))", !n.is_multiple_of(2)),
        13 => format!("bit.tohex({x}, {y})"),
        14 => format!("bit.band({x}, {y}) + bit.lshift({x}, {y}) + bit.arshift({x}, {y})"),
        15 => format!("struct.unpack('ic0', struct.pack('i', {x}) .. string.rep('z', {n}))"),
        16 => format!("struct.pack('c' .. {n}, 'x') .. struct.pack('i' .. ({n} % 20), {x})"),
        17 => format!(
            "local t = {{}} table.insert(t, ({n} % 5) + 1, {x}) return table.concat(t, ',')"
        ),
        18 => "loadstring(string.dump(function() return 1 end))".to_string(),
        19 => format!(
            "local s, d = string.dump(function() return {x} end), false \
             return load(function() if d then return nil end d = true return s end)"
        ),
        20 => format!(
            "loadstring('return [' .. string.rep('=', {n}) .. '[x]' .. string.rep('=', {n}) .. ']')"
        ),
        21 => format!("local t = {{}} for i = 2, {n} do t = {{t}} end return t"),
        22 => format!(
            "return {{redis.pcall('echo', {x}), redis.pcall('getrange', 'fuzz', {x}, {y})}}"
        ),
        23 => format!("string.rep('x', {n}, ''):byte({x}, {y})"),
        24 => "cjson.decode(ARGV[1])".to_string(),
        25 => "cmsgpack.unpack(ARGV[1])".to_string(),
        26 => "local d = false return loadstring(ARGV[1]), \
               load(function() if d then return nil end d = true return ARGV[1] end)"
            .to_string(),
        27 => format!("struct.unpack(ARGV[1], string.rep(ARGV[1], {n} % 64), {x})"),
        28 => format!(
            "string.find(string.rep(ARGV[1], {n} % 64), ARGV[1], {x}), \
             string.gsub(ARGV[1], ARGV[1], ARGV[1], {y})"
        ),
        _ => format!(
            "string.format(ARGV[1], {x}, {y}, ARGV[1]), struct.pack(ARGV[1], {x}, {y}), \
             cmsgpack.pack(ARGV[1], {x}), cjson.encode({{ARGV[1], {y}}})"
        ),
    }
}

/// A program of `parts`' fragments, each in a pcall, returning how the last one ended (flat:
/// deep replies have tests of their own, and a client's parser refuses them).
pub fn program(parts: &[Part]) -> String {
    let mut s = String::from(
        "local function deep(n, map) local t = {} local c = t \
           for i = 1, n - 1 do local x = {} if map then c.a = x else c[1] = x end c = x end \
           return t end \
         local r\n",
    );
    for part in parts {
        let f = fragment(
            part.kind,
            part.count(),
            NUMBERS[part.x % NUMBERS.len()],
            NUMBERS[part.y % NUMBERS.len()],
        );
        let body = if f.starts_with("local ") || f.contains(" return ") {
            f
        } else {
            format!("return {f}")
        };
        s.push_str(&format!("r = {{pcall(function() {body} end)}}\n"));
    }
    s.push_str(
        "cjson.decode_max_depth(1000) cjson.encode_max_depth(1000)\n\
         return {tostring(r[1]), type(r[2]), type(r[2]) == 'string' and r[2]:sub(1, 100) or ''}",
    );
    s
}

/// A program and its `ARGV[1]` from fuzzer bytes: the first byte is the number of fragments
/// (1 to [`MAX_PARTS`]), then four bytes a fragment (kind, count, x, y), missing bytes zero;
/// the rest is `ARGV[1]`, or one of [`BYTE_SEEDS`] when the rest is a single byte.
pub fn from_bytes(data: &[u8]) -> (Vec<Part>, Vec<u8>) {
    let mut bytes = data.iter().copied();
    let count = 1 + usize::from(bytes.next().unwrap_or(0)) % MAX_PARTS;
    let mut next = || bytes.next().unwrap_or(0);
    let parts = (0..count)
        .map(|_| Part {
            kind: next(),
            n: usize::from(next()),
            x: usize::from(next()),
            y: usize::from(next()),
        })
        .collect();
    let rest = data.get(1 + 4 * count..).unwrap_or_default();
    let argv = match rest {
        [seed] => BYTE_SEEDS[usize::from(*seed) % BYTE_SEEDS.len()].to_vec(),
        _ => rest.to_vec(),
    };
    (parts, argv)
}

/// What a kill attempt found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Kill {
    /// The script was told to stop.
    Sent,
    /// No script was running (it ended in between).
    NotBusy,
}

#[derive(Debug, Default)]
struct State {
    /// The program running now: its number and when it started.
    running: Option<(u64, Instant)>,
    /// Programs started so far.
    started: u64,
    /// Kills sent.
    kills: u64,
    /// The first kill that failed (not `OK` nor `NOTBUSY`).
    failure: Option<String>,
    stop: bool,
}

/// Ends a program still running after its bound with a kill (`SCRIPT KILL` from another
/// client), from one thread kept for all programs; a program that ignores the kill is asked
/// again every `bound`, at most [`Watchdog::TRIES`] times.
pub struct Watchdog {
    shared: Arc<(Mutex<State>, Condvar)>,
    thread: Option<JoinHandle<()>>,
}

fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    state
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Watchdog {
    /// Kill attempts for one program.
    pub const TRIES: u32 = 1000;

    /// A watchdog that calls `kill` once a program has run for `bound`.
    pub fn new(
        bound: Duration,
        mut kill: impl FnMut() -> Result<Kill, String> + Send + 'static,
    ) -> Self {
        let shared = Arc::new((Mutex::new(State::default()), Condvar::new()));
        let inner = shared.clone();
        let thread = std::thread::spawn(move || {
            let (state, wake) = &*inner;
            let mut guard = lock(state);
            // (program, tries) of the program being killed.
            let mut tries = (0, 0);
            loop {
                if guard.stop {
                    return;
                }
                let Some((program, started)) = guard.running else {
                    guard = wake.wait(guard).unwrap_or_else(|p| p.into_inner());
                    continue;
                };
                if tries.0 != program {
                    tries = (program, 0);
                }
                let due = started + bound * (tries.1 + 1);
                let now = Instant::now();
                if now < due || tries.1 >= Self::TRIES {
                    let wait = if tries.1 >= Self::TRIES {
                        bound
                    } else {
                        due - now
                    };
                    guard = wake
                        .wait_timeout(guard, wait)
                        .unwrap_or_else(|p| p.into_inner())
                        .0;
                    continue;
                }
                tries.1 += 1;
                drop(guard);
                let outcome = kill();
                guard = lock(state);
                match outcome {
                    Ok(Kill::Sent) => guard.kills += 1,
                    Ok(Kill::NotBusy) => {}
                    Err(e) => {
                        guard.failure.get_or_insert(e);
                    }
                }
            }
        });
        Watchdog {
            shared,
            thread: Some(thread),
        }
    }

    /// Runs `program` (one script, sent and answered) under the watchdog.
    pub fn run<T>(&self, program: impl FnOnce() -> T) -> T {
        let (state, wake) = &*self.shared;
        {
            let mut guard = lock(state);
            guard.started += 1;
            guard.running = Some((guard.started, Instant::now()));
            wake.notify_one();
        }
        let out = program();
        lock(state).running = None;
        out
    }

    /// Kills sent so far.
    pub fn kills(&self) -> u64 {
        lock(&self.shared.0).kills
    }

    /// The first failed kill (the server refused `SCRIPT KILL` or went away), if any.
    pub fn failure(&self) -> Option<String> {
        lock(&self.shared.0).failure.clone()
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        lock(&self.shared.0).stop = true;
        self.shared.1.notify_one();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
