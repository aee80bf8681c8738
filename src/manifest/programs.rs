//! What `stdmcp check` knows about programs that run code or other programs: which of their
//! options take code, a value, or choose code to load, and what their operands are. Used by
//! [`super::lint`] to find where a parameter's value stops being data. A program is known
//! by its base name as written or by that of its canonical target (`/usr/bin/awk` →
//! `mawk`).

use std::path::{Path, PathBuf};

/// What a program's operands (arguments that are not options) are.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Operands {
    /// The first is a script file and the rest its data (interpreters, `git` subcommands).
    Script,
    /// The first is program text unless a code or file option gave it (`awk`, `sed`).
    Text,
    /// Every operand is shell code (`watch` joins them and runs them with `sh -c`).
    Code,
    /// The program to run, after `skip` operands of the runner's own (`timeout 5`,
    /// `flock LOCK`, `su USER`).
    Program {
        /// Operands before the program.
        skip: usize,
    },
    /// Targets and `VAR=value` assignments, which can redefine any command (`make`).
    Assignments,
}

/// One kind of program.
#[derive(Debug)]
pub(super) struct Program {
    /// Base names (without directory and version: `python`, not `python3.11`).
    pub names: &'static [&'static str],
    /// Options whose value is code (`-c`, `--eval`); a short one also ends a cluster
    /// (`perl -ne`, `python3 -Sc`).
    pub code: &'static [&'static str],
    /// Shell style: `-c` is a switch anywhere in a cluster (`sh -ec`) and the code is the
    /// first operand after the options (`bash -c -- CODE`).
    pub shell: bool,
    /// Options that take the next argument as their value.
    pub values: &'static [&'static str],
    /// Options whose value is a file of program text (`awk -f`, `sed -f`).
    pub files: &'static [&'static str],
    /// Options whose value chooses code to load or run (`perl -M`, `python -m`, `git -c`).
    pub loads: &'static [&'static str],
    /// A `loads` option ends the options: the rest is data (`python -m mod args`).
    pub load_ends: bool,
    /// With no operand and no code option, the program reads its script from stdin.
    pub reads_stdin: bool,
    /// What the operands are.
    pub operands: Operands,
}

const INTERPRETER: Program = Program {
    names: &[],
    code: &[],
    shell: false,
    values: &[],
    files: &[],
    loads: &[],
    load_ends: false,
    reads_stdin: true,
    operands: Operands::Script,
};

const SHELL: Program = Program {
    code: &["-c"],
    shell: true,
    values: &["-o", "+o", "-O", "+O", "--rcfile", "--init-file"],
    ..INTERPRETER
};

const RUNNER: Program = Program {
    reads_stdin: false,
    operands: Operands::Program { skip: 0 },
    ..INTERPRETER
};

const AWK_OR_SED: Program = Program {
    files: &["-f", "--file"],
    reads_stdin: false,
    operands: Operands::Text,
    ..INTERPRETER
};

