//! `examples/repls.json` end to end through `stdmcp serve`, with the real python3, z3, Poly/ML
//! and SWI-Prolog: every behaviour of a session is checked for every kind. Under CI (`CI` set)
//! the programs must be installed; elsewhere a missing one is reported and its tests skipped.
#![allow(clippy::unwrap_used)]
#![allow(clippy::disallowed_methods)] // tests and benchmarks start bare programs as clients and controls

use std::process::Command;

use crate::common::sessions::{
    cancel, crash, deadline, example, example_with, idle_interrupt, idle_stop, interrupt,
    max_sessions, ok, persists_and_errors, serve, start, started_pid, wait_computing, Kind,
};
use crate::common::{send_signal, wait_gone};
use serde_json::json;

fn installed(program: &str) -> bool {
    let found = Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {program}"))
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must install {program} (see .ci/run)"
        );
        eprintln!("SKIPPED: {program} is not installed");
    }
    found
}

fn python() -> Kind {
    Kind {
        name: "python",
        define: "x = 41\ndef double(n):\n    return 2 * n",
        use_it: "double(x)",
        used: "82",
        fail: "1 / 0",
        error: "ZeroDivisionError: division by zero",
        runaway: "print('partial')\nwhile True: pass".into(),
        partial: "partial",
        after_runaway: "",
        interrupted: "KeyboardInterrupt",
        crash: "import os; os._exit(3)",
        crash_code: 3,
        fail_is_error: false,
    }
}

/// The pigeonhole problem of examples/problems, in its own scope after an echo.
fn z3_hard() -> String {
    let path = example("problems/smt/hard.smt2");
    let body: String = std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with("(set-logic"))
        .map(|l| format!("{l}\n"))
        .collect();
    format!("(push)\n(echo \"partial\")\n{body}")
}

fn z3() -> Kind {
    Kind {
        name: "z3",
        define: "(declare-const x Int)\n(assert (= x 41))",
        use_it: "(check-sat)\n(eval (* 2 x))",
        used: "sat\n82",
        fail: "(assert (> y 1))",
        error: "unknown constant y",
        runaway: z3_hard(),
        partial: "partial",
        after_runaway: "(pop)\n",
        interrupted: "unknown",
        crash: "(exit)",
        crash_code: 0,
        fail_is_error: false,
    }
}

fn poly() -> Kind {
    Kind {
        name: "poly",
        define: "val x = 41;\nfun double n = 2 * n;",
        use_it: "double x;",
        used: "val it = 82: int",
        fail: "double y;",
        error: "Value or constructor (y) has not been declared",
        runaway:
            "val () = print \"partial\\n\";\nfun loop (n : int) : int = loop (n + 1);\nloop 0;"
                .into(),
        partial: "partial",
        after_runaway: "",
        interrupted: "Interrupt",
        crash: "OS.Process.exit OS.Process.failure : unit;",
        crash_code: 1,
        fail_is_error: false,
    }
}

fn prolog() -> Kind {
    Kind {
        name: "prolog",
        define: "assertz(x(41)), assertz((double(N, D) :- D is 2 * N)).",
        use_it: "member(Z, [a, b]), x(X), double(X, Y).",
        used: "Y = 82",
        fail: "y(1).",
        error: "Unknown procedure: y/1",
        runaway: "format(\"partial~n\"), repeat, fail.".into(),
        partial: "partial",
        after_runaway: "",
        interrupted: "signal 2 (int)",
        crash: "halt(3).",
        crash_code: 3,
        fail_is_error: false,
    }
}

fn kinds() -> Vec<(Kind, &'static str)> {
    vec![
        (python(), "python3"),
        (z3(), "z3"),
        (poly(), "poly"),
        (prolog(), "swipl"),
    ]
}

/// Runs `scenario` on a fresh server over examples/repls.json for each installed kind.
fn each_kind(scenario: impl Fn(crate::common::Proc, &Kind)) {
    for (k, program) in kinds() {
        if installed(program) {
            scenario(serve(&example("repls.json"), None), &k);
        }
    }
}

#[test]
fn state_persists_and_errors_are_answers() {
    each_kind(|mut p, k| persists_and_errors(&mut p, k));
}

#[test]
fn interrupt_stops_a_runaway() {
    each_kind(|mut p, k| interrupt(&mut p, k));
}

#[test]
fn cancel_stops_a_runaway_without_an_answer() {
    each_kind(cancel);
}

#[test]
fn deadline_stops_a_runaway_with_partial_output() {
    each_kind(|mut p, k| deadline(&mut p, k));
}

#[test]
fn crash_is_reported_and_start_restarts() {
    each_kind(|mut p, k| crash(&mut p, k));
}

/// z3 ends on SIGINT between inputs (nothing to configure): `K_start` restarts it.
#[test]
fn an_interrupt_between_inputs_is_harmless() {
    each_kind(|mut p, k| {
        if k.name != "z3" {
            idle_interrupt(&mut p, k);
        }
    });
}

#[test]
fn max_sessions_refuses_clearly() {
    let manifest = example_with("repls.json", json!({"maxSessions": 1}));
    for (k, program) in kinds() {
        if installed(program) {
            max_sessions(&mut serve(&manifest, None), &k);
        }
    }
}

#[test]
fn idle_sessions_are_stopped() {
    let manifest = example_with("repls.json", json!({"idleSeconds": 1}));
    for (k, program) in kinds() {
        if installed(program) {
            idle_stop(&mut serve(&manifest, None), &k);
        }
    }
}

/// After SIGKILL of the server no session program remains, idle or computing.
#[test]
fn no_program_outlives_a_killed_server() {
    let mut p = serve(&example("repls.json"), None);
    let mut pids = Vec::new();
    for (i, (k, program)) in kinds().into_iter().enumerate() {
        if !installed(program) {
            continue;
        }
        let id = 100 * (i as i64 + 1);
        let start = format!("{}_start", k.name);
        let idle = ok(&mut p, id, &start, json!({"session": "idle"}));
        pids.push(started_pid(&idle));
        let busy = started_pid(&ok(&mut p, id + 1, &start, json!({"session": "busy"})));
        pids.push(busy);
        let input = json!({"session": "busy", "input": k.runaway});
        p.call(json!(id + 2), &format!("{}_send", k.name), input, None);
        wait_computing(busy);
    }
    assert!(!pids.is_empty());
    send_signal(p.pid(), 9);
    p.wait_exit();
    wait_gone(&pids);
}

#[test]
fn greetings_are_clean() {
    each_kind(|mut p, k| {
        let greeting = start(&mut p, 1, k);
        for noise in [">>> ", "?- ", "Action", "Poly/ML 5", "\u{1b}["] {
            assert!(!greeting.contains(noise), "{}: {greeting:?}", k.name);
        }
    });
}
