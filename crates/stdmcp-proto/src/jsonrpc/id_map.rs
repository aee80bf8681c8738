//! Tables keyed by request id. A call's id is looked up in several of them per call (the call
//! table, its timers, the runtime's cancellation tokens and progress counters), so the hash
//! is on every request's path: std's SipHash and the table operations around it were 1.4% of
//! the server's samples in the pipelined benchmark (docs/bench-analysis.md).
//!
//! [`IdHasher`] reads the id's bytes a word at a time (multiply and rotate, as rustc's
//! `FxHasher`), then its length, and mixes the result (murmur3's finalizer) so that ids
//! differing in their last bytes still spread over the table. It starts from a key drawn once
//! per process from std's random state, which spreads short ids (one word) differently in
//! each process, but it does not resist ids made to collide: a client that sends long ids
//! crafted for it can make them share a hash. That is not SipHash's guarantee, and need not
//! be: the ids come from the one client the server serves, which could as well slow it down
//! by sending more requests, and colliding ids cost that client's own calls a longer scan.

use std::collections::hash_map::RandomState;
use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};
use std::sync::OnceLock;

use super::RequestId;

/// A table keyed by request id, hashed by [`IdHasher`].
pub type IdMap<V> = HashMap<RequestId, V, IdHashing>;

/// Makes [`IdHasher`]s, all from this process's key.
#[derive(Clone, Copy, Debug)]
pub struct IdHashing {
    key: u64,
}

impl Default for IdHashing {
    fn default() -> IdHashing {
        static KEY: OnceLock<u64> = OnceLock::new();
        let key = *KEY.get_or_init(|| RandomState::new().hash_one(0x6964_u64));
        IdHashing { key }
    }
}

impl BuildHasher for IdHashing {
    type Hasher = IdHasher;

    fn build_hasher(&self) -> IdHasher {
        IdHasher { state: self.key }
    }
}

/// A fast hasher for short keys such as request ids (see the module's documentation).
#[derive(Clone, Debug)]
pub struct IdHasher {
    state: u64,
}

/// The multiplier of rustc's `FxHasher` (64-bit).
const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl IdHasher {
    fn add(&mut self, word: u64) {
        self.state = (self.state.rotate_left(5) ^ word).wrapping_mul(SEED);
    }
}

impl Hasher for IdHasher {
    fn write(&mut self, bytes: &[u8]) {
        // The length too: zero bytes at the end would not change the last word.
        self.add(bytes.len() as u64);
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut word = [0u8; 8];
            word[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(word));
        }
    }

    fn write_u8(&mut self, n: u8) {
        self.add(u64::from(n));
    }

    fn write_u64(&mut self, n: u64) {
        self.add(n);
    }

    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }

    fn finish(&self) -> u64 {
        // murmur3's 64-bit finalizer: every input bit reaches every output bit.
        let mut h = self.state;
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        h ^ (h >> 33)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fixed key, so that the tests do not depend on the process's draw.
    fn hash(id: &RequestId) -> u64 {
        IdHashing { key: 0x5eed }.hash_one(id)
    }

    #[test]
    fn equal_ids_hash_alike_and_the_kinds_apart() {
        assert_eq!(hash(&RequestId::number(7)), hash(&RequestId::number(7)));
        assert_ne!(hash(&RequestId::number(7)), hash(&RequestId::string("7")));
        assert_ne!(hash(&RequestId::number(7)), hash(&RequestId::number(8)));
        // Long ids: a difference in any word counts.
        let a = RequestId::string("a-long-request-id-0001");
        let b = RequestId::string("a-long-request-id-0002");
        assert_ne!(hash(&a), hash(&b));
        // Trailing zero bytes count.
        assert_ne!(
            hash(&RequestId::string("a")),
            hash(&RequestId::string("a\0"))
        );
        // The process's own key hashes alike too.
        let drawn = IdHashing::default();
        assert_eq!(drawn.hash_one(&a), drawn.hash_one(a.clone()));
    }

    #[test]
    fn consecutive_ids_spread_over_the_buckets() {
        // The low bits pick the bucket: ids 0..4096 fill 256 buckets evenly enough.
        let mut buckets = [0u32; 256];
        for n in 0..4096 {
            buckets[(hash(&RequestId::number(n)) & 255) as usize] += 1;
        }
        let (min, max) = (buckets.iter().min(), buckets.iter().max());
        assert!(min >= Some(&2) && max <= Some(&40), "{min:?} {max:?}");
    }

    #[test]
    fn a_map_keyed_by_ids_finds_them() {
        let mut m: IdMap<u32> = IdMap::default();
        for n in 0..1000 {
            m.insert(RequestId::number(n), n as u32);
        }
        assert_eq!(m.get(&RequestId::number(999)), Some(&999));
        assert_eq!(m.get(&RequestId::string("999")), None);
    }
}
