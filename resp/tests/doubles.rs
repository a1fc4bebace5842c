//! Valkey's shortest form of doubles ([`format_shortest_double`], [`Doubles::Shortest`])
//! against valkey-server 8.1.8's own replies, and its properties: it reads back as the same
//! double and never has more significant digits than `%.17g`'s form.

use locksmith_resp::{
    double_to_i64, encode_to_vec, encode_with, format_double, format_shortest_double, Doubles,
    Frame, Version,
};
use proptest::prelude::*;

/// `value reply` lines: valkey-server 8.1.8's `ZSCORE` of a member `ZADD` gave the value
/// (2570 values: powers of ten from 1e-324 to 1e308, decimals of few digits, boundaries,
/// integers around 2^53 and 2^62, random bit patterns).
const VALKEY_ZSCORES: &str = include_str!("valkey_doubles.txt");

#[test]
fn replies_equal_valkey_servers_for_every_captured_value() {
    let mut checked = 0;
    for line in VALKEY_ZSCORES.lines().filter(|l| !l.starts_with('#')) {
        let (input, want) = line.split_once(' ').unwrap();
        let d: f64 = input.parse().unwrap();
        assert_eq!(Doubles::Shortest.reply(d), want, "ZSCORE of {input}");
        checked += 1;
    }
    assert_eq!(checked, 2570);
}

#[test]
fn redis_replies_stay_percent_17g_and_valkeys_differ_where_it_does() {
    assert_eq!(Doubles::Redis.reply(0.1), "0.10000000000000001");
    assert_eq!(Doubles::Redis.reply(1e17), "1e+17");
    assert_eq!(Doubles::Shortest.reply(0.1), "0.1");
    assert_eq!(Doubles::Shortest.reply(1e17), "100000000000000000");
    // d2string's own cases before any digit: Valkey replies `nan` whatever its sign.
    assert_eq!(Doubles::Shortest.reply(-f64::NAN), "nan");
    assert_eq!(Doubles::Shortest.reply(-0.0), "-0");
    assert_eq!(Doubles::Shortest.reply(f64::NEG_INFINITY), "-inf");
    // A listpack's score text: integers within 2^62 as integers in both.
    assert_eq!(Doubles::Redis.string(1e17), "100000000000000000");
    assert_eq!(Doubles::Redis.string(1e19), "1e+19");
    assert_eq!(Doubles::Shortest.string(1.5e300), "1.5e+300");
}

#[test]
fn the_encoder_writes_doubles_in_the_form_it_is_given() {
    let reply = Frame::Array(vec![Frame::Double(0.1), Frame::HumanDouble(13.5)]);
    for (doubles, resp2, resp3) in [
        (
            Doubles::Redis,
            "*2\r\n$19\r\n0.10000000000000001\r\n$4\r\n13.5\r\n",
            "*2\r\n,0.10000000000000001\r\n,13.5\r\n",
        ),
        (
            Doubles::Shortest,
            "*2\r\n$3\r\n0.1\r\n$4\r\n13.5\r\n",
            "*2\r\n,0.1\r\n,13.5\r\n",
        ),
    ] {
        for (version, want) in [(Version::Resp2, resp2), (Version::Resp3, resp3)] {
            let mut out = bytes::BytesMut::new();
            encode_with(&reply, version, doubles, &mut out);
            assert_eq!(
                String::from_utf8_lossy(&out),
                want,
                "{doubles:?} {version:?}"
            );
        }
    }
    // `encode` is the Redis form.
    assert_eq!(
        encode_to_vec(&Frame::Double(0.1), Version::Resp3),
        b",0.10000000000000001\r\n"
    );
}

/// Few cases per property: the suite runs in debug mode on a 2-core CI machine; the property
/// itself was run over 10^7 random doubles against the C (see the commit).
fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 4096,
        ..ProptestConfig::default()
    }
}

/// Doubles of every kind: any bit pattern, short decimals, integers.
fn any_double() -> impl Strategy<Value = f64> {
    prop_oneof![
        any::<u64>().prop_map(f64::from_bits),
        (-1_000_000i64..1_000_000, 0u32..12).prop_map(|(m, e)| m as f64 / 10f64.powi(e as i32)),
        any::<i64>().prop_map(|i| i as f64),
        (1u32..10, -330i32..310).prop_map(|(m, e)| format!("{m}e{e}").parse().unwrap()),
    ]
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn the_shortest_form_reads_back_as_the_same_double(d in any_double()) {
        let text = format_shortest_double(d);
        if d.is_nan() {
            prop_assert!(text == "nan" || text == "-nan");
        } else {
            let back: f64 = text.parse().unwrap();
            prop_assert_eq!(back.to_bits(), d.to_bits(), "{} -> {}", d, text);
        }
        let reply = Doubles::Shortest.reply(d);
        if !d.is_nan() {
            let back: f64 = reply.parse().unwrap();
            prop_assert_eq!(back, d, "{} -> {}", d, reply);
        }
    }

    #[test]
    fn the_shortest_form_never_has_more_digits_than_percent_17g(d in any_double()) {
        // Digits, not characters: fpconv's layout can be longer (`-1.0000000000000002e+4`
        // for `%.17g`'s `-10000.000000000002`, an integer's zeros written out), as
        // valkey-server's replies are.
        let significant = |s: &str| {
            let mantissa = s.split('e').next().unwrap_or(s);
            mantissa
                .chars()
                .filter(char::is_ascii_digit)
                .collect::<String>()
                .trim_start_matches('0')
                .trim_end_matches('0')
                .len()
        };
        let shortest = significant(&format_shortest_double(d));
        let printf = significant(&format_double(d));
        prop_assert!(shortest <= printf.max(1), "{}: {} digits, %.17g {}", d, shortest, printf);
        prop_assert!(shortest <= 17);
        if let Some(i) = double_to_i64(d) {
            prop_assert_eq!(Doubles::Shortest.reply(d), i.to_string());
        }
    }
}
