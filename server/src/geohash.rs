//! Redis's geohash math, ported from `geohash.c` and `geohash_helper.c` (7.0): a position is a
//! cell of a grid of 2^step × 2^step cells over longitude [-180, 180] and latitude
//! [-85.05112878, 85.05112878], named by the interleaved bits of its column and row (52 bits at
//! step 26: the score of a GEO member). Here are encoding and decoding, a cell's neighbours,
//! the nine cells that cover a search shape, and the haversine distances the GEO commands
//! compare, each with Redis's floating-point steps in Redis's order, so that scores, positions
//! and search results agree with Redis bit for bit (the trigonometry is the C library's, as in
//! Redis).

/// Bits per coordinate of a stored position (`GEO_STEP_MAX`): 26 × 2 = 52-bit scores.
pub(crate) const GEO_STEP_MAX: u8 = 26;
/// Southern limit of EPSG:900913 (`GEO_LAT_MIN`): the poles cannot be encoded.
pub(crate) const GEO_LAT_MIN: f64 = -85.05112878;
/// Northern limit (`GEO_LAT_MAX`).
pub(crate) const GEO_LAT_MAX: f64 = 85.05112878;
/// Western limit (`GEO_LONG_MIN`).
pub(crate) const GEO_LONG_MIN: f64 = -180.0;
/// Eastern limit (`GEO_LONG_MAX`).
pub(crate) const GEO_LONG_MAX: f64 = 180.0;

/// Degrees to radians (`D_R`, `M_PI / 180.0`).
const D_R: f64 = std::f64::consts::PI / 180.0;
/// Earth's quadratic mean radius for WGS-84 (`EARTH_RADIUS_IN_METERS`).
const EARTH_RADIUS_IN_METERS: f64 = 6372797.560856;
/// Half the circumference the step estimate starts from (`MERCATOR_MAX`).
const MERCATOR_MAX: f64 = 20037726.37;

/// A cell: its interleaved bits (latitude bits at even positions, longitude bits at odd ones)
/// and the bits per coordinate (`GeoHashBits`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct HashBits {
    /// The interleaved bits, `2 * step` of them.
    pub(crate) bits: u64,
    /// Bits per coordinate.
    pub(crate) step: u8,
}

impl HashBits {
    /// `HASHISZERO`: the "no cell" value a search skips (a neighbour it excluded).
    pub(crate) fn is_zero(self) -> bool {
        self.bits == 0 && self.step == 0
    }
}

/// An interval of one coordinate (`GeoHashRange`).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub(crate) struct Range {
    /// Lower bound.
    pub(crate) min: f64,
    /// Upper bound.
    pub(crate) max: f64,
}

impl Range {
    /// `RANGEISZERO`.
    fn is_zero(self) -> bool {
        self.max == 0.0 && self.min == 0.0
    }
}

/// Longitudes of the grid GEO scores use.
pub(crate) const WGS84_LONG: Range = Range {
    min: GEO_LONG_MIN,
    max: GEO_LONG_MAX,
};
/// Latitudes of the grid GEO scores use.
pub(crate) const WGS84_LAT: Range = Range {
    min: GEO_LAT_MIN,
    max: GEO_LAT_MAX,
};
/// Latitudes of the standard geohash grid (GEOHASH strings re-encode on it).
pub(crate) const STANDARD_LAT: Range = Range {
    min: -90.0,
    max: 90.0,
};

/// A cell and the coordinates it spans (`GeoHashArea`).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub(crate) struct Area {
    /// The cell.
    pub(crate) hash: HashBits,
    /// Its longitudes.
    pub(crate) longitude: Range,
    /// Its latitudes.
    pub(crate) latitude: Range,
}

