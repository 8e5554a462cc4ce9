//! Integration tests: the seeds' published figures, stored as the samples of the shipped
//! seed scenarios' cells (the project's own fixture: no board runs), render reports that
//! show each seed figure where the seed has it: its table, its row, in the seed's units,
//! and the seed's percentages in the comparisons.

use crate::scratch::Scratch;
use std::collections::{BTreeMap, BTreeSet};

use crate::repo;
use benchpipe::store::{FORMAT, RunKind, Sample, Store};
use benchpipe::{check, cli, plan};

/// One published figure: the cell it belongs to (board, storage, test) and its metric.
struct Figure {
    board: &'static str,
    storage: Option<&'static str>,
    test: &'static str,
    metric: &'static str,
    value: f64,
    /// The network the figure was measured over, when the scenario varies it.
    network: Option<&'static str>,
    /// The filesystem, when the scenario varies it.
    filesystem: Option<&'static str>,
    /// The image, when the board runs several (else `render`'s).
    image: Option<&'static str>,
}

const fn fig(
    board: &'static str,
    storage: &'static str,
    test: &'static str,
    metric: &'static str,
    value: f64,
) -> Figure {
    Figure {
        board,
        storage: if storage.is_empty() {
            None
        } else {
            Some(storage)
        },
        test,
        metric,
        value,
        network: None,
        filesystem: None,
        image: None,
    }
}

/// `fig` on an image of its own.
const fn fig_at(
    image: &'static str,
    board: &'static str,
    test: &'static str,
    metric: &'static str,
    value: f64,
) -> Figure {
    let mut f = fig(board, "", test, metric, value);
    f.image = Some(image);
    f
}

/// `fig` over a network.
const fn fig_on(
    network: &'static str,
    board: &'static str,
    test: &'static str,
    metric: &'static str,
    value: f64,
) -> Figure {
    let mut f = fig(board, "", test, metric, value);
    f.network = Some(network);
    f
}

