//! List commands: pushes and pops (also blocking: BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP),
//! ranges, indexes, LINSERT, LREM, LTRIM, LPOS, LMOVE, LMPOP.

use super::{parse_i64, Args, CmdResult, Command, CommandError, Ctx};
use crate::blocking::{self, BlockKind};
use crate::db::{ListEncoding, ListRules, Value};
use crate::notify;
use bytes::Bytes;
use locksmith_resp::Frame;
use std::collections::VecDeque;

/// The list family's table.
pub(crate) static COMMANDS: &[Command] = &[
    Command::new("lpush", lpush),
    Command::new("rpush", rpush),
    Command::new("lpushx", lpushx),
    Command::new("rpushx", rpushx),
    Command::new("lpop", lpop),
    Command::new("rpop", rpop),
    Command::new("llen", llen),
    Command::new("lrange", lrange),
    Command::new("lindex", lindex),
    Command::new("lset", lset),
    Command::new("linsert", linsert),
    Command::new("lrem", lrem),
    Command::new("ltrim", ltrim),
    Command::new("lpos", lpos),
    Command::new("lmove", lmove),
    Command::new("rpoplpush", rpoplpush),
    Command::new("lmpop", lmpop),
    Command::new("blpop", blpop),
    Command::new("brpop", brpop),
    Command::new("blmove", blmove),
    Command::new("brpoplpush", brpoplpush),
    Command::new("blmpop", blmpop),
];

/// Which end of a list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    Left,
    Right,
}

impl End {
    fn parse(arg: Option<&Bytes>) -> Result<End, CommandError> {
        match arg {
            Some(a) if a.eq_ignore_ascii_case(b"left") => Ok(End::Left),
            Some(a) if a.eq_ignore_ascii_case(b"right") => Ok(End::Right),
            _ => Err(CommandError::Syntax),
        }
    }

    fn pop_event(self) -> &'static str {
        match self {
            End::Left => "lpop",
            End::Right => "rpop",
        }
    }

    fn push_event(self) -> &'static str {
        match self {
            End::Left => "lpush",
            End::Right => "rpush",
        }
    }

    fn pop_command(self) -> Bytes {
        Bytes::from_static(match self {
            End::Left => b"LPOP",
            End::Right => b"RPOP",
        })
    }

    fn word(self) -> Bytes {
        Bytes::from_static(match self {
            End::Left => b"LEFT",
            End::Right => b"RIGHT",
        })
    }
}

/// The list at `key` for writing: `Ok(None)` if absent, `WRONGTYPE` if another type.
fn list_mut<'c>(
    ctx: &'c mut Ctx<'_>,
    key: &Bytes,
) -> Result<Option<&'c mut VecDeque<Bytes>>, CommandError> {
    match ctx.lookup_mut(key).map(|e| &mut e.value) {
        None => Ok(None),
        Some(Value::List(l, _)) => Ok(Some(l)),
        Some(_) => Err(CommandError::WrongType),
    }
}

/// What decides a list's encoding on this node now.
pub(super) fn list_rules(ctx: &Ctx<'_>) -> ListRules {
    let encoding = super::persistence::rdb_encoding(ctx);
    ListRules {
        fill: encoding.list_fill,
        packed_threshold: encoding.packed_threshold,
        listpack: encoding.target.list_listpack,
    }
}

/// [`typed`] for a list: `change` gets its elements and its encoding.
fn typed_list<R>(
    change: impl FnOnce(&mut VecDeque<Bytes>, &mut ListEncoding) -> (R, bool),
) -> impl FnOnce(&mut Value) -> (Result<R, CommandError>, bool) {
    move |value| match value {
        Value::List(items, encoding) => {
            let (result, changed) = change(items, encoding);
            (Ok(result), changed)
        }
        _ => (Err(CommandError::WrongType), false),
    }
}

/// After elements left the list at `key` (`listElementsRemoved`): a small quicklist becomes
/// a listpack again.
fn shrunk(ctx: &mut Ctx<'_>, key: &Bytes) {
    let rules = list_rules(ctx);
    if let Some(Value::List(items, encoding)) = ctx.entry_again(key).map(|e| &mut e.value) {
        rules.settle(items, encoding, true);
    }
}

