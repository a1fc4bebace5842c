//! GEO commands, as Redis's `geo.c` (7.0) runs them over sorted sets: a member's score is the
//! 52-bit geohash of its position (see [`crate::geohash`]), so ZRANGE, ZSCORE and DUMP see
//! what they see on Redis. GEOADD (NX/XX/CH) is ZADD with encoded scores; GEOPOS, GEOHASH and
//! GEODIST decode them; GEOSEARCH, GEOSEARCHSTORE, GEORADIUS, GEORADIUSBYMEMBER and their
//! `_RO` forms search the nine cells around a circle or a box and filter by distance.

use super::zset;
use super::{parse_f64, parse_i64, Args, CmdResult, Command, CommandError, Ctx};
use crate::db::{Value, ZSet};
use crate::geohash::{
    self, HashBits, SearchAreas, Shape, ShapeKind, GEO_LAT_MAX, GEO_LAT_MIN, GEO_LONG_MAX,
    GEO_LONG_MIN, GEO_STEP_MAX,
};
use crate::notify;
use bytes::Bytes;
use locksmith_resp::Frame;

/// The GEO family's table.
pub(crate) static COMMANDS: &[Command] = &[
    Command::new("geoadd", geoadd),
    Command::new("geodist", geodist),
    Command::new("geohash", geohash),
    Command::new("geopos", geopos),
    Command::new("georadius", georadius),
    Command::new("georadiusbymember", georadiusbymember),
    Command::new("georadius_ro", georadius_ro),
    Command::new("georadiusbymember_ro", georadiusbymember_ro),
    Command::new("geosearch", geosearch),
    Command::new("geosearchstore", geosearchstore),
];

/// Argument `i` of the command line (arity checks make the fixed ones present).
fn arg(argv: &[Bytes], i: usize) -> Result<&Bytes, CommandError> {
    argv.get(i).ok_or(CommandError::Syntax)
}

/// `arg` up to its first NUL byte: what C's `strcasecmp` compares.
fn c_str(arg: &Bytes) -> Bytes {
    let end = arg.iter().position(|&b| b == 0).unwrap_or(arg.len());
    arg.slice(..end)
}

/// Whether `arg` is `word` as Redis's `strcasecmp` sees it (ASCII case ignored, and the
/// comparison stops at a NUL byte: `km\0x` is `km`). Redis matches option words and units so.
fn word_is(arg: &Bytes, word: &str) -> bool {
    c_str(arg).eq_ignore_ascii_case(word.as_bytes())
}

/// The sorted set at `key`: `Ok(None)` if absent, `WRONGTYPE` if another type (Redis's
/// `lookupKeyRead` then `checkType`).
fn zset_at<'c>(ctx: &'c mut Ctx<'_>, key: &Bytes) -> Result<Option<&'c ZSet>, CommandError> {
    match ctx.lookup_read(key).map(|e| &e.value) {
        None => Ok(None),
        Some(Value::ZSet(z)) => Ok(Some(z)),
        Some(_) => Err(CommandError::WrongType),
    }
}

/// A longitude and a latitude argument (`extractLongLatOrReply`): each a float, the pair
/// within the GEO limits.
fn lon_lat(pair: &[Bytes]) -> Result<[f64; 2], CommandError> {
    let mut xy = [0.0; 2];
    for (slot, text) in xy.iter_mut().zip(pair) {
        *slot = parse_f64(text).ok_or(CommandError::NotFloat)?;
    }
    let [lon, lat] = xy;
    if !(GEO_LONG_MIN..=GEO_LONG_MAX).contains(&lon) || !(GEO_LAT_MIN..=GEO_LAT_MAX).contains(&lat)
    {
        // Redis formats the pair with `%f`.
        return Err(CommandError::err(format!(
            "invalid longitude,latitude pair {lon:.6},{lat:.6}"
        )));
    }
    Ok(xy)
}

/// The position of `member` in `z` (`longLatFromMember`).
fn member_position(z: &ZSet, member: &[u8]) -> Result<[f64; 2], CommandError> {
    z.score(member)
        .and_then(geohash::decode_score)
        .ok_or_else(|| CommandError::err("could not decode requested zset member"))
}

/// Meters per `unit` (`extractUnitOrReply`).
fn unit(text: &Bytes) -> Result<f64, CommandError> {
    let known = [("m", 1.0), ("km", 1000.0), ("ft", 0.3048), ("mi", 1609.34)];
    known
        .iter()
        .find(|(name, _)| word_is(text, name))
        .map(|(_, meters)| *meters)
        .ok_or_else(|| CommandError::err("unsupported unit provided. please use M, KM, FT, MI"))
}

/// `<radius> <unit>` (`extractDistanceOrReply`): (meters per unit, radius).
fn radius_and_unit(args: &[Bytes]) -> Result<(f64, f64), CommandError> {
    let [radius, unit_arg] = args else {
        return Err(CommandError::Syntax);
    };
    let radius = parse_f64(radius).ok_or_else(|| CommandError::err("need numeric radius"))?;
    if radius < 0.0 {
        return Err(CommandError::err("radius cannot be negative"));
    }
    Ok((unit(unit_arg)?, radius))
}

/// `<width> <height> <unit>` (`extractBoxOrReply`): (meters per unit, width, height).
fn box_and_unit(args: &[Bytes]) -> Result<(f64, f64, f64), CommandError> {
    let [width, height, unit_arg] = args else {
        return Err(CommandError::Syntax);
    };
    let width = parse_f64(width).ok_or_else(|| CommandError::err("need numeric width"))?;
    let height = parse_f64(height).ok_or_else(|| CommandError::err("need numeric height"))?;
    if height < 0.0 || width < 0.0 {
        return Err(CommandError::err("height or width cannot be negative"));
    }
    Ok((unit(unit_arg)?, width, height))
}

