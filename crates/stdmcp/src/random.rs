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

/// Fills `buf` with unpredictable bytes: the kernel's random pool (`getrandom(2)`), or, on a
/// kernel without it (before 3.17), std's randomly keyed SipHash over a counter and the time.
/// The runtime's [`stdmcp_proto::peer::Config::fill_random`] (the nonce of each parked call's
/// `requestState`).
pub(crate) fn kernel_random(buf: &mut [u8]) {
    if let Err(e) = fill(buf) {
        log::warn!("getrandom failed ({e}): requestState nonce from std's hash keys");
        use std::hash::{BuildHasher, Hasher};
        static COUNT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        for chunk in buf.chunks_mut(8) {
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_u64(COUNT.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
            h.write(format!("{:?}", std::time::SystemTime::now()).as_bytes());
            chunk.copy_from_slice(&h.finish().to_le_bytes()[..chunk.len()]);
        }
    }
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
