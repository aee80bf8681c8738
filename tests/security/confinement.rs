//! `stdmcp serve`: what a caller's values can and cannot reach (paths, array items,
//! metacharacters), proven with real programs that would leave traces if they ran. The
//! argument checks alone: these tools run with `"confine": "off"`, so that the kernel's
//! confinement (tests/security/confine.rs) cannot hide a check that let a value through.
#![allow(clippy::unwrap_used)]
#![allow(clippy::disallowed_methods)] // tests and benchmarks start bare programs as clients and controls

use std::path::{Path, PathBuf};

use crate::common::{fixture, serve_command, temp_dir, Proc};
use serde_json::{json, Value};

fn serve(dir: &Path, manifest: &Value) -> Proc {
    let path = dir.join("tools.json");
    std::fs::write(&path, manifest.to_string()).unwrap();
    Proc::initialized(serve_command(&path), "2025-11-25")
}

/// Calls `tool` and returns (isError, text).
fn call(p: &mut Proc, id: i64, tool: &str, args: Value) -> (bool, String) {
    p.call(json!(id), tool, args, None);
    let r = p.response(&json!(id));
    let text = r["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("{r}"))
        .to_owned();
    (r["result"]["isError"] == true, text)
}

fn tee_manifest() -> Value {
    json!({
        "name": "t", "roots": {"r": "r"}, "defaults": {"confine": "off"},
        "tools": [{"name": "tee", "description": "writes stdin to a file", "program": "tee",
                   "args": [{"param": "f"}], "stdin": "data",
                   "params": {"f": {"type": "path", "root": "r", "mustExist": false, "required": true},
                              "data": {"type": "string"}}}]
    })
}

#[test]
fn a_dangling_symlink_cannot_lead_a_new_file_out_of_its_root() {
    let dir = temp_dir("dangle");
    std::fs::create_dir_all(dir.join("r/sub")).unwrap();
    std::fs::create_dir_all(dir.join("out")).unwrap();
    let link = |target: PathBuf, name: &str| std::os::unix::fs::symlink(target, dir.join(name));
    // The issue's reproducer, and its relatives: a relative dangling link, a link in the
    // middle followed by `..`, a chain of links, an absolute path outside.
    link(dir.join("out/new"), "r/dangle").unwrap();
    link(PathBuf::from("../out/rel"), "r/rel").unwrap();
    link(dir.join("out"), "r/outdir").unwrap();
    link(dir.join("r/dangle"), "r/chain").unwrap();
    link(dir.join("r/inside-target"), "r/inside").unwrap();
    link(PathBuf::from("loop"), "r/loop").unwrap();
    let mut p = serve(&dir, &tee_manifest());
    let refused = [
        ("dangle", "outside the allowed directory"),
        ("rel", "outside the allowed directory"),
        ("chain", "outside the allowed directory"),
        ("outdir/new", "outside the allowed directory"),
        ("outdir/../r/../out/dotdot", "outside the allowed directory"),
        ("sub/../../out/up", "outside the allowed directory"),
        ("loop", "symbolic links"),
        ("missing-dir/new", "does not exist"),
        ("", "is empty"),
    ];
    for (i, (f, why)) in refused.iter().enumerate() {
        let (is_error, text) = call(&mut p, i as i64, "tee", json!({"f": f, "data": "ESCAPED"}));
        assert!(is_error && text.contains(why), "{f:?}: {text}");
        assert!(text.contains("Nothing was run"), "{f:?}: {text}");
    }
    let abs = dir.join("out/abs").display().to_string();
    let (is_error, text) = call(&mut p, 50, "tee", json!({"f": abs, "data": "ESCAPED"}));
    assert!(is_error && text.contains("outside"), "{text}");
    // A dangling link that stays inside the root is followed: the program gets the target.
    let (is_error, text) = call(&mut p, 60, "tee", json!({"f": "inside", "data": "kept"}));
    assert!(!is_error, "{text}");
    let (is_error, _) = call(&mut p, 61, "tee", json!({"f": "sub/new", "data": "kept"}));
    assert!(!is_error);
    p.finish();
    for name in ["new", "rel", "dotdot", "up", "abs"] {
        assert!(
            !dir.join("out").join(name).exists(),
            "out/{name} was written"
        );
    }
    assert_eq!(
        std::fs::read_to_string(dir.join("r/inside-target")).unwrap(),
        "kept"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("r/sub/new")).unwrap(),
        "kept"
    );
}

