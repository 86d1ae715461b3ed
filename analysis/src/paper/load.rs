//! Reading a reproduce-paper directory into a [`PaperRun`].
//!
//! The directory (every part optional):
//!
//! ```text
//! manifest.json                        kind "paper-run": scale, machine, command
//! device/device.json                   `ycsb device` (Tables 1, 2)
//! iomethods/iomethods.json             kind "iomethods" (Table 3)
//! ycsb/<a..f>-<uniform|zipfian>/<engine>.json     run results (Figs. 3-5, 7, 8, Table 5)
//! production/<production1|2>/<engine>.json        (Fig. 9)
//! itemsize/<bytes>/<engine>.json       YCSB E with <bytes>-byte values (Fig. 10)
//! recovery/<engine>.json               kind "recovery": reopen after SIGKILL
//! batch/b<B>/kvell.json                KVell with batch = queue depth = B
//! ```
//!
//! A missing part is skipped with a note; a file that is there but does not parse is
//! an error naming the file.

use super::baseline::WIREDTIGER;
use super::run::{DISTS, PRODUCTION, PaperRun, WORKLOADS, stem};
use crate::dataset::{Dataset, Entry, Group, engine_rank};
use crate::error::{Error, IoOp, Result};
use crate::model::{DeviceProbe, IoMethods, Manifest, Recovery, parse_kind, parse_run};
use std::path::{Path, PathBuf};

fn read(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).map_err(|e| Error::io(IoOp::ReadFile, path, e))
}

fn subdirs(dir: &Path) -> Result<Vec<(String, PathBuf)>> {
    let mut out = Vec::new();
    let rd = std::fs::read_dir(dir).map_err(|e| Error::io(IoOp::ReadDir, dir, e))?;
    for e in rd {
        let e = e.map_err(|e| Error::io(IoOp::ReadDir, dir, e))?;
        if e.path().is_dir() {
            out.push((e.file_name().to_string_lossy().into_owned(), e.path()));
        }
    }
    out.sort();
    Ok(out)
}

fn json_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let rd = std::fs::read_dir(dir).map_err(|e| Error::io(IoOp::ReadDir, dir, e))?;
    let mut out = Vec::new();
    for e in rd {
        let p = e.map_err(|e| Error::io(IoOp::ReadDir, dir, e))?.path();
        if p.is_file() && p.extension().is_some_and(|x| x == "json") {
            out.push(p);
        }
    }
    out.sort();
    Ok(out)
}

/// The run results of one directory, one per engine (the file's stem), ordered.
fn load_group(dir: &Path, label: String) -> Result<Group> {
    let mut runs = Vec::new();
    for path in json_files(dir)? {
        let run = parse_run(&read(&path)?).map_err(|why| Error::parse(&path, why))?;
        runs.push(Entry {
            label: stem(&path),
            path,
            run,
        });
    }
    runs.sort_by_key(|e| engine_rank(&e.label));
    Ok(Group { label, runs })
}

