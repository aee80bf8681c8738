//! Manifest parser: any text is accepted or refused with located errors, never a panic; an
//! accepted manifest gives tool definitions with object schemas, and planning a call with
//! any arguments succeeds or says why not.

use std::path::Path;

use serde_json::Value;
use stdmcp_cli::testing::{plan, tool_definitions, Manifest};

/// `data`: manifest text, optionally followed by a NUL byte and the arguments (JSON).
pub(crate) fn check(data: &[u8], base: &Path) {
    let (text, args) = match data.iter().position(|&b| b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &b""[..]),
    };
    let Ok(text) = std::str::from_utf8(text) else {
        return;
    };
    let manifest = match Manifest::parse(text, base) {
        Ok(m) => m,
        Err(errors) => {
            assert!(!errors.is_empty(), "refused without an error");
            for e in errors {
                assert!(!e.to_string().is_empty());
            }
            return;
        }
    };
    let args: Value = serde_json::from_slice(args).unwrap_or(Value::Null);
    for (spec, def) in manifest.tools.iter().zip(tool_definitions(&manifest)) {
        assert_eq!(spec.name, def.name);
        assert!(
            def.input_schema.is_object(),
            "schema of {} not an object",
            def.name
        );
        serde_json::to_vec(&def).unwrap();
        let _ = stdmcp_proto::schema::validate(&def.input_schema, &args);
        if let Err(why) = plan(spec, &manifest.roots, &args) {
            assert!(!why.is_empty(), "plan refused without a reason");
        }
    }
}