#[test]
fn array_items_that_are_paths_stay_in_their_root() {
    let dir = temp_dir("grep-array");
    std::fs::create_dir_all(dir.join("r")).unwrap();
    std::fs::write(dir.join("r/a.txt"), "root:in the root\n").unwrap();
    std::os::unix::fs::symlink("/etc/passwd", dir.join("r/pw")).unwrap();
    let m = json!({
        "name": "t", "roots": {"r": "r"}, "defaults": {"confine": "off"},
        "tools": [{"name": "grep", "description": "searches files", "program": "grep",
                   "args": ["-rn", {"param": "pattern"}, {"param": "paths"}], "successCodes": [0, 1],
                   "params": {"pattern": {"type": "string", "required": true},
                              "paths": {"type": "array", "required": true, "maxItems": 4,
                                        "items": {"type": "path", "root": "r"}}}}]
    });
    let mut p = serve(&dir, &m);
    for (i, paths) in [
        json!(["/etc/passwd"]),
        json!(["a.txt", "/etc/passwd"]),
        json!(["pw"]),
        json!(["../../../../etc/passwd"]),
    ]
    .into_iter()
    .enumerate()
    {
        let (is_error, text) = call(
            &mut p,
            i as i64,
            "grep",
            json!({"pattern": "root", "paths": paths}),
        );
        assert!(is_error, "{paths}: {text}");
        assert!(
            text.contains("argument `paths`: item") && text.contains("outside the allowed"),
            "{paths}: {text}"
        );
        assert!(!text.contains("root:x:0"), "{text}");
    }
    let (is_error, text) = call(
        &mut p,
        9,
        "grep",
        json!({"pattern": "root", "paths": ["a.txt"]}),
    );
    assert!(!is_error && text.contains("in the root"), "{text}");
    p.request(json!(10), "tools/list", json!({}));
    let tools = p.response(&json!(10));
    let items = &tools["result"]["tools"][0]["inputSchema"]["properties"]["paths"]["items"];
    assert_eq!(items["type"], "string", "{items}");
    assert!(
        items["description"].as_str().unwrap().contains("inside"),
        "{items}"
    );
    p.finish();
}

