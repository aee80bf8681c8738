//! A proof file's project, as a kind's cursor declares it (README "Proof files: projects"):
//! the project file found upward from the proof file, what its lines give the program, the
//! names a file imports, and how the file's dependencies inside the project are built before
//! it is loaded. Nothing here is prover-specific: `examples/rocq.json` and
//! `examples/hol4.json` spell Rocq's `_CoqProject` and `coqc`, HOL4's `Holmakefile` and
//! `Holmake`.
//!
//! Templates name the values they take in braces: `{1}`…`{9}` (a pattern's groups), `{item}`
//! (one word of a `split` group), `{path:1}`, `{path:item}` (that value as a path relative to
//! the project file's directory, resolved inside the kind's root: absolute), `{project}` (the
//! project's arguments, one argument each), `{source}`, `{stem}`, `{dir}`, `{name}`.

use std::path::PathBuf;

use regex_lite::Regex;

/// How the project a proof file belongs to is found and read.
#[derive(Clone, Debug)]
pub struct Project {
    /// The project file's name (`_CoqProject`, `Holmakefile`), looked for in the proof file's
    /// directory, then upward, never above the kind's root.
    pub file: String,
    /// What its lines give the program, each rule tried on each line (`\`-continued lines
    /// joined, `#` comments removed).
    pub lines: Vec<LineRule>,
}

/// One rule over the lines of a project file (or over a proof file's text, for imports).
#[derive(Clone, Debug)]
pub struct LineRule {
    /// Matched on each line; its numbered groups are `{1}`…`{9}` in the templates.
    pub pattern: Regex,
    /// A group whose words are taken one at a time, each as `{item}` (`INCLUDES = a b`).
    pub split: Option<usize>,
    /// Each word of `split` must match this; its first group (else the whole match) is
    /// `{item}` (`list[qualified]` is `list`). Words that do not match are passed over.
    pub each: Option<Regex>,
    /// Arguments of the program, after the kind's own.
    pub args: Vec<String>,
    /// Inputs sent once the program started, after the kind's startup inputs.
    pub inputs: Vec<String>,
    /// Directories of the project's load path: where a file's imports are looked for.
    pub dirs: Vec<String>,
    /// For imports: the name imported (`{item}Theory`).
    pub name: Option<String>,
}

/// The names a proof file imports, and what loads one before the text that imports it.
#[derive(Clone, Debug, Default)]
pub struct Imports {
    /// Rules over the file's text outside blocks; each gives names (`name`).
    pub rules: Vec<LineRule>,
    /// The input that loads one name (`{name}`): before a command that imports names, their
    /// loads are sent as one input, joined by spaces (HOL4's `load "…";`).
    pub load: Option<String>,
}

/// How a proof file's dependencies inside its project are brought up to date before it is
/// loaded.
#[derive(Clone, Debug)]
pub struct Build {
    /// How a file's dependencies are found.
    pub deps: Deps,
    /// The program that builds one dependency (absolute), run in the dependency's directory.
    pub program: PathBuf,
    /// Its argument templates: `{project}`, `{source}`, `{stem}`, `{dir}`, `{target}` (what
    /// the dependency's import rule asks for).
    pub args: Vec<String>,
    /// What the build leaves, relative to the dependency's directory (`{stem}.vo`): when it
    /// is newer than the dependency and than what the dependency depends on, the dependency
    /// is up to date.
    pub output: String,
    /// Where a failed build's first error is in its output: patterns with the groups `file`,
    /// `line` and `error` (each optional), tried in order, the first that matches said.
    pub error: Vec<Regex>,
}

/// How a file's dependencies are found.
#[derive(Clone, Debug)]
pub enum Deps {
    /// A program that prints make-style rules (`targets: prerequisites`) for a file, run in
    /// its directory: the prerequisites that match `matches` (its group `stem`) are
    /// dependencies, each the file `source` there.
    Program {
        /// The program, absolute.
        program: PathBuf,
        /// Its argument templates: `{project}`, `{source}`.
        args: Vec<String>,
        /// Which prerequisites are dependencies, and their stem.
        matches: Regex,
        /// A dependency's source: `{stem}`.
        source: String,
    },
    /// The file's imports that match one of these rules and name a file in the file's
    /// directory or a directory of its project's load path.
    Imports(Vec<ImportDep>),
}

/// Which imports are dependencies, the file each names, and how it is built.
#[derive(Clone, Debug)]
pub struct ImportDep {
    /// Which import names are dependencies, and their stem (its group `stem`).
    pub matches: Regex,
    /// A dependency's source: `{stem}` (`{stem}Script.sml`).
    pub source: String,
    /// What the build program is asked for (`{target}` in its arguments): `{stem}`.
    pub target: Option<String>,
    /// What the build leaves, relative to the dependency's directory, if not the build's.
    pub output: Option<String>,
}