/// The eight cells around one (`GeoHashNeighbors`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Neighbors {
    /// Above.
    pub(crate) north: HashBits,
    /// Right.
    pub(crate) east: HashBits,
    /// Left.
    pub(crate) west: HashBits,
    /// Below.
    pub(crate) south: HashBits,
    /// Above right.
    pub(crate) north_east: HashBits,
    /// Below right.
    pub(crate) south_east: HashBits,
    /// Above left.
    pub(crate) north_west: HashBits,
    /// Below left.
    pub(crate) south_west: HashBits,
}

/// Interleaves the low 32 bits of `x` (even positions) and `y` (odd positions) (`interleave64`).
fn interleave64(xlo: u32, ylo: u32) -> u64 {
    const B: [u64; 5] = [
        0x5555555555555555,
        0x3333333333333333,
        0x0F0F0F0F0F0F0F0F,
        0x00FF00FF00FF00FF,
        0x0000FFFF0000FFFF,
    ];
    const S: [u32; 5] = [1, 2, 4, 8, 16];
    let mut x = u64::from(xlo);
    let mut y = u64::from(ylo);
    for i in (0..5).rev() {
        x = (x | (x << S[i])) & B[i];
        y = (y | (y << S[i])) & B[i];
    }
    x | (y << 1)
}

/// The inverse of [`interleave64`]: even bits in the low half, odd bits in the high half
/// (`deinterleave64`).
fn deinterleave64(interleaved: u64) -> u64 {
    const B: [u64; 6] = [
        0x5555555555555555,
        0x3333333333333333,
        0x0F0F0F0F0F0F0F0F,
        0x00FF00FF00FF00FF,
        0x0000FFFF0000FFFF,
        0x00000000FFFFFFFF,
    ];
    const S: [u32; 6] = [0, 1, 2, 4, 8, 16];
    let mut x = interleaved;
    let mut y = interleaved >> 1;
    for i in 0..6 {
        x = (x | (x >> S[i])) & B[i];
        y = (y | (y >> S[i])) & B[i];
    }
    x | (y << 32)
}

/// The cell of (`longitude`, `latitude`) at `step` bits per coordinate on the grid spanning
/// `long_range` × `lat_range` (`geohashEncode`); `None` for a step outside 1..=32 or a position
/// outside the GEO limits or the ranges.
pub(crate) fn encode(
    long_range: Range,
    lat_range: Range,
    longitude: f64,
    latitude: f64,
    step: u8,
) -> Option<HashBits> {
    if step > 32 || step == 0 || lat_range.is_zero() || long_range.is_zero() {
        return None;
    }
    if !(GEO_LONG_MIN..=GEO_LONG_MAX).contains(&longitude)
        || !(GEO_LAT_MIN..=GEO_LAT_MAX).contains(&latitude)
    {
        return None;
    }
    if latitude < lat_range.min
        || latitude > lat_range.max
        || longitude < long_range.min
        || longitude > long_range.max
    {
        return None;
    }
    let mut lat_offset = (latitude - lat_range.min) / (lat_range.max - lat_range.min);
    let mut long_offset = (longitude - long_range.min) / (long_range.max - long_range.min);
    // To fixed point; C converts the offsets to uint32_t by truncation (they are within
    // 0..=2^step here).
    lat_offset *= (1u64 << step) as f64;
    long_offset *= (1u64 << step) as f64;
    Some(HashBits {
        bits: interleave64(lat_offset as u32, long_offset as u32),
        step,
    })
}

/// [`encode`] on the GEO grid (`geohashEncodeWGS84`).
pub(crate) fn encode_wgs84(longitude: f64, latitude: f64, step: u8) -> Option<HashBits> {
    encode(WGS84_LONG, WGS84_LAT, longitude, latitude, step)
}

