//! YCSB's generators, reimplemented to give the same distributions as YCSB's Java
//! code (site.ycsb.generator): FNV-64 key hashing, uniform, zipfian (Gray et al.),
//! scrambled zipfian with YCSB's fixed item count and zeta constant, skewed latest
//! over acknowledged inserts, hotspot, exponential and sequential; plus what YCSB
//! lacks: a configurable zipfian constant and an unscrambled zipfian (KVell's own
//! benchmark, hot keys 0, 1, 2, ...).

use crate::error::{Error, Result, lock};
use crate::rng::Rng;
use std::fmt::Write as _;
use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, Ordering};

const FNV_OFFSET_BASIS_64: i64 = 0xCBF2_9CE4_8422_2325_u64 as i64;
const FNV_PRIME_64: i64 = 1_099_511_628_211;

/// YCSB's `Utils.fnvhash64`: FNV-1a over the 8 low-to-high octets of the value,
/// shifted arithmetically, then `Math.abs` (which leaves `i64::MIN` negative).
pub fn fnvhash64(mut val: i64) -> i64 {
    let mut h = FNV_OFFSET_BASIS_64;
    for _ in 0..8 {
        let octet = val & 0xff;
        val >>= 8;
        h ^= octet;
        h = h.wrapping_mul(FNV_PRIME_64);
    }
    h.wrapping_abs()
}

/// YCSB's `CoreWorkload.buildKeyName`: "user" + the (hashed unless ordered) key
/// number, left-padded with zeros to `zeropadding` digits.
pub fn key_name(prefix: &str, keynum: i64, ordered: bool, zeropadding: usize) -> String {
    let n = if ordered { keynum } else { fnvhash64(keynum) };
    let digits = decimal_len(n);
    let fill = zeropadding.saturating_sub(digits);
    // one allocation per key, written in place (the driver draws one per operation)
    let mut s = String::with_capacity(prefix.len() + fill + digits);
    s.push_str(prefix);
    s.extend(std::iter::repeat_n('0', fill));
    // writing to a String cannot fail
    let _ = write!(s, "{n}");
    s
}

/// The length of `n` in decimal, as `n.to_string()` writes it.
fn decimal_len(n: i64) -> usize {
    let magnitude = n
        .unsigned_abs()
        .checked_ilog10()
        .map_or(1, |l| l as usize + 1);
    magnitude + usize::from(n < 0)
}

/// YCSB's zipfian constant.
pub const ZIPFIAN_CONSTANT: f64 = 0.99;
/// Item count of the scrambled zipfian's inner generator.
pub const SCRAMBLED_ITEM_COUNT: i64 = 10_000_000_000;
/// zeta(10^10, 0.99), the constant YCSB hard-codes for the scrambled zipfian.
pub const SCRAMBLED_ZETAN: f64 = 26.469_028_201_783_02;

/// sum over i in [st, n) of 1 / (i + 1)^theta, added to `initial`.
pub fn zeta_static(st: i64, n: i64, theta: f64, initial: f64) -> f64 {
    let mut sum = initial;
    for i in st..n {
        sum += 1.0 / ((i + 1) as f64).powf(theta);
    }
    sum
}

/// zeta(n, theta) for very large n: the first million terms summed, the rest by
/// Euler-Maclaurin (relative error far below 1e-9). Used for the scrambled zipfian
/// with a non-default constant, where YCSB would sum 10^10 terms.
pub fn zeta_large(n: i64, theta: f64) -> f64 {
    const EXACT: i64 = 1_000_000;
    if n <= EXACT {
        return zeta_static(0, n, theta, 0.0);
    }
    let head = zeta_static(0, EXACT, theta, 0.0);
    // sum_{k=a}^{b} k^-theta with a = EXACT + 1, b = n
    let (a, b) = ((EXACT + 1) as f64, n as f64);
    let f = |x: f64| x.powf(-theta);
    let df = |x: f64| -theta * x.powf(-theta - 1.0);
    let integral = if (theta - 1.0).abs() < 1e-12 {
        b.ln() - a.ln()
    } else {
        (b.powf(1.0 - theta) - a.powf(1.0 - theta)) / (1.0 - theta)
    };
    head + integral + (f(a) + f(b)) / 2.0 + (df(b) - df(a)) / 12.0
}

