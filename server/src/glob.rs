//! Redis's glob matcher (`stringmatchlen` in util.c), used by KEYS, SCAN MATCH, PSUBSCRIBE,
//! CONFIG GET and friends: `*`, `?`, `[...]`, `[^...]`, ranges, and `\` escapes, byte-wise.

/// Whether `string` matches `pattern` under Redis's rules (`nocase` = ASCII case-insensitive).
pub fn glob_match(pattern: &[u8], string: &[u8], nocase: bool) -> bool {
    let mut skip_longer = false;
    match_impl(pattern, string, nocase, &mut skip_longer, 0)
}

fn fold(c: u8, nocase: bool) -> u8 {
    if nocase {
        c.to_ascii_lowercase()
    } else {
        c
    }
}

fn match_impl(
    pattern: &[u8],
    string: &[u8],
    nocase: bool,
    skip_longer: &mut bool,
    nesting: usize,
) -> bool {
    // Protection against abusive patterns, as Redis.
    if nesting > 1000 {
        return false;
    }
    // C reads the NUL terminator past the end; `at` returns 0 there.
    let at = |s: &[u8], i: usize| s.get(i).copied().unwrap_or(0);
    let (mut p, mut s) = (0usize, 0usize);
    while p < pattern.len() && s < string.len() {
        match at(pattern, p) {
            b'*' => {
                while p + 1 < pattern.len() && at(pattern, p + 1) == b'*' {
                    p += 1;
                }
                if p + 1 == pattern.len() {
                    return true;
                }
                while s < string.len() {
                    let rest_p = pattern.get(p + 1..).unwrap_or_default();
                    let rest_s = string.get(s..).unwrap_or_default();
                    if match_impl(rest_p, rest_s, nocase, skip_longer, nesting + 1) {
                        return true;
                    }
                    if *skip_longer {
                        return false;
                    }
                    s += 1;
                }
                *skip_longer = true;
                return false;
            }
            b'?' => s += 1,
            b'[' => {
                p += 1;
                let negate = at(pattern, p) == b'^';
                if negate {
                    p += 1;
                }
                let c = at(string, s);
                let mut matched = false;
                loop {
                    let remaining = pattern.len().saturating_sub(p);
                    if at(pattern, p) == b'\\' && remaining >= 2 {
                        p += 1;
                        if at(pattern, p) == c {
                            matched = true;
                        }
                    } else if at(pattern, p) == b']' && remaining > 0 {
                        break;
                    } else if remaining == 0 {
                        // Unterminated class: step back so the outer loop ends here.
                        p -= 1;
                        break;
                    } else if remaining >= 3 && at(pattern, p + 1) == b'-' {
                        let (mut lo, mut hi) = (at(pattern, p), at(pattern, p + 2));
                        if lo > hi {
                            std::mem::swap(&mut lo, &mut hi);
                        }
                        let (lo, hi, ch) = (fold(lo, nocase), fold(hi, nocase), fold(c, nocase));
                        p += 2;
                        if ch >= lo && ch <= hi {
                            matched = true;
                        }
                    } else if fold(at(pattern, p), nocase) == fold(c, nocase) {
                        matched = true;
                    }
                    p += 1;
                }
                if negate {
                    matched = !matched;
                }
                if !matched {
                    return false;
                }
                s += 1;
            }
            other => {
                let mut expected = other;
                if other == b'\\' && pattern.len() - p >= 2 {
                    p += 1;
                    expected = at(pattern, p);
                }
                if fold(expected, nocase) != fold(at(string, s), nocase) {
                    return false;
                }
                s += 1;
            }
        }
        p += 1;
        if s == string.len() {
            while at(pattern, p) == b'*' && p < pattern.len() {
                p += 1;
            }
            break;
        }
    }
    p >= pattern.len() && s == string.len()
}

#[cfg(test)]
mod tests {
    use super::glob_match;

    #[test]
    fn glob_rules_match_redis_stringmatchlen() {
        let cases: &[(&str, &str, bool)] = &[
            ("*", "anything", true),
            // stringmatchlen never matches an empty string; KEYS/SCAN short-circuit a lone `*`.
            ("*", "", false),
            ("", "", true),
            ("a*", "a", true),
            ("", "a", false),
            ("h?llo", "hello", true),
            ("h?llo", "hllo", false),
            ("h*llo", "heeeello", true),
            ("h*llo", "hllo", true),
            ("h[ae]llo", "hallo", true),
            ("h[ae]llo", "hillo", false),
            ("h[^e]llo", "hallo", true),
            ("h[^e]llo", "hello", false),
            ("h[a-b]llo", "hbllo", true),
            ("h[b-a]llo", "hallo", true),
            ("h[a-b]llo", "hcllo", false),
            ("h\\*llo", "h*llo", true),
            ("h\\*llo", "hello", false),
            ("a*b*c", "aXbYc", true),
            ("a*b*c", "aXbY", false),
            (
                "redisson_lock__channel:*",
                "redisson_lock__channel:{x}",
                true,
            ),
            ("__keyspace@0__:*", "__keyspace@0__:foo", true),
            ("abc*", "abc", true),
            ("abc**", "abc", true),
            ("[abc", "a", true),
            ("a[", "a", false),
            ("[\\]]", "]", true),
        ];
        for &(pattern, string, want) in cases {
            assert_eq!(
                glob_match(pattern.as_bytes(), string.as_bytes(), false),
                want,
                "{pattern:?} vs {string:?}"
            );
        }
        assert!(glob_match(b"HELLO*", b"hello world", true));
        assert!(!glob_match(b"HELLO*", b"hello world", false));
    }

    #[test]
    fn abusive_patterns_finish() {
        let pattern = "a*".repeat(50) + "b";
        let string = "a".repeat(60);
        assert!(!glob_match(pattern.as_bytes(), string.as_bytes(), false));
    }
}
