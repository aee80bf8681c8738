//! The toolkit at the proof (README "Proof files"), with real HOL4 and a real coqtop, each
//! checked field by field: a try of several tactics (one proves, one errs, one loops past its
//! timeout, one leaves two goals) after which the next step acts on the goal as it was; the
//! step where a three-step proof breaks and the goal it faced; what a theorem trusts (a cheat,
//! an `Admitted`, nothing); search of the loaded file and of the library.
#![allow(clippy::unwrap_used)]

use serde_json::{json, Value};

use crate::common::cursor::{
    call_through, has_all, ok, rocq_installed, serve_cursor, verdicts, write_files,
};
use crate::common::sessions::{hol_bin, is_error, text};
use crate::common::{temp_dir, Proc};

const HOL_FILE: &str = "Theory t\nAncestors arithmetic\n\n\
Theorem helper:\n  !n:num. n + 0 = n\nProof\n  cheat\nQED\n\n\
Theorem uses_helper:\n  !n:num. (n + 0) + 0 = n\nProof\n  simp [helper]\nQED\n\n\
Theorem outright:\n  !n:num. 0 + n = n\nProof\n  simp []\nQED\n\n\
Theorem three:\n  !a b:num. a + b = b + a /\\ a = a\nProof\n  rpt gen_tac >> irule EQ_REFL >> simp []\nQED\n\n\
Theorem target:\n  !n m:num. n + m = m + n /\\ n = n\nProof\n  cheat\nQED\n";

const ROCQ_FILE: &str = "Require Import Arith.\n\
Lemma helper : forall n : nat, n + 0 = n.\nAdmitted.\n\
Lemma uses_helper : forall n : nat, (n + 0) + 0 = n.\nProof. intros n. rewrite helper. apply helper. Qed.\n\
Lemma outright : forall n : nat, 0 + n = n.\nProof. intros n. reflexivity. Qed.\n\
Lemma three : forall a b : nat, a + b = b + a.\nProof. intros a b. reflexivity. apply Nat.add_comm. Qed.\n\
Lemma target : forall n m : nat, n + m = m + n /\\ n = n.\nProof.\nAdmitted.\n";

/// Serves the example manifest `file` over a root holding `rel` with `text`.
fn serve(file: &str, rel: &str, text: &str, bin: Option<&std::path::Path>) -> Proc {
    let root = temp_dir("toolkit");
    write_files(&root, &[(rel, text)]);
    serve_cursor(file, &root, bin, |k| {
        k["cursor"]["background"] = json!({"afterSeconds": 600});
    })
}

/// Both files' verdicts: `uses_helper` trusts `helper`'s placeholder as `trusted` says.
fn assert_verdicts(r: &Value, trusted: Value) {
    let s = |x: &str| x.to_owned();
    assert_eq!(
        verdicts(r),
        [
            (s("helper"), s("placeholder"), Value::Null),
            (s("uses_helper"), s("OK"), trusted),
            (s("outright"), s("OK"), json!([])),
            (s("three"), s("FAILED"), Value::Null),
            (s("target"), s("placeholder"), Value::Null),
        ]
    );
}

/// Both files' counts: two OK (one outright, one trusting), one failed, two placeholders.
fn assert_summary(r: &Value) {
    assert_eq!(
        r["result"]["structuredContent"]["summary"],
        json!({"ok": 2, "provedOutright": 1, "trusting": 1, "failed": 1, "placeholders": 2, "abandoned": 0})
    );
}

/// The failure of theorem `three`: named step, the tactic, its line, the goal it faced.
fn assert_three_breaks_at_its_second_step(r: &Value, line: u64, tactic: &str, faced: &str) {
    let sc = &r["result"]["structuredContent"];
    let three = sc["theorems"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == json!("three"))
        .unwrap();
    let at = &three["failure"]["brokenAt"];
    assert_eq!(at["step"], json!(2), "{at}");
    assert_eq!(at["of"], json!(3), "{at}");
    assert_eq!(at["line"], json!(line), "{at}");
    assert_eq!(at["tactic"], json!(tactic), "{at}");
    assert!(at["goalsFaced"].as_str().unwrap().contains(faced), "{at}");
    assert!(!at["error"].as_str().unwrap().is_empty(), "{at}");
    let t = text(r);
    assert!(
        t.contains(&format!(
            "it breaks at step 2 of 3 (line {line}: `{tactic}`)"
        )),
        "{t}"
    );
}

