//! `SORT` and `SORT_RO`, as Redis's `sortCommand`: the elements of a list, set or sorted set,
//! ordered numerically or lexicographically (`ALPHA`), by themselves or by the values of other
//! keys (`BY pattern`, `*` replaced by the element, `->field` reading a hash field), limited
//! (`LIMIT`), projected (`GET pattern`, `#` being the element), and returned or stored as a
//! list (`STORE`).

use super::{strtod, Args, CmdResult, Command, CommandError, Ctx};
use crate::db::Value;
use crate::notify;
use bytes::Bytes;
use locksmith_resp::Frame;
use std::cmp::Ordering;
use std::collections::VecDeque;

/// The sort family's table.
pub(crate) static COMMANDS: &[Command] =
    &[Command::new("sort", sort), Command::new("sort_ro", sort_ro)];

/// ```text
/// SORT key [BY pattern] [LIMIT offset count] [GET pattern [GET pattern ...]] [ASC | DESC]
///   [ALPHA] [STORE destination]
/// ```
fn sort(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    sort_generic(ctx, args, false)
}

/// ```text
/// SORT_RO key [BY pattern] [LIMIT offset count] [GET pattern [GET pattern ...]] [ASC | DESC]
///   [ALPHA]
/// ```
fn sort_ro(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    sort_generic(ctx, args, true)
}

/// One element with what it is compared by.
struct Item {
    element: Bytes,
    score: f64,
    by: Option<Bytes>,
}

fn sort_generic(ctx: &mut Ctx<'_>, args: &mut Args<'_>, readonly: bool) -> CmdResult {
    let key = args.bytes()?;
    let (mut desc, mut alpha, mut dontsort) = (false, false, false);
    let (mut limit_start, mut limit_count) = (0i64, -1i64);
    let mut store: Option<Bytes> = None;
    let mut by: Option<Bytes> = None;
    let mut gets: Vec<Bytes> = Vec::new();
    let cluster = ctx.node.cluster.get().is_some();
    while let Some(opt) = args.next() {
        let left = args.remaining();
        if opt.eq_ignore_ascii_case(b"asc") {
            desc = false;
        } else if opt.eq_ignore_ascii_case(b"desc") {
            desc = true;
        } else if opt.eq_ignore_ascii_case(b"alpha") {
            alpha = true;
        } else if opt.eq_ignore_ascii_case(b"limit") && left >= 2 {
            limit_start = args.i64()?;
            limit_count = args.i64()?;
        } else if !readonly && opt.eq_ignore_ascii_case(b"store") && left >= 1 {
            store = Some(args.bytes()?.clone());
        } else if opt.eq_ignore_ascii_case(b"by") && left >= 1 {
            let pattern = args.bytes()?;
            if !pattern.contains(&b'*') {
                dontsort = true;
            } else if cluster {
                return Err(CommandError::err(
                    "BY option of SORT denied in Cluster mode.",
                ));
            } else if !super::acl::may_read_any_key(ctx, args.argv()) {
                return Err(CommandError::err(
                    "BY option of SORT denied due to insufficient ACL permissions.",
                ));
            }
            by = Some(pattern.clone());
        } else if opt.eq_ignore_ascii_case(b"get") && left >= 1 {
            if cluster {
                return Err(CommandError::err(
                    "GET option of SORT denied in Cluster mode.",
                ));
            }
            if !super::acl::may_read_any_key(ctx, args.argv()) {
                return Err(CommandError::err(
                    "GET option of SORT denied due to insufficient ACL permissions.",
                ));
            }
            gets.push(args.bytes()?.clone());
        } else {
            return Err(CommandError::Syntax);
        }
    }
    enum Source {
        Ordered(Vec<Bytes>),
        Set(Vec<Bytes>),
    }
    let source = match ctx.lookup_read(key).map(|e| &e.value) {
        None => Source::Ordered(Vec::new()),
        Some(Value::List(l, _)) => Source::Ordered(l.iter().cloned().collect()),
        Some(Value::ZSet(z)) => Source::Ordered(z.iter().map(|(m, _)| m.clone()).collect()),
        Some(Value::Set(s)) => Source::Set(s.iter().collect()),
        Some(_) => return Err(CommandError::WrongType),
    };
    // A set has no order of its own: sorted when the result is stored or a script asks, so
    // replicas and replays agree.
    if dontsort
        && matches!(source, Source::Set(_))
        && (store.is_some() || ctx.client.origin.in_script)
    {
        dontsort = false;
        alpha = true;
        by = None;
    }
    let (elements, ordered) = match source {
        Source::Ordered(e) => (e, true),
        Source::Set(e) => (e, false),
    };
    let len = elements.len() as i64;
    let start = limit_start.clamp(0, len);
    let count = limit_count.clamp(-1, len);
    let mut end = if count < 0 {
        len - 1
    } else {
        start + count - 1
    };
    let start = if start >= len {
        end = len - 2;
        len - 1
    } else {
        start
    };
    if end >= len {
        end = len - 1;
    }
    let range = (end - start + 1).max(0) as usize;
    let start = start.max(0) as usize;
    let selected: Vec<Bytes> = if dontsort {
        if ordered && desc {
            elements.into_iter().rev().skip(start).take(range).collect()
        } else {
            elements.into_iter().skip(start).take(range).collect()
        }
    } else {
        let mut items = Vec::with_capacity(elements.len());
        let mut conversion_error = false;
        for element in elements {
            let value = match &by {
                Some(pattern) => lookup_by_pattern(ctx, pattern, &element),
                None => Some(element.clone()),
            };
            let mut item = Item {
                element,
                score: 0.0,
                by: None,
            };
            if let Some(value) = value {
                if alpha {
                    if by.is_some() {
                        item.by = Some(value);
                    }
                } else {
                    match sort_score(&value) {
                        Some(score) => item.score = score,
                        None => conversion_error = true,
                    }
                }
            }
            items.push(item);
        }
        if conversion_error {
            return Err(CommandError::err(
                "One or more scores can't be converted into double",
            ));
        }
        let by_pattern = by.is_some();
        items.sort_by(|a, b| {
            let cmp = if !alpha {
                a.score
                    .partial_cmp(&b.score)
                    .unwrap_or(Ordering::Equal)
                    .then_with(|| a.element.cmp(&b.element))
            } else if by_pattern {
                match (&a.by, &b.by) {
                    (None, None) => Ordering::Equal,
                    (None, Some(_)) => Ordering::Less,
                    (Some(_), None) => Ordering::Greater,
                    (Some(x), Some(y)) => x.cmp(y),
                }
            } else {
                a.element.cmp(&b.element)
            };
            if desc {
                cmp.reverse()
            } else {
                cmp
            }
        });
        items
            .into_iter()
            .skip(start)
            .take(range)
            .map(|i| i.element)
            .collect()
    };
    // Each selected element, or what its GET patterns read (nil where nothing is there).
    let mut output: Vec<Option<Bytes>> = Vec::new();
    for element in &selected {
        if gets.is_empty() {
            output.push(Some(element.clone()));
        }
        for pattern in &gets {
            output.push(lookup_by_pattern(ctx, pattern, element));
        }
    }
    let Some(dest) = store else {
        return Ok(Frame::Array(
            output
                .into_iter()
                .map(|v| v.map_or(Frame::Null, Frame::Bulk))
                .collect(),
        ));
    };
    let stored = output.len();
    if stored > 0 {
        let list: VecDeque<Bytes> = output.into_iter().map(Option::unwrap_or_default).collect();
        // Built as a quicklist, then converted as Redis 7.2 converts a new list.
        let mut encoding = crate::db::ListEncoding::Quicklist;
        super::list::list_rules(ctx).settle(&list, &mut encoding, false);
        ctx.set(&dest, Value::List(list, encoding), None);
        ctx.notify(notify::LIST, "sortstore", &dest);
    } else if ctx.delete(&dest) {
        ctx.notify(notify::GENERIC, "del", &dest);
    }
    Ok(Frame::Integer(stored as i64))
}

