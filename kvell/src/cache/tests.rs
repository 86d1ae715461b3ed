//! The page cache's tests.

use super::*;

#[test]
fn lru_evicts_oldest() {
    let mut c = PageCache::new(16 * PAGE as u64).unwrap();
    let page = |b: u8| vec![b; PAGE];
    for i in 0..16u64 {
        c.put(Unit(i), &page(i as u8));
    }
    assert_eq!(c.get(Unit(0)).unwrap()[0], 0); // 0 becomes most recent
    c.put(Unit(100), &page(100));
    assert!(c.get(Unit(1)).is_none(), "1 was least recently used");
    assert!(c.get(Unit(0)).is_some());
    assert_eq!(c.get(Unit(100)).unwrap()[5], 100);
    c.put(Unit(0), &page(9));
    assert_eq!(c.get(Unit(0)).unwrap()[0], 9);
    // churn through many more units than frames
    for i in 0..10_000u64 {
        c.put(Unit(((i % 3) << 58) | (i * 7)), &page(i as u8));
        assert_eq!(c.get(Unit(((i % 3) << 58) | (i * 7))).unwrap()[0], i as u8);
    }
    let present = (0..10_000u64)
        .filter(|&i| c.get(Unit(((i % 3) << 58) | (i * 7))).is_some())
        .count();
    assert_eq!(present, 16);
}

/// The frames of `c` that are resident, counted by the kernel.
fn resident_frames(c: &PageCache) -> usize {
    c.frames.resident(0..c.cap as usize).unwrap()
}

/// The cache holds `n` frames resident, touched up to its limit, and says so.
fn assert_holds(c: &PageCache, n: usize) {
    assert_eq!(resident_frames(c), n, "frames touched up to the limit");
    assert_eq!(c.resident_bytes(), n as u64 * PAGE as u64);
}

/// A falling limit evicts the least recently used pages and gives their frames'
/// memory back (the kernel no longer counts them resident); lookups stay right;
/// the cache holds no more than its limit until the limit rises, and then reuses
/// the released frames.
#[test]
fn a_falling_limit_evicts_lru_pages_and_releases_their_frames() {
    let mut c = PageCache::with_limit(64, 64).unwrap();
    assert_eq!(
        resident_frames(&c),
        64,
        "frames up to the limit are touched"
    );
    let page = |b: u8| vec![b; PAGE];
    for i in 0..64u64 {
        c.put(Unit(i), &page(i as u8));
    }
    // 0..8 become the most recently used
    for i in 0..8u64 {
        assert_eq!(c.get(Unit(i)).unwrap()[0], i as u8);
    }
    assert_eq!(c.resident_bytes(), 64 * PAGE as u64);
    c.set_limit(16);
    assert_eq!(c.limit(), 16);
    assert_eq!(c.resident_bytes(), 16 * PAGE as u64);
    assert_eq!(resident_frames(&c), 16, "48 frames released to the OS");
    // the survivors: the 8 most recently used and the last 8 put (56..64)
    for i in 0..64u64 {
        let want = !(8..56).contains(&i);
        let got = c.get(Unit(i)).map(|p| p[7]);
        assert_eq!(got, want.then_some(i as u8), "unit {i}");
    }
    // at the limit, a new page evicts the least recently used one
    for i in 100..200u64 {
        c.put(Unit(i), &page(i as u8));
        assert_eq!(c.get(Unit(i)).unwrap()[PAGE - 1], i as u8);
        assert!(c.resident_bytes() <= 16 * PAGE as u64);
    }
    assert_eq!(resident_frames(&c), 16);
    assert!(c.get(Unit(0)).is_none() && c.get(Unit(199)).is_some());
    // a limit of 0 holds nothing
    c.set_limit(0);
    assert_eq!((c.resident_bytes(), resident_frames(&c)), (0, 0));
    c.put(Unit(5), &page(5));
    assert!(c.get(Unit(5)).is_none());
    // the limit rises: released frames are used again, pages right
    c.set_limit(40);
    for i in 0..40u64 {
        c.put(Unit(1000 + i), &page(i as u8 + 1));
    }
    for i in 0..40u64 {
        assert_eq!(c.get(Unit(1000 + i)).unwrap()[0], i as u8 + 1);
    }
    assert_eq!(c.resident_bytes(), 40 * PAGE as u64);
    assert_eq!(resident_frames(&c), 40);
}

