//! Proof projects (README "Proof files: projects"): a three-file Rocq project and a
//! two-directory HOL4 project, nothing built, opened through the cursor as their authors build
//! them: the dependencies built first (heartbeats name them), rebuilt after an edit, a build
//! error as the answer; a failed command reported where it is.
#![allow(clippy::disallowed_methods)] // the tests run Holmake themselves, as a user would
#![allow(clippy::unwrap_used)]

use std::path::Path;

use serde_json::{json, Value};

use crate::common::cursor::{
    call_through, fails, has_all, holmake, ok, rocq_installed, serve_cursor, step,
    write_files as write,
};
use crate::common::sessions::{hol_bin, is_error, text};
use crate::common::{temp_dir, Proc};

/// Calls `tool` with a progress token; the response and every heartbeat's message on the way.
fn call_watching(p: &mut Proc, id: i64, tool: &str, args: Value) -> (Value, Vec<String>) {
    let token = format!("w{id}");
    p.call(json!(id), tool, args, Some(json!(token)));
    let mut said = Vec::new();
    loop {
        let v = p.recv();
        if v["id"] == json!(id) {
            return (v, said);
        }
        if v["params"]["progressToken"] == json!(token) {
            if let Some(m) = v["params"]["message"].as_str() {
                said.push(m.to_owned());
            }
        }
    }
}

/// The Rocq example over `root`, heartbeats every 100 ms, no call turned into a job.
fn rocq(root: &Path) -> Proc {
    serve_cursor("rocq.json", root, None, |k| {
        k["cursor"].as_object_mut().unwrap().remove("background");
    })
}

/// A lemma whose proof takes about half a second: builds are seen by a heartbeat.
const SLOW: &str = "Lemma slow_enough : True. Proof. do 400000 idtac. exact I. Qed.\n";

#[test]
fn a_rocq_project_is_built_before_it_is_loaded_and_rebuilt_after_an_edit() {
    if !rocq_installed() {
        return;
    }
    let root = temp_dir("rocq-project");
    let a = format!("Definition even (n : nat) := Nat.even n.\n{SLOW}");
    let b = format!(
        "From P Require Export A.\nLemma b1 : even 2 = true.\nProof. reflexivity. Qed.\n{SLOW}"
    );
    write(
        &root,
        &[
            ("lf/_CoqProject", "-Q . P\n"),
            ("lf/A.v", &a),
            ("lf/B.v", &b),
            (
                "lf/C.v",
                "From P Require Import B.\nLemma c1 : even 4 = true.\nProof.\nAdmitted.\n",
            ),
        ],
    );
    let mut p = rocq(&root);
    let (r, said) = call_watching(&mut p, 1, "rocq_cursor_init", json!({"file": "lf/C.v"}));
    let t = text(&r);
    assert!(!is_error(&r), "{r}");
    assert!(
        t.contains("Built 2 of its 2 dependencies in the project: lf/A.v, lf/B.v."),
        "{t}"
    );
    has_all(&t, &["Goal of c1", "even 4 = true"]);
    assert!(
        said.iter().any(|m| m.contains("building 1/2: lf/A.v")),
        "{said:?}"
    );
    assert!(
        said.iter().any(|m| m.contains("building 2/2: lf/B.v")),
        "{said:?}"
    );
    assert!(root.join("lf/A.vo").is_file() && root.join("lf/B.vo").is_file());
    // Nothing changed: nothing is built again.
    let again = ok(&mut p, 2, "rocq_check", json!({"file": "lf/C.v"}));
    assert!(
        again.contains("Its 2 dependencies in the project are up to date."),
        "{again}"
    );
    // A edited: A and B (which requires it) are built again.
    write(&root, &[("lf/A.v", &format!("{a}Definition more := 1.\n"))]);
    let rebuilt = ok(&mut p, 3, "rocq_check", json!({"file": "lf/C.v"}));
    assert!(
        rebuilt.contains("Built 2 of its 2 dependencies in the project: lf/A.v, lf/B.v."),
        "{rebuilt}"
    );
    // A syntax error in A is the answer: the file, the line and the error.
    write(
        &root,
        &[("lf/A.v", &format!("{a}Definition broken := .\n"))],
    );
    let e = fails(&mut p, 4, "rocq_cursor_init", json!({"file": "lf/C.v"}));
    assert!(e.starts_with("building lf/A.v failed"), "{e}");
    assert!(e.contains("A.v, line 3: Error: Syntax error"), "{e}");
    assert!(e.contains("the `output` tool reads it"), "{e}");
}

