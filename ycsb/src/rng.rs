//! The driver's random numbers: xoshiro256** (`rand_xoshiro`, through `rand`'s traits)
//! seeded through SplitMix64, so that a seed gives the same operation stream in every
//! version of the testbed; the committed vectors below hold the stream to that.
//! YCSB's own distributions (zipfian, latest, hotspot, ...) are in `generator.rs`, as
//! YCSB computes them; other distributions come from `rand_distr` ([`Rng::sample`]).

use rand::SeedableRng;
use rand::rand_core::Rng as _;
use rand_distr::Distribution;
use rand_xoshiro::Xoshiro256StarStar;

/// A seeded pseudo-random generator (xoshiro256**).
#[derive(Clone, Debug)]
pub struct Rng(Xoshiro256StarStar);

fn splitmix(x: &mut u64) -> u64 {
    *x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Rng {
    /// The generator whose state is four SplitMix64 outputs from `seed` (the state
    /// words little-endian, as xoshiro's seed bytes are read).
    pub fn new(seed: u64) -> Rng {
        let mut x = seed;
        let mut bytes = [0u8; 32];
        for chunk in bytes.chunks_exact_mut(8) {
            chunk.copy_from_slice(&splitmix(&mut x).to_le_bytes());
        }
        Rng(Xoshiro256StarStar::from_seed(bytes))
    }

    /// An independent stream for a sub-task (a thread, a phase).
    pub fn derive(seed: u64, stream: u64) -> Rng {
        let mut x = seed ^ stream.wrapping_mul(0xD134_2543_DE82_EF95);
        Rng::new(splitmix(&mut x))
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// Uniform in [0, 1).
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in [0, n), without modulo bias. `n` must be positive.
    pub fn below(&mut self, n: u64) -> u64 {
        debug_assert!(n > 0);
        // Lemire's multiply-shift with rejection (written out, not rand's
        // `random_range`, so the stream does not depend on rand's choice of method).
        loop {
            let x = self.next_u64();
            let m = (x as u128) * (n as u128);
            let lo = m as u64;
            if lo >= n.wrapping_neg() % n {
                return (m >> 64) as u64;
            }
        }
    }

    /// A draw from a `rand_distr` distribution.
    pub fn sample<T, D: Distribution<T>>(&mut self, d: &D) -> T {
        d.sample(&mut self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stream_of_a_seed_never_changes() {
        // committed vectors: a seed gives these numbers in every version
        let mut r = Rng::new(42);
        let a: Vec<u64> = (0..4).map(|_| r.next_u64()).collect();
        assert_eq!(
            a,
            [
                1546998764402558742,
                6990951692964543102,
                12544586762248559009,
                17057574109182124193
            ]
        );
        let mut d = Rng::derive(7, 3);
        let b: Vec<u64> = (0..2).map(|_| d.next_u64()).collect();
        assert_eq!(b, [1231183013424349493, 12438151132806254015]);
        let mut e = Rng::new(1);
        let c: Vec<u64> = (0..5).map(|_| e.below(1000)).collect();
        assert_eq!(c, [702, 520, 574, 391, 697]);
    }

    #[test]
    fn same_seed_same_stream_and_streams_differ() {
        let draw = |seed| {
            let mut r = Rng::new(seed);
            (0..5).map(|_| r.next_u64()).collect::<Vec<_>>()
        };
        assert_eq!(draw(42), draw(42));
        assert_ne!(draw(42), draw(43));
        let mut r = Rng::derive(42, 1);
        assert_ne!(r.next_u64(), Rng::derive(42, 2).next_u64());
    }

    #[test]
    fn below_is_in_range_and_roughly_uniform() {
        let mut r = Rng::new(7);
        let mut counts = [0u32; 10];
        for _ in 0..100_000 {
            counts[r.below(10) as usize] += 1;
        }
        for c in counts {
            assert!((9_000..11_000).contains(&c), "{counts:?}");
        }
        let f = r.next_f64();
        assert!((0.0..1.0).contains(&f));
    }
}
