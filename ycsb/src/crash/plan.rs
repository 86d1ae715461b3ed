//! The writes of the audit, each a pure function of its version: which key, put or
//! delete, and the value's length. The child draws nothing else, so the parent knows
//! the exact bytes of every write from its version alone (no history to keep) and can
//! tell a value that was written from one that never was.
//!
//! A version is `cycle << 32 | n`, `n` counting the writes of the cycle from 1 in the
//! order the child's threads take them.

use crate::rng::Rng;
use crate::value;

/// What a write does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// Store the value of the key at the write's version, this many bytes long.
    Put {
        len: usize,
    },
    Delete,
}

/// One write: its version, the key's number and what it does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Write {
    pub version: u64,
    pub key: u64,
    pub op: Op,
}

/// The parameters every write is drawn from (given to the child and the parent alike).
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    pub seed: u64,
    /// Distinct keys: `crash000000`, `crash000001`, ...
    pub keys: u64,
    /// Value lengths are drawn log-uniform between these, both included: each size
    /// class of a slab engine is about as likely as the next, so successive updates of
    /// a key change class most of the time.
    pub value_bytes: (usize, usize),
    /// Fraction of writes that are deletes.
    pub delete_fraction: f64,
}

/// The version of the `n`th write of `cycle` (`n` from 1).
pub fn version(cycle: u64, n: u64) -> u64 {
    (cycle << 32) | (n & 0xFFFF_FFFF)
}

/// A version as `cycle:n`, for messages.
pub fn show(version: u64) -> String {
    format!("{}:{}", version >> 32, version & 0xFFFF_FFFF)
}

impl Plan {
    /// The write of `version`.
    pub fn write(&self, version: u64) -> Write {
        let mut r = Rng::derive(self.seed ^ 0x5752_4954_4553, version);
        let key = r.below(self.keys.max(1));
        let op = if r.next_f64() < self.delete_fraction {
            Op::Delete
        } else {
            Op::Put {
                len: self.len(r.next_f64()),
            }
        };
        Write { version, key, op }
    }

    fn len(&self, u: f64) -> usize {
        let (lo, hi) = (self.value_bytes.0.max(1), self.value_bytes.1);
        if hi <= lo {
            return lo;
        }
        let x = lo as f64 * ((hi as f64 + 1.0) / lo as f64).powf(u);
        (x as usize).clamp(lo, hi)
    }

    /// The name of key number `key`.
    pub fn key_name(key: u64) -> String {
        format!("crash{key:06}")
    }

    /// The key number of a name this plan could have written.
    pub fn key_number(&self, name: &str) -> Option<u64> {
        let n: u64 = name.strip_prefix("crash")?.parse().ok()?;
        (n < self.keys && Self::key_name(n) == name).then_some(n)
    }

    /// The bytes a put writes.
    pub fn value(w: &Write) -> Option<Vec<u8>> {
        match w.op {
            Op::Put { len } => Some(value::make(
                Self::key_name(w.key).as_bytes(),
                w.version,
                len,
            )),
            Op::Delete => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_is_a_function_of_its_version_and_sizes_cross_the_classes() {
        let p = Plan {
            seed: 3,
            keys: 50,
            value_bytes: (16, 12_288),
            delete_fraction: 0.1,
        };
        assert_eq!(p.write(version(2, 9)), p.write(version(2, 9)));
        let (mut deletes, mut small, mut large, mut longest) = (0, 0, 0, 0);
        for n in 1..=10_000 {
            let w = p.write(version(1, n));
            assert!(w.key < 50);
            match w.op {
                Op::Delete => deletes += 1,
                Op::Put { len } => {
                    assert!((16..=12_288).contains(&len), "{len}");
                    small += usize::from(len < 100);
                    large += usize::from(len > 4096);
                    longest = longest.max(len);
                }
            }
        }
        assert!((800..1200).contains(&deletes), "{deletes}");
        assert!(small > 1000 && large > 1000 && longest > 12_000);
        assert_eq!(p.key_number("crash000049"), Some(49));
        assert_eq!(p.key_number("crash000050"), None);
        assert_eq!(p.key_number("crash49"), None);
        assert_eq!(show(version(7, 12)), "7:12");
    }
}