/// The reports of `scenario` (a file of the repository's scenarios/) over a store
/// holding, for each figure, one warm-up and three measured runs of its cell under
/// `image` (any image when empty: each board on its own; every metric of a cell in each run) whose mean is the figure exactly and
/// whose spread is a hundredth of its last digit: `index.md`, `results.csv`.
fn render(scenario: &str, image: &str, figures: &[Figure]) -> (String, String) {
    let dir = Scratch::new(&format!("seed-figures-{scenario}"));
    // The seed workspace as shipped: its boards and scenarios, the built-in recipes.
    for d in ["scenarios", "boards"] {
        let to = dir.join(d);
        std::fs::create_dir_all(&to).unwrap();
        for e in std::fs::read_dir(repo().join("examples/seeds").join(d)).unwrap() {
            let e = e.unwrap();
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
    let files = vec![dir.join(format!("scenarios/{scenario}.toml"))];
    let ws = check::load(&dir, &files).expect("the shipped seed scenario loads");
    let cells = plan::expand(&ws, &ws.scenarios[0]).cells;
    // The figures of each cell: (cell index, metric, value).
    let mut of_cell: BTreeMap<usize, BTreeMap<String, f64>> = BTreeMap::new();
    for f in figures {
        let i = cells
            .iter()
            .position(|c| {
                c.address.board.as_str() == f.board
                    && c.address.test.as_str() == f.test
                    && match f.image {
                        Some(own) => c.address.image.as_str() == own,
                        None => image.is_empty() || c.address.image.as_str() == image,
                    }
                    && c.address
                        .storage
                        .as_ref()
                        .map(benchpipe::model::StorageName::as_str)
                        == f.storage
                    && (f.network.is_none()
                        || c.address
                            .network
                            .as_ref()
                            .map(benchpipe::model::NetworkName::as_str)
                            == f.network)
                    && (f.filesystem.is_none()
                        || c.address
                            .filesystem
                            .as_ref()
                            .map(benchpipe::model::FsName::as_str)
                            == f.filesystem)
            })
            .unwrap_or_else(|| {
                panic!(
                    "{scenario} has no cell {} {:?} {} on {image}",
                    f.board, f.storage, f.test
                )
            });
        of_cell
            .entry(i)
            .or_default()
            .insert(f.metric.to_string(), f.value);
    }
    let store = Store::open(dir.join("results")).unwrap();
    for (i, metrics) in &of_cell {
        let mut w = store.begin(&cells[*i]).unwrap();
        // A warm-up far off (it must not count), then the figure, a hair below and
        // above: the mean is the figure.
        for (seq, (kind, shift)) in [
            (RunKind::Warmup, 0.5),
            (RunKind::Measured, 0.0),
            (RunKind::Measured, -0.00005),
            (RunKind::Measured, 0.00005),
        ]
        .into_iter()
        .enumerate()
        {
            let started = 1_600_000_000.0 + (*i * 100 + seq * 10) as f64;
            w.append(&Sample {
                format: FORMAT,
                seq: seq as u32 + 1,
                kind,
                session: "1600000000-1".into(),
                started,
                ended: started + 5.0,
                metrics: metrics
                    .iter()
                    .map(|(m, v)| (m.clone(), v * (1.0 + shift)))
                    .collect(),
                flags: vec![],
                telemetry: None,
                command: format!("{} (the seed's figure)", cells[*i].address.test),
                log: String::new(),
                order: None,
                board_seq: None,
            })
            .unwrap();
        }
    }
    let data = store.all().unwrap();
    let ws = check::load_for_report(&dir, &files, 100_000, &cli::stored_names(&data))
        .expect("the scenario loads for a report");
    let out = dir.join("reports");
    cli::write_reports(&ws, &store, &out).unwrap();
    let read = |f: &str| std::fs::read_to_string(out.join(scenario).join(f)).unwrap();
    let got = (read("index.md"), read("results.csv"));
    drop(dir);
    got
}

/// The Markdown table titled `title`: its header and rows, cells trimmed.
fn table(md: &str, title: &str) -> Vec<Vec<String>> {
    let start = md
        .find(&format!("## {title}\n"))
        .unwrap_or_else(|| panic!("no table {title:?} in:\n{md}"));
    md[start..]
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .filter(|l| !l.starts_with("|---"))
        .map(|l| {
            l.trim_matches('|')
                .split(" | ")
                .map(|c| c.trim().to_string())
                .collect()
        })
        .collect()
}

/// How many of `t`'s first columns are its axes (`board`, `storage`, ...): each row's
/// configuration, a label per axis.
fn axis_columns(t: &[Vec<String>]) -> usize {
    const AXES: [&str; 5] = ["board", "storage", "filesystem", "network", "image"];
    t[0].iter()
        .take_while(|h| AXES.contains(&h.as_str()))
        .count()
}

/// A row's configuration: its axis columns' labels, joined as the seeds name a row.
fn row_label(t: &[Vec<String>], r: &[String]) -> String {
    r[..axis_columns(t)].join(", ")
}

/// The cell of `t` in the row labelled `row` (its axes' labels, `Pi 4, microSD`) and
/// the column whose header starts with `column`.
fn cell<'t>(t: &'t [Vec<String>], row: &str, column: &str) -> &'t str {
    let col = t[0]
        .iter()
        .position(|h| h.starts_with(column))
        .unwrap_or_else(|| panic!("no column {column:?} in {:?}", t[0]));
    let r = t
        .iter()
        .skip(1)
        .find(|r| row_label(t, r) == row)
        .unwrap_or_else(|| panic!("no row {row:?} in {t:#?}"));
    &r[col]
}

/// The seed's figure as a table shows it: the mean with the digits the seed wrote.
fn shows(text: &str, figure: &str) {
    assert!(
        text.starts_with(figure),
        "the report shows {text:?} where the seed has {figure}"
    );
}

