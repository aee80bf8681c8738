//! The system calls under [`Dir`]: `openat`, `openat2` with `RESOLVE_BENEATH`, reading a
//! directory's names, and the entry operations of a replace (`lstat`, rename, unlink).

use std::ffi::{OsStr, OsString};
use std::fs::{File, Metadata};
use std::io;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;

pub(super) fn openat2_missing(e: &io::Error) -> bool {
    // ENOSYS: an older kernel; EPERM: a seccomp filter that does not know it; E2BIG/EINVAL:
    // a kernel that knows openat2 but not these resolve flags.
    matches!(
        e.raw_os_error(),
        Some(libc::ENOSYS) | Some(libc::EPERM) | Some(libc::E2BIG) | Some(libc::EINVAL)
    )
}

pub(super) fn openat(dir: RawFd, name: &std::ffi::CStr, flags: libc::c_int) -> io::Result<OwnedFd> {
    openat_mode(dir, name, flags, 0)
}

#[allow(unsafe_code)]
pub(super) fn openat_mode(
    dir: RawFd,
    name: &std::ffi::CStr,
    flags: libc::c_int,
    mode: u32,
) -> io::Result<OwnedFd> {
    loop {
        // SAFETY: `name` is a NUL-terminated string that outlives the call; `dir` is a
        // descriptor we hold open (or AT_FDCWD); openat returns a new descriptor or -1.
        let fd = unsafe { libc::openat(dir, name.as_ptr(), flags, mode as libc::c_uint) };
        if fd >= 0 {
            // SAFETY: the kernel just gave us this descriptor; nothing else owns it.
            return Ok(unsafe { OwnedFd::from_raw_fd(fd) });
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// `struct open_how` of `openat2(2)` (libc's is `non_exhaustive`).
#[repr(C)]
struct OpenHow {
    flags: u64,
    mode: u64,
    resolve: u64,
}

#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
pub(super) fn openat2(
    dir: RawFd,
    path: &std::ffi::CStr,
    flags: libc::c_int,
) -> io::Result<OwnedFd> {
    let how = OpenHow {
        flags: flags as u64,
        mode: 0,
        resolve: libc::RESOLVE_BENEATH | libc::RESOLVE_NO_SYMLINKS | libc::RESOLVE_NO_MAGICLINKS,
    };
    for _ in 0..64 {
        // SAFETY: openat2 reads `how` (its size passed along) and the NUL-terminated `path`,
        // both alive for the call; `dir` is a descriptor we hold open.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_openat2,
                dir,
                path.as_ptr(),
                &how as *const OpenHow,
                std::mem::size_of::<OpenHow>(),
            )
        };
        if fd >= 0 {
            // SAFETY: the kernel just gave us this descriptor; nothing else owns it.
            return Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) });
        }
        let e = io::Error::last_os_error();
        // EAGAIN: a rename raced the lookup; the kernel asks for a retry.
        if !matches!(e.raw_os_error(), Some(libc::EINTR) | Some(libc::EAGAIN)) {
            return Err(e);
        }
    }
    // Renames keep racing: the caller walks instead (the walk needs no retries).
    Err(io::Error::from_raw_os_error(libc::EAGAIN))
}

#[cfg(not(target_os = "linux"))]
pub(super) fn openat2(_: RawFd, _: &std::ffi::CStr, _: libc::c_int) -> io::Result<OwnedFd> {
    Err(io::Error::from_raw_os_error(libc::ENOSYS))
}

#[allow(unsafe_code)]
pub(crate) fn effective_uid() -> u32 {
    // SAFETY: geteuid takes nothing and cannot fail.
    unsafe { libc::geteuid() }
}

/// Reads the names of the directory open on `fd` (which it takes): at most `max` kept, and
/// how many more there were.
#[allow(unsafe_code)]
pub(super) fn read_names(fd: OwnedFd, max: usize) -> io::Result<(Vec<OsString>, usize)> {
    use std::os::fd::IntoRawFd;
    let raw = fd.into_raw_fd();
    // SAFETY: fdopendir takes ownership of `raw` (a directory descriptor we own) on success.
    let dir = unsafe { libc::fdopendir(raw) };
    if dir.is_null() {
        let e = io::Error::last_os_error();
        // SAFETY: on failure the descriptor is still ours to close.
        drop(unsafe { OwnedFd::from_raw_fd(raw) });
        return Err(e);
    }
    let (mut names, mut left_out) = (Vec::new(), 0);
    let result = loop {
        // errno is reset so that the end (NULL, errno untouched) and an error can be told apart.
        // SAFETY: __errno_location is the calling thread's errno.
        unsafe { *libc::__errno_location() = 0 };
        // SAFETY: `dir` is the open stream fdopendir returned and not yet closed.
        let ent = unsafe { libc::readdir(dir) };
        if ent.is_null() {
            let e = io::Error::last_os_error();
            break if e.raw_os_error().unwrap_or(0) == 0 {
                Ok(())
            } else {
                Err(e)
            };
        }
        // SAFETY: readdir returned a valid entry whose d_name is NUL-terminated; it stays valid
        // until the next readdir on this stream, and we copy it out before that.
        let name = unsafe { std::ffi::CStr::from_ptr((*ent).d_name.as_ptr()) };
        let b = name.to_bytes();
        if b == b"." || b == b".." {
            continue;
        }
        if names.len() < max {
            names.push(OsStr::from_bytes(b).to_owned());
        } else {
            left_out += 1;
        }
    };
    // SAFETY: `dir` is open and closed exactly once, here (closing its descriptor too).
    unsafe { libc::closedir(dir) };
    result.map(|()| (names, left_out))
}

/// `lstat` of `name` in the directory open on `dir` (`None`: it does not exist).
pub(super) fn stat_nofollow(dir: RawFd, name: &std::ffi::CStr) -> io::Result<Option<Metadata>> {
    // The metadata comes through a descriptor: `O_PATH | O_NOFOLLOW` opens the entry
    // itself (a symlink too) without reading or blocking.
    let flags = libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC;
    match openat(dir, name, flags) {
        Ok(fd) => File::from(fd).metadata().map(Some),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Renames `from` to `to`, both in the directory open on `dir` (`renameat`).
#[allow(unsafe_code)]
pub(super) fn rename(dir: RawFd, from: &std::ffi::CStr, to: &std::ffi::CStr) -> io::Result<()> {
    // SAFETY: both names are NUL-terminated and alive for the call; `dir` is held open.
    if unsafe { libc::renameat(dir, from.as_ptr(), dir, to.as_ptr()) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Removes `name` from the directory open on `dir`, best effort (`unlinkat`).
#[allow(unsafe_code)]
pub(super) fn unlink(dir: RawFd, name: &std::ffi::CStr) {
    // SAFETY: `name` is NUL-terminated and alive for the call; `dir` is held open. Best
    // effort: the temporary file is ours, a failure leaves only it behind.
    unsafe { libc::unlinkat(dir, name.as_ptr(), 0) };
}