/// Whether `key` holds something other than a list.
fn check_list(ctx: &mut Ctx<'_>, key: &Bytes) -> Result<bool, CommandError> {
    Ok(list_mut(ctx, key)?.is_some())
}

/// Pushes `elems` at `end` of the list at `key` (created unless `existing_only`); the new
/// length, or `None` when `existing_only` and the key is absent.
fn push_elems(
    ctx: &mut Ctx<'_>,
    key: &Bytes,
    elems: &[Bytes],
    end: End,
    existing_only: bool,
) -> Result<Option<usize>, CommandError> {
    let push = |list: &mut VecDeque<Bytes>| {
        for e in elems {
            match end {
                End::Left => list.push_front(e.clone()),
                End::Right => list.push_back(e.clone()),
            }
        }
        list.len()
    };
    // LPUSH/RPUSH create the list if needed and change it where it is found, measured there
    // (one lookup); LPUSHX/RPUSHX only change an existing one, the same way.
    let rules = list_rules(ctx);
    let change = typed_list(|list, encoding| {
        rules.growing(list, encoding, elems.iter().map(|e| &e[..]));
        (push(list), true)
    });
    let len = if existing_only {
        let Some((pushed, _)) = ctx.change_existing(key, change) else {
            return Ok(None);
        };
        pushed?
    } else {
        let make = || Value::List(VecDeque::with_capacity(elems.len()), rules.new_list());
        ctx.change_or_insert(key, make, change).0?
    };
    ctx.notify(notify::LIST, end.push_event(), key);
    ctx.modified_measured(key);
    Ok(Some(len))
}

/// Pops up to `count` elements from `end` of the list at `key`, with the events: `None` if
/// the key is absent, `WRONGTYPE` if it holds another type.
fn pop_elems(
    ctx: &mut Ctx<'_>,
    key: &Bytes,
    end: End,
    count: usize,
) -> Result<Option<Vec<Bytes>>, CommandError> {
    // Changed where it is found, measured there or deleted once empty: one lookup.
    let rules = list_rules(ctx);
    let change = typed_list(|list, encoding| {
        let n = count.min(list.len());
        let popped: Vec<Bytes> = match end {
            End::Left => list.drain(..n).collect(),
            End::Right => {
                let mut tail: Vec<Bytes> = list.drain(list.len() - n..).collect();
                tail.reverse();
                tail
            }
        };
        let changed = !popped.is_empty();
        rules.settle(list, encoding, true);
        (popped, changed)
    });
    let Some((popped, deleted)) = ctx.change_existing(key, change) else {
        return Ok(None);
    };
    let popped = popped?;
    if !popped.is_empty() {
        ctx.changed_in_place(key, notify::LIST, end.pop_event(), deleted);
    }
    Ok(Some(popped))
}

fn bulk_array(items: Vec<Bytes>) -> Frame {
    Frame::Array(items.into_iter().map(Frame::Bulk).collect())
}

/// ```text
/// LPUSH key element [element ...]
/// ```
fn lpush(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    push_command(ctx, args, End::Left, false)
}

/// ```text
/// RPUSH key element [element ...]
/// ```
fn rpush(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    push_command(ctx, args, End::Right, false)
}

/// ```text
/// LPUSHX key element [element ...]
/// ```
fn lpushx(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    push_command(ctx, args, End::Left, true)
}

/// ```text
/// RPUSHX key element [element ...]
/// ```
fn rpushx(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    push_command(ctx, args, End::Right, true)
}

fn push_command(ctx: &mut Ctx<'_>, args: &mut Args<'_>, end: End, xx: bool) -> CmdResult {
    let key = args.bytes()?;
    let elems = args.rest();
    let len = push_elems(ctx, key, elems, end, xx)?.unwrap_or(0);
    Ok(Frame::Integer(len as i64))
}

/// ```text
/// LPOP key [count]
/// ```
fn lpop(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    pop_command(ctx, args, End::Left)
}

/// ```text
/// RPOP key [count]
/// ```
fn rpop(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    pop_command(ctx, args, End::Right)
}