/// C's `llrint` on x86-64: round half to even; out of range (or NaN) gives `LLONG_MIN`.
fn llrint(x: f64) -> i64 {
    let r = x.round_ties_even();
    if (-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&r) {
        r as i64
    } else {
        i64::MIN
    }
}

/// C's `(long long)` cast of a double on x86-64: truncation; out of range (or NaN) gives
/// `LLONG_MIN`.
fn trunc_i64(x: f64) -> i64 {
    if (-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&x) {
        x as i64
    } else {
        i64::MIN
    }
}

/// A distance as Redis replies it (`addReplyDoubleDistance`: `fixedpoint_d2string` with four
/// decimals, `0.7750`), a bulk string in both protocols.
fn distance_text(d: f64) -> Frame {
    const DIGITS: usize = 4;
    if d == 0.0 {
        return Frame::Bulk(Bytes::from_static(b"0.0000"));
    }
    let scaled = llrint(d * 10_000.0);
    let digits = scaled.unsigned_abs().to_string();
    let mut out = String::with_capacity(digits.len() + 3);
    if scaled < 0 {
        out.push('-');
    }
    if digits.len() <= DIGITS {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', DIGITS - digits.len()));
        out.push_str(&digits);
    } else {
        let (int, frac) = digits.split_at(digits.len() - DIGITS);
        out.push_str(int);
        out.push('.');
        out.push_str(frac);
    }
    Frame::Bulk(Bytes::from(out))
}

/// ```text
/// GEOADD key [NX | XX] [CH] longitude latitude member [longitude latitude member ...]
/// ```
///
/// As Redis: the positions become scores and ZADD runs with them, so the reply, the `zadd`
/// event and what replicas get (`ZADD key [options] score member ...`) are ZADD's.
fn geoadd(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let argv = args.argv();
    args.rest();
    let (mut xx, mut nx) = (false, false);
    let mut longidx = 2;
    while let Some(opt) = argv.get(longidx) {
        if word_is(opt, "nx") {
            nx = true;
        } else if word_is(opt, "xx") {
            xx = true;
        } else if !word_is(opt, "ch") {
            break;
        }
        longidx += 1;
    }
    let triples = argv.get(longidx..).unwrap_or_default();
    if !triples.len().is_multiple_of(3) || (xx && nx) {
        return Err(CommandError::Syntax);
    }
    let mut zadd_argv = Vec::with_capacity(longidx + triples.len() / 3 * 2);
    zadd_argv.push(Bytes::from_static(b"zadd"));
    zadd_argv.extend(argv.get(1).cloned());
    // ZADD reads the options with `strcasecmp` too: what it sees of them.
    zadd_argv.extend(argv.get(2..longidx).unwrap_or_default().iter().map(c_str));
    for triple in triples.chunks_exact(3) {
        let [lon, lat] = lon_lat(triple.get(..2).unwrap_or_default())?;
        let hash = geohash::encode_wgs84(lon, lat, GEO_STEP_MAX).unwrap_or_default();
        let score = geohash::align_52bits(hash);
        zadd_argv.push(Bytes::from(score.to_string()));
        zadd_argv.extend(triple.get(2).cloned());
    }
    let dirty = ctx.state.dirty;
    let reply = zset::zadd(ctx, &mut Args::new(&zadd_argv, 1));
    if ctx.state.dirty != dirty {
        ctx.propagate(zadd_argv);
    }
    reply
}

/// ```text
/// GEODIST key member1 member2 [M | KM | FT | MI]
/// ```
fn geodist(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let argv = args.argv();
    args.rest();
    // The unit is checked before the key is read.
    let to_meters = match argv.len() {
        5 => unit(arg(argv, 4)?)?,
        n if n > 5 => return Err(CommandError::Syntax),
        _ => 1.0,
    };
    let Some(z) = zset_at(ctx, arg(argv, 1)?)? else {
        return Ok(Frame::Null);
    };
    let (Some(s1), Some(s2)) = (z.score(arg(argv, 2)?), z.score(arg(argv, 3)?)) else {
        return Ok(Frame::Null);
    };
    match (geohash::decode_score(s1), geohash::decode_score(s2)) {
        (Some([x1, y1]), Some([x2, y2])) => {
            Ok(distance_text(geohash::distance(x1, y1, x2, y2) / to_meters))
        }
        _ => Ok(Frame::Null),
    }
}

/// The 11-character standard geohash of the position `score` stands for: decoded from the GEO
/// grid, re-encoded on the standard one (latitudes ±90), 52 bits in 5-bit characters with a
/// last `0`, as Redis writes it.
fn geohash_string(score: f64) -> Option<Bytes> {
    const ALPHABET: &[u8; 32] = b"0123456789bcdefghjkmnpqrstuvwxyz";
    let [lon, lat] = geohash::decode_score(score)?;
    let hash = geohash::encode(geohash::WGS84_LONG, geohash::STANDARD_LAT, lon, lat, 26)
        .unwrap_or(HashBits { bits: 0, step: 26 });
    let mut out = Vec::with_capacity(11);
    for i in 0..11usize {
        let idx = if i == 10 {
            // 52 bits make ten characters and two bits; the eleventh is assumed zero.
            0
        } else {
            (hash.bits >> (52 - (i + 1) * 5)) & 0x1f
        };
        out.push(ALPHABET.get(idx as usize).copied().unwrap_or(b'0'));
    }
    Some(Bytes::from(out))
}