/// YCSB's `ZipfianGenerator` (Gray et al., "Quickly Generating Billion-Record
/// Synthetic Databases"), with its quirk kept: when the item count grows, zeta is
/// extended incrementally but eta keeps the constructor's item count.
#[derive(Clone, Debug)]
pub struct Zipfian {
    items: i64,
    base: i64,
    theta: f64,
    zeta2theta: f64,
    alpha: f64,
    zetan: f64,
    eta: f64,
    count_for_zeta: i64,
}

impl Zipfian {
    /// Values in [min, max].
    pub fn new(min: i64, max: i64, theta: f64) -> Zipfian {
        let items = max - min + 1;
        Zipfian::with_zetan(min, max, theta, zeta_static(0, items, theta, 0.0))
    }

    /// Values in [min, max] with zeta(n) given (YCSB's constructor with `zetan`).
    pub fn with_zetan(min: i64, max: i64, theta: f64, zetan: f64) -> Zipfian {
        let items = max - min + 1;
        let zeta2theta = zeta_static(0, 2, theta, 0.0);
        let alpha = 1.0 / (1.0 - theta);
        let eta = (1.0 - (2.0 / items as f64).powf(1.0 - theta)) / (1.0 - zeta2theta / zetan);
        Zipfian {
            items,
            base: min,
            theta,
            zeta2theta,
            alpha,
            zetan,
            eta,
            count_for_zeta: items,
        }
    }

    /// A value in [base, base + itemcount).
    pub fn next_long(&mut self, itemcount: i64, rng: &mut Rng) -> i64 {
        if itemcount > self.count_for_zeta {
            self.zetan = zeta_static(self.count_for_zeta, itemcount, self.theta, self.zetan);
            self.count_for_zeta = itemcount;
            self.eta = (1.0 - (2.0 / self.items as f64).powf(1.0 - self.theta))
                / (1.0 - self.zeta2theta / self.zetan);
        }
        let u = rng.next_f64();
        let uz = u * self.zetan;
        if uz < 1.0 {
            return self.base;
        }
        if uz < 1.0 + 0.5f64.powf(self.theta) {
            return self.base + 1;
        }
        self.base + (itemcount as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as i64
    }

    pub fn next(&mut self, rng: &mut Rng) -> i64 {
        self.next_long(self.items, rng)
    }
}

/// YCSB's `ScrambledZipfianGenerator`: a zipfian over 10^10 items, hashed into
/// [min, max] with FNV-64, so the popular keys are spread over the key space.
#[derive(Clone, Debug)]
pub struct ScrambledZipfian {
    min: i64,
    itemcount: i64,
    inner: Zipfian,
}

impl ScrambledZipfian {
    pub fn new(min: i64, max: i64, theta: f64) -> ScrambledZipfian {
        let zetan = if theta == ZIPFIAN_CONSTANT {
            SCRAMBLED_ZETAN
        } else {
            zeta_large(SCRAMBLED_ITEM_COUNT + 1, theta)
        };
        ScrambledZipfian {
            min,
            itemcount: max - min + 1,
            inner: Zipfian::with_zetan(0, SCRAMBLED_ITEM_COUNT, theta, zetan),
        }
    }

    pub fn next(&mut self, rng: &mut Rng) -> i64 {
        let z = self.inner.next(rng);
        self.min + fnvhash64(z) % self.itemcount
    }
}

/// YCSB's `AcknowledgedCounterGenerator`: hands out insert key numbers and tracks
/// the highest one below which every insert has been acknowledged (`last`), over a
/// window of 2^20 outstanding inserts. Shared by all client threads.
///
/// The window (1 MiB) is allocated at the first acknowledgement, not before: a
/// phase without inserts never pays for it. It was allocated at once, and the
/// driver's calibration of a 64-thread load on the null engine, run while the
/// measured engine is still open, then zeroed 64 of them: 64 MiB of the driver's
/// heap charged to WiredTiger's budget at the start of its run phase, which a
/// memory cgroup killed (results/paper-small at a9be173).
#[derive(Debug)]
pub struct AckCounter {
    next: AtomicI64,
    limit: AtomicI64,
    window: Mutex<Vec<bool>>,
}

const WINDOW: usize = 1 << 20;

impl AckCounter {
    pub fn new(start: i64) -> AckCounter {
        AckCounter {
            next: AtomicI64::new(start),
            limit: AtomicI64::new(start - 1),
            window: Mutex::new(Vec::new()),
        }
    }