/// The coordinates `hash` spans on the grid spanning `long_range` × `lat_range`
/// (`geohashDecode`); `None` for the zero cell or a step above 32.
pub(crate) fn decode(long_range: Range, lat_range: Range, hash: HashBits) -> Option<Area> {
    if hash.is_zero() || lat_range.is_zero() || long_range.is_zero() || hash.step > 32 {
        return None;
    }
    let hash_sep = deinterleave64(hash.bits);
    let lat_scale = lat_range.max - lat_range.min;
    let long_scale = long_range.max - long_range.min;
    let ilato = hash_sep as u32;
    let ilono = (hash_sep >> 32) as u32;
    let cells = (1u64 << hash.step) as f64;
    // `ilato + 1` is uint32_t arithmetic in C, so it wraps.
    Some(Area {
        hash,
        latitude: Range {
            min: lat_range.min + (f64::from(ilato) * 1.0 / cells) * lat_scale,
            max: lat_range.min + (f64::from(ilato.wrapping_add(1)) * 1.0 / cells) * lat_scale,
        },
        longitude: Range {
            min: long_range.min + (f64::from(ilono) * 1.0 / cells) * long_scale,
            max: long_range.min + (f64::from(ilono.wrapping_add(1)) * 1.0 / cells) * long_scale,
        },
    })
}

/// [`decode`] on the GEO grid (`geohashDecodeWGS84`).
pub(crate) fn decode_wgs84(hash: HashBits) -> Option<Area> {
    decode(WGS84_LONG, WGS84_LAT, hash)
}

/// The centre of `area`, clamped to the GEO limits (`geohashDecodeAreaToLongLat`).
pub(crate) fn area_center(area: &Area) -> [f64; 2] {
    let lon = (area.longitude.min + area.longitude.max) / 2.0;
    let lat = (area.latitude.min + area.latitude.max) / 2.0;
    [
        lon.clamp(GEO_LONG_MIN, GEO_LONG_MAX),
        lat.clamp(GEO_LAT_MIN, GEO_LAT_MAX),
    ]
}

/// The centre of `hash` on the GEO grid (`geohashDecodeToLongLatWGS84`).
pub(crate) fn decode_to_lon_lat_wgs84(hash: HashBits) -> Option<[f64; 2]> {
    decode_wgs84(hash).map(|area| area_center(&area))
}

/// The 64 bits C's `(uint64_t)` cast makes of a double on x86-64 (what Redis's `decodeGeohash`
/// does to a score): truncation toward zero in range; below 2^63 through a signed conversion
/// (a negative score wraps, one below -2^63 gives 2^63); from 2^63 on through the signed
/// conversion of `d - 2^63` with the top bit flipped (2^64 and above, infinity included, give 0).
pub(crate) fn score_bits(score: f64) -> u64 {
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    // cvttsd2si: the "integer indefinite" value when out of range or NaN.
    let cvttsd2si = |d: f64| -> i64 {
        if (-TWO_63..TWO_63).contains(&d) {
            d as i64
        } else {
            i64::MIN
        }
    };
    if score >= TWO_63 {
        (cvttsd2si(score - TWO_63) as u64) ^ (1 << 63)
    } else {
        cvttsd2si(score) as u64
    }
}

/// The position a GEO score stands for (`decodeGeohash`).
pub(crate) fn decode_score(score: f64) -> Option<[f64; 2]> {
    decode_to_lon_lat_wgs84(HashBits {
        bits: score_bits(score),
        step: GEO_STEP_MAX,
    })
}

/// One column east (`d > 0`) or west (`geohash_move_x`); wraps around the grid.
fn move_x(hash: &mut HashBits, d: i8) {
    if d == 0 {
        return;
    }
    let mut x = hash.bits & 0xaaaaaaaaaaaaaaaa;
    let y = hash.bits & 0x5555555555555555;
    let shift = 64u32.wrapping_sub(u32::from(hash.step) * 2);
    let zz = 0x5555555555555555u64.wrapping_shr(shift);
    if d > 0 {
        x = x.wrapping_add(zz.wrapping_add(1));
    } else {
        x |= zz;
        x = x.wrapping_sub(zz.wrapping_add(1));
    }
    x &= 0xaaaaaaaaaaaaaaaau64.wrapping_shr(shift);
    hash.bits = x | y;
}

