//! Experiment: what WiredTiger reports for damaged table files.
#![cfg(not(wt_missing))]

use kvapi::{Engine, Options};
use std::path::Path;
use std::sync::Arc;

fn open(dir: &Path) -> kvapi::Result<Arc<dyn Engine>> {
    let d = dir.display().to_string();
    wiredtiger_engine::open_engine(&Options::new(
        "wiredtiger",
        &[("dir", d.as_str()), ("cache", "4M"), ("log_file_max", "1M")],
    ))
}

fn fill(dir: &Path) {
    let e = open(dir).unwrap();
    for i in 0..20_000u64 {
        e.insert(format!("k{i:08}").as_bytes(), &kvtestkit::value(i, 500))
            .unwrap();
    }
    e.close().unwrap();
}

#[test]
fn experiment() {
    for mode in ["truncate-half", "truncate-zero", "garbage-middle"] {
        let d = kvtestkit::TempDir::new("wt-damage");
        fill(d.path());
        let f = d.path().join("db/kv.wt");
        let len = std::fs::metadata(&f).unwrap().len();
        eprintln!(
            "{mode}: kv.wt is {len} bytes; files: {:?}",
            std::fs::read_dir(d.path().join("db"))
                .unwrap()
                .map(|e| e.unwrap().file_name())
                .collect::<Vec<_>>()
        );
        match mode {
            "truncate-half" => std::fs::OpenOptions::new()
                .write(true)
                .open(&f)
                .unwrap()
                .set_len(len / 2)
                .unwrap(),
            "truncate-zero" => std::fs::OpenOptions::new()
                .write(true)
                .open(&f)
                .unwrap()
                .set_len(0)
                .unwrap(),
            _ => {
                use std::os::unix::fs::FileExt;
                let fh = std::fs::OpenOptions::new().write(true).open(&f).unwrap();
                for off in (len / 4..len * 3 / 4).step_by(8192) {
                    fh.write_all_at(&[0x5a; 512], off).unwrap();
                }
            }
        }
        match open(d.path()) {
            Err(e) => eprintln!("{mode}: open failed: {e:?}"),
            Ok(e) => {
                let mut errs = 0;
                let mut found = 0;
                for i in (0..20_000u64).step_by(97) {
                    match e.get(format!("k{i:08}").as_bytes()) {
                        Ok(Some(_)) => found += 1,
                        Ok(None) => {}
                        Err(err) => {
                            if errs < 2 {
                                eprintln!("{mode}: get error: {err:?}");
                            }
                            errs += 1;
                        }
                    }
                }
                eprintln!("{mode}: found {found}, errors {errs}");
                match e.scan(b"k", 100000) {
                    Ok(v) => eprintln!("{mode}: scan {} pairs", v.len()),
                    Err(err) => eprintln!("{mode}: scan error {err:?}"),
                }
                eprintln!("{mode}: close: {:?}", e.close());
            }
        }
    }
}
