//! The model against a real engine (sled) holding crafted states: each kind of
//! failure the audit must catch, and the states concurrency allows.

use super::model::{Model, State};
use super::plan::{Op, Plan, Write, version};
use super::protocol::parse;
use crate::value;
use kvapi::Engine;
use kvtb_schema::CrashCycle as Cycle;
use std::sync::Arc;

fn plan() -> Plan {
    Plan {
        seed: 11,
        keys: 6,
        value_bytes: (16, 12_288),
        delete_fraction: 0.3,
    }
}

/// Hands out the plan's writes of one cycle in order, picking the next one that
/// matches (the child takes them in order too; the skipped ones are never issued).
struct Writes {
    plan: Plan,
    cycle: u64,
    n: u64,
}

impl Writes {
    fn next(&mut self, key: u64, put: bool) -> Write {
        loop {
            self.n += 1;
            let w = self.plan.write(version(self.cycle, self.n));
            if w.key == key && matches!(w.op, Op::Put { .. }) == put {
                return w;
            }
        }
    }
}

fn p(w: &Write) -> String {
    let key = Plan::key_name(w.key);
    match w.op {
        Op::Put { len } => format!("P {} {key} {len}", w.version),
        Op::Delete => format!("D {} {key}", w.version),
    }
}

fn a(w: &Write) -> String {
    format!("A {}", w.version)
}

fn sled() -> (kvtestkit::conformance::TempDir, Arc<dyn Engine>) {
    let dir = kvtestkit::conformance::TempDir::new("crash-model");
    let props = crate::props::Properties::new();
    let opts = crate::engines::options("sled", &props, dir.path(), None);
    let engine = crate::engines::open("sled", &opts).unwrap();
    (dir, engine)
}

fn store(e: &dyn Engine, w: &Write) {
    let name = Plan::key_name(w.key);
    match Plan::value(w) {
        Some(v) => e.update(name.as_bytes(), &v).unwrap(),
        None => e.delete(name.as_bytes()).unwrap(),
    }
}

fn check(m: &mut Model, e: &dyn Engine, cycle: u64, lines: &[String]) -> Cycle {
    let mut c = Cycle::default();
    m.check(e, cycle, &parse(lines).unwrap(), &mut c).unwrap();
    c
}

#[test]
fn an_older_state_is_lost_and_a_never_written_or_truncated_value_corrupt() {
    let (_dir, e) = sled();
    let mut w = Writes {
        plan: plan(),
        cycle: 1,
        n: 0,
    };
    // k0: put, then a delete issued after the put's acknowledgement; found: the put
    // (a lost delete). k1: put acknowledged; found: a value of k1 at a version never
    // announced. k2: put acknowledged; found: that value less its last byte. k3: put
    // acknowledged, found: that put. k4: delete acknowledged; found: a value at the
    // delete's own version (never a value). k5: untouched, absent.
    let (put0, del0) = (w.next(0, true), w.next(0, false));
    let put1 = w.next(1, true);
    let put2 = w.next(2, true);
    let put3 = w.next(3, true);
    let del4 = w.next(4, false);
    let lines = vec![
        p(&put0),
        a(&put0),
        p(&del0),
        a(&del0),
        p(&put1),
        a(&put1),
        p(&put2),
        a(&put2),
        p(&put3),
        a(&put3),
        p(&del4),
        a(&del4),
    ];
    store(e.as_ref(), &put0);
    let k1 = Plan::key_name(1);
    e.update(
        k1.as_bytes(),
        &value::make(k1.as_bytes(), version(1, 999_999), 64),
    )
    .unwrap();
    let k2 = Plan::key_name(2);
    let mut cut = Plan::value(&put2).unwrap();
    cut.pop();
    assert!(
        !value::verify(k2.as_bytes(), &cut),
        "a prefix must not verify"
    );
    e.update(k2.as_bytes(), &cut).unwrap();
    store(e.as_ref(), &put3);
    let k4 = Plan::key_name(4);
    e.update(
        k4.as_bytes(),
        &value::make(k4.as_bytes(), del4.version, 100),
    )
    .unwrap();
    let mut m = Model::new(plan());
    let c = check(&mut m, e.as_ref(), 1, &lines);
    assert_eq!(
        (
            c.keys_checked,
            c.acknowledged,
            c.pending_at_kill,
            c.lost,
            c.corrupt
        ),
        (6, 6, 0, 1, 3),
        "{:#?}",
        c.problems
    );
    assert!(
        c.problems[0].starts_with("crash000000: found 1:"),
        "{:?}",
        c.problems
    );
    assert!(c.problems[1].contains("never written"), "{:?}", c.problems);
    assert!(
        c.problems[2].contains("written, first difference"),
        "{:?}",
        c.problems
    );
    e.close().unwrap();
}

