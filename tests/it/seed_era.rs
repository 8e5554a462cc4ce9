//! Integration tests: the recipes on the tool versions the seeds' images shipped (Raspbian
//! and Armbian Stretch, Ubuntu 18.04): nginx before 1.19.5 has no `-e`, Samba before 4.15
//! no `--debug-stdout` (it has `-S`/`--log-stdout`), iperf3 before 3.7 no `--bidir`.
//! Such versions cannot be installed here, so each is a stand-in (`fake_`): the real
//! nginx or smbd behind a wrapper that answers `-h`/`--help` and refuses flags as the
//! old version does, on a real lab board, serving real transfers.

use std::path::Path;

use crate::lab::{Lab, bp, sh, text};
use crate::serving::{assert_nothing_left, assert_positive, samples, scenario};

/// Writes `name` into `bin` as an executable script.
fn script(bin: &Path, name: &str, text: &str) {
    std::fs::create_dir_all(bin).unwrap();
    let path = bin.join(name);
    std::fs::write(&path, text).unwrap();
    sh(&format!(
        "chmod 755 {}",
        benchpipe::transport::quote::sh(&path.to_string_lossy())
    ));
}

/// The real binary `name` on this machine.
fn real(name: &str) -> String {
    let path = sh(&format!("command -v {name}"));
    assert!(path.starts_with('/'), "{name}: {path}");
    path
}

/// nginx 1.10 (Debian 9): the real nginx, but `-h` lists no `-e`, and `-e` is refused
/// as that version refuses it.
fn old_nginx(bin: &Path, calls: &Path) {
    let nginx = real("nginx");
    script(
        bin,
        "nginx",
        &format!(
            r#"#!/bin/sh
# fake_ nginx 1.10: the real one without -e.
echo "nginx $*" >> {calls}
for a in "$@"; do
  [ "$a" = -e ] && {{ echo 'nginx: invalid option: "e"' >&2; exit 1; }}
done
case "$1" in
  -h|-\?) {nginx} -h 2>&1 | grep -v -e '-e filename' | sed 's/ \[-e filename\]//'; exit 0 ;;
  -v|-V) echo 'nginx version: nginx/1.10.3' >&2; exit 0 ;;
esac
exec {nginx} "$@"
"#,
            calls = calls.display()
        ),
    );
}

/// smbd 4.5 (Debian 9): the real smbd, but `--help` lists `-S, --log-stdout` and no
/// `--debug-stdout`, which is refused; `-S` and `--log-stdout` reach the real smbd as
/// the `--debug-stdout` it understands.
fn old_smbd(bin: &Path, calls: &Path) {
    let smbd = real("smbd");
    script(
        bin,
        "smbd",
        &format!(
            r#"#!/bin/sh
# fake_ smbd 4.5: the real one with -S/--log-stdout for --debug-stdout.
echo "smbd $*" >> {calls}
case "$1" in
  --help|-\?)
    {smbd} --help 2>&1 | grep -v -e --debug-stdout
    echo '  -S, --log-stdout                        Log to stdout'
    exit 0 ;;
  --version|-V) echo 'Version 4.5.16-Debian'; exit 0 ;;
esac
n=$#
while [ "$n" -gt 0 ]; do
  a=$1; shift; n=$((n - 1))
  case $a in
    --debug-stdout) echo 'smbd: unknown option --debug-stdout' >&2; exit 1 ;;
    -S|--log-stdout) a=--debug-stdout ;;
  esac
  set -- "$@" "$a"
done
exec {smbd} "$@"
"#,
            calls = calls.display()
        ),
    );
}

/// Puts `bin` first on the PATH of the recipe's service command, in the workspace's copy
/// of `recipe` (its one `[[services]]` table, whatever its command says).
fn services_on_path(root: &Path, recipe: &str, bin: &Path) {
    let path = root.join(format!("pipeline/{recipe}.toml"));
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(text.matches("[[services]]").count(), 1, "{recipe}");
    let at = text.find("[[services]]").unwrap();
    let command = at + text[at..].find("\ncommand = \"").unwrap() + "\ncommand = \"".len();
    let with = format!(
        "{}PATH={}:$PATH; export PATH; {}",
        &text[..command],
        bin.display(),
        &text[command..]
    );
    std::fs::write(&path, with).unwrap();
}

