//! A session answer longer than its cap, kept whole in the output spool like a tool's output
//! (README "Output spool"), and the note that tells the model how to read it.

use std::sync::{Arc, Mutex};
use stdmcp::sync::lock;

use super::answer::Sink;
use crate::spool::{Entry, Spool};
use stdmcp::process::Stream;

/// The spool entry of one answer: begun on its first byte (`None` inside: the spool is off).
type Slot = Arc<Mutex<Option<Option<Entry>>>>;

/// Where one exchange's answer goes when it is longer than its cap.
pub(super) struct Spill {
    /// The call id the `output` tool reads it by.
    id: String,
    slot: Slot,
}

impl Spill {
    /// A fresh call id; nothing is kept until the answer turns out long.
    pub(super) fn new() -> Spill {
        Spill {
            id: crate::call::new_call_id(),
            slot: Arc::default(),
        }
    }

    /// The sink of [`super::answer::Pending::await_answer`]: appends to the call's `stdout` (a
    /// session merges its program's stdout and stderr into one stream).
    pub(super) fn sink(&self) -> Sink {
        let (id, slot) = (self.id.clone(), Arc::clone(&self.slot));
        Box::new(move |bytes| {
            let mut slot = lock(&slot);
            let entry = slot.get_or_insert_with(|| Spool::global().begin(&id));
            if let Some(e) = entry {
                e.write(Stream::Stdout, bytes);
            }
        })
    }

    /// Said after the text of an answer of `total` bytes of which `shown` are shown.
    pub(super) fn note(&self, shown: u64, total: u64) -> String {
        let id = &self.id;
        let mut note = format!("\n[Answer cut: {shown} of {total} bytes shown;");
        let slot = lock(&self.slot);
        match slot.as_ref() {
            Some(Some(e)) if e.broken() => {
                note.push_str(&format!(" {}, so the cut part is lost", e.why_not_kept()));
            }
            Some(Some(e)) => {
                let kept = e.kept(Stream::Stdout);
                let cut = kept.cut || kept.bytes < total;
                let what = if cut {
                    "part of the answer"
                } else {
                    "the complete answer"
                };
                note.push_str(&format!(
                    " {what} is kept as call {id}: read it with the `output` tool, \
                     e.g. {{\"call\": \"{id}\", \"stream\": \"stdout\", \"offset\": 0}} (or \
                     \"grep\": a pattern), or as the resource output://{id}/stdout"
                ));
                let kept = kept.bytes;
                if cut {
                    note.push_str(&format!(
                        "; only its first {kept} bytes were kept (the output spool is full, or could not be written)"
                    ));
                }
            }
            _ => note.push_str(&format!(
                " {}, so the cut part is lost",
                crate::spool::TURNED_OFF
            )),
        }
        note.push_str(".]");
        note
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_note_calls_the_answer_complete_only_when_the_spool_kept_it_whole() {
        let dir = std::env::temp_dir().join(format!("stdmcp-spill-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let spool = Arc::new(Spool::new(dir, 10));
        let note = |bytes: &[u8]| {
            let spill = Spill::new();
            let entry = spool.begin(&spill.id).unwrap();
            entry.write(Stream::Stdout, bytes);
            *lock(&spill.slot) = Some(Some(entry));
            spill.note(2, bytes.len() as u64)
        };
        let whole = note(b"12345");
        assert!(
            whole.contains("; the complete answer is kept as call "),
            "{whole}"
        );
        assert!(!whole.contains("only its first"), "{whole}");
        // Past the spool's cap: a prefix, and the note says so.
        let part = note(b"0123456789abcdef");
        assert!(!part.contains("complete"), "{part}");
        assert!(
            part.contains("; part of the answer is kept as call "),
            "{part}"
        );
        assert!(part.contains("only its first 10 bytes were kept"), "{part}");
        spool.clear();
    }
}
