//! What a call can reach and what it leaves behind (README "Security model"), through the real
//! binary: a caller's values confined (`confinement`), the server's own reads through checked
//! descriptors (`own_reads`), processes that leave their group gone (`containment`), and the
//! machine saying no: process and thread limits, EMFILE, a hostile `TMPDIR` (`exhaustion`), a
//! full disk under the output spool (`full_disk`).

#[path = "../common/mod.rs"]
mod common;

mod confine;
mod confinement;
mod containment;
mod exhaustion;
mod full_disk;
mod own_reads;
