//! A caller's path resolved inside its root: the one check of "inside the root" for path
//! parameters, working directories, log files and proof files. The path is resolved one
//! component at a time, from `/`,
//! following every symlink (a dangling one too, to where it points) and applying `..` to the
//! place reached so far, so the result is the real place the program will touch, free of
//! symlinks; it must lie inside the root. The program is given that resolved path.
//!
//! This is a check made before the program starts: someone who can change the root's
//! contents concurrently (replace a directory by a symlink between the check and the
//! program's `open`) is not stopped by it (README "Security model").

use std::ffi::OsString;
use std::fmt;
use std::io::ErrorKind;
use std::path::{Component, Path, PathBuf};

/// Symlinks followed while resolving one path (Linux's `MAXSYMLINKS`).
const MAX_LINKS: usize = 40;

/// Why a path is refused.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Refusal {
    /// It leads outside its root.
    Outside(String),
    /// It is empty, missing, or cannot be resolved.
    Unusable(String),
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::Outside(s) | Refusal::Unusable(s) => f.write_str(s),
        }
    }
}

/// Pushes the components of `p` on `todo` so that the first is popped first; `/` stands for
/// the root directory (a name never contains `/`).
fn push_components(todo: &mut Vec<OsString>, p: &Path) {
    let parts: Vec<OsString> = p
        .components()
        .map(|c| match c {
            Component::RootDir | Component::Prefix(_) => OsString::from("/"),
            Component::CurDir => OsString::from("."),
            Component::ParentDir => OsString::from(".."),
            Component::Normal(n) => n.to_owned(),
        })
        .collect();
    todo.extend(parts.into_iter().rev());
}

/// Resolves `p` (relative to `root`, or absolute) and checks that it lands inside `root`
/// (canonical). With `must_exist` false the last component may be missing: the result is
/// then where it would be created, and a dangling symlink there counts as leading to its
/// target.
pub(crate) fn within(root: &Path, p: &Path, must_exist: bool) -> Result<PathBuf, Refusal> {
    if p.as_os_str().is_empty() {
        return Err(Refusal::Unusable(
            "the path is empty (use . for the root itself)".into(),
        ));
    }
    // The same words whatever lies outside, so that refusals reveal nothing about it.
    let outside = || {
        Refusal::Outside(format!(
            "{} leads outside the allowed directory {}",
            p.display(),
            root.display()
        ))
    };
    let mut todo = Vec::new();
    push_components(&mut todo, &root.join(p));
    let mut at = PathBuf::from("/");
    let mut links = 0;
    while let Some(part) = todo.pop() {
        match part.to_str() {
            Some("/") => at = PathBuf::from("/"),
            Some(".") => {}
            Some("..") => {
                at.pop();
            }
            _ => {
                let next = at.join(&part);
                // Only the root and its ancestors (real directories, the root being
                // canonical) are ever looked at: a walk that steps outside is refused before
                // it can learn what exists there, even if it would come back.
                if !next.starts_with(root) && !root.starts_with(&next) {
                    return Err(outside());
                }
                let fail = |why: String| {
                    if next.starts_with(root) {
                        Refusal::Unusable(format!("{} cannot be used: {why}", p.display()))
                    } else {
                        // Say nothing about what exists outside the root.
                        outside()
                    }
                };
                match std::fs::symlink_metadata(&next) {
                    Ok(m) if m.file_type().is_symlink() => {
                        links += 1;
                        if links > MAX_LINKS {
                            return Err(fail("too many levels of symbolic links".into()));
                        }
                        let target = std::fs::read_link(&next)
                            .map_err(|e| fail(format!("{}: {e}", next.display())))?;
                        push_components(&mut todo, &target);
                    }
                    Ok(m) if !m.is_dir() && todo.iter().any(|t| t != ".") => {
                        return Err(fail(format!("{} is not a directory", next.display())));
                    }
                    Ok(_) => at = next,
                    Err(e) if e.kind() == ErrorKind::NotFound => {
                        if must_exist || !todo.is_empty() {
                            return Err(fail(format!("{} does not exist", next.display())));
                        }
                        at = next;
                    }
                    Err(e) => return Err(fail(format!("{}: {e}", next.display()))),
                }
            }
        }
    }
    if at.starts_with(root) {
        Ok(at)
    } else {
        Err(outside())
    }
}

