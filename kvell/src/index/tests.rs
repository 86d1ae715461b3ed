//! The index against a `BTreeMap` model (random keys with shared prefixes, binary
//! bytes and prefixes of each other), and its memory and speed (ignored by default).

use super::block::MAX_ENTRIES;
use super::key::Key;
use super::map::Index;
use crate::slab::Loc;
use std::collections::BTreeMap;

#[test]
fn key_order_is_byte_order() {
    let keys: Vec<&[u8]> = vec![
        b"",
        b"\0",
        b"\0\0",
        b"a",
        b"a\0",
        b"ab",
        b"user1",
        b"user10",
        b"user9",
        b"exactly-24-bytes-long-k",
        b"exactly-24-bytes-long-ke",
        b"exactly-24-bytes-long-key",
        b"exactly-24-bytes-long-key-and-more",
        b"\xff",
        b"\xff\xff\xff\xff\xff\xff\xff\xff\x01",
    ];
    for a in &keys {
        for b in &keys {
            assert_eq!(Key::new(a).cmp(&Key::new(b)), a.cmp(b), "{a:?} vs {b:?}");
            assert_eq!(Key::new(a) == Key::new(b), a == b);
        }
    }
}

/// xorshift64*, fixed seeds.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Keys from a small alphabet with long shared prefixes, prefixes of each other,
/// binary bytes, and sometimes very long.
fn nasty_key(r: &mut Rng) -> Vec<u8> {
    let prefixes: [&[u8]; 5] = [b"", b"user", b"\0\0\0", b"\xff\xff", &[b'p'; 40]];
    let mut k = prefixes[r.below(5) as usize].to_vec();
    let len = match r.below(10) {
        0 => r.below(1025 - k.len() as u64) as usize,
        1..=3 => r.below(4) as usize,
        _ => r.below(24) as usize,
    };
    let alphabet: [u8; 4] = [0, 1, b'a', 0xff];
    for _ in 0..len {
        k.push(if r.below(2) == 0 {
            alphabet[r.below(4) as usize]
        } else {
            r.below(256) as u8
        });
    }
    k.truncate(1024);
    k
}

fn rand_loc(r: &mut Rng) -> Loc {
    let class = if r.below(4) == 0 { r.below(21) } else { 5 } as usize;
    let slot = match r.below(4) {
        0 => r.below(256),
        1 => r.below(1 << 20),
        2 => r.below(1 << 40),
        _ => r.below(1 << 58),
    };
    Loc::new(class, slot)
}

fn model_run(seed: u64, ops: usize, key_space: usize) {
    let mut r = Rng(seed);
    let pool: Vec<Vec<u8>> = (0..key_space).map(|_| nasty_key(&mut r)).collect();
    let mut idx = Index::default();
    let mut model: BTreeMap<Vec<u8>, Loc> = BTreeMap::new();
    for step in 0..ops {
        let key = &pool[r.below(pool.len() as u64) as usize];
        match r.below(10) {
            0..=4 => {
                let loc = rand_loc(&mut r);
                assert_eq!(idx.insert(key, loc), model.insert(key.clone(), loc));
            }
            5..=7 => assert_eq!(idx.remove(key), model.remove(key), "step {step}"),
            8 => assert_eq!(idx.get(key), model.get(key).copied()),
            _ => {
                let n = r.below(100) as usize;
                let got = idx.entries_from(key, n);
                let want: Vec<(Vec<u8>, Loc)> = model
                    .range(key.clone()..)
                    .take(n)
                    .map(|(k, l)| (k.clone(), *l))
                    .collect();
                assert_eq!(got, want, "scan at step {step}");
            }
        }
        assert_eq!(idx.len(), model.len());
        if step % 997 == 0 {
            idx.check();
        }
    }
    idx.check();
    for (k, l) in &model {
        assert_eq!(idx.get(k), Some(*l));
    }
    let all = idx.entries_from(b"", usize::MAX);
    let bulk = Index::from_sorted(all.iter().map(|(k, l)| (Key::new(k), *l)));
    bulk.check();
    assert_eq!(bulk.entries_from(b"", usize::MAX), all);
    assert_eq!(all, model.into_iter().collect::<Vec<_>>());
}

#[test]
fn model_small_key_space() {
    // Many updates and deletes of few keys: blocks empty out and merge.
    model_run(1, 20_000, 300);
}

#[test]
fn model_large_key_space() {
    // Grows to thousands of keys: many splits, then merges as deletes win.
    model_run(2, 60_000, 5_000);
}

