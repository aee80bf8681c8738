//! `examples/slurm.json` end to end against a real single-node Slurm (started by
//! `scripts/slurm-local.sh`, which needs root): proofs run as jobs, and cancel, deadline and
//! the server's death remove the job. The node has this machine's CPUs (2 in CI), so the
//! tests run one at a time. Not root: the tests say loudly that they are skipped (CI runs as
//! root and must not skip: `CI` set makes that a failure).
#![allow(clippy::unwrap_used)]
#![allow(clippy::disallowed_methods)] // tests and benchmarks start bare programs as clients and controls

use std::path::PathBuf;
use std::process::Command;
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use crate::common::{send_signal, serve_command, Proc};
use serde_json::{json, Value};

/// How long a job may take to leave `squeue` before a test fails (not a speed check).
const GONE_WITHIN: Duration = Duration::from_secs(60);

/// Z3 on the sum of three cubes equal to 33: runs until its timeout.
const ENDLESS: &str = "(declare-const x Int)(declare-const y Int)(declare-const z Int)\
    (assert (= (+ (* x x x) (* y y y) (* z z z)) 33))(check-sat)";

const SOCRATES: &str = "fof(a1, axiom, ![X]: (human(X) => mortal(X))).\n\
    fof(a2, axiom, human(socrates)).\nfof(c, conjecture, mortal(socrates)).\n";

