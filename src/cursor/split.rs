//! A proof cut into its steps, by the cursor's `stateAt` rule: Rocq's sentences; HOL4's
//! top-level tactic chain, cut where a combinator (`>>`, `\\`, `THEN`, `>-`, `>>>`…) stands in
//! code outside brackets. What `K_state_at` shows the goals around and where a failing proof
//! is said to break.

use super::outline::find_code;
use super::scan::code_mask;
use crate::spec::cursor::{CursorSpec, StateAt};

/// One step of a proof: where it is in the file's text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Step {
    pub start: usize,
    pub end: usize,
}

/// The steps of the proof text `text[from..to]`, in order.
pub(super) fn steps(spec: &CursorSpec, text: &str, (from, to): (usize, usize)) -> Vec<Step> {
    let mask = code_mask(text, &spec.lexicon);
    let mut out = Vec::new();
    let mut push = |s: usize, e: usize| {
        let piece = &text[s..e];
        let lead = piece.len() - piece.trim_start().len();
        let trail = piece.len() - piece.trim_end().len();
        if lead + trail < piece.len() {
            out.push(Step {
                start: s + lead,
                end: e - trail,
            });
        }
    };
    match &spec.state_at {
        StateAt::Sentences { end } => {
            let mut pos = from;
            while let Some((s, e)) = find_code(end, text, &mask, pos).filter(|(s, _)| *s < to) {
                push(pos, e.min(to));
                pos = e.max(s + 1);
            }
            if pos < to {
                push(pos, to);
            }
        }
        StateAt::Prefix { split, .. } => {
            let mut pos = from;
            for (s, e) in combinators(split, text, &mask, (from, to)) {
                push(pos, s);
                pos = e;
            }
            push(pos, to);
        }
    }
    out
}

/// Where `re` matches in code at bracket depth 0 within `from..to`.
fn combinators(
    re: &regex_lite::Regex,
    text: &str,
    mask: &[bool],
    (from, to): (usize, usize),
) -> Vec<(usize, usize)> {
    let b = text.as_bytes();
    // The bracket depth before each byte.
    let mut depth = vec![0usize; to.saturating_sub(from) + 1];
    let mut d = 0usize;
    for i in from..to {
        depth[i - from] = d;
        if mask.get(i).copied().unwrap_or(false) {
            match b[i] {
                b'(' | b'[' | b'{' => d += 1,
                b')' | b']' | b'}' => d = d.saturating_sub(1),
                _ => {}
            }
        }
    }
    let mut out = Vec::new();
    let mut at = from;
    while let Some((s, e)) = find_code(re, text, mask, at).filter(|(_, e)| *e <= to) {
        if depth[s - from] == 0 {
            out.push((s, e));
        }
        at = e.max(s + 1);
    }
    out
}

/// The index of the step at byte `at`. `exact` (a column was given): the step that holds it,
/// or the one after the combinator or space it falls on; else (a line's end) the last step
/// that starts before it. A position before the first step is the first step's.
pub(super) fn step_at(steps: &[Step], at: usize, exact: bool) -> Option<usize> {
    if steps.is_empty() {
        return None;
    }
    let k = if exact {
        steps
            .iter()
            .position(|s| s.end > at)
            .unwrap_or(steps.len() - 1)
    } else {
        steps.iter().rposition(|s| s.start <= at).unwrap_or(0)
    };
    Some(k)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use regex_lite::Regex;

    fn texts<'a>(text: &'a str, steps: &[Step]) -> Vec<&'a str> {
        steps.iter().map(|s| &text[s.start..s.end]).collect()
    }

    #[test]
    fn a_tactic_chain_is_cut_at_its_top_level_combinators_only() {
        let split = Regex::new(r">>>|>>|\\\\|>-|\bTHEN1|\bTHEN\b").unwrap();
        let mut lex = super::super::scan::tests::sml();
        lex.strings.push(crate::spec::cursor::Quote {
            open: "`".into(),
            close: "`".into(),
            escape: None,
        });
        let spec = crate::cursor::engine::tests::spec_with(
            lex,
            StateAt::Prefix {
                trim: Regex::new("$^").unwrap(),
                split,
            },
        );
        let text = "Proof\n  rw [] >> (fs [] >> simp []) \\\\ `x >> y` by metis_tac [] THEN\n  (* >> *) gvs []\nQED";
        let from = text.find("rw").unwrap();
        let to = text.find("\nQED").unwrap();
        let s = steps(&spec, text, (from, to));
        assert_eq!(
            texts(text, &s),
            [
                "rw []",
                "(fs [] >> simp [])",
                "`x >> y` by metis_tac []",
                "(* >> *) gvs []"
            ]
        );
        assert_eq!(step_at(&s, text.find("simp").unwrap(), true), Some(1));
        assert_eq!(step_at(&s, text.find("\\\\").unwrap(), true), Some(2));
        assert_eq!(step_at(&s, text.find("gvs").unwrap(), false), Some(3));
    }

    #[test]
    fn rocq_sentences_are_its_steps() {
        let spec = crate::cursor::engine::tests::spec_with(
            super::super::scan::tests::ml(None),
            StateAt::Sentences {
                end: Regex::new(r"\.(?:\s|\z)").unwrap(),
            },
        );
        let text = "Proof.\n  intros n. induction n.\n  - simpl. (* a. b *) auto.\nQed.";
        let from = text.find("intros").unwrap();
        let to = text.find("Qed").unwrap();
        let s = steps(&spec, text, (from, to));
        assert_eq!(
            texts(text, &s),
            ["intros n.", "induction n.", "- simpl.", "(* a. b *) auto."]
        );
    }
}
