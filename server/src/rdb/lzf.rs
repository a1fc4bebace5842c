//! LZF, as liblzf 3.6 in Redis 7.0 has it: `lzf_compress` for the strings an RDB payload writes
//! compressed (`rdbcompression`), `lzf_decompress` for the ones it reads.
//!
//! The compressor is liblzf's with Redis's settings (`HLOG` 16, `VERY_FAST`, pointers in the
//! hash table), so a payload's bytes are Redis's. liblzf leaves its hash table uninitialised
//! on the stack; here a slot written by an earlier call is ignored (a generation tag), the
//! output liblzf gives with a clean table.

use std::cell::RefCell;

/// `HLOG`: the hash table has `1 << HLOG` slots.
const HLOG: u32 = 16;
const HSIZE: usize = 1 << HLOG;
/// Longest literal run (`MAX_LIT`).
const MAX_LIT: usize = 1 << 5;
/// Farthest back reference (`MAX_OFF`).
const MAX_OFF: usize = 1 << 13;
/// Longest back reference (`MAX_REF`).
const MAX_REF: usize = (1 << 8) + (1 << 3);

/// The compressor's hash table: a slot holds `generation << 32 | position`; a slot of another
/// generation is empty.
struct Table {
    slots: Vec<u64>,
    generation: u32,
}

impl Table {
    /// A new generation: every slot empty.
    fn begin(&mut self) -> u32 {
        if self.slots.is_empty() {
            self.slots = vec![0; HSIZE];
        }
        self.generation = self.generation.wrapping_add(1);
        if self.generation == 0 {
            self.slots.fill(0);
            self.generation = 1;
        }
        self.generation
    }

    fn get(&self, slot: usize) -> Option<usize> {
        let v = *self.slots.get(slot)?;
        ((v >> 32) as u32 == self.generation).then_some((v & 0xffff_ffff) as usize)
    }

    fn set(&mut self, slot: usize, position: usize) {
        if let Some(v) = self.slots.get_mut(slot) {
            *v = (u64::from(self.generation) << 32) | position as u64;
        }
    }
}

thread_local! {
    static TABLE: RefCell<Table> = const {
        RefCell::new(Table {
            slots: Vec::new(),
            generation: 0,
        })
    };
}

/// `FRST`: the hash of the two bytes at `p`.
fn first(input: &[u8], p: usize) -> u32 {
    let byte = |i: usize| u32::from(input.get(i).copied().unwrap_or(0));
    (byte(p) << 8) | byte(p + 1)
}

/// `NEXT`: `v` rolled on by the byte at `p + 2`.
fn next(v: u32, input: &[u8], p: usize) -> u32 {
    (v << 8) | u32::from(input.get(p + 2).copied().unwrap_or(0))
}

/// `IDX` under `VERY_FAST`.
fn idx(h: u32) -> usize {
    ((h >> (3 * 8 - HLOG)).wrapping_sub(h.wrapping_mul(5)) & (HSIZE as u32 - 1)) as usize
}

/// Writes `byte` at `at`; `None` past the output's end (liblzf's bounds make that not happen).
fn put(out: &mut [u8], at: usize, byte: u8) -> Option<()> {
    *out.get_mut(at)? = byte;
    Some(())
}

/// Copies one literal `byte` into the current run at `op`; a full run (`MAX_LIT`) gets its
/// control byte and a new run starts.
fn literal(out: &mut [u8], op: &mut usize, lit: &mut usize, byte: u8) -> Option<()> {
    *lit += 1;
    put(out, *op, byte)?;
    *op += 1;
    if *lit == MAX_LIT {
        put(out, *op - *lit - 1, (*lit - 1) as u8)?;
        *lit = 0;
        *op += 1;
    }
    Some(())
}

/// Ends the current run: writes its control byte (its length minus one), or takes its slot
/// back when it is empty (liblzf's "stop run" and "undo run if length is zero").
fn end_run(out: &mut [u8], op: &mut usize, lit: usize) -> Option<()> {
    put(out, op.checked_sub(lit + 1)?, (lit as u8).wrapping_sub(1))?;
    *op -= usize::from(lit == 0);
    Some(())
}

/// `lzf_compress(input, out_len)`: the compressed bytes, or `None` when they would not fit in
/// `out_len` bytes (liblzf's 0), decided by liblzf's own conservative checks.
pub(crate) fn compress(input: &[u8], out_len: usize) -> Option<Vec<u8>> {
    let in_end = input.len();
    if in_end == 0 || out_len == 0 || u32::try_from(in_end).is_err() {
        return None;
    }
    TABLE.with(|table| {
        let mut table = table.borrow_mut();
        table.begin();
        compress_with(&mut table, input, out_len)
    })
}

