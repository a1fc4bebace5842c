//! Sorted set commands: ZADD (NX/XX/GT/LT/CH/INCR), ZINCRBY, ZREM, scores, ranks, counts,
//! ranges by rank/score/lex (ZRANGE and its older forms, ZRANGESTORE), removals by range,
//! pops (also blocking: BZPOPMIN, BZPOPMAX, BZMPOP), ZSCAN, and the set operations
//! ZUNION/ZINTER/ZDIFF with their STORE forms.

use super::{
    parse_f64, parse_f64_saturating, parse_i64, random_count, repeated_picks, scan, typed, Args,
    CmdResult, Command, CommandError, Ctx,
};
use crate::blocking::{self, BlockKind};
use crate::db::{Value, ZSet};
use crate::notify;
use bytes::Bytes;
use locksmith_resp::{Frame, Version};
use std::collections::HashSet;

/// The sorted set family's table.
pub(crate) static COMMANDS: &[Command] = &[
    Command::new("zadd", zadd),
    Command::new("zincrby", zincrby),
    Command::new("zrem", zrem),
    Command::new("zscore", zscore),
    Command::new("zmscore", zmscore),
    Command::new("zcard", zcard),
    Command::new("zcount", zcount),
    Command::new("zlexcount", zlexcount),
    Command::new("zrank", zrank),
    Command::new("zrevrank", zrevrank),
    Command::new("zrange", zrange),
    Command::new("zrangestore", zrangestore),
    Command::new("zrevrange", zrevrange),
    Command::new("zrangebyscore", zrangebyscore),
    Command::new("zrevrangebyscore", zrevrangebyscore),
    Command::new("zrangebylex", zrangebylex),
    Command::new("zrevrangebylex", zrevrangebylex),
    Command::new("zremrangebyscore", zremrangebyscore),
    Command::new("zremrangebyrank", zremrangebyrank),
    Command::new("zremrangebylex", zremrangebylex),
    Command::new("zpopmin", zpopmin),
    Command::new("zpopmax", zpopmax),
    Command::new("zmpop", zmpop),
    Command::new("bzpopmin", bzpopmin),
    Command::new("bzpopmax", bzpopmax),
    Command::new("bzmpop", bzmpop),
    Command::new("zrandmember", zrandmember),
    Command::new("zscan", zscan),
    Command::new("zunionstore", zunionstore),
    Command::new("zinterstore", zinterstore),
    Command::new("zdiffstore", zdiffstore),
    Command::new("zunion", zunion),
    Command::new("zinter", zinter),
    Command::new("zintercard", zintercard),
    Command::new("zdiff", zdiff),
];

/// The sorted set at `key`: `Ok(None)` if absent, `WRONGTYPE` if another type.
fn zset_mut<'c>(ctx: &'c mut Ctx<'_>, key: &Bytes) -> Result<Option<&'c mut ZSet>, CommandError> {
    match ctx.lookup_mut(key).map(|e| &mut e.value) {
        None => Ok(None),
        Some(Value::ZSet(z)) => Ok(Some(z)),
        Some(_) => Err(CommandError::WrongType),
    }
}

/// A score argument (`ERR value is not a valid float` otherwise).
fn score_arg(arg: &[u8]) -> Result<f64, CommandError> {
    match parse_f64(arg) {
        Some(score) => Ok(score),
        None => Err(CommandError::NotFloat),
    }
}

/// `members` with their scores as Redis replies them: RESP3 pairs `[member, score]`, RESP2
/// a flat array; plain members without scores.
fn members_reply(items: Vec<(Bytes, f64)>, withscores: bool, resp: Version) -> Frame {
    let mut out = Vec::with_capacity(items.len() * if withscores { 2 } else { 1 });
    for (m, s) in items {
        if !withscores {
            out.push(Frame::Bulk(m));
        } else if resp == Version::Resp3 {
            out.push(Frame::Array(vec![Frame::Bulk(m), Frame::Double(s)]));
        } else {
            out.push(Frame::Bulk(m));
            out.push(Frame::Double(s));
        }
    }
    Frame::Array(out)
}

/// ```text
/// ZADD key [NX | XX] [GT | LT] [CH] [INCR] score member [score member ...]
/// ```
pub(super) fn zadd(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    zadd_generic(ctx, args, false)
}

