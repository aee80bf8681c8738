//! A proof file cut into segments: blocks found by the manifest's block rules (a header, an
//! optional proof start, an end) and the text between them. Pure: text in, outline out.

use regex_lite::Regex;

use super::scan::code_mask;
use crate::spec::cursor::{BlockRule, CursorSpec, Lexicon};

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
    /// Where the end match begins (the proof's text is between the proof match and this);
    /// for a rule that ends at a bracket's close, where that close is.
    pub end_at: usize,
    /// Where the text kept when the proof part is written begins: the block's end, or
    /// after the closing bracket of a rule that ends at one (what `end` matched after it).
    pub tail: usize,
    /// Its proof holds the placeholder.
    pub placeholder: bool,
    /// Its end gives the theorem up (the end match's group `abandoned` matched: Rocq's
    /// `Abort.`): loading it proves nothing.
    pub abandoned: bool,
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
    /// Cuts `text` by the rules of `spec`.
    pub(super) fn of(text: &str, spec: &CursorSpec) -> Outline {
        let cut = Cut {
            lex: &spec.lexicon,
            rules: &spec.rules,
            placeholder: &spec.placeholder,
            commands: spec.commands.as_ref(),
        };
        Outline::new(text, &cut)
    }

    /// Cuts `text` by `cut`'s rules.
    pub(super) fn new(text: &str, cut: &Cut<'_>) -> Outline {
        let Cut {
            lex,
            rules,
            placeholder,
            commands,
        } = *cut;
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
            let Some(ends) = block_end(rule, text, &mask, (start, head_end)) else {
                // No end: the rest is text (a half-written block).
                break;
            };
            let (end_at, tail, end) = ends;
            let proof = rule
                .proof
                .as_ref()
                .and_then(|p| proof_start(p, text, &mask, head_end))
                .filter(|(s, _)| *s <= end_at);
            let name = rule
                .start
                .captures(&text[start..head_end])
                .and_then(|c| c.name("name"))
                .map_or_else(String::new, |m| m.as_str().to_owned());
            let abandoned = abandons(rule, text, if rule.close { tail } else { end_at });
            let has_placeholder = proof.is_some_and(|(p, _)| {
                find_code(placeholder, text, &mask, p).is_some_and(|(s, _)| s < end)
            });
            push_text(&mut segments, text, &mask, (text_start, start), commands);
            segments.push(Segment {
                start,
                end,
                block: Some(Block {
                    name,
                    rule: rule_i,
                    statement: (head_end, proof.map_or(end_at, |(s, _)| s)),
                    proof,
                    end_at,
                    tail,
                    placeholder: has_placeholder,
                    abandoned,
                }),
            });
            pos = end;
            text_start = end;
        }
        push_text(
            &mut segments,
            text,
            &mask,
            (text_start, text.len()),
            commands,
        );
        let lines = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        Outline { segments, lines }
    }

    /// The block of segment `i`.
    pub(super) fn block(&self, i: usize) -> Option<(&Segment, &Block)> {
        let s = self.segments.get(i)?;
        Some((s, s.block.as_ref()?))
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

/// How a file is cut: its lexicon, block rules, placeholder, and what ends a command in the
/// text between blocks.
#[derive(Clone, Copy)]
pub(super) struct Cut<'a> {
    pub lex: &'a Lexicon,
    pub rules: &'a [BlockRule],
    pub placeholder: &'a Regex,
    pub commands: Option<&'a Regex>,
}

/// Adds the text `from..to` between blocks: one segment, or one per command when `commands`
/// says where commands end (in code), the last one running to `to`. Blank text between
/// commands stays with the command before it.
fn push_text(
    segments: &mut Vec<Segment>,
    text: &str,
    mask: &[bool],
    (from, to): (usize, usize),
    commands: Option<&Regex>,
) {
    let mut start = from;
    if let Some(re) = commands {
        let mut at = from;
        while let Some((_, e)) = find_code(re, text, mask, at).filter(|(_, e)| *e <= to) {
            if !text[start..e].trim().is_empty() {
                segments.push(Segment {
                    start,
                    end: e,
                    block: None,
                });
                start = e;
            }
            at = e.max(at + 1);
            if at >= to {
                break;
            }
        }
    }
    if start < to {
        match segments.last_mut() {
            // Blank text after the last command joins it.
            Some(last)
                if last.end == start
                    && last.block.is_none()
                    && text[start..to].trim().is_empty() =>
            {
                last.end = to;
            }
            _ => segments.push(Segment {
                start,
                end: to,
                block: None,
            }),
        }
    }
}