/// A cache opened under a limit touches only the frames up to it; the rest of
/// its capacity stays out of memory until the limit rises.
#[test]
fn a_cache_opened_under_a_limit_holds_only_the_limit() {
    let mut c = PageCache::with_limit(256, 32).unwrap();
    assert_eq!(c.capacity(), 256);
    assert_eq!(c.resident_bytes(), 32 * PAGE as u64);
    assert_eq!(resident_frames(&c), 32);
    for i in 0..100u64 {
        c.put(Unit(i), &vec![i as u8; PAGE]);
    }
    assert_eq!(resident_frames(&c), 32);
    assert_eq!(c.get(Unit(99)).unwrap()[0], 99);
    assert!(c.get(Unit(67)).is_none(), "evicted at the limit");
    c.set_limit(256);
    for i in 100..400u64 {
        c.put(Unit(i), &vec![i as u8; PAGE]);
    }
    assert_eq!(resident_frames(&c), 256);
    assert!(c.meta_bytes() <= 256 * META_PER_FRAME);
}

/// A cache set up in two steps (part of it beside recovery, the rest once the
/// index is known) holds the frames of its final limit, touched, and gives back
/// what is over it when the final limit is lower than the first.
#[test]
fn a_cache_filled_to_a_limit_holds_that_limit() {
    let mut c = PageCache::with_limit(256, 32).unwrap();
    c.fill_to(200).unwrap();
    assert_holds(&c, 200);
    for i in 0..300u64 {
        c.put(Unit(i), &vec![i as u8; PAGE]);
    }
    assert_eq!(resident_frames(&c), 200);
    assert_eq!(c.get(Unit(299)).unwrap()[0], 299u64 as u8);
    assert!(c.get(Unit(99)).is_none(), "evicted at the limit");
    let mut d = PageCache::with_limit(256, 100).unwrap();
    d.fill_to(40).unwrap();
    assert_eq!(
        resident_frames(&d),
        40,
        "frames over the lower limit given back"
    );
    assert_eq!(d.resident_bytes(), 40 * PAGE as u64);
    d.fill_to(1000).unwrap();
    assert_eq!(resident_frames(&d), 256, "at most the capacity");
}

/// The second step made resident beside the worker (`fill_beside`): until it
/// has ended the cache holds at most the frames touched before, whatever limit
/// is asked for; once settled, it holds the limit last asked for, touched, and no
/// more is resident than that (a limit that fell meanwhile gives back the rest).
#[test]
fn a_cache_filled_beside_holds_the_limit_last_asked_for() {
    let page = |i: u64| vec![i as u8; PAGE];
    let mut c = PageCache::with_limit(256, 32).unwrap();
    c.fill_beside(200).unwrap();
    assert!(
        c.limit() <= 32,
        "no frame past those touched before it ends"
    );
    for i in 0..100u64 {
        c.put(Unit(i), &page(i));
    }
    assert!(c.get(Unit(99)).is_some());
    assert!(c.get(Unit(0)).is_none(), "held at 32 frames meanwhile");
    assert!(c.settle(true).is_some(), "a fill under way ends");
    assert_eq!(c.limit(), 200);
    assert_holds(&c, 200);
    for i in 100..400u64 {
        c.put(Unit(i), &page(i));
    }
    assert_eq!(resident_frames(&c), 200);
    assert_eq!(c.get(Unit(399)).unwrap()[0], 399u64 as u8);
    assert!(c.settle(true).is_none(), "nothing under way");

    // The limit falls while the fill is under way: what the fill made resident
    // past it is given back when it ends.
    let mut d = PageCache::with_limit(256, 32).unwrap();
    d.fill_beside(200).unwrap();
    d.set_limit(120);
    assert!(d.limit() <= 32);
    d.settle(true);
    assert_eq!(d.limit(), 120);
    assert_eq!(
        resident_frames(&d),
        120,
        "the fill's frames over the limit given back"
    );

    // A fall is applied at once, with nothing left under way.
    let mut e = PageCache::with_limit(256, 100).unwrap();
    e.fill_beside(40).unwrap();
    assert!(e.settle(true).is_none());
    assert_eq!(e.limit(), 40);
    assert_eq!(resident_frames(&e), 40);

    // Dropped while under way: the helper ends before the frames' mapping goes.
    let mut f = PageCache::with_limit(4096, 16).unwrap();
    f.fill_beside(4096).unwrap();
    drop(f);
}