/// ```text
/// GEOHASH key [member [member ...]]
/// ```
fn geohash(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.bytes()?;
    let members = args.rest();
    let z = zset_at(ctx, key)?;
    Ok(Frame::Array(
        members
            .iter()
            .map(|m| {
                z.and_then(|z| z.score(m))
                    .and_then(geohash_string)
                    .map_or(Frame::Null, Frame::Bulk)
            })
            .collect(),
    ))
}

/// ```text
/// GEOPOS key [member [member ...]]
/// ```
fn geopos(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.bytes()?;
    let members = args.rest();
    let z = zset_at(ctx, key)?;
    Ok(Frame::Array(
        members
            .iter()
            .map(
                |m| match z.and_then(|z| z.score(m)).and_then(geohash::decode_score) {
                    Some([lon, lat]) => {
                        Frame::Array(vec![Frame::HumanDouble(lon), Frame::HumanDouble(lat)])
                    }
                    None => Frame::NullArray,
                },
            )
            .collect(),
    ))
}

/// Which search command runs (Redis's `RADIUS_COORDS`, `RADIUS_MEMBER`, `RADIUS_NOSTORE`,
/// `GEOSEARCH`, `GEOSEARCHSTORE` flags).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Form {
    /// GEORADIUS, or GEORADIUS_RO when `store` is false.
    Radius {
        /// Takes STORE/STOREDIST.
        store: bool,
    },
    /// GEORADIUSBYMEMBER, or GEORADIUSBYMEMBER_RO when `store` is false.
    ByMember {
        /// Takes STORE/STOREDIST.
        store: bool,
    },
    /// GEOSEARCH, or GEOSEARCHSTORE when `store` is true.
    Search {
        /// GEOSEARCHSTORE.
        store: bool,
    },
}

/// Result order (`SORT_NONE`, `SORT_ASC`, `SORT_DESC`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sort {
    None,
    Asc,
    Desc,
}

/// A parsed search.
#[derive(Debug)]
struct Query {
    /// The centre, once FROMMEMBER/FROMLONLAT or the GEORADIUS arguments set it.
    center: Option<[f64; 2]>,
    /// The shape, once BYRADIUS/BYBOX or the GEORADIUS arguments set it.
    kind: Option<ShapeKind>,
    /// Meters per unit.
    conversion: f64,
    /// STORE/STOREDIST destination, or GEOSEARCHSTORE's.
    store: Option<Bytes>,
    /// Store distances instead of positions.
    storedist: bool,
    withdist: bool,
    withhash: bool,
    withcoord: bool,
    sort: Sort,
    /// Stop the search after `count` matches (ANY).
    any: bool,
    /// At most this many results (0: all).
    count: u64,
}

/// One match (`geoPoint`).
#[derive(Debug, Clone)]
struct GeoPoint {
    xy: [f64; 2],
    /// Meters from the centre.
    dist: f64,
    score: f64,
    member: Bytes,
}

