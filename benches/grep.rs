//! The scan of `output`/`log` `grep` against GNU grep on the same file (issue 33; `harness =
//! false`).
//!
//! ```text
//! cargo bench --bench grep -- [--quick] [--mb N] [--out FILE.json]
//! ```
//!
//! A build log of `--mb` MB (default 200; `--quick`: 20) is written once: compiler, CMake,
//! cargo and test lines, with one `error: undefined reference` line in the middle. The server
//! (`stdmcp serve`, the bench profile's binary) serves a tool with that log; each pattern is
//! timed as one `log {grep}` call (request → answer, default time bound), and GNU grep as one
//! `grep -c` process (spawn → exit, `LC_ALL=C`) on the same file, in turn (A B A B …), so
//! that each ratio compares two runs made side by side. Figures: medians over the runs;
//! throughput is the bytes scanned over the median time (a scan stopped by its time bound
//! scanned less than the file). Results go to `--out` (default `bench/results/grep.json`) and
//! a table to stdout; docs/bench.md ("Grep of a large output") carries them.
#![allow(clippy::print_stdout)]
#![allow(clippy::disallowed_methods)] // GNU grep is started bare, as the yardstick

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use serde_json::{json, Value};

#[path = "mcp/busy.rs"]
#[allow(dead_code)] // only its pinned spawn, through `served`
mod busy;
#[path = "mcp/served.rs"]
mod served;

/// A pattern: its name, as `grep` is given it, and GNU grep's arguments for the same lines.
const PATTERNS: [(&str, &str, &[&str]); 5] = [
    (
        "literal",
        "error: undefined reference",
        &["-c", "error: undefined reference"],
    ),
    ("any case", "(?i)fatal error", &["-c", "-i", "fatal error"]),
    (
        "alternation",
        "panicked|FAILED",
        &["-c", "-E", "panicked|FAILED"],
    ),
    (
        "no literal, anchored",
        r"^\s+$",
        &["-c", "-E", "^[[:space:]]+$"],
    ),
    ("no literal", "[A-Z]{5,}", &["-c", "-E", "[A-Z]{5,}"]),
];

/// Writes about `mb` MB of build log to `path`, the one `error` line in the middle.
fn write_log(path: &Path, mb: u64) -> std::io::Result<u64> {
    const MODS: [&str; 6] = ["parser", "lexer", "codegen", "typeck", "driver", "session"];
    let target = mb * 1_000_000;
    let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
    let (mut n, mut placed) = (0u64, false);
    for i in 0u64.. {
        if n >= target {
            break;
        }
        let m = MODS[(i % 6) as usize];
        let line = match i % 20 {
            0..=9 => format!(
                "[{:3}%] Building CXX object src/{m}/CMakeFiles/{m}.dir/{m}_{}.cpp.o\n",
                i % 100,
                i % 977
            ),
            10..=15 => format!(
                "   Compiling {m}-{} v0.{}.{} (/home/build/src/{m})\n",
                i % 313,
                i % 17,
                i % 7
            ),
            16..=18 => format!(
                "/home/build/src/{m}/{m}_{}.cpp:{}:{}: warning: unused variable 'tmp{}' [-Wunused-variable]\n",
                i % 977, i % 2000, i % 80, i % 50
            ),
            _ => format!("test {m}::tests::case_{i} ... ok\n"),
        };
        let line = if !placed && n >= target / 2 {
            placed = true;
            "/home/build/src/linker/main.cpp:42:7: error: undefined reference to `frobnicate(int)'\n"
                .to_owned()
        } else {
            line
        };
        out.write_all(line.as_bytes())?;
        n += line.len() as u64;
    }
    out.flush()?;
    Ok(n)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

/// One `log {grep}` call: (seconds, bytes scanned, lines found).
fn stdmcp_once(s: &mut served::Server, pattern: &str) -> Result<(f64, u64, usize), String> {
    let args = json!({"tool": "build", "workdir": "proj", "name": "logs/build.log",
                      "grep": pattern, "limit": 1_048_576});
    let t0 = Instant::now();
    let r = s.call("log", args)?;
    let secs = t0.elapsed().as_secs_f64();
    let st = &r["structuredContent"];
    let found = st["matches"].as_array().map_or(0, Vec::len);
    Ok((secs, st["scannedBytes"].as_u64().unwrap_or(0), found))
}

/// One GNU grep process: (seconds, its count).
fn grep_once(args: &[&str], file: &Path) -> Result<(f64, usize), String> {
    let t0 = Instant::now();
    let out = Command::new("grep")
        .args(args)
        .arg(file)
        .env("LC_ALL", "C")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("grep: {e}"))?;
    let secs = t0.elapsed().as_secs_f64();
    let count = String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .unwrap_or(0);
    Ok((secs, count))
}