fn pop_command(ctx: &mut Ctx<'_>, args: &mut Args<'_>, end: End) -> CmdResult {
    if args.remaining() > 2 {
        let name = args.argv().first().map(|n| n.to_ascii_lowercase());
        let name = String::from_utf8_lossy(name.as_deref().unwrap_or_default()).into_owned();
        return Err(CommandError::WrongArity(name));
    }
    let key = args.bytes()?;
    let count = match args.next() {
        None => None,
        Some(arg) => match parse_i64(arg) {
            Ok(n) if n >= 0 => Some(n as usize),
            _ => return Err(CommandError::err("value is out of range, must be positive")),
        },
    };
    // A count of 0 pops nothing: an empty array for a list, as Redis's fast exit gives.
    Ok(
        match (pop_elems(ctx, key, end, count.unwrap_or(1))?, count) {
            (None, None) => Frame::Null,
            (None, Some(_)) => Frame::NullArray,
            (Some(mut popped), None) => popped.pop().map_or(Frame::Null, Frame::Bulk),
            (Some(popped), Some(_)) => bulk_array(popped),
        },
    )
}

/// ```text
/// LLEN key
/// ```
fn llen(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.bytes()?;
    Ok(Frame::Integer(
        list_mut(ctx, key)?.map_or(0, |l| l.len() as i64),
    ))
}

