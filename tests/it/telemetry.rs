//! Integration tests: the telemetry sampler for real through the local transport:
//! real CPU burners for background load, a real swap file for swapping, and, where
//! the real thing cannot exist here, a fake `vcgencmd` and a fake thermal source.

use crate::scratch::Scratch;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use benchpipe::model::{Board, BoardName, Connection, Flash};
use benchpipe::telemetry::{Probe, SamplerOptions, TelemetryError, Thresholds};
use benchpipe::transport::Transport;
use benchpipe::transport::local::Local;

/// The tests that judge the whole machine's CPU and swap, or make real swap traffic,
/// CPU burners and kernel-log lines, take the machine alone, one at a time and with no
/// lab up, so that neither they nor a lab test's runs see the other's load.
fn machine() -> crate::lab::Slot {
    crate::lab::machine_alone()
}

/// The tests of the firmware's, the thermal source's and fake kernel logs' flags judge
/// no load (`firmware_only`): they run beside the labs, never beside a test that has
/// the machine alone.
fn beside_labs() -> crate::lab::Slot {
    crate::lab::beside_labs()
}

fn scratch(tag: &str) -> Scratch {
    Scratch::new(&format!("tel-{tag}"))
}

fn board(workdir: &Path, thermal: Option<String>) -> Board {
    Board {
        name: BoardName::new("here"),
        file: PathBuf::from("boards/here.toml"),
        model: "test controller".into(),
        arch: Vec::new(),
        memory: None,
        memory_mib: None,
        connection: Connection::Local,
        flash: Flash::None,
        power: None,
        meter: None,
        storage: Vec::new(),
        network: Vec::new(),
        workdir: workdir.display().to_string(),
        thermal,
        accept_new_host_key: false,
        boot_cmdline: None,
        health: Vec::new(),
        labgrid: None,
    }
}

/// Running (not zombie) processes with `arg` as one of their arguments.
fn processes_with_arg(arg: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        if !cmdline.split(|b| *b == 0).any(|a| a == arg.as_bytes()) {
            continue;
        }
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        let state = stat.rsplit_once(") ").map(|(_, s)| s.chars().next());
        if !matches!(state, Some(Some('Z' | 'X')) | None) {
            found.push(pid);
        }
    }
    found
}

