//! The manifest parser: any text (then, after a NUL byte, the arguments of a call to plan
//! for every tool it declares). Relative paths resolve against the temporary directory.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../tests/fuzz_harness/mod.rs"]
mod fuzz_harness;

fuzz_target!(|data: &[u8]| {
    fuzz_harness::manifest::check(data, &std::env::temp_dir());
});
