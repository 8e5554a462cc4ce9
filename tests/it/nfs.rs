//! Integration tests: the nfs recipe (pipeline/nfs.toml): its timing of a real
//! nfs-cat read, and on a real lab board nfs-ganesha exporting the cell's tmpfs
//! read-only over NFSv4 alone to nfs-cat on the controller; a failed read stores no
//! number, a port in use is refused, and afterwards no ganesha runs and nothing of its
//! is mounted.

use crate::lab::{Lab, bp, text};
use crate::serving::{
    assert_nothing_left, assert_positive, fixture, hold_port, samples, scenario, shipped,
};

/// The nfs recipe's own summary of a real timed nfs-cat read (16 MiB from nfs-ganesha
/// 4.3): MB/s and seconds. nfs-cat's refusal of a missing file (exit 10) never gets
/// that far: its run fails on the exit status, and its words alone are no number.
#[test]
fn nfs_reads_its_own_timing_of_nfs_cat_in_mb_per_s() {
    let nfs = shipped("nfs");
    let got = benchpipe::bench::metrics(&nfs, &fixture("nfs-cat-timed.json"), "").unwrap();
    assert_eq!(got["read"], 252666761.9 * 1e-6);
    assert_eq!(got["seconds"], 0.066401);
    let missing = fixture("nfs-cat-missing.txt");
    assert!(missing.contains("NFS4ERR_NOENT"), "{missing}");
    assert!(benchpipe::bench::metrics(&nfs, "", &missing).is_err());
}

/// nfs-ganesha exports the cell's tmpfs read-only over NFSv4 alone (no rpcbind here),
/// nfs-cat reads the file: MB/s and seconds of each run, a write refused by the export,
/// and afterwards no ganesha and no tmpfs.
#[test]
fn nfs_on_a_lab_board_exports_a_tmpfs_read_only_and_stops_ganesha() {
    let Some(lab) = Lab::up(1) else { return };
    let board = lab.board(0).clone();
    scenario(&lab, "\"nfs\"", "", "[params.nfs]\nsize_mib = 16\n");
    // Before each read, a write that the read-only export must refuse.
    let p = lab.root.join("pipeline/nfs.toml");
    let t = std::fs::read_to_string(&p).unwrap();
    let read = "t0=$(date +%s%N) && \\\\\n";
    assert!(t.contains(read), "{t}");
    let write = "if nfs-cp /etc/hostname nfs://{{ host }}/bench/written'?version=4&nfsport='{{ port }}; \
                 then echo 'the export took a write' >&2; exit 9; fi; \\\\\n";
    std::fs::write(&p, t.replace(read, &format!("{write}{read}"))).unwrap();
    let out = bp(&lab.root, &["apply", "scenarios/s.toml"]);
    assert!(out.status.success(), "{}", text(&out));
    let samples = samples(&lab.root);
    assert_eq!(samples.len(), 2, "{}", text(&out));
    assert_positive(&samples, &["read", "seconds"]);
    for (_, s) in &samples {
        let (mb_s, secs) = (
            s["metrics"]["read"].as_f64().unwrap(),
            s["metrics"]["seconds"].as_f64().unwrap(),
        );
        // The rate is the file's bytes over the time taken.
        let bytes = mb_s * 1e6 * secs;
        assert!(
            (bytes - 16.0 * 1048576.0).abs() < 16.0 * 1048576.0 * 1e-3,
            "{s}"
        );
    }
    assert_nothing_left(&board);
}

/// A read of a file the export does not have: nfs-cat's non-zero exit fails the run,
/// no number is stored, and ganesha is stopped and the tmpfs unmounted all the same.
#[test]
fn a_failing_nfs_read_stores_no_number_and_still_stops_ganesha_and_unmounts() {
    let Some(lab) = Lab::up(1) else { return };
    let board = lab.board(0).clone();
    scenario(&lab, "\"nfs\"", "", "[params.nfs]\nsize_mib = 1\n");
    let p = lab.root.join("pipeline/nfs.toml");
    let t = std::fs::read_to_string(&p).unwrap();
    assert!(t.contains("/bench/file'"));
    std::fs::write(&p, t.replace("/bench/file'", "/bench/missing'")).unwrap();
    let out = bp(&lab.root, &["apply", "scenarios/s.toml"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("NFS4ERR_NOENT"),
        "nfs-cat said why: {}",
        text(&out)
    );
    assert!(samples(&lab.root).is_empty());
    assert_nothing_left(&board);
}

/// A port something else listens on: ganesha's setup refuses it, naming the
/// parameter, and neither ganesha nor the tmpfs is left.
#[test]
fn an_nfs_port_in_use_on_the_board_is_refused() {
    let Some(lab) = Lab::up(1) else { return };
    let board = lab.board(0).clone();
    scenario(
        &lab,
        "\"nfs\"",
        "",
        "[params.nfs]\nsize_mib = 1\nport = 20491\n",
    );
    let held = hold_port(&board, 20491);
    let out = bp(&lab.root, &["apply", "scenarios/s.toml"]);
    drop(held);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("nfs: port 20491 is already in use on the board"),
        "{}",
        text(&out)
    );
    assert_nothing_left(&board);
}
