//! Session figures (issue #11), beside a floor (not a libtest bench: `harness = false`).
//!
//! ```text
//! cargo bench --bench sessions -- [--quick] [--busy] [--out FILE.json]
//! ```
//!
//! | figure | how |
//! |---|---|
//! | round trip | `K_send` of a one-line input to a warm python3 / `z3 -in` session of `examples/repls.json`, one at a time, against the floor: the same input and the same end-of-answer sentinel written straight to the same program (same argv) over a pipe |
//! | idle memory | the server's own resident memory (not its children's) before and after opening 50 idle python3 sessions, per session; also its thread count |
//!
//! With `--busy` the round trips run under contention, as `cargo bench --bench mcp -- --busy`
//! runs its groups (`mcp/busy.rs`): the server and the floor's program start on one CPU that a
//! spinning process shares, the driver runs on the others; idle memory is not measured then.
//!
//! Each round-trip figure is the median of `calls` sends after `warmup`, median over `reps`
//! runs with the floor and stdmcp interleaved. Results go to `--out` (default
//! `bench/results/sessions.json`), a summary to stdout; scripts/bench.sh runs it and
//! scripts/bench_report.py turns it into the "Sessions" section of docs/bench.md.
#![allow(clippy::print_stdout)]

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use stdmcp::process::ServerProcess;

#[path = "mcp/busy.rs"]
mod busy;
#[path = "mcp/served.rs"]
mod served;

use served::Server;

struct Plan {
    quick: bool,
    reps: usize,
    warmup: usize,
    calls: usize,
    sessions: usize,
}