/// Parses a search's arguments as `georadiusGeneric` does, in its order (the first bad
/// argument decides the error). `z` is the source set: without one, FROMMEMBER and
/// GEORADIUSBYMEMBER's member are not looked up.
fn parse_query(z: Option<&ZSet>, argv: &[Bytes], form: Form) -> Result<Query, CommandError> {
    let mut q = Query {
        center: None,
        kind: None,
        conversion: 0.0,
        store: None,
        storedist: false,
        withdist: false,
        withhash: false,
        withcoord: false,
        sort: Sort::None,
        any: false,
        count: 0,
    };
    let window = |from: usize, len: usize| argv.get(from..from + len).ok_or(CommandError::Syntax);
    let base_args = match form {
        Form::Radius { .. } => {
            q.center = Some(lon_lat(window(2, 2)?)?);
            let (conversion, radius) = radius_and_unit(window(4, 2)?)?;
            q.conversion = conversion;
            q.kind = Some(ShapeKind::Circle { radius });
            6
        }
        // Without a source the rest is still parsed, for the right reply to STORE.
        Form::ByMember { .. } if z.is_none() => 5,
        Form::ByMember { .. } => {
            if let Some(z) = z {
                q.center = Some(member_position(z, arg(argv, 2)?)?);
            }
            let (conversion, radius) = radius_and_unit(window(3, 2)?)?;
            q.conversion = conversion;
            q.kind = Some(ShapeKind::Circle { radius });
            5
        }
        Form::Search { store: false } => 2,
        Form::Search { store: true } => {
            q.store = Some(arg(argv, 1)?.clone());
            3
        }
    };
    let (store_allowed, search, search_store) = match form {
        Form::Radius { store } | Form::ByMember { store } => (store, false, false),
        Form::Search { store } => (false, true, store),
    };
    let (mut frommember, mut fromloc, mut byradius, mut bybox) = (false, false, false, false);
    let options = argv.get(base_args..).unwrap_or_default();
    let remaining = options.len();
    let mut i = 0;
    while let Some(opt) = options.get(i) {
        let is = |word: &str| word_is(opt, word);
        let next = options.get(i + 1);
        if is("withdist") {
            q.withdist = true;
        } else if is("withhash") {
            q.withhash = true;
        } else if is("withcoord") {
            q.withcoord = true;
        } else if is("any") {
            q.any = true;
        } else if is("asc") {
            q.sort = Sort::Asc;
        } else if is("desc") {
            q.sort = Sort::Desc;
        } else if is("count") && i + 1 < remaining {
            let count = parse_i64(next.ok_or(CommandError::Syntax)?)?;
            if count <= 0 {
                return Err(CommandError::err("COUNT must be > 0"));
            }
            q.count = count.unsigned_abs();
            i += 1;
        } else if (is("store") || is("storedist")) && i + 1 < remaining && store_allowed {
            q.store = next.cloned();
            q.storedist = is("storedist");
            i += 1;
        } else if is("storedist") && search && search_store {
            q.storedist = true;
        } else if is("frommember") && i + 1 < remaining && search && !fromloc {
            // Without a source the member is not looked up; the missing key answers later.
            if let (Some(z), Some(member)) = (z, next) {
                q.center = Some(member_position(z, member)?);
            }
            frommember = true;
            i += 1;
        } else if is("fromlonlat") && i + 2 < remaining && search && !frommember {
            q.center = Some(lon_lat(options.get(i + 1..i + 3).unwrap_or_default())?);
            fromloc = true;
            i += 2;
        } else if is("byradius") && i + 2 < remaining && search && !bybox {
            let (conversion, radius) =
                radius_and_unit(options.get(i + 1..i + 3).unwrap_or_default())?;
            q.conversion = conversion;
            q.kind = Some(ShapeKind::Circle { radius });
            byradius = true;
            i += 2;
        } else if is("bybox") && i + 3 < remaining && search && !byradius {
            let (conversion, width, height) =
                box_and_unit(options.get(i + 1..i + 4).unwrap_or_default())?;
            q.conversion = conversion;
            q.kind = Some(ShapeKind::Rectangle { width, height });
            bybox = true;
            i += 3;
        } else {
            return Err(CommandError::Syntax);
        }
        i += 1;
    }
    if q.store.is_some() && (q.withdist || q.withhash || q.withcoord) {
        return Err(CommandError::err(format!(
            "{} is not compatible with WITHDIST, WITHHASH and WITHCOORD options",
            if search_store {
                "GEOSEARCHSTORE"
            } else {
                "STORE option in GEORADIUS"
            }
        )));
    }
    // Redis names the command as it was sent.
    let name = String::from_utf8_lossy(argv.first().map(|n| &n[..]).unwrap_or_default());
    if search && !(frommember || fromloc) {
        return Err(CommandError::err(format!(
            "exactly one of FROMMEMBER or FROMLONLAT can be specified for {name}"
        )));
    }
    if search && !(byradius || bybox) {
        return Err(CommandError::err(format!(
            "exactly one of BYRADIUS and BYBOX can be specified for {name}"
        )));
    }
    if q.any && q.count == 0 {
        return Err(CommandError::err(
            "the ANY argument requires COUNT argument",
        ));
    }
    Ok(q)
}

/// Whether the position `score` stands for is inside `shape`; then the position and its
/// distance from the centre in meters (`geoWithinShape`).
fn within_shape(shape: &Shape, score: f64) -> Option<([f64; 2], f64)> {
    let xy = geohash::decode_score(score)?;
    let [cx, cy] = shape.xy;
    let dist = match shape.kind {
        ShapeKind::Circle { radius } => {
            geohash::distance_if_in_radius(cx, cy, xy[0], xy[1], radius * shape.conversion)
        }
        ShapeKind::Rectangle { width, height } => geohash::distance_if_in_rectangle(
            width * shape.conversion,
            height * shape.conversion,
            cx,
            cy,
            xy[0],
            xy[1],
        ),
    }?;
    Some((xy, dist))
}

/// Appends the members of `cell` inside `shape` to `found`, in the set's order, stopping once
/// `found` holds `limit` (0: no limit) (`membersOfGeoHashBox`): the cell's members are the
/// scores from its bits aligned to 52, included, to the next cell's, excluded.
fn members_of_cell(
    z: &ZSet,
    cell: HashBits,
    shape: &Shape,
    found: &mut Vec<GeoPoint>,
    limit: usize,
) {
    let min = geohash::align_52bits(cell) as f64;
    let next = HashBits {
        bits: cell.bits.wrapping_add(1),
        step: cell.step,
    };
    let max = geohash::align_52bits(next) as f64;
    for (member, score) in z.scores_from(min) {
        if score >= max {
            break;
        }
        if let Some((xy, dist)) = within_shape(shape, score) {
            found.push(GeoPoint {
                xy,
                dist,
                score,
                member: member.clone(),
            });
        }
        if limit != 0 && found.len() >= limit {
            break;
        }
    }
}

/// The members inside `shape` from the centre cell and its neighbours, in Redis's order
/// (`membersOfAllNeighbors`): centre, N, S, E, W, NE, NW, SE, SW, skipping excluded cells and
/// a cell equal to the one searched just before it (huge radii make neighbours coincide).
fn members_of_all_neighbors(
    z: &ZSet,
    areas: &SearchAreas,
    shape: &Shape,
    limit: usize,
) -> Vec<GeoPoint> {
    let n = &areas.neighbors;
    let cells = [
        areas.hash,
        n.north,
        n.south,
        n.east,
        n.west,
        n.north_east,
        n.north_west,
        n.south_east,
        n.south_west,
    ];
    let mut found = Vec::new();
    // Redis keeps the index of the last cell searched, and index 0 (the centre) disables the
    // comparison: the north cell is never compared with the centre.
    let mut last_processed: Option<HashBits> = None;
    for (i, cell) in cells.into_iter().enumerate() {
        if cell.is_zero() || last_processed == Some(cell) {
            continue;
        }
        if limit != 0 && found.len() >= limit {
            break;
        }
        members_of_cell(z, cell, shape, &mut found, limit);
        last_processed = (i != 0).then_some(cell);
    }
    found
}