/// Reads a reproduce-paper directory. Absent parts become notes; a file that does
/// not parse is an error naming it; a directory with none of the parts is an error.
pub fn load(dir: &Path, title: Option<&str>) -> Result<PaperRun> {
    if !dir.is_dir() {
        return Err(Error::NotADirectory(dir.to_path_buf()));
    }
    let mut notes = Vec::new();
    let rel = |p: &Path| {
        p.strip_prefix(dir)
            .map(|r| r.display().to_string())
            .unwrap_or_else(|_| p.display().to_string())
    };
    let mut found_any = false;

    let mp = dir.join("manifest.json");
    let manifest = if mp.is_file() {
        found_any = true;
        Some(
            parse_kind::<Manifest>(&read(&mp)?, "paper-run")
                .map_err(|why| Error::parse(&mp, why))?,
        )
    } else {
        notes.push(
            "manifest.json: absent; the scale and the machine come from the result files"
                .to_string(),
        );
        None
    };

    let dp = dir.join("device/device.json");
    let device = if dp.is_file() {
        found_any = true;
        let text = read(&dp)?;
        let probe = parse_kind::<DeviceProbe>(&text, DeviceProbe::KIND)
            .map_err(|why| Error::parse(&dp, why))?;
        Some((dp, probe))
    } else {
        notes.push("device/device.json: absent; Tables 1 and 2 skipped".into());
        None
    };

    let ip = dir.join("iomethods/iomethods.json");
    let iomethods = if ip.is_file() {
        found_any = true;
        Some((
            ip.clone(),
            parse_kind::<IoMethods>(&read(&ip)?, "iomethods")
                .map_err(|why| Error::parse(&ip, why))?,
        ))
    } else {
        notes.push("iomethods/iomethods.json: absent; Table 3 skipped".into());
        None
    };

    let mut groups = Vec::new();
    let yd = dir.join("ycsb");
    if yd.is_dir() {
        found_any = true;
        let mut absent = Vec::new();
        for w in WORKLOADS {
            for d in DISTS {
                let name = format!("{w}-{d}");
                if !yd.join(&name).is_dir() {
                    absent.push(name);
                }
            }
        }
        for (name, p) in subdirs(&yd)? {
            let known = name.split_once('-').is_some_and(|(w, d)| {
                w.len() == 1 && WORKLOADS.contains(&(w.as_bytes()[0] as char)) && DISTS.contains(&d)
            });
            if !known {
                notes.push(format!(
                    "{}: not a <workload>-<distribution> name, skipped",
                    rel(&p)
                ));
                continue;
            }
            groups.push(load_group(&p, name)?);
        }
        if !absent.is_empty() {
            notes.push(format!("ycsb/: absent: {}", absent.join(", ")));
        }
    } else {
        notes.push("ycsb/: absent; Figs. 3, 4, 5, 7, 8 and Table 5 skipped".into());
    }

    let pd = dir.join("production");
    if pd.is_dir() {
        found_any = true;
        for (name, p) in subdirs(&pd)? {
            if !PRODUCTION.contains(&name.as_str()) {
                notes.push(format!("{}: unknown production workload, skipped", rel(&p)));
                continue;
            }
            groups.push(load_group(&p, name)?);
        }
        for w in PRODUCTION {
            if !pd.join(w).is_dir() {
                notes.push(format!("production/{w}: absent"));
            }
        }
    } else {
        notes.push("production/: absent; Fig. 9 skipped".into());
    }

    let mut itemsizes = Vec::new();
    let sd = dir.join("itemsize");
    if sd.is_dir() {
        found_any = true;
        for (name, p) in subdirs(&sd)? {
            match name.parse::<u64>() {
                Ok(b) => {
                    itemsizes.push(b);
                    groups.push(load_group(&p, format!("itemsize/{b}"))?);
                }
                Err(_) => notes.push(format!("{}: not a size in bytes, skipped", rel(&p))),
            }
        }
        itemsizes.sort();
        // groups were pushed in name order; put them in size order
    } else {
        notes.push("itemsize/: absent; Fig. 10 skipped".into());
    }

    let mut batches = Vec::new();
    let bd = dir.join("batch");
    if bd.is_dir() {
        found_any = true;
        for (name, p) in subdirs(&bd)? {
            match name.strip_prefix('b').and_then(|b| b.parse::<u64>().ok()) {
                Some(b) => {
                    batches.push(b);
                    groups.push(load_group(&p, format!("batch/{b}"))?);
                }
                None => notes.push(format!("{}: not a b<batch> name, skipped", rel(&p))),
            }
        }
        batches.sort();
    } else {
        notes.push("batch/: absent; the batch-size chart is skipped".into());
    }

    let mut recovery = Vec::new();
    let rd = dir.join("recovery");
    if rd.is_dir() {
        found_any = true;
        for p in json_files(&rd)? {
            let r = parse_kind::<Recovery>(&read(&p)?, "recovery")
                .map_err(|why| Error::parse(&p, why))?;
            recovery.push((p, r));
        }
        recovery.sort_by_key(|(p, _)| engine_rank(&stem(p)));
        if recovery.is_empty() {
            notes.push("recovery/: no result files; the recovery chart is skipped".into());
        }
    } else {
        notes.push("recovery/: absent; the recovery chart is skipped".into());
    }

    if !found_any {
        return Err(Error::NoPaperRun(dir.to_path_buf()));
    }

    // engines the manifest lists but a section lacks
    if let Some(m) = &manifest {
        let mut b_tree_skipped = false;
        for g in &groups {
            if g.label.starts_with("batch/") || g.label.starts_with("itemsize/") {
                continue;
            }
            let production = g.label.starts_with("production");
            let missing: Vec<&str> = m
                .engines
                .iter()
                .filter(|e| !g.runs.iter().any(|r| &r.label == *e))
                .map(String::as_str)
                .filter(|e| {
                    // Fig. 9 is RocksDB against KVell in the paper: the B+ tree is
                    // not run there
                    let skipped = production && *e == WIREDTIGER.engine;
                    b_tree_skipped |= skipped;
                    !skipped
                })
                .collect();
            if !missing.is_empty() {
                notes.push(format!(
                    "{}/{}: no result for {}",
                    if g.label.starts_with("production") {
                        "production"
                    } else {
                        "ycsb"
                    },
                    g.label,
                    missing.join(", ")
                ));
            }
        }
        if b_tree_skipped {
            notes.push(format!(
                "production/: {} not run (Fig. 9 compares RocksDB and KVell in the paper)",
                WIREDTIGER.engine
            ));
        }
        if rd.is_dir() {
            let missing: Vec<&str> = m
                .engines
                .iter()
                .filter(|e| !recovery.iter().any(|(p, _)| stem(p) == **e))
                .map(String::as_str)
                .collect();
            if !missing.is_empty() && !recovery.is_empty() {
                notes.push(format!("recovery/: no result for {}", missing.join(", ")));
            }
        }
    }

    // keep sections in a fixed order: ycsb by workload then distribution, production,
    // item sizes, batches, each numerically
    groups.sort_by_key(|g| group_order(&g.label));
    let mut engines: Vec<String> = Vec::new();
    let names = manifest
        .iter()
        .flat_map(|m| m.engines.iter().cloned())
        .chain(
            groups
                .iter()
                .flat_map(|g| g.runs.iter().map(|e| e.label.clone())),
        )
        .chain(recovery.iter().map(|(p, _)| stem(p)));
    for n in names {
        if !engines.contains(&n) {
            engines.push(n);
        }
    }
    engines.sort_by_key(|e| engine_rank(e));
    let title = title
        .map(str::to_string)
        .unwrap_or_else(|| match &manifest {
            Some(m) if !m.scale.is_empty() => {
                format!("Reproducing the KVell paper ({} scale)", m.scale)
            }
            _ => "Reproducing the KVell paper".to_string(),
        });
    let ds = Dataset {
        title,
        groups,
        engines,
        skipped: Vec::new(),
        probes: device.iter().cloned().collect(),
        caption_notes: Vec::new(),
    };
    let mut run = PaperRun {
        dir: dir.to_path_buf(),
        manifest,
        device,
        iomethods,
        recovery,
        ds,
        itemsizes,
        batches,
        notes,
    };
    let extra = vec![run.scale_line()];
    run.ds.caption_notes = extra;
    Ok(run)
}

fn group_order(label: &str) -> (u8, u64, String) {
    if let Some(b) = label.strip_prefix("itemsize/") {
        (2, b.parse().unwrap_or(0), String::new())
    } else if let Some(b) = label.strip_prefix("batch/") {
        (3, b.parse().unwrap_or(0), String::new())
    } else if label.starts_with("production") {
        (1, 0, label.to_string())
    } else {
        (0, 0, label.to_string())
    }
}
