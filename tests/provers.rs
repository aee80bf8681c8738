//! `examples/provers.json` end to end through `stdmcp serve`, with the real E prover and Z3.
//! Under CI (`CI` set) the provers must be installed; elsewhere the test says it is skipped.
#![allow(clippy::unwrap_used)]
#![allow(clippy::disallowed_methods)] // tests and benchmarks start bare programs as clients and controls

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::{children_named, stdmcp_bin, wait_gone, Proc};
use serde_json::{json, Value};

fn provers_installed() -> bool {
    let found = ["eprover", "z3"].iter().all(|p| {
        Command::new("sh")
            .arg("-c")
            .arg(format!("command -v {p}"))
            .output()
            .is_ok_and(|o| o.status.success())
    });
    if !found {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must install eprover and z3 (see .ci/run)"
        );
        eprintln!("SKIPPED: eprover or z3 is not installed (apt install eprover z3)");
    }
    found
}

fn serve() -> Proc {
    let mut cmd = Command::new(stdmcp_bin());
    cmd.args([
        "serve",
        "--config",
        concat!(env!("CARGO_MANIFEST_DIR"), "/examples/provers.json"),
    ])
    .env("STDMCP_HEARTBEAT_MS", "100");
    let mut p = Proc::start(cmd);
    p.initialize("2025-06-18");
    p
}

fn text(r: &Value) -> String {
    r["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn proofs_and_smt_answers() {
    if !provers_installed() {
        return;
    }
    let mut p = serve();
    p.call(
        json!(1),
        "eprover_file",
        json!({"file": "tptp/socrates.p"}),
        None,
    );
    let r = p.response(&json!(1));
    assert!(text(&r).contains("# SZS status Theorem"), "{r}");
    assert_eq!(r["result"].get("isError"), None);

    p.call(
        json!(2),
        "eprover_file",
        json!({"file": "tptp/not_a_theorem.p"}),
        None,
    );
    let r = p.response(&json!(2));
    assert!(text(&r).contains("# SZS status CounterSatisfiable"), "{r}");
    assert_eq!(r["result"]["structuredContent"]["exitCode"], 1);

    let inline =
        "fof(a, axiom, p(a)). fof(b, axiom, ![X]: (p(X) => q(X))). fof(c, conjecture, q(a)).";
    p.call(
        json!(3),
        "eprover_text",
        json!({"problem": inline, "proof": true}),
        None,
    );
    let r = p.response(&json!(3));
    assert!(
        text(&r).contains("# SZS status Theorem") && text(&r).contains("CNFRefutation"),
        "{r}"
    );

    p.call(json!(4), "z3_file", json!({"file": "smt/sat.smt2"}), None);
    let r = p.response(&json!(4));
    assert!(text(&r).starts_with("sat"), "{r}");
    p.call(json!(5), "z3_file", json!({"file": "smt/unsat.smt2"}), None);
    assert!(text(&p.response(&json!(5))).starts_with("unsat"));
    p.call(
        json!(6),
        "z3_text",
        json!({"script": "(declare-const x Int) (assert (> x 2)) (assert (< x 2)) (check-sat)"}),
        None,
    );
    assert_eq!(text(&p.response(&json!(6))).trim(), "unsat");
    p.call(
        json!(7),
        "z3_file",
        json!({"file": "../../Cargo.toml"}),
        None,
    );
    assert_eq!(p.response(&json!(7))["result"]["isError"], true);
    p.finish();
}

#[test]
fn long_runs_report_progress_and_cancel_kills_the_prover() {
    if !provers_installed() {
        return;
    }
    for (tool, file, comm) in [
        ("z3_file", "smt/hard.smt2", "z3"),
        ("eprover_file", "tptp/hard.p", "eprover"),
    ] {
        let mut p = serve();
        let args = if tool == "z3_file" {
            json!({"file": file, "timeout": 3600})
        } else {
            json!({"file": file, "cpu_limit": 3600})
        };
        p.call(json!(1), tool, args, Some(json!("long")));
        // Heartbeats arrive while the prover works; then it is cancelled.
        p.recv_where("a heartbeat", |m| m["params"]["progressToken"] == "long");
        if comm == "eprover" {
            // E block-buffers a pipe; run line-buffered, its lines reach the heartbeat.
            p.recv_where("a heartbeat carrying an E output line", |m| {
                m["params"]["progressToken"] == "long"
                    && m["params"]["message"]
                        .as_str()
                        .is_some_and(|s| s.starts_with('#'))
            });
        }
        // Line-buffered E runs under `stdbuf`, which execs it in place (same pid).
        let prover = children_named(p.pid(), comm);
        assert_eq!(prover.len(), 1, "{comm} should be running");
        p.notify("notifications/cancelled", json!({"requestId": 1}));
        let begin = Instant::now();
        wait_gone(&prover);
        assert!(begin.elapsed() < Duration::from_secs(10));
        let (rest, status) = p.finish();
        assert!(status.success());
        assert!(
            rest.iter().all(|m| m["id"] != json!(1)),
            "{tool}: cancelled call answered"
        );
    }
}