fn wait_until(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let t0 = Instant::now();
    while t0.elapsed() < limit {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    done()
}

struct Burners(Vec<Child>);

impl Burners {
    fn start(n: usize) -> Burners {
        Burners(
            (0..n)
                .map(|_| {
                    Command::new("sh")
                        .args(["-c", "while :; do :; done"])
                        .spawn()
                        .unwrap()
                })
                .collect(),
        )
    }
}

impl Drop for Burners {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn cpus() -> usize {
    std::thread::available_parallelism().map_or(1, std::num::NonZero::get)
}

/// Thresholds for tests of the firmware's and the thermal source's flags: the rest of
/// the suite (or anything else) running beside them may be real background load, so
/// `background-load` is never raised.
fn firmware_only() -> Thresholds {
    Thresholds {
        background_load: 2.0,
        ..Thresholds::default()
    }
}

/// Runs `command` wrapped for CPU accounting between start and finish.
fn measured_run(board: &Board, id: &str, command: &str) -> benchpipe::telemetry::Finished {
    let mut t = Local::new();
    let probe = Probe::start(&mut t, board, id).unwrap();
    let out = t.run(&probe.wrap(command), None).unwrap();
    assert!(out.exit.success(), "{}", out.stderr_str());
    probe.finish(&mut t, &Thresholds::default()).unwrap()
}

#[test]
fn fake_vcgencmd_and_fake_thermal_raise_throttled_hot_and_under_voltage() {
    use std::os::unix::fs::PermissionsExt;
    let _m = beside_labs();
    let dir = scratch("fake");
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let state = dir.join("throttled");
    std::fs::write(&state, "throttled=0x0\n").unwrap();
    let fake = bin.join("vcgencmd");
    std::fs::write(
        &fake,
        format!(
            "#!/bin/sh\n[ \"$1\" = get_throttled ] || exit 1\ncat '{}'\n",
            state.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    // Two fake thermal zones behind one glob; the hotter one counts.
    let zones = dir.join("zones");
    std::fs::create_dir_all(&zones).unwrap();
    std::fs::write(zones.join("zone0"), "40000\n").unwrap();
    std::fs::write(zones.join("zone1"), "45000\n").unwrap();
    let b = board(
        &dir.join("work"),
        Some(format!("{}/zone*", zones.display())),
    );

    let mut t = Local::new();
    // A quiet fake kernel log: the flags under test come from the fake firmware.
    let klog = dir.join("kernel.log");
    std::fs::write(&klog, "").unwrap();
    let options = SamplerOptions {
        path_prefix: Some(bin.display().to_string()),
        kernel_log_file: Some(klog.display().to_string()),
        ..SamplerOptions::default()
    };
    let probe = Probe::start_with(&mut t, &b, "fake-1", &options).unwrap();
    // Mid-run the board gets hot and the firmware reports under-voltage and throttling.
    let command = format!(
        "sleep 1.2; echo 85000 > '{z}/zone1'; echo throttled=0x50005 > '{s}'; sleep 1.2; \
         echo 50000 > '{z}/zone1'; echo throttled=0x50000 > '{s}'",
        z = zones.display(),
        s = state.display()
    );
    let out = t.run(&probe.wrap(&command), None).unwrap();
    assert!(out.exit.success(), "{}", out.stderr_str());
    let firmware_only = firmware_only();
    let done = probe.finish(&mut t, &firmware_only).unwrap();
    let s = &done.summary;
    assert!(s.samples >= 3, "{}", done.trace);
    let temp = s.temp_c.unwrap();
    assert_eq!((temp.min, temp.max), (45.0, 85.0), "{}", done.trace);
    assert_eq!(s.throttled_first, Some(0));
    assert_eq!(s.throttled_seen, Some(0x50005));
    assert_eq!(
        s.throttled_names,
        vec![
            "under-voltage",
            "throttled",
            "under-voltage-occurred",
            "throttled-occurred"
        ]
    );
    assert_eq!(
        done.flags,
        vec!["throttled", "hot", "under-voltage"],
        "{}",
        done.trace
    );
    // A higher limit re-judges the same stored summary without the `hot` flag. It
    // builds on the firmware-only thresholds: with the defaults, the rest of the suite
    // running beside this test is real background load and adds `background-load`.
    let lenient = Thresholds {
        hot_celsius: 90.0,
        ..firmware_only
    };
    assert_eq!(
        benchpipe::telemetry::rejudge(&done.telemetry, &lenient),
        Some(vec!["throttled".to_string(), "under-voltage".to_string()])
    );
}

#[test]
fn fake_vcgencmd_with_sticky_bits_from_before_the_run_flags_nothing() {
    use std::os::unix::fs::PermissionsExt;
    let _m = beside_labs();
    let dir = scratch("fake-sticky");
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let fake = bin.join("vcgencmd");
    std::fs::write(&fake, "#!/bin/sh\necho throttled=0x50000\n").unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let b = board(&dir.join("work"), None);
    let mut t = Local::new();
    // A fake kernel log that logs nothing during the run: the real one may log
    // anything while the rest of the suite runs.
    let klog = dir.join("kernel.log");
    std::fs::write(
        &klog,
        "[  200.000000] Under-voltage detected! (0x00050005)\n",
    )
    .unwrap();
    let options = SamplerOptions {
        path_prefix: Some(bin.display().to_string()),
        kernel_log_file: Some(klog.display().to_string()),
        ..SamplerOptions::default()
    };
    let probe = Probe::start_with(&mut t, &b, "sticky", &options).unwrap();
    t.run(&probe.wrap("sleep 1"), None).unwrap();
    let done = probe.finish(&mut t, &firmware_only()).unwrap();
    assert_eq!(done.summary.throttled_seen, Some(0x50000), "{}", done.trace);
    let throttle_flags: Vec<_> = done
        .flags
        .iter()
        .filter(|f| *f == "throttled" || *f == "under-voltage")
        .collect();
    assert!(throttle_flags.is_empty(), "{:?}", done.flags);
    // An under-voltage logged before the run is not this run's either.
    assert!(done.summary.kernel_events.is_empty(), "{}", done.trace);
    assert_eq!(done.summary.throttled_state.as_deref(), Some("known"));
}

/// A fake `vcgencmd` in `dir/bin` running `body`; returns the directory for PATH.
fn fake_vcgencmd(dir: &Path, body: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let fake = bin.join("vcgencmd");
    std::fs::write(&fake, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    bin
}

#[test]
fn fake_vcgencmd_failing_leaves_the_throttle_state_unknown_with_its_reason() {
    let _m = beside_labs();
    let dir = scratch("fake-vchi");
    // What vcgencmd says to a user outside the `video` group.
    let bin = fake_vcgencmd(&dir, "echo 'VCHI initialization failed' >&2\nexit 255");
    let klog = dir.join("kernel.log");
    std::fs::write(&klog, "").unwrap();
    let b = board(&dir.join("work"), None);
    let mut t = Local::new();
    let options = SamplerOptions {
        path_prefix: Some(bin.display().to_string()),
        kernel_log_file: Some(klog.display().to_string()),
        ..SamplerOptions::default()
    };
    let probe = Probe::start_with(&mut t, &b, "vchi", &options).unwrap();
    t.run(&probe.wrap("sleep 1.2"), None).unwrap();
    let done = probe.finish(&mut t, &firmware_only()).unwrap();
    let s = &done.summary;
    assert_eq!(
        s.throttled_state.as_deref(),
        Some("unknown"),
        "{}",
        done.trace
    );
    let why = s.throttled_error.as_deref().unwrap_or_default();
    assert!(
        why.contains("exit 255") && why.contains("VCHI initialization failed"),
        "{why}\n{}",
        done.trace
    );
    assert_eq!(s.throttled_seen, None);
    // A warning, not a flag: it says what could not be judged.
    assert!(done.flags.is_empty(), "{:?}", done.flags);
    assert_eq!(
        benchpipe::telemetry::warnings_of(&done.telemetry),
        vec![benchpipe::telemetry::THROTTLE_UNKNOWN.to_string()]
    );
    // Said once, not at every tick.
    assert_eq!(
        done.trace.matches("vcgencmd_error").count(),
        1,
        "{}",
        done.trace
    );
}

#[test]
fn fake_vcgencmd_failing_shows_in_the_report_as_a_warning() {
    let _m = beside_labs();
    let dir = scratch("fake-vchi-report");
    let bin = fake_vcgencmd(&dir, "echo 'VCHI initialization failed' >&2\nexit 255");
    // Flagged runs are kept (the default): the suite's own load may flag a run here,
    // and only the warning is under test. That a warning never leaves a run out is
    // judged in report::tests::a_throttle_state_unknown_is_a_warning_that_excludes_nothing.
    let p =
        crate::spine::Project::local("fake-vchi-report").local_scenario("s", &["sleepy"], 2, "");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let apply = std::process::Command::new(env!("CARGO_BIN_EXE_benchpipe"))
        .args(crate::scripted(&["apply", "scenarios/s.toml"]))
        .current_dir(&p.dir)
        .env("NO_COLOR", "1")
        .env("PATH", &path)
        .output()
        .unwrap();
    assert!(apply.status.success(), "{}", crate::spine::text(&apply));
    let measured: Vec<_> = p
        .samples("sleepy")
        .into_iter()
        .filter(|s| s["kind"] == "measured")
        .collect();
    assert_eq!(measured.len(), 2);
    for s in &measured {
        assert_eq!(s["telemetry"]["throttled_state"], "unknown", "{s}");
    }
    let report = p.bp(&["report", "scenarios/s.toml"]);
    assert!(report.status.success(), "{}", crate::spine::text(&report));
    let md = std::fs::read_to_string(p.dir.join("reports/s/index.md")).unwrap();
    assert!(
        md.contains("2 of 2 runs throttle state unknown (kept)"),
        "{md}"
    );
    // Marked in the table, and the mark explained under it.
    assert!(
        md.contains("some runs: throttle state unknown (kept in the statistics)"),
        "{md}"
    );
    // Both runs count.
    assert!(md.contains("n = 2 measured runs per value."), "{md}");
}

#[test]
fn fake_kernel_log_shows_an_under_voltage_during_the_run_that_sticky_bits_hide() {
    let _m = beside_labs();
    let dir = scratch("fake-klog");
    // The firmware's "has occurred" bits were set long before the run.
    let bin = fake_vcgencmd(&dir, "echo throttled=0x50000");
    let klog = dir.join("kernel.log");
    std::fs::write(
        &klog,
        "[  100.000000] Booting Linux on physical CPU 0x0\n\
         [  200.000000] raspberrypi-firmware soc:firmware: Under-voltage detected! (0x00050005)\n\
         [  210.000000] raspberrypi-firmware soc:firmware: Voltage normalised (0x00000000)\n",
    )
    .unwrap();
    let b = board(&dir.join("work"), None);
    let options = SamplerOptions {
        path_prefix: Some(bin.display().to_string()),
        kernel_log_file: Some(klog.display().to_string()),
        ..SamplerOptions::default()
    };
    let run = |id: &str, command: &str| {
        let mut t = Local::new();
        let probe = Probe::start_with(&mut t, &b, id, &options).unwrap();
        let out = t.run(&probe.wrap(command), None).unwrap();
        assert!(out.exit.success(), "{}", out.stderr_str());
        probe.finish(&mut t, &firmware_only()).unwrap()
    };
    // Without a new kernel line, the old ones flag nothing.
    let quiet = run("quiet", "sleep 1");
    assert!(quiet.flags.is_empty(), "{:?}\n{}", quiet.flags, quiet.trace);
    assert_eq!(quiet.summary.kernel_log.as_deref(), Some("read"));
    // Mid-run the kernel logs a new under-voltage; the sticky bits do not move.
    let line =
        "[  300.500000] raspberrypi-firmware soc:firmware: Under-voltage detected! (0x00050005)";
    let command = format!(
        "sleep 1.2; printf '%s\\n' '[  300.000000] usb 1-1.2: new device' '{line}' >> '{}'; sleep 1.2",
        klog.display()
    );
    let done = run("event", &command);
    let s = &done.summary;
    assert_eq!(s.throttled_first, Some(0x50000));
    assert_eq!(s.throttled_seen, Some(0x50000));
    assert_eq!(s.kernel_events, vec!["under-voltage"], "{}", done.trace);
    assert_eq!(s.kernel_lines, vec![line.to_string()], "{}", done.trace);
    assert_eq!(done.flags, vec!["under-voltage"], "{}", done.trace);
}

#[test]
fn fake_kernel_log_unreadable_with_sticky_bits_set_leaves_the_throttle_state_unknown() {
    let _m = beside_labs();
    let dir = scratch("fake-klog-gone");
    let bin = fake_vcgencmd(&dir, "echo throttled=0x50000");
    let b = board(&dir.join("work"), None);
    let mut t = Local::new();
    let options = SamplerOptions {
        path_prefix: Some(bin.display().to_string()),
        kernel_log_file: Some(dir.join("no-such-kernel.log").display().to_string()),
        ..SamplerOptions::default()
    };
    let probe = Probe::start_with(&mut t, &b, "gone", &options).unwrap();
    t.run(&probe.wrap("sleep 1"), None).unwrap();
    let done = probe.finish(&mut t, &firmware_only()).unwrap();
    let s = &done.summary;
    assert!(
        s.kernel_log
            .as_deref()
            .unwrap_or_default()
            .starts_with("unreadable: exit "),
        "{:?}\n{}",
        s.kernel_log,
        done.trace
    );
    assert_eq!(
        s.throttled_state.as_deref(),
        Some("unknown"),
        "{}",
        done.trace
    );
    assert!(
        s.throttled_error
            .as_deref()
            .unwrap_or_default()
            .contains("kernel log"),
        "{:?}",
        s.throttled_error
    );
    assert!(done.flags.is_empty(), "{:?}", done.flags);
}

/// The real kernel log: a line written to /dev/kmsg during the run (root only) is read
/// back by the real `dmesg`. Every test that judges flags from the real kernel log
/// holds `machine()`, so this line cannot reach them; other modules' tests do not
/// judge flags.
#[test]
fn real_kmsg_line_during_a_run_is_flagged_under_voltage() {
    let _m = machine();
    let dir = scratch("kmsg");
    let b = board(&dir.join("work"), None);
    let dmesg_works = Command::new("dmesg")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    let kmsg_writable = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/kmsg")
        .is_ok();
    if !dmesg_works || !kmsg_writable {
        return crate::cannot_run(
            "real_kmsg_line_during_a_run_is_flagged_under_voltage",
            &format!(
                "dmesg readable {dmesg_works}, /dev/kmsg writable {kmsg_writable} (needs root)"
            ),
        );
    }
    let tag = format!("benchpipe-test-{}", std::process::id());
    let mut t = Local::new();
    let probe = Probe::start(&mut t, &b, "kmsg").unwrap();
    let command = format!(
        "sleep 1.2; echo '<4>{tag}: Under-voltage detected! (0x00050005)' > /dev/kmsg; sleep 1.2"
    );
    let out = t.run(&probe.wrap(&command), None).unwrap();
    assert!(out.exit.success(), "{}", out.stderr_str());
    let done = probe.finish(&mut t, &firmware_only()).unwrap();
    let s = &done.summary;
    assert_eq!(s.kernel_log.as_deref(), Some("read"), "{}", done.trace);
    assert!(
        s.kernel_lines.iter().any(|l| l.contains(&tag)),
        "{:?}\n{}",
        s.kernel_lines,
        done.trace
    );
    assert!(
        done.flags.contains(&"under-voltage".to_string()),
        "{:?}\n{}",
        done.flags,
        done.trace
    );
}

#[test]
fn a_dev_zero_thermal_source_gives_no_temperature_and_a_small_trace() {
    let _m = beside_labs();
    let dir = scratch("devzero");
    let b = board(&dir.join("work"), Some("/dev/zero".into()));
    let mut t = Local::new();
    let probe = Probe::start(&mut t, &b, "devzero").unwrap();
    let out = t.run(&probe.wrap("sleep 1"), None).unwrap();
    assert!(out.exit.success(), "{}", out.stderr_str());
    let done = probe.finish(&mut t, &firmware_only()).unwrap();
    assert!(done.summary.samples >= 2, "{}", done.trace);
    assert_eq!(done.summary.temp_c, None, "{}", done.trace);
    assert!(done.trace.len() < 64 << 10, "{} bytes", done.trace.len());
}

#[test]
fn a_huge_trace_is_read_back_bounded_keeping_its_head_and_tail() {
    let _m = beside_labs();
    let dir = scratch("hugetrace");
    let b = board(&dir.join("work"), None);
    let mut t = Local::new();
    let probe = Probe::start(&mut t, &b, "huge").unwrap();
    // Something (a sampler gone wrong, a full disk's garbage) grew the trace past the
    // bound before the run ended.
    let trace = format!("{}/trace", probe.dir());
    let limit = benchpipe::telemetry::MAX_TRACE_BYTES;
    let out = t
        .run(
            &format!(
                "head -c {} /dev/zero | tr '\\0' x >> '{trace}'; echo >> '{trace}'",
                limit + (1 << 20)
            ),
            None,
        )
        .unwrap();
    assert!(out.exit.success(), "{}", out.stderr_str());
    let out = t.run(&probe.wrap("sleep 1"), None).unwrap();
    assert!(out.exit.success(), "{}", out.stderr_str());
    let done = probe.finish(&mut t, &firmware_only()).unwrap();
    assert!(
        (done.trace.len() as u64) < limit + 4096,
        "{} bytes",
        done.trace.len()
    );
    assert!(done.trace.contains("\ntrace_dropped "), "the cut is said");
    // The head (the header) and the tail (the last tick, the test's CPU time) survive.
    assert!(done.trace.starts_with("benchpipe-telemetry 1\n"));
    assert!(done.summary.test_cpu_seconds.is_some());
    assert!(done.summary.samples >= 2);
}

#[test]
fn apply_with_a_dev_zero_thermal_source_skips_the_cool_down_and_finishes() {
    let _m = beside_labs();
    let p = crate::spine::Project::local("devzero-apply")
        .local_scenario("s", &["sleepy"], 1, "")
        .edit(
            "boards/here.toml",
            "local = true\n",
            "local = true\nthermal = \"/dev/zero\"\n",
        )
        .edit(
            "scenarios/s.toml",
            "[method]\n",
            "[method]\ncooldown = { until_below = \"50C\", max = \"1m\" }\n",
        );
    let apply = p.bp(&["apply", "scenarios/s.toml"]);
    assert!(apply.status.success(), "{}", crate::spine::text(&apply));
    let err = String::from_utf8_lossy(&apply.stderr);
    assert!(
        err.contains("cool-down skipped: no temperature source"),
        "{err}"
    );
    let samples = p.samples("sleepy");
    let measured = samples.iter().find(|s| s["kind"] == "measured").unwrap();
    assert!(measured["telemetry"]["temp_c"].is_null(), "{measured}");
}

#[test]
fn real_cpu_burners_outside_the_test_are_background_load() {
    let _m = machine();
    let dir = scratch("burn");
    let b = board(&dir.join("work"), None);
    let burners = Burners::start(cpus());
    let done = measured_run(&b, "burn", "sleep 2");
    drop(burners);
    let s = &done.summary;
    let fraction = s.background_fraction.unwrap();
    assert!(fraction > 0.5, "{fraction}\n{}", done.trace);
    assert!(
        done.flags.contains(&"background-load".to_string()),
        "{:?}",
        done.flags
    );
    assert!(s.load1_max.is_some());
}

#[test]
fn a_test_burning_cpu_itself_is_not_background_load() {
    let _m = machine();
    let dir = scratch("quiet");
    let b = board(&dir.join("work"), None);
    // The test itself burns 2 s of CPU time inside the wrapper (a CPU-time limit, not
    // a wall-clock one, so a loaded machine changes how long it takes, not how much it
    // burns). Other work on the machine is real background load, so whether the run
    // is flagged is not what this judges: the test's own CPU time is taken out of the
    // background, and the flag is judged on what remains.
    let done = measured_run(
        &b,
        "quiet",
        "(ulimit -c 0; ulimit -t 2; while :; do :; done) 2>/dev/null || true",
    );
    let s = &done.summary;
    let test_cpu = s.test_cpu_seconds.unwrap();
    let busy = s.busy_cpu_seconds.unwrap();
    let background = s.background_cpu_seconds.unwrap();
    assert!(
        test_cpu >= 1.0,
        "the test's CPU time: {test_cpu}\n{}",
        done.trace
    );
    assert!(busy >= test_cpu * 0.9, "{busy} vs {test_cpu}");
    assert!(
        (background - (busy - test_cpu).max(0.0)).abs() < 0.05,
        "background = busy - test: {background} vs {busy} - {test_cpu}"
    );
    // A limit between the background's share and the share the run would have had
    // with the test's CPU counted as background: not flagged.
    let capacity = s.seconds * f64::from(s.cpus.unwrap());
    let fraction = s.background_fraction.unwrap();
    let between = Thresholds {
        background_load: f64::midpoint(fraction, (busy / capacity).min(1.0)),
        ..Thresholds::default()
    };
    assert!(
        between.background_load > fraction,
        "{fraction} {busy} {capacity}"
    );
    let flags = benchpipe::telemetry::rejudge(&done.telemetry, &between).unwrap();
    assert!(
        !flags.contains(&"background-load".to_string()),
        "{flags:?} at {between:?}\n{}",
        done.trace
    );
}

/// A swap file that is switched off and removed when dropped.
struct SwapFile(PathBuf);

impl SwapFile {
    fn create(path: &Path) -> Result<SwapFile, String> {
        let run = |cmd: &str| -> Result<(), String> {
            let out = Command::new("sh")
                .args(["-c", cmd])
                .output()
                .map_err(|e| e.to_string())?;
            if out.status.success() {
                Ok(())
            } else {
                Err(format!(
                    "`{cmd}`: {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                ))
            }
        };
        let p = path.display();
        run(&format!(
            "dd if=/dev/zero of='{p}' bs=1M count=64 status=none && chmod 600 '{p}' && mkswap '{p}' >/dev/null"
        ))?;
        let swap = SwapFile(path.to_path_buf());
        run(&format!("swapon '{p}'"))?;
        Ok(swap)
    }
}

impl Drop for SwapFile {
    fn drop(&mut self) {
        let _ = Command::new("swapoff").arg(&self.0).status();
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Pushes 16 MiB of this process's own pages out to swap with madvise(MADV_PAGEOUT):
/// real swap-out without starving anyone of memory. (Reading them back finds them in
/// the swap cache, so this alone causes no swap-in.)
fn page_out() -> Result<(), String> {
    const LEN: usize = 16 << 20;
    // SAFETY: an anonymous private mapping owned by this function, unmapped before it
    // returns; every access stays within LEN bytes.
    unsafe {
        let p = libc::mmap(
            std::ptr::null_mut(),
            LEN,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        if p == libc::MAP_FAILED {
            return Err("mmap failed".into());
        }
        let bytes = p.cast::<u8>();
        for i in (0..LEN).step_by(4096) {
            *bytes.add(i) = 1;
        }
        let rc = libc::madvise(p, LEN, libc::MADV_PAGEOUT);
        let err = std::io::Error::last_os_error();
        libc::munmap(p, LEN);
        if rc != 0 {
            return Err(format!("madvise(MADV_PAGEOUT): {err}"));
        }
    }
    Ok(())
}

/// Swap-in too: a pipeline holding 24 MB in a memory cgroup limited to 16 MB
/// (`tail -c` keeps its input, then writes it out) swaps out and back in.
fn swap_in_and_out_in_a_memory_cgroup(dir: &Path) -> Result<(), String> {
    let name = format!("bp-swaptest-{}", std::process::id());
    let v1 = Path::new("/sys/fs/cgroup/memory");
    let v2 = Path::new("/sys/fs/cgroup");
    let (cg, limit_file) = if v1.join("memory.limit_in_bytes").exists() {
        (v1.join(&name), "memory.limit_in_bytes")
    } else if std::fs::read_to_string(v2.join("cgroup.controllers"))
        .is_ok_and(|c| c.split_whitespace().any(|w| w == "memory"))
    {
        (v2.join(&name), "memory.max")
    } else {
        return Err("no memory cgroup controller".into());
    };
    std::fs::create_dir(&cg).map_err(|e| format!("{}: {e}", cg.display()))?;
    let result = (|| {
        std::fs::write(cg.join(limit_file), "16M").map_err(|e| format!("{limit_file}: {e}"))?;
        let out = Command::new("sh")
            .arg("-c")
            .arg(format!(
                "echo $$ > '{}/cgroup.procs' && head -c 24000000 /dev/zero | tail -c 24000000 | wc -c",
                cg.display()
            ))
            .current_dir(dir)
            .output()
            .map_err(|e| e.to_string())?;
        let text = String::from_utf8_lossy(&out.stdout);
        if out.status.success() && text.trim() == "24000000" {
            Ok(())
        } else {
            Err(format!(
                "the pipeline in {}: {}",
                cg.display(),
                String::from_utf8_lossy(&out.stderr)
            ))
        }
    })();
    // The cgroup can go once its processes have exited.
    wait_until(Duration::from_secs(5), || std::fs::remove_dir(&cg).is_ok());
    result
}

fn has_swap() -> bool {
    std::fs::read_to_string("/proc/swaps").is_ok_and(|s| s.lines().count() > 1)
}

#[test]
fn real_swap_traffic_is_flagged_swapping() {
    let _m = machine();
    let dir = scratch("swap");
    let b = board(&dir.join("work"), None);
    let _swap = if has_swap() {
        None
    } else {
        match SwapFile::create(&dir.join("swapfile")) {
            Ok(s) => Some(s),
            Err(e) => {
                // Only the pure test with a captured vmstat pair covers this then.
                crate::cannot_run(
                    "real_swap_traffic_is_flagged_swapping",
                    &format!("cannot enable swap here: {e}"),
                );
                return;
            }
        }
    };
    let mut t = Local::new();
    let probe = Probe::start(&mut t, &b, "swap").unwrap();
    let paged = page_out();
    let cycled = swap_in_and_out_in_a_memory_cgroup(&dir);
    std::thread::sleep(Duration::from_millis(1200));
    let done = probe.finish(&mut t, &Thresholds::default()).unwrap();
    if let Err(e) = paged {
        crate::cannot_run("real_swap_traffic_is_flagged_swapping", &e);
        return;
    }
    let s = &done.summary;
    eprintln!(
        "swap traffic seen: {:?} pages in, {:?} pages out (swap-in through a memory cgroup: {cycled:?})",
        s.swap_in_pages, s.swap_out_pages
    );
    assert!(s.swap_out_pages.unwrap() >= 4096, "{}", done.trace);
    if cycled.is_ok() {
        assert!(s.swap_in_pages.unwrap() >= 1000, "{}", done.trace);
    }
    assert!(
        done.flags.contains(&"swapping".to_string()),
        "{:?}",
        done.flags
    );
    // That a run without swap traffic is not flagged is judged on a captured vmstat
    // pair (summary.rs): here, any other work on the machine may swap.
}

#[test]
fn the_sampler_is_gone_after_finish_and_so_are_its_files() {
    let dir = scratch("gone");
    let b = board(&dir.join("work"), None);
    let mut t = Local::new();
    let probe = Probe::start(&mut t, &b, "gone").unwrap();
    let run_dir = probe.dir().to_string();
    assert_eq!(processes_with_arg(&run_dir).len(), 1, "one sampler runs");
    // A failed run: finish still stops it.
    let out = t.run(&probe.wrap("echo oops >&2; exit 3"), None).unwrap();
    assert_eq!(out.exit.code, Some(3));
    let done = probe.finish(&mut t, &Thresholds::default()).unwrap();
    assert!(done.summary.samples >= 2);
    assert!(processes_with_arg(&run_dir).is_empty());
    assert!(!Path::new(&run_dir).exists());
}

#[test]
fn an_abandoned_sampler_ends_by_itself() {
    let dir = scratch("abandoned");
    let b = board(&dir.join("work"), None);
    let mut t = Local::new();

    // At its maximum duration.
    let short = SamplerOptions {
        max_duration: Duration::from_secs(2),
        ..SamplerOptions::default()
    };
    let probe = Probe::start_with(&mut t, &b, "deadline", &short).unwrap();
    let run_dir = probe.dir().to_string();
    drop(probe);
    assert_eq!(processes_with_arg(&run_dir).len(), 1);
    // Generous bounds: a loaded machine delays ticks, and only the ending is judged.
    assert!(
        wait_until(Duration::from_secs(60), || processes_with_arg(&run_dir)
            .is_empty()),
        "still running a minute after its 2 s maximum"
    );

    // When its marker goes.
    let probe = Probe::start(&mut t, &b, "marker").unwrap();
    let run_dir = probe.dir().to_string();
    drop(probe);
    std::fs::remove_file(format!("{run_dir}/marker")).unwrap();
    assert!(
        wait_until(Duration::from_secs(60), || processes_with_arg(&run_dir)
            .is_empty()),
        "still running a minute without its marker"
    );

    // When the next run on the board starts (benchpipe was killed in between).
    let first = Probe::start(&mut t, &b, "killed").unwrap();
    let first_dir = first.dir().to_string();
    drop(first);
    let second = Probe::start(&mut t, &b, "next").unwrap();
    assert!(processes_with_arg(&first_dir).is_empty());
    assert!(!Path::new(&first_dir).exists());
    second.abort(&mut t);
    assert!(processes_with_arg(&dir.join("work/telemetry/next").display().to_string()).is_empty());
}

/// The sampler's CPU cost, measured: its own and its children's CPU time (from
/// /proc/PID/stat) per minute of sampling. Prints the figure for the report.
/// `BP_SAMPLER_COST_SECS` samples longer than the default 20 s, for a finer figure
/// (the kernel counts CPU time in 10 ms ticks).
#[test]
fn the_sampler_costs_little_cpu() {
    let _m = machine();
    let dir = scratch("cost");
    let b = board(&dir.join("work"), None);
    let secs: u64 = std::env::var("BP_SAMPLER_COST_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20);
    let mut t = Local::new();
    let probe = Probe::start(&mut t, &b, "cost").unwrap();
    std::thread::sleep(Duration::from_secs(secs));
    let done = probe.finish(&mut t, &Thresholds::default()).unwrap();
    let s = &done.summary;
    let cpu = s.sampler_cpu_seconds.expect("the sampler's CPU time");
    let per_minute = cpu / s.seconds * 60.0;
    eprintln!(
        "sampler cost: {cpu:.2} CPU s over {:.1} s, {} ticks: {per_minute:.3} CPU s per minute ({:.2}% of one CPU)",
        s.seconds,
        s.samples,
        per_minute / 60.0 * 100.0
    );
    // Ticking at all is judged, not its rate: a loaded machine delays ticks.
    assert!(s.samples >= 3, "{} ticks in {} s", s.samples, s.seconds);
    assert!(
        per_minute < 0.6,
        "the sampler used {per_minute:.3} CPU s per minute (1% of a CPU is 0.6)"
    );
}

/// Loads a one-board, one-test workspace whose scenario has this `[method]` body.
fn load_method(method: &str) -> Result<benchpipe::model::Method, String> {
    let dir = scratch(&format!("config-{:x}", fnv(method)));
    let write = |rel: &str, text: &str| {
        let p = dir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    write(
        "boards/here.toml",
        "model = \"m\"\nlocal = true\nworkdir = \"/var/tmp/bp-x\"\n",
    );
    write(
        "pipeline/t.toml",
        "description = \"t\"\nuses_storage = false\n[run]\ncommand = \"echo 1\"\nparse = \"json\"\n\
         [metrics]\nv = { from = \"v\", unit = \"s\", better = \"lower\" }\n",
    );
    write(
        "scenarios/s.toml",
        &format!(
            "title = \"t\"\n[images.installed]\ninstalled = true\n\
             [matrix]\nimage = [\"installed\"]\nboard = [\"here\"]\ntest = [\"t\"]\n\
             [method]\n{method}\n"
        ),
    );
    benchpipe::check::load(&dir, &[dir.join("scenarios/s.toml")])
        .map(|ws| ws.scenarios[0].method.clone())
        .map_err(|d| d.to_string())
}

fn fnv(s: &str) -> u64 {
    s.bytes().fold(0xcbf29ce484222325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100000001b3)
    })
}

#[test]
fn validity_options_load_with_defaults() {
    let m = load_method("confidence = 0.95").unwrap();
    assert_eq!(m.validity, benchpipe::model::Validity::default());
    assert_eq!(
        (m.validity.hot_celsius, m.validity.background_load),
        (80.0, 0.10)
    );
    assert!(!m.validity.exclude_flagged);
    let m = load_method(
        "validity = { hot = \"72.5C\", background_load = \"5%\", exclude_flagged = true }",
    )
    .unwrap();
    assert_eq!(m.validity.hot_celsius, 72.5);
    assert!((m.validity.background_load - 0.05).abs() < 1e-12);
    assert!(m.validity.exclude_flagged);
    let t = Thresholds::from(&m.validity);
    assert_eq!(t.hot_celsius, 72.5);
}

#[test]
fn validity_mistakes_are_reported_at_their_position() {
    // The [method] body is on line 9 of the scenario.
    for (body, location, message) in [
        (
            "validity = { hot = \"80\" }",
            "s.toml:9:20",
            "bad temperature `80`",
        ),
        (
            "validity = { background_load = \"0.1\" }",
            "s.toml:9:32",
            "bad percentage `0.1`",
        ),
        (
            "validity = { background_load = \"150%\" }",
            "s.toml:9:32",
            "out of range",
        ),
        ("validity = { exclude = true }", "s.toml:9:14", "exclude"),
        (
            "validity = { exclude_flagged = \"yes\" }",
            "s.toml:9:",
            "bool",
        ),
        ("validity = \"strict\"", "s.toml:9:12", ""),
    ] {
        let err = load_method(body).expect_err(body);
        assert!(
            err.contains("1 error"),
            "{body}: only the one mistake\n{err}"
        );
        assert!(
            err.contains(location),
            "{body}: expected {location} in\n{err}"
        );
        assert!(
            err.contains(message),
            "{body}: expected {message:?} in\n{err}"
        );
    }
}

/// Over SSH on a lab board (a real sshd in a network namespace; the same kernel, so
/// its processes, CPUs and swap are this machine's): start returns at once although
/// the sampler keeps running, the test's CPU is told apart from real burners, and
/// finish leaves no sampler behind.
#[test]
fn over_ssh_on_a_lab_board_the_sampler_runs_detached_and_stops() {
    use benchpipe::transport::ssh::{ConnectOptions, SshTransport};
    let _m = machine();
    let Some(lab) = crate::lab::Lab::up(1) else {
        return;
    };
    let lb = lab.board(0);
    let options = ConnectOptions {
        ssh_config: Some(PathBuf::from("/nonexistent/benchpipe-test-ssh-config")),
        use_agent_and_default_keys: false,
        ..ConnectOptions::default()
    };
    let mut t = SshTransport::connect_with(
        &lb.name,
        &lab.info.ssh_target(lb),
        Duration::from_secs(5),
        options,
    )
    .unwrap_or_else(|e| panic!("connect to the lab board: {e}"));
    let b = board(Path::new(&lb.workdir), None);

    // start has returned and the sampler (which runs for hours unless stopped) still
    // runs: start did not wait for it. No clock is read, so a loaded machine passes.
    let probe = Probe::start(&mut t, &b, "ssh-run").unwrap();
    let run_dir = probe.dir().to_string();
    assert_eq!(processes_with_arg(&run_dir).len(), 1, "one sampler runs");

    let burners = Burners::start(cpus());
    let out = t.run(&probe.wrap("sleep 2; echo done"), None).unwrap();
    drop(burners);
    assert_eq!(out.stdout_str(), "done\n");
    let done = probe.finish(&mut t, &Thresholds::default()).unwrap();
    assert!(done.summary.samples >= 3, "{}", done.trace);
    assert!(done.summary.test_cpu_seconds.is_some(), "{}", done.trace);
    assert!(
        done.flags.contains(&"background-load".to_string()),
        "{:?}\n{}",
        done.flags,
        done.trace
    );
    assert!(processes_with_arg(&run_dir).is_empty());
    assert!(!Path::new(&run_dir).exists());
}

#[test]
fn a_sampler_that_cannot_start_is_a_typed_failure_naming_the_board() {
    let dir = scratch("nostart");
    // A workdir below a regular file: mkdir fails, for root too.
    std::fs::write(dir.join("file"), "").unwrap();
    let b = board(&dir.join("file/work"), None);
    let mut t = Local::new();
    let e = Probe::start(&mut t, &b, "x").unwrap_err();
    let TelemetryError::Failed { action, target, .. } = &e else {
        panic!("{e:?}")
    };
    assert_eq!(
        (*action, target.as_str()),
        ("start the sampler", t.target().as_str())
    );
    let prefix = format!("telemetry: cannot start the sampler on {} (", t.target());
    assert!(e.to_string().starts_with(&prefix), "{e}");
}
