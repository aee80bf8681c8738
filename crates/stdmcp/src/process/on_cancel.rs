//! Pending `onCancel` commands, kept where the watchdog (`watchdog.rs`) finds them if
//! the server dies with calls in flight.
//!
//! Each pending command is a small `/bin/sh` file in a private directory (`0700`:
//! `on-cancel/` in the server's private directory, [`super::private_dir`]), one file per
//! call, named by the call id. The file `exec`s the command under `timeout` with an explicit
//! environment (`env -i`), every argv element and variable single-quoted, so its text
//! cannot be reinterpreted by the shell. While the call runs the file exists; when the call
//! ends (and its own `onCancel`, if any, has run) the file is removed. When the watchdog's
//! pipe reaches EOF it kills the calls' process groups, then runs every file still there,
//! in parallel, and removes the directory.

use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use crate::beneath::Dir;

/// The private directory of pending commands, `on-cancel/` in the server's private
/// directory ([`super::private_dir`]); made on first use. `None` if it cannot be made
/// (logged; the next use tries again).
pub(super) fn dir() -> Option<&'static Path> {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    static MAKING: Mutex<()> = Mutex::new(());
    if let Some(d) = DIR.get() {
        return Some(d);
    }
    let _making = crate::sync::lock(&MAKING);
    if let Some(d) = DIR.get() {
        return Some(d);
    }
    let d = super::private_dir::sub("on-cancel")?;
    match std::fs::DirBuilder::new().mode(0o700).create(&d) {
        Ok(()) => Some(DIR.get_or_init(|| d)),
        Err(e) => {
            log::warn!(
                "cannot create {} ({e}): onCancel commands will not run if the server is killed",
                d.display()
            );
            None
        }
    }
}

/// A command, with its environment and deadline: [`Command::new`].
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Command {
    /// Absolute program.
    pub program: PathBuf,
    /// Arguments.
    pub args: Vec<OsString>,
    /// The whole environment.
    pub env: Vec<(OsString, OsString)>,
    /// Deadline (SIGKILL after it).
    pub timeout: Duration,
}

impl Command {
    /// `program` (absolute) with `args`, the whole environment `env`, killed after `timeout`.
    pub fn new(
        program: PathBuf,
        args: Vec<OsString>,
        env: Vec<(OsString, OsString)>,
        timeout: Duration,
    ) -> Command {
        Command {
            program,
            args,
            env,
            timeout,
        }
    }
}

/// A registered pending command; dropping it removes the registration.
#[derive(Debug)]
pub struct Registration {
    path: PathBuf,
}

