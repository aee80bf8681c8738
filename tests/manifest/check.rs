//! `stdmcp check`: manifests that could never work are refused with the JSON path of each
//! problem, and risky ones (a value that becomes code) are warned about.
#![allow(clippy::unwrap_used)]
#![allow(clippy::disallowed_methods)] // tests and benchmarks start bare programs as clients and controls

use crate::common::{stdmcp_check, temp_dir};
use serde_json::{json, Value};

/// Runs `stdmcp check` on a manifest with one tool `t` running `program` with `args` and
/// `params`; returns (exit code, stdout, stderr).
fn check(program: &str, args: Value, params: Value) -> (i32, String, String) {
    check_tools(json!([{"name": "t", "description": "d", "program": program,
                        "args": args, "params": params}]))
}

/// Runs `stdmcp check` on a manifest with the root `r` and these tools.
fn check_tools(tools: Value) -> (i32, String, String) {
    let dir = temp_dir("check");
    std::fs::create_dir_all(dir.join("r")).unwrap();
    let m = json!({"name": "c", "roots": {"r": "r"}, "tools": tools});
    stdmcp_check(&dir, &m)
}

/// A tool passing parameter `p` (declared as `param`) as one argument of `echo`.
fn one(param: Value) -> (i32, String, String) {
    check("echo", json!([{"param": "p"}]), json!({ "p": param }))
}

/// Ranges, defaults and paths that no value could satisfy, with what `stdmcp check` says.
fn impossible_values() -> Vec<(Value, &'static str)> {
    vec![
        (
            json!({"type": "integer", "minimum": 10, "maximum": 1}),
            "tools[0].params.p.maximum: 1 is below the minimum 10",
        ),
        (
            json!({"type": "number", "minimum": 0.5, "maximum": 0.25}),
            "tools[0].params.p.maximum: 0.25 is below the minimum 0.5",
        ),
        (
            json!({"type": "enum", "values": ["a", "b"], "default": "c"}),
            "tools[0].params.p.default: \"c\" is not one of a, b",
        ),
        (
            json!({"type": "string", "maxLength": 3, "default": "toolong"}),
            "tools[0].params.p.default: is 7 characters long, more than the maximum of 3",
        ),
        (
            json!({"type": "array", "default": "x"}),
            "tools[0].params.p.default: expected an array",
        ),
        (
            json!({"type": "array", "maxItems": 1, "default": ["a", "b"]}),
            "tools[0].params.p.default: has 2 items",
        ),
        (
            json!({"type": "integer", "maximum": 5, "default": 9}),
            "tools[0].params.p.default: 9 is outside the allowed range",
        ),
        (
            json!({"type": "integer", "default": "3"}),
            "tools[0].params.p.default: expected an integer",
        ),
        (
            json!({"type": "boolean", "default": 1}),
            "tools[0].params.p.default: expected true or false",
        ),
        (
            json!({"type": "path", "root": "r", "default": "/etc"}),
            "tools[0].params.p.default: /etc leads outside the allowed directory",
        ),
        (
            json!({"type": "path", "root": "r", "default": "../x"}),
            "outside the allowed directory",
        ),
    ]
}

