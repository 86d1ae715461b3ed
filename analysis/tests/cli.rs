//! `kvtb-report`'s command line: subcommands, options, errors and exit statuses.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers: a failed step is a failed test"
)]

use std::process::{Command, Output};

fn kvtb_report(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kvtb-report"))
        .args(args)
        .output()
        .unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn help_names_both_commands_and_their_options_and_succeeds() {
    for args in [&["--help"][..], &["help"][..]] {
        let o = kvtb_report(args);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(out.contains("charts") && out.contains("paper"), "{out}");
    }
    let o = kvtb_report(&["paper", "--help"]);
    assert_eq!(o.status.code(), Some(0));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("--md <PATH>") && out.contains("--title <TEXT>"),
        "{out}"
    );
    assert!(out.contains("<DIR>"), "{out}");
    let o = kvtb_report(&["charts", "--help"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("--title <TEXT>") && !out.contains("--md"),
        "{out}"
    );
}

#[test]
fn bad_command_lines_fail_with_status_1_and_say_why() {
    let dir = std::env::temp_dir();
    let d = dir.to_str().unwrap();
    for (args, says) in [
        (&[][..], "Usage"),
        (&["plot"][..], "unrecognized subcommand 'plot'"),
        (&["charts"][..], "<DIR>"),
        (
            &["charts", d, "--bogus"][..],
            "unexpected argument '--bogus'",
        ),
        (
            &["charts", d, "--md", "x.md"][..],
            "unexpected argument '--md'",
        ),
        (&["charts", d, d][..], "unexpected argument"),
        (
            &["paper", d, "--title"][..],
            "a value is required for '--title <TEXT>'",
        ),
    ] {
        let o = kvtb_report(args);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(says), "{args:?}: {}", stderr(&o));
        assert!(o.stdout.is_empty(), "{args:?}");
    }
}

#[test]
fn a_directory_that_is_not_there_is_named() {
    let missing = std::env::temp_dir().join(format!("kvtb-cli-missing-{}", std::process::id()));
    for cmd in ["charts", "paper"] {
        let o = kvtb_report(&[cmd, missing.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(1));
        let e = stderr(&o);
        assert!(e.starts_with("kvtb-report: "), "{e}");
        assert!(e.contains(&missing.display().to_string()), "{e}");
    }
}

#[test]
fn options_take_the_equals_form_too() {
    let dir = std::env::temp_dir().join(format!("kvtb-cli-eq-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // parsed (the error is the empty directory, not the command line)
    let o = kvtb_report(&["charts", dir.to_str().unwrap(), "--title=A title"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("no ycsb result files"),
        "{}",
        stderr(&o)
    );
    let _ = std::fs::remove_dir_all(&dir);
}
