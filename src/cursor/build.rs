//! A proof file's dependencies inside its project, brought up to date before the file is
//! loaded (README "Proof files: projects"): found by the kind's `deps` (a program printing
//! make-style rules, or the file's imports), built in dependency order by the kind's `build`
//! program, each through the runner as a tool's program is (limits, cancel, the output
//! spool), within the cursor call's deadline; a dependency is rebuilt when it, or one of its
//! own, changed since its output was written.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use serde_json::{json, Value};

use super::env::Env;
use super::file::{modified_beneath, read_beneath};
use super::input::fill;
use super::project::{imports, Read};
use crate::call::run::{execute, How};
use crate::spec::project::{Build, Deps, ImportDep};
use crate::spec::{Cwd, Param, ParamType, PathKind, ToolSpec};

/// What bringing a file's dependencies up to date did.
#[derive(Debug, Default)]
pub(super) struct Built {
    /// The dependencies built (relative to the root), in order.
    pub built: Vec<String>,
    /// The dependencies found inside the project.
    pub found: usize,
}

impl Built {
    /// What the answer says of it (`None`: the file has no dependency in its project).
    pub(super) fn said(&self) -> Option<String> {
        match (self.found, self.built.len()) {
            (0, _) => None,
            (n, 0) => Some(format!(
                "Its {n} dependenc{} in the project {} up to date.",
                if n == 1 { "y" } else { "ies" },
                if n == 1 { "is" } else { "are" }
            )),
            (n, _) => Some(format!(
                "Built {} of its {n} dependencies in the project: {}.",
                self.built.len(),
                self.built.join(", ")
            )),
        }
    }
}

/// One dependency: its source relative to the root, what its `deps` rule gave it, and its
/// own dependencies (indices).
struct Dep {
    source: String,
    found: Found,
    deps: Vec<usize>,
}

/// What a `deps` rule gave a dependency: its stem (`{stem}` in the build's templates), what
/// the build is asked for (`{target}`), and what the build leaves.
#[derive(Clone, Default)]
struct Found {
    stem: String,
    target: String,
    output: Option<String>,
}

/// Brings the dependencies of `file` (relative to the root) up to date; `Err` is the call's
/// answer (the failing file, line and error; where the whole log is).
pub(super) fn dependencies(env: &Env<'_>, project: &Read, file: &str) -> Result<Built, String> {
    let Some(build) = &env.spec.build else {
        return Ok(Built::default());
    };
    let mut graph = Graph {
        env,
        build,
        project,
        nodes: Vec::new(),
        index: BTreeMap::new(),
    };
    let top = graph.visit((file, Found::default()), &mut Vec::new())?;
    let order: Vec<usize> = (0..graph.nodes.len()).filter(|&i| i != top).collect();
    let mut out = Built {
        found: order.len(),
        ..Built::default()
    };
    let mut outputs: Vec<Option<SystemTime>> = vec![None; graph.nodes.len()];
    for (k, &i) in order.iter().enumerate() {
        let (source, found) = (graph.nodes[i].source.clone(), graph.nodes[i].found.clone());
        let newest_dep = graph.nodes[i].deps.iter().filter_map(|&d| outputs[d]).max();
        let output = graph.output(&source, &found);
        let fresh = match (output, modified_beneath(env.root, Path::new(&source))) {
            (Some(out), Some(src)) => out >= src && newest_dep.is_none_or(|d| out >= d),
            _ => false,
        };
        if !fresh {
            (env.call.status)(&format!("building {}/{}: {source}", k + 1, order.len()));
            graph.build(&source, &found)?;
            out.built.push(source.clone());
        }
        outputs[i] = graph.output(&source, &found);
    }
    Ok(out)
}

/// The dependency graph of a file, found depth first (each node after its dependencies).
struct Graph<'a> {
    env: &'a Env<'a>,
    build: &'a Build,
    project: &'a Read,
    nodes: Vec<Dep>,
    index: BTreeMap<String, usize>,
}

