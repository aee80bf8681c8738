//! What the cursor sends and how the answer comes back: templates filled in one pass, the
//! input that enters a block's goal, and an answer or why a sequence halts.

use super::outline::{Block, Segment};
use crate::session::{Said, StopReason};
use crate::spec::cursor::CursorSpec;

/// Why a sequence stopped before its end.
pub(super) enum Halt {
    /// Cancelled or past the deadline, after the last whole segment.
    Stopped(StopReason),
    /// The program ended.
    Died(String),
    /// The input was refused or failed (nothing to resume).
    Failed(String),
}

/// Replaces each `{key}` of `template` by its value, in one pass (a value's own braces stay).
pub(super) fn fill(template: &str, vars: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    'outer: while let Some(i) = rest.find('{') {
        out.push_str(&rest[..i]);
        rest = &rest[i..];
        for (k, v) in vars {
            let key = format!("{{{k}}}");
            if rest.starts_with(&key) {
                out.push_str(v);
                rest = &rest[key.len()..];
                continue 'outer;
            }
        }
        out.push('{');
        rest = &rest[1..];
    }
    out.push_str(rest);
    out
}

/// The input that enters the goal of block `b` (segment `seg`) of `text`; `Err`: the
/// statement holds this text, which the input cannot quote.
pub(super) fn enter_input(
    text: &str,
    (seg, b): (&Segment, &Block),
    spec: &CursorSpec,
) -> Result<String, String> {
    let rule = &spec.rules[b.rule];
    let whole = text[b.statement.0..b.statement.1].trim();
    let statement = rule
        .statement
        .as_ref()
        .and_then(|re| re.captures(whole)?.name("statement"))
        .map_or(whole, |m| m.as_str().trim());
    if let Some(bad) = spec
        .statement_forbids
        .iter()
        .find(|f| statement.contains(f.as_str()))
    {
        return Err(bad.clone());
    }
    let header = &text[seg.start..b.proof.map_or(b.statement.1, |(_, e)| e)];
    Ok(fill(
        rule.enter.as_deref().unwrap_or(&spec.enter),
        &[
            ("name", &b.name),
            ("statement", statement),
            ("header", header),
        ],
    ))
}

/// The answer, or why there is none.
pub(super) fn answer(said: Said) -> Result<String, Halt> {
    match said {
        Said::Answer(a) => Ok(a),
        Said::Stopped { why, .. } => Err(Halt::Stopped(why)),
        Said::Died(m) => Err(Halt::Died(m)),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::fill;

    #[test]
    fn templates_fill_in_one_pass() {
        assert_eq!(
            fill("g ‘{statement}’;", &[("statement", "{name} x")]),
            "g ‘{name} x’;"
        );
        assert_eq!(fill("{a}{b}{c", &[("a", "1"), ("b", "2")]), "12{c");
    }

    /// The example HOL4 cursor enters a quotation's inside, whichever quotes it has.
    #[test]
    fn the_statement_entered_is_the_quotations_inside() {
        let hol = &crate::cursor::invariants::examples()[0];
        for (text, statement) in [
            (
                "val st = store_thm (\"st\", ``!n:num. n * 1 = n``,\n  cheat);",
                "!n:num. n * 1 = n",
            ),
            (
                "val q = Q.store_thm (\"q\", `∀l. l = l`, cheat);",
                "∀l. l = l",
            ),
            ("val p = prove (“∀x. x = x”, cheat);", "∀x. x = x"),
            ("val p = prove (``x = `y``, cheat);", "x = `y"),
        ] {
            let o = crate::cursor::outline::Outline::of(text, hol);
            let (_, seg, b) = o.blocks().next().unwrap();
            let input = super::enter_input(text, (seg, b), hol).unwrap();
            assert_eq!(input, format!("proofManagerLib.g ‘{statement}’;"), "{text}");
        }
    }
}