#[test]
fn prefix_chains() {
    // Every key a prefix of the next: the worst case for front coding.
    let mut idx = Index::default();
    let mut model = BTreeMap::new();
    for n in (0..=1024).rev() {
        let k = vec![b'x'; n];
        idx.insert(&k, Loc::new(1, n as u64));
        model.insert(k, Loc::new(1, n as u64));
    }
    idx.check();
    assert!(idx.blocks() > 1);
    for n in (0..=1024).step_by(3) {
        assert_eq!(idx.remove(&vec![b'x'; n]), model.remove(&vec![b'x'; n]));
    }
    idx.check();
    let all = idx.entries_from(b"", usize::MAX);
    assert_eq!(all, model.into_iter().collect::<Vec<_>>());
}

/// Keys sharing a long prefix (the block map's fingerprints are the bytes after it),
/// looked up from below, above and inside the prefix; then keys that share less of
/// it arrive as first keys of blocks, so the prefix shrinks and every fingerprint
/// is made again; keys alike in the 8 bytes after the prefix tie on their
/// fingerprints and are told apart by their bytes.
#[test]
fn common_prefix_shrinks() {
    let mut idx = Index::default();
    let mut model = BTreeMap::new();
    let mut r = Rng(5);
    let put = |idx: &mut Index, model: &mut BTreeMap<Vec<u8>, Loc>, k: Vec<u8>, l: u64| {
        let loc = Loc::new(3, l);
        assert_eq!(idx.insert(&k, loc), model.insert(k, loc));
    };
    for i in 0..3_000u64 {
        // "tenant/" then 8 bytes alike for a third of the keys, then digits
        let mid = if i % 3 == 0 {
            "samesame".to_string()
        } else {
            format!("{:08}", r.below(1_000_000))
        };
        put(
            &mut idx,
            &mut model,
            format!("tenant/{mid}/{}", r.below(1 << 40)).into_bytes(),
            i,
        );
    }
    idx.check();
    assert!(idx.blocks() > 20, "several segments of blocks");
    for probe in [
        &b""[..],
        b"a",
        b"ten",
        b"tenant",
        b"tenant/",
        b"tenant/samesame",
        b"tenant0",
        b"u",
        b"\xff",
    ] {
        assert_eq!(idx.get(probe), None);
        let want: Vec<_> = model
            .range(probe.to_vec()..)
            .take(5)
            .map(|(k, l)| (k.clone(), *l))
            .collect();
        assert_eq!(idx.entries_from(probe, 5), want, "scan from {probe:?}");
    }
    // Below every key, above every key, then sharing less and less of the prefix.
    for (n, k) in ["a", "zz", "tenant.", "tenaXX", "te", ""]
        .iter()
        .enumerate()
    {
        for j in 0..200u64 {
            put(
                &mut idx,
                &mut model,
                format!("{k}{j:05}").into_bytes(),
                10_000 + n as u64 * 1_000 + j,
            );
        }
        idx.check();
    }
    for (k, l) in &model {
        assert_eq!(idx.get(k), Some(*l), "{k:?}");
    }
    assert_eq!(
        idx.entries_from(b"", usize::MAX),
        model.into_iter().collect::<Vec<_>>()
    );
}

#[test]
fn upsert_sees_the_old_location_and_may_leave_it() {
    let mut idx = Index::default();
    let mut model = BTreeMap::new();
    let mut r = Rng(3);
    for step in 0..20_000u64 {
        let k = format!("k{}", r.below(3_000)).into_bytes();
        let new = Loc::new(r.below(9) as usize, step);
        // Keep the key where it is one time in three (an update in place).
        let keep = r.below(3) == 0;
        let mut seen = None;
        let old = idx.upsert(&k, |o| {
            seen = Some(o);
            (!keep).then_some(new)
        });
        assert_eq!(
            seen,
            Some(model.get(&k).copied()),
            "decide sees the old location"
        );
        assert_eq!(old, model.get(&k).copied());
        if !keep {
            model.insert(k, new);
        }
    }
    idx.check();
    assert_eq!(idx.len(), model.len());
    assert_eq!(
        idx.entries_from(b"", usize::MAX),
        model.into_iter().collect::<Vec<_>>()
    );
}

#[test]
fn sorted_inserts_fill_blocks() {
    let mut idx = Index::default();
    for i in 0..10_000u64 {
        idx.insert(format!("key{i:08}").as_bytes(), Loc::new(5, i));
    }
    idx.check();
    assert_eq!(idx.blocks(), 10_000usize.div_ceil(MAX_ENTRIES));
}

/// The YCSB key of item `i` ("user" + decimal FNV hash of i).
fn ycsb_key(i: u64) -> Vec<u8> {
    let mut h: u64 = 0xCBF2_9CE4_8422_2325;
    let mut v = i;
    for _ in 0..8 {
        h ^= v & 0xff;
        v >>= 8;
        h = h.wrapping_mul(1_099_511_628_211);
    }
    format!("user{}", (h as i64).unsigned_abs()).into_bytes()
}

/// Bytes glibc reports as allocated.
#[expect(unsafe_code, reason = "mallinfo2 is a libc call")]
fn allocated() -> u64 {
    // SAFETY: mallinfo2 only reads glibc's allocator statistics.
    unsafe { libc::mallinfo2() }.uordblks as u64
}

