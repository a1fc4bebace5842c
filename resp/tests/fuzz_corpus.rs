//! Runs the committed fuzz seed corpus (`resp/fuzz/corpus/<target>/`) through the fuzz targets'
//! own logic, compiled here from `resp/fuzz/src/lib.rs` on stable, so CI exercises the corpus
//! and keeps the targets type-checking without nightly or cargo-fuzz.

#[allow(unreachable_pub, dead_code)]
#[path = "../fuzz/src/lib.rs"]
mod fuzz;

use std::path::PathBuf;

fn corpus(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus")
        .join(target);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.is_file())
        .map(|path| {
            let data = std::fs::read(&path).unwrap();
            (path, data)
        })
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no seed corpus in {}", dir.display());
    files
}

#[test]
fn decode_target_accepts_its_seed_corpus() {
    for (path, data) in corpus("decode") {
        eprintln!("{}", path.display());
        fuzz::fuzz_frames(&data);
    }
}

#[test]
fn decode_request_target_accepts_its_seed_corpus() {
    for (path, data) in corpus("decode_request") {
        eprintln!("{}", path.display());
        fuzz::fuzz_requests(&data);
    }
}

#[test]
fn seed_corpus_reaches_both_items_and_errors() {
    // The seeds are meant to cover valid input and each kind of failure; keep it that way.
    let frames: Vec<_> = corpus("decode")
        .iter()
        .map(|(_, data)| {
            let mut decoder = locksmith_resp::FrameDecoder::default();
            fuzz::run(data, data.len(), |buf| decoder.decode(buf))
        })
        .collect();
    assert!(frames
        .iter()
        .any(|o| o.error.is_none() && !o.items.is_empty()));
    assert!(frames.iter().any(|o| o.error.is_some()));
    let requests: Vec<_> = corpus("decode_request")
        .iter()
        .map(|(_, data)| {
            let mut decoder = locksmith_resp::RequestDecoder::default();
            fuzz::run(data, data.len(), |buf| decoder.decode(buf))
        })
        .collect();
    assert!(requests
        .iter()
        .any(|o| o.error.is_none() && !o.items.is_empty()));
    assert!(requests.iter().any(|o| o.error.is_some()));
}

mod generated {
    //! The fuzz oracles on generated inputs, a poor man's fuzz run for stable CI.

    use super::fuzz;
    use proptest::prelude::*;

    fn resp_like() -> impl Strategy<Value = Vec<u8>> {
        let token = prop_oneof![
            prop::sample::select(vec![
                &b"*"[..],
                b"$",
                b"%",
                b"|",
                b"~",
                b">",
                b"+",
                b"-",
                b":",
                b"_",
                b",",
                b"#",
                b"(",
                b"!",
                b"=",
                b"\r\n",
                b"\r",
                b"\n",
                b"-1",
                b"0",
                b"1",
                b"2",
                b"3",
                b"1.5",
                b"\"",
                b"'",
                b"\\x4",
                b"\\",
                b" ",
                b"\x00",
                b"txt:",
                b"inf",
                b"nan",
                b"t",
                b"f",
                b"a",
            ])
            .prop_map(<[u8]>::to_vec),
            prop::collection::vec(any::<u8>(), 0..4),
        ];
        prop::collection::vec(token, 0..80).prop_map(|pieces| pieces.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

        #[test]
        fn decode_target_holds_on_resp_like_input(data in resp_like()) {
            fuzz::fuzz_frames(&data);
        }

        #[test]
        fn decode_request_target_holds_on_resp_like_input(data in resp_like()) {
            fuzz::fuzz_requests(&data);
        }
    }
}

/// A small deterministic generator (xorshift64*), so every run mutates the same way and a
/// failure names the iteration that reproduces it.
struct Mutator(u64);

impl Mutator {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    /// One to four of: flip a bit, set a byte to an interesting value, insert, delete,
    /// duplicate a span, splice in part of another seed, truncate.
    fn mutate(&mut self, seed: &[u8], other: &[u8]) -> Vec<u8> {
        const INTERESTING: &[u8] = b"\r\n$*%~>|=,_#:+-!(0123456789-?\x00\xff";
        let mut data = seed.to_vec();
        for _ in 0..1 + self.below(4) {
            let at = self.below(data.len() + 1);
            match self.below(7) {
                0 if !data.is_empty() => {
                    let i = at.min(data.len() - 1);
                    data[i] ^= 1 << self.below(8);
                }
                1 if !data.is_empty() => {
                    let i = at.min(data.len() - 1);
                    data[i] = INTERESTING[self.below(INTERESTING.len())];
                }
                2 => data.insert(at, INTERESTING[self.below(INTERESTING.len())]),
                3 if at < data.len() => {
                    let end = (at + 1 + self.below(8)).min(data.len());
                    data.drain(at..end);
                }
                4 if at < data.len() => {
                    let end = (at + 1 + self.below(16)).min(data.len());
                    let span = data[at..end].to_vec();
                    data.splice(at..at, span);
                }
                5 if !other.is_empty() => {
                    let from = self.below(other.len());
                    let end = (from + 1 + self.below(32)).min(other.len());
                    data.splice(at..at, other[from..end].iter().copied());
                }
                _ => data.truncate(at),
            }
        }
        data
    }
}

/// Mutated inputs per target: `LOCKSMITH_FUZZ_ITERS` (default 200 000, about half a second
/// each; 2 000 000 take 9 s for both targets) — set it higher for a longer run on demand.
fn iterations() -> usize {
    std::env::var("LOCKSMITH_FUZZ_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200_000)
}

/// Runs `target` over `iterations()` mutations of the corpus of `name`, bounded in count.
fn mutate_corpus(name: &str, target: fn(&[u8])) {
    let seeds: Vec<Vec<u8>> = corpus(name).into_iter().map(|(_, d)| d).collect();
    let mut rng = Mutator(0x9e37_79b9_7f4a_7c15);
    for i in 0..iterations() {
        let seed = &seeds[i % seeds.len()];
        let other = &seeds[rng.below(seeds.len())];
        let input = rng.mutate(seed, other);
        let outcome = std::panic::catch_unwind(|| target(&input));
        assert!(
            outcome.is_ok(),
            "{name}: iteration {i} failed on input {:?}",
            String::from_utf8_lossy(&input)
        );
    }
}

// The fuzz targets in CI on stable: libFuzzer needs nightly, so their bodies run here over
// mutations of the seed corpus, a bounded number of times.
#[test]
fn decode_target_survives_mutations_of_its_corpus() {
    mutate_corpus("decode", fuzz::fuzz_frames);
}

#[test]
fn decode_request_target_survives_mutations_of_its_corpus() {
    mutate_corpus("decode_request", fuzz::fuzz_requests);
}