/// Redis's clamping of a `start`/`stop` range over `len` elements; `None` when empty.
fn clamp_range(start: i64, stop: i64, len: usize) -> Option<(usize, usize)> {
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

/// ```text
/// LRANGE key start stop
/// ```
fn lrange(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.bytes()?;
    let start = args.i64()?;
    let stop = args.i64()?;
    let Some(list) = list_mut(ctx, key)? else {
        return Ok(Frame::Array(Vec::new()));
    };
    let items = match clamp_range(start, stop, list.len()) {
        Some((a, b)) => list.range(a..=b).cloned().map(Frame::Bulk).collect(),
        None => Vec::new(),
    };
    Ok(Frame::Array(items))
}

/// The position of `index` (negative counts from the tail) in a list of `len`.
fn list_index(index: i64, len: usize) -> Option<usize> {
    let i = if index < 0 { index + len as i64 } else { index };
    (0..len as i64).contains(&i).then_some(i as usize)
}

/// ```text
/// LINDEX key index
/// ```
fn lindex(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.bytes()?;
    // Redis looks the key up before it parses the index.
    let Some(list) = list_mut(ctx, key)? else {
        return Ok(Frame::Null);
    };
    let index = args.i64()?;
    Ok(list_index(index, list.len())
        .and_then(|i| list.get(i).cloned())
        .map_or(Frame::Null, Frame::Bulk))
}

/// ```text
/// LSET key index element
/// ```
fn lset(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.bytes()?;
    // Redis looks the key up (no such key, WRONGTYPE) before it parses the index.
    let index = args.i64();
    let element = args.bytes()?;
    let rules = list_rules(ctx);
    let change = typed_list(|list, encoding| {
        if index.is_ok() {
            rules.growing(list, encoding, [&element[..]]);
        }
        let set = index.and_then(|index| {
            let slot = list_index(index, list.len())
                .and_then(|i| list.get_mut(i))
                .ok_or_else(|| CommandError::err("index out of range"))?;
            *slot = element.clone();
            Ok(())
        });
        if set.is_ok() {
            rules.settle(list, encoding, true);
        }
        let changed = set.is_ok();
        (set, changed)
    });
    let Some((set, _)) = ctx.change_existing(key, change) else {
        return Err(CommandError::NoSuchKey);
    };
    set??;
    ctx.changed_in_place(key, notify::LIST, "lset", false);
    Ok(Frame::ok())
}

/// ```text
/// LINSERT key <BEFORE | AFTER> pivot element
/// ```
fn linsert(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.bytes()?;
    let after = match args.next() {
        Some(a) if a.eq_ignore_ascii_case(b"after") => true,
        Some(a) if a.eq_ignore_ascii_case(b"before") => false,
        _ => return Err(CommandError::Syntax),
    };
    let pivot = args.bytes()?;
    let element = args.bytes()?;
    let rules = list_rules(ctx);
    let change = typed_list(|list, encoding| {
        // Converted first, whether the pivot is found or not, as Redis 7.2 does.
        rules.growing(list, encoding, [&element[..]]);
        let Some(pos) = list.iter().position(|e| *e == pivot) else {
            return (None, false);
        };
        list.insert(if after { pos + 1 } else { pos }, element.clone());
        (Some(list.len()), true)
    });
    let Some((inserted, _)) = ctx.change_existing(key, change) else {
        return Ok(Frame::Integer(0));
    };
    let Some(len) = inserted? else {
        return Ok(Frame::Integer(-1));
    };
    ctx.changed_in_place(key, notify::LIST, "linsert", false);
    Ok(Frame::Integer(len as i64))
}

/// ```text
/// LREM key count element
/// ```
fn lrem(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.bytes()?;
    let count = args.i64()?;
    let element = args.bytes()?;
    let limit = if count == 0 {
        usize::MAX
    } else {
        usize::try_from(count.unsigned_abs()).unwrap_or(usize::MAX)
    };
    let rules = list_rules(ctx);
    let change = typed_list(|list, encoding| {
        let removed = remove_matches(list, element, limit, count < 0);
        if removed > 0 {
            rules.settle(list, encoding, true);
        }
        (removed, removed > 0)
    });
    let Some((removed, deleted)) = ctx.change_existing(key, change) else {
        return Ok(Frame::Integer(0));
    };
    let removed = removed?;
    if removed > 0 {
        ctx.changed_in_place(key, notify::LIST, "lrem", deleted);
    }
    Ok(Frame::Integer(removed as i64))
}

/// Removes from `list` up to `limit` elements equal to `element`, the first ones from the
/// head or, `from_tail`, the last ones, in one pass whatever the list's length (removing one
/// at a time shifts the rest each time: minutes for a long list of many matches); says how
/// many it removed.
fn remove_matches(
    list: &mut VecDeque<Bytes>,
    element: &[u8],
    limit: usize,
    from_tail: bool,
) -> usize {
    // The index from which matches go: 0 from the head; from the tail, the `limit`-th match
    // counted from the end (or the first match, when there are fewer).
    let mut first = 0;
    if from_tail {
        first = list.len();
        let mut seen = 0;
        for (i, e) in list.iter().enumerate().rev() {
            if seen == limit {
                break;
            }
            if e == element {
                seen += 1;
                first = i;
            }
        }
    }
    let (mut at, mut removed) = (0, 0);
    list.retain(|e| {
        let remove = at >= first && removed < limit && e == element;
        at += 1;
        removed += usize::from(remove);
        !remove
    });
    removed
}

/// ```text
/// LTRIM key start stop
/// ```
fn ltrim(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.bytes()?;
    let start = args.i64()?;
    let stop = args.i64()?;
    let rules = list_rules(ctx);
    let change = typed_list(|list, encoding| {
        match clamp_range(start, stop, list.len()) {
            Some((a, b)) => {
                list.truncate(b + 1);
                list.drain(..a);
            }
            None => list.clear(),
        }
        rules.settle(list, encoding, true);
        ((), true)
    });
    let Some((trimmed, deleted)) = ctx.change_existing(key, change) else {
        return Ok(Frame::ok());
    };
    trimmed?;
    ctx.changed_in_place(key, notify::LIST, "ltrim", deleted);
    Ok(Frame::ok())
}

/// ```text
/// LPOS key element [RANK rank] [COUNT num-matches] [MAXLEN len]
/// ```
fn lpos(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.bytes()?;
    let element = args.bytes()?;
    let (mut rank, mut count, mut maxlen) = (1i64, None::<i64>, 0i64);
    while let Some(opt) = args.next() {
        let Some(value) = args.next() else {
            return Err(CommandError::Syntax);
        };
        // COUNT and MAXLEN answer their own text for any bad value, as Redis's
        // getRangeLongFromObjectOrReply with a message does.
        let at_least_zero = |msg: &str| match parse_i64(value) {
            Ok(v) if v >= 0 => Ok(v),
            _ => Err(CommandError::err(msg)),
        };
        if opt.eq_ignore_ascii_case(b"rank") {
            // Redis 7.0 negates i64::MIN to itself, which then acts as -1.
            rank = match parse_i64(value)? {
                i64::MIN if ctx.node.config.profile().checks.lpos_rank_refuses_min => {
                    return Err(CommandError::err(
                        "value is out of range, value must between -9223372036854775807 and \
                         9223372036854775807",
                    ))
                }
                i64::MIN => -1,
                r => r,
            };
            if rank == 0 {
                return Err(CommandError::err(
                    "RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list",
                ));
            }
        } else if opt.eq_ignore_ascii_case(b"count") {
            count = Some(at_least_zero("COUNT can't be negative")?);
        } else if opt.eq_ignore_ascii_case(b"maxlen") {
            maxlen = at_least_zero("MAXLEN can't be negative")?;
        } else {
            return Err(CommandError::Syntax);
        }
    }
    let empty = || {
        if count.is_some() {
            Frame::Array(Vec::new())
        } else {
            Frame::Null
        }
    };
    let Some(list) = list_mut(ctx, key)? else {
        return Ok(empty());
    };
    let len = list.len();
    let want = match count {
        Some(0) => usize::MAX,
        Some(c) => c as usize,
        None => 1,
    };
    let scan = if maxlen == 0 {
        len
    } else {
        (maxlen as usize).min(len)
    };
    let mut skip = rank.unsigned_abs().saturating_sub(1);
    let mut found = Vec::new();
    let indexes: Box<dyn Iterator<Item = usize>> = if rank > 0 {
        Box::new(0..len)
    } else {
        Box::new((0..len).rev())
    };
    for i in indexes.take(scan) {
        if list.get(i) == Some(element) {
            if skip > 0 {
                skip -= 1;
                continue;
            }
            found.push(Frame::Integer(i as i64));
            if found.len() >= want {
                break;
            }
        }
    }
    Ok(match count {
        Some(_) => Frame::Array(found),
        None => found.pop().unwrap_or(Frame::Null),
    })
}

/// Moves one element from `src`'s `from` end to `dst`'s `to` end; `Ok(None)` when `src` is
/// absent. Events as Redis's `lmoveGenericCommand`: the push on `dst`, then the pop on `src`.
fn move_elem(
    ctx: &mut Ctx<'_>,
    src: &Bytes,
    dst: &Bytes,
    from: End,
    to: End,
) -> Result<Option<Bytes>, CommandError> {
    if !check_list(ctx, src)? {
        return Ok(None);
    }
    check_list(ctx, dst)?;
    let Some(value) = pop_raw(ctx, src, from) else {
        return Ok(None);
    };
    push_elems(ctx, dst, std::slice::from_ref(&value), to, false)?;
    shrunk(ctx, src);
    ctx.notify(notify::LIST, from.pop_event(), src);
    ctx.written(src);
    Ok(Some(value))
}

/// Pops one element without events or deletion.
fn pop_raw(ctx: &mut Ctx<'_>, key: &Bytes, end: End) -> Option<Bytes> {
    let list = list_mut(ctx, key).ok()??;
    match end {
        End::Left => list.pop_front(),
        End::Right => list.pop_back(),
    }
}

/// ```text
/// LMOVE source destination <LEFT | RIGHT> <LEFT | RIGHT>
/// ```
fn lmove(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let src = args.bytes()?;
    let dst = args.bytes()?;
    let from = End::parse(args.next())?;
    let to = End::parse(args.next())?;
    Ok(move_elem(ctx, src, dst, from, to)?.map_or(Frame::Null, Frame::Bulk))
}

/// ```text
/// RPOPLPUSH source destination
/// ```
fn rpoplpush(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let src = args.bytes()?;
    let dst = args.bytes()?;
    Ok(move_elem(ctx, src, dst, End::Right, End::Left)?.map_or(Frame::Null, Frame::Bulk))
}

/// Parsed `numkeys key [key ...] <LEFT | RIGHT> [COUNT count]`.
struct Mpop {
    keys: Vec<Bytes>,
    end: End,
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
    let end = End::parse(args.next())?;
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
        end,
        count: count.unwrap_or(1),
    })
}