/// Redis's comparison of two matches by distance (`sort_gp_asc`), negated for DESC.
fn compare(a: &GeoPoint, b: &GeoPoint, sort: Sort) -> i32 {
    let asc = if a.dist > b.dist {
        1
    } else if a.dist == b.dist {
        0
    } else {
        -1
    };
    if sort == Sort::Desc {
        -asc
    } else {
        asc
    }
}

/// Sorts all of `points` as glibc's `qsort` does (a stable top-down merge sort, `msort`), so
/// equal distances keep the order they were found in.
fn sort_all(points: &mut Vec<GeoPoint>, sort: Sort) {
    fn merge_sort(order: &mut [usize], tmp: &mut Vec<usize>, cmp: &dyn Fn(usize, usize) -> i32) {
        let n = order.len();
        if n <= 1 {
            return;
        }
        let n1 = n / 2;
        let (left, right) = order.split_at_mut(n1);
        merge_sort(left, tmp, cmp);
        merge_sort(right, tmp, cmp);
        tmp.clear();
        let (mut i, mut j) = (0, n1);
        while i < n1 && j < n {
            if cmp(order[i], order[j]) <= 0 {
                tmp.push(order[i]);
                i += 1;
            } else {
                tmp.push(order[j]);
                j += 1;
            }
        }
        // What is left of the right half is already in place.
        tmp.extend_from_slice(&order[i..n1]);
        order[..tmp.len()].copy_from_slice(tmp);
    }
    let mut order: Vec<usize> = (0..points.len()).collect();
    let mut tmp = Vec::with_capacity(points.len());
    {
        let pts: &[GeoPoint] = points;
        merge_sort(&mut order, &mut tmp, &|a, b| {
            compare(&pts[a], &pts[b], sort)
        });
    }
    let mut slots: Vec<Option<GeoPoint>> = std::mem::take(points).into_iter().map(Some).collect();
    *points = order
        .into_iter()
        .filter_map(|i| slots.get_mut(i).and_then(Option::take))
        .collect();
}

/// Sorts `points` only as far as its first `k` places need (Redis's `pqsort`, a partial
/// Bentley-McIlroy quicksort, with its pivots and swaps, so that ties come out in Redis's
/// order).
fn sort_first(points: &mut [GeoPoint], k: usize, sort: Sort) {
    if k == 0 || points.is_empty() {
        return;
    }
    pqsort(points, 0, points.len(), 0, k - 1, sort);
}

/// `_pqsort` over `v[base..base + n]`, sorting what overlaps the places `lrange..=rrange`.
fn pqsort(
    v: &mut [GeoPoint],
    mut base: usize,
    mut n: usize,
    lrange: usize,
    rrange: usize,
    sort: Sort,
) {
    let cmp = |v: &[GeoPoint], a: usize, b: usize| compare(&v[a], &v[b], sort);
    let med3 = |v: &[GeoPoint], a: usize, b: usize, c: usize| {
        if cmp(v, a, b) < 0 {
            if cmp(v, b, c) < 0 {
                b
            } else if cmp(v, a, c) < 0 {
                c
            } else {
                a
            }
        } else if cmp(v, b, c) > 0 {
            b
        } else if cmp(v, a, c) < 0 {
            a
        } else {
            c
        }
    };
    let vecswap = |v: &mut [GeoPoint], a: usize, b: usize, k: usize| {
        for i in 0..k {
            v.swap(a + i, b + i);
        }
    };
    // A part is sorted further only if it overlaps the wanted places.
    let wanted = |start: usize, len: usize| !(rrange < start || lrange >= start + len);
    // Each round either returns or continues on a strictly smaller part.
    for _ in 0..v.len().saturating_add(1) {
        if n < 7 {
            for pm in base + 1..base + n {
                let mut pl = pm;
                while pl > base && cmp(v, pl - 1, pl) > 0 {
                    v.swap(pl, pl - 1);
                    pl -= 1;
                }
            }
            return;
        }
        let mut pm = base + n / 2;
        if n > 7 {
            let mut pl = base;
            let mut pn = base + n - 1;
            if n > 40 {
                let d = n / 8;
                pl = med3(v, pl, pl + d, pl + 2 * d);
                pm = med3(v, pm - d, pm, pm + d);
                pn = med3(v, pn - 2 * d, pn - d, pn);
            }
            pm = med3(v, pl, pm, pn);
        }
        v.swap(base, pm);
        let (mut pa, mut pb) = (base + 1, base + 1);
        let (mut pc, mut pd) = (base + n - 1, base + n - 1);
        loop {
            while pb <= pc {
                let r = cmp(v, pb, base);
                if r > 0 {
                    break;
                }
                if r == 0 {
                    v.swap(pa, pb);
                    pa += 1;
                }
                pb += 1;
            }
            while pb <= pc {
                let r = cmp(v, pc, base);
                if r < 0 {
                    break;
                }
                if r == 0 {
                    v.swap(pc, pd);
                    pd -= 1;
                }
                pc -= 1;
            }
            if pb > pc {
                break;
            }
            v.swap(pb, pc);
            pb += 1;
            pc -= 1;
        }
        let pn = base + n;
        let r = (pa - base).min(pb - pa);
        vecswap(v, base, pb - r, r);
        let r = (pd - pc).min(pn - pd - 1);
        vecswap(v, pb, pn - r, r);
        let r = pb - pa;
        if r > 1 && wanted(base, r) {
            pqsort(v, base, r, lrange, rrange, sort);
        }
        let r = pd - pc;
        if r > 1 {
            base = pn - r;
            n = r;
            if wanted(base, n) {
                continue;
            }
        }
        return;
    }
}

