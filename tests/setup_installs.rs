//! `scripts/setup` installs every external program that the tests, the
//! benchmarks and the documents' examples run.
//!
//! A green run on a machine that already has a tool proves nothing about a
//! fresh one, so this test reads the sources instead: it finds every
//! program that `tests/`, `scripts/` and the shell examples in `README.md`
//! and `docs/` start, and checks that setup's `PROGRAMS` table names each
//! one with a Debian package. It also checks that every listed program is
//! on this machine's PATH (setup ran first), so a wrong package name fails
//! here rather than in a test that needs the tool.
//!
//! The call shapes it recognises are the ones the tests use on purpose:
//! `run("prog", ..)`, `ns.exec("prog", ..)`, `ns.exec_bounded(N, "prog",
//! ..)`, `ns.command("prog")`, `Command::new("prog")`, `require("prog")`,
//! `"netns", "exec", NS, "prog"`, the program after `timeout`/`nice` and
//! their options, and in Python `subprocess.*(["prog", ..])`, `run("prog",
//! ..)` and `shutil.which("prog")`. A new way of starting a program should
//! use one of them (or be added here).

use regex::Regex;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

mod common;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// Programs that come with what setup requires before it runs (the Rust
/// toolchain) or are the project's own builds.
fn provided(program: &str) -> bool {
    matches!(program, "cargo" | "rustc") || program.starts_with("dpstack-")
}

/// Shell words that are builtins, not programs.
fn builtin(word: &str) -> bool {
    matches!(
        word,
        "echo" | "cd" | "export" | "set" | "exec" | "true" | "false"
    )
}