/// A sort weight as Redis reads it: `strtod` over the whole value (leading spaces skipped, an
/// empty value is 0); out-of-range and NaN refused.
fn sort_score(value: &[u8]) -> Option<f64> {
    let trimmed = value
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .map_or(&value[value.len()..], |i| &value[i..]);
    if value.is_empty() {
        return Some(0.0);
    }
    match strtod(trimmed)? {
        (v, false) if !v.is_nan() => Some(v),
        _ => None,
    }
}

/// Redis's `lookupKeyByPattern`: `#` is the element itself; otherwise the first `*` of
/// `pattern` is replaced by the element and the key read, as a string, or with `->field` as
/// that field of a hash. `None` when there is no `*`, no such key or field, or another type.
fn lookup_by_pattern(ctx: &mut Ctx<'_>, pattern: &[u8], element: &Bytes) -> Option<Bytes> {
    if pattern == b"#" {
        return Some(element.clone());
    }
    let star = pattern.iter().position(|&b| b == b'*')?;
    let after = &pattern[star + 1..];
    let arrow = after
        .windows(2)
        .position(|w| w == b"->")
        .filter(|&at| at + 2 < after.len());
    let (postfix, field) = match arrow {
        Some(at) => (&after[..at], Some(&after[at + 2..])),
        None => (after, None),
    };
    let mut key = Vec::with_capacity(star + element.len() + postfix.len());
    key.extend_from_slice(&pattern[..star]);
    key.extend_from_slice(element);
    key.extend_from_slice(postfix);
    let key = Bytes::from(key);
    match (ctx.lookup_read(&key).map(|e| &e.value), field) {
        (Some(Value::Hash(h)), Some(field)) => h.get(field).map(Bytes::copy_from_slice),
        (Some(Value::String(s)), None) => Some(s.to_bytes()),
        _ => None,
    }
}
