//! The verdict of one run, read from its output lines as they come ([`Verdict`]'s rules).

use std::sync::{Arc, Mutex};

use stdmcp::sync::lock;

use crate::spec::verdict::Verdict;

/// The verdict of one run so far: fed every output line, keeps the last one a rule read.
#[derive(Clone, Default)]
pub(crate) struct Tracker(Arc<Mutex<Option<String>>>);

impl Tracker {
    /// Reads `line` with `v`'s rules.
    pub(crate) fn feed(&self, v: &Verdict, line: &str) {
        if let Some(word) = v.read(line) {
            *lock(&self.0) = Some(word);
        }
    }

    /// The verdict now.
    pub(crate) fn get(&self) -> Option<String> {
        lock(&self.0).clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::verdict::Rule;

    #[test]
    fn the_last_line_that_matches_wins() {
        let rule = |p: &str| Rule::new(p.to_owned(), None).expect("a valid pattern");
        let v = Verdict {
            rules: vec![rule("^(sat|unsat|unknown)$")],
            decisive: vec!["unsat".to_owned()],
        };
        let t = Tracker::default();
        for line in ["unknown", "noise", "unsat", "more noise"] {
            t.feed(&v, line);
        }
        assert_eq!(t.get().as_deref(), Some("unsat"));
    }
}