/// Seed 1's "Disk Benchmarks" table (iozone 4K random read and write per board and
/// disk, MB/sec) and its UASP table (hdparm, dd and iozone on the Pi 4's SSD without and
/// with UASP), stored and rendered through `scenarios/turing-pi-disk.toml` (on one of
/// its three images, which the rows name since the scenario varies them).
#[test]
fn seed_1s_disk_tables_show_the_seeds_figures_in_its_rows_and_columns() {
    let iozone = |board, storage, read, write| {
        [
            fig(board, storage, "iozone", "random_read", read),
            fig(board, storage, "iozone", "random_write", write),
        ]
    };
    let mut figures: Vec<Figure> = Vec::new();
    figures.extend(iozone("turing-cm3-1", "emmc", 8.99, 9.20));
    figures.extend(iozone("turing-cm3-2", "microsd", 6.97, 2.90));
    figures.extend(iozone("turing-cm3-1", "kingston-usb", 8.87, 10.04));
    figures.extend(iozone("dramble-pi4-1", "microsd", 11.81, 3.25));
    figures.extend(iozone("dramble-pi4-1", "kingston-usb3-bot", 14.41, 23.28));
    figures.extend(iozone("dramble-pi4-1", "kingston-usb3-uas", 20.59, 28.54));
    // The CM3+'s USB 2.0 with the same two cases (the first is the Disk Benchmarks'
    // "Kingston USB 2.0 SSD" row): no gain, as the seed found.
    figures.extend(iozone("turing-cm3-1", "kingston-usb3-uas", 7.48, 8.55));
    for (board, storage, hdparm, dd) in [
        ("dramble-pi4-1", "kingston-usb3-bot", 172.13, 102.67),
        ("dramble-pi4-1", "kingston-usb3-uas", 296.71, 149.00),
        ("turing-cm3-1", "kingston-usb", 32.00, 30.40),
        ("turing-cm3-1", "kingston-usb3-uas", 31.79, 31.70),
    ] {
        figures.push(fig(board, storage, "hdparm", "buffered_read", hdparm));
        figures.push(fig(board, storage, "dd-write", "sequential_write", dd));
    }
    // The power the seed read off a USB-C tester while the disk worked, and idle
    // (5.07 V at 0.74 A and 0.67 A): what a `[meter]` stores with each run.
    for (storage, load, idle) in [
        ("kingston-usb3-bot", 5.29, 3.75),
        ("kingston-usb3-uas", 4.87, 3.40),
    ] {
        figures.push(fig("dramble-pi4-1", storage, "dd-write", "power_w", load));
        figures.push(fig("dramble-pi4-1", storage, "dd-write", "idle_w", idle));
    }
    let (md, _csv) = render("turing-pi-disk", "hypriotos", &figures);

    let disk = table(&md, "Disk Benchmarks");
    // The seed's one "CM3+" is two nodes, one per medium: each is named, and no two
    // rows look the same.
    let labels: Vec<String> = disk.iter().skip(1).map(|r| row_label(&disk, r)).collect();
    let distinct: BTreeSet<&str> = labels.iter().map(String::as_str).collect();
    assert_eq!(
        distinct.len(),
        labels.len(),
        "rows that look the same: {labels:#?}"
    );
    for (row, read, write) in [
        ("CM3+ node 1, 8 GB eMMC, HypriotOS", "8.990", "9.200"),
        (
            "CM3+ node 2, microSD - Samsung Evo+ 32GB, HypriotOS",
            "6.970",
            "2.900",
        ),
        (
            "CM3+ node 1, Kingston USB 2.0 SSD, HypriotOS",
            "8.870",
            "10.040",
        ),
        (
            "Pi 4, microSD - Samsung Evo+ 32GB, HypriotOS",
            "11.810",
            "3.250",
        ),
        (
            "Pi 4, Kingston USB 3.0 SSD w/o UASP, HypriotOS",
            "14.410",
            "23.280",
        ),
        (
            "Pi 4, Kingston USB 3.0 SSD w/ UASP, HypriotOS",
            "20.590",
            "28.540",
        ),
    ] {
        shows(cell(&disk, row, "4K Random Read"), read);
        shows(cell(&disk, row, "4K Random Write"), write);
    }
    // The seed's two UASP tables, each with just its board's two cases.
    for (title, rows) in [
        (
            "UASP on the Pi 4: hdparm, dd and iozone per case",
            [
                (
                    "Pi 4, Kingston USB 3.0 SSD w/o UASP",
                    "172.13",
                    "102.67",
                    "14.410",
                    "23.280",
                ),
                (
                    "Pi 4, Kingston USB 3.0 SSD w/ UASP",
                    "296.71",
                    "149.00",
                    "20.590",
                    "28.540",
                ),
            ],
        ),
        (
            "UASP on the CM3+'s USB 2.0: hdparm, dd and iozone per case",
            [
                (
                    "CM3+ node 1, Kingston USB 2.0 SSD",
                    "32.000",
                    "30.400",
                    "8.870",
                    "10.040",
                ),
                (
                    "CM3+ node 1, Kingston USB 3.0 SSD w/ UASP",
                    "31.790",
                    "31.700",
                    "7.480",
                    "8.550",
                ),
            ],
        ),
    ] {
        let uasp = table(&md, title);
        assert_eq!(uasp.len(), 1 + rows.len(), "{title}: {uasp:#?}");
        for (row, hdparm, dd, read, write) in rows {
            let row = format!("{row}, HypriotOS");
            shows(cell(&uasp, &row, "hdparm"), hdparm);
            shows(cell(&uasp, &row, "dd"), dd);
            shows(cell(&uasp, &row, "4K Random Read"), read);
            shows(cell(&uasp, &row, "4K Random Write"), write);
        }
    }
    let power = table(&md, "Power consumption");
    for (row, load, idle) in [
        (
            "Pi 4, Kingston USB 3.0 SSD w/o UASP, HypriotOS",
            "5.2900",
            "3.7500",
        ),
        (
            "Pi 4, Kingston USB 3.0 SSD w/ UASP, HypriotOS",
            "4.8700",
            "3.4000",
        ),
    ] {
        shows(cell(&power, row, "Power (under load)"), load);
        shows(cell(&power, row, "Idle"), idle);
    }
    // A CM3+ has no meter: its row, if any, never shows a number for watts.
    assert!(
        power.iter().skip(1).all(|r| {
            let k = axis_columns(&power);
            r[0].starts_with("Pi 4") || r[k..k + 2].iter().all(|c| c == "not measured")
        }),
        "{power:#?}"
    );
    // The seed's "% difference" row: 53%, 37%, 35% and 20% faster with UASP, and "8%
    // power savings": each the difference over the mean of both, as the seed wrote it.
    for (metric, seed) in [
        ("hdparm: buffered reads (hdparm) (", 53.0),
        ("dd-write: sequential write (dd) (", 37.0),
        ("iozone: 4K random read (", 35.0),
        ("iozone: 4K random write (", 20.0),
        ("dd-write: power (W", -8.0),
    ] {
        let (convention, shown) = difference(&md, metric, "HypriotOS");
        assert!(
            convention.contains("of the mean of both"),
            "{metric}: the seed's convention is named: {convention}"
        );
        let pct: f64 = shown
            .split('%')
            .next()
            .and_then(|n| n.trim_start_matches('+').parse().ok())
            .unwrap_or_else(|| panic!("{metric}: no percent leads {shown:?}"));
        assert_eq!(pct.round(), seed, "{metric}: {shown}");
    }
}