/// Pops from the first non-empty list of `keys` (WRONGTYPE stops at the first wrong key):
/// the key and the elements; propagated as `LPOP|RPOP key n` (or without `n` if `single`).
fn pop_first(
    ctx: &mut Ctx<'_>,
    keys: &[Bytes],
    end: End,
    count: usize,
    single: bool,
) -> Result<Option<(Bytes, Vec<Bytes>)>, CommandError> {
    for key in keys {
        // One lookup per key, as Redis's: the pop itself finds the list (a list is never
        // empty, so it pops `count.min(len)`, what replicas are told).
        let popped = match pop_elems(ctx, key, end, count)? {
            Some(popped) if !popped.is_empty() => popped,
            _ => continue,
        };
        let mut argv = vec![end.pop_command(), key.clone()];
        if !single {
            argv.push(Bytes::from(popped.len().to_string()));
        }
        ctx.propagate(argv);
        return Ok(Some((key.clone(), popped)));
    }
    Ok(None)
}

fn mpop_reply(key: Bytes, elems: Vec<Bytes>) -> Frame {
    Frame::Array(vec![Frame::Bulk(key), bulk_array(elems)])
}

/// ```text
/// LMPOP numkeys key [key ...] <LEFT | RIGHT> [COUNT count]
/// ```
fn lmpop(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let m = parse_mpop(args)?;
    Ok(match pop_first(ctx, &m.keys, m.end, m.count, false)? {
        Some((key, elems)) => mpop_reply(key, elems),
        None => Frame::NullArray,
    })
}