#[test]
fn ordinary_text_passes_and_metacharacters_matter_only_in_code() {
    let dir = temp_dir("meta");
    std::fs::create_dir_all(dir.join("r")).unwrap();
    // The issue's example was `x$(id);rm -rf ~|sh`; a test must stay harmless even when the
    // code it guards is broken (a shell would then run it), so the payload only leaves a trace.
    let odd = "x$(id);touch PWNED|cat";
    std::fs::write(dir.join("r").join(odd), "odd file\n").unwrap();
    let marker = dir.join("marker");
    let m = json!({
        "name": "t", "roots": {"r": "r"}, "defaults": {"confine": "off"},
        "tools": [
            {"name": "record", "description": "records its arguments", "program": fixture("record.sh"),
             "env": {"MARKER": marker},
             "args": [{"param": "text"}, {"param": "file"}, {"param": "words"}, {"param": "level"}],
             "params": {"text": {"type": "string"}, "file": {"type": "path", "root": "r"},
                        "words": {"type": "array"}, "level": {"type": "enum", "values": ["a;b", "c"]}}},
            {"name": "multi", "description": "newlines allowed", "program": fixture("record.sh"),
             "env": {"MARKER": marker}, "args": [{"param": "lines"}],
             "params": {"lines": {"type": "string", "allowMetacharacters": true}}},
            {"name": "shcat", "description": "a value spliced into shell code", "program": "sh", "cwd": dir,
             "args": ["-c", {"param": "file", "flag": "cat ", "joined": true}],
             "params": {"file": {"type": "path", "root": "r"}}},
            {"name": "shecho", "description": "a string spliced into shell code", "program": "sh", "cwd": dir,
             "args": ["-c", {"param": "word", "flag": "echo ", "joined": true}],
             "params": {"word": {"type": "string"}}}
        ]
    });
    let mut p = serve(&dir, &m);
    // Ordinary text with shell punctuation reaches the program unchanged, in every type.
    let (is_error, text) = call(
        &mut p,
        1,
        "record",
        json!({"text": "with; semicolon (a|b)? *", "file": odd, "words": ["x&y", "$HOME"], "level": "a;b"}),
    );
    assert!(!is_error, "{text}");
    let recorded = std::fs::read_to_string(&marker).unwrap();
    let path = dir.join("r").join(odd);
    assert_eq!(
        recorded,
        format!(
            "with; semicolon (a|b)? * {} x&y $HOME a;b\n",
            path.display()
        )
    );
    // Control characters are refused in argv unless the parameter allows them; NUL always.
    for (i, args) in [
        json!({"text": "two\nlines"}),
        json!({"words": ["ok", "bell\u{7}"]}),
        json!({"text": "nul\u{0}"}),
    ]
    .into_iter()
    .enumerate()
    {
        let (is_error, text) = call(&mut p, 10 + i as i64, "record", args.clone());
        assert!(
            is_error && (text.contains("control character") || text.contains("NUL")),
            "{args}: {text}"
        );
    }
    let (is_error, text) = call(&mut p, 20, "multi", json!({"lines": "two\nlines"}));
    assert!(!is_error, "{text}");
    let (is_error, text) = call(&mut p, 21, "multi", json!({"lines": "nul\u{0}"}));
    assert!(is_error && text.contains("NUL"), "{text}");
    // Spliced into shell code, metacharacters are refused, whatever the type.
    let (is_error, text) = call(&mut p, 30, "shcat", json!({"file": odd}));
    assert!(is_error && text.contains("metacharacter"), "{text}");
    let (is_error, text) = call(&mut p, 31, "shecho", json!({"word": "hi; touch PWNED"}));
    assert!(is_error && text.contains("metacharacter"), "{text}");
    let (is_error, text) = call(&mut p, 32, "shecho", json!({"word": "hello"}));
    assert_eq!((is_error, text.as_str()), (false, "hello\n"));
    p.finish();
    assert!(!dir.join("PWNED").exists(), "a value was run as shell code");
}

#[test]
fn code_is_recognised_in_every_form_and_a_script_s_arguments_are_data() {
    let dir = temp_dir("forms");
    std::fs::create_dir_all(dir.join("r")).unwrap();
    let marker = dir.join("marker");
    let echo = json!({"param": "word", "flag": "echo ", "joined": true});
    let tool = |name: &str, program: &str, args: Value| {
        json!({"name": name, "description": "d", "program": program, "cwd": dir,
               "args": args, "params": {"word": {"type": "string"}}})
    };
    let m = json!({
        "name": "t", "roots": {"r": "r"}, "defaults": {"confine": "off"},
        "tools": [
            tool("cluster", "sh", json!(["-ec", echo])),
            tool("dashdash", "sh", json!(["-c", "--", echo])),
            tool("timeout", "timeout", json!(["-s", "KILL", "30", "sh", "-c", echo])),
            tool("awk", "awk", json!([{"param": "word"}])),
            {"name": "script", "description": "d", "program": "sh", "env": {"MARKER": marker},
             "args": [fixture("record.sh"), "-c", {"param": "word"}],
             "params": {"word": {"type": "string"}}}
        ]
    });
    let mut p = serve(&dir, &m);
    // Payloads only leave a trace in the test's directory, should a guard be broken.
    for (i, (tool, word)) in [
        ("cluster", "hi; touch PWNED"),
        ("dashdash", "hi; touch PWNED"),
        ("timeout", "hi; touch PWNED"),
        ("awk", "BEGIN{system(\"touch PWNED\")}"),
    ]
    .into_iter()
    .enumerate()
    {
        let (is_error, text) = call(&mut p, i as i64, tool, json!({ "word": word }));
        assert!(is_error && text.contains("metacharacter"), "{tool}: {text}");
    }
    let (is_error, text) = call(&mut p, 10, "cluster", json!({"word": "hello"}));
    assert_eq!((is_error, text.as_str()), (false, "hello\n"));
    // After the script, `-c` and the value are the script's data: passed as they are.
    let (is_error, text) = call(&mut p, 11, "script", json!({"word": "a;b"}));
    assert!(!is_error, "{text}");
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), "-c a;b\n");
    p.finish();
    assert!(!dir.join("PWNED").exists(), "a value was run as code");
}