/// ```text
/// GEORADIUS key longitude latitude radius <M | KM | FT | MI> [WITHCOORD] [WITHDIST]
///   [WITHHASH] [COUNT count [ANY]] [ASC | DESC] [STORE key | STOREDIST key]
/// ```
fn georadius(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    search(ctx, args, Form::Radius { store: true })
}

/// ```text
/// GEORADIUSBYMEMBER key member radius <M | KM | FT | MI> [WITHCOORD] [WITHDIST] [WITHHASH]
///   [COUNT count [ANY]] [ASC | DESC] [STORE key | STOREDIST key]
/// ```
fn georadiusbymember(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    search(ctx, args, Form::ByMember { store: true })
}

/// ```text
/// GEORADIUS_RO key longitude latitude radius <M | KM | FT | MI> [WITHCOORD] [WITHDIST]
///   [WITHHASH] [COUNT count [ANY]] [ASC | DESC]
/// ```
fn georadius_ro(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    search(ctx, args, Form::Radius { store: false })
}

/// ```text
/// GEORADIUSBYMEMBER_RO key member radius <M | KM | FT | MI> [WITHCOORD] [WITHDIST]
///   [WITHHASH] [COUNT count [ANY]] [ASC | DESC]
/// ```
fn georadiusbymember_ro(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    search(ctx, args, Form::ByMember { store: false })
}

/// ```text
/// GEOSEARCH key <FROMMEMBER member | FROMLONLAT longitude latitude>
///   <BYRADIUS radius <M | KM | FT | MI> | BYBOX width height <M | KM | FT | MI>>
///   [ASC | DESC] [COUNT count [ANY]] [WITHCOORD] [WITHDIST] [WITHHASH]
/// ```
fn geosearch(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    search(ctx, args, Form::Search { store: false })
}

/// ```text
/// GEOSEARCHSTORE destination source <FROMMEMBER member | FROMLONLAT longitude latitude>
///   <BYRADIUS radius <M | KM | FT | MI> | BYBOX width height <M | KM | FT | MI>>
///   [ASC | DESC] [COUNT count [ANY]] [STOREDIST]
/// ```
fn geosearchstore(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    search(ctx, args, Form::Search { store: true })
}

/// Every search command (`georadiusGeneric`): read the source, parse, search the cells,
/// sort, then reply or store.
fn search(ctx: &mut Ctx<'_>, args: &mut Args<'_>, form: Form) -> CmdResult {
    let argv = args.argv();
    args.rest();
    let src = arg(
        argv,
        if form == (Form::Search { store: true }) {
            2
        } else {
            1
        },
    )?;
    let (query, found) = {
        let z = zset_at(ctx, src)?;
        let query = parse_query(z, argv, form)?;
        let found = match (z, query.center, query.kind) {
            (Some(z), Some(xy), Some(kind)) => {
                let shape = Shape {
                    kind,
                    xy,
                    conversion: query.conversion,
                };
                let areas = geohash::areas_by_shape_wgs84(&shape);
                let limit = if query.any { query.count } else { 0 };
                let limit = usize::try_from(limit).unwrap_or(usize::MAX);
                Some(members_of_all_neighbors(z, &areas, &shape, limit))
            }
            // A source always comes with a centre and a shape (parsing demands them).
            (Some(_), _, _) => Some(Vec::new()),
            (None, _, _) => None,
        };
        (query, found)
    };
    let Some(mut points) = found else {
        // No source: an empty reply, or the destination deleted.
        return Ok(match &query.store {
            Some(dst) => {
                if ctx.delete(dst) {
                    ctx.notify(notify::GENERIC, "del", dst);
                }
                Frame::Integer(0)
            }
            None => Frame::Array(Vec::new()),
        });
    };
    // COUNT without an order means the nearest ones (not for ANY).
    let mut sort = query.sort;
    if query.count != 0 && sort == Sort::None && !query.any {
        sort = Sort::Asc;
    }
    let total = points.len();
    let returned = match usize::try_from(query.count) {
        Ok(count) if count != 0 && count < total => count,
        _ => total,
    };
    if sort != Sort::None {
        if returned == total {
            sort_all(&mut points, sort);
        } else {
            sort_first(&mut points, returned, sort);
        }
    }
    points.truncate(returned);
    let search_command = matches!(form, Form::Search { .. });
    match query.store {
        None => Ok(Frame::Array(
            points
                .into_iter()
                .map(|gp| reply_item(gp, &query))
                .collect(),
        )),
        Some(dst) => {
            if returned == 0 {
                if ctx.delete(&dst) {
                    ctx.notify(notify::GENERIC, "del", &dst);
                }
                return Ok(Frame::Integer(0));
            }
            let mut z = ZSet::default();
            for gp in points {
                let dist = gp.dist / query.conversion;
                z.insert(gp.member, if query.storedist { dist } else { gp.score });
            }
            ctx.set(&dst, Value::ZSet(z), None);
            let event = if search_command {
                "geosearchstore"
            } else {
                "georadiusstore"
            };
            ctx.notify(notify::ZSET, event, &dst);
            // Redis counts one change per stored member.
            ctx.state.dirty += returned as u64 - 1;
            Ok(Frame::Integer(returned as i64))
        }
    }
}