/// One row north (`d > 0`) or south (`geohash_move_y`); wraps around the grid.
fn move_y(hash: &mut HashBits, d: i8) {
    if d == 0 {
        return;
    }
    let x = hash.bits & 0xaaaaaaaaaaaaaaaa;
    let mut y = hash.bits & 0x5555555555555555;
    let shift = 64u32.wrapping_sub(u32::from(hash.step) * 2);
    let zz = 0xaaaaaaaaaaaaaaaau64.wrapping_shr(shift);
    if d > 0 {
        y = y.wrapping_add(zz.wrapping_add(1));
    } else {
        y |= zz;
        y = y.wrapping_sub(zz.wrapping_add(1));
    }
    y &= 0x5555555555555555u64.wrapping_shr(shift);
    hash.bits = x | y;
}

/// The eight cells around `hash` (`geohashNeighbors`).
pub(crate) fn neighbors(hash: HashBits) -> Neighbors {
    let moved = |dx: i8, dy: i8| {
        let mut h = hash;
        move_x(&mut h, dx);
        move_y(&mut h, dy);
        h
    };
    Neighbors {
        east: moved(1, 0),
        west: moved(-1, 0),
        south: moved(0, -1),
        north: moved(0, 1),
        north_west: moved(-1, 1),
        north_east: moved(1, 1),
        south_east: moved(1, -1),
        south_west: moved(-1, -1),
    }
}

/// The step (bits per coordinate) whose cells are about `range_meters` wide at `lat`
/// (`geohashEstimateStepsByRadius`), in 1..=26.
pub(crate) fn estimate_steps_by_radius(range_meters: f64, lat: f64) -> u8 {
    if range_meters == 0.0 {
        return 26;
    }
    let mut range = range_meters;
    let mut step: i32 = 1;
    // Doubling reaches MERCATOR_MAX within ~1100 rounds from the smallest positive double.
    let mut rounds = 0;
    while range < MERCATOR_MAX && rounds < 2200 {
        range *= 2.0;
        step += 1;
        rounds += 1;
    }
    // Make sure the range is included in most of the base cases.
    step -= 2;
    // Wider cells towards the poles.
    if !(-66.0..=66.0).contains(&lat) {
        step -= 1;
        if !(-80.0..=80.0).contains(&lat) {
            step -= 1;
        }
    }
    step.clamp(1, 26) as u8
}

/// What a search covers (`GeoShape`'s `type` and `t`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum ShapeKind {
    /// BYRADIUS: a circle of this radius, in the shape's unit.
    Circle {
        /// The radius.
        radius: f64,
    },
    /// BYBOX: a rectangle aligned with the meridians, in the shape's unit.
    Rectangle {
        /// East-west size.
        width: f64,
        /// North-south size.
        height: f64,
    },
}

/// A search area (`GeoShape`): its kind, centre and unit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Shape {
    /// Circle or rectangle.
    pub(crate) kind: ShapeKind,
    /// Centre: longitude, latitude.
    pub(crate) xy: [f64; 2],
    /// Meters per unit of the sizes (`km`: 1000).
    pub(crate) conversion: f64,
}

/// Degrees to radians (`deg_rad`).
fn deg_rad(ang: f64) -> f64 {
    ang * D_R
}

/// Radians to degrees (`rad_deg`).
fn rad_deg(ang: f64) -> f64 {
    ang / D_R
}