/// A plausible program name: no path, no option, no placeholder.
fn program_name(word: &str) -> bool {
    let name = Regex::new(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$").expect("regex");
    name.is_match(word) && !word.chars().all(|c| c.is_ascii_digit())
}

/// The (program, package) lines of scripts/setup's `PROGRAMS="..."`.
fn setup_programs() -> BTreeMap<String, String> {
    let setup = std::fs::read_to_string(Path::new(ROOT).join("scripts/setup")).expect("setup");
    let block = setup
        .split("PROGRAMS=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("scripts/setup has a PROGRAMS=\"..\" table");
    block
        .lines()
        .map(|line| {
            line.split('#')
                .next()
                .unwrap_or("")
                .split_whitespace()
                .collect::<Vec<_>>()
        })
        .filter(|words| !words.is_empty())
        .map(|words| match words[..] {
            [program, package] => (program.to_owned(), package.to_owned()),
            _ => panic!("setup's PROGRAMS line {words:?} is not `program package`"),
        })
        .collect()
}

/// Programs that Rust source `text` starts, by the shapes in the module doc.
fn programs_in_rust(text: &str) -> BTreeSet<String> {
    programs_matching(
        r#"(?:\bexec|\brun|\bcommand|\bexec_bounded|\bcommand_bounded|\brequire|Command::new)\(\s*(?:\d+\s*,\s*)?"([^"]+)""#,
        text,
    )
}

/// Programs that Python source `text` starts.
fn programs_in_python(text: &str) -> BTreeSet<String> {
    programs_matching(
        r#"(?:subprocess\.(?:run|Popen|check_output|check_call|call)\(\s*\[\s*|\brun\(\s*|shutil\.which\(\s*)"([^"]+)""#,
        text,
    )
}

/// The first captures of `pattern` in `text`, and the [`wrapped`] programs.
fn programs_matching(pattern: &str, text: &str) -> BTreeSet<String> {
    let direct = Regex::new(pattern).expect("regex");
    let mut found: BTreeSet<String> = direct
        .captures_iter(text)
        .map(|c| c[1].to_owned())
        .collect();
    found.extend(wrapped(text));
    found
}

/// Programs started through another one: `ip netns exec NS prog`, and the
/// first word after `timeout`/`nice` and their options.
fn wrapped(text: &str) -> BTreeSet<String> {
    let netns = Regex::new(r#""netns",\s*"exec",\s*[^,\]]+,\s*"([^"]+)""#).expect("regex");
    let wrapper = Regex::new(r#""(?:timeout|nice)"((?:\s*,\s*&?\[?\s*"[^"]*")+)"#).expect("regex");
    let literal = Regex::new(r#""([^"]*)""#).expect("regex");
    let mut found: BTreeSet<String> = netns.captures_iter(text).map(|c| c[1].to_owned()).collect();
    for args in wrapper.captures_iter(text) {
        let next = literal
            .captures_iter(&args[1])
            .map(|c| c[1].to_owned())
            .find(|w| !w.starts_with('-') && !w.chars().all(|c| c.is_ascii_digit()));
        found.extend(next);
    }
    found
}

/// Programs that the shell examples (```sh blocks) of a Markdown document
/// run: the first word of each command, after `;`, `|` and `&&` too.
fn programs_in_markdown(text: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut in_shell = false;
    let mut continued = false;
    for line in text.lines() {
        if let Some(fence) = line.strip_prefix("```") {
            in_shell = !in_shell && matches!(fence.trim(), "sh" | "bash" | "shell" | "console");
            continued = false;
            continue;
        }
        if !in_shell {
            continue;
        }
        let code = line.split('#').next().unwrap_or("");
        if !continued {
            for command in code.split([';', '|', '&']) {
                if let Some(word) = command.split_whitespace().next() {
                    if !word.starts_with('$') && !word.contains('=') && !builtin(word) {
                        found.insert(word.to_owned());
                    }
                }
            }
        }
        continued = code.trim_end().ends_with('\\');
    }
    found
}

/// Every file under `dir` (recursively) whose name passes `keep`.
fn files(dir: &Path, keep: &dyn Fn(&Path) -> bool) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir)
        .expect("read_dir")
        .map(|e| e.expect("entry"))
    {
        let path = entry.path();
        if path.is_dir() {
            out.extend(files(&path, keep));
        } else if keep(&path) {
            out.push(path);
        }
    }
    out
}

/// Every external program the tests, scripts and documents start, with
/// one file that starts it.
fn programs_used() -> BTreeMap<String, PathBuf> {
    let root = Path::new(ROOT);
    let mut used = BTreeMap::new();
    let mut add = |programs: BTreeSet<String>, file: &Path| {
        for program in programs {
            if program_name(&program) && !provided(&program) {
                used.entry(program).or_insert_with(|| file.to_owned());
            }
        }
    };
    // This file's own examples are not programs anybody runs.
    let this_file = root.join(file!());
    let rust = |p: &Path| p.extension().is_some_and(|e| e == "rs") && p != this_file;
    for file in files(&root.join("tests"), &rust) {
        let text = std::fs::read_to_string(&file).expect("read");
        add(programs_in_rust(&text), &file);
    }
    for file in files(&root.join("scripts"), &|_| true) {
        let text = std::fs::read_to_string(&file).expect("read");
        if text.starts_with("#!/usr/bin/env python3") {
            add(programs_in_python(&text), &file);
        }
    }
    let mut documents = vec![root.join("README.md")];
    documents.extend(files(&root.join("docs"), &|p| {
        p.extension().is_some_and(|e| e == "md")
    }));
    for file in documents {
        let text = std::fs::read_to_string(&file).expect("read");
        add(programs_in_markdown(&text), &file);
    }
    used
}

#[test]
fn setup_installs_every_program_the_suite_benchmarks_and_examples_run() {
    let listed = setup_programs();
    let used = programs_used();
    let unlisted: Vec<String> = used
        .iter()
        .filter(|(program, _)| !listed.contains_key(*program))
        .map(|(program, file)| format!("{program} (run by {})", file.display()))
        .collect();
    assert!(
        unlisted.is_empty(),
        "scripts/setup does not install these programs: add each to its PROGRAMS \
         table as a line `program debian-package`:\n  {}",
        unlisted.join("\n  ")
    );
}

#[test]
fn the_scan_finds_the_programs_known_to_be_used() {
    // If the patterns stopped matching, the test above would pass on an
    // empty list: these are started by today's tests and benchmarks.
    let used = programs_used();
    for program in [
        "ip",
        "ping",
        "socat",
        "iperf3",
        "python3",
        "gst-launch-1.0",
        "sysctl",
        "dpdk-testpmd",
        "valgrind",
        "nice",
    ] {
        assert!(
            used.contains_key(program),
            "the scan no longer finds {program}; found {:?}",
            used.keys().collect::<Vec<_>>()
        );
    }
}

#[test]
fn a_new_tool_in_any_call_shape_is_found() {
    let rust = r#"
        let a = ns.exec("tool-a", &["-x"]);
        let b = ns.exec_bounded(30, "tool-b", &[]);
        let c = ns.command("tool-c").spawn();
        let d = Command::new("ip").args(["netns", "exec", &ns.name, "tool-d", "-q"]);
        let e = ns.exec("timeout", &["-k", "5", "60", "tool-e"]);
        let f = run("tool-f", &["x"]);
        let g = std::process::Command::new("tool-g");
    "#;
    let found = programs_in_rust(rust);
    for tool in [
        "tool-a", "tool-b", "tool-c", "tool-d", "tool-e", "tool-f", "tool-g",
    ] {
        assert!(found.contains(tool), "{tool} not found in {found:?}");
    }
    let python = r#"
        subprocess.run(["tool-p", "-a"], check=True)
        server = subprocess.Popen(
            ["nice", "-n", "-20", "tool-q", "--x"])
        subprocess.Popen(["ip", "netns", "exec", a, "tool-r", "-s"])
        helper = shutil.which("tool-s")
    "#;
    let found = programs_in_python(python);
    for tool in ["tool-p", "tool-q", "tool-r", "tool-s"] {
        assert!(found.contains(tool), "{tool} not found in {found:?}");
    }
    let markdown = "```sh\ntool-m --x; echo hi | tool-n -\n  $B --y \\\n    --not-a-program\n```\n";
    let found = programs_in_markdown(markdown);
    assert_eq!(
        found,
        ["tool-m", "tool-n"].map(String::from).into_iter().collect()
    );
}

#[test]
fn every_program_setup_lists_is_installed_here() {
    // scripts/test runs scripts/setup first: a listed program that is
    // still missing has the wrong package next to it.
    let missing: Vec<String> = setup_programs()
        .into_iter()
        .filter(|(program, _)| common::find_program(program).is_none())
        .map(|(program, package)| format!("{program} (from {package})"))
        .collect();
    assert!(
        missing.is_empty(),
        "run scripts/setup: these programs are not on the PATH: {missing:?}"
    );
}