/// Fields that belong to another type, duplicates, and values that look like options.
fn misplaced_fields() -> Vec<(Value, &'static str)> {
    vec![
        (
            json!({"type": "string", "minimum": 1}),
            "tools[0].params.p.minimum: applies only to integer and number parameters",
        ),
        (
            json!({"type": "integer", "maxLength": 3}),
            "tools[0].params.p.maxLength: applies only to",
        ),
        (
            json!({"type": "string", "values": ["a"]}),
            "tools[0].params.p.values: applies only to enum parameters",
        ),
        (
            json!({"type": "string", "root": "r"}),
            "tools[0].params.p.root: applies only to path parameters",
        ),
        (
            json!({"type": "string", "maxItems": 2}),
            "tools[0].params.p.maxItems: applies only to array parameters",
        ),
        (
            json!({"type": "enum", "values": ["a", "a"]}),
            "tools[0].params.p.values: \"a\" is listed twice",
        ),
        (
            json!({"type": "array", "items": {"type": "array"}}),
            "tools[0].params.p.items.type: array items cannot be",
        ),
        (
            json!({"type": "array", "items": {"type": "path", "root": "nope"}}),
            "tools[0].params.p.items.root: names no declared root: nope",
        ),
        (
            json!({"type": "array", "items": {"type": "path", "root": "r"}, "maxLength": 9}),
            "tools[0].params.p.maxLength: set it in items",
        ),
        (
            json!({"type": "integer", "default": -1}),
            "tools[0].params.p.default: starts with '-'",
        ),
        (
            json!({"type": "array", "default": ["a", "-b"]}),
            "tools[0].params.p.default: has an item that starts with '-'",
        ),
        (
            json!({"type": "enum", "values": ["-v", "-q"]}),
            "tools[0].params.p.values: \"-v\" starts with '-'",
        ),
    ]
}

#[test]
fn impossible_parameters_are_refused() {
    for (param, want) in impossible_values().into_iter().chain(misplaced_fields()) {
        let (code, out, err) = one(param.clone());
        assert_eq!(code, 1, "{param}: {out}{err}");
        assert!(out.is_empty(), "{param}: {out}");
        assert!(err.contains(want), "{param}: missing {want:?} in\n{err}");
    }
    // Their sound neighbours pass.
    for param in [
        json!({"type": "integer", "minimum": 1, "maximum": 1, "default": 1}),
        json!({"type": "enum", "values": ["a", "b"], "default": "b"}),
        json!({"type": "array", "maxItems": 2, "default": ["a", "b"]}),
        json!({"type": "path", "root": "r", "default": "."}),
        json!({"type": "array", "items": {"type": "path", "root": "r", "kind": "file"}}),
        json!({"type": "integer", "default": -1, "allowLeadingDash": true}),
        json!({"type": "enum", "values": ["-v", "-q"], "allowLeadingDash": true}),
    ] {
        let (code, out, err) = one(param.clone());
        assert_eq!(code, 0, "{param}: {out}{err}");
    }
}

#[test]
fn values_that_become_code_or_choose_the_program_are_warned_about() {
    let cases = [
        (
            "sh",
            json!(["-c", {"param": "p"}]),
            "tools[0].args[1]: p is run as code by sh -c",
        ),
        (
            "bash",
            json!(["-c", {"param": "p", "flag": "echo ", "joined": true}]),
            "run as code by bash -c",
        ),
        (
            "python3",
            json!(["-c", {"param": "p"}]),
            "run as code by python3 -c",
        ),
        (
            "env",
            json!(["node", "-e", {"param": "p"}]),
            "run as code by node -e",
        ),
        (
            "perl",
            json!([{"param": "p", "flag": "-e"}]),
            "run as code by perl -e",
        ),
        (
            "env",
            json!([{"param": "p"}]),
            "tools[0].args[0]: p chooses the program env runs",
        ),
        (
            "xargs",
            json!([{"param": "p"}]),
            "chooses the program xargs runs",
        ),
        (
            "find",
            json!([".", "-exec", {"param": "p"}, ";"]),
            "chooses the program find runs",
        ),
    ];
    for (program, args, want) in cases {
        let (code, out, err) = check(program, args.clone(), json!({"p": {"type": "string"}}));
        assert_eq!(code, 0, "{program} {args}: {err}");
        assert!(out.contains(": OK."), "{out}");
        assert!(
            err.contains("warning: ") && err.contains(want),
            "{program} {args}: missing {want:?} in\n{err}"
        );
    }
    // Text that names a file is confined to nothing: say so.
    let (code, _, err) = check(
        "cat",
        json!([{"param": "input_file"}]),
        json!({"input_file": {"type": "string"}}),
    );
    assert_eq!(code, 0);
    assert!(
        err.contains("tools[0].params.input_file: input_file looks like a path but is plain text"),
        "{err}"
    );
    // A value handed to a shell as a positional parameter is data, not code: no warning.
    let (code, _, err) = check(
        "sh",
        json!(["-c", "grep -- \"$1\" file", "sh", {"param": "p"}]),
        json!({"p": {"type": "string"}}),
    );
    assert_eq!((code, err.as_str()), (0, ""));
}

