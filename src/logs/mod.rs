//! A tool's log files (README "Log files"): the `logs` key (globs relative to the call's
//! working directory), finding the files they match inside that directory, and adding the
//! tails of the logs a failed call changed to its result.
//!
//! A glob is a relative path whose components may use `*` (any run of characters, a leading
//! dot included) and `?` (one character); they never match `/`, so every file found lies at
//! the glob's depth below the working directory. Each file found is confined to the working
//! directory like a path parameter ([`crate::resolve::within`]): a symlink that leads out is skipped.
//!
//! The server opens what it checked: the working directory is opened once, beneath its root,
//! through descriptors ([`HeldWorkdir`], [`stdmcp::beneath`]); every directory listed and every
//! log read is opened beneath that descriptor, at the place the check resolved, and only a
//! regular file is read. A symlink or FIFO renamed into a checked name meanwhile is refused.

pub(crate) mod tools;

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde_json::Value;

use crate::resolve::within;
use crate::spec::logs::{component_matches, Logs};
use crate::spec::{Cwd, ParamType, ToolSpec};
use crate::spool::{tail_slice, Stop};
use stdmcp::beneath::{beneath, Dir};
use stdmcp::mcp::{CallToolResult, Content};

/// Most files a listing returns.
pub(crate) const MAX_FILES: usize = 256;
/// Bytes of each log's tail added to a failed call's result.
pub(crate) const TAIL_BYTES: u64 = 4096;
/// Logs whose tails a failed call's result carries (the most recently changed).
pub(crate) const MAX_TAILS: usize = 3;
fn wild(component: &str) -> bool {
    component.contains(['*', '?'])
}

/// What [`Logs::list`] found, and what it cut.
#[derive(Debug, Default, PartialEq)]
pub struct Listing {
    /// The log files, sorted by name, at most [`MAX_FILES`].
    pub files: Vec<LogFile>,
    /// Names matching a glob beyond the first [`MAX_FILES`] log files, neither listed nor
    /// opened (so some may turn out not to be regular files).
    pub left_out: usize,
    /// Names not looked at: beyond [`stdmcp::beneath::MAX_NAMES`] in one directory or matching
    /// the last component of a glob, or directories beyond [`MAX_FILES`] at one level of a
    /// glob (each counts one: its entries are unknown).
    pub unsearched: usize,
}

impl Listing {
    /// Whether anything was cut.
    pub fn cut(&self) -> bool {
        self.left_out > 0 || self.unsearched > 0
    }
}

/// A call's working directory, opened: its canonical path (what names inside it are
/// resolved against, and what messages show) and its descriptor (what they are opened
/// beneath).
#[derive(Debug)]
pub struct HeldWorkdir {
    /// The canonical path it had when it was opened.
    pub path: PathBuf,
    dir: Dir,
}

impl HeldWorkdir {
    /// The working directory of tool `spec` that `arg` names (the tool's `cwd` parameter, or
    /// its default), confined to the parameter's root and opened beneath it; a tool with a
    /// fixed `cwd` takes no `arg`.
    pub fn of(
        spec: &ToolSpec,
        roots: &BTreeMap<String, PathBuf>,
        arg: Option<&str>,
    ) -> Result<HeldWorkdir, String> {
        match (&spec.cwd, arg) {
            (Some(Cwd::Fixed(dir)), None) => HeldWorkdir::open(dir, dir),
            (Some(Cwd::Fixed(dir)), Some(_)) => Err(format!(
                "{} always runs in {}: leave workdir out",
                spec.name,
                dir.display()
            )),
            (Some(Cwd::Param(p)), arg) => {
                let param = spec
                    .params
                    .get(p)
                    .ok_or("the tool's cwd parameter is missing")?;
                let ParamType::Path { root, .. } = &param.kind else {
                    return Err("the tool's cwd parameter is not a path".into());
                };
                let root_dir = roots.get(root).ok_or("the tool's root is missing")?;
                let value = arg
                    .map(str::to_owned)
                    .or_else(|| param.default.as_ref()?.as_str().map(str::to_owned))
                    .ok_or_else(|| {
                        format!(
                            "workdir is required: a directory under the root {root}, as the tool's {p}"
                        )
                    })?;
                let dir = within(root_dir, Path::new(&value), true).map_err(|e| e.to_string())?;
                HeldWorkdir::open(root_dir, &dir).map_err(|e| match e.contains("not a directory") {
                    true => format!("{value} is not a directory"),
                    false => e,
                })
            }
            (None, _) => Err(format!("{} has no working directory", spec.name)),
        }
    }

