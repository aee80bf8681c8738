//! The forms real proof files use (README "Proof files"): non-ASCII text, HOL4's newer theory
//! header and its older theorem forms (proved through the cursor, written back in their own
//! form, built by Holmake), Rocq's `Abort.`, an interrupted block taken back before it is
//! loaded again; and developments nobody here wrote: a directory of HOL4's own theories and a
//! file of Rocq's standard library, every theorem OK.
#![allow(clippy::disallowed_methods)] // the tests run Holmake and coqc themselves, as a user would
#![allow(clippy::unwrap_used)]

use std::path::Path;

use serde_json::{json, Value};

use crate::common::cursor::{
    call_through, has_all, holmake, ok, rocq_installed, serve_cursor, step, verdicts, write_files,
};
use crate::common::sessions::{hol_bin, is_error, text};
use crate::common::{temp_dir, Proc};

fn write(root: &Path, rel: &str, text: &str) {
    write_files(root, &[(rel, text)]);
}

fn hol(root: &Path, bin: &Path) -> Proc {
    serve_cursor("hol4.json", root, Some(bin), |k| {
        k["cursor"]["background"] = json!({"afterSeconds": 5});
    })
}

fn rocq(root: &Path, edit: impl Fn(&mut Value)) -> Proc {
    serve_cursor("rocq.json", root, None, |k| {
        k["cursor"]["background"] = json!({"afterSeconds": 5});
        edit(k);
    })
}

/// Every theorem of a check is OK (and the check is no error).
fn all_ok(r: &Value) -> usize {
    assert!(!is_error(r), "{r}");
    let theorems = r["result"]["structuredContent"]["theorems"]
        .as_array()
        .unwrap();
    for t in theorems {
        assert_eq!(t["verdict"], json!("OK"), "{t}");
    }
    theorems.len()
}

#[test]
fn hol4_non_ascii_text_the_theory_header_and_the_older_forms() {
    let Some(bin) = hol_bin() else { return };
    let root = temp_dir("hol-forms");
    write(
        &root,
        "f/formsScript.sml",
        "(* Ünïcödé in a comment: ∀ é ‘x’ *)\nTheory forms\nAncestors\n  arithmetic list[qualified]\nLibs\n  quotientLib\n\n\
         val s = \"ünïcödé ∀ \\\" ‘\";\nval q = define_quotient_types;\n\n\
         Theorem uni:\n  ∀n:num. n + 0 = n ∧ (λx. x) n = n\nProof\n  simp []\nQED\n\n\
         val st = store_thm (\"st\", ``!n:num. n * 1 = n``,\n  cheat);\n\n\
         val qst = Q.store_thm (\"qst\", `∀l:num list. LENGTH (l ++ []) = LENGTH l`, cheat);\n\n\
         val pr = prove (``!x:num. x = x``, simp []);\n\n\
         Theorem one_line = arithmeticTheory.ADD_COMM\n",
    );
    let mut p = hol(&root, &bin);
    let r = call_through(&mut p, 1, "hol_check", json!({"file": "f/formsScript.sml"}));
    let t = text(&r);
    assert!(!t.contains("FAILED"), "the header loads quotientLib: {t}");
    let verdicts: Vec<(String, String)> =
        verdicts(&r).into_iter().map(|(n, v, _)| (n, v)).collect();
    let v = |a: &str, b: &str| (a.to_owned(), b.to_owned());
    assert_eq!(
        verdicts,
        [
            v("uni", "OK"),
            v("st", "placeholder"),
            v("qst", "placeholder"),
            v("pr", "OK"),
            v("one_line", "OK")
        ],
        "{t}"
    );
    // The two older forms with a cheat are proved through the cursor and written back.
    let init = ok(
        &mut p,
        2,
        "hol_cursor_init",
        json!({"file": "f/formsScript.sml"}),
    );
    has_all(&init, &["Goal of st", "n * 1 = n"]);
    step(&mut p, 3, "hol", "simp []");
    let done = ok(&mut p, 4, "hol_cursor_complete", json!({}));
    assert!(done.contains("Goal of qst"), "{done}");
    step(&mut p, 5, "hol", "simp []");
    let done = ok(&mut p, 6, "hol_cursor_complete", json!({}));
    assert!(done.contains("No placeholders left"), "{done}");
    let sml = std::fs::read_to_string(root.join("f/formsScript.sml")).unwrap();
    assert!(
        sml.contains("val st = store_thm (\"st\", ``!n:num. n * 1 = n``,\n  simp []);"),
        "{sml}"
    );
    assert!(sml.contains("val qst = Q.store_thm (\"qst\", `∀l:num list. LENGTH (l ++ []) = LENGTH l`,\n  simp []);"), "{sml}");
    holmake(&bin, &root.join("f"));
}

