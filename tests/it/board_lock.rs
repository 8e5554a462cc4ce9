//! Integration tests: one board between two applies that share nothing but the board
//! (stores of their own, as two controllers, or a person and a timer, have): the second
//! is refused naming the first, and a holder killed with SIGKILL, whose SSH session ends
//! with it, leaves a board the next apply takes back.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::lab::Lab;
use crate::spine::text;

const SLOW: &str = r#"description = "sleeps on the board, then prints a number"
uses_storage = false
[run]
command = "sleep 1.5; echo '{\"value\": 1}'"
parse = "json"
[metrics]
value = { from = "value", unit = "x", better = "higher" }
"#;

/// Measured samples of the one cell in the store at `store`.
fn measured(store: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(store) else {
        return 0;
    };
    let mut n = 0;
    for e in entries.flatten() {
        let text = std::fs::read_to_string(e.path().join("samples.jsonl")).unwrap_or_default();
        n += text
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter(|v| v["warmup"] != true)
            .count();
    }
    n
}

#[test]
fn a_board_held_by_an_apply_of_another_store_is_refused_and_taken_back_after_a_kill() {
    let Some(lab) = Lab::up(1) else { return };
    let p = lab.project_on_every_board(&[("slow", SLOW)], &["slow"], 4);
    let mut first = p.spawn(&["apply", "--no-report", "scenarios/s.toml"]);
    let t0 = Instant::now();
    while measured(&p.dir.join("results")) == 0 {
        if t0.elapsed() > Duration::from_secs(180) || first.try_wait().unwrap().is_some() {
            let _ = first.kill();
            panic!("the first apply stored no sample");
        }
        std::thread::sleep(Duration::from_millis(50));
    }

    // The first holds the board through its SSH session: the second, with a store of
    // its own, is refused before it changes anything there.
    let second = p.bp(&[
        "apply",
        "--no-report",
        "--store",
        "other",
        "scenarios/s.toml",
    ]);
    let said = text(&second);
    assert_eq!(second.status.code(), Some(1), "{said}");
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    for want in [
        format!(
            "is in use by another benchpipe apply (pid {} on {}, for ",
            first.id(),
            host.trim()
        ),
        "apply --yes --no-report scenarios/s.toml)".to_string(),
    ] {
        assert!(said.contains(&want), "{want}: {said}");
    }
    assert_eq!(measured(&p.dir.join("other")), 0, "{said}");

    // Killed, the first's session ends with its process; its record holds nothing
    // then, and the next apply takes the board. sshd may notice the closed connection
    // an instant after the kill: a refusal within that instant is tried again.
    first.kill().unwrap();
    first.wait().unwrap();
    let t0 = Instant::now();
    let taken = loop {
        let out = p.bp(&[
            "apply",
            "--no-report",
            "--store",
            "other",
            "scenarios/s.toml",
        ]);
        if out.status.success() || t0.elapsed() > Duration::from_secs(30) {
            break out;
        }
        assert!(
            text(&out).contains("is in use by another"),
            "{}",
            text(&out)
        );
        std::thread::sleep(Duration::from_millis(500));
    };
    assert!(taken.status.success(), "{}", text(&taken));
    assert_eq!(measured(&p.dir.join("other")), 4);

    // And the first store's apply resumes once the board is free again.
    let resumed = p.bp(&["apply", "--no-report", "scenarios/s.toml"]);
    assert!(resumed.status.success(), "{}", text(&resumed));
    assert_eq!(measured(&p.dir.join("results")), 4);
}