    /// Opens `path` (resolved, inside `root`) beneath `root`.
    fn open(root: &Path, path: &Path) -> Result<HeldWorkdir, String> {
        let rel = beneath(root, path)
            .ok_or_else(|| format!("{} is outside {}", path.display(), root.display()))?;
        let dir = Dir::open(root)
            .and_then(|r| r.dir(rel))
            .map_err(|e| format!("cannot open the working directory {}: {e}", path.display()))?;
        Ok(HeldWorkdir {
            path: path.to_owned(),
            dir,
        })
    }

    /// Resolves `rel` inside the working directory ([`crate::resolve::within`]): the place, relative to it.
    fn resolve(&self, rel: &str) -> Result<PathBuf, String> {
        let p = within(&self.path, Path::new(rel), true).map_err(|e| e.to_string())?;
        beneath(&self.path, &p)
            .map(Path::to_path_buf)
            .ok_or_else(|| format!("{rel} leads outside the working directory"))
    }

    /// Opens the directory `rel` (`""`: the working directory itself).
    fn dir(&self, rel: &str) -> Result<Dir, String> {
        let at = self.resolve(if rel.is_empty() { "." } else { rel })?;
        self.dir
            .dir(&at)
            .map_err(|e| format!("cannot use {rel}: {e}"))
    }
}

/// Adds to `next` the paths `rel/part` that exist (or, for a literal part, may exist);
/// returns how many names of `rel` were not looked at (beyond [`stdmcp::beneath::MAX_NAMES`]).
fn expand(wd: &HeldWorkdir, rel: &str, part: &str, next: &mut Vec<String>) -> usize {
    let join = |name: &str| {
        if rel.is_empty() {
            name.to_owned()
        } else {
            format!("{rel}/{name}")
        }
    };
    if !wild(part) {
        next.push(join(part));
        return 0;
    }
    let Ok(read) = wd
        .dir(rel)
        .and_then(|d| d.names().map_err(|e| e.to_string()))
    else {
        return 0;
    };
    let mut names: Vec<String> = read
        .names
        .into_iter()
        .filter_map(|n| n.into_string().ok())
        .filter(|n| component_matches(part.as_bytes(), n.as_bytes()))
        .collect();
    names.sort();
    next.extend(names.iter().map(|n| join(n)));
    read.left_out
}

/// One log file.
#[derive(Clone, Debug, PartialEq)]
pub struct LogFile {
    /// Its path relative to the working directory, as the glob matched it.
    pub name: String,
    /// Size in bytes.
    pub size: u64,
    /// Last modification.
    pub modified: SystemTime,
}

impl LogFile {
    /// Opens log `name` of `wd`: the place it resolves to, opened beneath `wd`'s descriptor,
    /// a regular file.
    fn open(wd: &HeldWorkdir, name: &str) -> Result<(File, LogFile), String> {
        let at = wd.resolve(name)?;
        let (file, m) = wd
            .dir
            .file(&at)
            .map_err(|e| format!("cannot use {name}: {e}"))?;
        let f = LogFile {
            name: name.to_owned(),
            size: m.len(),
            modified: m.modified().unwrap_or(SystemTime::UNIX_EPOCH),
        };
        Ok((file, f))
    }
}

/// The logs of a call's working directory before it ran.
pub(crate) struct Snapshot {
    logs: Logs,
    tool: String,
    workdir: HeldWorkdir,
    /// The `workdir` argument that names it for the `log` tool (`None`: a fixed `cwd`).
    workdir_arg: Option<String>,
    before: BTreeMap<String, (u64, SystemTime)>,
}

