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
