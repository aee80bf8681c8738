//! Invariant-checking drivers shared by the cargo-fuzz targets (fuzz/fuzz_targets/, which
//! include this directory with `#[path]`) and the seeded fuzz test (tests/fuzz.rs).
//!
//! Every check panics with a description of the broken invariant, so that libFuzzer reports
//! it as a crash and `cargo test` as a failure.
#![allow(dead_code, clippy::unwrap_used)]

pub(crate) mod decoder;
pub(crate) mod frames;
pub(crate) mod jsonrpc;
pub(crate) mod manifest;
pub(crate) mod peer;
pub(crate) mod program;

/// splitmix64: a small, seedable PRNG (the seeded test needs determinism, not quality).
#[derive(Clone, Debug)]
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`).
    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// True with probability `1/n`.
    pub(crate) fn one_in(&mut self, n: usize) -> bool {
        self.below(n) == 0
    }

    pub(crate) fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}