    /// The next key number to insert.
    pub fn next(&self) -> i64 {
        self.next.fetch_add(1, Ordering::Relaxed)
    }

    /// The highest key number below which all inserts are acknowledged.
    pub fn last(&self) -> i64 {
        self.limit.load(Ordering::Acquire)
    }

    /// Records that the insert of `value` completed.
    pub fn acknowledge(&self, value: i64) -> Result<()> {
        let mut w = lock(&self.window, "the insert acknowledgement window")?;
        if w.is_empty() {
            w.resize(WINDOW, false);
        }
        let slot = (value as usize) & (WINDOW - 1);
        if w[slot] {
            return Err(Error::failed(
                "too many unacknowledged insertion keys (over 2^20)",
            ));
        }
        w[slot] = true;
        let mut limit = self.limit.load(Ordering::Relaxed);
        loop {
            let s = ((limit + 1) as usize) & (WINDOW - 1);
            if !w[s] {
                break;
            }
            w[s] = false;
            limit += 1;
        }
        self.limit.store(limit, Ordering::Release);
        Ok(())
    }
}

/// How the run phase picks the key of a read, update, scan or read-modify-write
/// (`requestdistribution`).
#[derive(Clone, Debug)]
pub enum KeyChooser {
    Uniform {
        lb: i64,
        ub: i64,
    },
    /// YCSB's "zipfian": scrambled.
    Zipfian(ScrambledZipfian),
    /// Unscrambled zipfian over the key numbers: key 0 is the hottest.
    UnscrambledZipfian(Zipfian),
    /// Skewed towards the most recently acknowledged inserts.
    Latest(Zipfian),
    Hotspot {
        lb: i64,
        hot: i64,
        cold: i64,
        hot_opn_fraction: f64,
    },
    Exponential {
        gamma: f64,
    },
    Sequential {
        start: i64,
        interval: i64,
        cursor: i64,
    },
    /// Buckets of the key space, each a fraction range [lo, hi) of `count` keys from
    /// `start`, chosen with a probability, uniform inside (the production workloads).
    Buckets {
        start: i64,
        count: i64,
        buckets: Vec<Bucket>,
    },
}

/// One bucket of [`KeyChooser::Buckets`].
#[derive(Clone, Debug, PartialEq)]
pub struct Bucket {
    pub lo: f64,
    pub hi: f64,
    /// Probability of this bucket (normalised over all buckets).
    pub p: f64,
}

/// The skewed production key distribution of the KVell authors' code
/// (`production_random1`, over 500M keys there), as fractions of the key space.
pub fn production1_buckets() -> Vec<Bucket> {
    const EDGES: [(f64, f64, f64); 6] = [
        (0.0, 0.288, 13.0),
        (0.288, 0.6288, 8117.0),
        (0.6288, 0.90, 1314.0),
        (0.90, 0.96, 298.0),
        (0.96, 0.98, 178.0),
        (0.98, 1.0, 80.0),
    ];
    EDGES
        .iter()
        .map(|&(lo, hi, w)| Bucket {
            lo,
            hi,
            p: w / 10_000.0,
        })
        .collect()
}

/// The second production distribution. The authors' code (`production_random2`)
/// draws 0..9999 but compares it with thresholds written in millionths, so every draw
/// lands in the first bucket: uniform over the first 9.40328% of the keys (`as_coded`,
/// which produced the paper's numbers: 99% of its reads hit the cache). `as_written`
/// uses the thresholds as millionths, as they were presumably meant.
pub fn production2_buckets(as_written: bool) -> Vec<Bucket> {
    const N: f64 = 500_000_000.0;
    const EDGES: [(f64, f64, f64); 7] = [
        (0.0, 47_016_400.0, 103_487.0),
        (47_016_400.0, 259_179_450.0, 570_480.0),
        (259_179_450.0, 386_162_550.0, 849_982.0),
        (386_162_550.0, 422_748_200.0, 930_511.0),
        (422_748_200.0, 442_158_000.0, 973_234.0),
        (442_158_000.0, 448_392_900.0, 986_958.0),
        (448_392_900.0, 500_000_000.0, 1_000_000.0),
    ];
    if !as_written {
        return vec![Bucket {
            lo: 0.0,
            hi: EDGES[0].1 / N,
            p: 1.0,
        }];
    }
    let mut prev = 0.0;
    EDGES
        .iter()
        .map(|&(lo, hi, cum)| {
            let b = Bucket {
                lo: lo / N,
                hi: hi / N,
                p: (cum - prev) / 1_000_000.0,
            };
            prev = cum;
            b
        })
        .collect()
}

impl KeyChooser {
    /// A key number; `last` is the highest acknowledged insert. Draws that fall past
    /// it (keys not inserted yet) are redrawn, as YCSB does.
    pub fn next(&mut self, last: i64, rng: &mut Rng) -> i64 {
        loop {
            let k = match self {
                KeyChooser::Uniform { lb, ub } => *lb + rng.below((*ub - *lb + 1) as u64) as i64,
                KeyChooser::Zipfian(z) => z.next(rng),
                KeyChooser::UnscrambledZipfian(z) => z.next(rng),
                KeyChooser::Latest(z) => {
                    if last < 0 {
                        return 0;
                    }
                    last - z.next_long(last.max(1), rng)
                }
                KeyChooser::Hotspot {
                    lb,
                    hot,
                    cold,
                    hot_opn_fraction,
                } => {
                    if rng.next_f64() < *hot_opn_fraction && *hot > 0 {
                        *lb + rng.below(*hot as u64) as i64
                    } else {
                        *lb + *hot + rng.below((*cold).max(1) as u64) as i64
                    }
                }
                KeyChooser::Exponential { gamma } => {
                    let k = last - (-rng.next_f64().max(f64::MIN_POSITIVE).ln() / *gamma) as i64;
                    if k < 0 {
                        continue;
                    }
                    k
                }
                KeyChooser::Sequential {
                    start,
                    interval,
                    cursor,
                } => {
                    let k = *start + *cursor % *interval;
                    *cursor += 1;
                    k
                }
                KeyChooser::Buckets {
                    start,
                    count,
                    buckets,
                } => {
                    let mut u = rng.next_f64();
                    let b = buckets
                        .iter()
                        .find(|b| {
                            let hit = u < b.p;
                            u -= b.p;
                            hit
                        })
                        .unwrap_or(&buckets[buckets.len() - 1]);
                    let lo = (b.lo * *count as f64) as i64;
                    let hi = ((b.hi * *count as f64) as i64).max(lo + 1);
                    *start + lo + rng.below((hi - lo) as u64) as i64
                }
            };
            if k <= last {
                return k;
            }
        }
    }
}

/// A length drawn from a distribution (scan lengths, field lengths).
#[derive(Clone, Debug)]
pub enum LengthGen {
    Constant(i64),
    Uniform {
        lb: i64,
        ub: i64,
    },
    Zipfian(Zipfian),
    /// YCSB's HistogramGenerator: bucket i (of `cumulative`) drawn with its share of
    /// the counts gives `(i + 1) * block` times `scale` (the field count).
    Histogram {
        block: i64,
        scale: i64,
        cumulative: Vec<u64>,
    },
}

impl LengthGen {
    pub fn next(&mut self, rng: &mut Rng) -> i64 {
        match self {
            LengthGen::Constant(n) => *n,
            LengthGen::Uniform { lb, ub } => *lb + rng.below((*ub - *lb + 1) as u64) as i64,
            LengthGen::Zipfian(z) => z.next(rng),
            LengthGen::Histogram {
                block,
                scale,
                cumulative,
            } => {
                let total = cumulative.last().copied().unwrap_or(0);
                let u = rng.below(total.max(1));
                let i = cumulative.partition_point(|&c| c <= u);
                (i as i64 + 1) * *block * *scale
            }
        }
    }

