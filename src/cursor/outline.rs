//! A proof file cut into segments: blocks found by the manifest's block rules (a header, an
//! optional proof start, an end) and the text between them. Pure: text in, outline out.

use regex_lite::Regex;

use super::scan::code_mask;
use crate::spec::cursor::{BlockRule, Lexicon};

/// A block of the file.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Block {
    /// Its name (the start pattern's `name` group).
    pub name: String,
    /// Index of its rule.
    pub rule: usize,
    /// Where the statement starts (after the header match) and the proof part starts (the
    /// proof match, or the end match when there is none).
    pub statement: (usize, usize),
    /// Where the proof part's start match begins and ends, when the rule has one and it
    /// was found.
    pub proof: Option<(usize, usize)>,
    /// Where the end match begins (the proof's text is between the proof match and this).
    pub end_at: usize,
    /// Its proof holds the placeholder.
    pub placeholder: bool,
}

/// A piece of the file: a block, or text between blocks.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Segment {
    /// Where it starts.
    pub start: usize,
    /// Where it ends (exclusive).
    pub end: usize,
    /// What block it is, if it is one.
    pub block: Option<Block>,
}

/// The segments of a file, in order, covering it whole.
#[derive(Clone, Debug, Default)]
pub(super) struct Outline {
    /// The segments, in order.
    pub segments: Vec<Segment>,
    /// Start offset of each line.
    lines: Vec<usize>,
}

/// The first match of `re` at or after `from` that starts in code.
pub(super) fn find_code(
    re: &Regex,
    text: &str,
    mask: &[bool],
    from: usize,
) -> Option<(usize, usize)> {
    let mut at = from;
    while at <= text.len() {
        let m = re.find_at(text, at)?;
        if mask.get(m.start()).copied().unwrap_or(false) && m.end() > m.start() {
            return Some((m.start(), m.end()));
        }
        at = m.start() + text[m.start()..].chars().next().map_or(1, char::len_utf8);
    }
    None
}

impl Outline {
    /// Cuts `text` by `rules`; `placeholder` marks the blocks whose proof part holds it.
    pub(super) fn new(
        text: &str,
        lex: &Lexicon,
        rules: &[BlockRule],
        placeholder: &Regex,
    ) -> Outline {
        let mask = code_mask(text, lex);
        let mut segments = Vec::new();
        let mut pos = 0;
        let mut text_start = 0;
        while pos < text.len() {
            // The earliest block start (in code) among the rules.
            let next = rules
                .iter()
                .enumerate()
                .filter_map(|(i, r)| find_code(&r.start, text, &mask, pos).map(|m| (m, i)))
                .min_by_key(|((s, _), _)| *s);
            let Some(((start, head_end), rule_i)) = next else {
                break;
            };
            let rule = &rules[rule_i];
            let Some((end_at, end)) = find_code(&rule.end, text, &mask, head_end) else {
                // No end: the rest is text (a half-written block).
                break;
            };
            let proof = rule
                .proof
                .as_ref()
                .and_then(|p| find_code(p, text, &mask, head_end))
                .filter(|(s, _)| *s < end_at);
            let name = rule
                .start
                .captures(&text[start..head_end])
                .and_then(|c| c.name("name"))
                .map_or_else(String::new, |m| m.as_str().to_owned());
            let has_placeholder = proof.is_some_and(|(p, _)| {
                find_code(placeholder, text, &mask, p).is_some_and(|(s, _)| s < end)
            });
            if start > text_start {
                segments.push(Segment {
                    start: text_start,
                    end: start,
                    block: None,
                });
            }
            segments.push(Segment {
                start,
                end,
                block: Some(Block {
                    name,
                    rule: rule_i,
                    statement: (head_end, proof.map_or(end_at, |(s, _)| s)),
                    proof,
                    end_at,
                    placeholder: has_placeholder,
                }),
            });
            pos = end;
            text_start = end;
        }
        if text_start < text.len() {
            segments.push(Segment {
                start: text_start,
                end: text.len(),
                block: None,
            });
        }
        let lines = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        Outline { segments, lines }
    }

    /// The 1-based line of byte `at`.
    pub(super) fn line(&self, at: usize) -> usize {
        self.lines.partition_point(|&s| s <= at)
    }

    /// The byte where 1-based line `n` starts, and where it ends (before its newline).
    pub(super) fn line_span(&self, text: &str, n: usize) -> Option<(usize, usize)> {
        let start = *self.lines.get(n.checked_sub(1)?)?;
        let end = self.lines.get(n).map_or(text.len(), |s| s - 1);
        Some((start, end.max(start)))
    }

    /// The segments that are blocks, with their indices.
    pub(super) fn blocks(&self) -> impl Iterator<Item = (usize, &Segment, &Block)> {
        self.segments
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.block.as_ref().map(|b| (i, s, b)))
    }

    /// The index of the block named `name`.
    pub(super) fn find(&self, name: &str) -> Option<usize> {
        self.blocks()
            .find(|(_, _, b)| b.name == name)
            .map(|(i, _, _)| i)
    }

    /// The number of segments that end at or before `at`.
    pub(super) fn count_before(&self, at: usize) -> usize {
        self.segments.iter().take_while(|s| s.end <= at).count()
    }

    /// Lines `a-b` of a segment.
    pub(super) fn lines_of(&self, s: &Segment) -> (usize, usize) {
        (
            self.line(s.start),
            self.line(s.end.saturating_sub(1).max(s.start)),
        )
    }
}

