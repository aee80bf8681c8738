//! What must hold for any text a proof file may hold (non-ASCII, unterminated comments and
//! strings, CRLF, a BOM, half-written blocks): the scanner and the outline never panic,
//! segments cover the text in order at character boundaries, every block's parts lie inside
//! it, and what is taken out of a block (its statement, its steps, its imports, the input that
//! enters it, the proof written into it) is taken at character boundaries. The fuzz target
//! `cursor` and the unit tests run it with the example manifests' cursors.

use super::input::enter_input;
use super::outline::{with_proof, Outline};
use super::project::imports;
use super::scan::code_mask;
use super::split::{step_at, steps};
use crate::spec::cursor::CursorSpec;

/// Cuts `text` with `spec` and checks every invariant; panics (with what broke) otherwise.
pub(crate) fn check(spec: &CursorSpec, text: &str) {
    let mask = code_mask(text, &spec.lexicon);
    assert_eq!(mask.len(), text.len());
    let o = Outline::of(text, spec);
    let mut at = 0;
    for seg in &o.segments {
        assert_eq!(seg.start, at, "segments must follow each other");
        assert!(seg.start < seg.end && seg.end <= text.len());
        assert!(text.is_char_boundary(seg.start) && text.is_char_boundary(seg.end));
        at = seg.end;
        let Some(b) = &seg.block else {
            let _ = imports(spec, &text[seg.start..seg.end]);
            continue;
        };
        let (s, e) = b.statement;
        assert!(
            seg.start <= s && s <= e && e <= seg.end,
            "statement inside its block"
        );
        assert!(text.is_char_boundary(s) && text.is_char_boundary(e));
        assert!(b.end_at <= seg.end && b.tail <= seg.end + 1);
        let _ = o.lines_of(seg);
        let _ = enter_input(text, (seg, b), spec);
        let _ = with_proof(text, seg, b, "{proof}");
        if let Some((p, pe)) = b.proof {
            assert!(text.is_char_boundary(p) && text.is_char_boundary(pe));
            if pe <= b.end_at {
                let all = steps(spec, text, (pe, b.end_at));
                for st in &all {
                    assert!(text.is_char_boundary(st.start) && text.is_char_boundary(st.end));
                    assert!(pe <= st.start && st.start < st.end && st.end <= b.end_at);
                }
                let _ = step_at(&all, pe, true);
            }
        }
    }
    assert_eq!(at, text.len(), "segments must cover the text");
    for line in 1..=o.line(text.len()) + 1 {
        let _ = o.line_span(text, line);
    }
}

/// The cursors of the example manifests (`examples/hol4.json`, `examples/rocq.json`), read
/// without their `build` (whose programs this machine may lack).
pub(crate) fn examples() -> Vec<std::sync::Arc<CursorSpec>> {
    [
        include_str!("../../examples/hol4.json"),
        include_str!("../../examples/rocq.json"),
    ]
    .iter()
    .filter_map(|m| {
        let v: serde_json::Value = serde_json::from_str(m).ok()?;
        let mut c = v["sessions"][0]["cursor"].clone();
        c.as_object_mut()?.remove("build");
        crate::manifest::cursor_of(&c).ok()
    })
    .collect()
}

/// The invariants checked of `data` (lossily as UTF-8) with every example cursor (read once).
pub fn check_examples(data: &[u8]) {
    static EXAMPLES: std::sync::OnceLock<Vec<std::sync::Arc<CursorSpec>>> =
        std::sync::OnceLock::new();
    let text = String::from_utf8_lossy(data);
    for spec in EXAMPLES.get_or_init(examples) {
        check(spec, &text);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn odd_texts_cut_without_a_panic() {
        assert_eq!(super::examples().len(), 2, "both example cursors read");
        for text in [
            "",
            "\u{feff}Theorem x:\r\n  é\r\nProof\r\n  cheat\r\nQED\r\n",
            "(* unterminated comment Theorem a: T Proof QED",
            "\"unterminated string Lemma a : True. Proof. Qed.",
            "val f = store_thm (\"f\", ``∀x. x = x``, rw [] >> (simp [] \\\\ cheat",
            "Lemma ü : ∀ n, n = n.\n  intros. Abort.\nTheorem b : True.",
            "Theory t\nAncestors\n  list[qualified] é\nLibs\n  x\n\nlocal open a in\nend;",
        ] {
            super::check_examples(text.as_bytes());
        }
    }
}