/// The box around `shape`: min longitude, min latitude, max longitude, max latitude
/// (`geohashBoundingBox`). A rectangle's east and west edges follow the meridians, so the box
/// takes the longitude span of its edge nearer a pole.
pub(crate) fn bounding_box(shape: &Shape) -> [f64; 4] {
    let [longitude, latitude] = shape.xy;
    let (height, width) = match shape.kind {
        ShapeKind::Circle { radius } => (shape.conversion * radius, shape.conversion * radius),
        ShapeKind::Rectangle { width, height } => (
            shape.conversion * (height / 2.0),
            shape.conversion * (width / 2.0),
        ),
    };
    let lat_delta = rad_deg(height / EARTH_RADIUS_IN_METERS);
    let long_delta_top =
        rad_deg(width / EARTH_RADIUS_IN_METERS / deg_rad(latitude + lat_delta).cos());
    let long_delta_bottom =
        rad_deg(width / EARTH_RADIUS_IN_METERS / deg_rad(latitude - lat_delta).cos());
    let southern_hemisphere = latitude < 0.0;
    let long_delta = if southern_hemisphere {
        long_delta_bottom
    } else {
        long_delta_top
    };
    [
        longitude - long_delta,
        latitude - lat_delta,
        longitude + long_delta,
        latitude + lat_delta,
    ]
}

/// The cell a search is centred on, its area, and the neighbours still to search (an excluded
/// one is the zero cell) (`GeoHashRadius`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct SearchAreas {
    /// The centre's cell.
    pub(crate) hash: HashBits,
    /// What it spans.
    pub(crate) area: Area,
    /// Around it.
    pub(crate) neighbors: Neighbors,
}

/// The nine cells (centre and neighbours) that cover `shape`, the useless neighbours zeroed
/// (`geohashCalculateAreasByShapeWGS84`).
pub(crate) fn areas_by_shape_wgs84(shape: &Shape) -> SearchAreas {
    let [min_lon, min_lat, max_lon, max_lat] = bounding_box(shape);
    let [longitude, latitude] = shape.xy;
    // A rectangle's radius is the distance from its centre to a corner.
    let mut radius_meters = match shape.kind {
        ShapeKind::Circle { radius } => radius,
        ShapeKind::Rectangle { width, height } => {
            ((width / 2.0) * (width / 2.0) + (height / 2.0) * (height / 2.0)).sqrt()
        }
    };
    radius_meters *= shape.conversion;

    let mut steps = estimate_steps_by_radius(radius_meters, latitude);
    // The centre is always within the GEO limits (checked or decoded); C leaves a failed
    // encoding's bits at zero.
    let cell = |steps: u8| {
        encode(WGS84_LONG, WGS84_LAT, longitude, latitude, steps).unwrap_or(HashBits {
            bits: 0,
            step: steps,
        })
    };
    let area_of = |hash: HashBits| decode(WGS84_LONG, WGS84_LAT, hash).unwrap_or_default();
    let mut hash = cell(steps);
    let mut neighbors = neighbors(hash);
    let mut area = area_of(hash);

    // Near an edge of the centre's cell the estimated step may be too fine for one of the
    // north/south/east/west cells to reach the bounding box: then take one step less.
    let decrease_step = area_of(neighbors.north).latitude.max < max_lat
        || area_of(neighbors.south).latitude.min > min_lat
        || area_of(neighbors.east).longitude.max < max_lon
        || area_of(neighbors.west).longitude.min > min_lon;
    if steps > 1 && decrease_step {
        steps -= 1;
        hash = cell(steps);
        neighbors = self::neighbors(hash);
        area = area_of(hash);
    }

    // Exclude the neighbours the bounding box does not reach.
    if steps >= 2 {
        let zero = HashBits::default();
        if area.latitude.min < min_lat {
            neighbors.south = zero;
            neighbors.south_west = zero;
            neighbors.south_east = zero;
        }
        if area.latitude.max > max_lat {
            neighbors.north = zero;
            neighbors.north_east = zero;
            neighbors.north_west = zero;
        }
        if area.longitude.min < min_lon {
            neighbors.west = zero;
            neighbors.south_west = zero;
            neighbors.north_west = zero;
        }
        if area.longitude.max > max_lon {
            neighbors.east = zero;
            neighbors.south_east = zero;
            neighbors.north_east = zero;
        }
    }
    SearchAreas {
        hash,
        area,
        neighbors,
    }
}

