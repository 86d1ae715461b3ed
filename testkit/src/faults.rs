//! Test support shared by the engines' fault matrices (`tests/faults.rs` of KVell and
//! of the WAL engine): a panic counter covering every thread, the outcome of one
//! damaged image and the tally per fault class, the file mutations (zero a page, flip
//! bits, truncate, append garbage), the `KVTESTBED_EXHAUSTIVE` switch, and the writer
//! of `faults.jsonl` under `KVTESTBED_RESULTS` (read by `scripts/durability-audit`).
//!
//! Not used by any engine at run time.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

static PANICS: AtomicUsize = AtomicUsize::new(0);

/// Inserts `f000000`, `f000001`, ... with `value(i)` until an insert fails (a full
/// disk): returns what was acknowledged and the error. Panics if 100,000 inserts all
/// succeed.
pub fn fill_until_error(
    e: &dyn kvapi::Engine,
    mut value: impl FnMut(u64) -> Vec<u8>,
) -> (BTreeMap<Vec<u8>, Vec<u8>>, kvapi::Error) {
    let mut acked = BTreeMap::new();
    for i in 0..100_000u64 {
        let k = format!("f{i:06}").into_bytes();
        let v = value(i);
        match e.insert(&k, &v) {
            Ok(()) => {
                acked.insert(k, v);
            }
            Err(x) => return (acked, x),
        }
    }
    panic!("the disk never filled");
}

/// Counts panics on every thread (worker threads included), then reports as usual.
/// Installs the hook once per process; call it at the start of every test that then
/// checks [`panics`].
pub fn count_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            PANICS.fetch_add(1, Ordering::SeqCst);
            prev(info)
        }));
    });
}

/// The panics counted since [`count_panics`] installed its hook.
pub fn panics() -> usize {
    PANICS.load(Ordering::SeqCst)
}

/// Whether `KVTESTBED_EXHAUSTIVE` asks for every page of every file (set and not `0`).
pub fn exhaustive() -> bool {
    std::env::var_os("KVTESTBED_EXHAUSTIVE").is_some_and(|v| v != "0")
}

/// A seeded generator, so that each matrix keeps its own sequence of flipped bits.
pub trait SeededRng {
    fn seeded(seed: u64) -> Self;
    /// A number in `0..n` (`0` when `n` is 0).
    fn below(&mut self, n: u64) -> u64;
}

/// xorshift64: a tiny deterministic generator (fixed seeds, no `rand`).
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    /// A value size that crosses the small sizes and the 4 KiB boundary.
    pub fn value_len(&mut self) -> usize {
        match self.below(10) {
            0 => 0,
            1..=4 => self.below(120) as usize,
            5 | 6 => 100 + self.below(1400) as usize,
            7 => 1300 + self.below(2900) as usize,
            _ => 4096 + self.below(40_000) as usize,
        }
    }
}

impl SeededRng for Rng {
    fn seeded(seed: u64) -> Rng {
        Rng::new(seed)
    }
    fn below(&mut self, n: u64) -> u64 {
        Rng::below(self, n)
    }
}

/// What one damaged image (or one failed I/O) gave, per fault class.
#[derive(Debug, Default, Clone, Copy)]
pub struct Tally {
    pub cases: usize,
    pub intact: usize,
    pub refused: usize,
    pub read_errors: usize,
    /// Cases where some acknowledged keys were missing or older (no wrong value).
    pub lost: usize,
    /// Of `lost`, the cases where the engine counted and reported the cut it made (a
    /// log cut at a transaction failing its checks): a stated repair, not a silent
    /// loss.
    pub lost_counted: usize,
}

impl Tally {
    /// Counts one outcome (not the case itself: `cases` is counted by the caller).
    pub fn add(&mut self, outcome: &Outcome) {
        match outcome {
            Outcome::Intact => self.intact += 1,
            Outcome::Refused => self.refused += 1,
            Outcome::ReadErrors => self.read_errors += 1,
            Outcome::Lost(_) => self.lost += 1,
            Outcome::Cut(_) => {
                self.lost += 1;
                self.lost_counted += 1;
            }
        }
    }
}