/// The comparison of the metric whose table is headed `heading...` (`test: label (`),
/// in percent of the mean of both, of the row on the image labelled `image`: the
/// convention the table states once above it, and the row's difference.
fn difference(md: &str, heading: &str, image: &str) -> (String, String) {
    let at = md
        .find("## Comparisons\n")
        .unwrap_or_else(|| panic!("no comparisons in:\n{md}"));
    let marker = format!("\n### {heading}");
    let sections = md[at..].split(marker.as_str()).skip(1);
    let mut seen = Vec::new();
    for section in sections {
        let convention = section
            .lines()
            .find(|l| l.starts_with("Difference: "))
            .unwrap_or_default()
            .to_string();
        seen.push(convention.clone());
        if !convention.contains("of the mean of both") {
            continue;
        }
        let body = format!("## x\n{section}");
        let rows = table(&body, "x");
        let col = rows[0].iter().position(|h| h == "difference").unwrap();
        // With no image column, the table's rows are all on one image: it must be
        // the only row.
        let on_image = if rows[0].iter().any(|h| h == "image") {
            rows.iter().skip(1).find(|r| r.iter().any(|c| c == image))
        } else {
            (rows.len() == 2).then(|| &rows[1])
        };
        if let Some(row) = on_image {
            return (convention, row[col].clone());
        }
    }
    panic!("no comparison headed {heading:?} of the mean of both on {image} ({seen:?}) in:\n{md}")
}