/// ```text
/// BLMPOP timeout numkeys key [key ...] <LEFT | RIGHT> [COUNT count]
/// ```
fn blmpop(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let timeout_arg = args.bytes()?;
    let m = parse_mpop(args)?;
    let timeout = blocking::parse_timeout(
        timeout_arg,
        ctx.now,
        ctx.node.config.profile().checks.timeout_rounds_up,
    )?;
    match pop_first(ctx, &m.keys, m.end, m.count, false)? {
        Some((key, elems)) => Ok(mpop_reply(key, elems)),
        None => super::block(ctx, m.keys, timeout, BlockKind::List, Frame::NullArray),
    }
}

/// ```text
/// BLPOP key [key ...] timeout
/// ```
fn blpop(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    bpop(ctx, args, End::Left)
}

/// ```text
/// BRPOP key [key ...] timeout
/// ```
fn brpop(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    bpop(ctx, args, End::Right)
}

fn bpop(ctx: &mut Ctx<'_>, args: &mut Args<'_>, end: End) -> CmdResult {
    let rest = args.rest();
    let (timeout_arg, keys) = rest.split_last().ok_or(CommandError::Syntax)?;
    let timeout = blocking::parse_timeout(
        timeout_arg,
        ctx.now,
        ctx.node.config.profile().checks.timeout_rounds_up,
    )?;
    match pop_first(ctx, keys, end, 1, true)? {
        Some((key, mut elems)) => Ok(Frame::Array(vec![
            Frame::Bulk(key),
            elems.pop().map_or(Frame::Null, Frame::Bulk),
        ])),
        None => super::block(
            ctx,
            keys.to_vec(),
            timeout,
            BlockKind::List,
            Frame::NullArray,
        ),
    }
}

/// ```text
/// BLMOVE source destination <LEFT | RIGHT> <LEFT | RIGHT> timeout
/// ```
fn blmove(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let src = args.bytes()?;
    let dst = args.bytes()?;
    let from = End::parse(args.next())?;
    let to = End::parse(args.next())?;
    let timeout = blocking::parse_timeout(
        args.bytes()?,
        ctx.now,
        ctx.node.config.profile().checks.timeout_rounds_up,
    )?;
    let argv = vec![
        Bytes::from_static(b"LMOVE"),
        src.clone(),
        dst.clone(),
        from.word(),
        to.word(),
    ];
    blocking_move(ctx, src.clone(), dst.clone(), from, to, timeout, argv)
}

