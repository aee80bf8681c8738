//! Output gating: nothing newer than the negotiated revision reaches the client
//! (each revision's schema). Each function takes what the server built for the newest revision and
//! returns what revision `v` may see; unknown constructs degrade to text rather than vanish.

use serde_json::Value;

use super::{
    Annotations, CallToolResult, Content, Implementation, ProgressParams, Prompt, PromptArgument,
    ProtocolVersion, Resource, ResourceTemplate, Tool,
};

/// A tool definition for `tools/list`.
pub fn tool(t: &Tool, v: ProtocolVersion) -> Tool {
    let mut t = t.clone();
    if !v.has_2503_features() {
        t.annotations = None;
    }
    if !v.has_2506_features() {
        t.title = None;
        t.output_schema = None;
        t.meta = None;
    }
    if !v.has_2511_features() {
        t.icons = None;
    }
    t
}

/// A tool result.
pub fn call_result(mut r: CallToolResult, v: ProtocolVersion) -> CallToolResult {
    if !v.has_2506_features() {
        r.structured_content = None;
    } else if v.is_handshake_era() && !matches!(r.structured_content, Some(Value::Object(_)) | None)
    {
        // 2025-06-18 and 2025-11-25 allow only an object; the text block already carries it.
        r.structured_content = None;
    }
    r.content = r.content.into_iter().map(|c| content(c, v)).collect();
    r
}

/// One content block: newer block types degrade to text for older revisions.
pub fn content(c: Content, v: ProtocolVersion) -> Content {
    let annotations = |a: Option<Annotations>| {
        a.map(|mut a| {
            if !v.has_2506_features() {
                a.last_modified = None;
            }
            a
        })
    };
    let meta = |m| if v.has_2506_features() { m } else { None };
    match c {
        Content::Text {
            text,
            annotations: a,
            meta: m,
        } => Content::Text {
            text,
            annotations: annotations(a),
            meta: meta(m),
        },
        Content::Image {
            data,
            mime_type,
            annotations: a,
            meta: m,
        } => Content::Image {
            data,
            mime_type,
            annotations: annotations(a),
            meta: meta(m),
        },
        Content::Audio { mime_type, data, .. } if !v.has_2503_features() => Content::text(format!(
            "[audio content of type {mime_type}, {} bytes of base64, not shown: this client's protocol revision has no audio]",
            data.len()
        )),
        Content::Audio {
            data,
            mime_type,
            annotations: a,
            meta: m,
        } => Content::Audio {
            data,
            mime_type,
            annotations: annotations(a),
            meta: meta(m),
        },
        Content::ResourceLink(link) if !v.has_2506_features() => {
            let mut text = format!("Resource: {}", link.uri);
            if let Some(d) = &link.description {
                text.push_str(&format!(" ({d})"));
            }
            Content::text(text)
        }
        Content::ResourceLink(mut link) => {
            if !v.has_2511_features() {
                link.icons = None;
            }
            link.annotations = annotations(link.annotations);
            Content::ResourceLink(link)
        }
        Content::Resource {
            mut resource,
            annotations: a,
            meta: m,
        } => {
            if !v.has_2506_features() {
                resource.meta = None;
            }
            Content::Resource {
                resource,
                annotations: annotations(a),
                meta: meta(m),
            }
        }
        Content::Unknown => Content::text("[content of an unknown type]"),
    }
}

/// `serverInfo`.
pub fn implementation(i: &Implementation, v: ProtocolVersion) -> Implementation {
    let mut i = i.clone();
    if !v.has_2506_features() {
        i.title = None;
    }
    if !v.has_2511_features() {
        i.description = None;
        i.website_url = None;
        i.icons = None;
    }
    i
}

/// Progress params: no `message` before 2025-03-26.
pub fn progress(mut p: ProgressParams, v: ProtocolVersion) -> ProgressParams {
    if !v.has_2503_features() {
        p.message = None;
    }
    p
}

/// A prompt for `prompts/list`.
pub fn prompt(p: &Prompt, v: ProtocolVersion) -> Prompt {
    let mut p = p.clone();
    if !v.has_2506_features() {
        p.title = None;
        if let Some(args) = &mut p.arguments {
            args.iter_mut()
                .for_each(|a: &mut PromptArgument| a.title = None);
        }
    }
    if !v.has_2511_features() {
        p.icons = None;
    }
    p
}

