//! What a theorem trusts: a placeholder (`cheat`, `Admitted`), an axiom or an oracle, asked in
//! the session by the kind's `trust` input and read from its answer (HOL4's theorem tags,
//! Rocq's `Print Assumptions`). A theorem proved from a cheated lemma is never just "OK".

use serde_json::{json, Value};

use super::input::{answer, fill, Halt};
use crate::session::Link;
use crate::spec::cursor::{CursorSpec, Trust};

/// One thing a theorem trusts: its kind (`oracle`, `axiom`) and its name.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Trusted {
    pub kind: String,
    pub name: String,
}

/// What theorem `name` trusts (`None`: the kind cannot say).
pub(super) fn of(
    link: &Link<'_>,
    spec: &CursorSpec,
    name: &str,
) -> Result<Option<Vec<Trusted>>, Halt> {
    let Some(t) = &spec.trust else {
        return Ok(None);
    };
    let said = answer(link.say(&fill(&t.input, &[("name", name)]), spec.timeout))?;
    if spec.error_line(&said).is_some() {
        return Ok(None);
    }
    Ok(Some(read(t, &said)))
}

/// The trusted things `said` lists.
fn read(t: &Trust, said: &str) -> Vec<Trusted> {
    let mut out: Vec<Trusted> = Vec::new();
    for (kind, re) in &t.lists {
        let Some(list) = re.captures(said).and_then(|c| c.name("list")) else {
            continue;
        };
        for c in t.item.captures_iter(list.as_str()) {
            let name = c
                .get(1)
                .or_else(|| c.get(0))
                .map_or("", |m| m.as_str())
                .trim();
            let item = Trusted {
                kind: kind.clone(),
                name: name.to_owned(),
            };
            if !name.is_empty() && !t.ignore.iter().any(|i| i == name) && !out.contains(&item) {
                out.push(item);
            }
        }
    }
    out
}

/// "trusts nothing", or "trusts oracle cheat, axiom foo".
pub(super) fn said(trusted: &[Trusted]) -> String {
    if trusted.is_empty() {
        return "proved outright (it trusts no placeholder, axiom or oracle)".to_owned();
    }
    let items: Vec<String> = trusted
        .iter()
        .map(|t| format!("{} {}", t.kind, t.name))
        .collect();
    format!("it trusts {}", items.join(", "))
}

/// As fields.
pub(super) fn fields(trusted: &[Trusted]) -> Value {
    Value::Array(
        trusted
            .iter()
            .map(|t| json!({"kind": t.kind, "name": t.name}))
            .collect(),
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use regex_lite::Regex;

    #[test]
    fn hol4_tags_and_rocq_assumptions_are_read() {
        let hol = Trust {
            input: "Tag.dest_tag (Thm.tag {name});".into(),
            lists: vec![
                (
                    "oracle".into(),
                    Regex::new(r"\(\[(?P<list>[^\]]*)\]").unwrap(),
                ),
                (
                    "axiom".into(),
                    Regex::new(r"\],\s*\[(?P<list>[^\]]*)\]\)").unwrap(),
                ),
            ],
            item: Regex::new("\"([^\"]*)\"").unwrap(),
            ignore: vec!["DISK_THM".into()],
        };
        let got = read(
            &hol,
            "val it = ([\"DISK_THM\", \"cheat\"], [\"ax1\"]): string list * string list",
        );
        assert_eq!(said(&got), "it trusts oracle cheat, axiom ax1");
        assert!(read(
            &hol,
            "val it = ([\"DISK_THM\"], []): string list * string list"
        )
        .is_empty());
        let rocq = Trust {
            input: "Print Assumptions {name}.".into(),
            lists: vec![(
                "axiom".into(),
                Regex::new(r"(?s)Axioms:\n(?P<list>.*)").unwrap(),
            )],
            item: Regex::new(r"(?m)^(\S+) :").unwrap(),
            ignore: Vec::new(),
        };
        let got = read(
            &rocq,
            "Axioms:\nfoo : True\nbar : forall n : nat,\n  n = n\n",
        );
        assert_eq!(said(&got), "it trusts axiom foo, axiom bar");
        assert!(read(&rocq, "Closed under the global context").is_empty());
    }
}
