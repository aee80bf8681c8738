//! Random bytes from the kernel (`getrandom(2)`), for keys and markers that must not be guessed.
//!
//! The system call needs no file: `/dev/urandom` is absent in an empty root or a minimal
//! container, where the static binary is meant to run.

use std::io;

/// Fills `buf` from the kernel's random pool; blocks only until the pool is first seeded.
#[allow(unsafe_code)]
pub fn fill(buf: &mut [u8]) -> io::Result<()> {
    let mut done = 0;
    while done < buf.len() {
        let rest = &mut buf[done..];
        // The raw system call, not libc's getrandom(): std declares that symbol weak, and in
        // the static musl build with LTO the weak declaration won, so the call went to address 0.
        // SAFETY: getrandom writes at most `rest.len()` bytes into memory we own.
        let n = unsafe {
            libc::syscall(
                libc::SYS_getrandom,
                rest.as_mut_ptr(),
                rest.len(),
                0 as libc::c_uint,
            )
        };
        if n < 0 {
            let err = io::Error::last_os_error();
            if err.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(err);
        }
        done += n as usize;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn two_draws_differ() {
        let (mut a, mut b) = ([0u8; 32], [0u8; 32]);
        super::fill(&mut a).expect("getrandom");
        super::fill(&mut b).expect("getrandom");
        assert_ne!(a, b);
        assert_ne!(a, [0u8; 32]);
    }
}