/// While a fill is under way, the frames its helper has made resident so far
/// are the cache's at the worker's next turn (`settle(false)`), up to the limit
/// last asked for; the rest once it has ended. A fall meanwhile stops the helper
/// there and gives back at once what it made past it. (The helper here is held
/// back by the test, which makes the frames resident itself and says how far it
/// got.)
#[test]
fn a_fill_under_way_gives_its_frames_as_they_come() {
    let page = |i: u64| vec![i as u8; PAGE];
    let mut c = PageCache::with_limit(256, 16).unwrap();
    let made = Arc::new(AtomicUsize::new(0));
    let end = Arc::new(AtomicUsize::new(184));
    let (go, wait) = std::sync::mpsc::channel::<()>();
    let thread = std::thread::spawn(move || {
        let _ = wait.recv();
        7
    });
    c.fill = Some(Fill {
        from: 16,
        to: 200,
        made: Arc::clone(&made),
        end: Arc::clone(&end),
        bound: 184,
        gone: 16,
        thread,
    });
    c.set_limit(200);
    assert_eq!(c.limit(), 16);
    assert!(c.settle(false).is_none());
    assert_eq!(c.limit(), 16, "nothing made resident yet");

    c.frames.populate(16..66).unwrap();
    made.store(50, Ordering::Release);
    assert_eq!(
        c.resident_bytes(),
        66 * PAGE as u64,
        "the helper's frames count"
    );
    assert!(c.settle(false).is_none(), "still under way");
    assert_eq!(c.limit(), 66, "the 50 frames made so far are the cache's");
    for i in 0..100u64 {
        c.put(Unit(i), &page(i));
    }
    assert!(c.get(Unit(33)).is_none(), "66 frames held");
    assert_eq!(c.get(Unit(34)).unwrap()[0], 34);

    // The helper goes on to frame 150; then the limit falls to 40: it applies at
    // once, the helper may make no frame past it, and what it made past it goes
    // back now, not when it ends (busy cores can leave a helper in the idle
    // class unfinished long after).
    c.frames.populate(66..150).unwrap();
    made.store(134, Ordering::Release);
    c.set_limit(40);
    assert_eq!(c.limit(), 40);
    assert_eq!(
        end.load(Ordering::Acquire),
        24,
        "the helper stops at frame 40"
    );
    assert_eq!(
        resident_frames(&c),
        40,
        "the helper's frames past 40 given back"
    );
    assert_eq!(c.resident_bytes(), 40 * PAGE as u64);
    c.settle(false);
    assert_eq!(c.limit(), 40);
    // A rise: the cache holds no more than it has touched until the helper
    // ends, and the helper is not sent past the frames it was stopped at.
    c.set_limit(200);
    c.settle(false);
    assert_eq!(c.limit(), 66);
    assert_eq!(end.load(Ordering::Acquire), 24);

    go.send(()).unwrap();
    assert_eq!(c.settle(true), Some(7), "the fill ends");
    assert_eq!(c.limit(), 200, "the rest is touched on first use");
    assert_eq!(c.get(Unit(99)).unwrap()[0], 99);
    assert_eq!(
        resident_frames(&c),
        40,
        "the 40 pages held, nothing more yet"
    );
}
