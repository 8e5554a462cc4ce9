//! The board-side scripts parse as sh, and the CPU-time wrapper keeps the command's own
//! status and output.

use super::script::sampler_script;
use super::*;
use crate::transport::Transport;
use crate::transport::local::Local;

#[test]
fn ids_and_globs_are_safe_words() {
    assert_eq!(safe_id("a/../b c"), "a____b_c");
    assert_eq!(safe_id(""), "run");
    assert_eq!(
        quote::glob("/sys/class/thermal/thermal_zone*/temp"),
        "/sys/class/thermal/thermal_zone*/temp"
    );
    assert_eq!(quote::glob("/x y/$(id)*"), "'/x y/$(id)'*");
}

#[test]
fn the_wrapper_keeps_status_and_output_and_writes_times() {
    let dir = std::env::temp_dir().join(format!("bp-wrap-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("cpu");
    let file = file.to_str().unwrap();
    let command = "printf 'out\\n'; printf 'err\\n' >&2\nexit 7 # a trailing comment";
    let out = Local
        .run(&wrap_for_cpu_accounting(command, file), None)
        .unwrap();
    assert_eq!(out.exit.code, Some(7));
    assert_eq!(out.stdout_str(), "out\n");
    assert_eq!(out.stderr_str(), "err\n");
    let times = std::fs::read_to_string(file).unwrap();
    assert_eq!(times.lines().count(), 2, "{times}");
    // An unwritable file changes nothing for the command.
    let out = Local
        .run(
            &wrap_for_cpu_accounting("echo hi", "/nonexistent/dir/cpu"),
            None,
        )
        .unwrap();
    assert!(out.exit.success());
    assert_eq!(
        (out.stdout_str(), out.stderr_str()),
        ("hi\n".into(), String::new())
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn the_scripts_are_valid_sh() {
    let o = SamplerOptions {
        path_prefix: Some("/opt/x".into()),
        ..SamplerOptions::default()
    };
    for script in [
        sampler_script(None),
        start_script("/w/telemetry", "/w/telemetry/r 1", DEFAULT_THERMAL, &o),
        start_script(
            "/w/telemetry",
            "/w/telemetry/r 1",
            DEFAULT_THERMAL,
            &SamplerOptions {
                meter: Some(crate::model::Meter {
                    source: crate::model::MeterSource::Pmic,
                    idle: std::time::Duration::from_secs(3),
                }),
                ..o.clone()
            },
        ),
        sampler_script(Some(&crate::model::MeterSource::Pmic)),
        finish_script("/w/telemetry/r 1", Some("/opt/x"), Some("/var/log/k l")),
    ] {
        let out = Local
            .run(&format!("sh -n -c {}", quote::sh(&script)), None)
            .unwrap();
        assert!(out.exit.success(), "{}\n{script}", out.stderr_str());
    }
}
