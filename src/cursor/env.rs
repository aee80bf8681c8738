//! What every cursor action needs: the sessions, the kind and its cursor, the store of
//! cursors, the root, the session's name, and the call.

use std::path::Path;
use std::sync::Arc;

use super::store::CursorStore;
use crate::session::{Caller, Key, Registry};
use crate::spec::cursor::CursorSpec;
use crate::spec::SessionKind;

/// What every action needs.
pub(super) struct Env<'a> {
    pub reg: &'a Arc<Registry>,
    pub kind: &'a Arc<SessionKind>,
    pub spec: &'a CursorSpec,
    pub store: &'a CursorStore,
    pub root: &'a Path,
    pub session: String,
    pub call: &'a Caller<'a>,
    /// The call's cancel token: what a build the cursor runs is stopped by.
    pub token: stdmcp::CancelToken,
}

impl Env<'_> {
    pub(super) fn key(&self) -> Key {
        (self.kind.name.clone(), self.session.clone())
    }

    pub(super) fn tool(&self, suffix: &str) -> String {
        format!("{}_{suffix}", self.kind.name)
    }
}