#[test]
fn what_a_call_could_never_pass_and_what_it_always_can() {
    // An empty flag would hand the value over bare, past the leading-dash check.
    for args in [
        json!([{"param": "s", "flag": "", "joined": true}]),
        json!([{"param": "s", "flag": ""}]),
    ] {
        let (code, _, err) = check("sort", args.clone(), json!({"s": {"type": "string"}}));
        assert_eq!(code, 1, "{args}: {err}");
        assert!(
            err.contains("tools[0].args[0].flag: must not be empty"),
            "{args}: {err}"
        );
    }
    // A path default that starts with '-' is passed resolved and absolute: callable.
    for param in [
        json!({"type": "path", "root": "r", "default": "-x"}),
        json!({"type": "array", "items": {"type": "path", "root": "r"}, "default": ["-x"]}),
        json!({"type": "path", "root": "r", "mustExist": false, "default": "-x"}),
    ] {
        let (code, out, err) = one(param.clone());
        assert_eq!(code, 0, "{param}: {out}{err}");
    }
    // An enum value run as code that holds a metacharacter could never be called.
    let sh = |values: Value| {
        check(
            "sh",
            json!(["-c", {"param": "p"}]),
            json!({"p": {"type": "enum", "values": values}}),
        )
    };
    let (code, _, err) = sh(json!(["a;b", "c"]));
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("tools[0].params.p.values: \"a;b\" contains the shell metacharacter ';'"),
        "{err}"
    );
    let (code, _, err) = sh(json!(["a b", "c"]));
    assert_eq!(code, 0, "{err}");
    // Data (no interpreter): the same values are fine.
    let (code, out, err) = one(json!({"type": "enum", "values": ["a;b", "c"]}));
    assert_eq!(code, 0, "{out}{err}");
}

#[test]
fn every_form_of_code_is_warned_about_and_a_script_s_arguments_are_not() {
    let p = || json!({"param": "p"});
    for (program, args, want) in [
        (
            "sh",
            json!(["-ec", p()]),
            "tools[0].args[1]: p is run as code by sh -c",
        ),
        (
            "bash",
            json!(["-c", "--", p()]),
            "tools[0].args[2]: p is run as code by bash -c",
        ),
        (
            "awk",
            json!([p()]),
            "tools[0].args[0]: p is run as code by awk (its program text)",
        ),
        (
            "timeout",
            json!(["-s", "KILL", "5", "sh", "-c", p()]),
            "p is run as code by sh -c",
        ),
        ("env", json!(["-S", p()]), "p is run as code by env -S"),
        (
            "python3",
            json!(["-m", p()]),
            "p chooses code that python3 -m loads or runs",
        ),
        (
            "make",
            json!([p()]),
            "p chooses code that make (as a VAR=value operand)",
        ),
    ] {
        let (code, out, err) = check(program, args.clone(), json!({"p": {"type": "string"}}));
        assert_eq!(code, 0, "{program} {args}: {err}");
        assert!(out.contains(": OK."), "{out}");
        assert!(
            err.contains(want),
            "{program} {args}: missing {want:?} in\n{err}"
        );
    }
    // Fixed choices and numbers cannot name arbitrary code: no warning.
    for param in [
        json!({"type": "enum", "values": ["all", "clean"]}),
        json!({"type": "integer"}),
    ] {
        let (code, _, err) = check("make", json!([p()]), json!({ "p": param }));
        assert_eq!((code, err.as_str()), (0, ""), "{param}");
    }
    // Arguments that act as options without a leading '-': said, with the way out.
    for (program, want) in [
        (
            "gcc",
            "tools[0].args[0]: p is passed alone to gcc, which reads @FILE as more options",
        ),
        ("less", "which reads +CMD as a command run at start"),
        ("scp", "which reads HOST:PATH as a remote location"),
    ] {
        let (code, _, err) = check(program, json!([p()]), json!({"p": {"type": "string"}}));
        assert_eq!(code, 0, "{err}");
        assert!(err.contains(want), "{program}: missing {want:?} in\n{err}");
        let path = json!({"p": {"type": "path", "root": "r"}});
        let (code, _, err) = check(program, json!([p()]), path);
        assert_eq!((code, err.as_str()), (0, ""), "{program}");
    }
    let (code, _, err) = check(
        "python3",
        json!(["/x/script.py", "-c", p()]),
        json!({"p": {"type": "string"}}),
    );
    assert_eq!((code, err.as_str()), (0, ""));
}

