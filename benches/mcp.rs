//! The stdmcp benchmark driver (not a libtest bench: `harness = false`).
//!
//! ```text
//! cargo bench --bench mcp -- [--quick] [--only NAME,...] [--out FILE.json]
//! ```
//!
//! Servers: stdmcp (`target/release/examples/everything`), the official-SDK peers of
//! `bench/peers/peers.json` (install with `bash bench/peers/install.sh`), and FLOOR, a
//! canned-response program (this binary run as `mcp --floor`). Measurements, each a median
//! of repeated runs, the servers interleaved in a rotating order per repetition, a fresh
//! server process per run:
//!
//! | group | figures |
//! |---|---|
//! | `cold` | spawn → initialize response; spawn → tools/list response; idle tree RSS |
//! | `seq` | one echo at a time: p50, p99, mean |
//! | `pipe` | echo with 64 in flight: calls/s |
//! | `conc` | 200 × `sleep 1000 ms` at once: wall time, peak tree RSS |
//! | `progress` | `sleep 2000 ms` with a progress token: count, mean and max gap |
//! | `cancel` | cancel a running sleep, echo at once: cancel sent → echo answered |
//! | `child` | cancel a running `spawn`: cancel sent → child `sleep` gone or a zombie |
//! | `cmd` | a tool running `/bin/true`: calls/s one at a time and 16 in flight |
//! | `confine` | stdmcp only: the `true` tool confined (Landlock, the default) against `"confine": "off"`, alternately: calls/s of each and the cost in % of a call |
//! | `drain` | a tool printing 1 GiB: time, peak tree RSS (floor: `head … \| cat > /dev/null`) |
//! | `size` | binary or install size |
//!
//! `seq` runs with the driver and the server pinned to one CPU (`taskset`; `--no-pin` to
//! not): on a VM, wake-ups across vCPUs made the latency bimodal.
//!
//! `--only` takes server names and/or group names. A server that fails a run gets `n/a`
//! with the reason; the run goes on. Results go to `--out` (default
//! `bench/results/mcp.json`), a summary table to stdout, progress to stderr (where the
//! servers' own stderr also goes). `STDMCP_BENCH_SERVER="CMD ARGS"` replaces stdmcp's argv;
//! `STDMCP_BENCH_BIN=PATH` replaces the `stdmcp` binary of `stdmcp serve` (stdmcp-serve and
//! the command-tool groups). `--busy` runs everything under contention (see `busy.rs`).
#![allow(clippy::print_stdout)]

#[path = "mcp/busy.rs"]
mod busy;
#[path = "mcp/floor.rs"]
mod floor;
#[path = "mcp/measure.rs"]
mod measure;
#[path = "mcp/metrics.rs"]
mod metrics;
#[path = "mcp/procfs.rs"]
mod procfs;
#[path = "mcp/report.rs"]
mod report;
#[path = "mcp/servers.rs"]
mod servers;
#[path = "mcp/tools.rs"]
mod tools;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Instant, SystemTime};

use busy::{affinity, set_affinity};
use measure::{Figures, Kind, Plan, Spec};
use metrics::{Metric, GROUPS, METRICS};
use report::{document, fmt_value, mark_na, print_summary, write_doc, Cells, Run};
use servers::{applies, last_cpu, missing, root, servers, warn_if_stale};

struct Args {
    quick: bool,
    pin: bool,
    busy: bool,
    only: Vec<String>,
    out: PathBuf,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        quick: false,
        pin: true,
        busy: false,
        only: Vec::new(),
        out: PathBuf::from("bench/results/mcp.json"),
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--quick" => args.quick = true,
            "--no-pin" => args.pin = false,
            "--busy" => args.busy = true,
            "--only" => {
                let v = it.next().ok_or("--only needs a value")?;
                args.only
                    .extend(v.split(',').filter(|s| !s.is_empty()).map(str::to_owned));
            }
            "--out" => args.out = it.next().ok_or("--out needs a value")?.into(),
            // cargo bench passes --bench to harness = false targets.
            "--bench" => {}
            "-h" | "--help" => return Err(
                "usage: cargo bench --bench mcp -- [--quick] [--no-pin] [--busy] [--only NAME,...] [--out FILE.json]\n\
                            --busy: servers on one CPU shared with a spinning process\n\
                            NAME: a server (stdmcp, stdmcp-serve, floor, a peers.json name) or a group \
                            (cold seq pipe cmd confine drain conc progress cancel child size)"
                    .into(),
            ),
            other => return Err(format!("unknown argument {other:?} (try --help)")),
        }
    }
    Ok(args)
}

