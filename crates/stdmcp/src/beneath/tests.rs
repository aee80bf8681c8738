#![allow(clippy::unwrap_used)]

use super::*;
use std::io::Read;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::PathBuf;
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;
use std::time::Duration;

const SECRET: &str = "SECRET-MARKER-outside-the-root";

/// `dir/root` with `sub/log` (a regular file) and `dir/secret` outside it.
fn setup(name: &str) -> (PathBuf, PathBuf) {
    let dir = std::env::temp_dir().join(format!("stdmcp-beneath-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("root/sub")).unwrap();
    std::fs::create_dir_all(dir.join("out")).unwrap();
    std::fs::write(dir.join("root/sub/log"), "inside").unwrap();
    std::fs::write(dir.join("secret"), SECRET).unwrap();
    std::fs::write(dir.join("out/log"), SECRET).unwrap();
    let dir = dir.canonicalize().unwrap();
    (dir.join("root"), dir)
}

#[allow(unsafe_code)]
fn mkfifo(p: &Path) {
    let c = CString::new(p.as_os_str().as_bytes()).unwrap();
    // SAFETY: mkfifo reads a NUL-terminated path alive for the call.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

/// Swaps two names atomically (`renameat2(RENAME_EXCHANGE)`).
#[allow(unsafe_code)]
pub(crate) fn exchange(a: &Path, b: &Path) {
    let c = |p: &Path| CString::new(p.as_os_str().as_bytes()).unwrap();
    let (a, b) = (c(a), c(b));
    // SAFETY: renameat2 reads two NUL-terminated paths alive for the call.
    let r = unsafe { libc::renameat2(AT, a.as_ptr(), AT, b.as_ptr(), libc::RENAME_EXCHANGE) };
    assert_eq!(r, 0, "{}", io::Error::last_os_error());
}

/// Paths relative to the working directory.
const AT: libc::c_int = libc::AT_FDCWD;

/// Runs `f` both ways: `openat2` (where the kernel has it) and the walk.
fn both(f: impl Fn(bool)) {
    for walk in [false, true] {
        WALK.with(|w| w.set(walk));
        f(walk);
    }
    WALK.with(|w| w.set(false));
}

fn read(f: &mut File) -> String {
    let mut s = String::new();
    f.read_to_string(&mut s).unwrap();
    s
}

#[test]
fn only_the_checked_regular_file_is_opened() {
    let (root, dir) = setup("open");
    symlink(dir.join("secret"), root.join("abs")).unwrap();
    symlink("sub/log", root.join("rel")).unwrap();
    symlink(dir.join("out"), root.join("outdir")).unwrap();
    symlink("sub", root.join("subdir")).unwrap();
    mkfifo(&root.join("fifo"));
    let r = Dir::open(&root).unwrap();
    both(|walk| {
        let (mut f, m) = r.file(Path::new("sub/log")).unwrap();
        assert_eq!(
            (read(&mut f).as_str(), m.len()),
            ("inside", 6),
            "walk {walk}"
        );
        assert_eq!(
            read(&mut r.file(Path::new("./sub/./log")).unwrap().0),
            "inside"
        );
        // Symlinks, even those that stay inside, are refused: the check resolved them.
        for p in ["abs", "rel", "outdir/log", "subdir/log"] {
            let e = r.file(Path::new(p)).unwrap_err();
            assert!(
                e.to_string().contains("symbolic link"),
                "{p} walk {walk}: {e}"
            );
        }
        // A FIFO is refused at once, without a writer.
        let e = r.file(Path::new("fifo")).unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
        assert!(r.file(Path::new("sub")).is_err());
        for p in ["../secret", "/etc/passwd", "sub/../../secret", ""] {
            assert!(r.file(Path::new(p)).is_err(), "{p}");
        }
        assert!(r.dir(Path::new("outdir")).is_err());
        let mut names = r.dir(Path::new("sub")).unwrap().names().unwrap().names;
        names.sort();
        assert_eq!(names, ["log"]);
        assert_eq!(
            r.dir(Path::new("")).unwrap().names().unwrap().names.len(),
            6
        );
    });
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn replace_is_atomic_and_never_follows_a_symlink() {
    let (root, dir) = setup("replace");
    let r = Dir::open(&root).unwrap();
    both(|walk| {
        r.replace(Path::new("sub/new"), b"one", 0o644).unwrap();
        r.replace(Path::new("sub/new"), b"two", 0o644).unwrap();
        assert_eq!(
            std::fs::read_to_string(root.join("sub/new")).unwrap(),
            "two"
        );
        // A symlink in the name's place is replaced; its target is untouched.
        let _ = std::fs::remove_file(root.join("sub/link"));
        symlink(dir.join("secret"), root.join("sub/link")).unwrap();
        r.replace(Path::new("sub/link"), b"mine", 0o600).unwrap();
        assert_eq!(std::fs::read_to_string(dir.join("secret")).unwrap(), SECRET);
        assert_eq!(
            std::fs::read_to_string(root.join("sub/link")).unwrap(),
            "mine"
        );
        assert!(
            r.replace(Path::new("sub"), b"x", 0o644).is_err(),
            "walk {walk}"
        );
        assert!(r.replace(Path::new("../secret"), b"x", 0o644).is_err());
        // `create` makes only a new file, never through a symlink or into a FIFO.
        let _ = std::fs::remove_file(root.join("sub/created"));
        let mut f = r.create(Path::new("sub/created"), 0o600).unwrap();
        f.write_all(b"c").unwrap();
        assert!(r.create(Path::new("sub/created"), 0o600).is_err());
        symlink(dir.join("out/new"), root.join("sub/dangling")).unwrap();
        assert!(r.create(Path::new("sub/dangling"), 0o600).is_err());
        assert!(!dir.join("out/new").exists());
        std::fs::remove_file(root.join("sub/created")).unwrap();
        std::fs::remove_file(root.join("sub/dangling")).unwrap();
        // No temporary file is left behind.
        let mut names = r.dir(Path::new("sub")).unwrap().names().unwrap().names;
        names.sort();
        assert_eq!(names, ["link", "log", "new"]);
    });
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn replace_keeps_the_old_files_mode_and_succeeds_once_renamed() {
    let (root, dir) = setup("replace-mode");
    let r = Dir::open(&root).unwrap();
    let log = root.join("sub/log");
    // Bits the umask would clear, and an executable bit: all kept.
    std::fs::set_permissions(&log, std::fs::Permissions::from_mode(0o767)).unwrap();
    r.replace(Path::new("sub/log"), b"new", 0o600).unwrap();
    let mode = std::fs::metadata(&log).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode, 0o767);
    // A new file gets the mode asked for (less the umask, which never adds bits).
    r.replace(Path::new("sub/fresh"), b"x", 0o600).unwrap();
    let mode = std::fs::metadata(root.join("sub/fresh"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o7777 & !0o600, 0);
    // The directory's fsync fails after the rename: the file was replaced, so it succeeded.
    FAIL_DIR_SYNC.with(|f| f.set(true));
    let replaced = r.replace(Path::new("sub/log"), b"newer", 0o600);
    FAIL_DIR_SYNC.with(|f| f.set(false));
    replaced.unwrap();
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "newer");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn names_beyond_the_cap_are_counted_not_dropped_silently() {
    let (root, dir) = setup("names-cut");
    for i in 0..5 {
        std::fs::write(root.join(format!("sub/n{i}")), "").unwrap();
    }
    let sub = Dir::open(&root).unwrap().dir(Path::new("sub")).unwrap();
    // `log` and five more: three kept, three counted.
    let cut = sub.names_at_most(3).unwrap();
    assert_eq!((cut.names.len(), cut.left_out), (3, 3));
    let all = sub.names().unwrap();
    assert_eq!((all.names.len(), all.left_out), (6, 0));
    std::fs::remove_dir_all(dir).unwrap();
}

/// Makes the character device `major:minor` at `p`; false where this process may not.
#[allow(unsafe_code)]
fn mknod_char(p: &Path, major: u32, minor: u32) -> bool {
    let c = CString::new(p.as_os_str().as_bytes()).unwrap();
    // SAFETY: mknod reads a NUL-terminated path alive for the call.
    unsafe {
        libc::mknod(
            c.as_ptr(),
            libc::S_IFCHR | 0o600,
            libc::makedev(major, minor),
        ) == 0
    }
}

#[test]
fn a_device_node_is_refused_without_being_opened() {
    let (root, dir) = setup("device");
    // A device no driver serves: opening it fails (ENXIO), so a refusal that comes from the
    // fstat shows it was never opened.
    if !mknod_char(&root.join("sub/dev"), 240, 77) {
        eprintln!("skipped: cannot mknod here (not root, or a nodev mount)");
        return std::fs::remove_dir_all(dir).unwrap();
    }
    let r = Dir::open(&root).unwrap();
    both(|walk| {
        let e = r.file(Path::new("sub/dev")).unwrap_err().to_string();
        assert!(e.ends_with("not a regular file"), "walk {walk}: {e}");
    });
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_private_directory_must_stay_private() {
    let (root, dir) = setup("private");
    std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o700)).unwrap();
    assert!(Dir::open_private(&root).is_ok());
    std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert!(Dir::open_private(&root).is_err());
    symlink(&root, dir.join("link")).unwrap();
    assert!(Dir::open_private(&dir.join("link")).is_err());
    std::fs::remove_dir_all(dir).unwrap();
}

/// The race of issue 21: while names inside the root are swapped for symlinks out and for a
/// FIFO, thousands of opens read only the file inside, and none blocks.
#[test]
fn swapped_symlinks_and_fifos_are_never_read_and_never_block() {
    let (root, dir) = setup("race");
    // Alternates for the file (a symlink out, a FIFO) and for the directory (a symlink to a
    // directory outside whose `log` is the secret).
    symlink(dir.join("secret"), root.join("sub/alt_link")).unwrap();
    mkfifo(&root.join("sub/alt_fifo"));
    symlink(dir.join("out"), root.join("alt_dir")).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let swaps = Arc::new(AtomicUsize::new(0));
    let swapper = {
        let (root, stop, swaps) = (root.clone(), stop.clone(), swaps.clone());
        std::thread::spawn(move || {
            let (log, sub) = (root.join("sub/log"), root.join("sub"));
            while !stop.load(Ordering::Relaxed) {
                for alt in ["sub/alt_link", "sub/alt_fifo"] {
                    exchange(&log, &root.join(alt));
                    exchange(&log, &root.join(alt));
                }
                exchange(&sub, &root.join("alt_dir"));
                exchange(&sub, &root.join("alt_dir"));
                swaps.fetch_add(1, Ordering::Relaxed);
            }
        })
    };
    let r = Dir::open(&root).unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut seen = [0usize; 2];
        for walk in [false, true] {
            WALK.with(|w| w.set(walk));
            for _ in 0..5000 {
                if let Ok((mut f, _)) = r.file(Path::new("sub/log")) {
                    let text = read(&mut f);
                    assert_ne!(text, SECRET, "read outside the root (walk {walk})");
                    assert_eq!(text, "inside");
                    seen[usize::from(walk)] += 1;
                }
                if let Ok(d) = r.dir(Path::new("sub")) {
                    if let Ok((mut f, _)) = d.file(Path::new("log")) {
                        assert_eq!(read(&mut f), "inside");
                    }
                }
            }
        }
        tx.send(seen).unwrap();
    });
    // Deadline only to detect a hang.
    let seen = rx.recv_timeout(Duration::from_secs(120));
    stop.store(true, Ordering::Relaxed);
    let seen = seen.expect("an open blocked");
    reader.join().unwrap();
    swapper.join().unwrap();
    assert!(swaps.load(Ordering::Relaxed) > 0);
    assert!(
        seen.iter().all(|&n| n > 0),
        "the file inside was read: {seen:?}"
    );
    std::fs::remove_dir_all(dir).unwrap();
}