/// ZADD, and ZINCRBY as Redis implements it (`zaddGenericCommand` with INCR forced: ZINCRBY
/// takes ZADD's flags too, so `ZINCRBY k NX 1 m` is valid).
fn zadd_generic(ctx: &mut Ctx<'_>, args: &mut Args<'_>, incr: bool) -> CmdResult {
    let key = args.bytes()?;
    let (mut nx, mut xx, mut gt, mut lt, mut ch, mut incr) =
        (false, false, false, false, false, incr);
    loop {
        if args.eat("nx") {
            nx = true;
        } else if args.eat("xx") {
            xx = true;
        } else if args.eat("gt") {
            gt = true;
        } else if args.eat("lt") {
            lt = true;
        } else if args.eat("ch") {
            ch = true;
        } else if args.eat("incr") {
            incr = true;
        } else {
            break;
        }
    }
    let rest = args.rest();
    if rest.is_empty() || !rest.len().is_multiple_of(2) {
        return Err(CommandError::Syntax);
    }
    if nx && xx {
        return Err(CommandError::err(
            "XX and NX options at the same time are not compatible",
        ));
    }
    if ((gt || lt) && nx) || (gt && lt) {
        return Err(CommandError::err(
            "GT, LT, and/or NX options at the same time are not compatible",
        ));
    }
    if incr && rest.len() > 2 {
        return Err(CommandError::err(
            "INCR option supports a single increment-element pair",
        ));
    }
    let mut pairs = Vec::with_capacity(rest.len() / 2);
    for pair in rest.chunks(2) {
        if let [score, member] = pair {
            pairs.push((score_arg(score)?, member.clone()));
        }
    }
    // The members applied in order; a NaN stops it, keeping what came before (Redis replies
    // the error and still signals what changed).
    let apply = |z: &mut ZSet| {
        let (mut added, mut updated) = (0i64, 0i64);
        let mut incr_result = None;
        let mut failure = None;
        for (score, member) in pairs {
            match z.score(&member) {
                Some(cur) => {
                    if nx {
                        continue;
                    }
                    let new = if incr { cur + score } else { score };
                    if new.is_nan() {
                        failure = Some(CommandError::err("resulting score is not a number (NaN)"));
                        break;
                    }
                    if (lt && new >= cur) || (gt && new <= cur) {
                        continue;
                    }
                    incr_result = Some(new);
                    if new != cur {
                        z.insert(member, new);
                        updated += 1;
                    }
                }
                None => {
                    if xx {
                        continue;
                    }
                    z.insert(member, score);
                    incr_result = Some(score);
                    added += 1;
                }
            }
        }
        (added, updated, incr_result, failure)
    };
    let change = typed(Value::as_zset_mut, |z| {
        let outcome = apply(z);
        let changed = outcome.0 + outcome.1 > 0;
        (outcome, changed)
    });
    // Changed where it is found (created first unless XX), measured there: one lookup. ZADD
    // removes nothing, so the set is never left empty.
    let outcome = if xx {
        match ctx.change_existing(key, change) {
            Some((outcome, _)) => outcome,
            None => return Ok(if incr { Frame::Null } else { Frame::Integer(0) }),
        }
    } else {
        ctx.change_or_insert(key, || Value::ZSet(ZSet::default()), change)
            .0
    };
    let (added, updated, incr_result, failure) = outcome?;
    if added + updated > 0 {
        ctx.notify(notify::ZSET, if incr { "zincr" } else { "zadd" }, key);
        ctx.modified_measured(key);
    }
    if let Some(e) = failure {
        return Err(e);
    }
    Ok(if incr {
        incr_result.map_or(Frame::Null, Frame::Double)
    } else {
        Frame::Integer(if ch { added + updated } else { added })
    })
}

/// ```text
/// ZINCRBY key increment member
/// ```
fn zincrby(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    zadd_generic(ctx, args, true)
}

/// ```text
/// ZREM key member [member ...]
/// ```
fn zrem(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.bytes()?;
    let members = args.rest();
    // Changed where it is found, measured there or deleted once empty: one lookup.
    let change = typed(Value::as_zset_mut, |z| {
        let removed = members.iter().filter(|m| z.remove(m).is_some()).count();
        (removed, removed > 0)
    });
    let Some((removed, deleted)) = ctx.change_existing(key, change) else {
        return Ok(Frame::Integer(0));
    };
    let removed = removed?;
    if removed > 0 {
        ctx.changed_in_place(key, notify::ZSET, "zrem", deleted);
    }
    Ok(Frame::Integer(removed as i64))
}

/// ```text
/// ZSCORE key member
/// ```
fn zscore(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.bytes()?;
    let member = args.bytes()?;
    Ok(zset_mut(ctx, key)?
        .and_then(|z| z.score(member))
        .map_or(Frame::Null, Frame::Double))
}

/// ```text
/// ZRANDMEMBER key [count [WITHSCORES]]
/// ```
fn zrandmember(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    use rand::seq::index::sample;
    use rand::Rng;
    let key = args.bytes()?;
    let resp = ctx.client.resp;
    let count = match args.next() {
        None => None,
        Some(arg) => Some(random_count(arg)?),
    };
    let withscores = match args.remaining() {
        0 => false,
        1 if args.eat("withscores") => true,
        _ => return Err(CommandError::Syntax),
    };
    if withscores && count.is_some_and(|c| !(-i64::MAX / 2..=i64::MAX / 2).contains(&c)) {
        return Err(CommandError::err("value is out of range"));
    }
    let len = zset_mut(ctx, key)?.map_or(0, |z| z.len());
    let rng = &mut ctx.state.rng;
    let indexes: Vec<usize> = match count {
        None if len == 0 => return Ok(Frame::Null),
        None => vec![rng.random_range(0..len)],
        Some(_) if len == 0 => return Ok(Frame::Array(Vec::new())),
        Some(0) => return Ok(Frame::Array(Vec::new())),
        // A negative count may repeat members.
        Some(c) if c < 0 => {
            let picks = repeated_picks(c, if withscores { 2 } else { 1 })?;
            (0..picks).map(|_| rng.random_range(0..len)).collect()
        }
        // The whole set, highest score first, as Redis replies it.
        Some(c) if c.unsigned_abs() >= len as u64 => (0..len).rev().collect(),
        Some(c) => {
            let mut picked = sample(rng, len, c.unsigned_abs() as usize).into_vec();
            picked.sort_unstable();
            picked
        }
    };
    // Looked up above (one lookup counted, as in Redis); the rng borrow has ended.
    let Some(Value::ZSet(z)) = ctx.db().raw(key).map(|e| &e.value) else {
        return Ok(Frame::Null);
    };
    let all: Vec<(&Bytes, f64)> = z.iter().collect();
    let items: Vec<(Bytes, f64)> = indexes
        .iter()
        .filter_map(|&i| all.get(i))
        .map(|&(m, s)| (m.clone(), s))
        .collect();
    if count.is_none() {
        return Ok(items
            .into_iter()
            .next()
            .map_or(Frame::Null, |(m, _)| Frame::Bulk(m)));
    }
    Ok(members_reply(items, withscores, resp))
}

