//! What a build says about WiredTiger: available with the library, a clear
//! `Unsupported` error naming the missing package without it (a build with
//! `WIREDTIGER_NO_PKG_CONFIG=1` makes the stand-in).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use kvapi::{Error, Options};

#[cfg(not(wt_missing))]
#[test]
fn this_build_has_wiredtiger() {
    const { assert!(wiredtiger_engine::AVAILABLE) };
    assert_eq!(wiredtiger_engine::unavailable_reason(), None);
}

#[cfg(wt_missing)]
#[test]
fn the_stand_in_names_the_missing_package() {
    const { assert!(!wiredtiger_engine::AVAILABLE) };
    let reason = wiredtiger_engine::unavailable_reason().unwrap();
    assert!(
        reason.starts_with("WiredTiger is not in this build: "),
        "{reason}"
    );
    assert!(reason.contains("libwiredtiger-dev"), "{reason}");
    let err = wiredtiger_engine::open_engine(&Options::new("wiredtiger", &[]))
        .err()
        .expect("the stand-in opened");
    assert!(
        matches!(&err, Error::Unsupported(m) if m == reason),
        "{err}"
    );
}

#[cfg(not(wt_missing))]
#[test]
fn open_errors_are_typed() {
    let err = wiredtiger_engine::open_engine(&Options::new("wiredtiger", &[("x", "1")]))
        .err()
        .expect("an unknown option opened");
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
}
