//! What a cursor tool answers: its text, and the same as `structuredContent` (README "Proof
//! files"), which some clients show the model instead of the text: the file's outline, the
//! theorem under the cursor and its recorded steps, the blocks and commands that failed, and
//! what the call itself found (goals, verdicts, tactics tried), in fields named for what they
//! hold.

use serde_json::{json, Map, Value};

use super::engine::{Cursor, Failure};
use crate::spec::cursor::CursorSpec;
use stdmcp::mcp::CallToolResult;

/// One answer: its text and its fields.
#[derive(Debug, Default)]
pub(super) struct Reply {
    /// For the reader.
    pub text: String,
    /// The same, as fields (`structuredContent`).
    pub data: Map<String, Value>,
}

/// A cursor call's answer: `Err` is an error result (`isError`).
pub(super) type Answer = Result<Reply, Reply>;

impl From<String> for Reply {
    fn from(text: String) -> Reply {
        Reply {
            text,
            data: Map::new(),
        }
    }
}

impl Reply {
    /// This reply with field `key` set to `value`.
    pub(super) fn with(mut self, key: &str, value: impl Into<Value>) -> Reply {
        self.data.insert(key.to_owned(), value.into());
        self
    }

    /// Text `before` this reply's text (on its own lines).
    pub(super) fn after(mut self, before: &str) -> Reply {
        if !before.is_empty() {
            self.text = format!("{before}\n{}", self.text);
        }
        self
    }
}

/// The cursor's state as fields: its file, the line loaded to, the outline, the theorem under
/// the cursor and its recorded steps, whether the last step proved it, what failed.
pub(super) fn state(c: &Cursor, spec: &CursorSpec) -> Map<String, Value> {
    let outline: Vec<Value> = c
        .outline
        .blocks()
        .map(|(i, s, b)| {
            let (a, z) = c.outline.lines_of(s);
            json!({
                "name": b.name,
                "lines": [a, z],
                "placeholder": b.placeholder,
                "abandoned": b.abandoned,
                "goal": spec.rules[b.rule].goal,
                "underCursor": Some(i) == c.current,
            })
        })
        .collect();
    let current = c.current.and_then(|i| c.block(i)).map(|(s, b)| {
        let (a, z) = c.outline.lines_of(s);
        json!({"theorem": b.name, "lines": [a, z]})
    });
    let mut m = Map::new();
    m.insert("file".into(), json!(c.file));
    m.insert(
        "loadedToLine".into(),
        json!(c.outline.line(c.loaded_end().saturating_sub(1))),
    );
    m.insert("outline".into(), Value::Array(outline));
    m.insert("current".into(), current.unwrap_or(Value::Null));
    m.insert("steps".into(), json!(c.steps));
    m.insert("proved".into(), json!(c.proved));
    m.insert("failed".into(), failures(&c.failed));
    m
}

/// Failures as fields.
pub(super) fn failures(failed: &[Failure]) -> Value {
    Value::Array(failed.iter().map(failure).collect())
}

/// One failure as fields.
pub(super) fn failure(f: &Failure) -> Value {
    let mut v = json!({
        "name": f.name,
        "kind": if f.command { "command" } else { "block" },
        "lines": [f.lines.0, f.lines.1],
        "error": f.error,
    });
    if let Some(after) = &f.after {
        v["afterFailed"] = json!({"kind": after.kind, "name": after.name, "line": after.line});
    }
    if let Some(b) = &f.broken {
        v["brokenAt"] = b.clone();
    }
    v
}

/// The tool result of `answer`.
pub(super) fn result(answer: Answer) -> CallToolResult {
    let (reply, error) = match answer {
        Ok(r) => (r, false),
        Err(r) => (r, true),
    };
    let mut r = if error {
        CallToolResult::error(reply.text)
    } else {
        CallToolResult::text(reply.text)
    };
    if !reply.data.is_empty() {
        r.structured_content = Some(Value::Object(reply.data));
    }
    r
}
