//! The JSON-RPC parser: any frame body.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../tests/fuzz_harness/mod.rs"]
mod fuzz_harness;

fuzz_target!(|data: &[u8]| {
    fuzz_harness::jsonrpc::check(data);
    fuzz_harness::decoder::check_round_trip(data);
});
