//! Tools whose arguments arrive as a Rust type: [`ToolDef::typed`].

use serde::de::DeserializeOwned;
use serde_json::Value;

use super::ctx::Ctx;
use super::handlers::{ToolError, ToolResult};
use super::tool::ToolDef;

impl ToolDef {
    /// Like [`ToolDef::new`], with the arguments deserialized into `T` first. Arguments that
    /// do not fit `T` (a missing field, a wrong type) become an `isError` result naming the
    /// field, and the handler is not called; `input_schema` still tells the client what to
    /// send.
    pub fn typed<T: DeserializeOwned>(
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: Value,
        handler: impl Fn(&Ctx, T) -> ToolResult + Send + Sync + 'static,
    ) -> ToolDef {
        ToolDef::new(name, description, input_schema, move |ctx, args| {
            handler(ctx, arguments(&args)?)
        })
    }
}

/// `args` as a `T`, or an error that says which top-level field did not fit.
pub(super) fn arguments<T: DeserializeOwned>(args: &Value) -> Result<T, ToolError> {
    let Value::Object(map) = args else {
        return serde_json::from_value(args.clone())
            .map_err(|e| ToolError(format!("invalid arguments: {e}")));
    };
    // Written out by hand, compact as serde_json writes it, to know where each field's
    // value starts and ends: the parser's error position then names the field.
    let mut text = String::from("{");
    let mut spans = Vec::with_capacity(map.len());
    for (i, (key, value)) in map.iter().enumerate() {
        if i > 0 {
            text.push(',');
        }
        let start = text.len();
        text.push_str(&serde_json::to_string(key).map_err(|e| ToolError(e.to_string()))?);
        text.push(':');
        text.push_str(&serde_json::to_string(value).map_err(|e| ToolError(e.to_string()))?);
        spans.push((key.as_str(), start, text.len()));
    }
    text.push('}');
    serde_json::from_str(&text).map_err(|e| {
        let message = e.to_string();
        let position = format!(" at line {} column {}", e.line(), e.column());
        let message = message.strip_suffix(&position).unwrap_or(&message);
        // The column is 1-based and points at or just past the value that did not fit.
        let at = e.column().saturating_sub(1);
        match spans
            .iter()
            .find(|(_, start, end)| *start < at && at <= *end)
        {
            Some((key, ..)) => ToolError(format!("invalid argument `{key}`: {message}")),
            None => ToolError(format!("invalid arguments: {message}")),
        }
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde::Deserialize;
    use serde_json::json;

    use super::*;

    #[derive(Debug, Deserialize, PartialEq)]
    struct Args {
        n: u64,
        name: Option<String>,
        #[serde(default)]
        tags: Vec<String>,
    }

    fn err(args: Value) -> String {
        arguments::<Args>(&args).unwrap_err().0
    }

    #[test]
    fn arguments_that_fit_are_deserialized() {
        let a: Args = arguments(&json!({"n": 3, "tags": ["x"]})).unwrap();
        assert_eq!(
            a,
            Args {
                n: 3,
                name: None,
                tags: vec!["x".into()]
            }
        );
    }

    #[test]
    fn a_wrong_type_names_its_field() {
        assert_eq!(
            err(json!({"n": "three"})),
            "invalid argument `n`: invalid type: string \"three\", expected u64"
        );
        assert_eq!(
            err(json!({"n": 1, "name": 5})),
            "invalid argument `name`: invalid type: integer `5`, expected a string"
        );
        assert_eq!(
            err(json!({"n": 1, "tags": ["ok", {"deep": true}]})),
            "invalid argument `tags`: invalid type: map, expected a string"
        );
        assert_eq!(
            err(json!({"n": -1})),
            "invalid argument `n`: invalid value: integer `-1`, expected u64"
        );
    }

    #[test]
    fn a_missing_field_or_no_object_says_so() {
        assert_eq!(err(json!({})), "invalid arguments: missing field `n`");
        assert_eq!(
            err(json!("three")),
            "invalid arguments: invalid type: string \"three\", expected struct Args"
        );
    }
}