/// Seed 1's "Full System Benchmarks" (Drupal and WordPress requests/s, logged in with ab
/// and anonymous with wrk, and Minecraft's world initialization, per cluster and OS
/// image: the Turing Pi on its installed HypriotOS, the Dramble flashed with HypriotOS,
/// 32-bit and 64-bit Raspberry Pi OS) and its "Network Benchmarks" (iperf to one node of
/// each), stored and rendered through `scenarios/turing-pi-apps.toml`: each figure in
/// its table and row, in its units.
#[test]
fn seed_1s_full_system_and_network_tables_show_the_seeds_figures() {
    const HYPRIOT: &str = "32-bit HypriotOS";
    const INSTALLED: &str = "32-bit HypriotOS (as installed)";
    const RPI32: &str = "32-bit Raspberry Pi OS";
    const RPI64: &str = "64-bit Raspberry Pi OS";
    // (cluster, image, its row's image label, Drupal ab, wrk, WordPress ab, wrk, Minecraft)
    let seed = [
        (
            "turing",
            "hypriotos-installed",
            INSTALLED,
            6.65,
            28.29,
            21.35,
            25.53,
            983.0,
        ),
        (
            "dramble",
            "hypriotos",
            HYPRIOT,
            14.12,
            85.85,
            31.36,
            40.36,
            407.0,
        ),
        (
            "dramble",
            "raspios-32",
            RPI32,
            12.71,
            95.87,
            39.51,
            49.74,
            300.0,
        ),
        (
            "dramble",
            "raspios-64",
            RPI64,
            10.84,
            73.67,
            36.64,
            42.69,
            400.0,
        ),
    ];
    let name = |cluster: &str, app: &str| -> &'static str {
        Box::leak(format!("{cluster}-{app}").into_boxed_str())
    };
    let mut figures = Vec::new();
    for (cluster, image, _, d_auth, d_anon, w_auth, w_anon, minecraft) in seed {
        let (drupal, wordpress) = (name(cluster, "drupal"), name(cluster, "wordpress"));
        let mc = name(cluster, "minecraft");
        let image: &'static str = Box::leak(image.to_string().into_boxed_str());
        figures.push(fig_at(
            image,
            drupal,
            "drupal-login",
            "authenticated",
            d_auth,
        ));
        figures.push(fig_at(image, drupal, "drupal-login", "anonymous", d_anon));
        figures.push(fig_at(
            image,
            wordpress,
            "wordpress-login",
            "authenticated",
            w_auth,
        ));
        figures.push(fig_at(
            image,
            wordpress,
            "wordpress-login",
            "anonymous",
            w_anon,
        ));
        figures.push(fig_at(
            image,
            mc,
            "startup-kubectl",
            "server_seconds",
            minecraft,
        ));
    }
    figures.push(fig("turing-cm3-1", "", "iperf", "throughput", 95.0));
    figures.push(fig("dramble-pi4-1", "", "iperf", "throughput", 936.0));
    let (md, csv) = render("turing-pi-apps", "", &figures);

    // A row per (cluster, image), named by both.
    let row = |cluster: &str, app: &str, image: &str| {
        let hw = if cluster == "turing" {
            "Turing Pi"
        } else {
            "Dramble"
        };
        match app {
            "" => format!("{hw}, {image}"),
            app => format!("{hw}, {app}, {image}"),
        }
    };
    let drupal = table(&md, "Full System Benchmarks: Drupal");
    assert_eq!(drupal.len(), 5, "{drupal:#?}");
    let wordpress = table(&md, "Full System Benchmarks: WordPress");
    assert_eq!(wordpress.len(), 5, "{wordpress:#?}");
    let minecraft = table(&md, "Full System Benchmarks: Minecraft");
    assert_eq!(minecraft.len(), 5, "{minecraft:#?}");
    for (cluster, _, label, d_auth, d_anon, w_auth, w_anon, mc) in seed {
        let r = row(cluster, "Drupal", label);
        shows(
            cell(&drupal, &r, "Drupal, authenticated (ab)"),
            &format!("{d_auth:.3}"),
        );
        shows(
            cell(&drupal, &r, "Drupal, anonymous (wrk)"),
            &format!("{d_anon:.3}"),
        );
        let r = row(cluster, "WordPress", label);
        shows(
            cell(&wordpress, &r, "Wordpress, authenticated (ab)"),
            &format!("{w_auth:.3}"),
        );
        shows(
            cell(&wordpress, &r, "Wordpress, anonymous (wrk)"),
            &format!("{w_anon:.3}"),
        );
        let r = row(cluster, "", label);
        shows(
            cell(&minecraft, &r, "Minecraft, world initialization"),
            &format!("{mc:.1}"),
        );
    }
    let network = table(&md, "Network Benchmarks");
    assert_eq!(network.len(), 3, "{network:#?}");
    shows(cell(&network, "Turing Pi node 1 (CM3+)", "Speed"), "95.00");
    shows(cell(&network, "Dramble node 1 (Pi 4)", "Speed"), "936.0");
    // Each figure is a column of results.csv too.
    for figure in [
        "6.65", "85.85", "12.71", "73.67", "39.51", "42.69", "983", "300", "936",
    ] {
        assert!(csv.contains(figure), "{figure} not in results.csv:\n{csv}");
    }
}

