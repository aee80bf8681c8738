//! Portfolio figures (issue #24), beside the single-tool floor (`harness = false`).
//!
//! ```text
//! cargo bench --bench portfolio -- [--quick] [--busy] [--out FILE.json]
//! ```
//!
//! | figure | how |
//! |---|---|
//! | floor | a tool alone: its program waits on a FIFO; the driver writes the FIFO (t0), the program prints `# SZS status Theorem` and exits, the answer arrives (t1); t1 - t0 |
//! | release → answer | the same program as the winner of a portfolio whose other members are `sleep` (SIGTERM-obeying), each started and running before t0; t1 - t0, against the floor: the difference is what the portfolio adds from the winner's exit to the answer |
//! | answer → last loser reaped | from t1 until every loser's pid has left /proc (reaped by the server; 0 when it was reaped before the answer arrived) |
//!
//! Portfolios of 2 and 4 members. With `--busy` the server (and so every member) runs on one
//! CPU shared with a spinning process, the driver on the other (`mcp/busy.rs`): on the 2 CPUs
//! of the CI machine, a portfolio of 4 members under contention.
//!
//! Each figure is the median (and the maximum, for the reap) over `calls` calls after
//! `warmup`. Results go to `--out` (default `bench/results/portfolio.json`) and a summary to
//! stdout; scripts/bench.sh runs it and docs/bench.md ("Portfolios") carries the figures.
#![allow(clippy::print_stdout)]
#![allow(clippy::disallowed_methods)] // the driver writes the FIFO and polls /proc itself

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

#[path = "mcp/busy.rs"]
mod busy;
#[path = "mcp/served.rs"]
mod served;

use served::Server;

struct Plan {
    warmup: usize,
    calls: usize,
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

/// The manifest: `winner` (waits on `dir/go`, then proves), `loser1..3` (`sleep`, after
/// writing their pid), and the portfolios `race2` (winner, loser1) and `race4`.
fn manifest(dir: &Path) -> Value {
    let verdict = json!({"rules": [{"pattern": "SZS status (\\w+)"}], "decisive": ["Theorem"]});
    let go = dir.join("go").display().to_string();
    let mut tools = vec![json!({
        "name": "winner", "description": "proves when released", "program": "/bin/sh",
        "args": ["-c", format!("read x < {go}; echo '# SZS status Theorem'")],
        "verdict": verdict,
    })];
    for i in 1..=3 {
        let pid = dir.join(format!("loser{i}.pid")).display().to_string();
        tools.push(json!({
            "name": format!("loser{i}"), "description": "never settles", "program": "/bin/sh",
            "args": ["-c", format!("echo $$ > {pid}; exec sleep 1000")],
            "killGraceMs": 5000, "verdict": verdict,
        }));
    }
    tools.push(json!({"name": "race2", "description": "d", "portfolio": ["winner", "loser1"]}));
    tools.push(json!({"name": "race4", "description": "d",
                      "portfolio": ["winner", "loser1", "loser2", "loser3"]}));
    // The programs are confined (README "Security model"): they read the FIFO and write their
    // pids in `dir`, declared writable.
    let defaults = json!({"maxConcurrentCalls": 8, "writable": [dir.display().to_string()]});
    json!({"name": "portfolio-bench", "defaults": defaults, "tools": tools})
}

/// The losers' pids once each has written its file (the files are removed for the next call).
fn losers_running(dir: &Path, n: usize) -> Result<Vec<i32>, String> {
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut pids = Vec::new();
    for i in 1..=n {
        let path = dir.join(format!("loser{i}.pid"));
        loop {
            let pid: Option<i32> = std::fs::read_to_string(&path)
                .ok()
                .and_then(|s| s.trim().parse().ok());
            // Settled: it has exec'd `sleep`.
            let comm = pid.and_then(|p| std::fs::read_to_string(format!("/proc/{p}/comm")).ok());
            if let (Some(pid), Some("sleep")) = (pid, comm.as_deref().map(str::trim)) {
                pids.push(pid);
                let _ = std::fs::remove_file(&path);
                break;
            }
            if Instant::now() > deadline {
                return Err(format!("loser{i} never started"));
            }
            std::thread::sleep(Duration::from_micros(50));
        }
    }
    Ok(pids)
}

/// Writes a line to the FIFO the winner waits on, once the winner has opened it (a non-blocking
/// open fails with ENXIO until then: a winner that never reads fails the bench instead of
/// hanging it); returns when the line is written.
fn release(dir: &Path) -> Result<Instant, String> {
    use std::os::unix::fs::OpenOptionsExt;
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut f = loop {
        match std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(dir.join("go"))
        {
            Ok(f) => break f,
            Err(e) if e.raw_os_error() == Some(libc::ENXIO) && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_micros(20));
            }
            Err(e) => return Err(format!("go (the winner never opened it): {e}")),
        }
    };
    f.write_all(b"go\n").map_err(|e| e.to_string())?;
    Ok(Instant::now())
}

