//! Every file access of the proof cursor, through descriptors: a path relative to a root is
//! walked one component at a time with `openat(O_NOFOLLOW)` from the root's descriptor, so no
//! symlink (in a directory or as the file) and no `..` leads out of the root, and only a
//! regular file is read (opened `O_NONBLOCK`, so a FIFO planted there cannot block the
//! server). A splice replaces the file atomically: a temporary file in the same directory,
//! written and `fsync`ed, then renamed over the old one.

use std::ffi::CString;
use std::fs::{File, Metadata};
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path};

/// Largest proof file read, in bytes.
pub const MAX_FILE: u64 = 8 * 1024 * 1024;

fn cstr(s: &[u8]) -> Result<CString, String> {
    CString::new(s).map_err(|_| "a path must not contain NUL".to_owned())
}

#[allow(unsafe_code)]
fn open_at(dir: Option<&OwnedFd>, name: &[u8], flags: i32, mode: u32) -> std::io::Result<OwnedFd> {
    let c = CString::new(name).map_err(|_| std::io::ErrorKind::InvalidInput)?;
    let at = dir.map_or(libc::AT_FDCWD, AsRawFd::as_raw_fd);
    // SAFETY: `c` is a valid C string and `at` a directory descriptor we own (or AT_FDCWD).
    let fd = unsafe { libc::openat(at, c.as_ptr(), flags | libc::O_CLOEXEC, mode) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `fd` was just opened and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

#[allow(unsafe_code)]
fn rename_at(dir: &OwnedFd, from: &CString, to: &CString) -> std::io::Result<()> {
    let d = dir.as_raw_fd();
    // SAFETY: `d` is an open directory and both names are valid C strings.
    let r = unsafe { libc::renameat(d, from.as_ptr(), d, to.as_ptr()) };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

#[allow(unsafe_code)]
fn unlink_at(dir: &OwnedFd, name: &CString) -> std::io::Result<()> {
    // SAFETY: `dir` is an open directory and `name` a valid C string.
    if unsafe { libc::unlinkat(dir.as_raw_fd(), name.as_ptr(), 0) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// The components of `rel`: plain names only (no `..`, no root, no `.` tricks), at least one.
fn names(rel: &str) -> Result<Vec<&[u8]>, String> {
    if rel.contains('\0') {
        return Err("a path must not contain NUL".into());
    }
    let mut out = Vec::new();
    for c in Path::new(rel).components() {
        match c {
            Component::Normal(n) => out.push(n.as_bytes()),
            Component::CurDir => {}
            _ => {
                return Err(format!(
                    "{rel:?} must be a path relative to the root, without `..`"
                ))
            }
        }
    }
    if out.is_empty() {
        return Err("the path names no file".into());
    }
    Ok(out)
}

/// The directory of `rel` (all but its last component), opened beneath `root`; and the file's
/// name.
fn parent<'a>(root: &Path, rel: &'a str) -> Result<(OwnedFd, &'a [u8]), String> {
    let parts = names(rel)?;
    let refuse = |e: std::io::Error| match e.raw_os_error() {
        Some(libc::ELOOP) | Some(libc::ENOTDIR) => {
            format!("{rel:?} leads through a symlink or a non-directory: refused")
        }
        _ => format!("cannot open {rel:?}: {e}"),
    };
    let root_c = cstr(root.as_os_str().as_bytes())?;
    let mut dir = open_at(
        None,
        root_c.as_bytes(),
        libc::O_RDONLY | libc::O_DIRECTORY,
        0,
    )
    .map_err(|e| format!("cannot open the root {}: {e}", root.display()))?;
    let (last, dirs) = parts.split_last().ok_or("the path names no file")?;
    for d in dirs {
        dir = open_at(
            Some(&dir),
            d,
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW,
            0,
        )
        .map_err(refuse)?;
    }
    Ok((dir, last))
}

/// Opens the regular file `name` in `dir` for reading (no symlink, no FIFO wait).
fn open_regular(dir: &OwnedFd, name: &[u8], rel: &str) -> Result<(File, Metadata), String> {
    let fd = open_at(
        Some(dir),
        name,
        libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY,
        0,
    )
    .map_err(|e| match e.raw_os_error() {
        Some(libc::ELOOP) => format!("{rel:?} is a symlink: refused"),
        _ => format!("cannot open {rel:?}: {e}"),
    })?;
    let file = File::from(fd);
    let st = file
        .metadata()
        .map_err(|e| format!("cannot stat {rel:?}: {e}"))?;
    if !st.file_type().is_file() {
        return Err(format!("{rel:?} is not a regular file: refused"));
    }
    if st.len() > MAX_FILE {
        return Err(format!("{rel:?} is larger than {MAX_FILE} bytes"));
    }
    Ok((file, st))
}

/// The text of `rel` beneath `root` (UTF-8).
pub fn read_beneath(root: &Path, rel: &str) -> Result<String, String> {
    let (dir, name) = parent(root, rel)?;
    let (file, _) = open_regular(&dir, name, rel)?;
    let mut bytes = Vec::new();
    file.take(MAX_FILE + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read {rel:?}: {e}"))?;
    String::from_utf8(bytes).map_err(|_| format!("{rel:?} is not UTF-8 text"))
}

/// Replaces the regular file `rel` beneath `root` with `bytes`, atomically (its mode kept).
pub fn replace_beneath(root: &Path, rel: &str, bytes: &[u8]) -> Result<(), String> {
    let (dir, name) = parent(root, rel)?;
    let (_, st) = open_regular(&dir, name, rel)?;
    let mut tmp_name = b".".to_vec();
    tmp_name.extend_from_slice(name);
    tmp_name.extend_from_slice(format!(".stdmcp-{}", std::process::id()).as_bytes());
    let tmp = open_at(
        Some(&dir),
        &tmp_name,
        libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW,
        st.permissions().mode() & 0o7777,
    )
    .map_err(|e| format!("cannot create a temporary file next to {rel:?}: {e}"))?;
    let tmp_c = cstr(&tmp_name)?;
    let name_c = cstr(name)?;
    let mut f = File::from(tmp);
    let written = f.write_all(bytes).and_then(|()| f.sync_all());
    let renamed = written.and_then(|()| rename_at(&dir, &tmp_c, &name_c));
    if let Err(e) = renamed {
        let _ = unlink_at(&dir, &tmp_c);
        return Err(format!("cannot write {rel:?}: {e}"));
    }
    // Syncing the directory makes the rename durable.
    let _ = File::from(dir).sync_all();
    Ok(())
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
        assert!(e.contains("not a regular file"), "{e}");
        std::fs::remove_file(root.join("fifo.v")).unwrap();
        let left: Vec<_> = std::fs::read_dir(root.join("d")).unwrap().collect();
        assert_eq!(left.len(), 1, "no temporary file left");
        std::fs::remove_dir_all(&base).unwrap();
    }
}
