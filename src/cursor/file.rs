//! Every file access of the proof cursor goes through [`stdmcp::beneath`]: a path relative to
//! the kind's root is opened beneath the root's descriptor (no symlink, no `..` leads out of
//! it), only a regular file is read (never a FIFO or device, never blocking), and a splice
//! replaces the file atomically (a temporary file in the same directory, written and
//! `fsync`ed, renamed over the old one, its permission bits kept).

use std::fmt;
use std::io::{self, Read};
use std::path::{Component, Path, PathBuf};

use stdmcp::beneath::Dir;

/// Largest proof file read, in bytes.
pub(super) const MAX_FILE: u64 = 8 * 1024 * 1024;

/// Why a proof file cannot be read or written; its text names the file as given.
#[derive(Debug)]
pub(super) enum FileError {
    /// The path holds a NUL byte.
    Nul,
    /// The path (as given) leaves the root or uses `..`.
    NotRelative(String),
    /// The path names no file.
    Empty,
    /// The root itself cannot be opened.
    Root(io::Error),
    /// The file (as given) cannot be read.
    Read(String, io::Error),
    /// The file (as given) cannot be written.
    Write(String, io::Error),
    /// The file (as given) is larger than [`MAX_FILE`].
    TooLarge(String),
    /// The file (as given) is not UTF-8.
    NotUtf8(String),
}

impl fmt::Display for FileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FileError::Nul => f.write_str("a path must not contain NUL"),
            FileError::NotRelative(rel) => write!(
                f,
                "{rel:?} must be a path relative to the root, without `..`"
            ),
            FileError::Empty => f.write_str("the path names no file"),
            FileError::Root(e) => write!(f, "cannot open the root: {e}"),
            FileError::Read(rel, e) => write!(f, "cannot read {rel:?}: {e}"),
            FileError::Write(rel, e) => write!(f, "cannot write {rel:?}: {e}"),
            FileError::TooLarge(rel) => write!(f, "{rel:?} is larger than {MAX_FILE} bytes"),
            FileError::NotUtf8(rel) => write!(f, "{rel:?} is not UTF-8 text"),
        }
    }
}

impl std::error::Error for FileError {}

impl FileError {
    /// The file is not there.
    pub(super) fn is_missing(&self) -> bool {
        matches!(self, FileError::Read(_, e) if e.kind() == io::ErrorKind::NotFound)
    }
}

/// When the regular file `rel` beneath `root` was last modified (`None`: it is not there, or
/// not a regular file).
pub(super) fn modified_beneath(root: &Path, rel: &Path) -> Option<std::time::SystemTime> {
    let rel = relative(rel.to_str()?).ok()?;
    let (_, meta) = Dir::open(root).and_then(|d| d.file(&rel)).ok()?;
    meta.modified().ok()
}

/// `rel` as a relative path of plain names (no `..`, no root), naming at least one.
fn relative(rel: &str) -> Result<PathBuf, FileError> {
    if rel.contains('\0') {
        return Err(FileError::Nul);
    }
    let mut out = PathBuf::new();
    for c in Path::new(rel).components() {
        match c {
            Component::Normal(n) => out.push(n),
            Component::CurDir => {}
            _ => return Err(FileError::NotRelative(rel.to_owned())),
        }
    }
    if out.as_os_str().is_empty() {
        return Err(FileError::Empty);
    }
    Ok(out)
}

/// The text of `rel` beneath `root` (UTF-8, at most [`MAX_FILE`] bytes).
pub(super) fn read_beneath(root: &Path, rel: &str) -> Result<String, FileError> {
    let path = relative(rel)?;
    let unreadable = |e| FileError::Read(rel.to_owned(), e);
    let (file, meta) = Dir::open(root)
        .and_then(|d| d.file(&path))
        .map_err(unreadable)?;
    if meta.len() > MAX_FILE {
        return Err(FileError::TooLarge(rel.to_owned()));
    }
    let mut bytes = Vec::new();
    file.take(MAX_FILE + 1)
        .read_to_end(&mut bytes)
        .map_err(unreadable)?;
    String::from_utf8(bytes).map_err(|_| FileError::NotUtf8(rel.to_owned()))
}

/// Replaces the regular file `rel` beneath `root` with `bytes`, atomically (its mode kept). The
/// file must exist already as a regular file: the cursor only writes proofs into its files.
pub(super) fn replace_beneath(root: &Path, rel: &str, bytes: &[u8]) -> Result<(), FileError> {
    let path = relative(rel)?;
    let dir = Dir::open(root).map_err(FileError::Root)?;
    let unwritable = |e| FileError::Write(rel.to_owned(), e);
    dir.file(&path).map_err(unwritable)?;
    dir.replace(&path, bytes, 0o644).map_err(unwritable)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn reads_and_replaces_beneath_the_root_only() {
        let base = std::env::temp_dir().join(format!("stdmcp-cursor-file-{}", std::process::id()));
        let root = base.join("root");
        std::fs::create_dir_all(root.join("d")).unwrap();
        std::fs::write(root.join("d/a.v"), "old").unwrap();
        std::fs::write(base.join("secret"), "s").unwrap();
        std::os::unix::fs::symlink(base.join("secret"), root.join("link")).unwrap();
        std::os::unix::fs::symlink(&base, root.join("up")).unwrap();
        assert_eq!(read_beneath(&root, "d/a.v").unwrap(), "old");
        replace_beneath(&root, "./d/a.v", b"new").unwrap();
        assert_eq!(std::fs::read_to_string(root.join("d/a.v")).unwrap(), "new");
        for bad in ["link", "up/secret", "../secret", "/etc/passwd", "d", ""] {
            assert!(read_beneath(&root, bad).is_err(), "{bad}");
            assert!(replace_beneath(&root, bad, b"x").is_err(), "{bad}");
        }
        assert_eq!(std::fs::read_to_string(base.join("secret")).unwrap(), "s");
        // A FIFO is refused without blocking on its open (nobody writes to it).
        #[allow(clippy::disallowed_methods)]
        let made = std::process::Command::new("mkfifo")
            .arg(root.join("fifo.v"))
            .status()
            .unwrap();
        assert!(made.success());
        let e = read_beneath(&root, "fifo.v").unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
        std::fs::remove_file(root.join("fifo.v")).unwrap();
        let left: Vec<_> = std::fs::read_dir(root.join("d")).unwrap().collect();
        assert_eq!(left.len(), 1, "no temporary file left");
        std::fs::remove_dir_all(&base).unwrap();
    }
}