/// On a seed-era nginx and smbd the shipped http and smb recipes start their servers
/// with the flags those versions have (no `-e`; `--log-stdout`), serve, measure, and
/// stop them; the stand-ins saw exactly those flags.
#[test]
fn fake_old_nginx_and_smbd_serve_with_the_flags_their_versions_have() {
    let Some(lab) = Lab::up(1) else { return };
    let board = lab.board(0).clone();
    let root = &lab.root;
    let bin = root.join("old-tools");
    let calls = root.join("old-tools.calls");
    old_nginx(&bin, &calls);
    old_smbd(&bin, &calls);
    scenario(
        &lab,
        "\"http\", \"smb\"",
        "",
        "[params.http]\nsize_mib = 8\nport = 8189\n[params.smb]\nsize_mib = 8\nport = 4459\n",
    );
    services_on_path(root, "http", &bin);
    services_on_path(root, "smb", &bin);
    let out = bp(root, &["apply", "scenarios/s.toml"]);
    assert!(out.status.success(), "{}", text(&out));
    let all = samples(root);
    let of = |test: &str| -> Vec<_> {
        all.iter()
            .filter(|(c, _)| c.contains(&format!("\"{test}\"")))
            .cloned()
            .collect()
    };
    assert_eq!(of("http").len(), 2, "{}", text(&out));
    assert_eq!(of("smb").len(), 2, "{}", text(&out));
    assert_positive(&of("http"), &["download"]);
    assert_positive(&of("smb"), &["read", "write"]);
    let calls = std::fs::read_to_string(&calls).unwrap();
    let starts: Vec<&str> = calls
        .lines()
        .filter(|l| l.starts_with("nginx -p") || l.starts_with("smbd -F"))
        .collect();
    assert!(
        starts.iter().any(|l| l.starts_with("nginx -p"))
            && starts.iter().any(|l| l.starts_with("smbd -F")),
        "{calls}"
    );
    for l in &starts {
        assert!(!l.contains(" -e ") && !l.contains("--debug-stdout"), "{l}");
    }
    assert!(starts.iter().any(|l| l.contains("--log-stdout")), "{calls}");
    assert_nothing_left(&board);
}

/// iperf3 before 3.7 has no `--bidir`: the bidirectional recipe skips the cell with that
/// reason, read from the board's own `iperf3 --help`, rather than fail as if the board
/// were broken. The stand-in is iperf3 3.1.3's help text.
#[test]
fn fake_old_iperf3_without_bidir_skips_the_bidirectional_cell_with_its_reason() {
    let Some(lab) = Lab::up(1) else { return };
    let root = &lab.root;
    let bin = root.join("old-tools");
    script(
        &bin,
        "iperf3",
        "#!/bin/sh\n# fake_ iperf3 3.1.3: its help has no --bidir.\n\
         case \"$1\" in\n\
           --help) printf '%s\\n' 'Usage: iperf [-s|-c host] [options]' '  -R, --reverse             run in reverse mode (server sends, client receives)'; exit 0 ;;\n\
           --version) echo 'iperf 3.1.3'; exit 0 ;;\n\
         esac\nexit 1\n",
    );
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    std::fs::create_dir_all(root.join("pipeline")).unwrap();
    std::fs::create_dir_all(root.join("scenarios")).unwrap();
    let shipped = std::fs::read_to_string(repo.join("pipeline/iperf3-bidir.toml")).unwrap();
    let find =
        "command = \"iperf3 --help 2>&1 | grep -q -e --bidir || { echo \\\"iperf3 on the board";
    assert_eq!(shipped.matches(find).count(), 1, "{shipped}");
    let with = find.replacen(
        "command = \"",
        &format!("command = \"PATH={}:$PATH; ", bin.display()),
        1,
    );
    std::fs::write(
        root.join("pipeline/iperf3-bidir.toml"),
        shipped.replace(find, &with),
    )
    .unwrap();
    std::fs::write(
        root.join("scenarios/s.toml"),
        format!(
            "title = \"bidir\"\n[images.installed]\ninstalled = true\n[matrix]\n\
             image = [\"installed\"]\nboard = [\"{}\"]\ntest = [\"iperf3-bidir\"]\n\
             [method]\ncooldown = \"0s\"\nwarmup = {{ runs = 0 }}\nruns = {{ min = 1, max = 1 }}\n\
             [params.iperf3-bidir]\nseconds = 1\nport = 5277\n",
            lab.board(0).name
        ),
    )
    .unwrap();
    let out = bp(root, &["apply", "scenarios/s.toml"]);
    assert!(out.status.success(), "{}", text(&out));
    let mut reasons = Vec::new();
    for e in std::fs::read_dir(root.join("results")).unwrap().flatten() {
        assert!(!e.path().join("failure.json").exists(), "{}", text(&out));
        if let Ok(skip) = std::fs::read_to_string(e.path().join("skip.json")) {
            reasons.push(skip);
        }
    }
    assert_eq!(reasons.len(), 1, "{}", text(&out));
    assert!(
        reasons[0].contains("iperf3 on the board has no --bidir (3.7 or later): iperf 3.1.3"),
        "{reasons:?}"
    );
}
