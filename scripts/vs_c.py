"""What scripts/kvell-vs-c and scripts/kvell-vs-c-pairs both read from result files
(imported by their embedded Python, run from the repository root): the device probe's
best rate, the ceiling model, a run's device I/O rate, its CPU and the host's steal."""
import json


def best(path, pattern, key="iops"):
    """The best `key` of a `ycsb device` result over the probed depths of `pattern`."""
    try:
        pts = json.load(open(path))["points"]
    except (OSError, ValueError, KeyError):
        return None
    return max((p[key] for p in pts if p["pattern"] == pattern), default=None)


def share(iops, read_fraction, reads, writes):
    """I/Os per second over the probe's ceiling at that read fraction: the probe's random
    reads and writes per second mixed harmonically, as ycsb's own ceiling
    (schema/src/device.rs, `mix_iops`)."""
    if iops is None or read_fraction is None or not reads or not writes:
        return None
    return iops * (read_fraction / reads + (1 - read_fraction) / writes)


def device_rate(ph):
    """A phase's device I/Os per operation, per second, and its read fraction (the
    whole-device counters over the phase's own seconds)."""
    d = ph.get("device") or {}
    ios = (d.get("reads") or 0) + (d.get("writes") or 0)
    secs = ph.get("runtime_ms", 0) / 1000
    return (d.get("ios_per_op"), ios / secs if secs > 0 and d else None,
            (d.get("reads") or 0) / ios if ios else None)


def steal(ph):
    """The host's steal over a phase, in cores (/proc/stat: time the hypervisor gave this
    VM's CPUs to others while it wanted them), from its per-second timeline."""
    tl = [x for x in ph.get("timeline") or [] if not x.get("warmup")]
    secs = ph.get("runtime_ms", 0) / 1000
    if not tl or secs <= 0 or any("steal_s" not in x for x in tl):
        return None
    return sum(x["steal_s"] for x in tl) / secs


def cpu(ph):
    """A phase's CPU per operation (us) and cores used: the whole process's user and
    system time over the phase's own seconds, the driver included (as scripts/c-kvell
    counts the C process, its injector included)."""
    secs = ph.get("runtime_ms", 0) / 1000
    total = (ph.get("cpu_user_s") or 0) + (ph.get("cpu_sys_s") or 0)
    if "cpu_user_s" not in ph or secs <= 0:
        return None, None
    return ph.get("cpu_us_per_op"), total / secs


def c_cpu(d):
    """The C process's CPU per operation (us) and cores over a phase, as scripts/c-kvell
    records it (since 2026-12-07; None before)."""
    return (d or {}).get("us_per_op"), (d or {}).get("cores")


def updates(runs):
    """How ours' YCSB updates were sent in these runs (their properties): one request
    writing the whole record, as the C code's benchmark updates (writeallfields=true,
    scripts/lib.sh since 2026-12-07), or YCSB's default, a get then the write."""
    modes = {str((d.get("properties") or {}).get("writeallfields", "false")).lower() == "true" for d in runs}
    if modes == {True}:
        return ("Ours' YCSB updates: one request each, writing the whole record (writeallfields=true), "
                "as the C code's benchmark updates")
    if modes == {False}:
        return ("Ours' YCSB updates: a get through the API, then the write (writeallfields=false, YCSB's "
                "default), two requests where the C code's benchmark sends one")
    return "Ours' YCSB updates: sent both ways in these runs (writeallfields differs)"