impl Snapshot {
    /// Notes the logs of `spec` in the working directory `args` give it (opened now, so that
    /// the tails come from this directory whatever is renamed while the call runs).
    pub(crate) fn take(
        spec: &ToolSpec,
        roots: &BTreeMap<String, PathBuf>,
        args: &Value,
    ) -> Option<Snapshot> {
        let logs = spec.logs.clone()?;
        let workdir_arg = match &spec.cwd {
            Some(Cwd::Param(p)) => Some(
                args.get(p)
                    .and_then(Value::as_str)
                    .map(str::to_owned)
                    .or_else(|| {
                        spec.params
                            .get(p)?
                            .default
                            .as_ref()?
                            .as_str()
                            .map(str::to_owned)
                    })
                    .unwrap_or_else(|| ".".into()),
            ),
            _ => None,
        };
        let workdir = HeldWorkdir::of(spec, roots, workdir_arg.as_deref()).ok()?;
        let before = logs
            .list(&workdir)
            .files
            .into_iter()
            .map(|f| (f.name, (f.size, f.modified)))
            .collect();
        Some(Snapshot {
            logs,
            tool: spec.name.clone(),
            workdir,
            workdir_arg,
            before,
        })
    }

    /// Adds to a failed call's result the tails of the logs that changed while it ran,
    /// most recently changed first (reading them stops when `stop` says so).
    pub(crate) fn add_changed(&self, r: &mut CallToolResult, stop: &Stop) {
        let listing = self.logs.list(&self.workdir);
        let cut = listing.cut();
        let mut changed: Vec<LogFile> = listing
            .files
            .into_iter()
            .filter(|f| self.before.get(&f.name) != Some(&(f.size, f.modified)))
            .collect();
        if changed.is_empty() {
            return;
        }
        changed.sort_by(|a, b| {
            b.modified
                .cmp(&a.modified)
                .then_with(|| a.name.cmp(&b.name))
        });
        let mut text = String::new();
        for f in changed.iter().take(MAX_TAILS) {
            let tail = LogFile::open(&self.workdir, &f.name)
                .and_then(|(file, _)| {
                    tail_slice(Some(&file), TAIL_BYTES, TAIL_BYTES, stop).map_err(|e| e.to_string())
                })
                .map(|s| s.text())
                .unwrap_or_else(|e| format!("(cannot read it: {e})"));
            let shown = tail.len() as u64;
            let whole = if shown >= f.size {
                format!("all {} bytes", f.size)
            } else {
                format!("the last {shown} of {} bytes", f.size)
            };
            text.push_str(&format!(
                "--- log {} ({whole}; the `log` tool reads it: {}) ---\n{}",
                f.name,
                self.log_args(&f.name),
                tail
            ));
            if !text.ends_with('\n') {
                text.push('\n');
            }
        }
        if changed.len() > MAX_TAILS {
            let rest: Vec<&str> = changed[MAX_TAILS..]
                .iter()
                .map(|f| f.name.as_str())
                .collect();
            text.push_str(&format!(
                "--- {} more changed logs: {} (`logs` lists them) ---\n",
                rest.len(),
                rest.join(", ")
            ));
        }
        if cut {
            text.push_str(&format!(
                "--- changed logs were looked for among the first {MAX_FILES} log files only (`logs` says how many more there are) ---\n"
            ));
        }
        r.content.push(Content::text(text));
    }

    fn log_args(&self, name: &str) -> String {
        let mut v = serde_json::json!({"tool": self.tool, "name": name});
        if let Some(w) = &self.workdir_arg {
            v["workdir"] = Value::String(w.clone());
        }
        v.to_string()
    }
}