    /// YCSB's field-length histogram file: a first line `BlockSize<TAB>n`, then
    /// `bucket<TAB>count` lines; the lengths drawn are multiplied by `scale`.
    pub fn histogram(text: &str, origin: &str, scale: i64) -> Result<LengthGen, String> {
        let mut lines = text.lines().filter(|l| !l.trim().is_empty());
        let first = lines.next().unwrap_or("");
        let block = first
            .split_whitespace()
            .collect::<Vec<_>>()
            .as_slice()
            .get(1)
            .and_then(|b| b.parse::<i64>().ok())
            .filter(|_| first.trim_start().starts_with("BlockSize"))
            .filter(|b| *b > 0)
            .ok_or_else(|| {
                format!("{origin}: the first line must be 'BlockSize<TAB>n', got '{first}'")
            })?;
        let mut counts = Vec::new();
        for (n, l) in lines.enumerate() {
            let f: Vec<&str> = l.split_whitespace().collect();
            let parsed = match f.as_slice() {
                [b, c] => b.parse::<usize>().ok().zip(c.parse::<u64>().ok()),
                _ => None,
            };
            let (bucket, count) = parsed.ok_or_else(|| {
                format!(
                    "{origin}, line {}: expected 'bucket<TAB>count', got '{l}'",
                    n + 2
                )
            })?;
            if counts.len() <= bucket {
                counts.resize(bucket + 1, 0);
            }
            counts[bucket] += count;
        }
        let mut acc = 0;
        let cumulative: Vec<u64> = counts
            .iter()
            .map(|c| {
                acc += c;
                acc
            })
            .collect();
        if acc == 0 {
            return Err(format!("{origin}: the histogram holds no counts"));
        }
        Ok(LengthGen::Histogram {
            block,
            scale,
            cumulative,
        })
    }