#[test]
fn concurrent_writes_allow_every_state_not_superseded() {
    let (_dir, e) = sled();
    let mut w = Writes {
        plan: plan(),
        cycle: 1,
        n: 0,
    };
    // k0: two overlapping puts, both acknowledged: either may win; found: the first.
    // k1: put acknowledged, then a put issued after it and acknowledged: only the
    //     second; found: the first (lost).
    // k2: a put still pending at the kill, issued before two acknowledged puts of
    //     the key, the second issued after the first's acknowledgement: the pending
    //     one may still have taken effect last; found: the pending one.
    // k3: a pending delete after an acknowledged put; found: absent.
    // k4: nothing this cycle: absent.
    let (a0, b0) = (w.next(0, true), w.next(0, true));
    let (a1, b1) = (w.next(1, true), w.next(1, true));
    let (pending2, a2, b2) = (w.next(2, true), w.next(2, true), w.next(2, true));
    let (put3, del3) = (w.next(3, true), w.next(3, false));
    let lines = vec![
        p(&a0),
        p(&b0),
        p(&pending2),
        a(&b0),
        a(&a0),
        p(&a1),
        a(&a1),
        p(&b1),
        a(&b1),
        p(&a2),
        a(&a2),
        p(&b2),
        a(&b2),
        p(&put3),
        a(&put3),
        p(&del3),
        "A".into(), // cut by the kill
    ];
    for x in [&a0, &a1, &pending2] {
        store(e.as_ref(), x);
    }
    let mut m = Model::new(plan());
    let c = check(&mut m, e.as_ref(), 1, &lines);
    assert_eq!(
        (c.acknowledged, c.pending_at_kill, c.lost, c.corrupt),
        (7, 2, 1, 0),
        "{:#?}",
        c.problems
    );
    assert!(
        c.problems[0].starts_with("crash000001:"),
        "{:?}",
        c.problems
    );
    // the model moves to what was found; a cycle without writes allows only that
    assert_eq!(m.state(1), State::Version(a1.version));
    assert_eq!(m.state(2), State::Version(pending2.version));
    let c = check(&mut m, e.as_ref(), 2, &[]);
    assert_eq!((c.lost, c.corrupt), (0, 0), "{:#?}", c.problems);
    // an older written state found in a later cycle is lost too
    store(e.as_ref(), &b1);
    let c = check(&mut m, e.as_ref(), 3, &[]);
    assert_eq!((c.lost, c.corrupt), (1, 0), "{:#?}", c.problems);
    e.close().unwrap();
}

#[test]
fn a_report_that_disagrees_with_the_plan_is_an_error() {
    let (_dir, e) = sled();
    let mut w = Writes {
        plan: plan(),
        cycle: 1,
        n: 0,
    };
    let put = w.next(2, true);
    let Op::Put { len } = put.op else {
        unreachable!()
    };
    let wrong_len = format!("P {} {} {}", put.version, Plan::key_name(2), len + 1);
    let wrong_key = format!("P {} {} {len}", put.version, Plan::key_name(3));
    for l in [wrong_len, wrong_key] {
        let mut m = Model::new(plan());
        let mut c = Cycle::default();
        let ev = parse(std::slice::from_ref(&l)).unwrap();
        assert!(m.check(e.as_ref(), 1, &ev, &mut c).is_err(), "{l}");
    }
    // a version of another cycle
    let mut m = Model::new(plan());
    let ev = parse(&[p(&put)]).unwrap();
    assert!(m.check(e.as_ref(), 2, &ev, &mut Cycle::default()).is_err());
    e.close().unwrap();
}