impl Logs {
    /// The log files in `wd`, sorted by name, at most [`MAX_FILES`], and what was cut.
    pub fn list(&self, wd: &HeldWorkdir) -> Listing {
        let mut found = BTreeMap::new();
        let mut left_out = std::collections::BTreeSet::new();
        let mut unsearched = 0;
        for g in &self.globs {
            let mut frontier = vec![String::new()];
            for (depth, part) in g.iter().enumerate() {
                let last = depth + 1 == g.len();
                let mut next = Vec::new();
                for rel in &frontier {
                    unsearched += expand(wd, rel, part, &mut next);
                }
                if !last {
                    next.retain(|rel| wd.dir(rel).is_ok());
                    // Directories beyond the cap are not searched: their entries are unknown.
                    unsearched += next.len().saturating_sub(MAX_FILES);
                    next.truncate(MAX_FILES);
                } else {
                    // Matching names beyond this many are not even counted one by one.
                    unsearched += next.len().saturating_sub(stdmcp::beneath::MAX_NAMES);
                    next.truncate(stdmcp::beneath::MAX_NAMES);
                }
                frontier = next;
            }
            for rel in frontier {
                if found.contains_key(&rel) {
                    continue;
                }
                if found.len() >= MAX_FILES {
                    // Counted, not opened: the listing opens at most MAX_FILES of them.
                    left_out.insert(rel);
                } else if let Ok((_, f)) = LogFile::open(wd, &rel) {
                    found.insert(rel, f);
                }
            }
        }
        Listing {
            files: found.into_values().collect(),
            left_out: left_out.len(),
            unsearched,
        }
    }

    /// Opens log `name` of `wd`: it must match a glob and be a regular file inside.
    pub fn open(&self, wd: &HeldWorkdir, name: &str) -> Result<(File, LogFile), String> {
        if !self.matches(name) {
            return Err(format!(
                "{name} is not one of the tool's log files ({})",
                self.describe()
            ));
        }
        LogFile::open(wd, name)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn listing_is_confined_to_the_working_directory() {
        let dir = std::env::temp_dir().join(format!("stdmcp-logs-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("w/.hol/logs")).unwrap();
        std::fs::write(dir.join("w/.hol/logs/aTheory"), "a").unwrap();
        std::fs::write(dir.join("secret"), "s").unwrap();
        std::os::unix::fs::symlink(dir.join("secret"), dir.join("w/.hol/logs/escape")).unwrap();
        std::fs::create_dir(dir.join("w/.hol/logs/sub")).unwrap();
        let path = dir.join("w").canonicalize().unwrap();
        let w = HeldWorkdir::open(&path, &path).unwrap();
        let logs = Logs {
            globs: vec![vec![".hol".into(), "logs".into(), "*".into()]],
        };
        let names: Vec<String> = logs.list(&w).files.into_iter().map(|f| f.name).collect();
        assert_eq!(names, [".hol/logs/aTheory"]);
        assert!(logs
            .open(&w, ".hol/logs/escape")
            .unwrap_err()
            .contains("outside"));
        assert!(logs
            .open(&w, "../secret")
            .unwrap_err()
            .contains("not one of"));
        assert!(logs
            .open(&w, ".hol/logs/sub")
            .unwrap_err()
            .contains("not a regular file"));
        let (mut f, meta) = logs.open(&w, ".hol/logs/aTheory").unwrap();
        let mut text = String::new();
        std::io::Read::read_to_string(&mut f, &mut text).unwrap();
        assert_eq!((text.as_str(), meta.size), ("a", 1));
        // The working directory is held by its descriptor: renamed away and replaced by a
        // symlink to a directory with logs of its own, nothing of that directory is read.
        std::fs::create_dir_all(dir.join(".hol/logs")).unwrap();
        std::fs::write(dir.join(".hol/logs/outside"), "s").unwrap();
        std::fs::rename(dir.join("w"), dir.join("w2")).unwrap();
        std::os::unix::fs::symlink(&dir, dir.join("w")).unwrap();
        assert_eq!(logs.list(&w), Listing::default());
        assert!(logs.open(&w, ".hol/logs/outside").is_err());
        std::fs::remove_dir_all(dir).unwrap();
    }
}