/// `K_state_at` at the step where `three` breaks: the goals before it, and after it none.
fn assert_state_at_the_failing_step(
    p: &mut Proc,
    tool: &str,
    (file, line, column): (&str, u64, u64),
    faced: &str,
) {
    let r = call_through(
        p,
        20,
        tool,
        json!({"file": file, "line": line, "column": column}),
    );
    assert!(!is_error(&r), "{r}");
    let sc = &r["result"]["structuredContent"];
    assert_eq!(sc["step"]["index"], json!(2), "{sc}");
    assert!(sc["before"].as_str().unwrap().contains(faced), "{sc}");
    assert!(
        sc["after"]
            .as_str()
            .unwrap()
            .starts_with("(none: the step fails: "),
        "{sc}"
    );
}

/// The try's per-tactic results as (tactic, result, goals left).
fn tried(r: &Value) -> Vec<(String, String, Value)> {
    let sc = &r["result"]["structuredContent"];
    assert_eq!(sc["goalUnchanged"], json!(true), "{sc}");
    assert_eq!(sc["steps"], json!([]), "nothing recorded: {sc}");
    // Nothing loaded again into the same program: the only failure is the file's own.
    let failed: Vec<&Value> = sc["failed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| &f["name"])
        .collect();
    assert_eq!(failed, [&json!("three")], "{sc}");
    sc["tactics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["tactic"].as_str().unwrap().to_owned(),
                t["result"].as_str().unwrap().to_owned(),
                t["goalsLeft"].clone(),
            )
        })
        .collect()
}

fn row(tactic: &str, result: &str, left: Value) -> (String, String, Value) {
    (tactic.to_owned(), result.to_owned(), left)
}

/// The search's answer, which must name every one of `names`.
fn search_finds(p: &mut Proc, id: i64, tool: &str, query: &str, names: &[&str]) {
    let r = call_through(p, id, tool, json!({"query": query}));
    assert!(!is_error(&r), "{r}");
    let results = r["result"]["structuredContent"]["results"]
        .as_str()
        .unwrap();
    for n in names {
        assert!(results.contains(n), "{query}: {n} not in {results}");
    }
    assert_eq!(text(&r).trim(), results.trim(), "the text is the results");
}