/// `text` of the block `seg` with its proof part replaced by `proof` (the end match kept
/// out: `proof` is the whole part from the proof start to the block's end, or to the close of
/// a rule that ends at a bracket, after which the text is kept).
pub(super) fn with_proof(text: &str, seg: &Segment, b: &Block, proof: &str) -> Option<String> {
    let (p, _) = b.proof?;
    Some(format!(
        "{}{proof}{}",
        &text[seg.start..p],
        &text[b.tail.min(seg.end)..seg.end]
    ))
}

/// Where a block that starts at `start` (its header ending at `head_end`) ends: where its end
/// match begins (or its bracket closes), where the text kept after its proof begins, and its
/// end. `None`: it has no end (a half-written block).
/// Whether the rule's end match at `at` is one that gives the theorem up.
fn abandons(rule: &BlockRule, text: &str, at: usize) -> bool {
    rule.end
        .captures_at(text, at)
        .filter(|c| c.get(0).is_some_and(|m| m.start() == at))
        .is_some_and(|c| c.name("abandoned").is_some())
}

fn block_end(
    rule: &BlockRule,
    text: &str,
    mask: &[bool],
    (start, head_end): (usize, usize),
) -> Option<(usize, usize, usize)> {
    if !rule.close {
        let (end_at, end) = find_code(&rule.end, text, mask, head_end)?;
        return Some((end_at, end, end));
    }
    let close = closing_bracket(text, mask, start, head_end)?;
    let after = close + 1;
    let end = rule
        .end
        .find_at(text, after)
        .filter(|m| m.start() == after)
        .map_or(after, |m| m.end());
    Some((close, after, end))
}

