//! A proof file's project (README "Proof files: projects"): the project file found upward
//! from the proof file, read by the kind's line rules into the program's arguments, inputs
//! and load path; and the names a command imports, with the input that loads them.

use std::path::{Path, PathBuf};

use regex_lite::{Captures, Regex};

use super::file::read_beneath;
use crate::session::ProjectLaunch;
use crate::spec::cursor::CursorSpec;
use crate::spec::project::LineRule;

/// A proof file's project as read: what it gives the program, and where its files are.
#[derive(Clone, Debug, Default)]
pub(super) struct Read {
    /// The project file, relative to the root (`None`: the file has no project).
    pub file: Option<String>,
    /// The program's arguments and inputs.
    pub launch: Option<ProjectLaunch>,
    /// Directories of its load path, absolute.
    pub dirs: Vec<PathBuf>,
    /// Values passed over (a path outside the root, an unknown variable), said once.
    pub notes: Vec<String>,
}

/// The project of the proof file `file` (relative to `root`): its project file found in the
/// file's directory or above it (never above the root), read.
pub(super) fn of(spec: &CursorSpec, root: &Path, file: &str) -> Result<Read, String> {
    let Some(project) = &spec.project else {
        return Ok(Read::default());
    };
    let mut dir = Path::new(file).parent().map(Path::to_path_buf);
    while let Some(d) = dir {
        let candidate = d.join(&project.file);
        let rel = candidate
            .to_string_lossy()
            .trim_start_matches("./")
            .to_owned();
        match read_beneath(root, &rel) {
            Ok(text) => return Ok(read(&project.lines, root, (&rel, &text))),
            Err(e) if e.is_missing() => {}
            Err(e) => return Err(format!("cannot read the project file {rel}: {e}")),
        }
        dir = d.parent().map(Path::to_path_buf);
    }
    Ok(Read::default())
}

/// The project file `rel` (its text `text`) read by `rules`.
fn read(rules: &[LineRule], root: &Path, (rel, text): (&str, &str)) -> Read {
    let base = root.join(Path::new(rel).parent().unwrap_or(Path::new("")));
    let mut out = Read {
        file: Some(rel.to_owned()),
        ..Read::default()
    };
    let mut launch = ProjectLaunch {
        file: rel.to_owned(),
        ..ProjectLaunch::default()
    };
    for line in logical_lines(text) {
        for rule in rules {
            for values in matches(rule, &line) {
                let ctx = Values {
                    caps: &values.0,
                    item: values.1.as_deref(),
                    base: &base,
                    root,
                };
                let expand = |ts: &[String], notes: &mut Vec<String>| -> Option<Vec<String>> {
                    ts.iter()
                        .map(|t| ctx.expand(t).map_err(|e| notes.push(e)).ok())
                        .collect()
                };
                let (Some(args), Some(inputs), Some(dirs)) = (
                    expand(&rule.args, &mut out.notes),
                    expand(&rule.inputs, &mut out.notes),
                    expand(&rule.dirs, &mut out.notes),
                ) else {
                    continue;
                };
                launch.argv.extend(args.into_iter().map(Into::into));
                launch.inputs.extend(inputs);
                out.dirs.extend(dirs.into_iter().map(PathBuf::from));
            }
        }
    }
    out.launch = Some(launch);
    out
}

/// The project file's lines with `\`-continued lines joined and `#` comments removed.
fn logical_lines(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for raw in text.lines() {
        let line = raw.split('#').next().unwrap_or_default();
        match line.strip_suffix('\\') {
            Some(head) => {
                cur.push_str(head);
                cur.push(' ');
            }
            None => {
                cur.push_str(line);
                out.push(std::mem::take(&mut cur));
            }
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// Each way `rule` applies to `text`: the match's groups, and the item when it splits one.
fn matches(rule: &LineRule, text: &str) -> Vec<(Vec<String>, Option<String>)> {
    let mut out = Vec::new();
    for caps in rule.pattern.captures_iter(text) {
        let groups = groups(&caps);
        match rule.split {
            None => out.push((groups, None)),
            Some(g) => {
                let words = groups.get(g).cloned().unwrap_or_default();
                for word in words.split_whitespace() {
                    if let Some(item) = item(rule.each.as_ref(), word) {
                        out.push((groups.clone(), Some(item)));
                    }
                }
            }
        }
    }
    out
}

/// A word of a split group as `each` takes it: its first group, else the whole match.
fn item(each: Option<&Regex>, word: &str) -> Option<String> {
    let Some(re) = each else {
        return Some(word.to_owned());
    };
    let c = re.captures(word)?;
    c.get(1).or_else(|| c.get(0)).map(|m| m.as_str().to_owned())
}

fn groups(caps: &Captures<'_>) -> Vec<String> {
    (0..caps.len())
        .map(|i| caps.get(i).map_or("", |m| m.as_str()).to_owned())
        .collect()
}

/// What a template may name: a match's groups, the item, and where paths start.
struct Values<'a> {
    caps: &'a [String],
    item: Option<&'a str>,
    base: &'a Path,
    root: &'a Path,
}

impl Values<'_> {
    /// `t` with `{1}`…`{9}`, `{item}`, `{path:N}` and `{path:item}` put in; a path outside the
    /// root (or that does not resolve) is refused with what to say of it.
    fn expand(&self, t: &str) -> Result<String, String> {
        let mut out = String::new();
        let mut rest = t;
        while let Some(open) = rest.find('{') {
            out.push_str(&rest[..open]);
            let Some(close) = rest[open..].find('}').map(|c| open + c) else {
                break;
            };
            let key = &rest[open + 1..close];
            match self.value(key)? {
                Some(v) => out.push_str(&v),
                None => out.push_str(&rest[open..=close]),
            }
            rest = &rest[close + 1..];
        }
        out.push_str(rest);
        Ok(out)
    }

    fn value(&self, key: &str) -> Result<Option<String>, String> {
        let (path, name) = match key.strip_prefix("path:") {
            Some(n) => (true, n),
            None => (false, key),
        };
        let raw = match name {
            "item" => self.item.map(str::to_owned),
            n => n
                .parse::<usize>()
                .ok()
                .filter(|i| (1..=9).contains(i))
                .and_then(|i| self.caps.get(i).cloned()),
        };
        let Some(raw) = raw else { return Ok(None) };
        if !path {
            return Ok(Some(raw));
        }
        if raw.contains("$(") || raw.contains("${") {
            return Err(format!("{raw} was passed over: it names a variable"));
        }
        let at = self.base.join(&raw);
        crate::resolve::within(self.root, &at, true)
            .map(|p| Some(p.to_string_lossy().into_owned()))
            .map_err(|e| format!("{raw} was passed over: {e}"))
    }
}

/// The names the command `text` imports, by the cursor's `imports` rules, each once.
pub(super) fn imports(spec: &CursorSpec, text: &str) -> Vec<String> {
    names(&spec.imports.rules, text)
}

/// The names `rules` find in `text`, each once, in order.
fn names(rules: &[LineRule], text: &str) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for rule in rules {
        let Some(template) = &rule.name else { continue };
        for (caps, item) in matches(rule, text) {
            let ctx = Values {
                caps: &caps,
                item: item.as_deref(),
                base: Path::new(""),
                root: Path::new("/"),
            };
            if let Ok(name) = ctx.expand(template) {
                if !name.is_empty() && !names.contains(&name) {
                    names.push(name);
                }
            }
        }
    }
    names
}

