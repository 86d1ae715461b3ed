//! Extents of the data file (whole 4 KiB blocks holding one large value each) and
//! their free-extent allocator, in memory only and rebuilt on open from the extents
//! the image's records use.

use std::collections::BTreeMap;

/// A large value's place in the data file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Extent {
    /// First 4 KiB block.
    pub start: u32,
    pub blocks: u32,
    /// Value length in bytes.
    pub len: u32,
    /// CRC32 of the value.
    pub crc: u32,
}

#[derive(Default, Debug)]
pub struct Extents {
    /// Free extents below `end`: start -> blocks, coalesced.
    free: BTreeMap<u32, u32>,
    /// One past the last block ever handed out (the data file's used size).
    end: u32,
}

impl Extents {
    /// The allocator given the extents in use.
    pub fn rebuild(mut used: Vec<(u32, u32)>) -> Result<Extents, String> {
        used.sort_unstable();
        let mut x = Extents::default();
        for (s, n) in used {
            if s < x.end {
                return Err(format!("data extent at block {s} is used twice"));
            }
            if s > x.end {
                x.free.insert(x.end, s - x.end);
            }
            x.end = s + n;
        }
        Ok(x)
    }

    /// First fit, else at the end of the file.
    pub fn alloc(&mut self, n: u32) -> u32 {
        let hit = self
            .free
            .iter()
            .find(|(_, len)| **len >= n)
            .map(|(s, l)| (*s, *l));
        if let Some((s, len)) = hit {
            self.free.remove(&s);
            if len > n {
                self.free.insert(s + n, len - n);
            }
            return s;
        }
        let s = self.end;
        self.end += n;
        s
    }

    pub fn free(&mut self, mut s: u32, mut n: u32) {
        if let Some((&ps, &pn)) = self.free.range(..s).next_back()
            && ps + pn == s
        {
            self.free.remove(&ps);
            s = ps;
            n += pn;
        }
        if let Some(&nn) = self.free.get(&(s + n)) {
            self.free.remove(&(s + n));
            n += nn;
        }
        if s + n == self.end {
            self.end = s;
        } else {
            self.free.insert(s, n);
        }
    }

    #[cfg(test)]
    pub fn free_blocks(&self) -> u64 {
        self.free.values().map(|&n| n as u64).sum()
    }

    #[cfg(test)]
    pub fn end(&self) -> u32 {
        self.end
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alloc_free_coalesce() {
        let mut x = Extents::default();
        let a = x.alloc(2);
        let b = x.alloc(3);
        let c = x.alloc(1);
        assert_eq!((a, b, c), (0, 2, 5));
        x.free(a, 2);
        x.free(b, 3);
        assert_eq!(x.free_blocks(), 5);
        assert_eq!(x.alloc(4), 0);
        x.free(c, 1);
        assert_eq!(x.end(), 4, "the freed tail shrinks the file end");
        let r = Extents::rebuild(vec![(4, 2), (0, 1)]).unwrap();
        assert_eq!(r.end(), 6);
        assert_eq!(r.free_blocks(), 3);
        assert!(Extents::rebuild(vec![(0, 2), (1, 1)]).is_err());
    }
}