/// A resource for `resources/list`.
pub fn resource(r: &Resource, v: ProtocolVersion) -> Resource {
    let mut r = r.clone();
    if !v.has_2506_features() {
        r.title = None;
    }
    r
}

/// A resource template for `resources/templates/list`.
pub fn resource_template(r: &ResourceTemplate, v: ProtocolVersion) -> ResourceTemplate {
    let mut r = r.clone();
    if !v.has_2506_features() {
        r.title = None;
    }
    r
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::mcp::{Icon, ResourceLink, ToolAnnotations};
    use serde_json::json;
    use ProtocolVersion::*;

    fn full_tool() -> Tool {
        Tool {
            name: "t".into(),
            title: Some("T".into()),
            description: Some("d".into()),
            input_schema: json!({"type":"object"}),
            output_schema: Some(json!({"type":"object"})),
            annotations: Some(ToolAnnotations {
                read_only_hint: Some(true),
                ..Default::default()
            }),
            icons: Some(vec![Icon {
                src: "data:,".into(),
                mime_type: None,
                sizes: None,
                theme: None,
            }]),
            meta: None,
        }
    }

    fn keys(v: &impl serde::Serialize) -> Vec<String> {
        let v = serde_json::to_value(v).unwrap();
        let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
        k.sort();
        k
    }

    #[test]
    fn tool_fields_per_revision() {
        let t = full_tool();
        assert_eq!(
            keys(&tool(&t, V2024_11_05)),
            ["description", "inputSchema", "name"]
        );
        assert_eq!(
            keys(&tool(&t, V2025_03_26)),
            ["annotations", "description", "inputSchema", "name"]
        );
        assert_eq!(
            keys(&tool(&t, V2025_06_18)),
            [
                "annotations",
                "description",
                "inputSchema",
                "name",
                "outputSchema",
                "title"
            ]
        );
        assert_eq!(keys(&tool(&t, V2025_11_25)).len(), 7);
        assert_eq!(keys(&tool(&t, V2026_07_28)).len(), 7);
    }

    #[test]
    fn results_per_revision() {
        let mut r = CallToolResult::structured(json!({"sum": 5}));
        r.content.push(Content::audio("AAAA", "audio/wav"));
        r.content.push(Content::ResourceLink(Box::new(ResourceLink {
            uri: "file:///x".into(),
            name: "x".into(),
            title: None,
            description: None,
            mime_type: None,
            size: None,
            annotations: None,
            icons: None,
            meta: None,
        })));
        let old = call_result(r.clone(), V2024_11_05);
        assert!(old.structured_content.is_none());
        assert!(old
            .content
            .iter()
            .all(|c| matches!(c, Content::Text { .. })));
        let mid = call_result(r.clone(), V2025_03_26);
        assert!(matches!(mid.content[1], Content::Audio { .. }));
        assert!(matches!(mid.content[2], Content::Text { .. }));
        let new = call_result(r.clone(), V2025_06_18);
        assert_eq!(new.structured_content, Some(json!({"sum": 5})));
        assert!(matches!(new.content[2], Content::ResourceLink(_)));
        let arr = CallToolResult::structured(json!([1, 2]));
        assert!(call_result(arr.clone(), V2025_11_25)
            .structured_content
            .is_none());
        assert!(call_result(arr, V2026_07_28).structured_content.is_some());
    }

    #[test]
    fn progress_message_and_server_info() {
        let p = ProgressParams {
            progress_token: json!(1),
            progress: 1.0,
            total: None,
            message: Some("m".into()),
        };
        assert!(progress(p.clone(), V2024_11_05).message.is_none());
        assert!(progress(p, V2025_03_26).message.is_some());
        let mut i = Implementation::new("s", "1");
        i.title = Some("S".into());
        i.description = Some("d".into());
        assert_eq!(keys(&implementation(&i, V2025_03_26)), ["name", "version"]);
        assert_eq!(
            keys(&implementation(&i, V2025_06_18)),
            ["name", "title", "version"]
        );
        assert_eq!(keys(&implementation(&i, V2025_11_25)).len(), 4);
    }
}