/// `dir` (relative to `root`) resolved [`within`] `root`: an existing directory.
pub(crate) fn dir_within(root: &Path, dir: &str) -> Result<PathBuf, Refusal> {
    if dir.contains('\0') {
        return Err(Refusal::Unusable(
            "a directory name must not contain NUL".into(),
        ));
    }
    let resolved = within(root, Path::new(dir), true).map_err(|e| match e {
        Refusal::Outside(_) => Refusal::Outside(format!(
            "the directory {dir:?} is outside the root {}",
            root.display()
        )),
        unusable => unusable,
    })?;
    if resolved.is_dir() {
        Ok(resolved)
    } else {
        Err(Refusal::Unusable(format!("{dir} is not a directory")))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn setup(name: &str) -> (PathBuf, PathBuf) {
        let dir =
            std::env::temp_dir().join(format!("stdmcp-resolve-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("root/sub")).unwrap();
        std::fs::create_dir_all(dir.join("out")).unwrap();
        std::fs::write(dir.join("root/f"), "").unwrap();
        let dir = dir.canonicalize().unwrap();
        (dir.join("root"), dir)
    }

    #[test]
    fn resolves_inside_and_refuses_every_way_out() {
        let (root, dir) = setup("ways");
        symlink(dir.join("out/new"), root.join("dangle")).unwrap();
        symlink("sub", root.join("s")).unwrap();
        symlink(dir.join("out"), root.join("o")).unwrap();
        symlink("self", root.join("self")).unwrap();
        let ok = |p: &str, must: bool| within(&root, Path::new(p), must);
        assert_eq!(ok(".", true).unwrap(), root);
        assert_eq!(ok(root.to_str().unwrap(), true).unwrap(), root);
        assert_eq!(ok("s/../f", true).unwrap(), root.join("f"));
        assert_eq!(ok("s/new", false).unwrap(), root.join("sub/new"));
        assert_eq!(ok("sub/./", true).unwrap(), root.join("sub"));
        // A link to an absolute path inside the root walks down through its ancestors.
        symlink(root.join("sub"), root.join("abs")).unwrap();
        assert_eq!(ok("abs", true).unwrap(), root.join("sub"));
        assert_eq!(ok("abs/../f", true).unwrap(), root.join("f"));
        assert_eq!(ok("../root/f", true).unwrap(), root.join("f"));
        // `..` applies to where a symlink led; a walk that leaves the root is refused even
        // if it comes back, the same way whether what it passed exists or not.
        for p in [
            "o/../root/f",
            "../out/../root/f",
            "../nope/../root/f",
            "o/../out",
        ] {
            let why = format!("{p} leads outside the allowed directory {}", root.display());
            assert_eq!(ok(p, true), Err(Refusal::Outside(why)), "{p}");
        }
        for p in [
            "dangle",
            "o/new",
            "..",
            "../out",
            "/",
            "/etc/passwd",
            "sub/../../root/../out/x",
        ] {
            assert!(matches!(ok(p, false), Err(Refusal::Outside(_))), "{p}");
        }
        // What exists outside the root is not revealed.
        for p in ["/nonexistent/x", "/etc/passwd", "o/missing/x"] {
            let why = format!("{p} leads outside the allowed directory {}", root.display());
            assert_eq!(ok(p, true), Err(Refusal::Outside(why)));
        }
        assert!(ok("self", false)
            .unwrap_err()
            .to_string()
            .contains("too many levels"));
        assert!(ok("", false).unwrap_err().to_string().contains("empty"));
        assert!(ok("f/x", false)
            .unwrap_err()
            .to_string()
            .contains("is not a directory"));
        assert!(ok("missing/x", false)
            .unwrap_err()
            .to_string()
            .contains("does not exist"));
        assert!(ok("missing", true)
            .unwrap_err()
            .to_string()
            .contains("does not exist"));
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_directory_within_is_an_existing_directory() {
        let (root, dir) = setup("dirs");
        symlink(dir.join("out"), root.join("o")).unwrap();
        assert_eq!(dir_within(&root, "sub").unwrap(), root.join("sub"));
        assert_eq!(dir_within(&root, ".").unwrap(), root);
        for (d, why) in [
            ("f", "is not a directory"),
            ("o", "is outside the root"),
            ("..", "is outside the root"),
            ("missing", "does not exist"),
            ("a\0b", "NUL"),
        ] {
            let e = dir_within(&root, d).unwrap_err().to_string();
            assert!(e.contains(why), "{d}: {e}");
        }
        std::fs::remove_dir_all(dir).unwrap();
    }
}
