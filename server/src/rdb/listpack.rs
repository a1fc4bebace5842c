//! Listpacks as Redis 7.0 writes them (`listpack.c`): the form of a small hash, a small sorted
//! set, a quicklist node and a stream node in an RDB payload.

/// Builds one listpack.
pub(super) struct Listpack {
    body: Vec<u8>,
    count: usize,
}

impl Listpack {
    /// An empty listpack.
    pub(super) fn new() -> Self {
        Listpack {
            body: Vec::new(),
            count: 0,
        }
    }

    /// `lpEncodeBacklen`.
    fn backlen(out: &mut Vec<u8>, l: usize) {
        if l <= 127 {
            out.push(l as u8);
        } else if l < 16383 {
            out.push((l >> 7) as u8);
            out.push(((l & 127) | 128) as u8);
        } else if l < 2_097_151 {
            out.push((l >> 14) as u8);
            out.push((((l >> 7) & 127) | 128) as u8);
            out.push(((l & 127) | 128) as u8);
        } else if l < 268_435_455 {
            out.push((l >> 21) as u8);
            out.push((((l >> 14) & 127) | 128) as u8);
            out.push((((l >> 7) & 127) | 128) as u8);
            out.push(((l & 127) | 128) as u8);
        } else {
            out.push((l >> 28) as u8);
            out.push((((l >> 21) & 127) | 128) as u8);
            out.push((((l >> 14) & 127) | 128) as u8);
            out.push((((l >> 7) & 127) | 128) as u8);
            out.push(((l & 127) | 128) as u8);
        }
    }

    fn push_encoded(&mut self, encoded: &[u8]) {
        self.body.extend_from_slice(encoded);
        Self::backlen(&mut self.body, encoded.len());
        self.count += 1;
    }

    /// `lpAppendInteger`.
    pub(super) fn int(&mut self, v: i64) {
        let mut e = Vec::with_capacity(9);
        if (0..=127).contains(&v) {
            e.push(v as u8);
        } else if (-4096..=4095).contains(&v) {
            let u = if v < 0 { (1 << 13) + v } else { v } as u64;
            e.push(((u >> 8) as u8) | 0xC0);
            e.push((u & 0xff) as u8);
        } else if let Ok(v) = i16::try_from(v) {
            e.push(0xF1);
            e.extend_from_slice(&v.to_le_bytes());
        } else if (-8_388_608..=8_388_607).contains(&v) {
            e.push(0xF2);
            e.extend_from_slice(&v.to_le_bytes()[..3]);
        } else if let Ok(v) = i32::try_from(v) {
            e.push(0xF3);
            e.extend_from_slice(&v.to_le_bytes());
        } else {
            e.push(0xF4);
            e.extend_from_slice(&v.to_le_bytes());
        }
        self.push_encoded(&e);
    }

    /// `lpAppend`: integers as such, other strings with their length.
    pub(super) fn string(&mut self, s: &[u8]) {
        if s.len() <= 20 {
            if let Some(v) = locksmith_resp::parse_integer(s) {
                if v.to_string().as_bytes() == s {
                    return self.int(v);
                }
            }
        }
        let mut e = Vec::with_capacity(s.len() + 5);
        if s.len() < 64 {
            e.push(0x80 | s.len() as u8);
        } else if s.len() < 4096 {
            e.push(0xE0 | (s.len() >> 8) as u8);
            e.push((s.len() & 0xff) as u8);
        } else {
            e.push(0xF0);
            e.extend_from_slice(&(s.len() as u32).to_le_bytes());
        }
        e.extend_from_slice(s);
        self.push_encoded(&e);
    }

    /// The listpack's bytes: header, entries, end byte.
    pub(super) fn finish(self) -> Vec<u8> {
        let total = 6 + self.body.len() + 1;
        let mut out = Vec::with_capacity(total);
        out.extend_from_slice(&(total as u32).to_le_bytes());
        out.extend_from_slice(&(self.count.min(65535) as u16).to_le_bytes());
        out.extend_from_slice(&self.body);
        out.push(0xFF);
        out
    }
}
