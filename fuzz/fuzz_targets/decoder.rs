//! The frame decoder: any byte stream, any frame limit, any read boundaries. The first byte
//! picks the limit, the next four the read sizes; the rest is the stream.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../tests/fuzz_harness/mod.rs"]
mod fuzz_harness;

use fuzz_harness::decoder;

fuzz_target!(|data: &[u8]| {
    let Some((&head, rest)) = data.split_first() else {
        return;
    };
    let max = [0, 1, 16, 64, 300, 8192, 1 << 20][usize::from(head) % 7];
    let (cuts, stream) = rest.split_at(rest.len().min(4));
    let pieces: Vec<usize> = cuts
        .iter()
        .map(|&c| usize::from(c) + 1)
        .cycle()
        .take(stream.len())
        .collect();
    let decoded = decoder::check_split_invariance(stream, &pieces, max, stream.len() <= 4096);
    for frame in decoded.iter().flatten() {
        decoder::check_round_trip(&frame.body);
    }
});