/// `hash`'s bits shifted to the 52-bit score scale (`geohashAlign52Bits`).
pub(crate) fn align_52bits(hash: HashBits) -> u64 {
    let shift = 52u32.saturating_sub(u32::from(hash.step) * 2);
    hash.bits.checked_shl(shift).unwrap_or(0)
}

/// The distance between two latitudes on one meridian (`geohashGetLatDistance`).
fn lat_distance(lat1d: f64, lat2d: f64) -> f64 {
    EARTH_RADIUS_IN_METERS * (deg_rad(lat2d) - deg_rad(lat1d)).abs()
}

/// The great-circle distance in meters by the haversine formula (`geohashGetDistance`).
pub(crate) fn distance(lon1d: f64, lat1d: f64, lon2d: f64, lat2d: f64) -> f64 {
    let lon1r = deg_rad(lon1d);
    let lon2r = deg_rad(lon2d);
    let v = ((lon2r - lon1r) / 2.0).sin();
    // Same longitude: the distance along the meridian, without the expensive math.
    if v == 0.0 {
        return lat_distance(lat1d, lat2d);
    }
    let lat1r = deg_rad(lat1d);
    let lat2r = deg_rad(lat2d);
    let u = ((lat2r - lat1r) / 2.0).sin();
    let a = u * u + lat1r.cos() * lat2r.cos() * v * v;
    2.0 * EARTH_RADIUS_IN_METERS * a.sqrt().asin()
}

/// The distance from (`x1`, `y1`) to (`x2`, `y2`) if it is at most `radius` meters
/// (`geohashGetDistanceIfInRadiusWGS84`).
pub(crate) fn distance_if_in_radius(
    x1: f64,
    y1: f64,
    x2: f64,
    y2: f64,
    radius: f64,
) -> Option<f64> {
    let d = distance(x1, y1, x2, y2);
    if d > radius {
        None
    } else {
        Some(d)
    }
}

/// The distance from the centre (`x1`, `y1`) of a `width_m` × `height_m` rectangle to
/// (`x2`, `y2`) if the point is inside it (`geohashGetDistanceIfInRectangle`): within half the
/// height of the centre's latitude, and within half the width of its meridian along the
/// point's parallel.
pub(crate) fn distance_if_in_rectangle(
    width_m: f64,
    height_m: f64,
    x1: f64,
    y1: f64,
    x2: f64,
    y2: f64,
) -> Option<f64> {
    // The latitude distance is cheaper: checked first.
    if lat_distance(y2, y1) > height_m / 2.0 {
        return None;
    }
    if distance(x2, y2, x1, y2) > width_m / 2.0 {
        return None;
    }
    Some(distance(x1, y1, x2, y2))
}

#[cfg(test)]
mod tests {
    //! Expected values come from Redis 7.0.15: scores, positions and geohashes from a
    //! `redis-server` (GEOADD then ZSCORE/GEOPOS/GEOHASH), the rest from Redis's own
    //! `geohash.c`/`geohash_helper.c` compiled into a small C program.
    use super::*;

    fn bits(bits: u64, step: u8) -> HashBits {
        HashBits { bits, step }
    }

    #[test]
    fn interleaving_round_trips() {
        for (x, y) in [
            (0, 0),
            (1, 0),
            (0, 1),
            (0x3ff_ffff, 0x155_5555),
            (u32::MAX, 7),
        ] {
            let i = interleave64(x, y);
            assert_eq!(deinterleave64(i), u64::from(x) | (u64::from(y) << 32));
        }
        assert_eq!(interleave64(1, 0), 1);
        assert_eq!(interleave64(0, 1), 2);
    }

