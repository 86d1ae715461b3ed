//! What a phase shows while it runs: a bar on a terminal, a status line every 10 s
//! otherwise (`[run] 30 s: N operations; X current ops/sec`, which `ycsb recovery`
//! reads from its child), and errors that stop a phase early.

use std::io::IsTerminal;
use std::sync::Arc;
use ycsb::measure::{Tick, Watch};
use ycsb::runner::{Ctx, Notice, Progress};

/// The context a phase runs in: progress output unless `quiet`, notices always.
pub(super) fn ctx(progress: bool, device: Option<String>, watch: Option<Arc<Watch>>) -> Ctx {
    let notice: Notice = Arc::new(|e| eprintln!("error: {e}"));
    Ctx {
        progress: progress.then(|| Arc::new(tick) as Progress),
        notice: Some(notice),
        device,
        watch,
    }
}

/// The progress output of a phase labelled `label` of `total` operations.
fn tick(label: &str, total: Option<u64>) -> Tick {
    let label = label.to_string();
    if std::io::stderr().is_terminal() {
        let bar = match total {
            Some(n) => indicatif::ProgressBar::new(n),
            None => indicatif::ProgressBar::new_spinner(),
        };
        if let Ok(style) = indicatif::ProgressStyle::with_template(
            "{prefix} [{elapsed_precise}] {wide_bar} {pos}/{len} {msg}",
        ) {
            bar.set_style(style);
        }
        bar.set_prefix(label);
        Box::new(move |s| {
            bar.inc(s.total_ops);
            bar.set_message(format!("{:.0} ops/s", s.ops_per_sec));
        })
    } else {
        let mut done = 0u64;
        // Every 10 s by default; YCSB_STATUS_INTERVAL=N for every N seconds.
        let every = std::env::var("YCSB_STATUS_INTERVAL")
            .ok()
            .and_then(|v| v.parse::<u64>().ok())
            .filter(|n| *n > 0)
            .unwrap_or(10);
        Box::new(move |s| {
            done += s.total_ops;
            let whole = s.t.round() as u64;
            if whole > 0 && whole.is_multiple_of(every) {
                eprintln!(
                    "[{label}] {whole} s: {done} operations; {:.0} current ops/sec",
                    s.ops_per_sec
                );
            }
        })
    }
}