/// Seed 2's xz table (real, user and sys of `time xz`; the ODROID-HC2 on its four big
/// cores), rendered through
/// `scenarios/sbc-xz-fs.toml`, each board on its own image.
#[test]
fn seed_2s_xz_table_shows_the_seeds_times_in_seconds() {
    let mut figures = Vec::new();
    for (board, test, real, user, sys) in [
        ("opi-zero-plus-1", "xz", 308.775, 643.546, 6.242),
        ("opi-one-plus-1", "xz", 162.469, 441.377, 1.674),
        ("rpi3-1", "xz", 161.831, 447.733, 1.849),
        ("odroid-hc2-1", "xz-pinned", 88.914, 238.843, 2.069),
    ] {
        figures.push(fig(board, "", test, "real", real));
        figures.push(fig(board, "", test, "user", user));
        figures.push(fig(board, "", test, "sys", sys));
    }
    let (md, _csv) = render("sbc-xz-fs", "", &figures);
    let xz = table(&md, "xz: real, user and sys");
    for (row, real, user, sys) in [
        ("Orange Pi Zero Plus", "308.775", "643.546", "6.242"),
        ("Orange Pi One Plus", "162.469", "441.377", "1.674"),
        ("RaspberryPi 3", "161.831", "447.733", "1.849"),
    ] {
        shows(cell(&xz, row, "real"), real);
        shows(cell(&xz, row, "user"), user);
        shows(cell(&xz, row, "sys"), sys);
    }
    let pinned = table(&md, "xz on the ODROID-HC2's four big cores");
    assert_eq!(pinned.len(), 2, "the ODROID alone: {pinned:#?}");
    shows(&pinned[1][1], "88.914");
    shows(&pinned[1][2], "238.843");
    shows(&pinned[1][3], "2.069");
}