#[test]
fn log_globs_stay_inside_the_working_directory() {
    let tool = |logs: Value, cwd: Value| {
        json!({"name": "t", "description": "d", "program": "true", "cwd": cwd,
               "params": {"w": {"type": "path", "root": "r", "kind": "dir"}},
               "args": [{"param": "w"}], "logs": logs})
    };
    let w = json!({"param": "w"});
    let (code, _, err) = check_tools(json!([tool(
        json!(["/var/log/*", "../up/*", "a//b", "./x", "", 7, "ok/*.log"]),
        w.clone()
    )]));
    assert_eq!(code, 1, "{err}");
    for line in [
        "tools[0].logs[0]: must be relative to the call's working directory, not absolute",
        "tools[0].logs[1]: must not contain `..`: logs stay inside the working directory",
        "tools[0].logs[2]: must not contain empty or `.` components",
        "tools[0].logs[3]: must not contain empty or `.` components",
        "tools[0].logs[4]: must be 1-1024 characters without NUL",
        "tools[0].logs[5]: must be a string (a glob)",
    ] {
        assert!(err.contains(line), "{line}\n{err}");
    }
    assert!(!err.contains("logs[6]"), "{err}");
    // Logs need a working directory; the array must not be empty; built-in names are taken.
    let mut no_cwd = tool(json!(["x.log"]), w.clone());
    no_cwd.as_object_mut().unwrap().remove("cwd");
    let (code, _, err) = check_tools(json!([
        no_cwd,
        {"name": "output", "description": "d", "program": "true"},
        {"name": "log", "description": "d", "program": "true", "logs": []}
    ]));
    assert_eq!(code, 1, "{err}");
    for line in [
        "tools[0].logs: logs are found in the call's working directory: the tool needs a `cwd`",
        "tools[1].name: output is the name of a built-in tool",
        "tools[2].logs: must be an array of 1-16 globs",
    ] {
        assert!(err.contains(line), "{line}\n{err}");
    }
    // A good one is shown by check.
    let (code, out, err) = check_tools(json!([tool(json!([".hol/logs/*"]), w)]));
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("logs: .hol/logs/*"), "{out}");
}

/// A member tool `name` reading `param` (declared as `decl`), with a verdict unless `verdict`
/// is null.
fn member(name: &str, params: Value, verdict: Value) -> Value {
    let args: Vec<Value> = params
        .as_object()
        .unwrap()
        .keys()
        .map(|k| json!({ "param": k }))
        .collect();
    let mut t = json!({"name": name, "description": "d", "program": "echo", "args": args,
                       "params": params, "verdict": verdict});
    if t["verdict"].is_null() {
        t.as_object_mut().unwrap().remove("verdict");
    }
    t
}

#[test]
fn verdict_patterns_must_compile_and_check_shows_the_rules() {
    let verdict = json!({"rules": [{"pattern": "SZS status (\\w+)"},
                                   {"pattern": "^SPASS beiseite: Proof found", "is": "Theorem"}],
                         "decisive": ["Theorem"]});
    let (code, out, err) = check_tools(json!([member("e", json!({}), verdict)]));
    assert_eq!(code, 0, "{err}");
    for line in [
        "verdict rules (first that matches a line; last line wins):",
        "/SZS status (\\w+)/ => its first group",
        "/^SPASS beiseite: Proof found/ => Theorem",
        "decisive: Theorem",
    ] {
        assert!(out.contains(line), "{line}\n{out}");
    }
    let bad = json!({"rules": [{"pattern": "(unclosed"}, {"pattern": "x", "is": ""}],
                     "decisive": []});
    let (code, _, err) = check_tools(json!([member("e", json!({}), bad)]));
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("tools[0].verdict.rules[0].pattern: is not a valid regular expression"),
        "{err}"
    );
    assert!(
        err.contains("tools[0].verdict.rules[1].is: must not be empty"),
        "{err}"
    );
}