fn run(mb: u64, runs: usize) -> Result<Value, String> {
    let dir = std::env::temp_dir().join(format!("stdmcp-bench-grep-{}", std::process::id()));
    let logs = dir.join("work/proj/logs");
    std::fs::create_dir_all(&logs).map_err(|e| e.to_string())?;
    let file = logs.join("build.log");
    let size = write_log(&file, mb).map_err(|e| e.to_string())?;
    let manifest = json!({"name": "grep-bench", "roots": {"work": "work"},
        "tools": [{"name": "build", "description": "a build", "program": "true",
                   "cwd": {"param": "workdir"}, "logs": ["logs/*"],
                   "params": {"workdir": {"type": "path", "root": "work", "kind": "dir",
                                          "required": true}}}]});
    let path = dir.join("grep.json");
    std::fs::write(&path, manifest.to_string()).map_err(|e| e.to_string())?;
    let mut s = served::Server::open(&path)?;
    let mut rows = Vec::new();
    for (name, pattern, grep_args) in PATTERNS {
        // Warm-up: the file in the page cache for both.
        stdmcp_once(&mut s, pattern)?;
        grep_once(grep_args, &file)?;
        let (mut a, mut b, mut ratio, mut scanned) = (vec![], vec![], vec![], vec![]);
        let (mut found, mut counted) = (0, 0);
        for _ in 0..runs {
            let (ta, bytes, lines) = stdmcp_once(&mut s, pattern)?;
            let (tb, count) = grep_once(grep_args, &file)?;
            (found, counted) = (lines, count);
            a.push(ta);
            b.push(tb);
            ratio.push(ta / tb);
            scanned.push(bytes as f64);
        }
        let (ta, tb, bytes) = (median(a), median(b), median(scanned));
        rows.push(
            json!({"pattern": name, "grep": pattern, "gnu_grep": grep_args,
            "stdmcp_ms": ta * 1e3, "stdmcp_mb_s": bytes / ta / 1e6, "scanned_bytes": bytes,
            "gnu_grep_ms": tb * 1e3, "gnu_grep_mb_s": size as f64 / tb / 1e6,
            "ratio": median(ratio), "lines": found, "gnu_grep_count": counted}),
        );
    }
    s.finish();
    let _ = std::fs::remove_dir_all(&dir);
    Ok(json!({"bytes": size, "runs": runs, "patterns": rows}))
}

fn main() -> std::process::ExitCode {
    let argv: Vec<String> = std::env::args().collect();
    let value = |flag: &str| {
        argv.iter()
            .position(|a| a == flag)
            .and_then(|i| argv.get(i + 1))
    };
    let quick = argv.iter().any(|a| a == "--quick");
    let mb = value("--mb")
        .and_then(|v| v.parse().ok())
        .unwrap_or(if quick { 20 } else { 200 });
    let runs = if quick { 3 } else { 10 };
    let out = value("--out").map_or("bench/results/grep.json", String::as_str);
    let doc = match run(mb, runs) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("bench: grep: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    println!("{} bytes, median of {runs} runs each\n", doc["bytes"]);
    println!("| pattern | `grep` | stdmcp ms | stdmcp MB/s | GNU grep ms | GNU grep MB/s | stdmcp / GNU grep |");
    println!("|---|---|---|---|---|---|---|");
    for r in doc["patterns"].as_array().into_iter().flatten() {
        let f = |k: &str| r[k].as_f64().unwrap_or(f64::NAN);
        println!(
            "| {} | `{}` | {:.0} | {:.0} | {:.0} | {:.0} | {:.2} |",
            r["pattern"].as_str().unwrap_or("?"),
            r["grep"].as_str().unwrap_or("?").replace('|', "\\|"),
            f("stdmcp_ms"),
            f("stdmcp_mb_s"),
            f("gnu_grep_ms"),
            f("gnu_grep_mb_s"),
            f("ratio")
        );
    }
    if let Some(parent) = Path::new(out).parent() {
        let _ = std::fs::create_dir_all(parent);
    }
    if let Err(e) = std::fs::write(out, format!("{doc:#}\n")) {
        eprintln!("bench: {out}: {e}");
        return std::process::ExitCode::FAILURE;
    }
    std::process::ExitCode::SUCCESS
}
