//! The proof cursor's scanner and outline: any text cut as a proof file with the example
//! manifests' cursors (HOL4, Rocq), never a panic, every slice at a character boundary.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    stdmcp_cli::testing::cut_proof_file(data);
});
