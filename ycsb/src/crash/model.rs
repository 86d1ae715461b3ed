//! The parent's model of every key, kept across cycles, and the check of a reopened
//! engine against it (the rule is in the module doc of [`crate::crash`]).

use super::plan::{Op, Plan, Write, show};
use super::protocol::{Events, Issued};
use crate::error::{Error, Result};
use crate::value;
use kvapi::Engine;
use kvtb_schema::CrashCycle as Cycle;
use std::collections::HashMap;

/// A key's state: absent, or holding the value of a version.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    Absent,
    Version(u64),
}

impl State {
    fn of(w: &Write) -> State {
        match w.op {
            Op::Put { .. } => State::Version(w.version),
            Op::Delete => State::Absent,
        }
    }

    fn show(self) -> String {
        match self {
            State::Absent => "absent".into(),
            State::Version(v) => show(v),
        }
    }
}

/// The writes one cycle announced (their `n`s), so that a value found can be told
/// written or never written.
#[derive(Clone, Default)]
struct Announced {
    bits: Vec<u64>,
}

impl Announced {
    fn insert(&mut self, n: u64) {
        let (i, b) = ((n / 64) as usize, n % 64);
        if self.bits.len() <= i {
            self.bits.resize(i + 1, 0);
        }
        self.bits[i] |= 1 << b;
    }

    fn contains(&self, n: u64) -> bool {
        self.bits
            .get((n / 64) as usize)
            .is_some_and(|w| w & (1 << (n % 64)) != 0)
    }
}

/// What the parent knows: each key's state when the cycle began (what the previous
/// check found, made durable by the parent's clean close) and every write announced.
/// Cloned to check a power-cut image without moving the audit's own states.
#[derive(Clone)]
pub struct Model {
    plan: Plan,
    state: Vec<State>,
    announced: HashMap<u64, Announced>,
}

/// What a key was found holding.
enum Verdict {
    Allowed,
    /// An older written state: an acknowledged write lost.
    Lost,
    /// Never written for this key, or not byte for byte what was written.
    Corrupt(String),
}

impl Model {
    /// Every key absent (a new data directory).
    pub fn new(plan: Plan) -> Model {
        Model {
            state: vec![State::Absent; plan.keys as usize],
            plan,
            announced: HashMap::new(),
        }
    }

    /// The length `version` wrote to key number `key`, if that write was announced and
    /// was a put of that key.
    fn written_len(&self, key: u64, v: u64) -> Option<usize> {
        let announced = self
            .announced
            .get(&(v >> 32))
            .is_some_and(|a| a.contains(v & 0xFFFF_FFFF));
        let w = self.plan.write(v);
        match w.op {
            Op::Put { len } if announced && w.key == key => Some(len),
            _ => None,
        }
    }

    /// Checks each announced write against the plan (the child and the parent must
    /// agree on every write) and records it as announced ([`Model::check`] does it
    /// too; twice is harmless).
    pub fn announce(&mut self, cycle: u64, events: &Events) -> Result<()> {
        let a = self.announced.entry(cycle).or_default();
        for e in &events.writes {
            let (c, n) = (e.version >> 32, e.version & 0xFFFF_FFFF);
            let w = self.plan.write(e.version);
            if c != cycle || n == 0 || Plan::key_name(w.key) != e.key || w.op != e.op {
                return Err(Error::failed(format!(
                    "the child announced {} as {} {:?}; the plan of cycle {cycle} says {} {:?}",
                    show(e.version),
                    e.key,
                    e.op,
                    Plan::key_name(w.key),
                    w.op
                )));
            }
            a.insert(n);
        }
        Ok(())
    }