const KNOWN: &[Program] = &[
    Program {
        names: &[
            "sh", "bash", "rbash", "dash", "ash", "zsh", "ksh", "mksh", "pdksh", "yash", "posh",
        ],
        ..SHELL
    },
    Program {
        names: &["csh", "tcsh"],
        code: &["-c"],
        ..INTERPRETER
    },
    Program {
        names: &["fish"],
        code: &["-c", "--command", "-C", "--init-command"],
        ..INTERPRETER
    },
    Program {
        names: &["pwsh", "powershell"],
        code: &["-c", "-Command", "-command"],
        ..INTERPRETER
    },
    Program {
        names: &["python", "pypy"],
        code: &["-c"],
        values: &["-W", "-X", "-Q"],
        loads: &["-m"],
        load_ends: true,
        ..INTERPRETER
    },
    Program {
        names: &["node", "nodejs", "bun"],
        code: &["-e", "--eval", "-p", "--print"],
        values: &["-C", "--conditions", "--input-type", "--title"],
        loads: &[
            "-r",
            "--require",
            "--import",
            "--loader",
            "--experimental-loader",
        ],
        ..INTERPRETER
    },
    Program {
        names: &["deno"],
        code: &["eval"],
        ..INTERPRETER
    },
    Program {
        names: &["perl"],
        code: &["-e", "-E"],
        loads: &["-M", "-m"],
        ..INTERPRETER
    },
    Program {
        names: &["ruby", "jruby"],
        code: &["-e"],
        loads: &["-r", "--require"],
        ..INTERPRETER
    },
    Program {
        names: &["php"],
        code: &["-r", "-B", "-R", "-F", "-E"],
        values: &["-c", "-z"],
        loads: &["-d"],
        ..INTERPRETER
    },
    Program {
        names: &["lua", "luajit"],
        code: &["-e"],
        loads: &["-l"],
        ..INTERPRETER
    },
    Program {
        names: &["julia"],
        code: &["-e", "--eval", "-E", "--print"],
        loads: &["-L", "--load"],
        ..INTERPRETER
    },
    Program {
        names: &["Rscript", "R"],
        code: &["-e"],
        ..INTERPRETER
    },
    Program {
        names: &["osascript"],
        code: &["-e"],
        values: &["-l", "-s"],
        ..INTERPRETER
    },
    Program {
        names: &["tclsh", "wish", "expect"],
        code: &["-c"],
        ..INTERPRETER
    },
    Program {
        names: &["swipl"],
        code: &["-g", "-t"],
        values: &["-f", "-F", "-x", "-p"],
        loads: &["-s", "-l"],
        ..INTERPRETER
    },
    Program {
        names: &["poly"],
        code: &["--eval"],
        loads: &["--use"],
        ..INTERPRETER
    },
    Program {
        names: &["awk", "gawk", "mawk", "nawk"],
        code: &["-e", "--source"],
        values: &["-F", "-v", "--assign", "--field-separator", "-W"],
        ..AWK_OR_SED
    },
    Program {
        names: &["sed", "gsed"],
        code: &["-e", "--expression"],
        values: &["-l", "--line-length"],
        ..AWK_OR_SED
    },
    Program {
        names: &["watch"],
        values: &["-n", "--interval", "-q", "--equexit"],
        reads_stdin: false,
        operands: Operands::Code,
        ..INTERPRETER
    },
    Program {
        names: &["script"],
        code: &["-c", "--command"],
        values: &[
            "-E",
            "--echo",
            "-I",
            "-O",
            "-B",
            "-T",
            "--log-in",
            "--log-out",
        ],
        reads_stdin: false,
        ..INTERPRETER
    },
    Program {
        names: &["git"],
        values: &["-C", "--git-dir", "--work-tree", "--namespace"],
        loads: &["-c", "--config-env", "--exec-path"],
        reads_stdin: false,
        ..INTERPRETER
    },
    Program {
        names: &["make", "gmake", "bmake"],
        values: &["-f", "--file", "-C", "--directory", "-I", "-o", "-W", "-l"],
        reads_stdin: false,
        operands: Operands::Assignments,
        ..INTERPRETER
    },
    Program {
        names: &["env"],
        code: &["-S", "--split-string"],
        values: &["-u", "--unset", "-C", "--chdir"],
        ..RUNNER
    },
    Program {
        names: &["xargs", "parallel"],
        values: &[
            "-I",
            "-L",
            "-n",
            "-P",
            "-s",
            "-d",
            "-E",
            "-a",
            "--arg-file",
            "--delimiter",
            "--max-args",
            "--max-procs",
            "--max-lines",
            "--replace",
            "--eof",
            "-j",
            "--jobs",
        ],
        ..RUNNER
    },
    Program {
        names: &["timeout"],
        values: &["-s", "--signal", "-k", "--kill-after"],
        operands: Operands::Program { skip: 1 },
        ..RUNNER
    },
    Program {
        names: &["flock"],
        code: &["-c", "--command"],
        values: &["-w", "--wait", "--timeout", "-E", "--conflict-exit-code"],
        operands: Operands::Program { skip: 1 },
        ..RUNNER
    },
    Program {
        names: &["su", "runuser"],
        code: &["-c", "--command", "--session-command"],
        values: &[
            "-u",
            "--user",
            "-g",
            "--group",
            "-G",
            "--supp-group",
            "-s",
            "--shell",
            "-w",
        ],
        operands: Operands::Program { skip: 1 },
        ..RUNNER
    },
    Program {
        names: &["sudo", "doas", "pkexec"],
        values: &[
            "-u", "--user", "-g", "--group", "-C", "-D", "--chdir", "-h", "--host", "-p",
            "--prompt", "-r", "-t", "-U", "-T",
        ],
        ..RUNNER
    },
    Program {
        names: &["chrt", "taskset", "chroot"],
        operands: Operands::Program { skip: 1 },
        ..RUNNER
    },
    Program {
        names: &["nice", "ionice", "stdbuf", "time", "strace", "ltrace"],
        values: &[
            "-n",
            "--adjustment",
            "-c",
            "--class",
            "--classdata",
            "-i",
            "-o",
            "-e",
            "--input",
            "--output",
            "--error",
            "-f",
            "--format",
            "-p",
            "-s",
            "-u",
            "-E",
            "-P",
        ],
        ..RUNNER
    },
    Program {
        names: &[
            "nohup",
            "setsid",
            "busybox",
            "unshare",
            "nsenter",
            "firejail",
            "bwrap",
            "systemd-run",
        ],
        ..RUNNER
    },
];