impl Registration {
    /// Registers (or replaces) the pending command of call `id` (a plain call id).
    pub fn register(id: &str, cmd: &Command) -> Option<Registration> {
        if cmd.program.as_os_str().as_bytes().contains(&b'=') {
            log::warn!(
                "onCancel program {} has `=` in its path: not registered",
                cmd.program.display()
            );
            return None;
        }
        let dir = dir()?;
        let path = dir.join(id);
        // Through the directory's descriptor (still this user's private directory): a fresh
        // temporary file of a random name (never through a symlink), renamed over `id`.
        let written =
            Dir::open_private(dir).and_then(|d| d.replace(Path::new(id), &script(cmd), 0o600));
        match written {
            Ok(()) => Some(Registration { path }),
            Err(e) => {
                log::warn!("cannot write {} ({e})", path.display());
                None
            }
        }
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// `'…'` with each `'` written as `'\''`.
fn quote(out: &mut Vec<u8>, s: &[u8]) {
    out.push(b'\'');
    for &b in s {
        if b == b'\'' {
            out.extend_from_slice(b"'\\''");
        } else {
            out.push(b);
        }
    }
    out.extend_from_slice(b"' ");
}

/// The file's text: `exec timeout -s KILL N env -i -- 'K=V'… 'program' 'arg'…` (the
/// program is absolute; one with `=` in its path is refused by [`Registration::register`]).
fn script(cmd: &Command) -> Vec<u8> {
    let secs = cmd.timeout.as_secs().max(1);
    // `--` before the assignments: after the first one, `env` would take `--` for the program.
    let mut out = format!("exec timeout -s KILL {secs} env -i -- ").into_bytes();
    for (k, v) in &cmd.env {
        let mut kv = k.as_bytes().to_vec();
        kv.push(b'=');
        kv.extend_from_slice(v.as_bytes());
        quote(&mut out, &kv);
    }
    quote(&mut out, cmd.program.as_os_str().as_bytes());
    for a in &cmd.args {
        quote(&mut out, a.as_bytes());
    }
    out.extend_from_slice(b"</dev/null >/dev/null 2>&1\n");
    out
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests spawn bare children as controls
mod tests {
    use super::*;
    use std::process::Stdio;

    #[test]
    fn script_passes_argv_and_env_verbatim() {
        let dir = std::env::temp_dir().join(format!("stdmcp-oc-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("mkdir");
        let odd = "a'b \"c\" $(touch MARKER) `touch MARKER` ;\n*";
        let cmd = Command {
            program: "/bin/sh".into(),
            args: vec![
                "-c".into(),
                "printf '%s|%s' \"$1\" \"$V\" > out".into(),
                "sh".into(),
                odd.into(),
            ],
            env: vec![
                ("V".into(), odd.into()),
                ("PATH".into(), "/usr/bin:/bin".into()),
            ],
            timeout: Duration::from_secs(5),
        };
        let file = dir.join("cmd");
        std::fs::write(&file, script(&cmd)).expect("write");
        let status = std::process::Command::new("/bin/sh")
            .arg(&file)
            .current_dir(&dir)
            .env("PATH", "/usr/bin:/bin")
            .stdin(Stdio::null())
            .status()
            .expect("sh");
        assert!(status.success());
        let out = std::fs::read_to_string(dir.join("out")).expect("out");
        assert_eq!(out, format!("{odd}|{odd}"));
        assert!(!dir.join("MARKER").exists());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn register_and_drop() {
        let cmd = Command {
            program: "/bin/true".into(),
            args: vec![],
            env: vec![],
            timeout: Duration::from_secs(1),
        };
        let p = Registration::register("test-call-1", &cmd).expect("registered");
        let path = dir().expect("dir").join("test-call-1");
        assert!(path.is_file());
        drop(p);
        assert!(!path.exists());
    }

    #[test]
    fn planted_symlinks_do_not_redirect_the_write() {
        let cmd = Command {
            program: "/bin/true".into(),
            args: vec![],
            env: vec![],
            timeout: Duration::from_secs(1),
        };
        let d = dir().expect("dir");
        let base = std::env::temp_dir().join(format!("stdmcp-oc-plant-{}", std::process::id()));
        std::fs::create_dir_all(&base).expect("mkdir");
        // Symlinks at the temporary file's old name and at the final name, to marker files.
        let (tmp_marker, final_marker) = (base.join("tmp-marker"), base.join("final-marker"));
        for m in [&tmp_marker, &final_marker] {
            std::fs::write(m, b"MARKER").expect("marker");
        }
        std::os::unix::fs::symlink(&tmp_marker, d.join(".test-call-2.tmp")).expect("plant");
        std::os::unix::fs::symlink(&final_marker, d.join("test-call-2")).expect("plant");
        let p = Registration::register("test-call-2", &cmd).expect("registered");
        for m in [&tmp_marker, &final_marker] {
            assert_eq!(
                std::fs::read(m).expect("marker"),
                b"MARKER",
                "{}",
                m.display()
            );
        }
        let path = d.join("test-call-2");
        assert!(!path.is_symlink());
        assert!(std::fs::read(&path)
            .expect("script")
            .starts_with(b"exec timeout"));
        drop(p);
        let _ = std::fs::remove_file(d.join(".test-call-2.tmp"));
        let _ = std::fs::remove_dir_all(&base);
    }
}