/// What a server's install consists of, and its size.
fn size_of(spec: &Spec) -> Result<(String, f64), String> {
    let path: PathBuf = match (spec.kind, spec.name.as_str()) {
        (Kind::Stdmcp, _) => PathBuf::from(&spec.argv[0]),
        (_, n) if n.starts_with("rmcp") => PathBuf::from(&spec.argv[0]),
        (_, "python") => root().join("bench/peers/.build/venv"),
        (_, "typescript") => root().join("bench/peers/.build/ts/node_modules"),
        _ => return Err("no size rule for this server".into()),
    };
    let bytes = procfs::disk_bytes(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let what = match path.strip_prefix(root()) {
        Ok(rel) => rel.display().to_string(),
        Err(_) => path.display().to_string(),
    };
    Ok((what, bytes as f64 / (1024.0 * 1024.0)))
}

fn run_trial(group: &str, spec: &Spec, plan: &Plan, rep: usize) -> Result<Figures, String> {
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match group {
        "cold" => measure::cold(spec, plan, rep < plan.idle_reps),
        "seq" => measure::sequential(spec, plan),
        "pipe" => measure::pipelined(spec, plan),
        "conc" => measure::concurrent(spec, plan),
        "progress" => measure::progress(spec, plan),
        "cancel" => measure::cancel_next(spec, plan),
        "child" => measure::cancel_child(spec, plan),
        "cmd" => tools::command(spec, plan),
        "confine" => tools::confine(spec, plan),
        "drain" => tools::drain(spec, plan),
        other => Err(format!("unknown group {other}")),
    }));
    match caught {
        Ok(r) => r,
        Err(p) => Err(format!(
            "the driver panicked: {}",
            p.downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| p.downcast_ref::<&str>().copied())
                .unwrap_or("?")
        )),
    }
}

fn reps(group: &str, plan: &Plan) -> usize {
    match group {
        "cold" => plan.cold_reps,
        "seq" => plan.seq_reps,
        "pipe" => plan.pipe_reps,
        "conc" => plan.conc_reps,
        "progress" => plan.progress_reps,
        "cancel" => plan.cancel_reps,
        "child" => plan.child_reps,
        "cmd" | "confine" => plan.cmd_reps,
        "drain" => plan.drain_reps,
        _ => 1,
    }
}

/// `mcp --floor`, `--spin` and `--spawn-floor`: the helper programs this binary also is.
fn helper(argv: &[String]) -> Option<ExitCode> {
    match argv.get(1).map(String::as_str) {
        Some("--floor") => Some(match floor::serve() {
            Ok(()) => ExitCode::SUCCESS,
            Err(_) => ExitCode::FAILURE,
        }),
        Some("--spin") => busy::spin(argv.get(2).and_then(|p| p.parse().ok())),
        Some("--spawn-floor") => Some(match tools::spawn_floor_main(&argv[2..]) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("mcp --spawn-floor: {e}");
                ExitCode::FAILURE
            }
        }),
        _ => None,
    }
}

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().collect();
    if let Some(code) = helper(&argv) {
        return code;
    }
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    if let Err(e) = std::env::set_current_dir(root()) {
        eprintln!("bench: cannot enter {}: {e}", root().display());
        return ExitCode::FAILURE;
    }
    let (all, mut groups) = match select(&args) {
        Ok(selected) => selected,
        Err(code) => return code,
    };
    if args.busy {
        groups.retain(|&g| g != "size"); // sizes do not change under load
    }
    let mut plan = if args.quick {
        Plan::quick()
    } else {
        Plan::full()
    };
    if args.busy {
        plan = plan.contended();
    }
    let started = Instant::now();
    let started_unix = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let mut cells = Cells::new();
    let runnable = runnable(&all, &mut cells);
    // The built-in manifest of `stdmcp serve`, not one named by the environment.
    std::env::remove_var("STDMCP_CONFIG");
    let spinner = match args.busy.then(start_busy).transpose() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("bench: --busy: {e}");
            return ExitCode::FAILURE;
        }
    };
    let seq_pinned = run_groups(&args, &groups, &runnable, &plan, &mut cells);
    let run = Run {
        plan: &plan,
        started,
        started_unix,
        seq_pinned,
        busy_cpu: spinner.as_ref().map(|s| s.cpu),
    };
    drop(spinner);
    let doc = document(&run, &all, &groups, &cells);
    print_summary(&all, &groups, &doc);
    write_doc(&args.out, &doc, started)
}

