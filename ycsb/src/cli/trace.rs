//! `ycsb trace`: a workload's exact operation sequence written as a trace, without an
//! engine; `trace convert` from public trace formats; `trace stats`.

use super::args::WorkloadArgs;
use super::session::warn_unknown;
use super::workloads::resolve_properties;
use clap::{Args, Subcommand};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use ycsb::generator::AckCounter;
use ycsb::trace::{self, Record, TraceOp};
use ycsb::workload::{OpKind, OpStream, Workload};
use ycsb::{Error, Result, engines};

#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub(super) struct TraceCmd {
    #[command(subcommand)]
    pub(super) sub: Option<TraceSub>,
    #[command(flatten)]
    pub(super) generate: TraceArgs,
}

#[derive(Subcommand, Debug)]
pub(super) enum TraceSub {
    /// Convert a trace into our format: Meta's kvcache CSV (CacheLib), Twitter's
    /// cache-trace CSV, libCacheSim's oracleGeneral binary, or our CSV/binary.
    Convert(ConvertArgs),
    /// Describe a trace in our format: requests per op, distinct keys, value sizes.
    Stats {
        /// The trace (our CSV or binary form).
        file: PathBuf,
    },
}

#[derive(Args, Debug)]
pub(super) struct ConvertArgs {
    /// Input format: meta, twitter, oracle, csv or bin.
    #[arg(long)]
    pub(super) from: String,
    /// The input file.
    pub(super) input: PathBuf,
    /// The output file.
    #[arg(long)]
    pub(super) out: PathBuf,
    /// Output form: csv or bin.
    #[arg(long, default_value = "csv")]
    pub(super) format: String,
    /// Key size for formats without one (oracle).
    #[arg(long, default_value_t = 16)]
    pub(super) key_size: usize,
}

#[derive(Args, Debug)]
pub(super) struct TraceArgs {
    #[command(flatten)]
    pub(super) workload: WorkloadArgs,
    /// Which phase's operations: load or run.
    #[arg(long, default_value = "run")]
    pub(super) phase: String,
    /// The file to write ("-" for standard output).
    #[arg(long, required = true)]
    pub(super) out: Option<PathBuf>,
    /// Output form: csv or bin.
    #[arg(long, default_value = "csv")]
    pub(super) format: String,
}

/// `ycsb trace [convert|stats]`.
pub(super) fn trace(t: &TraceCmd) -> Result<()> {
    match &t.sub {
        Some(TraceSub::Convert(c)) => convert(c),
        Some(TraceSub::Stats { file }) => stats(file),
        None => generate(&t.generate),
    }
}

fn write_trace(records: &[Record], out: &Path, format: &str) -> Result<()> {
    let mut sink: Box<dyn Write> = if out.as_os_str() == "-" {
        Box::new(std::io::BufWriter::new(std::io::stdout()))
    } else {
        Box::new(std::io::BufWriter::new(
            std::fs::File::create(out).map_err(|e| Error::io_at("cannot create", out, e))?,
        ))
    };
    let r = match format {
        "csv" => trace::write_csv(records, &mut sink),
        "bin" => trace::write_bin(records, &mut sink),
        other => {
            return Err(Error::usage(format!(
                "--format: expected csv or bin, got '{other}'"
            )));
        }
    };
    r.and_then(|()| sink.flush())
        .map_err(|e| Error::io_at("writing", out, e))
}

/// The records of the load phase: every record's insert.
fn load_records(w: &Arc<Workload>, seed: u64) -> Vec<Record> {
    let mut stream = OpStream::new(w.clone(), Arc::new(AckCounter::new(0)), seed, 1_000_000);
    (w.insertstart..w.insertstart + w.insertcount)
        .map(|n| Record {
            time_us: 0,
            op: TraceOp::Put,
            key: w.key(n),
            value_size: stream.value_len_for(n) as u32,
            scan_len: 0,
        })
        .collect()
}

/// The records of the run phase: the stream one client thread (or the async
/// injector) issues.
fn run_records(w: &Arc<Workload>, seed: u64) -> Result<Vec<Record>> {
    if w.operationcount == 0 {
        return Err(Error::usage(
            "operationcount=0 means no limit: a trace needs a count (-p operationcount=N)",
        ));
    }
    let mut stream = OpStream::new(w.clone(), Arc::new(AckCounter::new(w.recordcount)), seed, 0);
    let mut records = Vec::new();
    for _ in 0..w.operationcount {
        let op = stream.next_op();
        if op.kind == OpKind::Insert {
            stream.acknowledge_insert(op.keynum)?;
        }
        let top = match op.kind {
            OpKind::Read => TraceOp::Get,
            OpKind::Insert | OpKind::Update => TraceOp::Put,
            OpKind::Scan => TraceOp::Scan,
            OpKind::ReadModifyWrite => TraceOp::Rmw,
            OpKind::Delete => TraceOp::Delete,
        };
        records.push(Record {
            time_us: 0,
            op: top,
            key: op.key,
            value_size: op.value_len as u32,
            scan_len: op.scan_len as u32,
        });
    }
    Ok(records)
}

fn generate(a: &TraceArgs) -> Result<()> {
    let (_name, props) = resolve_properties(&a.workload)?;
    warn_unknown(&props, engines::ALL)?;
    let w = Arc::new(Workload::from_properties(&props)?);
    let records = match a.phase.as_str() {
        "load" => load_records(&w, a.workload.seed),
        "run" => run_records(&w, a.workload.seed)?,
        other => {
            return Err(Error::usage(format!(
                "--phase: expected load or run, got '{other}'"
            )));
        }
    };
    write_trace(
        &records,
        a.out.as_deref().unwrap_or(Path::new("-")),
        &a.format,
    )
}

fn convert(c: &ConvertArgs) -> Result<()> {
    let t = match c.from.as_str() {
        "meta" => trace::convert_meta(&c.input)?,
        "twitter" => trace::convert_twitter(&c.input)?,
        "oracle" => trace::convert_oracle(&c.input, c.key_size)?,
        "csv" => trace::read_csv(&c.input)?,
        "bin" => trace::read_bin(&c.input)?,
        other => {
            return Err(Error::usage(format!(
                "--from: expected meta, twitter, oracle, csv or bin, got '{other}'"
            )));
        }
    };
    write_trace(&t.records, &c.out, &c.format)?;
    eprintln!(
        "converted {}: {}",
        c.input.display(),
        trace::describe(&t.records)
    );
    for (op, n) in &t.unknown_ops {
        eprintln!("warning: {n} requests with op '{op}' have no equivalent and were left out");
    }
    Ok(())
}

fn stats(file: &Path) -> Result<()> {
    let t = trace::read(file)?;
    println!("{}", trace::describe(&t.records));
    for (op, n) in &t.unknown_ops {
        println!("unknown op {op}: {n} requests (not replayed)");
    }
    Ok(())
}
