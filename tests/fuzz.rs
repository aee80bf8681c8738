//! Seeded, deterministic fuzzing in `cargo test`: mutated frames (bit flips, truncation,
//! splicing, huge numbers, deep nesting, odd ids, invalid UTF-8, Content-Length lies) through
//! the frame decoder and the peer in both roles, with the invariants of tests/fuzz_harness/
//! (the same checks the cargo-fuzz targets in fuzz/ run). Also the regression inputs of the
//! crashes fuzzing found.

mod fuzz_harness;

use fuzz_harness::{decoder, jsonrpc, program, Rng};
use stdmcp::peer::Role;

/// Mutated frames the seeded test feeds at least.
const MUTATED_FRAMES: u64 = 100_000;

#[test]
fn seeded_mutated_frames_through_decoder_and_peer() {
    let mut rng = Rng::new(0x5EED_F00D);
    let (mut written, mut mutated, mut delivered, mut sessions) = (0, 0, 0, 0u64);
    while mutated < MUTATED_FRAMES {
        let role = if sessions % 2 == 0 { Role::Server } else { Role::Client };
        let counts = program::run_seeded(&mut rng, role, 60);
        // The same stream, cut differently, decodes the same.
        let pieces: Vec<usize> = (0..32).map(|_| 1 + rng.below(700)).collect();
        let max = *rng.pick(&[300, 64 * 1024]);
        decoder::check_split_invariance(&counts.wire, &pieces, max, sessions % 16 == 0);
        written += counts.written;
        mutated += counts.mutated;
        delivered += counts.delivered;
        sessions += 1;
    }
    eprintln!("{sessions} sessions: {written} frames written, {mutated} mutated, {delivered} delivered");
    assert!(delivered > MUTATED_FRAMES / 2, "too few frames got through: {delivered}");
}

#[test]
fn seeded_bodies_through_the_jsonrpc_parser() {
    let mut rng = Rng::new(0x0BAD_CAFE);
    for i in 0..10_000 {
        let role = if i % 2 == 0 { Role::Server } else { Role::Client };
        let mut body = program::template_for(role, rng.below(64), rng.below(64)).into_bytes();
        let other = program::template_for(role, rng.below(64), rng.below(64));
        fuzz_harness::frames::mutate(&mut rng, &mut body, other.as_bytes());
        jsonrpc::check(&body);
        decoder::check_round_trip(&body);
    }
}