/// Runs every group on the servers it applies to; returns the CPU `seq` was pinned to.
fn run_groups(
    args: &Args,
    groups: &[&'static str],
    runnable: &[Spec],
    plan: &Plan,
    cells: &mut Cells,
) -> Option<String> {
    // Warm up: the first spawn starts the runner's watchdog in this process; keep it out
    // of the first cold start measured.
    if let Some(f) = runnable.iter().find(|s| s.kind == Kind::Floor) {
        if let Err(e) = measure::cold(f, plan, false) {
            eprintln!("bench: warm-up with the floor failed: {e}");
        }
    }
    // Under --busy the servers already share one CPU with the spinner; no other pinning.
    let original_affinity = if args.pin && !args.busy {
        affinity()
    } else {
        None
    };
    let mut seq_pinned: Option<String> = None;
    for &group in groups {
        let group_metrics: Vec<&Metric> = METRICS.iter().filter(|m| m.group == group).collect();
        let eligible: Vec<&Spec> = runnable
            .iter()
            .filter(|s| match applies(group, s) {
                Ok(()) => true,
                Err(why) => {
                    mark_na(cells, &s.name, group_metrics.iter().copied(), &why);
                    false
                }
            })
            .collect();
        if group == "size" {
            measure_sizes(&eligible, cells);
            continue;
        }
        let restore = match (&original_affinity, args.pin && group == "seq") {
            (Some(all), true) => pin_one_cpu(all, &mut seq_pinned),
            _ => None,
        };
        run_group(group, &eligible, plan, cells);
        if let Some(all) = restore {
            if !set_affinity(&all) {
                eprintln!("bench: cannot restore the CPU affinity {all}");
            }
        }
    }
    seq_pinned
}

/// `--busy`: the spinner on the last CPU of this process's affinity, the driver on the others.
fn start_busy() -> Result<busy::Spinner, String> {
    let all = affinity().ok_or("cannot read the CPU affinity (taskset)")?;
    let spinner = busy::start(&all)?;
    eprintln!(
        "bench: busy: servers and a spinning process share CPU {}; the driver runs on the others of {all}",
        spinner.cpu
    );
    Ok(spinner)
}

/// The servers and groups `--only` asks for (all of them when it names none); an unknown
/// name is a usage error.
fn select(args: &Args) -> Result<(Vec<Spec>, Vec<&'static str>), std::process::ExitCode> {
    let mut all = servers().map_err(|e| {
        eprintln!("bench: {e}");
        std::process::ExitCode::FAILURE
    })?;
    let only_groups: Vec<&'static str> = GROUPS
        .iter()
        .copied()
        .filter(|g| args.only.iter().any(|o| o == g))
        .collect();
    let only_servers: Vec<&String> = args
        .only
        .iter()
        .filter(|o| !GROUPS.contains(&o.as_str()))
        .collect();
    for o in &only_servers {
        if !all.iter().any(|s| &&s.name == o) {
            eprintln!("bench: --only {o}: no such server or group");
            return Err(std::process::ExitCode::from(2));
        }
    }
    if !only_servers.is_empty() {
        all.retain(|s| only_servers.contains(&&s.name));
    }
    let groups = if only_groups.is_empty() {
        GROUPS.to_vec()
    } else {
        only_groups
    };
    Ok((all, groups))
}

/// The servers whose program is present; the others are n/a throughout.
fn runnable(all: &[Spec], cells: &mut Cells) -> Vec<Spec> {
    let mut runnable = Vec::new();
    for s in all {
        match missing(s) {
            Some(why) => {
                eprintln!("bench: {}: n/a: {why}", s.name);
                mark_na(cells, &s.name, METRICS, &why);
            }
            None => {
                if s.kind == Kind::Stdmcp && std::env::var_os("STDMCP_BENCH_SERVER").is_none() {
                    warn_if_stale(s);
                }
                runnable.push(s.clone());
            }
        }
    }
    runnable
}

fn measure_sizes(eligible: &[&Spec], cells: &mut Cells) {
    for s in eligible {
        let cell = cells.entry((s.name.clone(), "size_mib")).or_default();
        match size_of(s) {
            Ok((what, mib)) => {
                cell.runs.push(mib);
                cell.note = Some(what);
            }
            Err(e) => cell.na = Some(e),
        }
    }
}

/// Pins this process (and so the servers it starts) to the last CPU of `all`; returns the
/// affinity to restore afterwards, or None when pinning failed.
///
/// Sequential latency is a ping-pong of wake-ups; on a VM a wake-up across vCPUs costs tens
/// of µs or nothing depending on where the scheduler put the threads, and runs came out
/// bimodal (14 or 65 µs for the same server). Client and server share one CPU for this
/// group, so it measures the work and the thread switches per call.
fn pin_one_cpu(all: &str, seq_pinned: &mut Option<String>) -> Option<String> {
    let one = last_cpu(all);
    match one.as_deref().filter(|c| set_affinity(c)) {
        Some(c) => {
            eprintln!("bench: seq: client and servers pinned to CPU {c}");
            *seq_pinned = Some(c.to_owned());
            Some(all.to_owned())
        }
        None => {
            eprintln!("bench: seq: cannot pin to one CPU (taskset); running unpinned");
            None
        }
    }
}

/// Runs every repetition of `group` over the eligible servers, rotating their order, and
/// records each figure or failure.
fn run_group(group: &'static str, eligible: &[&Spec], plan: &Plan, cells: &mut Cells) {
    let n = reps(group, plan);
    let k = eligible.len().max(1);
    for rep in 0..n {
        for i in 0..eligible.len() {
            let s = eligible[(i + rep) % k];
            let t = Instant::now();
            let r = run_trial(group, s, plan, rep);
            let took = t.elapsed();
            match r {
                Ok(figs) => {
                    let shown: Vec<String> = figs
                        .iter()
                        .map(|(k, v)| format!("{k}={}", fmt_value(*v)))
                        .collect();
                    eprintln!(
                        "[{group} {}/{n}] {:<11} {} ({:.1}s)",
                        rep + 1,
                        s.name,
                        shown.join(" "),
                        took.as_secs_f64()
                    );
                    for (key, v) in figs {
                        if let Some(mk) = METRICS.iter().find(|m| m.key == key) {
                            cells
                                .entry((s.name.clone(), mk.key))
                                .or_default()
                                .runs
                                .push(v);
                        }
                    }
                }
                Err(e) => {
                    eprintln!("[{group} {}/{n}] {:<11} FAILED: {e}", rep + 1, s.name);
                    // The idle RSS is only taken in the first few cold runs.
                    let failed = METRICS.iter().filter(|m| {
                        m.group == group && !(m.key.starts_with("idle_") && rep >= plan.idle_reps)
                    });
                    for mt in failed {
                        cells
                            .entry((s.name.clone(), mt.key))
                            .or_default()
                            .failures
                            .push(e.clone());
                    }
                }
            }
        }
    }
}
