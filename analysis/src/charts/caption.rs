//! Caption lines of the result-directory charts: the machine(s), the workload(s),
//! each engine's fairness settings.

use crate::dataset::{Dataset, Group};
use crate::text::{engine_line, machine_line, workload_line};

/// Caption lines: the machine(s), the workload(s), each engine's fairness settings.
pub(crate) fn caption_for(ds: &Dataset, groups: &[&Group]) -> Vec<String> {
    let mut out = Vec::new();
    let ms = ds.machines();
    for m in &ms {
        out.push(format!("Machine: {}", machine_line(m)));
    }
    if ms.len() > 1 {
        out.push("Warning: the results come from different machines.".into());
    }
    for g in groups {
        if let Some(e) = g.describing() {
            let prefix = if g.label != e.run.workload_name() {
                format!("Workload [{}]: ", g.label)
            } else {
                "Workload ".into()
            };
            out.push(format!("{prefix}{}", workload_line(&e.run)));
        }
    }
    let mut seen: Vec<String> = Vec::new();
    for g in groups {
        for e in &g.runs {
            let l = engine_line(&e.label, &e.run);
            if !seen.contains(&l) {
                seen.push(l);
            }
        }
    }
    out.push(format!("Engines: {}", seen.join(" | ")));
    out.extend(ds.caption_notes.iter().cloned());
    out
}
