use super::*;
use serde_json::json;

fn parts(v: serde_json::Value) -> Vec<ArgPart> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|a| match a {
            serde_json::Value::String(s) => ArgPart::Literal(s.clone()),
            o => ArgPart::Param {
                name: o["param"].as_str().unwrap().to_owned(),
                flag: o["flag"].as_str().map(str::to_owned),
                joined: o["joined"].as_bool().unwrap_or(false),
            },
        })
        .collect()
}

fn code(program: &str, args: serde_json::Value) -> Vec<String> {
    code_params(Path::new(program), &parts(args))
}

#[test]
fn finds_values_that_become_code() {
    assert_eq!(
        super::super::programs::base_name("/usr/bin/python3.11"),
        "python"
    );
    assert_eq!(code("/bin/sh", json!(["-c", {"param": "s"}])), ["s"]);
    assert_eq!(
        code("/usr/bin/python3", json!([{"param": "s", "flag": "-c"}])),
        ["s"]
    );
    assert_eq!(
        code(
            "perl",
            json!([{"param": "s", "flag": "-e", "joined": true}])
        ),
        ["s"]
    );
    assert_eq!(
        code(
            "/usr/bin/env",
            json!(["-i", "A=1", "timeout", "5", "bash", "-c", {"param": "s"}])
        ),
        ["s"]
    );
    // Data, not code: a positional parameter of the script, a script file, a plain tool.
    assert!(code("sh", json!(["-c", "echo \"$1\"", "sh", {"param": "s"}])).is_empty());
    assert!(code("python3", json!(["script.py", {"param": "s"}])).is_empty());
    assert!(code("grep", json!(["-e", {"param": "s"}])).is_empty());
    let r = risks(
        Path::new("find"),
        &parts(json!([".", "-exec", {"param": "p"}, ";"])),
    );
    assert!(matches!(&r[..], [Risk::Program { arg: 2, runner, .. }] if runner == "find"));
    let r = risks(
        Path::new("xargs"),
        &parts(json!(["-n", "1", {"param": "p"}])),
    );
    assert!(matches!(&r[..], [Risk::Program { arg: 2, .. }]));
}

fn by(program: &str, args: serde_json::Value) -> Vec<String> {
    risks(Path::new(program), &parts(args))
        .into_iter()
        .map(|r| match r {
            Risk::Code { param, by, .. } => format!("code {param} {by}"),
            Risk::Program { param, runner, .. } => format!("program {param} {runner}"),
            Risk::Loads { param, by, .. } => format!("loads {param} {by}"),
        })
        .collect()
}

#[test]
fn finds_code_in_every_form_an_interpreter_takes_it() {
    let p = || json!({"param": "p"});
    for (program, args, want) in [
        // Clusters of short options that end in (or, for a shell, hold) the code letter.
        ("sh", json!(["-ec", p()]), "code p sh -c"),
        ("bash", json!(["-lc", p()]), "code p bash -c"),
        ("python3", json!(["-Sc", p()]), "code p python3 -c"),
        ("perl", json!(["-ne", p()]), "code p perl -e"),
        ("node", json!(["-pe", p()]), "code p node -e"),
        ("sh", json!([{"param": "p", "flag": "-ec"}]), "code p sh -c"),
        // The shell's code is its first operand, after options and `--`.
        ("bash", json!(["-c", "--", p()]), "code p bash -c"),
        ("sh", json!(["-c", "-e", p()]), "code p sh -c"),
        // Program text as the first operand.
        ("awk", json!([p()]), "code p awk (its program text)"),
        (
            "sed",
            json!(["-n", p(), "file"]),
            "code p sed (its program text)",
        ),
        (
            "watch",
            json!(["-n", "5", "ls", p()]),
            "code p watch (run by sh -c)",
        ),
        // Runner options that take a value; a later literal naming an interpreter.
        (
            "timeout",
            json!(["-s", "KILL", "5", "sh", "-c", p()]),
            "code p sh -c",
        ),
        ("env", json!(["-u", "FOO", "sh", "-c", p()]), "code p sh -c"),
        (
            "env",
            json!(["-C", "/tmp", "sh", "-c", p()]),
            "code p sh -c",
        ),
        (
            "xargs",
            json!(["-I", "{}", "sh", "-c", p()]),
            "code p sh -c",
        ),
        (
            "flock",
            json!(["-w", "5", "LOCK", "sh", "-c", p()]),
            "code p sh -c",
        ),
        (
            "env",
            json!(["-i", "A=1", "timeout", "5", "bash", "-c", p()]),
            "code p bash -c",
        ),
        ("busybox", json!(["sh", "-c", p()]), "code p sh -c"),
        // Programs that were missing.
        ("flock", json!(["LOCK", "-c", p()]), "code p flock -c"),
        ("script", json!(["-q", "-c", p()]), "code p script -c"),
        ("su", json!(["-c", p()]), "code p su -c"),
        (
            "runuser",
            json!(["-u", "nobody", "-c", p()]),
            "code p runuser -c",
        ),
        ("rbash", json!(["-c", p()]), "code p rbash -c"),
        ("mawk", json!([p()]), "code p mawk (its program text)"),
        ("ruby", json!(["-e", p()]), "code p ruby -e"),
        ("php", json!(["-r", p()]), "code p php -r"),
        ("lua5.4", json!(["-e", p()]), "code p lua5.4 -e"),
        ("env", json!(["-S", p()]), "code p env -S"),
    ] {
        assert_eq!(by(program, args.clone()), [want], "{program} {args}");
    }
}