    /// The states key number `key` may be in after the cycle: the acknowledged writes
    /// acknowledged after the last acknowledged write of the key was issued (the state
    /// before the cycle if none was acknowledged), and every write still pending.
    fn allowed(&self, key: u64, writes: &[&Issued]) -> Vec<State> {
        let last_issue = writes
            .iter()
            .filter(|w| w.acked_at.is_some())
            .map(|w| w.issued_at)
            .max();
        let mut allowed = Vec::new();
        if last_issue.is_none() {
            allowed.push(self.state[key as usize]);
        }
        for w in writes {
            let keep = match (w.acked_at, last_issue) {
                (None, _) => true,
                (Some(a), Some(last)) => a > last,
                (Some(_), None) => false,
            };
            if keep {
                allowed.push(State::of(&self.plan.write(w.version)));
            }
        }
        allowed
    }

    fn judge(&self, key: u64, found: Option<&[u8]>, allowed: &[State]) -> (State, Verdict) {
        let Some(bytes) = found else {
            let v = if allowed.contains(&State::Absent) {
                Verdict::Allowed
            } else {
                Verdict::Lost
            };
            return (State::Absent, v);
        };
        let Some(v) = value::version_of(bytes) else {
            let why = format!("{} bytes, too short to carry a version", bytes.len());
            return (State::Absent, Verdict::Corrupt(why));
        };
        let state = State::Version(v);
        let Some(len) = self.written_len(key, v) else {
            let why = format!(
                "claims version {} ({} bytes), never written to this key",
                show(v),
                bytes.len()
            );
            return (state, Verdict::Corrupt(why));
        };
        let name = Plan::key_name(key);
        let expected = value::make(name.as_bytes(), v, len);
        if bytes != expected.as_slice() {
            let at = bytes
                .iter()
                .zip(&expected)
                .position(|(a, b)| a != b)
                .unwrap_or(bytes.len().min(len));
            let why = format!(
                "version {}: {} bytes found, {len} written, first difference at byte {at}",
                show(v),
                bytes.len()
            );
            return (state, Verdict::Corrupt(why));
        }
        if allowed.contains(&state) {
            (state, Verdict::Allowed)
        } else {
            (state, Verdict::Lost)
        }
    }

    /// Checks every key of the reopened engine against the model and this cycle's
    /// events, counting into `c`, then moves the model to what was found (a lost
    /// write's older state is what the next cycle starts from; a corrupt key is left
    /// as it was: the audit does not go on past one).
    pub fn check(
        &mut self,
        engine: &dyn Engine,
        cycle: u64,
        events: &Events,
        c: &mut Cycle,
    ) -> Result<()> {
        self.announce(cycle, events)?;
        let mut per_key: HashMap<u64, Vec<&Issued>> = HashMap::new();
        for e in &events.writes {
            if e.acked_at.is_some() {
                c.acknowledged += 1;
            } else {
                c.pending_at_kill += 1;
            }
            per_key
                .entry(self.plan.write(e.version).key)
                .or_default()
                .push(e);
        }
        for key in 0..self.plan.keys {
            let name = Plan::key_name(key);
            let found = engine
                .get(name.as_bytes())
                .map_err(|e| Error::engine(format!("get {name} after recovery"), e))?;
            let allowed = self.allowed(key, per_key.get(&key).map_or(&[][..], |v| v));
            let (state, verdict) = self.judge(key, found.as_deref(), &allowed);
            c.keys_checked += 1;
            let (moves, why) = match verdict {
                Verdict::Allowed => (true, None),
                Verdict::Lost => {
                    c.lost += 1;
                    (
                        true,
                        Some(format!("found {} (an older state)", state.show())),
                    )
                }
                Verdict::Corrupt(why) => {
                    c.corrupt += 1;
                    (false, Some(why))
                }
            };
            if let Some(why) = why
                && c.problems.len() < 5
            {
                let allowed: Vec<String> = allowed.iter().map(|s| s.show()).collect();
                c.problems
                    .push(format!("{name}: {why}; allowed: {}", allowed.join(", ")));
            }
            if !moves {
                continue;
            }
            self.state[key as usize] = state;
        }
        Ok(())
    }

    /// The state the model holds for key number `key`.
    pub fn state(&self, key: u64) -> State {
        self.state[key as usize]
    }
}