/// ```text
/// ZMSCORE key member [member ...]
/// ```
fn zmscore(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.bytes()?;
    let members = args.rest();
    let z = zset_mut(ctx, key)?;
    Ok(Frame::Array(
        members
            .iter()
            .map(|m| {
                z.as_ref()
                    .and_then(|z| z.score(m))
                    .map_or(Frame::Null, Frame::Double)
            })
            .collect(),
    ))
}

/// ```text
/// ZCARD key
/// ```
fn zcard(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.bytes()?;
    Ok(Frame::Integer(
        zset_mut(ctx, key)?.map_or(0, |z| z.len() as i64),
    ))
}

/// A score range (Redis's `zrangespec`).
#[derive(Debug, Clone, Copy)]
struct ScoreRange {
    min: f64,
    max: f64,
    minex: bool,
    maxex: bool,
}

impl ScoreRange {
    /// Parses `min max` as Redis's `zslParseRange` (`(` = exclusive, `-inf`/`+inf`).
    fn parse(min: &[u8], max: &[u8]) -> Result<ScoreRange, CommandError> {
        let bound = |arg: &[u8]| -> Option<(f64, bool)> {
            let (text, ex) = match arg.strip_prefix(b"(") {
                Some(rest) => (rest, true),
                None => (arg, false),
            };
            parse_f64_saturating(text).map(|v| (v, ex))
        };
        match (bound(min), bound(max)) {
            (Some((min, minex)), Some((max, maxex))) => Ok(ScoreRange {
                min,
                max,
                minex,
                maxex,
            }),
            _ => Err(CommandError::err("min or max is not a float")),
        }
    }

    fn gte_min(&self, s: f64) -> bool {
        if self.minex {
            s > self.min
        } else {
            s >= self.min
        }
    }

    fn lte_max(&self, s: f64) -> bool {
        if self.maxex {
            s < self.max
        } else {
            s <= self.max
        }
    }

    fn contains(&self, s: f64) -> bool {
        self.gte_min(s) && self.lte_max(s)
    }
}

/// One end of a lex range.
#[derive(Debug, Clone)]
enum LexBound {
    /// `-`
    Min,
    /// `+`
    Max,
    /// `[x` (true) or `(x` (false).
    Value(Bytes, bool),
}

/// A lex range (Redis's `zlexrangespec`).
#[derive(Debug, Clone)]
struct LexRange {
    min: LexBound,
    max: LexBound,
}

impl LexRange {
    fn parse(min: &Bytes, max: &Bytes) -> Result<LexRange, CommandError> {
        let item = |arg: &Bytes| -> Option<LexBound> {
            match arg.first() {
                Some(b'+') if arg.len() == 1 => Some(LexBound::Max),
                Some(b'-') if arg.len() == 1 => Some(LexBound::Min),
                Some(b'[') => Some(LexBound::Value(arg.slice(1..), true)),
                Some(b'(') => Some(LexBound::Value(arg.slice(1..), false)),
                _ => None,
            }
        };
        match (item(min), item(max)) {
            (Some(min), Some(max)) => Ok(LexRange { min, max }),
            _ => Err(CommandError::err("min or max not valid string range item")),
        }
    }

    fn gte_min(&self, m: &[u8]) -> bool {
        match &self.min {
            LexBound::Min => true,
            LexBound::Max => false,
            LexBound::Value(v, true) => m >= &v[..],
            LexBound::Value(v, false) => m > &v[..],
        }
    }

    fn lte_max(&self, m: &[u8]) -> bool {
        match &self.max {
            LexBound::Min => false,
            LexBound::Max => true,
            LexBound::Value(v, true) => m <= &v[..],
            LexBound::Value(v, false) => m < &v[..],
        }
    }

    fn contains(&self, m: &[u8]) -> bool {
        self.gte_min(m) && self.lte_max(m)
    }
}

/// ```text
/// ZCOUNT key min max
/// ```
fn zcount(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.bytes()?;
    let range = ScoreRange::parse(args.bytes()?, args.bytes()?)?;
    let Some(z) = zset_mut(ctx, key)? else {
        return Ok(Frame::Integer(0));
    };
    Ok(Frame::Integer(
        z.iter().filter(|(_, s)| range.contains(*s)).count() as i64,
    ))
}

/// ```text
/// ZLEXCOUNT key min max
/// ```
fn zlexcount(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.bytes()?;
    let range = LexRange::parse(args.bytes()?, args.bytes()?)?;
    let Some(z) = zset_mut(ctx, key)? else {
        return Ok(Frame::Integer(0));
    };
    Ok(Frame::Integer(
        z.iter().filter(|(m, _)| range.contains(m)).count() as i64,
    ))
}

/// ```text
/// ZRANK key member [WITHSCORE]
/// ```
fn zrank(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    rank_command(ctx, args, false)
}

/// ```text
/// ZREVRANK key member [WITHSCORE]
/// ```
fn zrevrank(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    rank_command(ctx, args, true)
}