#[test]
fn finds_code_chosen_through_an_option_or_a_program_to_run() {
    let p = || json!({"param": "p"});
    for (program, args, want) in [
        // Code chosen through an option's value.
        (
            "perl",
            json!([{"param": "p", "flag": "-M", "joined": true}]),
            "loads p perl -M",
        ),
        ("python3", json!(["-m", p()]), "loads p python3 -m"),
        ("node", json!(["-r", p()]), "loads p node -r"),
        ("git", json!(["-c", p(), "log"]), "loads p git -c"),
        (
            "make",
            json!([p()]),
            "loads p make (as a VAR=value operand)",
        ),
        ("find", json!([".", "-exec", p(), ";"]), "program p find"),
        ("xargs", json!(["-n", "1", p()]), "program p xargs"),
    ] {
        assert_eq!(by(program, args.clone()), [want], "{program} {args}");
    }
    // Only code parameters are refused metacharacters; loads are warned about.
    assert_eq!(code("env", json!(["-S", p()])), ["p"]);
    assert!(code("python3", json!(["-m", p()])).is_empty());
}

#[test]
fn a_program_is_known_by_its_canonical_target_too() {
    let p = || json!({"param": "p"});
    // The canonical target counts too (/bin/sh is dash on Debian; any name would do).
    let dir = std::env::temp_dir().join(format!("stdmcp-lint-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("mawk"), "").unwrap();
    std::os::unix::fs::symlink(dir.join("mawk"), dir.join("myawk")).unwrap();
    let alias = dir.join("myawk").display().to_string();
    assert_eq!(
        by(&alias, json!([p()])),
        ["code p myawk (its program text)"]
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn what_follows_the_script_or_the_code_is_data() {
    let p = || json!({"param": "p"});
    for (program, args) in [
        ("python3", json!(["/x/script.py", "-c", p()])),
        ("python3", json!(["-m", "pytest", "-c", p()])),
        ("perl", json!(["-e", "print @ARGV", p()])),
        ("bash", json!(["-c", "echo \"$1\"", "bash", p()])),
        ("awk", json!(["-f", "prog.awk", p()])),
        ("awk", json!(["-F", ",", "{print $1}", p()])),
        ("sed", json!(["-e", "s/a/b/", p()])),
        ("git", json!(["log", "-c", p()])),
        ("env", json!(["mytool", p()])),
        ("timeout", json!(["5", "mytool", "-c", p()])),
    ] {
        assert!(by(program, args.clone()).is_empty(), "{program} {args}");
    }
}

#[test]
fn knows_when_stdin_is_a_script_and_what_looks_like_a_path() {
    let stdin = |p: &str, a| stdin_is_code(Path::new(p), &parts(a));
    assert!(stdin("python3", json!([])));
    assert!(stdin("bash", json!(["-s"])));
    assert!(!stdin("python3", json!(["script.py"])));
    assert!(!stdin("sh", json!(["-c", "cat"])));
    assert!(!stdin("cat", json!([])));
    for n in ["path", "paths", "file", "input_file", "out_dir", "Files"] {
        assert!(looks_like_path(n), "{n}");
    }
    for n in ["profile", "pattern", "filter", "directory_count"] {
        assert!(!looks_like_path(n), "{n}");
    }
}