    pub fn max(&self) -> i64 {
        match self {
            LengthGen::Constant(n) => *n,
            LengthGen::Uniform { ub, .. } => *ub,
            LengthGen::Zipfian(z) => z.base + z.items - 1,
            LengthGen::Histogram {
                block,
                scale,
                cumulative,
            } => cumulative.len() as i64 * block * scale,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ycsb_key_vectors() {
        assert_eq!(key_name("user", 0, false, 1), "user6284781860667377211");
        assert_eq!(key_name("user", 1, false, 1), "user8517097267634966620");
        assert_eq!(key_name("user", 2, false, 1), "user1820151046732198393");
        assert_eq!(key_name("user", 42, true, 1), "user42");
        assert_eq!(key_name("user", 42, true, 6), "user000042");
    }

    #[test]
    fn key_digits_are_what_to_string_writes() {
        for n in [0, 7, 10, -1, -10, 99_999, i64::MAX, i64::MIN, i64::MIN + 1] {
            assert_eq!(decimal_len(n), n.to_string().len());
            assert_eq!(key_name("k", n, true, 0), format!("k{n}"));
        }
    }

    #[test]
    fn zeta_constant_matches_ycsb_literal() {
        let z = zeta_large(SCRAMBLED_ITEM_COUNT + 1, ZIPFIAN_CONSTANT);
        assert!((z - SCRAMBLED_ZETAN).abs() / SCRAMBLED_ZETAN < 1e-9, "{z}");
        let exact = zeta_static(0, 3_000_000, 0.8, 0.0);
        assert!((zeta_large(3_000_000, 0.8) - exact).abs() / exact < 1e-9);
    }

    #[test]
    fn zipfian_shape() {
        let mut rng = Rng::new(1);
        let n = 1000;
        let mut z = Zipfian::new(0, n - 1, ZIPFIAN_CONSTANT);
        let mut counts = vec![0u32; n as usize];
        let draws = 200_000;
        for _ in 0..draws {
            let v = z.next(&mut rng);
            assert!((0..n).contains(&v));
            counts[v as usize] += 1;
        }
        // P(0) = 1 / zeta(n); P(1) = 2^-theta / zeta(n)
        let zetan = zeta_static(0, n, ZIPFIAN_CONSTANT, 0.0);
        let p0 = counts[0] as f64 / draws as f64;
        assert!(
            (p0 - 1.0 / zetan).abs() < 0.01,
            "p0 {p0} vs {}",
            1.0 / zetan
        );
        assert!(counts[0] > counts[1] && counts[1] > counts[10] && counts[10] > counts[500]);
    }

    #[test]
    fn scrambled_zipfian_hottest_key_near_one_in_26() {
        let mut rng = Rng::new(2);
        let mut z = ScrambledZipfian::new(0, 99_999, ZIPFIAN_CONSTANT);
        let mut counts = std::collections::HashMap::new();
        let draws = 300_000;
        for _ in 0..draws {
            let v = z.next(&mut rng);
            assert!((0..100_000).contains(&v));
            *counts.entry(v).or_insert(0u32) += 1;
        }
        let top = *counts.values().max().unwrap() as f64 / draws as f64;
        assert!((top - 1.0 / SCRAMBLED_ZETAN).abs() < 0.005, "{top}");
        // the hottest key is item 0 hashed, not key 0
        let hottest = counts.iter().max_by_key(|(_, c)| **c).unwrap().0;
        assert_eq!(*hottest, fnvhash64(0) % 100_000);
    }

    #[test]
    fn ack_counter_advances_over_contiguous_acks() {
        let c = AckCounter::new(100);
        let window = |c: &AckCounter| c.window.lock().unwrap().capacity();
        assert_eq!(window(&c), 0, "no window before the first acknowledgement");
        assert_eq!(c.last(), 99);
        let a = c.next();
        let b = c.next();
        let d = c.next();
        assert_eq!((a, b, d), (100, 101, 102));
        c.acknowledge(101).unwrap();
        assert!(window(&c) >= WINDOW);
        assert_eq!(c.last(), 99, "100 is still outstanding");
        c.acknowledge(100).unwrap();
        assert_eq!(c.last(), 101);
        c.acknowledge(102).unwrap();
        assert_eq!(c.last(), 102);
    }

    #[test]
    fn latest_prefers_recent_keys_and_never_passes_last() {
        let mut rng = Rng::new(3);
        let mut k = KeyChooser::Latest(Zipfian::new(0, 9_999, ZIPFIAN_CONSTANT));
        let mut recent = 0;
        for _ in 0..10_000 {
            let v = k.next(9_999, &mut rng);
            assert!((0..=9_999).contains(&v));
            if v >= 9_990 {
                recent += 1;
            }
        }
        // P(one of the 10 newest of 10^4) = zeta(10) / zeta(10^4) = 0.30
        assert!((2_700..3_300).contains(&recent), "{recent}");
    }

    #[test]
    fn production_buckets_follow_the_authors_code() {
        let p1 = production1_buckets();
        assert!((p1.iter().map(|b| b.p).sum::<f64>() - 1.0).abs() < 1e-9);
        let mut rng = Rng::new(5);
        let mut k = KeyChooser::Buckets {
            start: 0,
            count: 100_000,
            buckets: p1,
        };
        let n = 100_000;
        let hot = (0..n)
            .filter(|_| (28_800..62_880).contains(&k.next(99_999, &mut rng)))
            .count();
        assert!((hot as f64 / n as f64 - 0.8117).abs() < 0.01, "{hot}");
        // as coded: only the first 9.4% of the keys, uniformly
        let mut k2 = KeyChooser::Buckets {
            start: 0,
            count: 100_000,
            buckets: production2_buckets(false),
        };
        assert!((0..n).all(|_| k2.next(99_999, &mut rng) < 9_404));
        let p2 = production2_buckets(true);
        assert_eq!(p2.len(), 7);
        assert!((p2.iter().map(|b| b.p).sum::<f64>() - 1.0).abs() < 1e-9);
        assert!((p2[1].p - 0.466_993).abs() < 1e-9);
    }

    #[test]
    fn hotspot_and_exponential_and_sequential() {
        let mut rng = Rng::new(4);
        let mut h = KeyChooser::Hotspot {
            lb: 0,
            hot: 200,
            cold: 800,
            hot_opn_fraction: 0.8,
        };
        let hot = (0..10_000).filter(|_| h.next(999, &mut rng) < 200).count();
        assert!((7_600..8_400).contains(&hot), "{hot}");
        let mut e = KeyChooser::Exponential {
            gamma: -(1.0f64 - 0.95).ln() / (1000.0 * 0.857_142_857_1),
        };
        let near = (0..10_000)
            .filter(|_| e.next(999, &mut rng) > 999 - 857)
            .count();
        // 95% fall within 85.7% of the records; draws past the first record are
        // redrawn, which leaves 0.95 / (1 - 0.05^(999/857)) = 98% within
        assert!((9_650..9_950).contains(&near), "{near}");
        let mut s = KeyChooser::Sequential {
            start: 5,
            interval: 3,
            cursor: 0,
        };
        let v: Vec<i64> = (0..5).map(|_| s.next(100, &mut rng)).collect();
        assert_eq!(v, vec![5, 6, 7, 5, 6]);
    }
}
