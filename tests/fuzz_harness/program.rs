//! Sessions for the peer checker: from fuzzer bytes (an op per byte, templates or raw bytes
//! for frames) or from a seeded PRNG (mutated templates, cut into random reads).

use stdmcp_proto::framing::{self, Framing};
use stdmcp_proto::peer::Role;

use super::frames::{self, to_client, to_server};
use super::peer::PeerCheck;
use super::Rng;

pub(crate) fn template_for(role: Role, n: usize, pick: usize) -> String {
    match role {
        Role::Server => to_server(n, pick),
        Role::Client => to_client(n, pick),
    }
}

/// Progress values that probe the increase check: NaN, infinities, equal and tiny steps.
fn progress_value(b: u8, c: u8) -> f64 {
    match b % 8 {
        0 => f64::NAN,
        1 => f64::INFINITY,
        2 => -1.0,
        3 => 1.0 + f64::EPSILON,
        4 => f64::MAX,
        _ => f64::from(c) / 4.0,
    }
}

/// Runs the session the fuzzer's bytes describe.
pub(crate) fn run_bytes(data: &[u8]) {
    let Some((&head, mut ops)) = data.split_first() else {
        return;
    };
    let role = if head & 1 == 0 {
        Role::Server
    } else {
        Role::Client
    };
    let content_length = head & 2 != 0;
    let max = [64 * 1024, 200, 4096, 1 << 20][usize::from(head >> 2) % 4];
    let mut check = PeerCheck::new(role, max);
    check.set_framing(content_length);
    let framing = if content_length {
        Framing::ContentLength
    } else {
        Framing::Newline
    };
    let mut next = || -> Option<u8> {
        let (&b, rest) = ops.split_first()?;
        ops = rest;
        Some(b)
    };
    while let Some(op) = next() {
        let (a, b) = (next().unwrap_or(0), next().unwrap_or(0));
        let (k, a8) = (usize::from(a), a);
        match op % 14 {
            0..=4 => {
                let mut wire = Vec::new();
                framing::encode(
                    template_for(role, k, usize::from(b)).as_bytes(),
                    framing,
                    &mut wire,
                );
                check.push_bytes(&wire);
            }
            5 => {
                // Raw bytes: `a` of them (the two op bytes read ahead come first).
                let mut raw = vec![b];
                for _ in 0..a {
                    raw.extend(next());
                }
                check.push_bytes(&raw);
            }
            6 => check.advance(u64::from(a8) * 20),
            7 => check.finish(k, b),
            8 => check.progress(k, progress_value(a8, b), (b % 3 == 0).then_some(10.0)),
            9 => check.log_or_status(k, b),
            10 => check.request(k, b & 1 == 0),
            11 => check.cancel_request(k),
            12 => check.respond(k, b & 1 == 0),
            _ if a8 == 0xff => check.shutdown(),
            _ => check.advance(u64::from(b) * 500),
        }
    }
    check.finish_all();
}

/// Counts of one seeded session.
#[derive(Debug, Default)]
pub(crate) struct Counts {
    /// Frames written to the stream.
    pub written: u64,
    /// Of which mutated.
    pub mutated: u64,
    /// Frames the decoder delivered to the peer.
    pub delivered: u64,
    /// The session's stream, for the decoder checks.
    pub wire: Vec<u8>,
}

/// One seeded session of `steps` steps: mutated frames in random reads, host actions between.
pub(crate) fn run_seeded(rng: &mut Rng, role: Role, steps: usize) -> Counts {
    let max = *rng.pick(&[64 * 1024, 1 << 20, 300]);
    let content_length = rng.one_in(3);
    let mut check = PeerCheck::new(role, max);
    check.set_framing(content_length);
    let mut counts = Counts::default();
    for _ in 0..steps {
        let k = rng.below(256);
        match rng.below(20) {
            0..=13 => {
                let mut body = template_for(role, rng.below(64), rng.below(64)).into_bytes();
                if !rng.one_in(5) {
                    let other = template_for(role, rng.below(64), rng.below(64));
                    frames::mutate(rng, &mut body, other.as_bytes());
                    counts.mutated += 1;
                }
                let mut wire = Vec::new();
                let cl = content_length != rng.one_in(25);
                frames::encode(rng, &body, cl, &mut wire);
                counts.written += 1;
                let mut rest = &wire[..];
                while !rest.is_empty() {
                    let span = if rng.one_in(2) { 16 } else { 4096 };
                    let n = (1 + rng.below(span)).min(rest.len());
                    check.push_bytes(&rest[..n]);
                    rest = &rest[n..];
                }
                counts.wire.extend_from_slice(&wire);
            }
            14 => check.advance(rng.below(1500) as u64),
            15 => check.finish(k, rng.below(256) as u8),
            16 => check.progress(k, progress_value(rng.below(256) as u8, k as u8), None),
            17 => check.request(k, rng.one_in(2)),
            18 => check.cancel_request(k),
            _ if rng.one_in(40) => check.shutdown(),
            _ => check.respond(k, rng.one_in(2)),
        }
    }
    check.finish_all();
    counts.delivered = check.frames;
    counts
}