/// One result: the member alone, or `[member, dist?, hash?, [lon, lat]?]`.
fn reply_item(gp: GeoPoint, q: &Query) -> Frame {
    if !(q.withdist || q.withhash || q.withcoord) {
        return Frame::Bulk(gp.member);
    }
    let mut item = vec![Frame::Bulk(gp.member)];
    if q.withdist {
        item.push(distance_text(gp.dist / q.conversion));
    }
    if q.withhash {
        item.push(Frame::Integer(trunc_i64(gp.score)));
    }
    if q.withcoord {
        let [lon, lat] = gp.xy;
        item.push(Frame::Array(vec![
            Frame::HumanDouble(lon),
            Frame::HumanDouble(lat),
        ]));
    }
    Frame::Array(item)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(dist: f64, id: usize) -> GeoPoint {
        GeoPoint {
            xy: [0.0, 0.0],
            dist,
            score: id as f64,
            member: Bytes::from(id.to_string()),
        }
    }

    fn ids(points: &[GeoPoint]) -> Vec<usize> {
        points.iter().map(|p| p.score as usize).collect()
    }

    #[test]
    fn distances_have_four_decimals_as_fixedpoint_d2string() {
        for (d, want) in [
            (0.0, "0.0000"),
            (-0.0, "0.0000"),
            (0.0001, "0.0001"),
            (6.06429515983917e-05, "0.0001"),
            (0.01, "0.0100"),
            (-0.01, "-0.0100"),
            (0.775, "0.7750"),
            (166274.15156960033, "166274.1516"),
            // Values from Redis's fixedpoint_d2string compiled from 7.0.15.
            (0.00005, "0.0000"),
            (0.00015, "0.0001"),
            (1e-9, "0.0000"),
            (f64::NAN, "-922337203685477.5808"),
        ] {
            assert_eq!(distance_text(d), Frame::Bulk(Bytes::from(want)), "{d}");
        }
    }

    #[test]
    fn conversions_to_integers_follow_x86_64() {
        assert_eq!(llrint(2.5), 2);
        assert_eq!(llrint(-3.5), -4);
        assert_eq!(llrint(1e300), i64::MIN);
        assert_eq!(trunc_i64(1791875804419201.0), 1791875804419201);
        assert_eq!(trunc_i64(-2.9), -2);
        assert_eq!(trunc_i64(f64::INFINITY), i64::MIN);
    }

    /// Partial sorts of distances with many ties, against Redis's `pqsort.c` compiled from
    /// 7.0.15 (the members first in the reply, by their index in the input).
    #[test]
    fn partial_sorts_break_ties_as_redis_pqsort() {
        let cases: &[(usize, bool, &str, &str)] = &[
        (3, false, "3,2,5,3,6,2,5,4,2", "1,5,8"),
        (3, true, "5,3,0,1,1,3,2,0,6", "8,0,5"),
        (7, false, "2,4,3,4,6,0,3,2,6", "5,7,0,6,2,3,1"),
        (7, true, "2,1,0,5,2,3,1,2,2", "3,5,8,4,7,0,6"),
        (12, false, "0,6,6,4,1,5,0,4,3,5,3,6,3,5,6,1,1,0,2,4,0,6,4,4,2,1,5,2,0,5,2,3,2,0,1,1,0,1,6,0,5,1,5,3,3", "39,33,28,0,6,20,17,36,15,41,37,4"),
        (12, true, "5,1,5,5,0,4,3,3,1,5,0,5,2,4,4,1,1,0,5,1,4,0,4,6,5,3,5,5,1,5,2,1,5,5,1,2,0,4,0,6,2,3,2,5,3", "23,39,3,0,33,32,29,9,27,11,26,43"),
        (23, false, "2,3,5,3,1,2,5,2,5,0,5,0,0,5,0,0,4,2,0,1,0,5,0,2,6,4,3,3,3,5,0,1,4,4,2,3,3,6,0,3,6,3,4,4,0", "14,15,18,20,11,12,44,30,38,22,9,31,4,19,34,5,7,17,23,0,1,36,41"),
        (23, true, "2,2,0,6,6,3,1,1,3,0,2,2,6,2,4,4,5,1,4,6,2,1,5,0,1,6,1,4,2,3,2,5,6,4,1,2,2,5,0,0,1,6,1,6,1", "19,25,41,43,3,12,4,32,37,16,31,22,18,14,27,33,15,8,29,5,10,1,0"),
        (26, false, "0,6,2,4,0,0,3,1,2,4,4,4,6,6,5,2,4,6,5,5,3,4,0,3,0,2,4,0,1,6,3,3,5,1,6,4,5,0,4,6,5,1,4,5,3,6,5,0,5,2,3,6,4,4,3,6,4,4,6,4,6,5,3,5,1,4,6,6,0,4,2,2,4,4,3,2,3,0,4,3,5,1,1,3,0,5,6,2,3,3,0,6,3,2,2,2,4,1,3,0", "24,68,4,5,47,90,37,22,99,0,84,27,77,33,7,82,81,97,64,41,28,87,2,8,15,25"),
        (26, true, "4,6,4,3,3,5,5,1,2,3,6,2,1,0,6,3,3,6,4,6,3,4,1,6,4,6,4,6,6,6,4,2,0,5,4,5,2,2,0,4,5,1,4,0,3,5,2,0,1,5,5,4,3,4,0,2,3,2,6,0,0,2,3,1,6,3,5,1,5,0,1,5,0,1,4,0,0,5,3,1,5,6,4,0,0,0,4,6,6,6,4,1,2,3,3,4,4,3,4,0", "23,17,88,19,87,29,64,28,1,58,10,27,25,89,14,81,66,49,50,5,6,33,35,80,40,77"),
        (51, false, "4,2,5,3,3,2,2,3,6,5,4,2,0,4,1,1,5,5,6,6,3,2,6,2,5,0,6,2,2,3,4,5,6,2,6,0,1,0,4,1,3,2,5,0,6,5,0,3,1,5,0,2,6,4,1,5,2,6,3,2,3,2,0,0,0,0,0,5,6,5,6,4,1,1,1,0,6,3,5,2,4,4,1,3,2,1,3,2,2,4,3,2,1,2,0,1,0,0,3,6", "37,43,35,66,65,97,64,96,63,25,62,94,12,75,46,50,92,48,85,36,39,82,95,14,15,74,73,72,54,87,1,5,6,11,21,23,27,28,33,41,51,56,59,61,79,84,88,91,93,29,40"),
        (51, true, "6,2,5,5,5,6,1,1,2,6,2,0,5,6,1,1,6,6,5,2,5,5,0,0,5,4,1,0,5,3,0,4,3,5,5,1,2,1,5,4,0,5,5,6,5,3,6,2,1,2,4,1,3,4,4,3,1,3,4,2,5,0,5,5,3,0,4,1,3,4,2,0,4,6,2,1,2,3,0,3,2,2,5,6,1,5,4,3,5,3,1,4,3,3,2,3,4,2,3,6", "43,99,13,17,16,5,83,73,46,9,0,24,2,3,4,12,18,20,21,28,33,34,38,41,42,44,60,62,63,82,85,88,96,66,50,25,72,53,54,31,39,91,58,86,69,93,57,29,98,95,64"),
        (76, false, "2,2,5,0,0,5,2,3,0,5,2,6,6,6,5,0,5,5,4,4,4,6,4,5,1,3,5,1,5,6,5,5,5,1,5,0,4,2,3,2,3,2,3,3,5,2,6,4,0,5,1,1,0,2,4,4,0,6,1,4,4,1,1,2,1,6,6,3,6,1,4,6,5,4,0,1,4,3,4,4,4,1,6,5,4,5,2,4,0,4,0,2,6,1,3,3,1,0,5,6", "48,15,4,8,90,3,88,56,52,35,97,74,51,24,50,27,33,96,93,81,75,69,64,62,61,58,0,1,6,10,37,39,41,45,53,63,86,91,7,25,40,94,42,43,77,95,67,38,18,47,22,54,55,20,59,60,19,70,73,76,78,79,80,84,87,89,36,83,34,85,16,30,98,28,44,31"),
        (76, true, "4,2,6,0,5,6,2,5,3,1,5,6,1,6,5,3,3,3,6,4,4,4,1,6,3,6,2,3,1,5,2,1,1,3,3,3,1,0,5,5,6,0,5,3,4,6,6,0,1,2,0,6,5,2,2,0,0,4,2,1,5,1,3,3,3,4,3,2,2,6,0,0,4,2,2,4,4,5,5,1,0,4,1,4,6,5,4,4,1,3,6,4,0,6,3,3,1,1,3,0", "45,46,13,18,69,51,93,40,23,5,25,84,90,11,2,42,29,78,77,7,38,39,14,52,4,60,10,85,21,44,65,0,57,86,91,19,20,83,81,87,76,75,72,62,8,15,16,17,24,27,33,34,35,43,63,64,66,89,94,95,98,67,49,53,58,68,30,6,54,26,73,74,1,22,12,88"),
        ];
        for (k, desc, dists, first) in cases {
            let mut points: Vec<GeoPoint> = dists
                .split(',')
                .enumerate()
                .map(|(i, d)| point(d.parse().unwrap(), i))
                .collect();
            let sort = if *desc { Sort::Desc } else { Sort::Asc };
            sort_first(&mut points, *k, sort);
            let want: Vec<usize> = first.split(',').map(|i| i.parse().unwrap()).collect();
            assert_eq!(ids(&points[..*k]), want, "k={k} desc={desc} {dists}");
        }
    }

    #[test]
    fn full_sorts_are_stable_as_glibc_qsort() {
        let dists = [3.0, 1.0, 3.0, 0.0, 1.0, 2.0, 0.0, 3.0, 2.0, 1.0, 0.0];
        for sort in [Sort::Asc, Sort::Desc] {
            let mut points: Vec<GeoPoint> = dists
                .iter()
                .enumerate()
                .map(|(i, d)| point(*d, i))
                .collect();
            let mut want = points.clone();
            want.sort_by(|a, b| compare(a, b, sort).cmp(&0));
            sort_all(&mut points, sort);
            assert_eq!(ids(&points), ids(&want));
        }
    }

    #[test]
    fn units_and_coordinates_are_checked_as_redis_does() {
        assert_eq!(unit(&Bytes::from_static(b"KM")), Ok(1000.0));
        assert_eq!(unit(&Bytes::from_static(b"mi")), Ok(1609.34));
        assert_eq!(unit(&Bytes::from_static(b"km\0x")), Ok(1000.0));
        assert!(unit(&Bytes::from_static(b"yd")).is_err());
        assert!(unit(&Bytes::from_static(b"")).is_err());
        let pair =
            |a: &str, b: &str| lon_lat(&[Bytes::from(a.to_string()), Bytes::from(b.to_string())]);
        assert_eq!(pair("-180", "85.05112878"), Ok([-180.0, GEO_LAT_MAX]));
        assert_eq!(
            pair("200", "-inf"),
            Err(CommandError::err(
                "invalid longitude,latitude pair 200.000000,-inf"
            ))
        );
        assert_eq!(pair("x", "1"), Err(CommandError::NotFloat));
        assert_eq!(pair("1", "nan"), Err(CommandError::NotFloat));
    }
}