/// The running cluster's SLURM_CONF, or `None` (skipped) when not root; holds the lock
/// that runs these tests one at a time.
fn slurm() -> Option<(String, MutexGuard<'static, ()>)> {
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
    static CONF: OnceLock<Option<String>> = OnceLock::new();
    let guard = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let conf = CONF.get_or_init(|| {
        // SAFETY-free check: root is uid 0.
        let root = Command::new("id")
            .arg("-u")
            .output()
            .is_ok_and(|o| o.stdout.starts_with(b"0\n"));
        if !root {
            assert!(
                std::env::var_os("CI").is_none(),
                "CI must run the Slurm tests as root"
            );
            eprintln!(
                "\n*** SKIPPED: the Slurm tests need root (scripts/slurm-local.sh starts slurmd) ***\n"
            );
            return None;
        }
        let out = Command::new(concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/slurm-local.sh"))
            .arg("start")
            .output()
            .expect("run scripts/slurm-local.sh");
        assert!(
            out.status.success(),
            "slurm-local.sh start failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).unwrap();
        Some(
            text.trim()
                .strip_prefix("export SLURM_CONF=")
                .unwrap()
                .to_owned(),
        )
    });
    conf.clone().map(|c| (c, guard))
}

/// `examples/slurm.json`, with the default timeout changed when `timeout` is given.
fn manifest(timeout: Option<u64>) -> PathBuf {
    let path = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/slurm.json"));
    let Some(t) = timeout else { return path };
    let mut m: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    m["defaults"]["timeoutSeconds"] = json!(t);
    let dir = crate::common::temp_dir("slurm-manifest");
    let copy = dir.join("slurm.json");
    std::fs::write(&copy, m.to_string()).unwrap();
    copy
}

fn serve(conf: &str, timeout: Option<u64>) -> Proc {
    let mut cmd = serve_command(&manifest(timeout));
    cmd.env("SLURM_CONF", conf)
        .env("STDMCP_HEARTBEAT_MS", "100");
    Proc::initialized(cmd, "2025-06-18")
}

/// This server's jobs in `squeue`: (name, state).
fn jobs(conf: &str, server: i32) -> Vec<(String, String)> {
    let out = Command::new("squeue")
        .args(["-h", "-o", "%j %T"])
        .env("SLURM_CONF", conf)
        .output()
        .expect("squeue");
    assert!(out.status.success(), "squeue failed");
    let prefix = format!("stdmcp-{server}-");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_once(' '))
        .filter(|(name, _)| name.starts_with(&prefix))
        .map(|(n, s)| (n.to_owned(), s.to_owned()))
        .collect()
}

/// Waits until `pred` holds for this server's jobs (failing after [`GONE_WITHIN`]).
fn wait_jobs(conf: &str, server: i32, what: &str, pred: impl Fn(&[(String, String)]) -> bool) {
    let deadline = Instant::now() + GONE_WITHIN;
    loop {
        let now = jobs(conf, server);
        if pred(&now) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "waited in vain for {what}: {now:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn texts(r: &Value) -> String {
    r["result"]["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

fn running(n: usize) -> impl Fn(&[(String, String)]) -> bool {
    move |j| j.iter().filter(|(_, s)| s == "RUNNING").count() == n
}

#[test]
fn a_proof_runs_as_a_slurm_job_and_its_output_comes_back() {
    let Some((conf, _one)) = slurm() else { return };
    let mut p = serve(&conf, None);
    p.call(json!(1), "eprover_text", json!({"problem": SOCRATES}), None);
    let r = p.response(&json!(1));
    let text = texts(&r);
    assert!(text.contains("SZS status Theorem"), "{r}");
    assert_ne!(r["result"]["isError"], true, "{r}");
    p.call(
        json!(2),
        "z3_text",
        json!({"script": "(declare-const x Int)(assert (> x 2))(check-sat)", "timeout": 5}),
        None,
    );
    let r = p.response(&json!(2));
    assert!(texts(&r).contains("sat"), "{r}");
    p.finish();
}

#[test]
fn cancel_removes_the_job_from_squeue() {
    let Some((conf, _one)) = slurm() else { return };
    let mut p = serve(&conf, None);
    let server = p.pid();
    p.call(
        json!(1),
        "z3_text",
        json!({"script": ENDLESS}),
        Some(json!("t")),
    );
    wait_jobs(&conf, server, "the job to run", running(1));
    let begin = Instant::now();
    p.notify("notifications/cancelled", json!({"requestId": 1}));
    wait_jobs(&conf, server, "the cancelled job to leave squeue", |j| {
        j.is_empty()
    });
    eprintln!("cancel -> job gone from squeue: {:?}", begin.elapsed());
    let (rest, status) = p.finish();
    assert!(status.success());
    assert!(
        rest.iter().all(|m| m["id"] != json!(1)),
        "cancelled call answered"
    );
}

#[test]
fn a_deadline_removes_the_job_and_says_so() {
    let Some((conf, _one)) = slurm() else { return };
    let mut p = serve(&conf, Some(3));
    let server = p.pid();
    p.call(json!(1), "z3_text", json!({"script": ENDLESS}), None);
    let r = p.response(&json!(1));
    let text = texts(&r);
    assert!(text.contains("timed out after 3 s"), "{r}");
    assert!(text.contains("onCancel (scancel) ran"), "{r}");
    wait_jobs(&conf, server, "the job to leave squeue", |j| j.is_empty());
    p.finish();
}

#[test]
fn sigkill_of_the_server_removes_every_job_it_had() {
    let Some((conf, _one)) = slurm() else { return };
    let mut p = serve(&conf, None);
    let server = p.pid();
    let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
    // One job per CPU runs, one more waits in the queue.
    for id in 0..=cpus {
        p.call(json!(id), "z3_text", json!({"script": ENDLESS}), None);
    }
    wait_jobs(&conf, server, "all jobs running or queued", |j| {
        j.len() == cpus + 1 && running(cpus)(j)
    });
    send_signal(server, libc::SIGKILL);
    p.wait_exit();
    let begin = Instant::now();
    wait_jobs(
        &conf,
        server,
        "the dead server's jobs to leave squeue",
        |j| j.is_empty(),
    );
    eprintln!(
        "server SIGKILL -> all jobs gone from squeue: {:?}",
        begin.elapsed()
    );
}

#[test]
fn twenty_concurrent_calls_queue_report_it_and_all_complete() {
    let Some((conf, _one)) = slurm() else { return };
    let mut p = serve(&conf, None);
    const N: usize = 20;
    for id in 0..N {
        // Each job runs one second (Z3's own timeout), so most of them wait in the queue.
        p.call(
            json!(id),
            "z3_text",
            json!({"script": ENDLESS, "timeout": 1}),
            Some(json!(id)),
        );
    }
    let mut queued = std::collections::BTreeSet::new();
    let mut done = 0;
    while done < N {
        let m = p.recv();
        if m["method"] == "notifications/progress" {
            let msg = m["params"]["message"].as_str().unwrap_or_default();
            if msg.contains("queued and waiting for resources") {
                queued.insert(m["params"]["progressToken"].to_string());
            }
        } else if m.get("id").is_some() {
            assert!(texts(&m).contains("timeout"), "{m}");
            done += 1;
        }
    }
    let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
    assert!(
        queued.len() >= N - cpus,
        "only {} calls reported queued: {queued:?}",
        queued.len()
    );
    p.finish();
}

/// The figures of docs/cluster.md: 200 calls queued on the node at once (one job per CPU
/// runs, the rest wait), the server's threads and memory while they wait, then shutdown
/// by stdin EOF with all of them in flight. Run with
/// `cargo test --test slurm -- --ignored --nocapture measure`.
#[test]
#[ignore = "a measurement (docs/cluster.md), not a check"]
fn measure_200_queued_calls() {
    let Some((conf, _one)) = slurm() else { return };
    const N: usize = 200;
    let mut p = serve(&conf, None);
    let server = p.pid();
    let begin = Instant::now();
    for id in 0..N {
        p.call(
            json!(id),
            "z3_text",
            json!({"script": ENDLESS}),
            Some(json!(id)),
        );
    }
    wait_jobs(&conf, server, "all jobs in squeue", |j| j.len() == N);
    let submitted = begin.elapsed();
    let status = std::fs::read_to_string(format!("/proc/{server}/status")).unwrap();
    let field = |k: &str| {
        status
            .lines()
            .find(|l| l.starts_with(k))
            .map_or(String::new(), |l| l[k.len()..].trim().to_owned())
    };
    let sruns = crate::common::children_named(server, "srun");
    let srun_rss_kb: u64 = sruns
        .iter()
        .filter_map(|pid| std::fs::read_to_string(format!("/proc/{pid}/status")).ok())
        .filter_map(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        })
        .sum();
    let srun_threads: usize = sruns
        .iter()
        .filter_map(|pid| std::fs::read_dir(format!("/proc/{pid}/task")).ok())
        .map(|d| d.count())
        .sum();
    eprintln!(
        "{N} calls in squeue after {submitted:?}; server: Threads {}, VmRSS {}, VmSize {}; \
         {} srun processes: {srun_threads} threads, {srun_rss_kb} kB RSS in all",
        field("Threads:"),
        field("VmRSS:"),
        field("VmSize:"),
        sruns.len()
    );
    let stop = Instant::now();
    p.close_stdin();
    p.drain_to_exit();
    let exited = stop.elapsed();
    wait_jobs(&conf, server, "all jobs gone", |j| j.is_empty());
    eprintln!(
        "stdin EOF -> server exited {exited:?}, all {N} jobs gone from squeue {:?}",
        stop.elapsed()
    );
}
