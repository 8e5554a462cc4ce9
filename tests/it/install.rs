//! Integration tests: benchpipe as an installed tool: its shells' completions, loaded by
//! the real bash and fish, complete its commands; its man page renders with man; each
//! command's --help ends with an example.

use std::process::{Command, Output};

use crate::scratch::Scratch;
use crate::spine::text;

fn bp(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_benchpipe"))
        .args(args)
        .output()
        .unwrap()
}

fn on_path(tool: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(tool).is_file()))
}

/// bash and fish, given the script `completions` prints, complete `benchpipe ap` to
/// `apply` and `benchpipe apply --dr` to `--dry-run`.
#[test]
fn bash_and_fish_complete_benchpipes_commands_and_flags() {
    let dir = Scratch::new("completions");
    for shell in ["bash", "fish"] {
        if !on_path(shell) {
            return crate::cannot_run(
                "install::bash_and_fish_complete_benchpipes_commands_and_flags",
                &format!("{shell} is not installed"),
            );
        }
        let out = bp(&["completions", shell]);
        assert!(out.status.success(), "{}", text(&out));
        let script = dir.join(format!("benchpipe.{shell}"));
        std::fs::write(&script, &out.stdout).unwrap();
        let complete = |words: &str| -> String {
            let program = match shell {
                "bash" => {
                    let n = words.split(' ').count() - 1;
                    format!(
                        "source '{}'; COMP_WORDS=({words}); COMP_CWORD={n}; COMP_LINE='{words}'; \
                         COMP_POINT=${{#COMP_LINE}}; _benchpipe benchpipe; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
                        script.display()
                    )
                }
                _ => format!("source '{}'; complete -C '{words}'", script.display()),
            };
            let o = Command::new(shell).args(["-c", &program]).output().unwrap();
            assert!(o.status.success(), "{shell} {words}: {}", text(&o));
            String::from_utf8_lossy(&o.stdout).to_string()
        };
        let commands = complete("benchpipe ap");
        assert!(
            commands
                .lines()
                .any(|l| l.split('\t').next() == Some("apply")),
            "{shell}: {commands}"
        );
        let flags = complete("benchpipe apply --dr");
        assert!(
            flags
                .lines()
                .any(|l| l.split('\t').next() == Some("--dry-run")),
            "{shell}: {flags}"
        );
    }
}

/// `benchpipe man` is a man page man renders: its name, synopsis and commands.
#[test]
fn the_man_page_renders_with_man_and_names_the_commands() {
    if !on_path("man") {
        return crate::cannot_run(
            "install::the_man_page_renders_with_man_and_names_the_commands",
            "man is not installed (Debian package man-db)",
        );
    }
    let out = bp(&["man"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        out.stdout.starts_with(b".ie \\n(.g .ds Aq") || out.stdout.starts_with(b".TH"),
        "{}",
        text(&out)
    );
    let dir = Scratch::new("man");
    let page = dir.join("benchpipe.1");
    std::fs::write(&page, &out.stdout).unwrap();
    let shown = Command::new("man")
        .arg("-l")
        .arg(&page)
        .env("MANPAGER", "cat")
        .env("MANWIDTH", "100")
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&shown.stdout);
    assert!(shown.status.success(), "{}", text(&shown));
    for want in [
        "NAME",
        "benchpipe",
        "SYNOPSIS",
        "apply",
        "plan",
        "report",
        "completions",
    ] {
        assert!(said.contains(want), "{want}: {said}");
    }
}

/// Every command's --help ends with an example of it.
#[test]
fn every_commands_help_has_an_example() {
    let top = String::from_utf8(bp(&["--help"]).stdout).unwrap();
    let commands: Vec<&str> = top
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .collect();
    assert!(commands.len() >= 10, "{top}");
    for c in commands {
        let help = bp(&[c, "--help"]);
        let said = String::from_utf8_lossy(&help.stdout);
        assert!(help.status.success(), "{c}: {}", text(&help));
        assert!(
            said.contains("Example") && said.contains(&format!("benchpipe {c}")),
            "{c} --help has no example:\n{said}"
        );
    }
}