/// The close of the last bracket opened (in code) in `text[start..head_end]` and left open
/// there, found by counting brackets in code from `head_end`.
fn closing_bracket(text: &str, mask: &[bool], start: usize, head_end: usize) -> Option<usize> {
    let b = text.as_bytes();
    let code = |i: usize| mask.get(i).copied().unwrap_or(false);
    let mut open = 0usize;
    for i in (start..head_end).filter(|&i| code(i)) {
        match b[i] {
            b'(' | b'[' | b'{' => open += 1,
            b')' | b']' | b'}' => open = open.saturating_sub(1),
            _ => {}
        }
    }
    if open == 0 {
        return None;
    }
    let mut depth = 1usize;
    for i in (head_end..b.len()).filter(|&i| code(i)) {
        match b[i] {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// Where a proof part starts and its start match ends: the match of `re` in code at or after
/// `from`, or its group `proof` when it has one (`\.(?P<proof>\s)`: the part starts after the
/// statement's period).
fn proof_start(re: &Regex, text: &str, mask: &[bool], from: usize) -> Option<(usize, usize)> {
    let (s, e) = find_code(re, text, mask, from)?;
    let start = re
        .captures_at(text, s)
        .and_then(|c| c.name("proof"))
        .filter(|g| g.start() >= s && g.start() <= e)
        .map_or(s, |g| g.start());
    Some((start, e))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
pub(super) mod tests {
    use super::super::scan::tests::ml;
    use super::*;

    fn re(s: &str) -> Regex {
        Regex::new(&format!("(?m){s}")).unwrap()
    }

    /// A block rule as the example manifests write one.
    pub(crate) fn rule(start: &str, proof: &str, end: &str, goal: bool) -> BlockRule {
        BlockRule {
            start: re(start),
            proof: (!proof.is_empty()).then(|| re(proof)),
            end: re(end),
            goal,
            template: "Proof\n  {proof}\nQED".into(),
            admit: "Proof\n  cheat\nQED".into(),
            close: false,
            enter: None,
            statement: None,
        }
    }

    fn cut<'a>(lex: &'a Lexicon, rules: &'a [BlockRule], ph: &'a Regex) -> Cut<'a> {
        Cut {
            lex,
            rules,
            placeholder: ph,
            commands: None,
        }
    }

    pub(crate) fn hol_rules() -> (Lexicon, Vec<BlockRule>, Regex) {
        let lex = ml(Some('\\'));
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
        let mut r = rule(
            r"^[ \t]*(?:Lemma|Theorem|Fact|Remark|Corollary|Proposition|Example)[ \t]+(?P<name>[A-Za-z0-9_']+)",
            r"\.(?:[ \t]*\r?\n|[ \t]+)?(?P<proof>)[ \t]*(?:Proof\b[^.]*\.)?",
            r"\b(?:Qed|Defined|Admitted|(?P<abandoned>Abort))\.",
            true,
        );
        r.template = "Proof.\n  {proof}\nQed.".into();
        r.admit = "Proof.\nAdmitted.".into();
        let rules = vec![r];
        (lex, rules, re(r"\bAdmitted\.|\badmit\."))
    }

    /// `text` cut with `rules` and commands ended by `commands`, and its summary.
    fn cut_with_commands(
        text: &str,
        (lex, rules, ph): (&Lexicon, &[BlockRule], &Regex),
        commands: &str,
    ) -> (Outline, Vec<String>) {
        let commands = re(commands);
        let o = Outline::new(
            text,
            &Cut {
                commands: Some(&commands),
                ..cut(lex, rules, ph)
            },
        );
        let s = summary(text, &o);
        (o, s)
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
        let o = Outline::new(text, &cut(&lex, &rules, &ph));
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
        let o = Outline::new(text, &cut(&lex, &rules, &ph));
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

    #[test]
    fn hol4_older_forms_end_where_their_bracket_closes() {
        let (mut lex, mut rules, ph) = hol_rules();
        for (open, close) in [("``", "``"), ("`", "`"), ("‘", "’")] {
            lex.strings.push(crate::spec::cursor::Quote {
                open: open.into(),
                close: close.into(),
                escape: None,
            });
        }
        let mut thm = rule(
            r"^val[ \t]+(?P<name>[A-Za-z0-9_']+)\s*=\s*(?:Q\.)?store_thm\s*\(\s*\x22[^\x22]*\x22\s*,",
            r"(?P<proof>,)",
            r"\s*;",
            true,
        );
        thm.close = true;
        thm.template = ",\n  {proof})".into();
        let mut one = rule(
            r"^Theorem[ \t]+(?P<name>[A-Za-z0-9_']+)(?:\[[^\]\n]*\])?[ \t]*=",
            "",
            r"[^\n]*(?:\n[ \t]+[^\n]*)*",
            false,
        );
        one.goal = false;
        rules.extend([thm, one]);
        let text = "val foo = store_thm (\"foo\", ``!x. f (x, x) = (x, x)``,\n  RW_TAC std_ss [] >> (fs [] \\\\ cheat));\n\
            Theorem bar = foo\nval baz = Q.store_thm(\"baz\", `∀n. n = n`, cheat) (* no ; *)\nval _ = 1;\n";
        let (o, s) = cut_with_commands(text, (&lex, &rules, &ph), ";[ \t\r]*$");
        assert_eq!(
            s,
            [
                "foo* [3] \"``!x. f (x, x) = (x, x)``\"",
                "bar [4] \"\"",
                "baz* [3] \"`∀n. n = n`\"",
                "text \"(* no ; *)\\nval _ = 1;\"",
            ],
            "{s:#?}"
        );
        let (_, seg, b) = o.blocks().next().unwrap();
        assert_eq!(
            &text[seg.start..seg.end],
            &text[..text.find(";\n").unwrap() + 1]
        );
        let written = with_proof(text, seg, b, ",\n  simp [])").unwrap();
        assert_eq!(
            written,
            "val foo = store_thm (\"foo\", ``!x. f (x, x) = (x, x)``,\n  simp []);"
        );
    }

    #[test]
    fn rocq_lemmas_without_proof_and_aborted_ones_are_blocks() {
        let (lex, rules, ph) = rocq_rules();
        let text = "Lemma a : True.\n  exact I.\nQed.\nTheorem b : False. Proof. idtac. Abort.\n\
            Lemma c : 1 = 1.\nAdmitted.\nDefinition x := 1. Definition y := 2.\n";
        let (o, s) = cut_with_commands(text, (&lex, &rules, &ph), r"\.(?:\s|\z)");
        assert_eq!(
            s,
            [
                "a [0] \": True.\"",
                "b [0] \": False.\"",
                "c* [0] \": 1 = 1.\"",
                "text \"Definition x := 1.\"",
                "text \"Definition y := 2.\"",
            ],
            "{s:#?}"
        );
        let given_up: Vec<bool> = o.blocks().map(|(_, _, b)| b.abandoned).collect();
        assert_eq!(
            given_up,
            [false, true, false],
            "only Abort gives a theorem up"
        );
        let (_, seg, b) = o.blocks().next().unwrap();
        let written = with_proof(text, seg, b, "Proof.\n  auto.\nQed.").unwrap();
        assert_eq!(written, "Lemma a : True.\nProof.\n  auto.\nQed.");
    }
}