#[test]
fn hol4_check_try_and_search_at_the_proof() {
    let Some(bin) = hol_bin() else { return };
    let mut p = serve("hol4.json", "T/tScript.sml", HOL_FILE, Some(&bin));
    let r = call_through(&mut p, 1, "hol_check", json!({"file": "T/tScript.sml"}));
    assert!(is_error(&r), "three fails: {r}");
    assert_verdicts(&r, json!([{"kind": "oracle", "name": "cheat"}]));
    assert_summary(&r);
    let t = text(&r);
    assert!(
        t.contains("uses_helper (lines 10-14): OK, but it trusts oracle cheat"),
        "{t}"
    );
    assert!(
        t.contains("outright (lines 16-20): OK, proved outright"),
        "{t}"
    );
    assert_three_breaks_at_its_second_step(&r, 25, "irule EQ_REFL", "a + b = b + a ∧ a = a");
    assert_state_at_the_failing_step(
        &mut p,
        "hol_state_at",
        ("T/tScript.sml", 25, 18),
        "a + b = b + a ∧ a = a",
    );

    ok(
        &mut p,
        2,
        "hol_cursor_init",
        json!({"file": "T/tScript.sml", "start_at": "target"}),
    );
    let loops = "rpt (CHANGED_TAC ALL_TAC ORELSE ALL_TAC)";
    let r = call_through(
        &mut p,
        3,
        "hol_cursor_try",
        json!({"tactics": ["rpt strip_tac", "simp []", "irule no_such_theorem", loops], "timeout": 2}),
    );
    assert!(!is_error(&r), "{r}");
    assert_eq!(
        tried(&r),
        [
            row("rpt strip_tac", "goals", json!(2)),
            row("simp []", "proves the goal", json!(0)),
            row("irule no_such_theorem", "error", Value::Null),
            row(loops, "timeout", Value::Null),
        ]
    );
    let t = text(&r);
    assert!(t.contains("`simp []` proves the goal."), "{t}");
    // The next step acts on the goal as it was before the try: one goal, not two.
    let after = ok(
        &mut p,
        4,
        "hol_cursor_step",
        json!({"tactic": "rpt gen_tac"}),
    );
    has_all(&after, &["1 subgoal", "n + m = m + n ∧ n = n"]);

    search_finds(&mut p, 5, "hol_search", "helper", &["(\"t\", \"helper\")"]);
    search_finds(
        &mut p,
        6,
        "hol_search",
        "ADD_COMM",
        &["(\"arithmetic\", \"ADD_COMM\")"],
    );
    search_finds(
        &mut p,
        7,
        "hol_search",
        "_ + 0 = _",
        &["ADD_0", "(\"t\", \"helper\")"],
    );
}

#[test]
fn rocq_check_try_and_search_at_the_proof() {
    if !rocq_installed() {
        return;
    }
    let mut p = serve("rocq.json", "T.v", ROCQ_FILE, None);
    let r = call_through(&mut p, 1, "rocq_check", json!({"file": "T.v"}));
    assert!(is_error(&r), "three fails: {r}");
    assert_verdicts(&r, json!([{"kind": "axiom", "name": "helper"}]));
    assert_summary(&r);
    let t = text(&r);
    assert!(
        t.contains("uses_helper (lines 4-5): OK, but it trusts axiom helper"),
        "{t}"
    );
    assert_three_breaks_at_its_second_step(&r, 9, "reflexivity.", "a + b = b + a");
    assert_state_at_the_failing_step(&mut p, "rocq_state_at", ("T.v", 9, 20), "a + b = b + a");

    // three's later sentences defined it anyway: taken back, it is loaded again admitted.
    let init = ok(
        &mut p,
        2,
        "rocq_cursor_init",
        json!({"file": "T.v", "start_at": "target"}),
    );
    assert!(
        init.contains("loaded again with its proof left to later"),
        "{init}"
    );
    let loops = "do 1000000000 idtac.";
    let several = "intros n m. split; [apply Nat.add_comm | reflexivity].";
    let r = call_through(
        &mut p,
        3,
        "rocq_cursor_try",
        json!({"tactics": ["split.", several, "apply no_such_lemma.", loops], "timeout": 2}),
    );
    assert!(!is_error(&r), "{r}");
    assert_eq!(
        tried(&r),
        [
            row("split.", "goals", json!(2)),
            row(several, "proves the goal", json!(0)),
            row("apply no_such_lemma.", "error", Value::Null),
            row(loops, "timeout", Value::Null),
        ]
    );
    let after = ok(
        &mut p,
        4,
        "rocq_cursor_step",
        json!({"tactic": "intros n m."}),
    );
    has_all(&after, &["1 goal", "n + m = m + n /\\ n = n"]);

    search_finds(
        &mut p,
        5,
        "rocq_search",
        "helper",
        &["helper: forall n : nat, n + 0 = n"],
    );
    search_finds(
        &mut p,
        6,
        "rocq_search",
        "_ + 0 = _",
        &["Nat.add_0_r", "helper"],
    );
    search_finds(
        &mut p,
        7,
        "rocq_search",
        "\"add\" \"comm\" inside Nat",
        &["Nat.add_comm"],
    );
}