#[test]
fn portfolios_whose_members_cannot_serve_them_are_refused() {
    let v = json!({"rules": [{"pattern": "^(sat|unsat)$"}], "decisive": ["sat", "unsat"]});
    let s = json!({"type": "string", "required": true});
    let portfolio = |members: Value| {
        json!({"name": "race", "description": "d", "portfolio": members,
               "params": {"problem": {"type": "string", "required": true}}})
    };
    let (code, out, err) = check_tools(json!([
        member("a", json!({ "problem": s }), v.clone()),
        member("b", json!({ "problem": s }), v.clone()),
        portfolio(json!(["a", "b"])),
    ]));
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("portfolio: a, b"), "{out}");
    let cases = [
        (member("a", json!({ "problem": s }), v.clone()), json!(["a", "nope"]),
         "tools[2].portfolio[1]: names no tool of this manifest: nope"),
        (member("a", json!({ "problem": s }), v.clone()), json!(["a", "race"]),
         "tools[2].portfolio[1]: race is itself a portfolio: members must run programs"),
        (member("a", json!({ "problem": s }), Value::Null), json!(["a", "b"]),
         "tools[2].portfolio[0]: a has no verdict"),
        (member("a", json!({"problem": s, "extra": s}), v.clone()), json!(["a", "b"]),
         "tools[2].portfolio[0]: a requires parameter extra, which the portfolio lacks"),
        (member("a", json!({"problem": {"type": "integer", "required": true}}), v.clone()),
         json!(["a", "b"]),
         "tools[2].portfolio[0]: a's parameter problem is an integer, the portfolio's is a string"),
        (member("a", json!({"problem": {"type": "path", "root": "r", "required": true}}), v.clone()),
         json!(["a", "b"]),
         "tools[2].portfolio[0]: a's parameter problem is a path, the portfolio's is a string"),
        (member("a", json!({"other": {"type": "string"}}), v.clone()), json!(["a", "b"]),
         "tools[2].portfolio[0]: a has no parameter problem, which the portfolio passes on"),
    ];
    for (a, members, line) in cases {
        let (code, _, err) = check_tools(json!([
            a,
            member("b", json!({ "problem": s }), v.clone()),
            portfolio(members)
        ]));
        assert_eq!(code, 1, "{line}\n{err}");
        assert!(err.contains(line), "{line}\n{err}");
    }
    // A path in another root than the portfolio's.
    let dir = temp_dir("check-roots");
    for r in ["r", "q"] {
        std::fs::create_dir_all(dir.join(r)).unwrap();
    }
    let path_in = |root: &str| json!({"type": "path", "root": root, "required": true});
    let m = json!({"name": "c", "roots": {"r": "r", "q": "q"}, "tools": [
        member("a", json!({"f": path_in("q")}), v.clone()),
        member("b", json!({"f": path_in("r")}), v.clone()),
        {"name": "race", "description": "d", "portfolio": ["a", "b"], "params": {"f": path_in("r")}}
    ]});
    let (code, _, err) = stdmcp_check(&dir, &m);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains(
            "tools[2].portfolio[0]: a's parameter f is a path in root q, the portfolio's in root r"
        ),
        "{err}"
    );
    // A portfolio runs no program of its own.
    let (code, _, err) = check_tools(json!([
        member("a", json!({ "problem": s }), v.clone()),
        member("b", json!({ "problem": s }), v),
        {"name": "race", "description": "d", "portfolio": ["a", "b"], "program": "echo",
         "params": {"problem": s}}
    ]));
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("tools[2].program: a portfolio runs its members"),
        "{err}"
    );
}