/// CPU time of this thread (the machine is shared: wall time is not).
#[expect(unsafe_code, reason = "clock_gettime is a libc call")]
fn cpu_ns() -> u64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid timespec for clock_gettime to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

fn ns_per(n: usize, t: u64) -> f64 {
    (cpu_ns() - t) as f64 / n as f64
}

/// Memory and speed of this index against the `BTreeMap<Key, Loc>` it replaced,
/// for YCSB keys in their load order (random in key order), spread over the
/// indexes of two workers as the engine does by default; one thread.
/// cargo test --release -p kvell --lib memory_and_speed -- --ignored --nocapture
/// (KVELL_INDEX_ITEMS=1000000,4000000 chooses the sizes)
#[test]
#[ignore]
fn memory_and_speed() {
    const W: usize = 2;
    let sizes: Vec<usize> = std::env::var("KVELL_INDEX_ITEMS")
        .unwrap_or_else(|_| "1000000,4000000".into())
        .split(',')
        .map(|s| s.parse().expect("item count"))
        .collect();
    for n in sizes {
        let keys: Vec<Vec<u8>> = (0..n as u64).map(ycsb_key).collect();
        let mut r = Rng(7);
        let probes: Vec<usize> = (0..1_000_000).map(|_| r.below(n as u64) as usize).collect();
        // Slots as appended by each worker, 1 KiB class.
        let loc = |i: usize| Loc::new(5, (i / W) as u64);

        let base = allocated();
        let t = cpu_ns();
        let mut new: Vec<Index> = (0..W).map(|_| Index::default()).collect();
        for (i, k) in keys.iter().enumerate() {
            new[i % W].insert(k, loc(i));
        }
        let ins_new = ns_per(n, t);
        let real_new = allocated() - base;
        let t = cpu_ns();
        let mut hits = 0;
        for &p in &probes {
            hits += new[p % W].get(&keys[p]).is_some() as usize;
        }
        let get_new = ns_per(probes.len(), t);
        assert_eq!(hits, probes.len());
        let est_new: u64 = new.iter().map(|x| x.bytes()).sum();
        let t = cpu_ns();
        let mut scanned = 0;
        for &p in probes.iter().take(100_000) {
            scanned += new[p % W].entries_from(&keys[p], 50).len();
        }
        let scan_new = ns_per(100_000, t);
        assert!(scanned > 0);
        let t = cpu_ns();
        for &p in probes.iter().take(100_000) {
            let i = p % W;
            let l = new[i].remove(&keys[p]);
            if let Some(l) = l {
                new[i].insert(&keys[p], l);
            }
        }
        let remove_insert_new = ns_per(100_000, t);
        drop(new);
        // Recovery inserts each worker's keys in order.
        let mut sorted: Vec<(&Vec<u8>, Loc)> =
            keys.iter().enumerate().map(|(i, k)| (k, loc(i))).collect();
        sorted.sort_unstable();
        let t = cpu_ns();
        let rec = Index::from_sorted(sorted.iter().map(|(k, l)| (Key::new(k), *l)));
        let sorted_new = ns_per(n, t);
        let sorted_bytes = rec.bytes();
        drop(rec);
        let t = cpu_ns();
        let mut rec = BTreeMap::new();
        for (k, l) in &sorted {
            rec.insert(Key::new(k), *l);
        }
        let sorted_old = ns_per(n, t);
        drop(rec);

        let base = allocated();
        let t = cpu_ns();
        let mut old: Vec<BTreeMap<Key, Loc>> = (0..W).map(|_| BTreeMap::new()).collect();
        for (i, k) in keys.iter().enumerate() {
            old[i % W].insert(Key::new(k), loc(i));
        }
        let ins_old = ns_per(n, t);
        let real_old = allocated() - base;
        let t = cpu_ns();
        let mut hits = 0;
        for &p in &probes {
            hits += old[p % W].contains_key(&Key::new(&keys[p])) as usize;
        }
        let get_old = ns_per(probes.len(), t);
        assert_eq!(hits, probes.len());
        drop(old);

        let per = |b: u64| b as f64 / n as f64;
        println!(
            "{n} YCSB keys in {W} indexes: new {:.1} B/item allocated ({:.1} counted), \
             insert {ins_new:.0} ns, get {get_new:.0} ns, 50-key scan {scan_new:.0} ns, \
             remove+insert {remove_insert_new:.0} ns; old BTreeMap<Key, Loc> {:.1} B/item \
             allocated, insert {ins_old:.0} ns, get {get_old:.0} ns; built from keys in \
             order (recovery): new {sorted_new:.0} ns ({:.1} B/item), old {sorted_old:.0} ns",
            per(real_new),
            per(est_new),
            per(real_old),
            per(sorted_bytes)
        );
    }
}
