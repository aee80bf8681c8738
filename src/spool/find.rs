//! Finding a pattern's literals ([`super::literal`]) in the bytes a scan reads, at memory
//! speed: `memchr`'s `memmem` (vectorised, chosen at run time for the CPU) for an exact
//! literal; for one that ignores ASCII case, `memchr2` finds its rarest byte in both cases
//! and each place found is compared. README "Dependencies" says why `memchr`.

use memchr::memmem;

use super::literal::Literal;

/// The literals of one pattern, ready to be searched for.
pub(super) struct Finder {
    needles: Vec<Needle>,
}

enum Needle {
    Exact(Box<memmem::Finder<'static>>),
    /// Ignoring ASCII case: `bytes[at]` is the byte searched for (in both cases).
    Folded {
        bytes: Vec<u8>,
        at: usize,
    },
}

impl Finder {
    /// Searches for any of `literals` (none: nothing is ever found).
    pub(super) fn new(literals: &[Literal]) -> Finder {
        let needles = literals
            .iter()
            .map(|l| match l.fold {
                false => Needle::Exact(Box::new(memmem::Finder::new(&l.bytes).into_owned())),
                true => Needle::Folded {
                    at: rarest(&l.bytes),
                    bytes: l.bytes.clone(),
                },
            })
            .collect();
        Finder { needles }
    }

    /// Whether `hay` contains one of the literals.
    pub(super) fn is_in(&self, hay: &[u8]) -> bool {
        self.needles.iter().any(|n| n.find(hay, 0).is_some())
    }

    /// The places of the literals in `hay`, in order.
    pub(super) fn hits<'a>(&'a self, hay: &'a [u8]) -> Hits<'a> {
        Hits {
            finder: self,
            hay,
            next: vec![Next::Unknown; self.needles.len()],
        }
    }
}

impl Needle {
    /// Where the literal first starts in `hay` at or after `from`.
    fn find(&self, hay: &[u8], from: usize) -> Option<usize> {
        let rest = hay.get(from..)?;
        match self {
            Needle::Exact(f) => f.find(rest).map(|i| from + i),
            Needle::Folded { bytes, at } => {
                let (lower, upper) = (
                    bytes[*at].to_ascii_lowercase(),
                    bytes[*at].to_ascii_uppercase(),
                );
                let mut i = *at;
                while let Some(k) = rest.get(i..).and_then(|r| memchr::memchr2(lower, upper, r)) {
                    let start = i + k - at;
                    let here = rest.get(start..start + bytes.len());
                    if here.is_some_and(|h| h.eq_ignore_ascii_case(bytes)) {
                        return Some(from + start);
                    }
                    i += k + 1;
                }
                None
            }
        }
    }
}

/// Where a needle is next found, as far as known.
#[derive(Clone, Copy)]
enum Next {
    Unknown,
    At(usize),
    Never,
}

/// The places of a finder's literals in one buffer, found as they are asked for: each
/// literal's next place is remembered, so that a buffer is searched once for each.
pub(super) struct Hits<'a> {
    finder: &'a Finder,
    hay: &'a [u8],
    next: Vec<Next>,
}

impl Hits<'_> {
    /// Where a literal first starts at or after `from`.
    pub(super) fn from(&mut self, from: usize) -> Option<usize> {
        let mut first = None;
        for (needle, next) in self.finder.needles.iter().zip(&mut self.next) {
            let at = match *next {
                Next::At(at) if at >= from => at,
                Next::Never => continue,
                _ => match needle.find(self.hay, from) {
                    Some(at) => at,
                    None => {
                        *next = Next::Never;
                        continue;
                    }
                },
            };
            *next = Next::At(at);
            first = Some(first.map_or(at, |f: usize| f.min(at)));
        }
        first
    }
}

/// The index of the byte of `bytes` least common in text (letters by their frequency in
/// English, after space and digits; punctuation is rarer).
fn rarest(bytes: &[u8]) -> usize {
    const COMMON: &[u8] = b" 0123456789etaoinshrdlcumwfgypbvkjxqz";
    let rank = |b: u8| {
        let b = b.to_ascii_lowercase();
        COMMON
            .iter()
            .position(|&c| c == b)
            .map_or(0, |i| COMMON.len() - i)
    };
    (0..bytes.len())
        .min_by_key(|&i| rank(bytes[i]))
        .unwrap_or(0)
}
