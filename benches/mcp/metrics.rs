//! The figures the driver reports, and the measurement groups.

/// A reported figure.
pub(crate) struct Metric {
    pub key: &'static str,
    pub group: &'static str,
    pub label: &'static str,
    pub unit: &'static str,
    /// "lower", "higher", or "info" (no better direction).
    pub better: &'static str,
}

pub(crate) const fn m(
    key: &'static str,
    group: &'static str,
    label: &'static str,
    unit: &'static str,
    better: &'static str,
) -> Metric {
    Metric {
        key,
        group,
        label,
        unit,
        better,
    }
}

pub(crate) const METRICS: &[Metric] = &[
    m(
        "cold_init_ms",
        "cold",
        "cold start: spawn → initialize response",
        "ms",
        "lower",
    ),
    m(
        "cold_list_ms",
        "cold",
        "cold start: spawn → first tools/list response",
        "ms",
        "lower",
    ),
    m(
        "idle_rss_mib",
        "cold",
        "idle RSS after initialize + tools/list (process tree)",
        "MiB",
        "lower",
    ),
    m(
        "idle_anon_mib",
        "cold",
        "idle RssAnon (heap and stacks, no shared pages)",
        "MiB",
        "lower",
    ),
    m(
        "seq_p50_us",
        "seq",
        "sequential echo latency p50",
        "µs",
        "lower",
    ),
    m(
        "seq_p99_us",
        "seq",
        "sequential echo latency p99",
        "µs",
        "lower",
    ),
    m(
        "seq_mean_us",
        "seq",
        "sequential echo latency mean",
        "µs",
        "lower",
    ),
    m(
        "pipe_calls_per_s",
        "pipe",
        "pipelined echo throughput (64 in flight)",
        "calls/s",
        "higher",
    ),
    m(
        "conc_wall_ms",
        "conc",
        "concurrent sleeps: wall time until all answered",
        "ms",
        "lower",
    ),
    m(
        "conc_peak_rss_mib",
        "conc",
        "concurrent sleeps: peak RSS (process tree)",
        "MiB",
        "lower",
    ),
    m(
        "conc_peak_procs",
        "conc",
        "concurrent sleeps: processes in the tree (max)",
        "",
        "info",
    ),
    m(
        "progress_count",
        "progress",
        "progress: notifications received",
        "",
        "info",
    ),
    m(
        "progress_mean_ms",
        "progress",
        "progress: mean gap between notifications",
        "ms",
        "info",
    ),
    m(
        "progress_max_ms",
        "progress",
        "progress: max gap (from the request on)",
        "ms",
        "lower",
    ),
    m(
        "progress_total_ms",
        "progress",
        "progress: request → answer",
        "ms",
        "info",
    ),
    m(
        "cancel_next_ms",
        "cancel",
        "cancel → next answer (echo)",
        "ms",
        "lower",
    ),
    m(
        "child_gone_ms",
        "child",
        "cancel → child process gone",
        "ms",
        "lower",
    ),
    m(
        "cmd_seq_per_s",
        "cmd",
        "command tool (`/bin/true`), one call at a time",
        "calls/s",
        "higher",
    ),
    m(
        "cmd_par_per_s",
        "cmd",
        "command tool (`/bin/true`), 16 calls in flight",
        "calls/s",
        "higher",
    ),
    m(
        "cmd_seq_fork_per_s",
        "cmd",
        "spawn floor with a pre-exec hook (fork + exec, as stdmcp's runner), one at a time",
        "calls/s",
        "info",
    ),
    m(
        "cmd_par_fork_per_s",
        "cmd",
        "spawn floor with a pre-exec hook (fork + exec), 16 in flight",
        "calls/s",
        "info",
    ),
    m(
        "drain_ms",
        "drain",
        "output drain: a tool printing the drain size (call → answer)",
        "ms",
        "lower",
    ),
    m(
        "drain_mib_per_s",
        "drain",
        "output drain: throughput",
        "MiB/s",
        "higher",
    ),
    m(
        "drain_peak_rss_mib",
        "drain",
        "output drain: peak RSS (process tree, the printing program included)",
        "MiB",
        "lower",
    ),
    m("size_mib", "size", "binary / install size", "MiB", "lower"),
];

pub(crate) const GROUPS: &[&str] = &[
    "cold", "seq", "pipe", "cmd", "drain", "conc", "progress", "cancel", "child", "size",
];