/// Seed 2's network and serving tables (iperf3 UP and DOWN per board and network; the
/// HTTP, NFS and Samba downloads; EXT4 vs BTRFS LZO through Samba per board and disk),
/// rendered through `scenarios/sbc-serving.toml`, each board on its own image.
#[test]
fn seed_2s_network_and_serving_tables_show_the_seeds_figures() {
    let mut figures = Vec::new();
    for (network, board, up, down) in [
        ("lan", "opi-zero-plus-1", 635.0, 933.0),
        ("wifi", "opi-zero-plus-1", 81.8, 74.57),
        ("lan", "opi-one-plus-1", 848.0, 937.0),
        ("lan", "rpi3-1", 94.2, 72.6),
        ("wifi", "rpi3-1", 44.1, 45.5),
        ("lan", "odroid-hc2-1", 924.0, 937.0),
    ] {
        figures.push(fig_on(
            network,
            board,
            "iperf3-controller-to-board",
            "throughput",
            up,
        ));
        figures.push(fig_on(
            network,
            board,
            "iperf3-board-to-controller",
            "throughput",
            down,
        ));
    }
    for (board, http, nfs, smb) in [
        ("opi-zero-plus-1", 105.0, 58.0, 95.8),
        ("opi-one-plus-1", 108.0, 70.0, 102.8),
        ("rpi3-1", 11.2, 10.8, 11.5),
        ("odroid-hc2-1", 110.0, 63.2, 112.4),
    ] {
        figures.push(fig_on("lan", board, "http", "download", http));
        figures.push(fig_on("lan", board, "nfs", "read", nfs));
        figures.push(fig_on("lan", board, "smb", "read", smb));
    }
    for (board, storage, ext4, btrfs) in [
        ("opi-zero-plus-1", "usb-hdd", (33.2, 28.8), (35.2, 47.9)),
        ("opi-one-plus-1", "usb-hdd", (34.2, 31.7), (54.2, 61.1)),
        ("rpi3-1", "usb-hdd", (8.9, 8.9), (9.7, 11.2)),
        ("odroid-hc2-1", "usb-hdd", (25.9, 23.3), (45.4, 48.6)),
        ("odroid-hc2-1", "sata-hdd", (104.4, 111.7), (87.8, 105.4)),
    ] {
        for (fs, (write, read)) in [("ext4", ext4), ("btrfs-lzo", btrfs)] {
            let mut w = fig_on("lan", board, "smb-fs", "write", write);
            w.storage = Some(storage);
            w.filesystem = Some(fs);
            let mut r = fig_on("lan", board, "smb-fs", "read", read);
            r.storage = Some(storage);
            r.filesystem = Some(fs);
            figures.extend([w, r]);
        }
    }
    let (md, _csv) = render("sbc-serving", "", &figures);
    let iperf = table(&md, "iperf3: UP and DOWN");
    for (row, up, down) in [
        ("Orange Pi Zero Plus, LAN", "635.0", "933.0"),
        ("Orange Pi Zero Plus, Wi-Fi", "81.80", "74.57"),
        ("Orange Pi One Plus, LAN", "848.0", "937.0"),
        ("RaspberryPi 3, LAN", "94.20", "72.60"),
        ("RaspberryPi 3, Wi-Fi", "44.10", "45.50"),
        ("ODROID-HC2, LAN", "924.0", "937.0"),
    ] {
        shows(cell(&iperf, row, "UP"), up);
        shows(cell(&iperf, row, "DOWN"), down);
    }
    for (title, figures) in [
        ("HTTP", ["105.0", "108.0", "11.20", "110.0"]),
        ("NFS", ["58.00", "70.00", "10.80", "63.20"]),
        ("Samba", ["95.80", "102.8", "11.50", "112.4"]),
    ] {
        let t = table(&md, title);
        for (row, figure) in [
            "Orange Pi Zero Plus",
            "Orange Pi One Plus",
            "RaspberryPi 3",
            "ODROID-HC2",
        ]
        .into_iter()
        .zip(figures)
        {
            shows(cell(&t, row, "Download"), figure);
        }
    }
    let fs = table(&md, "EXT4 vs BTRFS LZO through Samba");
    for (row, write, read) in [
        ("Orange Pi Zero Plus, USB, EXT4", "33.20", "28.80"),
        ("Orange Pi Zero Plus, USB, BTRFS LZO", "35.20", "47.90"),
        ("Orange Pi One Plus, USB, BTRFS LZO", "54.20", "61.10"),
        ("RaspberryPi 3, USB, EXT4", "8.900", "8.900"),
        ("RaspberryPi 3, USB, BTRFS LZO", "9.700", "11.20"),
        ("ODROID-HC2, USB, EXT4", "25.90", "23.30"),
        ("ODROID-HC2, SATA, EXT4", "104.4", "111.7"),
        ("ODROID-HC2, SATA, BTRFS LZO", "87.80", "105.4"),
    ] {
        shows(cell(&fs, row, "Write MB/s"), write);
        shows(cell(&fs, row, "Read MB/s"), read);
    }
    for title in ["HTTP", "NFS", "Samba"] {
        assert_eq!(table(&md, title).len(), 5, "{title}: four boards");
    }
}
