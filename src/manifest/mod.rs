//! Loading a manifest (README "Manifest reference"; JSON Schema in
//! `docs/manifest.schema.json`): JSON read field by field into the data of `crate::spec`, every
//! problem named with its JSON path, and the checks `stdmcp check` adds (`lint`).
//!
//! Loading resolves everything once: programs to absolute paths (on `PATH` at startup), roots
//! to canonical directories, each default checked as a call's argument would be. Running a
//! call is `crate::call`; the server is assembled from the result by `crate::assemble`.

mod background;
mod confine;
mod cursor;
mod fields;
mod json;
mod limits;
pub(crate) mod lint;
mod logs;
mod missing;
mod param;
mod parse;
mod portfolio;
mod programs;
mod project;
mod remote;
mod session;
mod verdict;

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::spec::{Manifest, ManifestError};

/// The manifest served when none is configured.
pub(crate) const DEFAULT_MANIFEST: &str = include_str!("default.json");

impl Manifest {
    /// Reads and checks a manifest file; relative paths in it are relative to its directory.
    pub fn load(path: &Path) -> Result<Manifest, Vec<ManifestError>> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            vec![ManifestError {
                path: String::new(),
                problem: format!("cannot read {}: {e}", path.display()),
            }]
        })?;
        let base = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        Manifest::parse(&text, base)
    }

    /// Checks a manifest given as text; relative paths are relative to `base`.
    pub fn parse(text: &str, base: &Path) -> Result<Manifest, Vec<ManifestError>> {
        let value: Value = serde_json::from_str(text).map_err(|e| {
            vec![ManifestError {
                path: String::new(),
                problem: format!("not valid JSON: {e}"),
            }]
        })?;
        parse::manifest(&value, base)
    }

    /// The embedded default manifest. Its workspace root is `STDMCP_ROOT` if set, else the
    /// current directory, except that a current directory of `/` (as some clients start
    /// servers) means the home directory instead, when there is one.
    pub fn default_manifest() -> Result<Manifest, Vec<ManifestError>> {
        Manifest::parse(DEFAULT_MANIFEST, &default_root())
    }
}

/// A session kind's `cursor` object read on its own (for the fuzz target and the tests):
/// relative paths against `/`, a call limit of an hour.
pub(crate) fn cursor_of(
    v: &Value,
) -> Result<std::sync::Arc<crate::spec::cursor::CursorSpec>, Vec<ManifestError>> {
    let mut errs = json::Errors(Vec::new());
    let limit = std::time::Duration::from_secs(3600);
    let got = cursor::cursor(v, "cursor", (limit, Path::new("/")), &mut errs);
    match got {
        Some(c) if errs.0.is_empty() => Ok(c),
        _ => Err(errs.0),
    }
}

fn default_root() -> PathBuf {
    if let Some(r) = std::env::var_os("STDMCP_ROOT").filter(|r| !r.is_empty()) {
        return PathBuf::from(r);
    }
    // A home directory that is not there (a chroot, a container's nominal HOME) would make
    // the workspace unusable and the server refuse to start: `/` is served instead.
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .filter(|h| h.is_dir());
    match std::env::current_dir() {
        Ok(d) if d.parent().is_some() => d,
        Ok(d) => home.unwrap_or(d),
        Err(_) => home.unwrap_or_else(|| PathBuf::from(".")),
    }
}

/// Where `serve` finds its manifest when `--config` is not given: `STDMCP_CONFIG`, then
/// `./stdmcp.json`, then `$XDG_CONFIG_HOME/stdmcp/stdmcp.json` (or `~/.config/…`).
pub(crate) fn locate() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("STDMCP_CONFIG").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    let local = PathBuf::from("stdmcp.json");
    if local.is_file() {
        return Some(local);
    }
    let config_home = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
    let user = config_home.join("stdmcp").join("stdmcp.json");
    user.is_file().then_some(user)
}
