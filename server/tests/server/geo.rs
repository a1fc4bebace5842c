//! GEO commands compared with real Redis byte for byte (RESP2 and RESP3): GEOADD and its
//! options, GEOPOS/GEOHASH/GEODIST formatting, every search form and option over seeded
//! point sets (ties, poles, the antimeridian), STORE/STOREDIST/GEOSEARCHSTORE, error texts,
//! WRONGTYPE, GEO keys seen as sorted sets (ZRANGE, DUMP), keyspace events, scripts,
//! COMMAND INFO/GETKEYS, and Redis's own Palermo/Catania examples.

use locksmith_testkit as support;
use support::{Pair, Twin};

/// Splits a command line on spaces; `'...'` quotes an argument holding spaces.
fn words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = line.trim_start();
    while !rest.is_empty() {
        let (word, after) = match rest.strip_prefix('\'') {
            Some(quoted) => quoted.split_once('\'').unwrap_or((quoted, "")),
            None => rest.split_once(' ').unwrap_or((rest, "")),
        };
        out.push(word.to_string());
        rest = after.trim_start();
    }
    out
}

fn strs(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

/// Sends one command to both servers and asserts byte-identical replies; returns ours as
/// text.
async fn same(twin: &mut Twin, args: &[String]) -> String {
    let frames = twin.same(&[&strs(args)], 1).await;
    String::from_utf8_lossy(&frames[0]).into_owned()
}

/// [`same`] for each command line (see [`words`]).
async fn all_same(twin: &mut Twin, lines: &[&str]) -> Vec<String> {
    let mut out = Vec::with_capacity(lines.len());
    for line in lines {
        out.push(same(twin, &words(line)).await);
    }
    out
}

/// A connection pair speaking RESP3 (the HELLO replies differ in the client id, so they are
/// read but not compared).
async fn resp3_twin(pair: &Pair) -> Twin {
    let mut twin = Twin::connect(pair).await;
    twin.send(&[&["HELLO", "3"]]).await;
    twin.ours.frame().await;
    if let Some(real) = &mut twin.real {
        real.frame().await;
    }
    twin
}

/// A small deterministic generator (64-bit LCG), so every run compares the same points.
struct Lcg(u64);

impl Lcg {
    fn next_f64(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A coordinate in `lo..hi` with six decimals, as text.
    fn coord(&mut self, lo: f64, hi: f64) -> String {
        format!("{:.6}", lo + self.next_f64() * (hi - lo))
    }
}

/// `GEOADD key` with `n` seeded points in the box, named `p0`, `p1`…, plus `dups` members at
/// the very positions of the first ones (ties in every distance).
fn geoadd_points(
    key: &str,
    seed: u64,
    n: usize,
    lon: (f64, f64),
    lat: (f64, f64),
    dups: usize,
) -> Vec<String> {
    let mut rng = Lcg(seed);
    let mut args = vec!["GEOADD".to_string(), key.to_string()];
    let mut positions = Vec::with_capacity(n);
    for i in 0..n {
        let (x, y) = (rng.coord(lon.0, lon.1), rng.coord(lat.0, lat.1));
        args.extend([x.clone(), y.clone(), format!("p{i}")]);
        positions.push((x, y));
    }
    for (i, (x, y)) in positions.iter().take(dups).enumerate() {
        args.extend([x.clone(), y.clone(), format!("dup{i}")]);
    }
    args
}

#[tokio::test]
async fn redis_documentation_examples_answer_as_redis() {
    let pair = Pair::start().await;
    let mut twin = Twin::connect(&pair).await;
    let replies = all_same(
        &mut twin,
        &[
            "GEOADD Sicily 13.361389 38.115556 Palermo 15.087269 37.502669 Catania",
            "GEODIST Sicily Palermo Catania",
            "GEORADIUS Sicily 15 37 100 km",
            "GEORADIUS Sicily 15 37 200 km",
            "GEODIST Sicily Palermo Catania km",
            "GEODIST Sicily Palermo Catania mi",
            "GEODIST Sicily Foo Bar",
            "GEOHASH Sicily Palermo Catania",
            "GEOPOS Sicily Palermo Catania NonExisting",
            "GEORADIUS Sicily 15 37 200 km WITHDIST",
            "GEORADIUS Sicily 15 37 200 km WITHCOORD",
            "GEORADIUS Sicily 15 37 200 km WITHDIST WITHCOORD",
            "GEOADD Sicily 13.583333 37.316667 Agrigento",
            "GEORADIUSBYMEMBER Sicily Agrigento 100 km",
            "GEOADD Sicily 12.758489 38.788135 edge1 17.241510 38.788135 edge2",
            "GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 200 km ASC",
            "GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX 400 400 km ASC WITHCOORD WITHDIST",
            "GEOSEARCHSTORE key1 Sicily FROMLONLAT 15 37 BYBOX 400 400 km ASC COUNT 3",
            "GEOSEARCH key1 FROMLONLAT 15 37 BYBOX 400 400 km ASC WITHCOORD WITHDIST WITHHASH",
            "GEOSEARCHSTORE key2 Sicily FROMLONLAT 15 37 BYBOX 400 400 km ASC COUNT 3 STOREDIST",
            "ZRANGE key2 0 -1 WITHSCORES",
        ],
    )
    .await;
    // What Redis's documentation shows (checked even without a redis-server to compare with).
    assert_eq!(replies[0], ":2\r\n");
    assert_eq!(replies[1], "$11\r\n166274.1516\r\n");
    assert_eq!(replies[2], "*1\r\n$7\r\nCatania\r\n");
    assert_eq!(replies[3], "*2\r\n$7\r\nPalermo\r\n$7\r\nCatania\r\n");
    assert_eq!(replies[4], "$8\r\n166.2742\r\n");
    assert_eq!(replies[5], "$8\r\n103.3182\r\n");
    assert_eq!(replies[6], "$-1\r\n");
    assert_eq!(
        replies[7],
        "*2\r\n$11\r\nsqc8b49rny0\r\n$11\r\nsqdtr74hyu0\r\n"
    );
    assert_eq!(
        replies[8],
        "*3\r\n*2\r\n$20\r\n13.36138933897018433\r\n$20\r\n38.11555639549629859\r\n\
         *2\r\n$20\r\n15.08726745843887329\r\n$20\r\n37.50266842333162032\r\n*-1\r\n"
    );
    assert_eq!(
        replies[9],
        "*2\r\n*2\r\n$7\r\nPalermo\r\n$8\r\n190.4424\r\n*2\r\n$7\r\nCatania\r\n$7\r\n56.4413\r\n"
    );
    assert_eq!(replies[13], "*2\r\n$9\r\nAgrigento\r\n$7\r\nPalermo\r\n");
    assert_eq!(replies[17], ":3\r\n");
}

#[tokio::test]
async fn geoadd_options_and_errors_match_redis() {
    let pair = Pair::start().await;
    let mut twin = Twin::connect(&pair).await;
    let replies = all_same(
        &mut twin,
        &[
            "GEOADD nyc -73.9454966 40.747533 'lic market'",
            "GEOADD nyc -73.9454966 40.747533 'lic market'",
            "GEOADD nyc CH 40.747533 -73.9454966 'lic market'",
            "GEOADD nyc NX -73.9454966 40.747533 'lic market'",
            "GEOADD nyc XX -83.9454966 40.747533 'lic market'",
            "GEOADD nyc CH NX -73.9454966 40.747533 'lic market'",
            "GEOADD nyc CH XX -73.9454966 40.747533 'lic market'",
            "GEOADD nyc xx nx -73.9454966 40.747533 'lic market'",
            "GEOADD nyc ch xx foo -73.9454966 40.747533 'lic market'",
            "GEOADD nyc -73.9454966 40.747533 'lic market' foo bar 'luck market'",
            "GEOADD nyc -73.9733487 40.7648057 'central park n/q/r' -73.9903085 40.7362513 'union square' -74.0131604 40.7126674 'wtc one' -73.7858139 40.6428986 jfk -73.9375699 40.7498929 q4 -73.9564142 40.7480973 4545",
            "ZRANGE nyc 0 -1 WITHSCORES",
            "GEOADD nyc 200 100 m",
            "GEOADD nyc -180.000001 0 m",
            "GEOADD nyc 0 85.05112879 m",
            "GEOADD nyc -0 -85.05112879 m",
            "GEOADD nyc 1e400 1 m",
            "GEOADD nyc inf 1 m",
            "GEOADD nyc 1 -inf m",
            "GEOADD nyc 1 nan m",
            "GEOADD nyc 1e300 1 m",
            "GEOADD nyc ' 1' 1 m",
            "GEOADD nyc 1 2 m 3",
            "GEOADD nyc 1 2",
            "GEOADD nyc ch ch ch",
            "GEOADD nyc GT 1 2 m",
            "GEOADD nyc GT 1 2",
            "GEOADD nyc INCR 1 2 m",
            "GEOADD fresh XX 1 2 m",
            "EXISTS fresh",
            "GEOADD fresh NX CH 1 2 m 0x10 -0x1p2 n",
            "GEOADD fresh -180 -85.05112878 sw 180 85.05112878 ne",
            "ZRANGE fresh 0 -1 WITHSCORES",
            "SET str x",
            "GEOADD str 1 2 m",
            "GEOADD str 1 200 m",
        ],
    )
    .await;
    assert_eq!(replies[0], ":1\r\n");
    assert_eq!(replies[2], ":1\r\n");
    assert_eq!(replies[7], "-ERR syntax error\r\n");
    assert_eq!(
        replies[12],
        "-ERR invalid longitude,latitude pair 200.000000,100.000000\r\n"
    );
    assert_eq!(replies[16], "-ERR value is not a valid float\r\n");
    assert_eq!(
        replies[34],
        "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
    );
    // Coordinates are checked before the key's type.
    assert!(replies[35].starts_with("-ERR invalid longitude,latitude pair"));
}

#[tokio::test]
async fn positions_hashes_and_distances_format_as_redis_in_both_protocols() {
    let pair = Pair::start().await;
    let mut resp2 = Twin::connect(&pair).await;
    let mut resp3 = resp3_twin(&pair).await;
    let setup = [
        "GEOADD g 13.361389 38.115556 Palermo 15.087269 37.502669 Catania 0 0 zero -180 -85.05112878 sw 180 85.05112878 ne -0.0000001 -0.0000001 tiny -5.6 42.6 wiki 179.9999999 0 east",
        // Scores no GEOADD writes: negative, huge, fractional, infinite.
        "ZADD weird -1 a 1e20 b 5 c 0.5 d inf e -inf f 4503599627370496 g 9007199254740993 h",
    ];
    all_same(&mut resp2, &setup).await;
    let script = [
        "GEOPOS g Palermo Catania zero sw ne tiny wiki east nosuch",
        "GEOHASH g Palermo Catania zero sw ne tiny wiki east nosuch",
        "GEOPOS nokey a b",
        "GEOHASH nokey a",
        "GEOPOS g",
        "GEOHASH g",
        "GEODIST g Palermo Catania",
        "GEODIST g Palermo Catania KM",
        "GEODIST g Palermo Catania Mi",
        "GEODIST g Palermo Catania ft",
        "GEODIST g Palermo Catania m",
        "GEODIST g sw ne",
        "GEODIST g zero east",
        "GEODIST g Palermo Palermo",
        "GEODIST g Palermo nosuch",
        "GEODIST nokey a b",
        "GEODIST nokey a b yd",
        "GEODIST g Palermo Catania yd",
        "GEODIST g Palermo Catania km extra",
        "GEOPOS weird a b c d e f g h",
        "GEOHASH weird a b c d e f g h",
        "GEODIST weird a b",
        "GEODIST weird c h km",
        "SET str x",
        "GEOPOS str a",
        "GEOHASH str a",
        "GEODIST str a b",
        "GEODIST str a b yd",
    ];
    let two = all_same(&mut resp2, &script).await;
    let three = all_same(&mut resp3, &script).await;
    assert!(two[0].starts_with("*9\r\n*2\r\n$20\r\n13.36138933897018433\r\n"));
    assert!(three[0].starts_with("*9\r\n*2\r\n,13.36138933897018433\r\n"));
    assert!(two[0].ends_with("*-1\r\n") && three[0].ends_with("_\r\n"));
    assert!(two[1].contains("$11\r\nezs42e44yx0\r\n"));
    assert_eq!(
        two[17],
        "-ERR unsupported unit provided. please use M, KM, FT, MI\r\n"
    );
}

/// Every option of every search form, on a few hundred seeded points around Sicily with ties
/// (members at the same position), so the order of equal distances (Redis's sorts) is
/// compared too.
#[tokio::test]
async fn searches_match_redis_for_every_option() {
    let pair = Pair::start().await;
    let mut resp2 = Twin::connect(&pair).await;
    let mut resp3 = resp3_twin(&pair).await;
    let add = geoadd_points("pts", 7, 400, (12.0, 18.0), (35.0, 39.5), 40);
    same(&mut resp2, &add).await;
    all_same(&mut resp2, &["GEOADD pts 15 37 center 15 37 center2"]).await;

    let mut lines = Vec::new();
    let options = [
        "",
        "ASC",
        "DESC",
        "COUNT 5",
        "COUNT 5 DESC",
        "COUNT 7 ANY",
        "COUNT 7 ANY ASC",
        "COUNT 500",
        "WITHDIST WITHHASH WITHCOORD ASC",
        "WITHCOORD COUNT 3 WITHDIST",
        "withhash desc count 4 any",
    ];
    for shape in [
        "BYRADIUS 0 km",
        "BYRADIUS 50 km",
        "BYRADIUS 120000 m",
        "BYRADIUS 80 mi",
        "BYRADIUS 300000 ft",
        "BYRADIUS 6000 KM",
        "BYBOX 100 60 km",
        "BYBOX 400 400 km",
        "BYBOX 0 0 m",
        "BYBOX 5 500 km",
    ] {
        for from in [
            "FROMLONLAT 15 37",
            "FROMMEMBER p3",
            "FROMMEMBER center",
            "FROMLONLAT 12.5 39",
        ] {
            for opts in options {
                lines.push(format!("GEOSEARCH pts {from} {shape} {opts}"));
            }
        }
    }
    for radius in ["0 km", "60 km", "150000 m", "200 mi"] {
        for opts in options {
            lines.push(format!("GEORADIUS pts 15 37 {radius} {opts}"));
            lines.push(format!("GEORADIUS_RO pts 14.2 36.1 {radius} {opts}"));
            lines.push(format!("GEORADIUSBYMEMBER pts dup3 {radius} {opts}"));
            lines.push(format!("GEORADIUSBYMEMBER_RO pts center2 {radius} {opts}"));
        }
    }
    let mut nonempty = 0;
    for line in &lines {
        let two = same(&mut resp2, &words(line)).await;
        same(&mut resp3, &words(line)).await;
        if two.len() > 10 {
            nonempty += 1;
        }
    }
    assert!(nonempty > lines.len() / 2, "{nonempty} of {}", lines.len());
}

/// Seeded points over the whole grid and searches near the poles, across the antimeridian,
/// and with huge radii (where neighbour cells coincide), compared with Redis exactly.
#[tokio::test]
async fn searches_across_the_globe_match_redis() {
    let pair = Pair::start().await;
    let mut twin = Twin::connect(&pair).await;
    let add = geoadd_points(
        "world",
        42,
        3000,
        (-180.0, 180.0),
        (-85.05112878, 85.05112878),
        0,
    );
    same(&mut twin, &add).await;
    let mut rng = Lcg(99);
    let mut centers: Vec<String> = [
        "0 0",
        "179.9 10",
        "-179.9 -10",
        "45 84.9",
        "-120 -85.05",
        "81.634948934258375 30.561509253718668",
        "-1.8175081637769495 20.665668878082954",
    ]
    .map(String::from)
    .to_vec();
    for _ in 0..15 {
        centers.push(format!(
            "{} {}",
            rng.coord(-180.0, 180.0),
            rng.coord(-85.0, 85.0)
        ));
    }
    let mut found = 0usize;
    for center in &centers {
        for r in ["1", "150", "700", "2500", "7083", "16751", "25000"] {
            let replies = all_same(
                &mut twin,
                &[
                    &format!("GEOSEARCH world FROMLONLAT {center} BYRADIUS {r} km ASC WITHDIST"),
                    &format!("GEOSEARCH world FROMLONLAT {center} BYBOX {r} {r} km WITHCOORD"),
                    &format!("GEORADIUS world {center} {r} km COUNT 10 DESC"),
                ],
            )
            .await;
            found += replies
                .iter()
                .map(|r| r.matches("\r\n$").count())
                .sum::<usize>();
        }
    }
    assert!(found > 1000, "only {found} results");
}

#[tokio::test]
async fn search_errors_match_redis() {
    let pair = Pair::start().await;
    let mut twin = Twin::connect(&pair).await;
    let replies = all_same(
        &mut twin,
        &[
            "GEOADD Sicily 13.361389 38.115556 Palermo 15.087269 37.502669 Catania",
            "GEOSEARCH Sicily FROMLONLAT 15 37 FROMMEMBER Palermo BYBOX 6 6 km",
            "GEOSEARCH Sicily FROMMEMBER Palermo FROMLONLAT 15 37 BYBOX 6 6 km",
            "GEOSEARCH Sicily FROMMEMBER Palermo FROMMEMBER Catania BYRADIUS 1 km",
            "GEOSEARCH Sicily BYBOX 3 3 km ASC DESC WITHHASH WITHDIST WITHCOORD",
            "geosearch Sicily BYBOX 3 3 km ASC DESC WITHHASH",
            "GeoSearch Sicily FROMLONLAT 15 37 ASC DESC WITHHASH",
            "GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 3 km BYBOX 3 3 km",
            "GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX 6 6 km STOREDIST",
            "GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX 6 6 km STORE x",
            "GEOSEARCH Sicily FROMMEMBER nosuch BYBOX 1 1 km",
            "GEOSEARCH Sicily FROMMEMBER Palermo BYBOX -1 1 km",
            "GEOSEARCH Sicily FROMMEMBER Palermo BYBOX x 1 km",
            "GEOSEARCH Sicily FROMMEMBER Palermo BYBOX 1 y km",
            "GEOSEARCH Sicily FROMMEMBER Palermo BYBOX 1 1 yd",
            "GEOSEARCH Sicily FROMMEMBER Palermo BYBOX 1 1",
            "GEOSEARCH Sicily FROMMEMBER Palermo BYRADIUS -1 km",
            "GEOSEARCH Sicily FROMMEMBER Palermo BYRADIUS nan km",
            "GEOSEARCH Sicily FROMLONLAT 15 99 BYRADIUS 1 km",
            "GEOSEARCH Sicily FROMLONLAT x 37 BYRADIUS 1 km",
            "GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 1 km COUNT 0",
            "GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 1 km COUNT -3",
            "GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 1 km COUNT x",
            "GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 1 km COUNT",
            "GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 1 km ANY",
            "GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 1 km FOO",
            "GEOSEARCH nokey FROMMEMBER nosuch BYBOX 1 1 km",
            "GEOSEARCH nokey FROMMEMBER nosuch BYBOX 1 1 km ANY",
            "GEOSEARCH nokey FROMLONLAT 15 37",
            "GEOSEARCHSTORE d Sicily FROMMEMBER Palermo BYRADIUS 1 km WITHDIST",
            "GEOSEARCHSTORE d Sicily FROMLONLAT 15 37 BYRADIUS 50 km STORE x",
            "GEOSEARCHSTORE d Sicily FROMLONLAT 15 37 BYRADIUS 50 km ANY",
            "GEORADIUS Sicily 15 37 200 km STORE",
            "GEORADIUS Sicily 15 37 200 km STORE d WITHDIST",
            "GEORADIUS Sicily 15 37 200 km STOREDIST d WITHHASH",
            "GEORADIUS Sicily 15 37 200 km STORE d WITHCOORD",
            "GEORADIUS Sicily 15 37 200 km BYBOX 1 1 km",
            "GEORADIUS Sicily 15 37 200 km FROMMEMBER Palermo",
            "GEORADIUS Sicily 15 37 -1 km",
            "GEORADIUS Sicily 15 37 x km",
            "GEORADIUS Sicily 15 37 1 yd",
            "GEORADIUS Sicily 215 37 1 km",
            "GEORADIUS Sicily 15 37 1 km ANY ASC",
            "GEORADIUS_RO Sicily 15 37 200 km STORE d",
            "GEORADIUS_RO Sicily 15 37 200 km STOREDIST d",
            "GEORADIUSBYMEMBER Sicily nosuch 200 km",
            "GEORADIUSBYMEMBER Sicily Palermo x km",
            "GEORADIUSBYMEMBER nokey nosuch x yd",
            "GEORADIUSBYMEMBER nokey nosuch x yd FOO",
            "GEORADIUSBYMEMBER_RO Sicily Palermo 200 km STORE d",
            "GEORADIUS Sicily 15 37",
            "GEOSEARCH Sicily FROMLONLAT 15",
            "GEOSEARCHSTORE d Sicily FROMLONLAT 15 37",
            "SET str x",
            "GEOSEARCH str FROMLONLAT 99 99",
            "GEORADIUS str 915 37 1 km",
            "GEORADIUSBYMEMBER str m 1 km",
            "GEOSEARCHSTORE d str FROMLONLAT 15 37 BYRADIUS 1 km",
            "EXISTS d x",
        ],
    )
    .await;
    assert_eq!(replies[1], "-ERR syntax error\r\n");
    assert_eq!(
        replies[4],
        "-ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for GEOSEARCH\r\n"
    );
    assert_eq!(
        replies[6],
        "-ERR exactly one of BYRADIUS and BYBOX can be specified for GeoSearch\r\n"
    );
    assert_eq!(
        replies[10],
        "-ERR could not decode requested zset member\r\n"
    );
    assert_eq!(
        replies[24],
        "-ERR the ANY argument requires COUNT argument\r\n"
    );
    assert_eq!(
        replies[29],
        "-ERR GEOSEARCHSTORE is not compatible with WITHDIST, WITHHASH and WITHCOORD options\r\n"
    );
    assert_eq!(
        replies[33],
        "-ERR STORE option in GEORADIUS is not compatible with WITHDIST, WITHHASH and WITHCOORD options\r\n"
    );
    assert_eq!(replies[47], "*0\r\n");
}

#[tokio::test]
async fn store_forms_write_sorted_sets_as_redis() {
    let pair = Pair::start().await;
    let mut twin = Twin::connect(&pair).await;
    let add = geoadd_points("pts", 3, 200, (12.0, 18.0), (35.0, 39.5), 20);
    same(&mut twin, &add).await;
    let replies = all_same(
        &mut twin,
        &[
            "GEORADIUS pts 15 37 100 km STORE d1",
            "ZRANGE d1 0 -1 WITHSCORES",
            "GEORADIUS pts 15 37 100 km STOREDIST d1 COUNT 10",
            "ZRANGE d1 0 -1 WITHSCORES",
            "GEORADIUS pts 15 37 100 km STORE d1 STOREDIST d2 DESC COUNT 4",
            "ZRANGE d2 0 -1 WITHSCORES",
            "GEORADIUSBYMEMBER pts p1 80 mi STORE d3 COUNT 6 ANY",
            "ZRANGE d3 0 -1 WITHSCORES",
            "GEORADIUSBYMEMBER pts dup2 1 m STOREDIST d3",
            "ZRANGE d3 0 -1 WITHSCORES",
            "GEOSEARCHSTORE d4 pts FROMMEMBER p5 BYBOX 200 100 km ASC COUNT 8",
            "ZRANGE d4 0 -1 WITHSCORES",
            "GEOSEARCHSTORE d4 pts FROMLONLAT 15 37 BYRADIUS 90000 m STOREDIST",
            "ZRANGE d4 0 -1 WITHSCORES",
            // The destination loses its TTL and may have held another type.
            "SET d5 x EX 100",
            "GEOSEARCHSTORE d5 pts FROMLONLAT 15 37 BYRADIUS 50 km",
            "TTL d5",
            "TYPE d5",
            // Nothing found: the destination is deleted.
            "GEOSEARCHSTORE d5 pts FROMLONLAT 15 37 BYRADIUS 0 km",
            "EXISTS d5",
            "GEORADIUS pts 0 0 1 km STORE d4",
            "EXISTS d4",
            "GEOSEARCHSTORE d3 nokey FROMMEMBER x BYRADIUS 1 km",
            "EXISTS d3",
            "GEORADIUSBYMEMBER nokey x 1 km STORE d2",
            "EXISTS d2",
            "GEORADIUSBYMEMBER nokey x 1 km STORE d2",
            // Stored as the source: same scores.
            "GEOSEARCHSTORE copy pts FROMLONLAT 15 37 BYBOX 20000 20000 km",
            "ZCARD copy",
            "ZDIFF 2 pts copy",
            "GEOSEARCHSTORE pts pts FROMMEMBER p0 BYRADIUS 30 km",
            "ZRANGE pts 0 -1",
        ],
    )
    .await;
    assert_eq!(replies[16], ":-1\r\n");
    assert_eq!(replies[17], "+zset\r\n");
    assert_eq!(replies[18], ":0\r\n");
    assert_eq!(replies[19], ":0\r\n");
    assert_eq!(replies[28], ":220\r\n");
    assert_eq!(replies[29], "*0\r\n");
}

/// A GEO key is a sorted set: scores and ranges agree with Redis, and DUMP payloads restore
/// across the servers with the same contents (the payload bytes differ by design: we write
/// sorted sets as `ZSET_2`, Redis small ones as listpacks).
#[tokio::test]
async fn geo_keys_are_sorted_sets_to_other_commands() {
    let pair = Pair::start().await;
    let mut twin = Twin::connect(&pair).await;
    let big = geoadd_points("big", 11, 300, (-10.0, 10.0), (-10.0, 10.0), 0);
    same(&mut twin, &big).await;
    let replies = all_same(
        &mut twin,
        &[
            "GEOADD small 13.361389 38.115556 Palermo 15.087269 37.502669 Catania",
            "ZSCORE small Palermo",
            "ZRANGE small 0 -1 WITHSCORES",
            "TYPE small",
            "ZRANGEBYSCORE big 3377699720527872 +inf LIMIT 0 5 WITHSCORES",
            "ZCARD big",
            "ZREM small Palermo",
            "GEOPOS small Palermo Catania",
            "ZADD small 3479099956230698 Palermo",
            "GEOPOS small Palermo",
        ],
    )
    .await;
    assert_eq!(replies[1], "$16\r\n3479099956230698\r\n");
    assert_eq!(replies[3], "+zset\r\n");
    let Some(real) = &mut twin.real else {
        return;
    };
    for key in ["small", "big"] {
        // Each server's payload restores on the other and reads back the same.
        restore_across(real, &mut twin.ours, key).await;
        restore_across(&mut twin.ours, real, key).await;
    }
}

/// DUMPs `key` on `from`, RESTOREs it on `to` as `restored-<key>`, and asserts ZRANGE and
/// GEOPOS read the same from the copy as from `to`'s own `key`.
async fn restore_across(from: &mut support::Wire, to: &mut support::Wire, key: &str) {
    let target = format!("restored-{key}");
    from.send(&[&["DUMP", key]]).await;
    let dump = from.frame().await;
    let header_end = dump.windows(2).position(|w| w == b"\r\n").unwrap() + 2;
    let payload = &dump[header_end..dump.len() - 2];
    to.send_bytes(&[&[b"RESTORE", target.as_bytes(), b"0", payload, b"REPLACE"]])
        .await;
    assert_eq!(to.frame().await, b"+OK\r\n");
    for read in [
        &["ZRANGE", key, "0", "-1", "WITHSCORES"][..],
        &["GEOPOS", key, "p7", "Catania"],
    ] {
        let mut copy = read.to_vec();
        copy[1] = &target;
        to.send(&[&copy]).await;
        let restored = to.frame().await;
        to.send(&[read]).await;
        assert_eq!(restored, to.frame().await, "{read:?}");
    }
}

#[tokio::test]
async fn geo_commands_raise_redis_keyspace_events() {
    let ours = locksmith_server::Server::builder()
        .notify_keyspace_events("KEA")
        .start()
        .await
        .unwrap();
    let real = support::RealRedis::start_with(&["--notify-keyspace-events", "KEA"]);
    let mut addrs = vec![ours.addr()];
    addrs.extend(real.as_ref().map(|r| r.addr()));
    let mut transcripts = Vec::new();
    for addr in addrs {
        let mut sub = support::Wire::connect(addr).await;
        sub.call(&[&["SUBSCRIBE", "marker"]], 1).await;
        sub.call(&[&["PSUBSCRIBE", "__key*@0__:*"]], 1).await;
        let mut writer = support::Wire::connect(addr).await;
        for line in [
            "GEOADD g 13.361389 38.115556 Palermo 15.087269 37.502669 Catania",
            "GEOADD g NX 13.361389 38.115556 Palermo",
            "GEOADD g XX CH 13.4 38.1 Palermo",
            "GEORADIUS g 15 37 200 km STORE d1",
            "GEORADIUS g 15 37 1 km STORE d1",
            "GEOSEARCHSTORE d2 g FROMLONLAT 15 37 BYRADIUS 200 km STOREDIST",
            "GEOSEARCHSTORE d2 g FROMLONLAT 15 37 BYRADIUS 200 km",
            "GEOSEARCHSTORE d2 nokey FROMLONLAT 15 37 BYRADIUS 200 km",
            "GEORADIUSBYMEMBER g Palermo 300 km STOREDIST d3",
            "GEOSEARCH g FROMMEMBER Palermo BYRADIUS 300 km",
            "PUBLISH marker done",
        ] {
            let args = words(line);
            writer.call(&[&strs(&args)], 1).await;
        }
        let mut frames = Vec::new();
        for _ in 0..100 {
            let frame = String::from_utf8_lossy(&sub.frame().await).into_owned();
            let done = frame.contains("marker");
            frames.push(frame);
            if done {
                break;
            }
        }
        transcripts.push(frames);
    }
    let all = transcripts[0].concat();
    for event in ["zadd", "georadiusstore", "geosearchstore", "del"] {
        assert!(all.contains(event), "no {event} event in {all}");
    }
    if let [ours, real] = &transcripts[..] {
        assert_eq!(ours, real, "left: ours, right: redis");
    }
}

#[tokio::test]
async fn scripts_see_geo_replies_as_redis_scripts_do() {
    let pair = Pair::start().await;
    let mut twin = Twin::connect(&pair).await;
    for (script, keys) in [
        (
            "return redis.call('GEOADD', KEYS[1], '13.361389', '38.115556', 'Palermo', \
             '0.000001', '0.000001', 'tiny')",
            &["1", "g"][..],
        ),
        (
            "return redis.call('GEOPOS', KEYS[1], 'Palermo', 'tiny', 'x')",
            &["1", "g"],
        ),
        (
            "redis.setresp(3) local p = redis.call('GEOPOS', KEYS[1], 'Palermo', 'tiny') \
             return {tostring(p[1][1]['double']), tostring(p[2][2]['double'])}",
            &["1", "g"],
        ),
        (
            "return redis.call('GEOSEARCH', KEYS[1], 'FROMLONLAT', '13', '38', 'BYRADIUS', \
             '100', 'km', 'WITHCOORD', 'WITHDIST', 'WITHHASH')",
            &["1", "g"],
        ),
        (
            "return redis.call('GEODIST', KEYS[1], 'Palermo', 'tiny', 'km')",
            &["1", "g"],
        ),
        (
            "return redis.pcall('GEOADD', KEYS[1], '200', '1', 'x')",
            &["1", "g"],
        ),
        (
            "return redis.call('GEORADIUS', KEYS[1], '13', '38', '100', 'km', 'STORE', KEYS[2])",
            &["2", "g", "d"],
        ),
        (
            "return redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')",
            &["1", "d"],
        ),
    ] {
        let mut args = vec!["EVAL".to_string(), script.to_string()];
        args.extend(keys.iter().map(|k| k.to_string()));
        same(&mut twin, &args).await;
    }
    // A read-only script may run the _RO forms only.
    for command in ["GEORADIUS", "GEORADIUS_RO"] {
        let script = format!("return redis.pcall('{command}', KEYS[1], '13', '38', '100', 'km')");
        let args = ["EVAL_RO", &script, "1", "g"].map(String::from);
        same(&mut twin, &args).await;
    }
}

#[tokio::test]
async fn command_info_and_key_extraction_match_redis_for_geo() {
    let pair = Pair::start().await;
    let names = [
        "geoadd",
        "geodist",
        "geohash",
        "geopos",
        "geosearch",
        "geosearchstore",
        "georadius",
        "georadiusbymember",
        "georadius_ro",
        "georadiusbymember_ro",
    ];
    let info = format!("COMMAND INFO {}", names.join(" "));
    let mut resp2 = Twin::connect(&pair).await;
    let mut resp3 = resp3_twin(&pair).await;
    let script = [
        info.as_str(),
        "COMMAND GETKEYS GEOADD k 1 2 m",
        "COMMAND GETKEYS GEORADIUS k 1 2 3 km",
        "COMMAND GETKEYS GEORADIUS k 1 2 3 km STORE d",
        "COMMAND GETKEYS GEORADIUS k 1 2 3 km STORE d STOREDIST e",
        "COMMAND GETKEYS GEORADIUS k 1 2 3 km STORE d STORE e",
        "COMMAND GETKEYS GEORADIUS k 1 2 3 km COUNT STORE",
        "COMMAND GETKEYS GEORADIUSBYMEMBER k m 3 km storedist d",
        "COMMAND GETKEYS GEORADIUS_RO k 1 2 3 km",
        "COMMAND GETKEYS GEOSEARCHSTORE d s FROMMEMBER m BYRADIUS 1 km",
        "COMMAND GETKEYS GEOSEARCH s FROMMEMBER m BYRADIUS 1 km",
    ];
    let two = all_same(&mut resp2, &script).await;
    all_same(&mut resp3, &script).await;
    assert!(
        two[0].contains("$7\r\nkeyword\r\n$5\r\nSTORE\r\n"),
        "{}",
        two[0]
    );
    assert_eq!(two[4], "*3\r\n$1\r\nk\r\n$1\r\nd\r\n$1\r\ne\r\n");
    // The ACL category lists them all.
    let list = support::cmd(&["COMMAND", "LIST", "FILTERBY", "ACLCAT", "geo"]);
    let mut ours: Vec<String> = list.query_async(&mut pair.ours_con.clone()).await.unwrap();
    ours.sort();
    let mut want: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    want.sort();
    assert_eq!(ours, want);
    if let Some(real_con) = &pair.real_con {
        let mut real: Vec<String> = list.query_async(&mut real_con.clone()).await.unwrap();
        real.sort();
        assert_eq!(ours, real);
    }
    // COMMAND DOCS has Redis's summary and group (not yet its other fields).
    resp2
        .ours
        .send(&[&["COMMAND", "DOCS", "geosearchstore"]])
        .await;
    let docs = String::from_utf8_lossy(&resp2.ours.frame().await).into_owned();
    assert!(
        docs.contains(
            "members inside an area of a box or a circle, and store the result in another key."
        ) && docs.contains("$5\r\ngroup\r\n$3\r\ngeo\r\n"),
        "{docs}"
    );
}

/// Redis compares option words and units with `strcasecmp`, which stops at a NUL byte.
#[tokio::test]
async fn words_with_a_nul_byte_read_as_redis_reads_them() {
    let pair = Pair::start().await;
    let mut twin = Twin::connect(&pair).await;
    all_same(&mut twin, &["GEOADD k 1 2 a 3 4 b"]).await;
    let commands: &[&[&[u8]]] = &[
        &[b"GEODIST", b"k", b"a", b"b", b"km\0x"],
        &[
            b"GEOADD", b"k", b"nx\0y", b"CH\0", b"5", b"6", b"c", b"1", b"2", b"a",
        ],
        &[b"GEOADD", b"k", b"xx\0", b"nx", b"5", b"6", b"c"],
        &[
            b"GEOSEARCH",
            b"k",
            b"fromlonlat\0",
            b"1",
            b"2",
            b"byradius\0z",
            b"500",
            b"km\0",
            b"withdist\0",
            b"COUNT\0",
            b"1",
        ],
        &[
            b"GEORADIUS",
            b"k",
            b"1",
            b"2",
            b"500",
            b"mi\0",
            b"STORE\0x",
            b"d",
        ],
        &[b"ZRANGE", b"d", b"0", b"-1"],
        &[
            b"COMMAND",
            b"GETKEYS",
            b"GEORADIUS",
            b"k",
            b"1",
            b"2",
            b"3",
            b"km",
            b"store\0",
            b"d",
        ],
        &[
            b"GEOSEARCH",
            b"k",
            b"FROMLONLAT",
            b"1",
            b"2",
            b"BYRADIUS",
            b"500",
            b"km",
            b"\0",
        ],
    ];
    let mut replies = Vec::new();
    for command in commands {
        twin.ours.send_bytes(&[command]).await;
        let ours = twin.ours.frame().await;
        if let Some(real) = &mut twin.real {
            real.send_bytes(&[command]).await;
            assert_eq!(
                String::from_utf8_lossy(&ours),
                String::from_utf8_lossy(&real.frame().await),
                "{:?}",
                String::from_utf8_lossy(&command.concat())
            );
        }
        replies.push(String::from_utf8_lossy(&ours).into_owned());
    }
    assert_eq!(replies[0], "$8\r\n314.3718\r\n");
    // NX and CH: `c` added, `a` left alone.
    assert_eq!(replies[1], ":1\r\n");
    assert_eq!(replies[7], "-ERR syntax error\r\n");
}
