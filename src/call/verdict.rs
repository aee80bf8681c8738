//! The verdict of one run, read from its output lines as they come ([`Verdict`]'s rules),
//! by the rules that apply to the call's input ([`for_call`]).

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use stdmcp::beneath::{beneath, Dir};
use stdmcp::sync::lock;
use stdmcp::CancelToken;

use crate::spec::verdict::{Verdict, When};
use crate::spec::{ParamType, ToolSpec};
use crate::spool::{Ended, Stop};

/// The verdict rules of `spec` that apply to a call whose checked values are `values`: a
/// rule's `when` holds when a line of its parameter's value matches; for a path parameter, a
/// line of the file, opened beneath its root as the server's own reads are and scanned as
/// `grep` scans (each line's first 4 KiB, within the scan's time bound, until `cancel`). A
/// parameter not given, or a file that cannot be read, holds nothing (the log says why).
pub(crate) fn for_call(
    spec: &ToolSpec,
    roots: &BTreeMap<String, PathBuf>,
    values: &[(String, OsString)],
    cancel: &CancelToken,
) -> Option<Verdict> {
    let v = spec.verdict.as_ref()?;
    if !v.reads_input() {
        return Some(v.clone());
    }
    let stop = Stop::new(Some(cancel.clone()), None);
    Some(v.for_input(|w| {
        let Some((_, value)) = values.iter().find(|(name, _)| *name == w.param) else {
            return false;
        };
        let Some(ParamType::Path { root, .. }) = spec.params.get(&w.param).map(|p| &p.kind) else {
            return w.holds_for_text(&value.to_string_lossy());
        };
        file_holds(w, roots.get(root), Path::new(value), &stop).unwrap_or_else(|e| {
            log::warn!(
                "{}: the input {} of a verdict rule cannot be read ({e}): the rule does not apply",
                spec.name,
                w.param
            );
            false
        })
    }))
}

/// Whether a line of the file at `path` (checked, inside `root`) matches `w`'s pattern.
fn file_holds(w: &When, root: Option<&PathBuf>, path: &Path, stop: &Stop) -> io::Result<bool> {
    let root = root.ok_or_else(|| io::Error::other("its root is missing"))?;
    let rel = beneath(root, path).ok_or_else(|| io::Error::other("it is outside its root"))?;
    let (file, _) = Dir::open(root)?.file(rel)?;
    let found = crate::spool::grep(Some(&file), 0, w.regex(), 1, stop)?;
    if found.lines.is_empty() && found.ended != Ended::End {
        // Cut by the scan's time bound or the cancel: no line seen is no answer.
        return Err(io::Error::other(
            "its scan stopped before the end of the file",
        ));
    }
    Ok(!found.lines.is_empty())
}

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
