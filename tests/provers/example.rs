//! `examples/provers.json` end to end through `stdmcp serve`, with the real E prover, SPASS,
//! Z3 and CVC5, alone and raced in the portfolios `prove_tptp` and `solve_smt`.
//! Under CI (`CI` set) the provers must be installed; elsewhere the test says it is skipped.
#![allow(clippy::unwrap_used)]
#![allow(clippy::disallowed_methods)] // tests and benchmarks start bare programs as clients and controls

use std::process::Command;
use std::time::{Duration, Instant};

use super::portfolio::state_of;
use crate::common::{
    children_named, send_signal, serve_command, serve_manifest, temp_dir, wait_gone, Proc, PATIENCE,
};
use serde_json::{json, Value};

fn provers_installed() -> bool {
    let found = ["eprover", "z3", "SPASS", "cvc5"].iter().all(|p| {
        Command::new("sh")
            .arg("-c")
            .arg(format!("command -v {p}"))
            .output()
            .is_ok_and(|o| o.status.success())
    });
    if !found {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must install eprover, spass, z3 and cvc5 (see .ci/run)"
        );
        eprintln!("SKIPPED: a prover is not installed (apt install eprover spass z3 cvc5)");
    }
    found
}

fn serve() -> Proc {
    let provers = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/provers.json");
    let mut cmd = serve_command(std::path::Path::new(provers));
    cmd.env("STDMCP_HEARTBEAT_MS", "100");
    Proc::initialized(cmd, "2025-06-18")
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
    assert_eq!(text(&p.response(&json!(6))).trim(), "unsat\nVerdict: unsat");
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

fn problem(path: &str) -> String {
    std::fs::read_to_string(
        concat!(env!("CARGO_MANIFEST_DIR"), "/examples/problems/").to_owned() + path,
    )
    .unwrap()
}

#[test]
fn portfolios_settle_theorems_non_theorems_and_smt_scripts() {
    if !provers_installed() {
        return;
    }
    let mut p = serve();
    let cases = [
        (
            "prove_tptp",
            "problem",
            problem("tptp/socrates.p"),
            "Theorem",
        ),
        (
            "prove_tptp",
            "problem",
            problem("tptp/not_a_theorem.p"),
            "CounterSatisfiable",
        ),
        ("solve_smt", "script", problem("smt/unsat.smt2"), "unsat"),
        ("solve_smt", "script", problem("smt/sat.smt2"), "sat"),
    ];
    for (i, (tool, param, input, verdict)) in cases.into_iter().enumerate() {
        let id = json!(i + 1);
        p.call(id.clone(), tool, json!({ param: input }), None);
        let r = p.response(&id);
        let s = &r["result"]["structuredContent"];
        assert_eq!(s["verdict"], verdict, "{tool}: {r}");
        assert_eq!(r["result"].get("isError"), None, "{r}");
        let winner = s["winner"].as_str().unwrap();
        assert_eq!(state_of(&r, winner)["state"], "won");
        assert!(text(&r).contains(&format!("won with {verdict}")), "{r}");
    }
    // SPASS reads no tff: it rejects the problem while E proves it.
    let tff = "tff(p_type, type, p: $i > $o). tff(a, axiom, p(a)). tff(c, conjecture, p(a)).";
    p.call(json!(9), "prove_tptp", json!({ "problem": tff }), None);
    let r = p.response(&json!(9));
    assert_eq!(
        r["result"]["structuredContent"]["winner"], "eprover_text",
        "{r}"
    );
    assert_eq!(r["result"]["structuredContent"]["verdict"], "Theorem");
    let spass = state_of(&r, "spass_text")["state"].as_str().unwrap();
    assert!(["failed", "stopped"].contains(&spass), "{r}");
    // Single provers carry their verdict too.
    p.call(
        json!(10),
        "spass_file",
        json!({"file": "tptp/socrates.p"}),
        None,
    );
    let r = p.response(&json!(10));
    assert_eq!(
        r["result"]["structuredContent"]["verdict"], "Theorem",
        "{r}"
    );
    assert!(text(&r).ends_with("Verdict: Theorem\n"), "{r}");
    p.call(
        json!(11),
        "cvc5_file",
        json!({"file": "smt/sat.smt2"}),
        None,
    );
    let r = p.response(&json!(11));
    assert_eq!(r["result"]["structuredContent"]["verdict"], "sat", "{r}");
    p.finish();
}

#[test]
fn e_spass_and_the_portfolios_agree_on_the_szs_word_by_the_problems_form() {
    if !provers_installed() {
        return;
    }
    // SPASS says `Proof found` / `Completion found` whatever the form: the example's rules
    // read a problem with a conjecture as Theorem / CounterSatisfiable, one without (CNF) as
    // Unsatisfiable / Satisfiable, as E's SZS status line says.
    let mut p = serve();
    let mut id = 0;
    for (file, word) in [
        ("tptp/cnf_unsatisfiable.p", "Unsatisfiable"),
        ("tptp/cnf_satisfiable.p", "Satisfiable"),
        ("tptp/socrates.p", "Theorem"),
        ("tptp/not_a_theorem.p", "CounterSatisfiable"),
    ] {
        let runs = [
            ("eprover_file", json!({ "file": file })),
            ("spass_file", json!({ "file": file })),
            ("prove_tptp_file", json!({ "file": file })),
            ("eprover_text", json!({ "problem": problem(file) })),
            ("spass_text", json!({ "problem": problem(file) })),
            ("prove_tptp", json!({ "problem": problem(file) })),
        ];
        for (tool, args) in runs {
            id += 1;
            p.call(json!(id), tool, args, None);
            let r = p.response(&json!(id));
            let s = &r["result"]["structuredContent"];
            assert_eq!(s["verdict"], word, "{tool} on {file}: {r}");
            if tool.starts_with("prove") {
                let winner = s["winner"].as_str().unwrap();
                assert_eq!(state_of(&r, winner)["verdict"], word, "{r}");
            }
        }
    }
    p.finish();
}

#[test]
fn z3_answers_through_the_portfolio_after_an_error_about_an_option() {
    if !provers_installed() {
        return;
    }
    // Z3 4.8 refuses `:incremental` with an `(error …)`, answers `unsat` all the same and
    // exits 1; CVC5 refuses the `Real` a QF_LIA script declares and never answers.
    let script = "(set-option :incremental true)\n(set-logic QF_LIA)\n\
                  (declare-const x Int)\n(declare-const y Real)\n\
                  (assert (> x 2))\n(assert (< x 3))\n(check-sat)\n";
    let mut p = serve();
    p.call(json!(1), "z3_text", json!({ "script": script }), None);
    let r = p.response(&json!(1));
    let s = &r["result"]["structuredContent"];
    assert_eq!(
        (&s["verdict"], &s["exitCode"]),
        (&json!("unsat"), &json!(1)),
        "{r}"
    );
    assert!(text(&r).contains("unknown parameter 'incremental'"), "{r}");
    p.call(json!(2), "solve_smt", json!({ "script": script }), None);
    let r = p.response(&json!(2));
    let s = &r["result"]["structuredContent"];
    assert_eq!(r["result"].get("isError"), None, "{r}");
    assert_eq!(
        (&s["winner"], &s["verdict"]),
        (&json!("z3_text"), &json!("unsat")),
        "{r}"
    );
    assert_eq!(state_of(&r, "z3_text")["exitCode"], 1, "{r}");
    let cvc5 = state_of(&r, "cvc5_text")["state"].as_str().unwrap();
    assert!(["failed", "stopped"].contains(&cvc5), "{r}");
    p.finish();
}

/// `examples/provers.json` with its root made absolute and each portfolio's deadline
/// `seconds`, served from a temp dir.
fn serve_with_deadline(seconds: f64) -> Proc {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/provers.json");
    let mut m: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    m["roots"]["problems"] = json!(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/problems"));
    for t in m["tools"].as_array_mut().unwrap() {
        if t.get("portfolio").is_some() {
            t["timeoutSeconds"] = json!(seconds);
        }
    }
    let dir = temp_dir("provers-deadline");
    serve_manifest(&m, &dir, &[("STDMCP_HEARTBEAT_MS", "100")])
}

/// The `STDMCP_CALL` marker in `pid`'s environment.
fn marker(pid: i32) -> Option<String> {
    let env = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
    env.split(|b| *b == 0)
        .filter_map(|kv| std::str::from_utf8(kv).ok())
        .find_map(|kv| kv.strip_prefix("STDMCP_CALL=").map(str::to_owned))
}

/// Live processes whose environment carries one of `markers`.
fn carrying(markers: &[String]) -> Vec<i32> {
    crate::common::processes()
        .into_iter()
        .filter(|(pid, _, state, _)| {
            state != "Z" && marker(*pid).is_some_and(|m| markers.contains(&m))
        })
        .map(|p| p.0)
        .collect()
}

/// Waits until the server runs a process named each of `comms`; returns their pids.
fn provers_running(p: &Proc, comms: &[&str]) -> Vec<i32> {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let pids: Vec<Vec<i32>> = comms.iter().map(|c| children_named(p.pid(), c)).collect();
        if pids.iter().all(|v| !v.is_empty()) {
            return pids.concat();
        }
        assert!(Instant::now() < deadline, "{comms:?} never all ran");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn portfolios_on_problems_neither_prover_settles() {
    if !provers_installed() {
        return;
    }
    // The deadline: every member is stopped and the answer says so.
    let mut p = serve_with_deadline(2.0);
    for (i, (tool, param, file, comms)) in [
        ("prove_tptp", "problem", "tptp/hard.p", ["eprover", "SPASS"]),
        ("solve_smt", "script", "smt/hard.smt2", ["z3", "cvc5"]),
    ]
    .into_iter()
    .enumerate()
    {
        let id = json!(i + 1);
        p.call(id.clone(), tool, json!({ param: problem(file) }), None);
        let pids = provers_running(&p, &comms);
        let r = p.response(&id);
        assert_eq!(r["result"]["isError"], true, "{r}");
        for m in r["result"]["structuredContent"]["members"]
            .as_array()
            .unwrap()
        {
            assert_eq!(m["state"], "timed out", "{r}");
        }
        wait_gone(&pids);
    }
    p.finish();

    // A cancel mid-run: both provers die, the call is never answered.
    let mut p = serve();
    p.call(
        json!(1),
        "prove_tptp",
        json!({ "problem": problem("tptp/hard.p") }),
        Some(json!("t")),
    );
    let pids = provers_running(&p, &["eprover", "SPASS"]);
    p.recv_where("a heartbeat naming both provers", |m| {
        m["params"]["message"].as_str().is_some_and(|s| {
            s.contains("eprover_text: running") && s.contains("spass_text: running")
        })
    });
    p.notify("notifications/cancelled", json!({"requestId": 1}));
    wait_gone(&pids);
    let (rest, _) = p.finish();
    assert!(
        rest.iter().all(|m| m["id"] != json!(1)),
        "cancelled call answered"
    );

    // SIGKILL of the server mid-run: no process with a member's marker is left.
    let mut p = serve();
    p.call(
        json!(1),
        "solve_smt",
        json!({ "script": problem("smt/hard.smt2") }),
        None,
    );
    let pids = provers_running(&p, &["z3", "cvc5"]);
    let markers: Vec<String> = pids.iter().filter_map(|pid| marker(*pid)).collect();
    assert_eq!(markers.len(), 2, "each member has its own marker");
    assert_ne!(markers[0], markers[1]);
    send_signal(p.pid(), libc::SIGKILL);
    p.drain_to_exit();
    let deadline = Instant::now() + PATIENCE;
    while !carrying(&markers).is_empty() {
        assert!(
            Instant::now() < deadline,
            "left behind: {:?}",
            carrying(&markers)
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}