    #[test]
    fn scores_encode_as_redis_stores_them() {
        for (lon, lat, score) in [
            (13.361389, 38.115556, 3479099956230698u64),
            (15.087269, 37.502669, 3479447370796909),
            (0.0, 0.0, 3377699720527872),
            (-180.0, -85.05112878, 0),
            (-0.0000001, -0.0000001, 1125899906842623),
            // The north-east corner: the row index is 2^26, past 52 bits (as in Redis).
            (180.0, 85.05112878, 13510798882111488),
            (-73.9454966, 40.747533, 1791875804419201),
        ] {
            let hash = encode_wgs84(lon, lat, GEO_STEP_MAX).unwrap();
            assert_eq!(align_52bits(hash), score, "{lon},{lat}");
        }
        assert_eq!(encode_wgs84(180.1, 0.0, 26), None);
        assert_eq!(encode_wgs84(0.0, 85.06, 26), None);
        assert_eq!(encode_wgs84(0.0, 0.0, 0), None);
        assert_eq!(encode_wgs84(0.0, 0.0, 33), None);
        let eight = encode_wgs84(13.361389, 38.115556, 8).unwrap();
        assert_eq!(eight, bits(50627, 8));
        assert_eq!(align_52bits(eight), 50627 << 36);
    }

    #[test]
    fn scores_decode_to_the_positions_redis_prints() {
        for (score, lon, lat) in [
            (3479099956230698.0, 13.361389338970184, 38.1155563954963),
            (3479447370796909.0, 15.087267458438873, 37.50266842333162),
            (
                3377699720527872.0,
                2.682209014892578e-06,
                1.2673605809254695e-06,
            ),
            (
                1125899906842623.0,
                -2.682209014892578e-06,
                -1.2673605809254695e-06,
            ),
            (0.0, -179.99999731779099, -85.05112751263943),
            (13510798882111488.0, 180.0, GEO_LAT_MAX),
        ] {
            assert_eq!(decode_score(score), Some([lon, lat]), "{score}");
        }
        let area = decode_wgs84(bits(50627, 8)).unwrap();
        assert_eq!(
            (area.longitude, area.latitude),
            (
                Range {
                    min: 12.65625,
                    max: 14.0625
                },
                Range {
                    min: 37.87433078484375,
                    max: 38.5387927284375
                }
            )
        );
        assert_eq!(decode_wgs84(HashBits::default()), None);
    }

    #[test]
    fn scores_cast_to_bits_as_c_does_on_x86_64() {
        assert_eq!(score_bits(3.9), 3);
        assert_eq!(score_bits(-1.0), u64::MAX);
        assert_eq!(score_bits(-1e300), 1 << 63);
        assert_eq!(score_bits(f64::NEG_INFINITY), 1 << 63);
        assert_eq!(score_bits(9_223_372_036_854_775_808.0), 1 << 63);
        assert_eq!(score_bits(1.8e19), 18_000_000_000_000_000_000);
        assert_eq!(score_bits(1e20), 0);
        assert_eq!(score_bits(f64::INFINITY), 0);
    }

    #[test]
    fn neighbors_wrap_around_the_grid() {
        let n = neighbors(bits(50627, 8));
        assert_eq!(
            n,
            Neighbors {
                north: bits(50630, 8),
                east: bits(50633, 8),
                west: bits(50625, 8),
                south: bits(50626, 8),
                north_east: bits(50636, 8),
                south_east: bits(50632, 8),
                north_west: bits(50628, 8),
                south_west: bits(50624, 8),
            }
        );
        let n = neighbors(bits(0, 3));
        assert_eq!(
            n,
            Neighbors {
                north: bits(1, 3),
                east: bits(2, 3),
                west: bits(42, 3),
                south: bits(21, 3),
                north_east: bits(3, 3),
                south_east: bits(23, 3),
                north_west: bits(43, 3),
                south_west: bits(63, 3),
            }
        );
    }

