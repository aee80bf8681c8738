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
//!
//! [`IdMap`] keeps its values apart from the hash table, which holds each id and where its
//! value is: every `IdMap`, whatever its values, then shares one copy of the hash table's
//! code, where each map type is otherwise a copy of its own (sharing it made the `everything`
//! binary 9 KB smaller, at eight maps).

use std::collections::hash_map::Entry;
use std::collections::hash_map::RandomState;
use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};
use std::sync::OnceLock;

use super::request_id::RequestId;

/// A table keyed by request id, hashed by [`IdHasher`]: the ids and where their values are
/// in one hash table (of the same type for every `V`), the values in slots, a removed one's
/// slot reused by the next insert.
#[derive(Clone, Debug)]
pub struct IdMap<V> {
    /// Each id's slot.
    index: HashMap<RequestId, usize, IdHashing>,
    /// The values; `None` in a free slot.
    slots: Vec<Option<V>>,
    /// The free slots.
    free: Vec<usize>,
}

impl<V> Default for IdMap<V> {
    fn default() -> IdMap<V> {
        IdMap {
            index: HashMap::default(),
            slots: Vec::new(),
            free: Vec::new(),
        }
    }
}

impl<V> IdMap<V> {
    /// How many ids the map holds.
    pub fn len(&self) -> usize {
        self.index.len()
    }

    /// Whether the map holds no id.
    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    /// Whether the map holds `id`.
    pub fn contains_key(&self, id: &RequestId) -> bool {
        self.index.contains_key(id)
    }

    /// The value of `id`.
    pub fn get(&self, id: &RequestId) -> Option<&V> {
        let slot = *self.index.get(id)?;
        self.slots.get(slot)?.as_ref()
    }

    /// The value of `id`, to change.
    pub fn get_mut(&mut self, id: &RequestId) -> Option<&mut V> {
        let slot = *self.index.get(id)?;
        self.slots.get_mut(slot)?.as_mut()
    }

    /// Sets the value of `id`; returns the one it replaces.
    pub fn insert(&mut self, id: RequestId, value: V) -> Option<V> {
        let (slots, free) = (&mut self.slots, &mut self.free);
        match self.index.entry(id) {
            Entry::Occupied(e) => match slots.get_mut(*e.get()) {
                Some(old) => old.replace(value),
                None => None,
            },
            Entry::Vacant(e) => {
                let slot = match free.pop() {
                    Some(slot) => slot,
                    None => {
                        slots.push(None);
                        slots.len() - 1
                    }
                };
                slots[slot] = Some(value);
                e.insert(slot);
                None
            }
        }
    }

    /// Takes `id` and its value out of the map.
    pub fn remove(&mut self, id: &RequestId) -> Option<V> {
        let slot = self.index.remove(id)?;
        let value = self.slots.get_mut(slot)?.take();
        self.free.push(slot);
        if self.index.is_empty() {
            // Nothing left: the slots start again from the first.
            self.slots.clear();
            self.free.clear();
        }
        value
    }

    /// Empties the map.
    pub fn clear(&mut self) {
        self.index.clear();
        self.slots.clear();
        self.free.clear();
    }

    /// The ids and their values, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (&RequestId, &V)> {
        let slots = &self.slots;
        self.index
            .iter()
            .filter_map(move |(id, &slot)| Some((id, slots.get(slot)?.as_ref()?)))
    }

    /// The ids, in no particular order.
    pub fn keys(&self) -> impl Iterator<Item = &RequestId> {
        self.index.keys()
    }

    /// The values, in no particular order.
    pub fn values(&self) -> impl Iterator<Item = &V> {
        self.iter().map(|(_, value)| value)
    }

    /// Keeps the ids for which `keep` says so, and drops the others.
    pub fn retain(&mut self, mut keep: impl FnMut(&RequestId, &mut V) -> bool) {
        let (slots, free) = (&mut self.slots, &mut self.free);
        self.index.retain(|id, &mut slot| {
            let kept = slots
                .get_mut(slot)
                .and_then(Option::as_mut)
                .is_some_and(|value| keep(id, value));
            if !kept {
                if let Some(value) = slots.get_mut(slot) {
                    *value = None;
                }
                free.push(slot);
            }
            kept
        });
    }

    /// Takes every id and its value out of the map (which is empty at once), in no
    /// particular order.
    pub fn drain(&mut self) -> impl Iterator<Item = (RequestId, V)> + use<V> {
        let IdMap {
            index, mut slots, ..
        } = std::mem::take(self);
        index
            .into_iter()
            .filter_map(move |(id, slot)| Some((id, slots.get_mut(slot)?.take()?)))
    }
}

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
    #![allow(clippy::unwrap_used)]
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

    #[test]
    fn slots_are_reused_and_values_follow_their_ids() {
        let id = RequestId::number;
        let mut m: IdMap<String> = IdMap::default();
        for n in 0..8 {
            assert_eq!(m.insert(id(n), format!("v{n}")), None);
        }
        assert_eq!(m.insert(id(3), "w3".into()), Some("v3".into()));
        assert_eq!(m.remove(&id(2)), Some("v2".into()));
        assert_eq!(m.remove(&id(2)), None);
        assert!(!m.contains_key(&id(2)));
        // The freed slot goes to the next id, and the others keep theirs.
        m.insert(id(9), "v9".into());
        assert_eq!(m.slots.len(), 8);
        assert_eq!(m.get(&id(9)).map(String::as_str), Some("v9"));
        assert_eq!(m.get(&id(3)).map(String::as_str), Some("w3"));
        if let Some(v) = m.get_mut(&id(4)) {
            v.push('!');
        }
        m.retain(|id, v| {
            v.push('.');
            *id != RequestId::number(5)
        });
        let mut all: Vec<(i64, String)> = m
            .iter()
            .map(|(id, v)| (id.to_string().parse().unwrap(), v.clone()))
            .collect();
        all.sort();
        let want = [
            (0, "v0."),
            (1, "v1."),
            (3, "w3."),
            (4, "v4!."),
            (6, "v6."),
            (7, "v7."),
            (9, "v9."),
        ];
        let want: Vec<(i64, String)> = want.iter().map(|(n, v)| (*n, v.to_string())).collect();
        assert_eq!(all, want);
        assert_eq!(m.len(), 7);
        assert_eq!(m.keys().count(), 7);
        assert_eq!(m.values().count(), 7);
        // Slot 5 was freed by retain: the next insert takes it.
        m.insert(id(10), "v10".into());
        assert_eq!(m.slots.len(), 8);
        let mut drained: Vec<String> = m.drain().map(|(_, v)| v).collect();
        drained.sort();
        assert_eq!(drained.len(), 8);
        assert!(m.is_empty() && m.get(&id(0)).is_none());
        // Emptied, by removes too: the slots start again.
        m.insert(id(1), "a".into());
        m.remove(&id(1));
        assert!(m.slots.is_empty() && m.free.is_empty());
    }
}