/// One call of `tool` with `losers` losers: (release → answer, answer → last loser reaped).
fn one_call(s: &mut Server, dir: &Path, tool: &str, losers: usize) -> Result<(f64, f64), String> {
    let id = s
        .client
        .send("tools/call", json!({"name": tool, "arguments": {}}), false)
        .map_err(|e| e.to_string())?;
    let pids = losers_running(dir, losers)?;
    let t0 = release(dir)?;
    let deadline = Instant::now() + Duration::from_secs(60);
    let t1 = loop {
        match s.client.next_event(Some(deadline)) {
            Ok(stdmcp::client::Event::Response(r)) if r.id == id => {
                let r = r.result.map_err(|e| e.to_string())?;
                if r["isError"] == json!(true) {
                    return Err(format!("{tool}: {r}"));
                }
                break Instant::now();
            }
            Ok(_) => {}
            Err(e) => return Err(format!("{tool}: {e}")),
        }
    };
    for pid in &pids {
        let path = PathBuf::from(format!("/proc/{pid}"));
        while path.exists() {
            if t1.elapsed() > Duration::from_secs(30) {
                return Err(format!("loser {pid} was never reaped"));
            }
            // Short sleeps, not a spin: on 2 CPUs a spinning driver would slow the reaps.
            std::thread::sleep(Duration::from_micros(20));
        }
    }
    Ok((ms(t1 - t0), ms(t1.elapsed())))
}

/// Median release → answer of `tool`, and median and maximum answer → reap.
fn measure(
    s: &mut Server,
    dir: &Path,
    tool: &str,
    losers: usize,
    plan: &Plan,
) -> Result<Value, String> {
    let (mut answer, mut reap) = (Vec::new(), Vec::new());
    for i in 0..plan.warmup + plan.calls {
        let (a, r) = one_call(s, dir, tool, losers)?;
        if i >= plan.warmup {
            answer.push(a);
            reap.push(r);
        }
    }
    let max = reap.iter().copied().fold(0.0, f64::max);
    Ok(json!({"members": losers + 1, "answer_ms": median(answer),
              "reap_ms": median(reap), "reap_max_ms": max}))
}

fn run(plan: &Plan) -> Result<Value, String> {
    let dir = std::env::temp_dir().join(format!("stdmcp-bench-portfolio-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let fifo = dir.join("go");
    let _ = std::fs::remove_file(&fifo);
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .map_err(|e| format!("mkfifo: {e}"))?;
    if !status.success() {
        return Err("mkfifo failed".into());
    }
    let path = dir.join("portfolio.json");
    std::fs::write(&path, manifest(&dir).to_string()).map_err(|e| e.to_string())?;
    let mut s = Server::open(&path)?;
    let floor = measure(&mut s, &dir, "winner", 0, plan)?;
    let race2 = measure(&mut s, &dir, "race2", 1, plan)?;
    let race4 = measure(&mut s, &dir, "race4", 3, plan)?;
    s.finish();
    let _ = std::fs::remove_dir_all(&dir);
    Ok(json!({"floor": floor, "race2": race2, "race4": race4}))
}

fn main() -> std::process::ExitCode {
    let argv: Vec<String> = std::env::args().collect();
    if argv.get(1).map(String::as_str) == Some("--spin") {
        busy::spin(argv.get(2).and_then(|p| p.parse().ok()));
    }
    let quick = argv.iter().any(|a| a == "--quick");
    let busy_on = argv.iter().any(|a| a == "--busy");
    let out = argv
        .iter()
        .position(|a| a == "--out")
        .and_then(|i| argv.get(i + 1))
        .map_or_else(
            || PathBuf::from("bench/results/portfolio.json"),
            PathBuf::from,
        );
    let plan = if quick {
        Plan {
            warmup: 2,
            calls: 10,
        }
    } else {
        Plan {
            warmup: 20,
            calls: 200,
        }
    };
    let _spinner = if busy_on {
        let started = busy::affinity()
            .ok_or_else(|| "cannot read the CPU affinity (taskset)".to_owned())
            .and_then(|all| busy::start(&all));
        match started {
            Ok(s) => {
                eprintln!(
                    "bench: busy: the server, its members and a spinning process share CPU {}",
                    s.cpu
                );
                Some(s)
            }
            Err(e) => {
                eprintln!("bench: --busy: {e}");
                return std::process::ExitCode::FAILURE;
            }
        }
    } else {
        None
    };
    let figures = match run(&plan) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("bench: portfolio: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let doc = json!({"busy": busy_on, "quick": quick, "calls": plan.calls, "figures": figures});
    for (name, f) in figures.as_object().into_iter().flatten() {
        println!(
            "{name:6} members {}  release->answer {:.3} ms  answer->last loser reaped {:.3} ms (max {:.3})",
            f["members"], f["answer_ms"].as_f64().unwrap_or(f64::NAN),
            f["reap_ms"].as_f64().unwrap_or(f64::NAN), f["reap_max_ms"].as_f64().unwrap_or(f64::NAN)
        );
    }
    if let Some(parent) = out.parent() {
        let _ = std::fs::create_dir_all(parent);
    }
    if let Err(e) = std::fs::write(&out, format!("{doc:#}\n")) {
        eprintln!("bench: {}: {e}", out.display());
        return std::process::ExitCode::FAILURE;
    }
    std::process::ExitCode::SUCCESS
}