    #[test]
    fn steps_follow_the_radius_and_the_latitude() {
        for (range, lat, steps) in [
            (0.0, 0.0, 26),
            (1.0, 10.0, 24),
            (1000.0, 70.0, 13),
            (5000.0, 81.0, 9),
            (200000.0, -67.0, 5),
            (7083000.0, 30.0, 1),
            (0.0001, 0.0, 26),
            (f64::MIN_POSITIVE, 0.0, 26),
            (f64::INFINITY, 0.0, 1),
        ] {
            assert_eq!(estimate_steps_by_radius(range, lat), steps, "{range} {lat}");
        }
    }

    #[test]
    fn search_areas_cover_a_circle_as_redis_does() {
        let shape = Shape {
            kind: ShapeKind::Circle { radius: 200.0 },
            xy: [15.0, 37.0],
            conversion: 1000.0,
        };
        assert_eq!(
            bounding_box(&shape),
            [
                12.692799634687903,
                35.201864127459075,
                17.3072003653121,
                38.798135872540925
            ]
        );
        let areas = areas_by_shape_wgs84(&shape);
        assert_eq!(areas.hash, bits(3161, 6));
        assert_eq!(
            (areas.area.longitude.min, areas.area.longitude.max),
            (11.25, 16.875)
        );
        assert_eq!(
            (areas.area.latitude.min, areas.area.latitude.max),
            (34.552021066875, 37.20986884125)
        );
        let zero = HashBits::default();
        assert_eq!(
            areas.neighbors,
            Neighbors {
                north: bits(3164, 6),
                east: bits(3163, 6),
                west: zero,
                south: zero,
                north_east: bits(3166, 6),
                south_east: zero,
                north_west: zero,
                south_west: zero,
            }
        );
    }

    #[test]
    fn search_areas_cover_a_southern_box_as_redis_does() {
        let shape = Shape {
            kind: ShapeKind::Rectangle {
                width: 6000.0,
                height: 3000.0,
            },
            xy: [-73.9798091, -40.7598464],
            conversion: 1.0,
        };
        assert_eq!(
            bounding_box(&shape),
            [
                -74.0154251968554,
                -40.77333241904406,
                -73.94419300314459,
                -40.74636038095594
            ]
        );
        let areas = areas_by_shape_wgs84(&shape);
        assert_eq!(areas.hash, bits(3182188, 12));
        let zero = HashBits::default();
        assert_eq!(
            areas.neighbors,
            Neighbors {
                west: bits(3182182, 12),
                ..Neighbors {
                    north: zero,
                    east: zero,
                    west: zero,
                    south: zero,
                    north_east: zero,
                    south_east: zero,
                    north_west: zero,
                    south_west: zero,
                }
            }
        );
    }

    #[test]
    fn distances_follow_the_haversine_formula() {
        assert_eq!(
            distance(13.361389, 38.115556, 15.087269, 37.502669),
            166274.25779140723
        );
        // Same meridian: the shortcut along it.
        assert_eq!(distance(10.0, 20.0, 10.0, 30.0), 1112263.0000000088);
        assert_eq!(
            distance_if_in_rectangle(400000.0, 2000.0, 15.0, 37.0, 12.75, 36.995),
            Some(199868.55748623842)
        );
        assert_eq!(
            distance_if_in_rectangle(400000.0, 2000.0, 15.0, 37.0, 12.75, 36.5),
            None
        );
        assert_eq!(distance_if_in_radius(0.0, 0.0, 0.0, 1.0, 1.0), None);
        assert_eq!(distance_if_in_radius(0.0, 0.0, 0.0, 0.0, 0.0), Some(0.0));
    }

    #[test]
    fn the_standard_grid_gives_geohash_strings_bits() {
        let hash = encode(WGS84_LONG, STANDARD_LAT, -5.6, 42.6, 26).unwrap();
        assert_eq!(hash.bits, 1969242828722037);
    }
}