/// The outcome of opening one damaged image and reading every key.
#[derive(Debug)]
pub enum Outcome {
    /// Every key right.
    Intact,
    /// The open failed with a `Corruption` naming the file.
    Refused,
    /// A `Corruption` error at a read.
    ReadErrors,
    /// This many keys missing or at an older acknowledged value, without an error.
    Lost(usize),
    /// This many keys lost at a cut the engine counted and reported (see
    /// [`Tally::lost_counted`]).
    Cut(usize),
}

/// One mutation of one file; pages are counted in the size given to [`Mutation::apply`].
#[derive(Clone, Debug)]
pub enum Mutation {
    /// Zero the page.
    Zero(usize),
    /// Flip `bits` random bits (generator seeded with `seed`) of the page.
    Flip { seed: u64, page: usize, bits: u32 },
    /// Cut the file to this many bytes.
    Truncate(usize),
    /// Append these bytes.
    Append(Vec<u8>),
}

impl Mutation {
    /// The fault class, as the tallies and `faults.jsonl` name it.
    pub fn class(&self) -> &'static str {
        match self {
            Mutation::Zero(_) => "zero page",
            Mutation::Flip { .. } => "flip bits",
            Mutation::Truncate(_) => "truncate",
            Mutation::Append(_) => "append garbage",
        }
    }

    /// Applies the mutation to the file's bytes, with pages of `page_size` bytes (a
    /// last page cut short is mutated as far as it goes); the bits to flip come from
    /// `R` seeded with the mutation's seed.
    pub fn apply<R: SeededRng>(&self, b: &mut Vec<u8>, page_size: usize) {
        match self {
            Mutation::Zero(p) => {
                let end = ((p + 1) * page_size).min(b.len());
                b[p * page_size..end].fill(0)
            }
            Mutation::Flip { seed, page, bits } => {
                let mut r = R::seeded(*seed);
                let start = page * page_size;
                let end = ((page + 1) * page_size).min(b.len());
                for _ in 0..*bits {
                    let at = start + r.below((end - start) as u64) as usize;
                    b[at] ^= 1 << r.below(8);
                }
            }
            Mutation::Truncate(n) => b.truncate(*n),
            Mutation::Append(g) => b.extend_from_slice(g),
        }
    }
}

/// Appends the tally as JSON lines to `faults.jsonl` under `$KVTESTBED_RESULTS` (the
/// audit script); does nothing when the variable is not set. One line per fault class:
/// `{"engine":..,"test":..,"fault":..,"cases":..,"intact":..,"refused":..,
/// "read_errors":..,"lost":..,"wrong":0}`.
pub fn write_result<K: fmt::Display>(engine: &str, test: &str, tally: &BTreeMap<K, Tally>) {
    let Some(dir) = std::env::var_os("KVTESTBED_RESULTS") else {
        return;
    };
    let mut s = String::new();
    for (class, t) in tally {
        s.push_str(&format!(
            "{{\"engine\":\"{engine}\",\"test\":\"{test}\",\"fault\":\"{class}\",\"cases\":{},\
             \"intact\":{},\"refused\":{},\"read_errors\":{},\"lost\":{},\
             \"lost_counted\":{},\"wrong\":0}}\n",
            t.cases, t.intact, t.refused, t.read_errors, t.lost, t.lost_counted
        ));
    }
    use std::io::Write;
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(Path::new(&dir).join("faults.jsonl"))
        .and_then(|mut f| f.write_all(s.as_bytes()))
        .unwrap();
}

/// One row of the fault matrix through [`write_result`]: `cases` tried, `intact` of
/// them opened with every acknowledged write (a repair counted and described where
/// there was one), `refused` refused with `Corruption` naming the file.
pub fn write_row(
    engine: &str,
    test: &str,
    fault: &str,
    cases: usize,
    intact: usize,
    refused: usize,
) {
    let mut t = BTreeMap::new();
    t.insert(
        fault.to_string(),
        Tally {
            cases,
            intact,
            refused,
            ..Tally::default()
        },
    );
    write_result(engine, test, &t);
}

/// The engine-specific counter `name` of `c` (`Counters::extra`).
pub fn extra_counter(c: &kvapi::Counters, name: &str) -> Option<u64> {
    c.extra.iter().find(|(k, _)| k == name).map(|(_, v)| *v)
}
