//! The cursors of a server, one per session, each taken out while a cursor call works with it.

use std::collections::HashMap;
use std::sync::Mutex;
use stdmcp::sync::lock;

use super::engine::Cursor;
use crate::session::Key;

/// The cursors of a server, one per session.
#[derive(Default)]
pub(crate) struct CursorStore {
    map: Mutex<HashMap<Key, CursorSlot>>,
}

enum CursorSlot {
    Idle(Box<Cursor>),
    /// A cursor call runs; the file it works on.
    Busy(String),
}

impl CursorStore {
    pub(super) fn take(&self, key: &Key) -> Option<Cursor> {
        let mut map = lock(&self.map);
        match map.remove(key) {
            Some(CursorSlot::Idle(c)) => {
                map.insert(key.clone(), CursorSlot::Busy(c.file.clone()));
                Some(*c)
            }
            Some(busy) => {
                map.insert(key.clone(), busy);
                None
            }
            None => None,
        }
    }

    pub(super) fn put(&self, key: &Key, c: Cursor) {
        let mut map = lock(&self.map);
        map.insert(key.clone(), CursorSlot::Idle(Box::new(c)));
    }

    /// A copy of the cursor of `key`, or the file a running call works on.
    pub(super) fn peek(&self, key: &Key) -> Option<Result<Cursor, String>> {
        let map = lock(&self.map);
        map.get(key).map(|s| match s {
            CursorSlot::Idle(c) => Ok((**c).clone()),
            CursorSlot::Busy(f) => Err(f.clone()),
        })
    }
}