/// `text` of the block `seg` with its proof part replaced by `proof` (the end match kept
/// out: `proof` is the whole part from the proof start to the block's end).
pub(super) fn with_proof(text: &str, seg: &Segment, b: &Block, proof: &str) -> Option<String> {
    let (p, _) = b.proof?;
    Some(format!("{}{proof}", &text[seg.start..p]))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
pub(super) mod tests {
    use super::super::scan::tests::ml;
    use super::*;

    fn re(s: &str) -> Regex {
        Regex::new(&format!("(?m){s}")).unwrap()
    }

    pub(crate) fn hol_rules() -> (Lexicon, Vec<BlockRule>, Regex) {
        let lex = ml(Some('\\'));
        let rule = |start: &str, proof: &str, end: &str, goal| BlockRule {
            start: re(start),
            proof: Some(re(proof)),
            end: re(end),
            goal,
            template: "Proof\n  {proof}\nQED".into(),
            admit: "Proof\n  cheat\nQED".into(),
        };
        let rules = vec![
            rule(
                r"^(?:Theorem|Triviality)[ \t]+(?P<name>[A-Za-z0-9_']+)[^:\n]*:",
                r"^Proof\b",
                r"^QED\b",
                true,
            ),
            rule(
                r"^Definition[ \t]+(?P<name>[A-Za-z0-9_']+)[^:\n]*:",
                r"^Termination\b",
                r"^End\b",
                false,
            ),
            rule(
                r"^Resume[ \t]+(?P<name>[A-Za-z0-9_']+)[^:\n]*:",
                r"^Proof\b",
                r"^QED\b",
                false,
            ),
        ];
        (lex, rules, re(r"\bcheat\b"))
    }

    fn rocq_rules() -> (Lexicon, Vec<BlockRule>, Regex) {
        let lex = ml(None);
        let rules = vec![BlockRule {
            start: re(
                r"^[ \t]*(?:Lemma|Theorem|Fact|Remark|Corollary|Proposition|Example)[ \t]+(?P<name>[A-Za-z0-9_']+)",
            ),
            proof: Some(re(r"\bProof\b[^.]*\.")),
            end: re(r"\b(?:Qed|Defined|Admitted)\."),
            goal: true,
            template: "Proof.\n  {proof}\nQed.".into(),
            admit: "Proof.\nAdmitted.".into(),
        }];
        (lex, rules, re(r"\bAdmitted\.|\badmit\."))
    }

    fn summary(text: &str, o: &Outline) -> Vec<String> {
        o.segments
            .iter()
            .map(|s| match &s.block {
                Some(b) => format!(
                    "{}{} [{}] {:?}",
                    b.name,
                    if b.placeholder { "*" } else { "" },
                    b.rule,
                    text[b.statement.0..b.statement.1].trim()
                ),
                None => format!("text {:?}", text[s.start..s.end].trim()),
            })
            .filter(|s| s != "text \"\"")
            .collect()
    }

    #[test]
    fn hol4_blocks_comments_strings_definitions_resume() {
        let (lex, rules, ph) = hol_rules();
        let text = "open bossLib;\n(* Theorem fake:\n  T\nProof\n  cheat\nQED *)\n\
            val s = \"\nTheorem str: T\nProof\nQED\n\";\n\
            Theorem a[simp]:\n  !n. n + 0 = n\nProof\n  simp [] (* QED *)\nQED\n\
            Definition f_def:\n  f x = if x = 0 then 0 else f (x - 1)\nTermination\n  cheat\nEnd\n\
            Triviality b:\n  T\nProof\n  cheat\nQED\n\
            Resume a[x]:\nProof\n  fs []\nQED\n\
            val _ = export_theory ();\n";
        let o = Outline::new(text, &lex, &rules, &ph);
        let s = summary(text, &o);
        assert_eq!(s.len(), 6, "{s:#?}");
        assert_eq!(o.segments.len(), 9);
        assert!(
            s[0].starts_with("text \"open bossLib;\\n(* Theorem fake"),
            "{s:#?}"
        );
        assert_eq!(s[1], "a [0] \"!n. n + 0 = n\"");
        assert_eq!(s[2], "f_def* [1] \"f x = if x = 0 then 0 else f (x - 1)\"");
        assert_eq!(s[3], "b* [0] \"T\"");
        assert_eq!(s[4], "a [2] \"\"");
        assert_eq!(s[5], "text \"val _ = export_theory ();\"");
        let (i, seg, b) = o.blocks().nth(2).unwrap();
        assert_eq!(i, 5);
        assert_eq!(o.lines_of(seg), (22, 26));
        let replaced = with_proof(text, seg, b, "Proof\n  simp []\nQED").unwrap();
        assert_eq!(replaced, "Triviality b:\n  T\nProof\n  simp []\nQED");
        assert_eq!(o.find("f_def"), Some(3));
    }

    #[test]
    fn rocq_lemmas_with_qed_and_admitted() {
        let (lex, rules, ph) = rocq_rules();
        let text = "Require Import Arith.\n(* Lemma c : False. Proof. Admitted. *)\n\
            Lemma a : forall n, n + 0 = n.\nProof.\n  intros. lia.\nQed.\n\
            Theorem b (n : nat) : n = n.\nProof.\nAdmitted.\n\
            Definition s := \"Lemma d : True. Admitted.\".\n\
            Example e : 1 = 1. Proof. reflexivity. Qed.\n";
        let o = Outline::new(text, &lex, &rules, &ph);
        let s = summary(text, &o);
        assert_eq!(
            s,
            [
                "text \"Require Import Arith.\\n(* Lemma c : False. Proof. Admitted. *)\"",
                "a [0] \": forall n, n + 0 = n.\"",
                "b* [0] \"(n : nat) : n = n.\"",
                "text \"Definition s := \\\"Lemma d : True. Admitted.\\\".\"",
                "e [0] \": 1 = 1.\"",
            ]
        );
        assert_eq!(o.line(text.find("Theorem b").unwrap()), 7);
    }
}