#[test]
fn rocq_non_ascii_text_an_aborted_theorem_and_a_failed_command_after_a_comment() {
    if !rocq_installed() {
        return;
    }
    let root = temp_dir("rocq-forms");
    write(
        &root,
        "A.v",
        "(* Ünïcödé ∀ é *)\nRequire Import String Arith.\nOpen Scope string_scope.\n\
         Definition s := \"ünï ∀\".\nNotation \"x ⊕ y\" := (x + y) (at level 50).\n\
         Theorem gone : False.\nProof. idtac. Abort.\n\
         Lemma after_gone : forall n : nat, n ⊕ 0 = n.\nProof. intros n. apply Nat.add_0_r. Qed.\n\
         Lemma no_proof_keyword : True.\n  exact I.\nQed.\n\
         (* a comment ∀\n   before a command that fails *)\nCheck no_such_thing.\n",
    );
    let mut p = rocq(&root, |_| {});
    let r = call_through(&mut p, 1, "rocq_check", json!({"file": "A.v"}));
    let t = text(&r);
    assert!(is_error(&r), "a failed command: {t}");
    assert!(t.contains("gone (lines 6-7): abandoned"), "{t}");
    assert!(
        t.contains("after_gone (lines 8-9): OK, proved outright"),
        "{t}"
    );
    assert!(
        t.contains("no_proof_keyword (lines 10-12): OK, proved outright"),
        "{t}"
    );
    assert!(t.contains("2 OK (2 proved outright, 0 trusting a placeholder, axiom or oracle), 0 failed, 0 placeholders, 1 abandoned."), "{t}");
    let sc = &r["result"]["structuredContent"];
    let verdicts: Vec<&str> = sc["theorems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["verdict"].as_str().unwrap())
        .collect();
    assert_eq!(verdicts, ["abandoned", "OK", "OK"], "{sc}");
    assert_eq!(sc["summary"]["abandoned"], json!(1), "{sc}");
    assert_eq!(sc["outline"][0]["abandoned"], json!(true), "{sc}");
    // The failed command is named by its code and its line, not by the comment before it.
    let failed = &sc["failedCommands"];
    assert_eq!(failed.as_array().map(Vec::len), Some(1), "{sc}");
    assert_eq!(failed[0]["name"], json!("Check no_such_thing."), "{sc}");
    assert_eq!(failed[0]["lines"][0], json!(15), "{sc}");
    assert!(
        failed[0]["error"]
            .as_str()
            .unwrap()
            .contains("no_such_thing"),
        "{sc}"
    );
}

/// The sentinel that ends every answer made slow (a computation before it): a cancel during
/// an answer lands after the block that answer is for has been run. The check stays in the
/// foreground (its heartbeats go on) however slow the machine is.
fn slow_sentinel(k: &mut Value) {
    k["answer"]["command"] =
        json!("Eval vm_compute in (let fix f n := match n with 0 => 0 | S k => f k end in f (Nat.pow 2 22)). Locate {marker}.");
    k["cursor"]["background"] = json!({"afterSeconds": 3600});
}

#[test]
fn a_block_interrupted_after_it_completed_is_taken_back_before_it_is_loaded_again() {
    if !rocq_installed() {
        return;
    }
    let root = temp_dir("rocq-rollback");
    write(
        &root,
        "S.v",
        "Lemma cs_first : True.\nProof. exact I. Qed.\nLemma cs_slow : True.\nProof. exact I. Qed.\nLemma cs_open : True.\nProof.\nAdmitted.\n",
    );
    let mut p = rocq(&root, slow_sentinel);
    let token = json!("t1");
    p.call(
        json!(1),
        "rocq_check",
        json!({"file": "S.v"}),
        Some(token.clone()),
    );
    // Cancelled while the answer of cs_slow is awaited: cs_slow is defined by then.
    p.recv_where("a heartbeat on cs_slow", |v| {
        v["params"]["progressToken"] == token
            && v["params"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("cs_slow"))
    });
    p.notify("notifications/cancelled", json!({"requestId": 1}));
    let r = call_through(&mut p, 2, "rocq_check", json!({"file": "S.v"}));
    let t = text(&r);
    assert!(!is_error(&r), "{t}");
    assert!(
        t.contains("Took back what the interrupted cs_slow left"),
        "{t}"
    );
    assert!(t.contains("cs_slow (lines 3-4): OK"), "{t}");
    assert!(!t.contains("already exists"), "{t}");
}

#[test]
fn a_directory_of_hol4s_own_theories_checks_every_theorem_ok() {
    let Some(bin) = hol_bin() else { return };
    let root = temp_dir("hol-sort");
    let src = bin.join("../src/sort");
    for f in [
        "sortingScript.sml",
        "mergesortScript.sml",
        "ternaryComparisonsScript.sml",
        "permLib.sig",
        "permLib.sml",
        "Holmakefile",
    ] {
        std::fs::create_dir_all(root.join("sort")).unwrap();
        std::fs::copy(src.join(f), root.join("sort").join(f)).unwrap();
    }
    let mut p = hol(&root, &bin);
    let mut total = 0;
    for (i, f) in [
        "mergesortScript.sml",
        "ternaryComparisonsScript.sml",
        "sortingScript.sml",
    ]
    .iter()
    .enumerate()
    {
        let id = i64::try_from(i).unwrap() + 1;
        let r = call_through(
            &mut p,
            id,
            "hol_check",
            json!({"file": format!("sort/{f}")}),
        );
        total += all_ok(&r);
    }
    assert!(total > 150, "{total} theorems checked");
}

#[test]
fn a_file_of_the_rocq_standard_library_checks_every_theorem_ok() {
    if !rocq_installed() {
        return;
    }
    let lib = std::process::Command::new("coqc")
        .arg("-where")
        .output()
        .unwrap();
    let lib = String::from_utf8_lossy(&lib.stdout).trim().to_owned();
    let root = temp_dir("rocq-stdlib");
    for f in ["Arith/Between.v", "Arith/Wf_nat.v"] {
        let name = Path::new(f).file_name().unwrap();
        std::fs::copy(Path::new(&lib).join("theories").join(f), root.join(name)).unwrap();
    }
    let mut p = rocq(&root, |_| {});
    let between = call_through(&mut p, 1, "rocq_check", json!({"file": "Between.v"}));
    let wf = call_through(&mut p, 2, "rocq_check", json!({"file": "Wf_nat.v"}));
    assert!(all_ok(&between) + all_ok(&wf) > 30);
}

#[test]
fn hol4_a_failed_open_or_definition_is_named_by_the_theorems_failing_after_it() {
    let Some(bin) = hol_bin() else { return };
    let root = temp_dir("hol-causes");
    write_files(
        &root,
        &[
            (
                "o/oScript.sml",
                "open HolKernel Parse boolLib bossLib;\nopen noSuchTheory;\nval _ = new_theory \"o\";\n\n\
                 Theorem uses_it:\n  !n:num. n = n\nProof\n  simp [noSuchTheory.thm]\nQED\n\n\
                 Theorem fine:\n  !n:num. n = n\nProof\n  simp []\nQED\n\nval _ = export_theory();\n",
            ),
            (
                "d/dScript.sml",
                "Theory d\nAncestors arithmetic\n\nDefinition bad_def:\n  bad (n:num) = bad (n + 1) + 1\nEnd\n\n\
                 Theorem uses_bad:\n  !n. bad n > n\nProof\n  simp [bad_def]\nQED\n\n\
                 Theorem fine:\n  !n:num. n = n\nProof\n  simp []\nQED\n",
            ),
        ],
    );
    let mut p = hol(&root, &bin);
    let r = call_through(&mut p, 1, "hol_check", json!({"file": "o/oScript.sml"}));
    let t = text(&r);
    assert!(t.starts_with("FAILED open noSuchTheory; (line 2): "), "{t}");
    assert!(
        t.contains(
            "FAILED uses_it (lines 5-9): after the failed command open noSuchTheory; (line 2) ("
        ),
        "{t}"
    );
    assert!(t.contains("fine (lines 11-15): OK"), "{t}");
    assert!(
        !root.join("o/oTheory.sig").exists(),
        "export_theory is not sent"
    );
    let r = call_through(&mut p, 2, "hol_check", json!({"file": "d/dScript.sml"}));
    let t = text(&r);
    assert!(t.contains("\nbad_def (lines 4-6): FAILED: "), "{t}");
    assert!(
        t.contains("FAILED uses_bad (lines 8-12): after the failed definition bad_def (line 4) ("),
        "{t}"
    );
    let failure = &r["result"]["structuredContent"]["theorems"][1]["failure"];
    assert_eq!(
        failure["afterFailed"],
        json!({"kind": "definition", "name": "bad_def", "line": 4}),
        "{failure}"
    );
}