#[test]
fn a_hol4_project_of_two_directories_is_built_through_its_includes() {
    let Some(bin) = hol_bin() else { return };
    let root = temp_dir("hol-project");
    let a = "open HolKernel Parse boolLib bossLib;\nval _ = new_theory \"a\";\n\
        Theorem a_thm:\n  !n:num. n + 0 = n\nProof\n  simp []\nQED\nval _ = export_theory();\n";
    write(
        &root,
        &[
            ("A/aScript.sml", a),
            ("B/Holmakefile", "INCLUDES = ../A\n"),
            (
                "B/bScript.sml",
                "open HolKernel Parse boolLib bossLib aTheory;\nval _ = new_theory \"b\";\n\
                 Theorem b_thm:\n  !n:num. 0 + n = n + 0\nProof\n  cheat\nQED\nval _ = export_theory();\n",
            ),
        ],
    );
    let mut p = serve_cursor("hol4.json", &root, Some(&bin), |k| {
        k["cursor"].as_object_mut().unwrap().remove("background");
    });
    let (r, said) = call_watching(
        &mut p,
        1,
        "hol_cursor_init",
        json!({"file": "B/bScript.sml"}),
    );
    let t = text(&r);
    assert!(!is_error(&r), "{r}");
    assert!(
        t.contains("Built 1 of its 1 dependencies in the project: A/aScript.sml."),
        "{t}"
    );
    assert!(
        said.iter()
            .any(|m| m.contains("building 1/1: A/aScript.sml")),
        "{said:?}"
    );
    assert!(t.contains("Goal of b_thm"), "{t}");
    let proved = step(&mut p, 2, "hol", "simp [a_thm]");
    assert!(proved.contains("The goal is proved"), "{proved}");
    ok(&mut p, 3, "hol_cursor_complete", json!({}));
    // A edited: built again before B is checked.
    write(
        &root,
        &[(
            "A/aScript.sml",
            &a.replace("QED\n", "QED\nTheorem a2:\n  T\nProof\n  simp []\nQED\n"),
        )],
    );
    let rebuilt = ok(&mut p, 4, "hol_check", json!({"file": "B/bScript.sml"}));
    assert!(
        rebuilt.contains("Built 1 of its 1 dependencies"),
        "{rebuilt}"
    );
    assert!(rebuilt.contains("b_thm (lines 3-7): OK"), "{rebuilt}");
    // A syntax error in A: the answer names the file, the line and the error.
    write(
        &root,
        &[(
            "A/aScript.sml",
            &a.replace("val _ = new_theory", "val x = 1 +;\nval _ = new_theory"),
        )],
    );
    let e = fails(&mut p, 5, "hol_check", json!({"file": "B/bScript.sml"}));
    assert!(e.starts_with("building A/aScript.sml failed"), "{e}");
    has_all(&e, &["A/aScript.sml, line 2:", "parse error"]);
    // Holmake builds B as the cursor left it.
    write(&root, &[("A/aScript.sml", a)]);
    holmake(&bin, &root.join("B"));
}

#[test]
fn a_failed_command_is_reported_first_and_the_theorems_after_it_say_so() {
    if !rocq_installed() {
        return;
    }
    let root = temp_dir("rocq-require");
    write(
        &root,
        &[(
            "R.v",
            "From Nowhere Require Import Basics.\nDefinition x := 1.\n\
             Lemma uses : even 2 = true.\nProof. reflexivity. Qed.\nLemma fine : x = 1.\nProof.\nAdmitted.\n",
        )],
    );
    let mut p = rocq(&root);
    let r = call_through(&mut p, 1, "rocq_check", json!({"file": "R.v"}));
    assert!(is_error(&r), "{r}");
    let t = text(&r);
    let first = t.lines().next().unwrap();
    assert!(
        first.starts_with("FAILED From Nowhere Require Import Basics. (line 1): Error:"),
        "{t}"
    );
    assert!(
        t.contains("FAILED uses (lines 3-4): after the failed command From Nowhere Require Import Basics. (line 1)"),
        "{t}"
    );
    assert_eq!(
        t.matches("Cannot find a physical path").count(),
        2,
        "said once, with its detail: {t}"
    );
    let sc = &r["result"]["structuredContent"];
    assert_eq!(sc["failedCommands"][0]["lines"], json!([1, 1]), "{sc}");
    assert_eq!(sc["failedCommands"][0]["kind"], json!("command"), "{sc}");
    assert_eq!(
        sc["theorems"][0]["failure"]["afterFailed"],
        json!({"kind": "command", "name": "From Nowhere Require Import Basics.", "line": 1}),
        "{sc}"
    );
    let init = ok(&mut p, 2, "rocq_cursor_init", json!({"file": "R.v"}));
    assert!(
        init.contains("FAILED From Nowhere Require Import Basics. (line 1)"),
        "{init}"
    );
    assert!(init.contains("Goal of fine"), "{init}");
}