impl Graph<'_> {
    /// Adds `source` after its dependencies; `path` holds the sources being visited (a
    /// cycle is refused).
    fn visit(
        &mut self,
        (source, found): (&str, Found),
        path: &mut Vec<String>,
    ) -> Result<usize, String> {
        if let Some(&i) = self.index.get(source) {
            return Ok(i);
        }
        if path.iter().any(|p| p == source) {
            path.push(source.to_owned());
            return Err(format!(
                "the project's files depend on each other in a circle: {}",
                path.join(" -> ")
            ));
        }
        path.push(source.to_owned());
        let mut deps = Vec::new();
        for (d, found) in self.direct(source)? {
            let i = self.visit((&d, found), path)?;
            if !deps.contains(&i) {
                deps.push(i);
            }
        }
        path.pop();
        let i = self.nodes.len();
        self.nodes.push(Dep {
            source: source.to_owned(),
            found,
            deps,
        });
        self.index.insert(source.to_owned(), i);
        Ok(i)
    }

    /// The dependencies of `source` inside the project (relative to the root), with what
    /// their rule gave them.
    fn direct(&self, source: &str) -> Result<Vec<(String, Found)>, String> {
        // Each candidate: a file name to look for (relative to the source's directory, or to
        // a directory of the load path, or absolute), and what it would be.
        let candidates: Vec<(String, Found)> = match &self.build.deps {
            Deps::Program {
                program,
                args,
                matches,
                source: file,
            } => {
                let doing = "finding the dependencies of";
                let out = self.run(program, args, (source, &Found::default()), doing)?;
                prerequisites(&out)
                    .iter()
                    .filter_map(|p| {
                        let stem = matches.captures(p)?.name("stem")?.as_str().to_owned();
                        Some((fill(file, &[("stem", &stem)]), found(&stem, None)))
                    })
                    .collect()
            }
            Deps::Imports(rules) => {
                let text = read_beneath(self.env.root, source).map_err(|e| e.to_string())?;
                let mut all = Vec::new();
                for n in imports(self.env.spec, &text) {
                    for r in rules {
                        let Some(c) = r.matches.captures(&n) else {
                            continue;
                        };
                        let stem = c.name("stem").map_or("", |m| m.as_str());
                        all.push((fill(&r.source, &[("stem", stem)]), found(stem, Some(r))));
                    }
                }
                all
            }
        };
        let dir = parent(source);
        let mut out: Vec<(String, Found)> = Vec::new();
        for (name, f) in candidates {
            let mut places =
                std::iter::once(self.env.root.join(&dir)).chain(self.project.dirs.iter().cloned());
            let Some(at) = places
                .find_map(|p| crate::resolve::within(self.env.root, &p.join(&name), true).ok())
            else {
                continue;
            };
            let rel = relative(self.env.root, &at);
            if rel != source && !out.iter().any(|(r, _)| *r == rel) {
                out.push((rel, f));
            }
        }
        Ok(out)
    }

    /// When the build's output for `source` was written (`None`: there is none).
    fn output(&self, source: &str, found: &Found) -> Option<SystemTime> {
        let template = found.output.as_deref().unwrap_or(&self.build.output);
        let rel = Path::new(&parent(source)).join(fill(template, &vars(source, found)));
        modified_beneath(self.env.root, &rel)
    }

    /// Builds `source`; `Err`: the answer saying where it failed.
    fn build(&self, source: &str, found: &Found) -> Result<(), String> {
        self.run(
            &self.build.program,
            &self.build.args,
            (source, found),
            "building",
        )
        .map(drop)
    }

    /// Runs `program` with `args` for `source` in its directory, through the runner; its
    /// stdout, or the answer saying why it failed (`doing` says what the run was for).
    fn run(
        &self,
        program: &Path,
        args: &[String],
        (source, found): (&str, &Found),
        doing: &str,
    ) -> Result<String, String> {
        let env = self.env;
        let launch = self.project.launch.as_ref();
        let project: Vec<String> = launch
            .map(|l| {
                l.argv
                    .iter()
                    .map(|a| a.to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        let absolute = env.root.join(source).to_string_lossy().into_owned();
        let mut argv = Vec::new();
        for a in args {
            match a.as_str() {
                "{project}" => argv.extend(project.iter().cloned()),
                _ => {
                    let mut v = vars(source, found);
                    v.push(("source", &absolute));
                    argv.push(fill(a, &v));
                }
            }
        }
        let remaining = env.call.deadline.saturating_duration_since(Instant::now());
        let spec = tool(env, program, argv, remaining);
        let how = How {
            cancel: env.token.clone(),
            call_id: crate::call::new_call_id(),
            timeout: Some(remaining),
            on_line: Arc::new(|_, _| {}),
        };
        let roots = BTreeMap::from([("root".to_owned(), env.root.to_path_buf())]);
        let ran = execute(&spec, &roots, &json!({"dir": parent(source)}), how);
        let structured = ran.result.structured_content.clone().unwrap_or(Value::Null);
        let stdout = structured["stdout"].as_str().unwrap_or_default().to_owned();
        if ran.success {
            return Ok(stdout);
        }
        let text = structured["stderr"].as_str().unwrap_or_default();
        let output = format!("{stdout}\n{text}");
        let place = self
            .build
            .error
            .iter()
            .find_map(|re| re.captures(&output))
            .map(|c| {
                let at = |k: &str| c.name(k).map(|m| m.as_str().to_owned());
                match (at("file"), at("line"), at("error")) {
                    (f, l, Some(e)) => format!(
                        "{}{}: {e}",
                        f.unwrap_or_else(|| source.to_owned()),
                        l.map(|l| format!(", line {l}")).unwrap_or_default()
                    ),
                    (_, _, None) => c.get(0).map_or("", |m| m.as_str()).to_owned(),
                }
            });
        let call = structured["callId"].as_str().unwrap_or_default();
        let why = if ran.timed_out {
            "the call's deadline passed".to_owned()
        } else if ran.cancelled {
            "it was cancelled".to_owned()
        } else {
            place.unwrap_or_else(|| first_lines(&output))
        };
        let root = format!("{}/", env.root.display());
        Err(format!(
            "{doing} {source} failed ({}): {}\n{}",
            program.display(),
            why.replace(&root, ""),
            crate::spool::tool::kept_sentence(crate::spool::Spool::global(), call)
        ))
    }
}

/// The values a build template names for `source`: `{stem}` (what its `deps` rule gave it;
/// else its name without extension), `{target}`, `{dir}` (its directory, relative to the
/// root), `{file}` (its name).
fn vars<'a>(source: &'a str, found: &'a Found) -> Vec<(&'static str, &'a str)> {
    let name = source.rsplit('/').next().unwrap_or(source);
    let stem = match found.stem.as_str() {
        "" => name.split('.').next().unwrap_or(name),
        s => s,
    };
    let dir = source.rfind('/').map_or(".", |i| &source[..i]);
    vec![
        ("stem", stem),
        ("target", &found.target),
        ("dir", dir),
        ("file", name),
    ]
}

/// What rule `r` (none: a program's rules) gives a dependency of stem `stem` (of a path, its
/// file name).
fn found(stem: &str, r: Option<&ImportDep>) -> Found {
    let stem = Path::new(stem)
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let target = r
        .and_then(|r| r.target.as_deref())
        .map_or_else(|| stem.clone(), |t| fill(t, &[("stem", &stem)]));
    Found {
        output: r.and_then(|r| r.output.clone()),
        target,
        stem,
    }
}

/// The directory of `source` (relative to the root; `.` for the root itself).
fn parent(source: &str) -> String {
    source
        .rfind('/')
        .map_or(".".to_owned(), |i| source[..i].to_owned())
}

/// `at` (inside `root`) relative to it.
fn relative(root: &Path, at: &Path) -> String {
    at.strip_prefix(root)
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_else(|_| at.to_string_lossy().into_owned())
}

/// The prerequisites of make-style rules (`targets: prerequisites`, `\`-continued lines).
fn prerequisites(out: &str) -> Vec<String> {
    out.replace("\\\n", " ")
        .lines()
        .filter_map(|l| {
            l.split_once(": ")
                .or_else(|| l.strip_suffix(':').map(|t| (t, "")))
        })
        .flat_map(|(_, pre)| {
            pre.split_whitespace()
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The first lines of a failed run's output.
fn first_lines(output: &str) -> String {
    let lines: Vec<&str> = output.trim().lines().take(8).collect();
    lines.join("\n")
}

/// A tool that runs `program` with `argv` in the directory the call's `dir` names (under the
/// kind's root), with the kind's environment and limits, for at most `timeout`.
fn tool(
    env: &Env<'_>,
    program: &Path,
    argv: Vec<String>,
    timeout: std::time::Duration,
) -> ToolSpec {
    let kind = env.kind;
    let dir = Param {
        description: None,
        kind: ParamType::Path {
            root: "root".into(),
            must_exist: true,
            kind: PathKind::Dir,
            write: false,
        },
        required: true,
        default: None,
        allow_leading_dash: false,
        allow_metacharacters: false,
        max_length: 4096,
        in_code: false,
        env: None,
    };
    ToolSpec {
        name: format!("{}_build", kind.name),
        title: None,
        description: String::new(),
        annotations: stdmcp::mcp::ToolAnnotations::default(),
        program: program.to_path_buf(),
        args: argv
            .into_iter()
            .map(crate::spec::ArgPart::Literal)
            .collect(),
        params: BTreeMap::from([("dir".to_owned(), dir)]),
        cwd: Some(Cwd::Param("dir".into())),
        env: kind.env.clone(),
        pass_env: kind.pass_env.clone(),
        stdin: None,
        timeout,
        background: None,
        kill_grace: std::time::Duration::from_secs(1),
        max_output_bytes: 64 * 1024,
        success_codes: vec![0],
        progress: None,
        line_buffered: false,
        limits: kind.limits,
        remote: crate::spec::remote::Remote::default(),
        logs: None,
        verdict: None,
        portfolio: Vec::new(),
        confine: kind.confine.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn make_rules_give_their_prerequisites() {
        let out = "C.vo C.glob C.v.beautified C.required_vo: C.v B.vo\nC.vio: C.v B.vio\nB.vo B.glob: B.v \\\n  A.vo /usr/lib/coq/Init.vo\n";
        assert_eq!(
            prerequisites(out),
            [
                "C.v",
                "B.vo",
                "C.v",
                "B.vio",
                "B.v",
                "A.vo",
                "/usr/lib/coq/Init.vo"
            ]
        );
        let none = Found::default();
        assert_eq!(
            vars("sub/Lists.v", &none),
            [
                ("stem", "Lists"),
                ("target", ""),
                ("dir", "sub"),
                ("file", "Lists.v")
            ]
        );
        let f = found("/abs/foo", None);
        assert_eq!(
            vars("a/fooScript.sml", &f)[..2],
            [("stem", "foo"), ("target", "foo")]
        );
        assert_eq!(parent("A.v"), ".");
    }
}