/// One session kind measured: its argv, the input sent and the sentinel, as in repls.json.
struct Repl {
    kind: &'static str,
    argv: Vec<String>,
    input: &'static str,
    sentinel: &'static str,
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The kinds of examples/repls.json this bench uses, read from it so they cannot drift.
fn repls() -> Result<Vec<Repl>, String> {
    let path = root().join("examples/repls.json");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let m: Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    let kinds = m["sessions"].as_array().cloned().unwrap_or_default();
    let mut out = Vec::new();
    for (kind, input) in [("python", "x = 1 + 1"), ("z3", "(assert true)")] {
        let k = kinds
            .iter()
            .find(|k| k["name"] == kind)
            .ok_or(format!("repls.json has no {kind}"))?;
        let mut argv = vec![k["program"].as_str().unwrap_or_default().to_owned()];
        for a in k["args"].as_array().into_iter().flatten() {
            argv.push(a.as_str().unwrap_or_default().to_owned());
        }
        let sentinel = k["answer"]["command"].as_str().unwrap_or_default();
        out.push(Repl {
            kind,
            argv,
            input,
            sentinel: Box::leak(sentinel.to_owned().into_boxed_str()),
        });
    }
    Ok(out)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The floor: the program over a pipe, input and sentinel written, read up to the marker.
fn floor_run(r: &Repl, plan: &Plan) -> Result<f64, String> {
    let mut p = busy::spawn_pinned(|| ServerProcess::spawn(&r.argv))
        .map_err(|e| format!("{}: {e}", r.argv[0]))?;
    let (out, mut inp) = p.take_pipes();
    let mut out = BufReader::new(out);
    let mut times = Vec::new();
    for i in 0..plan.warmup + plan.calls {
        let marker = format!("__stdmcp_bench_{i}__");
        let t0 = Instant::now();
        let cmd = r.sentinel.replace("{marker}", &marker);
        inp.write_all(format!("{}\n{cmd}\n", r.input).as_bytes())
            .map_err(|e| e.to_string())?;
        inp.flush().map_err(|e| e.to_string())?;
        let mut line = String::new();
        loop {
            line.clear();
            if out.read_line(&mut line).map_err(|e| e.to_string())? == 0 {
                return Err(format!("{} ended", r.kind));
            }
            if line.trim_end() == marker {
                break;
            }
        }
        if i >= plan.warmup {
            times.push(ms(t0.elapsed()));
        }
    }
    drop(inp);
    p.finish(Duration::from_secs(2));
    Ok(median(times))
}

/// Through stdmcp: `K_send` of the same input to a warm session.
fn stdmcp_run(r: &Repl, plan: &Plan) -> Result<f64, String> {
    let mut s = Server::open(&root().join("examples/repls.json"))?;
    s.call(&format!("{}_start", r.kind), json!({}))?;
    let mut times = Vec::new();
    for i in 0..plan.warmup + plan.calls {
        let t0 = Instant::now();
        s.call(&format!("{}_send", r.kind), json!({"input": r.input}))?;
        if i >= plan.warmup {
            times.push(ms(t0.elapsed()));
        }
    }
    s.finish();
    Ok(median(times))
}

fn status_field(pid: u32, key: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// `--busy`: the spinner on the last CPU of this process's affinity, the driver on the others.
fn start_busy() -> Result<busy::Spinner, String> {
    let all = busy::affinity().ok_or("cannot read the CPU affinity (taskset)")?;
    let spinner = busy::start(&all)?;
    eprintln!(
        "bench: busy: the servers, the floors' programs and a spinning process share CPU {}",
        spinner.cpu
    );
    Ok(spinner)
}

/// The server's RSS and threads before and after `plan.sessions` idle python sessions.
fn idle_memory(plan: &Plan) -> Result<Value, String> {
    let mut m: Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("examples/repls.json")).map_err(|e| e.to_string())?,
    )
    .map_err(|e| e.to_string())?;
    let kinds = m["sessions"].as_array_mut().ok_or("no sessions")?;
    kinds.retain(|k| k["name"] == "python");
    kinds[0]["maxSessions"] = json!(plan.sessions);
    let dir = std::env::temp_dir().join(format!("stdmcp-bench-sessions-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let manifest = dir.join("python.json");
    std::fs::write(&manifest, m.to_string()).map_err(|e| e.to_string())?;
    let mut s = Server::open(&manifest)?;
    let settle = Duration::from_millis(if plan.quick { 100 } else { 500 });
    std::thread::sleep(settle);
    let (rss0, threads0) = (
        status_field(s.pid, "VmRSS:"),
        status_field(s.pid, "Threads:"),
    );
    for i in 0..plan.sessions {
        s.call("python_start", json!({"session": format!("s{i}")}))?;
    }
    std::thread::sleep(settle);
    let (rss1, threads1) = (
        status_field(s.pid, "VmRSS:"),
        status_field(s.pid, "Threads:"),
    );
    s.finish();
    let _ = std::fs::remove_dir_all(&dir);
    Ok(json!({
        "sessions": plan.sessions,
        "rss_before_kib": rss0, "rss_after_kib": rss1,
        "per_session_kib": (rss1 as f64 - rss0 as f64) / plan.sessions as f64,
        "threads_before": threads0, "threads_after": threads1,
    }))
}

fn roundtrips(plan: &Plan) -> Result<Value, String> {
    let mut out = serde_json::Map::new();
    for r in repls()? {
        let (mut floor, mut via) = (Vec::new(), Vec::new());
        for _ in 0..plan.reps {
            floor.push(floor_run(&r, plan)?);
            via.push(stdmcp_run(&r, plan)?);
        }
        let (f, v) = (median(floor), median(via));
        eprintln!(
            "bench: {} round trip: floor {f:.3} ms, stdmcp {v:.3} ms",
            r.kind
        );
        out.insert(
            r.kind.to_owned(),
            json!({"floor_ms": f, "stdmcp_ms": v, "overhead_ms": v - f, "argv": r.argv, "input": r.input}),
        );
    }
    Ok(Value::Object(out))
}

/// The options: `--quick`, `--busy`, `--out FILE`.
struct Args {
    quick: bool,
    contention: bool,
    out: std::path::PathBuf,
}

fn parse_args(argv: Vec<String>) -> Result<Args, String> {
    let mut a = Args {
        quick: false,
        contention: false,
        out: root().join("bench/results/sessions.json"),
    };
    let mut args = argv.into_iter().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--quick" => a.quick = true,
            "--busy" => a.contention = true,
            "--out" => a.out = args.next().ok_or("--out needs a value")?.into(),
            "--bench" => {}
            other => {
                return Err(format!("usage: cargo bench --bench sessions -- [--quick] [--busy] [--out FILE.json] (got {other:?})"))
            }
        }
    }
    Ok(a)
}

impl Plan {
    fn new(quick: bool) -> Plan {
        if quick {
            Plan {
                quick,
                reps: 1,
                warmup: 5,
                calls: 20,
                sessions: 5,
            }
        } else {
            Plan {
                quick,
                reps: 5,
                warmup: 50,
                calls: 500,
                sessions: 50,
            }
        }
    }
}

fn main() -> std::process::ExitCode {
    let argv: Vec<String> = std::env::args().collect();
    if argv.get(1).map(String::as_str) == Some("--spin") {
        busy::spin(argv.get(2).and_then(|p| p.parse().ok()));
    }
    let Args {
        quick,
        contention,
        out,
    } = match parse_args(argv) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let plan = Plan::new(quick);
    // Dropped (the spinner killed) when main returns.
    let spinner = match contention.then(start_busy).transpose() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("bench: --busy: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let result = roundtrips(&plan).and_then(|rt| {
        let idle = match spinner {
            Some(_) => Value::Null,
            None => idle_memory(&plan)?,
        };
        eprintln!("bench: idle sessions: {idle}");
        Ok(json!({
            "quick": quick,
            "busy_cpu": spinner.as_ref().map(|s| s.cpu),
            "plan": {"reps": plan.reps, "warmup": plan.warmup, "calls": plan.calls, "sessions": plan.sessions},
            "roundtrip": rt,
            "idle": idle,
        }))
    });
    match result.and_then(|v| write(&out, &v)) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// Prints the results and writes them to `out`.
fn write(out: &std::path::Path, v: &Value) -> Result<(), String> {
    println!("{}", serde_json::to_string_pretty(v).unwrap_or_default());
    if let Some(dir) = out.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    std::fs::write(out, v.to_string()).map_err(|e| format!("cannot write {}: {e}", out.display()))
}
