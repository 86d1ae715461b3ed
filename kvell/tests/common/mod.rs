#![allow(dead_code)]
//! Helpers shared by the integration tests.

/// xorshift64*: a tiny deterministic generator (fixed seeds, no `rand`).
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    /// A value size that crosses the size classes and the 4 KiB boundary.
    pub fn value_len(&mut self) -> usize {
        match self.below(10) {
            0 => 0,
            1..=4 => self.below(120) as usize,
            5 | 6 => 100 + self.below(1400) as usize,
            7 => 1300 + self.below(2900) as usize,
            8 => 4000 + self.below(200) as usize,
            _ => 4096 + self.below(20_000) as usize,
        }
    }
}

pub fn value(seed: u64, len: usize) -> Vec<u8> {
    kvtestkit::conformance::value(seed, len)
}