/// `zrankGenericCommand`; `WITHSCORE` (Redis 7.2: the rank and the score, or a null array) is
/// reached only under a target whose description gives the command arity -3 (Redis 7.0's 3
/// refuses a fourth argument first).
fn rank_command(ctx: &mut Ctx<'_>, args: &mut Args<'_>, rev: bool) -> CmdResult {
    let key = args.bytes()?;
    let member = args.bytes()?;
    let name = if rev { "zrevrank" } else { "zrank" };
    let withscore = match args.rest() {
        [] => false,
        [option] if option.eq_ignore_ascii_case(b"withscore") => true,
        [_] => return Err(CommandError::Syntax),
        _ => return Err(CommandError::WrongArity(name.to_string())),
    };
    let ranked = zset_mut(ctx, key)?.and_then(|z| {
        let rank = if rev {
            z.rev_rank(member)
        } else {
            z.rank(member)
        };
        Some((rank?, z.score(member)?))
    });
    Ok(match (ranked, withscore) {
        (Some((rank, score)), true) => {
            Frame::Array(vec![Frame::Integer(rank as i64), Frame::Double(score)])
        }
        (Some((rank, _)), false) => Frame::Integer(rank as i64),
        (None, true) => Frame::NullArray,
        (None, false) => Frame::Null,
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RangeType {
    Auto,
    Rank,
    Score,
    Lex,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Direction {
    Auto,
    Forward,
    Reverse,
}

/// Redis's `zrangeGenericCommand`: `<src> <min> <max> [BYSCORE | BYLEX] [REV] [WITHSCORES]
/// [LIMIT offset count]`, for ZRANGE, ZRANGESTORE (`store` = the destination) and the older
/// Z[REV]RANGE[BYSCORE|BYLEX] forms (fixed `rangetype`/`direction`).
fn zrange_generic(
    ctx: &mut Ctx<'_>,
    args: &mut Args<'_>,
    store: Option<Bytes>,
    mut rangetype: RangeType,
    mut direction: Direction,
) -> CmdResult {
    let key = args.bytes()?;
    let mut min = args.bytes()?;
    let mut max = args.bytes()?;
    let mut withscores = false;
    let (mut offset, mut limit) = (0i64, -1i64);
    while let Some(opt) = args.next() {
        let left = args.remaining();
        if store.is_none() && opt.eq_ignore_ascii_case(b"withscores") {
            withscores = true;
        } else if opt.eq_ignore_ascii_case(b"limit") && left >= 2 {
            offset = args.i64()?;
            limit = args.i64()?;
        } else if direction == Direction::Auto && opt.eq_ignore_ascii_case(b"rev") {
            direction = Direction::Reverse;
        } else if rangetype == RangeType::Auto && opt.eq_ignore_ascii_case(b"bylex") {
            rangetype = RangeType::Lex;
        } else if rangetype == RangeType::Auto && opt.eq_ignore_ascii_case(b"byscore") {
            rangetype = RangeType::Score;
        } else {
            return Err(CommandError::Syntax);
        }
    }
    if direction == Direction::Auto {
        direction = Direction::Forward;
    }
    if rangetype == RangeType::Auto {
        rangetype = RangeType::Rank;
    }
    if limit != -1 && rangetype == RangeType::Rank {
        return Err(CommandError::err(
            "syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX",
        ));
    }
    if withscores && rangetype == RangeType::Lex {
        return Err(CommandError::err(
            "syntax error, WITHSCORES not supported in combination with BYLEX",
        ));
    }
    let rev = direction == Direction::Reverse;
    if rev && rangetype != RangeType::Rank {
        std::mem::swap(&mut min, &mut max);
    }
    enum Spec {
        Rank(i64, i64),
        Score(ScoreRange),
        Lex(LexRange),
    }
    let spec = match rangetype {
        RangeType::Score => Spec::Score(ScoreRange::parse(min, max)?),
        RangeType::Lex => Spec::Lex(LexRange::parse(min, max)?),
        _ => Spec::Rank(parse_i64(min)?, parse_i64(max)?),
    };
    // A read lookup for ZRANGESTORE too, as Redis's `zrangeGenericCommand` reads its source.
    let source = match ctx.lookup_read(key).map(|e| &e.value) {
        None => None,
        Some(Value::ZSet(z)) => Some(z),
        Some(_) => return Err(CommandError::WrongType),
    };
    let items: Vec<(Bytes, f64)> = match source {
        None => Vec::new(),
        Some(z) => match &spec {
            Spec::Rank(start, stop) => match clamp_rank(*start, *stop, z.len()) {
                Some((a, b)) => z
                    .ordered(rev)
                    .skip(a)
                    .take(b - a + 1)
                    .map(|(m, s)| (m.clone(), s))
                    .collect(),
                None => Vec::new(),
            },
            Spec::Score(range) => {
                let first = z.ordered(rev).skip_while(|(_, s)| {
                    if rev {
                        !range.lte_max(*s)
                    } else {
                        !range.gte_min(*s)
                    }
                });
                limited(first, offset, limit)
                    .take_while(|(_, s)| {
                        if rev {
                            range.gte_min(*s)
                        } else {
                            range.lte_max(*s)
                        }
                    })
                    .map(|(m, s)| (m.clone(), s))
                    .collect()
            }
            Spec::Lex(range) => {
                let first = z.ordered(rev).skip_while(|(m, _)| {
                    if rev {
                        !range.lte_max(m)
                    } else {
                        !range.gte_min(m)
                    }
                });
                limited(first, offset, limit)
                    .take_while(|(m, _)| {
                        if rev {
                            range.gte_min(m)
                        } else {
                            range.lte_max(m)
                        }
                    })
                    .map(|(m, s)| (m.clone(), s))
                    .collect()
            }
        },
    };
    match store {
        Some(dst) => Ok(Frame::Integer(store_result(
            ctx,
            &dst,
            items,
            "zrangestore",
        ))),
        None => Ok(members_reply(items, withscores, ctx.client.resp)),
    }
}

/// Applies `LIMIT offset count` as Redis does: a negative offset gives nothing, a negative
/// count means all.
fn limited<'a, I>(
    iter: I,
    offset: i64,
    limit: i64,
) -> Box<dyn Iterator<Item = (&'a Bytes, f64)> + 'a>
where
    I: Iterator<Item = (&'a Bytes, f64)> + 'a,
{
    if offset < 0 {
        return Box::new(std::iter::empty());
    }
    let iter = iter.skip(offset as usize);
    if limit < 0 {
        Box::new(iter)
    } else {
        Box::new(iter.take(limit as usize))
    }
}

/// Redis's clamping of rank `start`/`stop` over `len` members; `None` when empty.
fn clamp_rank(start: i64, stop: i64, len: usize) -> Option<(usize, usize)> {
    let len = len as i64;
    let mut start = if start < 0 { start + len } else { start };
    let mut stop = if stop < 0 { stop + len } else { stop };
    if start < 0 {
        start = 0;
    }
    if start > stop || start >= len {
        return None;
    }
    if stop >= len {
        stop = len - 1;
    }
    Some((start as usize, stop as usize))
}

/// Stores `items` as the sorted set `dst` (or deletes `dst` when empty) with `event`;
/// returns the count.
fn store_result(
    ctx: &mut Ctx<'_>,
    dst: &Bytes,
    items: Vec<(Bytes, f64)>,
    event: &'static str,
) -> i64 {
    let count = items.len() as i64;
    if items.is_empty() {
        if ctx.delete(dst) {
            ctx.notify(notify::GENERIC, "del", dst);
        }
        return 0;
    }
    let mut z = ZSet::default();
    for (m, s) in items {
        z.insert(m, s);
    }
    ctx.set(dst, Value::ZSet(z), None);
    ctx.notify(notify::ZSET, event, dst);
    count
}

/// ```text
/// ZRANGE key start stop [BYSCORE | BYLEX] [REV] [LIMIT offset count] [WITHSCORES]
/// ```
fn zrange(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    zrange_generic(ctx, args, None, RangeType::Auto, Direction::Auto)
}

/// ```text
/// ZRANGESTORE dst src min max [BYSCORE | BYLEX] [REV] [LIMIT offset count]
/// ```
fn zrangestore(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let dst = args.bytes()?;
    zrange_generic(
        ctx,
        args,
        Some(dst.clone()),
        RangeType::Auto,
        Direction::Auto,
    )
}

/// ```text
/// ZREVRANGE key start stop [WITHSCORES]
/// ```
fn zrevrange(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    zrange_generic(ctx, args, None, RangeType::Rank, Direction::Reverse)
}

/// ```text
/// ZRANGEBYSCORE key min max [WITHSCORES] [LIMIT offset count]
/// ```
fn zrangebyscore(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    zrange_generic(ctx, args, None, RangeType::Score, Direction::Forward)
}

/// ```text
/// ZREVRANGEBYSCORE key max min [WITHSCORES] [LIMIT offset count]
/// ```
fn zrevrangebyscore(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    zrange_generic(ctx, args, None, RangeType::Score, Direction::Reverse)
}

/// ```text
/// ZRANGEBYLEX key min max [LIMIT offset count]
/// ```
fn zrangebylex(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    zrange_generic(ctx, args, None, RangeType::Lex, Direction::Forward)
}

/// ```text
/// ZREVRANGEBYLEX key max min [LIMIT offset count]
/// ```
fn zrevrangebylex(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    zrange_generic(ctx, args, None, RangeType::Lex, Direction::Reverse)
}

/// Removes the members `select` picks (given the set's length, then each member's rank,
/// member and score); the event and deletion. One lookup: changed where it is found,
/// measured there or deleted once empty.
fn remove_where(
    ctx: &mut Ctx<'_>,
    key: &Bytes,
    event: &'static str,
    select: impl Fn(usize, usize, &Bytes, f64) -> bool,
) -> CmdResult {
    let change = typed(Value::as_zset_mut, |z| {
        let len = z.len();
        let doomed: Vec<Bytes> = z
            .iter()
            .enumerate()
            .filter(|(i, (m, s))| select(len, *i, m, *s))
            .map(|(_, (m, _))| m.clone())
            .collect();
        for m in &doomed {
            z.remove(m);
        }
        (doomed.len(), !doomed.is_empty())
    });
    let Some((removed, deleted)) = ctx.change_existing(key, change) else {
        return Ok(Frame::Integer(0));
    };
    let removed = removed?;
    if removed > 0 {
        ctx.changed_in_place(key, notify::ZSET, event, deleted);
    }
    Ok(Frame::Integer(removed as i64))
}

/// ```text
/// ZREMRANGEBYSCORE key min max
/// ```
fn zremrangebyscore(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.bytes()?;
    let range = ScoreRange::parse(args.bytes()?, args.bytes()?)?;
    remove_where(ctx, key, "zremrangebyscore", |_, _, _, s| range.contains(s))
}

/// ```text
/// ZREMRANGEBYLEX key min max
/// ```
fn zremrangebylex(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.bytes()?;
    let range = LexRange::parse(args.bytes()?, args.bytes()?)?;
    remove_where(ctx, key, "zremrangebylex", |_, _, m, _| range.contains(m))
}

/// ```text
/// ZREMRANGEBYRANK key start stop
/// ```
fn zremrangebyrank(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.bytes()?;
    let start = args.i64()?;
    let stop = args.i64()?;
    remove_where(ctx, key, "zremrangebyrank", |len, i, _, _| {
        clamp_rank(start, stop, len).is_some_and(|(a, b)| (a..=b).contains(&i))
    })
}

/// Pops up to `count` members from the min (or max) end of the sorted set `key`, with the
/// `zpopmin`/`zpopmax` event and deletion: none if the key is absent, `WRONGTYPE` if it holds
/// another type.
fn pop_members(
    ctx: &mut Ctx<'_>,
    key: &Bytes,
    max: bool,
    count: usize,
) -> Result<Vec<(Bytes, f64)>, CommandError> {
    // Changed where it is found, measured there or deleted once empty: one lookup.
    let change = typed(Value::as_zset_mut, |z| {
        let picked: Vec<(Bytes, f64)> = z
            .ordered(max)
            .take(count)
            .map(|(m, s)| (m.clone(), s))
            .collect();
        for (m, _) in &picked {
            z.remove(m);
        }
        let changed = !picked.is_empty();
        (picked, changed)
    });
    let Some((popped, deleted)) = ctx.change_existing(key, change) else {
        return Ok(Vec::new());
    };
    let popped = popped?;
    if !popped.is_empty() {
        let event = if max { "zpopmax" } else { "zpopmin" };
        ctx.changed_in_place(key, notify::ZSET, event, deleted);
    }
    Ok(popped)
}

/// ```text
/// ZPOPMIN key [count]
/// ```
fn zpopmin(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    zpop_command(ctx, args, false)
}

/// ```text
/// ZPOPMAX key [count]
/// ```
fn zpopmax(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    zpop_command(ctx, args, true)
}

fn zpop_command(ctx: &mut Ctx<'_>, args: &mut Args<'_>, max: bool) -> CmdResult {
    if args.remaining() > 2 {
        return Err(CommandError::Syntax);
    }
    let key = args.bytes()?;
    let count = match args.next() {
        None => None,
        Some(arg) => match parse_i64(arg) {
            Ok(n) if n >= 0 => Some(n as usize),
            _ => return Err(CommandError::err("value is out of range, must be positive")),
        },
    };
    if count == Some(0) {
        // Nothing to pop, but the type is checked first (Redis's `genericZpopCommand`).
        zset_mut(ctx, key)?;
        return Ok(Frame::Array(Vec::new()));
    }
    let popped = pop_members(ctx, key, max, count.unwrap_or(1))?;
    if popped.is_empty() {
        return Ok(Frame::Array(Vec::new()));
    }
    // RESP3 nests [member, score] pairs only when a count was given.
    let resp = if count.is_some() {
        ctx.client.resp
    } else {
        Version::Resp2
    };
    Ok(members_reply(popped, true, resp))
}

/// A key and the members popped from it.
type Popped = (Bytes, Vec<(Bytes, f64)>);

/// Pops from the first non-empty sorted set of `keys` (WRONGTYPE at the first wrong key),
/// propagated as `ZPOPMIN|ZPOPMAX key [n]`.
fn pop_first(
    ctx: &mut Ctx<'_>,
    keys: &[Bytes],
    max: bool,
    count: Option<usize>,
) -> Result<Option<Popped>, CommandError> {
    for key in keys {
        let len = match zset_mut(ctx, key)? {
            Some(z) if !z.is_empty() => z.len(),
            _ => continue,
        };
        let popped = pop_members(ctx, key, max, count.unwrap_or(1))?;
        let name: &'static [u8] = if max { b"ZPOPMAX" } else { b"ZPOPMIN" };
        let mut argv = vec![Bytes::from_static(name), key.clone()];
        if let Some(n) = count {
            argv.push(Bytes::from(n.min(len).to_string()));
        }
        ctx.propagate(argv);
        return Ok(Some((key.clone(), popped)));
    }
    Ok(None)
}

/// ```text
/// BZPOPMIN key [key ...] timeout
/// ```
fn bzpopmin(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    bzpop(ctx, args, false)
}

/// ```text
/// BZPOPMAX key [key ...] timeout
/// ```
fn bzpopmax(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    bzpop(ctx, args, true)
}

fn bzpop(ctx: &mut Ctx<'_>, args: &mut Args<'_>, max: bool) -> CmdResult {
    let rest = args.rest();
    let (timeout_arg, keys) = rest.split_last().ok_or(CommandError::Syntax)?;
    let timeout = blocking::parse_timeout(
        timeout_arg,
        ctx.now,
        ctx.node.config.profile().checks.timeout_rounds_up,
    )?;
    match pop_first(ctx, keys, max, None)? {
        Some((key, popped)) => {
            let mut out = vec![Frame::Bulk(key)];
            for (m, s) in popped {
                out.push(Frame::Bulk(m));
                out.push(Frame::Double(s));
            }
            Ok(Frame::Array(out))
        }
        None => super::block(
            ctx,
            keys.to_vec(),
            timeout,
            BlockKind::ZSet,
            Frame::NullArray,
        ),
    }
}

/// Parsed `numkeys key [key ...] <MIN | MAX> [COUNT count]`.
struct Mpop {
    keys: Vec<Bytes>,
    max: bool,
    count: usize,
}

fn parse_mpop(args: &mut Args<'_>) -> Result<Mpop, CommandError> {
    let numkeys = match args.next().map(|a| parse_i64(a)) {
        Some(Ok(n)) if n > 0 => n as usize,
        _ => return Err(CommandError::err("numkeys should be greater than 0")),
    };
    if numkeys >= args.remaining() {
        return Err(CommandError::Syntax);
    }
    let keys: Vec<Bytes> = (0..numkeys).filter_map(|_| args.next().cloned()).collect();
    let max = match args.next() {
        Some(a) if a.eq_ignore_ascii_case(b"min") => false,
        Some(a) if a.eq_ignore_ascii_case(b"max") => true,
        _ => return Err(CommandError::Syntax),
    };
    let mut count = None;
    while let Some(opt) = args.next() {
        if count.is_none() && opt.eq_ignore_ascii_case(b"count") && !args.is_empty() {
            match args.next().map(|a| parse_i64(a)) {
                Some(Ok(n)) if n > 0 => count = Some(n as usize),
                _ => return Err(CommandError::err("count should be greater than 0")),
            }
        } else {
            return Err(CommandError::Syntax);
        }
    }
    Ok(Mpop {
        keys,
        max,
        count: count.unwrap_or(1),
    })
}

fn mpop_reply(key: Bytes, popped: Vec<(Bytes, f64)>) -> Frame {
    Frame::Array(vec![
        Frame::Bulk(key),
        members_reply(popped, true, Version::Resp3),
    ])
}

/// ```text
/// ZMPOP numkeys key [key ...] <MIN | MAX> [COUNT count]
/// ```
fn zmpop(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let m = parse_mpop(args)?;
    Ok(match pop_first(ctx, &m.keys, m.max, Some(m.count))? {
        Some((key, popped)) => mpop_reply(key, popped),
        None => Frame::NullArray,
    })
}

/// ```text
/// BZMPOP timeout numkeys key [key ...] <MIN | MAX> [COUNT count]
/// ```
fn bzmpop(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let timeout_arg = args.bytes()?;
    let m = parse_mpop(args)?;
    let timeout = blocking::parse_timeout(
        timeout_arg,
        ctx.now,
        ctx.node.config.profile().checks.timeout_rounds_up,
    )?;
    match pop_first(ctx, &m.keys, m.max, Some(m.count))? {
        Some((key, popped)) => Ok(mpop_reply(key, popped)),
        None => super::block(ctx, m.keys, timeout, BlockKind::ZSet, Frame::NullArray),
    }
}

/// ```text
/// ZSCAN key cursor [MATCH pattern] [COUNT count] [NOSCORES]
/// ```
///
/// `NOSCORES` (Valkey 8.0) under a target that documents it.
fn zscan(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.bytes()?;
    let cursor = scan::parse_cursor(args.bytes()?)?;
    let newer = scan::Newer::of(ctx);
    let doubles = ctx.node.config.profile().encodings.doubles;
    let Some(z) = zset_mut(ctx, key)? else {
        return Ok(Frame::Array(vec![
            Frame::Bulk(Bytes::from_static(b"0")),
            Frame::Array(Vec::new()),
        ]));
    };
    let opts = scan::ScanOptions::parse(args, scan::ScanKind::Zset, newer)?;
    // Scores come back as the strings the encoding holds (bulk even in RESP3): a listpack's
    // are `d2string`'s text of the target (Valkey's shortest form), a skiplist's are written
    // by `ld2string` as `%.17Lg` under both targets.
    let listpack_scores = Value::zset_is_listpack(z).then_some(doubles);
    // A small (listpack) sorted set is returned whole in one call, in order, as Redis does.
    let (next, items): (u64, Vec<(&Bytes, f64)>) = if z.len() <= 128 {
        (0, z.iter().collect())
    } else {
        scan::run(cursor, opts.count, |c, out| {
            z.scan(c, |m, s| out.push((m, s)))
        })
    };
    let mut out = Vec::new();
    for (m, s) in items {
        if opts.matches(m) {
            out.push(Frame::Bulk(m.clone()));
            if !opts.names_only {
                let text = match listpack_scores {
                    Some(doubles) => doubles.string(s),
                    None => locksmith_resp::format_double(s),
                };
                out.push(Frame::Bulk(Bytes::from(text)));
            }
        }
    }
    Ok(Frame::Array(vec![
        Frame::Bulk(Bytes::from(next.to_string())),
        Frame::Array(out),
    ]))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SetOp {
    Union,
    Inter,
    Diff,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Aggregate {
    Sum,
    Min,
    Max,
}

impl Aggregate {
    fn apply(self, acc: f64, v: f64) -> f64 {
        match self {
            Aggregate::Sum => {
                let s = acc + v;
                // Redis: +inf + -inf is NaN; it stores 0 instead.
                if s.is_nan() {
                    0.0
                } else {
                    s
                }
            }
            Aggregate::Min => acc.min(v),
            Aggregate::Max => acc.max(v),
        }
    }
}

/// Redis's `zunionInterDiffGenericCommand` for ZUNION[STORE], ZINTER[STORE], ZDIFF[STORE].
fn setop(ctx: &mut Ctx<'_>, args: &mut Args<'_>, op: SetOp, store: bool) -> CmdResult {
    setop_generic(ctx, args, op, store, false)
}

/// [`setop`], or with `cardinality_only` ZINTERCARD: the size of the intersection, up to
/// `LIMIT` (0: no limit), the only option it takes.
fn setop_generic(
    ctx: &mut Ctx<'_>,
    args: &mut Args<'_>,
    op: SetOp,
    store: bool,
    cardinality_only: bool,
) -> CmdResult {
    let name = args
        .argv()
        .first()
        .map(|n| String::from_utf8_lossy(n).to_ascii_lowercase())
        .unwrap_or_default();
    let dst = if store { Some(args.bytes()?) } else { None };
    let numkeys = args.i64()?;
    if numkeys < 1 {
        return Err(CommandError::err(format!(
            "at least 1 input key is needed for '{name}' command"
        )));
    }
    let numkeys = numkeys as usize;
    if numkeys > args.remaining() {
        return Err(CommandError::Syntax);
    }
    let keys: Vec<Bytes> = (0..numkeys).filter_map(|_| args.next().cloned()).collect();
    // Inputs: sorted sets, or plain sets whose members score 1.
    let mut inputs: Vec<Vec<(Bytes, f64)>> = Vec::with_capacity(numkeys);
    for key in &keys {
        let input = match ctx.lookup_read(key).map(|e| &e.value) {
            None => Vec::new(),
            Some(Value::ZSet(z)) => z.iter().map(|(m, s)| (m.clone(), s)).collect(),
            Some(Value::Set(s)) => s.iter().map(|m| (m, 1.0)).collect(),
            Some(_) => return Err(CommandError::WrongType),
        };
        inputs.push(input);
    }
    let mut weights = vec![1.0f64; numkeys];
    let mut aggregate = Aggregate::Sum;
    let mut withscores = false;
    let mut limit = 0usize;
    while let Some(opt) = args.next() {
        let remaining = args.remaining();
        if cardinality_only {
            if remaining >= 1 && opt.eq_ignore_ascii_case(b"limit") {
                limit = args
                    .next()
                    .and_then(|a| parse_i64(a).ok())
                    .and_then(|n| usize::try_from(n).ok())
                    .ok_or_else(|| CommandError::err("LIMIT can't be negative"))?;
            } else {
                return Err(CommandError::Syntax);
            }
        } else if op != SetOp::Diff && remaining >= numkeys && opt.eq_ignore_ascii_case(b"weights")
        {
            for w in weights.iter_mut() {
                let arg = args.next().ok_or(CommandError::Syntax)?;
                *w = parse_f64(arg)
                    .ok_or_else(|| CommandError::err("weight value is not a float"))?;
            }
        } else if op != SetOp::Diff && remaining >= 1 && opt.eq_ignore_ascii_case(b"aggregate") {
            let which = args.next().ok_or(CommandError::Syntax)?;
            aggregate = if which.eq_ignore_ascii_case(b"sum") {
                Aggregate::Sum
            } else if which.eq_ignore_ascii_case(b"min") {
                Aggregate::Min
            } else if which.eq_ignore_ascii_case(b"max") {
                Aggregate::Max
            } else {
                return Err(CommandError::Syntax);
            };
        } else if !store && opt.eq_ignore_ascii_case(b"withscores") {
            withscores = true;
        } else {
            return Err(CommandError::Syntax);
        }
    }
    let weighted = |s: f64, w: f64| {
        let v = s * w;
        if v.is_nan() {
            0.0
        } else {
            v
        }
    };
    let mut result = ZSet::default();
    match op {
        SetOp::Union => {
            for (input, &w) in inputs.iter().zip(&weights) {
                for (m, s) in input {
                    let v = weighted(*s, w);
                    let new = match result.score(m) {
                        Some(acc) => aggregate.apply(acc, v),
                        None => v,
                    };
                    result.insert(m.clone(), new);
                }
            }
        }
        SetOp::Inter => {
            if let Some((first, rest)) = inputs.split_first() {
                let lookups: Vec<std::collections::HashMap<&Bytes, f64>> = rest
                    .iter()
                    .map(|i| i.iter().map(|(m, s)| (m, *s)).collect())
                    .collect();
                let w0 = weights.first().copied().unwrap_or(1.0);
                'member: for (m, s) in first {
                    let mut acc = weighted(*s, w0);
                    for (other, &w) in lookups.iter().zip(weights.iter().skip(1)) {
                        match other.get(m) {
                            Some(&os) => acc = aggregate.apply(acc, weighted(os, w)),
                            None => continue 'member,
                        }
                    }
                    result.insert(m.clone(), acc);
                }
            }
        }
        SetOp::Diff => {
            if let Some((first, rest)) = inputs.split_first() {
                let others: HashSet<&Bytes> =
                    rest.iter().flat_map(|i| i.iter().map(|(m, _)| m)).collect();
                for (m, s) in first {
                    if !others.contains(m) {
                        result.insert(m.clone(), *s);
                    }
                }
            }
        }
    }
    if cardinality_only {
        let count = result.len();
        return Ok(Frame::Integer(
            if limit > 0 { count.min(limit) } else { count } as i64,
        ));
    }
    let items: Vec<(Bytes, f64)> = result.iter().map(|(m, s)| (m.clone(), s)).collect();
    match dst {
        Some(dst) => {
            let event = match op {
                SetOp::Union => "zunionstore",
                SetOp::Inter => "zinterstore",
                SetOp::Diff => "zdiffstore",
            };
            Ok(Frame::Integer(store_result(ctx, dst, items, event)))
        }
        None => Ok(members_reply(items, withscores, ctx.client.resp)),
    }
}

/// ```text
/// ZUNIONSTORE destination numkeys key [key ...] [WEIGHTS weight [weight ...]]
///   [AGGREGATE <SUM | MIN | MAX>]
/// ```
fn zunionstore(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    setop(ctx, args, SetOp::Union, true)
}

/// ```text
/// ZINTERSTORE destination numkeys key [key ...] [WEIGHTS weight [weight ...]]
///   [AGGREGATE <SUM | MIN | MAX>]
/// ```
fn zinterstore(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    setop(ctx, args, SetOp::Inter, true)
}

/// ```text
/// ZDIFFSTORE destination numkeys key [key ...]
/// ```
fn zdiffstore(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    setop(ctx, args, SetOp::Diff, true)
}

/// ```text
/// ZUNION numkeys key [key ...] [WEIGHTS weight [weight ...]] [AGGREGATE <SUM | MIN | MAX>]
///   [WITHSCORES]
/// ```
fn zunion(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    setop(ctx, args, SetOp::Union, false)
}

/// ```text
/// ZINTER numkeys key [key ...] [WEIGHTS weight [weight ...]] [AGGREGATE <SUM | MIN | MAX>]
///   [WITHSCORES]
/// ```
fn zinter(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    setop(ctx, args, SetOp::Inter, false)
}

/// ```text
/// ZINTERCARD numkeys key [key ...] [LIMIT limit]
/// ```
fn zintercard(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    setop_generic(ctx, args, SetOp::Inter, false, true)
}

/// ```text
/// ZDIFF numkeys key [key ...] [WITHSCORES]
/// ```
fn zdiff(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    setop(ctx, args, SetOp::Diff, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn score_ranges_parse_as_redis() {
        let r = ScoreRange::parse(b"(1", b"+inf").unwrap();
        assert!(!r.contains(1.0) && r.contains(1.5) && r.contains(f64::INFINITY));
        assert!(ScoreRange::parse(b"x", b"1").is_err());
        assert!(ScoreRange::parse(b"nan", b"1").is_err());
        assert!(ScoreRange::parse(b"(", b"1").unwrap().contains(0.5));
    }

    #[test]
    fn lex_ranges_parse_as_redis() {
        let r = LexRange::parse(&Bytes::from("[b"), &Bytes::from("(d")).unwrap();
        assert!(r.contains(b"b") && r.contains(b"c") && !r.contains(b"d") && !r.contains(b"a"));
        assert!(LexRange::parse(&Bytes::from("b"), &Bytes::from("+")).is_err());
        assert!(LexRange::parse(&Bytes::from("-x"), &Bytes::from("+")).is_err());
    }
}
