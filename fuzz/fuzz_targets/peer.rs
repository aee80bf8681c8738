//! The peer in both roles: arbitrary frame sequences (templates and raw bytes) and host
//! actions on a fixed clock the input advances, with the invariants of
//! tests/fuzz_harness/peer.rs. The first byte picks the role, framing and frame limit.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../tests/fuzz_harness/mod.rs"]
mod fuzz_harness;

fuzz_target!(|data: &[u8]| {
    fuzz_harness::program::run_bytes(data);
});