/// A program's name without directory and version (`/usr/bin/python3.11` → `python`).
pub(super) fn base_name(program: &str) -> &str {
    let name = Path::new(program)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or(program);
    name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.' || c == '-')
}

/// Where `program` really is: a path with a `/` resolved, a bare name looked up on `PATH`.
fn canonical(program: &str) -> Option<PathBuf> {
    if program.contains('/') {
        return std::fs::canonicalize(program).ok();
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).find_map(|dir| std::fs::canonicalize(dir.join(program)).ok())
}

fn by_name(name: &str) -> Option<&'static Program> {
    KNOWN.iter().find(|p| p.names.contains(&name))
}

/// What stdmcp knows about `program`, by the name it is written with or by its real one.
pub(super) fn describe(program: &str) -> Option<&'static Program> {
    by_name(base_name(program)).or_else(|| {
        let real = canonical(program)?;
        by_name(base_name(real.to_str()?))
    })
}

/// What an option (a literal, or a parameter's flag) does, for a known program.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Opt {
    /// Its value (the next argument) is code.
    Code(String),
    /// Shell `-c`: the first operand is code.
    ShellCode,
    /// It takes the next argument as a value; `true` when that value is a program file.
    Value(bool),
    /// Its value (the next argument) chooses code to load.
    Load(String),
    /// Code or a program file given in the same argument (`-eprint`, `--file=x`).
    Given,
    /// A loads option with its value attached (`-MFoo`, `-mhttp.server`).
    Loaded,
    /// Some other option.
    Other,
    /// Not an option.
    Operand,
}

/// Reads `s` as an option of `k`.
pub(super) fn option(k: &Program, s: &str) -> Opt {
    if k.code.contains(&s) {
        return if k.shell {
            Opt::ShellCode
        } else {
            Opt::Code(s.to_owned())
        };
    }
    if k.values.contains(&s) || k.files.contains(&s) {
        return Opt::Value(k.files.contains(&s));
    }
    if k.loads.contains(&s) {
        return Opt::Load(s.to_owned());
    }
    if !(s.starts_with('-') || k.shell && s.starts_with('+')) || s.len() < 2 {
        return Opt::Operand;
    }
    if let Some((name, _)) = s.split_once('=') {
        return match option(k, name) {
            Opt::Code(_) | Opt::ShellCode | Opt::Value(true) => Opt::Given,
            Opt::Load(_) => Opt::Loaded,
            _ => Opt::Other,
        };
    }
    let letters = &s[1..];
    if s.starts_with("--") || !letters.chars().all(|c| c.is_ascii_alphanumeric()) {
        return Opt::Other;
    }
    if letters.len() == 1 {
        return if k.shell && letters == "c" {
            Opt::ShellCode
        } else {
            Opt::Other
        };
    }
    // A cluster of short options: `-ec`, `-Sc`, `-ne`, `-lc`, `-Wignore`, `-MFoo`.
    let mut shell_code = false;
    for (j, c) in letters.char_indices() {
        let one = format!("-{c}");
        let last = j + 1 == letters.len();
        if k.shell && c == 'c' {
            shell_code = true;
            continue;
        }
        let found = option(k, &one);
        match found {
            Opt::Code(_) | Opt::Value(_) | Opt::Load(_) if last => return found,
            // `node -pe CODE`: both take code, the last one the next argument.
            Opt::Code(_) => {
                let tail = format!("-{}", &letters[letters.len() - 1..]);
                return match option(k, &tail) {
                    code @ Opt::Code(_) => code,
                    _ => Opt::Given,
                };
            }
            Opt::Value(true) => return Opt::Given,
            Opt::Load(_) => return Opt::Loaded,
            Opt::Value(false) => return Opt::Other,
            _ => {}
        }
    }
    if shell_code {
        Opt::ShellCode
    } else {
        Opt::Other
    }
}

/// Programs that read some arguments not starting with `-` as options or commands anyway:
/// the base names, and what such an argument does.
const OPERAND_OPTIONS: &[(&[&str], &str)] = &[
    (
        &[
            "gcc", "g++", "cc", "c++", "clang", "clang++", "cpp", "ld", "gfortran", "javac",
            "java", "jar", "rustc", "kotlinc", "scalac",
        ],
        "@FILE as more options read from FILE",
    ),
    (
        &["vim", "vi", "nvim", "view", "ex", "less", "more"],
        "+CMD as a command run at start (which can run a shell)",
    ),
    (
        &["rsync", "scp", "sftp"],
        "HOST:PATH as a remote location reached over ssh",
    ),
];

/// What an argument of `program` that does not start with `-` can still do, if anything.
pub(super) fn operand_options(program: &str) -> Option<&'static str> {
    let name = base_name(program);
    OPERAND_OPTIONS
        .iter()
        .find(|(names, _)| names.contains(&name))
        .map(|(_, what)| *what)
}