fn compress_with(table: &mut Table, input: &[u8], out_len: usize) -> Option<Vec<u8>> {
    let in_end = input.len();
    let mut out = vec![0u8; out_len];
    let at = |i: usize| input.get(i).copied();
    let mut lit = 0usize;
    let mut op = 1usize; // the first run's control byte is out[0]
    let mut ip = 0usize;
    let mut hval = first(input, ip);
    while ip + 2 < in_end {
        hval = next(hval, input, ip);
        let slot = idx(hval);
        let reference = table.get(slot);
        table.set(slot, ip);
        let found = reference.filter(|&r| {
            r < ip
                && ip - r - 1 < MAX_OFF
                && r > 0
                && at(r + 2) == at(ip + 2)
                && at(r) == at(ip)
                && at(r + 1) == at(ip + 1)
        });
        if let Some(r) = found {
            let off = ip - r - 1;
            let mut len = 2usize;
            let maxlen = (in_end - ip - len).min(MAX_REF);
            if op + 3 + 1 >= out_len && op - usize::from(lit == 0) + 3 + 1 >= out_len {
                return None;
            }
            end_run(&mut out, &mut op, lit)?;
            'matching: {
                if maxlen > 16 {
                    for _ in 0..16 {
                        len += 1;
                        if at(r + len) != at(ip + len) {
                            break 'matching;
                        }
                    }
                }
                loop {
                    len += 1;
                    if !(len < maxlen && at(r + len) == at(ip + len)) {
                        break;
                    }
                }
            }
            len -= 2; // now the match's length minus one
            ip += 1;
            if len < 7 {
                put(&mut out, op, ((off >> 8) + (len << 5)) as u8)?;
                op += 1;
            } else {
                put(&mut out, op, ((off >> 8) + (7 << 5)) as u8)?;
                put(&mut out, op + 1, (len - 7) as u8)?;
                op += 2;
            }
            put(&mut out, op, off as u8)?;
            op += 1;
            lit = 0;
            op += 1; // the next run's control byte
            ip += len + 1;
            if ip + 2 >= in_end {
                break;
            }
            // VERY_FAST: hash the match's last two positions.
            ip -= 2;
            hval = first(input, ip);
            hval = next(hval, input, ip);
            table.set(idx(hval), ip);
            ip += 1;
            hval = next(hval, input, ip);
            table.set(idx(hval), ip);
            ip += 1;
        } else {
            if op >= out_len {
                return None;
            }
            literal(&mut out, &mut op, &mut lit, at(ip)?)?;
            ip += 1;
        }
    }
    if op + 3 > out_len {
        return None;
    }
    while ip < in_end {
        literal(&mut out, &mut op, &mut lit, at(ip)?)?;
        ip += 1;
    }
    end_run(&mut out, &mut op, lit)?;
    out.truncate(op);
    Some(out)
}

/// Decompresses `input` into exactly `expected` bytes; `None` if the data is corrupt, refers
/// before the start of the output, or does not produce exactly `expected` bytes.
pub(crate) fn decompress(input: &[u8], expected: usize) -> Option<Vec<u8>> {
    // A byte of input yields at most 264 bytes of output (a back reference of the longest
    // length): a larger claim is corrupt, so it never sizes an allocation.
    if expected > input.len().saturating_mul(264) {
        return None;
    }
    let mut out: Vec<u8> = Vec::with_capacity(expected);
    let mut ip = 0usize;
    while ip < input.len() {
        let ctrl = usize::from(*input.get(ip)?);
        ip += 1;
        if ctrl < 32 {
            let run = ctrl + 1;
            let literal = input.get(ip..ip + run)?;
            if out.len() + run > expected {
                return None;
            }
            out.extend_from_slice(literal);
            ip += run;
        } else {
            let mut len = ctrl >> 5;
            if len == 7 {
                len += usize::from(*input.get(ip)?);
                ip += 1;
            }
            let low = usize::from(*input.get(ip)?);
            ip += 1;
            let back = ((ctrl & 0x1f) << 8) + low + 1;
            len += 2;
            let start = out.len().checked_sub(back)?;
            if out.len() + len > expected {
                return None;
            }
            for i in 0..len {
                let b = *out.get(start + i)?;
                out.push(b);
            }
        }
    }
    (out.len() == expected).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::{compress, decompress};

    #[test]
    fn literals_and_back_references() {
        // "abcabcabc": literal "abc", then a back reference of 6 bytes at distance 3.
        let input = [0x02, b'a', b'b', b'c', 0x80, 0x02];
        assert_eq!(decompress(&input, 9).as_deref(), Some(&b"abcabcabc"[..]));
        assert_eq!(decompress(&input, 8), None);
        assert_eq!(decompress(&[0x80, 0x05], 3), None);
        assert_eq!(decompress(&[0x05, b'a'], 6), None);
        assert_eq!(decompress(&[0x00, b'a'], usize::MAX), None);
    }

    #[test]
    fn compression_round_trips_and_gives_liblzf_bytes() {
        // Redis 7.0.15: `SET s <100 x 'a'>` then `DUMP s` holds these compressed bytes.
        let hundred = vec![b'a'; 100];
        let packed = compress(&hundred, 96).unwrap();
        assert_eq!(packed, b"\x01aa\xe0W\x00\x01aa");
        assert_eq!(decompress(&packed, 100).as_deref(), Some(&hundred[..]));
        // Incompressible input does not fit in fewer bytes.
        let noise: Vec<u8> = (0..200u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        assert_eq!(compress(&noise, noise.len() - 4), None);
        // Round trips of repetitive text of every length around the run and reference limits.
        for n in [3usize, 20, 21, 33, 34, 64, 300, 5000, 70_000] {
            let text: Vec<u8> = (0..n).map(|i| b"abcabd0123"[i % 7 + i % 3]).collect();
            if let Some(packed) = compress(&text, n) {
                assert_eq!(decompress(&packed, n).as_deref(), Some(&text[..]), "{n}");
            }
        }
    }
}