/// The input that loads the names `text` imports that are not in `done` yet, which it adds
/// them to (`None`: none, or the kind loads nothing itself).
pub(super) fn loads(
    spec: &CursorSpec,
    text: &str,
    done: &mut std::collections::BTreeSet<String>,
) -> Option<String> {
    let load = spec.imports.load.as_ref()?;
    let mut names = imports(spec, text);
    names.retain(|n| done.insert(n.clone()));
    (!names.is_empty()).then(|| {
        names
            .iter()
            .map(|n| super::input::fill(load, &[("name", n)]))
            .collect::<Vec<_>>()
            .join(" ")
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn rule(pattern: &str, split: Option<usize>, args: &[&str], dirs: &[&str]) -> LineRule {
        LineRule {
            pattern: Regex::new(&format!("(?m){pattern}")).unwrap(),
            split,
            each: None,
            args: args.iter().map(|s| (*s).to_owned()).collect(),
            inputs: Vec::new(),
            dirs: dirs.iter().map(|s| (*s).to_owned()).collect(),
            name: None,
        }
    }

    #[test]
    fn lines_become_arguments_and_load_paths_inside_the_root() {
        let root = std::env::temp_dir().join(format!("stdmcp-project-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("p/lib")).unwrap();
        let root = root.canonicalize().unwrap();
        let rules = [
            rule(
                r"^\s*(-[QR])\s+(\S+)\s+(\S+)",
                None,
                &["{1}", "{path:2}", "{3}"],
                &[],
            ),
            rule(r"^\s*INCLUDES\s*=(.*)$", Some(1), &[], &["{path:item}"]),
        ];
        let text = "# a comment\n-Q . P\n-R lib L # trailing\nINCLUDES = lib \\\n  ../../etc $(HOLDIR)/src\n";
        let got = read(&rules, &root, ("p/_CoqProject", text));
        let p = root.join("p").display().to_string();
        let lib = root.join("p/lib").display().to_string();
        let argv: Vec<String> = got
            .launch
            .unwrap()
            .argv
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(argv, ["-Q", p.as_str(), "P", "-R", lib.as_str(), "L"]);
        assert_eq!(got.dirs, [root.join("p/lib")]);
        assert_eq!(got.notes.len(), 2, "{:?}", got.notes);
        assert!(
            got.notes[0].contains("../../etc was passed over"),
            "{:?}",
            got.notes
        );
        assert!(got.notes[1].contains("names a variable"), "{:?}", got.notes);
        std::fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn imports_are_named_once_and_loaded_in_one_input() {
        let mut r = rule(r"\bopen\s+([^;]*);", Some(1), &[], &[]);
        r.name = Some("{item}".into());
        let mut anc = rule(
            r"^Ancestors\b((?:[ \t]*\n?[ \t]+[^\s]+)+)",
            Some(1),
            &[],
            &[],
        );
        anc.each = Some(Regex::new(r"^([A-Za-z0-9_']+)").unwrap());
        anc.name = Some("{item}Theory".into());
        let names = names(
            &[r, anc],
            "open aTheory HolKernel;\nopen aTheory;\nAncestors\n  list[qualified] arithmetic\n",
        );
        assert_eq!(
            names,
            ["aTheory", "HolKernel", "listTheory", "arithmeticTheory"]
        );
    }
}