/// ```text
/// BRPOPLPUSH source destination timeout
/// ```
fn brpoplpush(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let src = args.bytes()?;
    let dst = args.bytes()?;
    let timeout = blocking::parse_timeout(
        args.bytes()?,
        ctx.now,
        ctx.node.config.profile().checks.timeout_rounds_up,
    )?;
    let argv = vec![Bytes::from_static(b"RPOPLPUSH"), src.clone(), dst.clone()];
    blocking_move(
        ctx,
        src.clone(),
        dst.clone(),
        End::Right,
        End::Left,
        timeout,
        argv,
    )
}

fn blocking_move(
    ctx: &mut Ctx<'_>,
    src: Bytes,
    dst: Bytes,
    from: End,
    to: End,
    timeout: Option<std::time::Duration>,
    propagate_as: Vec<Bytes>,
) -> CmdResult {
    match move_elem(ctx, &src, &dst, from, to)? {
        Some(value) => {
            ctx.propagate(propagate_as);
            Ok(Frame::Bulk(value))
        }
        // Inside MULTI/EXEC or a script an empty source answers a null bulk, as Redis.
        None => super::block(ctx, vec![src], timeout, BlockKind::List, Frame::Null),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clamp_range_follows_redis() {
        assert_eq!(clamp_range(0, -1, 3), Some((0, 2)));
        assert_eq!(clamp_range(-100, 100, 3), Some((0, 2)));
        assert_eq!(clamp_range(2, 1, 3), None);
        assert_eq!(clamp_range(3, 5, 3), None);
        assert_eq!(clamp_range(0, 0, 0), None);
    }

    #[test]
    fn list_index_counts_from_both_ends() {
        assert_eq!(list_index(-1, 3), Some(2));
        assert_eq!(list_index(3, 3), None);
        assert_eq!(list_index(-4, 3), None);
    }

    /// LREM's removal one element at a time, from the head or the tail, as Redis walks it.
    fn remove_one_by_one(list: &mut Vec<u8>, element: u8, limit: usize, from_tail: bool) -> usize {
        let mut removed = 0;
        let order: Vec<usize> = if from_tail {
            (0..list.len()).rev().collect()
        } else {
            (0..list.len()).collect()
        };
        let mut gone = vec![false; list.len()];
        for i in order {
            if removed < limit && list[i] == element {
                gone[i] = true;
                removed += 1;
            }
        }
        let mut keep = gone.iter().map(|g| !g);
        list.retain(|_| keep.next().unwrap_or(true));
        removed
    }

    #[test]
    fn lrem_removes_the_first_or_last_matches_in_one_pass() {
        // Every list of up to 7 elements over {a, b}, every count from -8 to 8.
        for len in 0..=7u32 {
            for bits in 0..(1u32 << len) {
                let elems: Vec<u8> = (0..len)
                    .map(|i| if bits >> i & 1 == 1 { b'a' } else { b'b' })
                    .collect();
                for count in -8i64..=8 {
                    let limit = if count == 0 {
                        usize::MAX
                    } else {
                        count.unsigned_abs() as usize
                    };
                    let mut want = elems.clone();
                    let want_removed = remove_one_by_one(&mut want, b'a', limit, count < 0);
                    let mut list: VecDeque<Bytes> = elems
                        .iter()
                        .map(|e| Bytes::copy_from_slice(&[*e]))
                        .collect();
                    let removed = remove_matches(&mut list, b"a", limit, count < 0);
                    let got: Vec<u8> = list.iter().map(|e| e[0]).collect();
                    assert_eq!((removed, &got), (want_removed, &want), "{elems:?} {count}");
                }
            }
        }
        // A long list of alternating matches: one pass (this took minutes removing one by one).
        let mut list: VecDeque<Bytes> = (0..1_000_000)
            .map(|i| Bytes::from_static(if i % 2 == 0 { b"x" } else { b"y" }))
            .collect();
        assert_eq!(remove_matches(&mut list, b"x", usize::MAX, false), 500_000);
        assert_eq!(list.len(), 500_000);
        assert_eq!(remove_matches(&mut list, b"y", 3, true), 3);
        assert_eq!(list.len(), 499_997);
    }
}
