//! Matrix expansion and cell keys: scenario -> the list of cells to measure. Pure, no I/O.
//!
//! A cell is one (image, board, storage, filesystem, test). Cells that cannot apply
//! (a storage the board lacks, formatting a storage with no device) are kept aside
//! with the reason, so `plan` can say why they are not there.

pub mod canonical;
pub mod diff;
pub mod glob;
pub mod key;
pub mod schedule;
pub mod select;
pub mod state;

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use serde_json::Value;

pub use key::CellKey;

use crate::model::{
    AS_IS, Board, BoardName, CellPattern, Filesystem, Flash, FsName, ImageName, ImageSource,
    Method, ParamValue, Recipe, Scenario, StorageName, StorageRole, TestName, Workspace,
};

/// Where a cell sits in the matrix. `storage` and `filesystem` are None for tests
/// that do not touch storage.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, serde::Deserialize)]
pub struct Address {
    pub image: ImageName,
    pub board: BoardName,
    pub storage: Option<StorageName>,
    pub filesystem: Option<FsName>,
    pub test: TestName,
}

impl Address {
    /// `test on board [storage/filesystem] (image)`, for messages.
    pub fn label(&self) -> String {
        let mut s = format!("{} on {}", self.test, self.board);
        if let Some(st) = &self.storage {
            s.push_str(&format!(" {st}"));
            if let Some(fs) = &self.filesystem {
                s.push_str(&format!("/{fs}"));
            }
        }
        s.push_str(&format!(" ({})", self.image));
        s
    }

    /// Whether this address matches a pattern (globs; an absent axis matches all).
    pub fn matches(&self, p: &CellPattern) -> bool {
        fn axis(p: &Option<String>, v: Option<&str>) -> bool {
            match (p, v) {
                (None, _) => true,
                (Some(p), Some(v)) => glob::matches(p, v),
                // A pattern on storage never matches a cell without storage.
                (Some(_), None) => false,
            }
        }
        axis(&p.image, Some(self.image.as_str()))
            && axis(&p.board, Some(self.board.as_str()))
            && axis(&p.storage, self.storage.as_ref().map(|s| s.as_str()))
            && axis(&p.filesystem, self.filesystem.as_ref().map(|s| s.as_str()))
            && axis(&p.test, Some(self.test.as_str()))
    }
}

/// One cell to measure: its address, identity and everything apply needs.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Cell {
    pub key: CellKey,
    pub address: Address,
    /// The JSON form of the inputs the key hashes (`key::Input::to_json`); stored as
    /// `cell.json`'s `inputs`.
    pub inputs: Value,
    /// Template parameters: the recipe's defaults with the scenario's overrides.
    pub params: BTreeMap<String, ParamValue>,
    pub method: Method,
    /// The filesystem to prepare on the cell's storage (`as-is` prepares nothing).
    pub filesystem: Option<Filesystem>,
}

impl Cell {
    /// The store directory name: key, then test and board for people browsing it.
    pub fn dir_name(&self) -> String {
        format!("{}-{}-{}", self.key, self.address.test, self.address.board)
    }
}

/// A combination the matrix names that cannot be measured, and why.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Skipped {
    pub address: Address,
    pub reason: String,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Plan {
    pub cells: Vec<Cell>,
    pub skipped: Vec<Skipped>,
}

fn as_is() -> Filesystem {
    Filesystem {
        name: FsName::new(AS_IS),
        kind: AS_IS.to_string(),
        mkfs_options: Vec::new(),
        mount_options: Vec::new(),
    }
}

/// The most cells a matrix may expand to unless raised (`--max-cells`): more is surely
/// a mistake, and expanding it would take the machine's memory.
pub const DEFAULT_MAX_CELLS: u64 = 100_000;

/// The axes of one block of combinations: the matrix itself, or one `include`.
struct Block {
    images: Vec<ImageName>,
    boards: Vec<BoardName>,
    storages: Vec<String>,
    filesystems: Vec<FsName>,
    tests: Vec<TestName>,
}

/// The matrix's blocks: the matrix, then each `include`, which adds combinations back
/// (even excluded ones), with each unnamed axis taking the matrix's values, as CI
/// matrices do.
fn blocks(
    boards: &BTreeMap<BoardName, Board>,
    recipes: &BTreeMap<TestName, Recipe>,
    scenario: &Scenario,
) -> Vec<Block> {
    let m = &scenario.matrix;
    let mut out = vec![Block {
        images: m.image.clone(),
        boards: m.board.clone(),
        storages: m.storage.clone(),
        filesystems: m.filesystem.clone(),
        tests: m.test.clone(),
    }];
    for inc in &m.include {
        let pick = |p: &Option<String>, all: Vec<String>, known: Vec<String>| -> Vec<String> {
            match p {
                None => all,
                Some(p) => known.into_iter().filter(|k| glob::matches(p, k)).collect(),
            }
        };
        let mut known_fs: Vec<String> = scenario.filesystems.keys().map(|x| x.0.clone()).collect();
        known_fs.push(AS_IS.to_string());
        out.push(Block {
            images: pick(
                &inc.image,
                m.image.iter().map(|x| x.0.clone()).collect(),
                scenario.images.keys().map(|x| x.0.clone()).collect(),
            )
            .into_iter()
            .map(ImageName)
            .collect(),
            boards: pick(
                &inc.board,
                m.board.iter().map(|x| x.0.clone()).collect(),
                boards.keys().map(|x| x.0.clone()).collect(),
            )
            .into_iter()
            .map(BoardName)
            .collect(),
            storages: match &inc.storage {
                None => m.storage.clone(),
                Some(p) => vec![p.clone()],
            },
            filesystems: pick(
                &inc.filesystem,
                m.filesystem.iter().map(|x| x.0.clone()).collect(),
                known_fs,
            )
            .into_iter()
            .map(FsName)
            .collect(),
            tests: pick(
                &inc.test,
                m.test.iter().map(|x| x.0.clone()).collect(),
                recipes.keys().map(|x| x.0.clone()).collect(),
            )
            .into_iter()
            .map(TestName)
            .collect(),
        });
    }
    out
}

/// How many cells a matrix can expand to at most, counted without expanding it: the
/// combinations of every block, before `exclude`, with storage globs resolved per
/// board. `axes` describes the sizes for a message.
#[derive(Clone, Debug, PartialEq)]
pub struct Bound {
    pub cells: u128,
    pub axes: String,
}

pub fn bound(
    boards: &BTreeMap<BoardName, Board>,
    recipes: &BTreeMap<TestName, Recipe>,
    scenario: &Scenario,
) -> Bound {
    let all = blocks(boards, recipes, scenario);
    let mut cells: u128 = 0;
    for b in &all {
        let (with, without): (Vec<_>, Vec<_>) = b
            .tests
            .iter()
            .filter_map(|t| recipes.get(t))
            .partition(|r| r.uses_storage);
        for board in b.boards.iter().filter_map(|n| boards.get(n)) {
            let storages: u128 = b
                .storages
                .iter()
                .map(|p| {
                    board
                        .storage
                        .iter()
                        .filter(|s| glob::matches(p, s.name.as_str()))
                        .count() as u128
                })
                .sum();
            let per_image = (without.len() as u128).saturating_add(
                (with.len() as u128)
                    .saturating_mul(storages)
                    .saturating_mul(b.filesystems.len() as u128),
            );
            cells = cells.saturating_add((b.images.len() as u128).saturating_mul(per_image));
        }
    }
    let m = &all[0];
    let mut axes = format!(
        "image {} x board {} x storage {} x filesystem {} x test {}",
        m.images.len(),
        m.boards.len(),
        m.storages.len(),
        m.filesystems.len(),
        m.tests.len()
    );
    if all.len() > 1 {
        axes.push_str(&format!(", plus {} include(s)", all.len() - 1));
    }
    Bound { cells, axes }
}

/// Expands one scenario's matrix into cells, in a stable order (board, then the
/// matrix's own order of image, test, storage, filesystem), so that plans and run
/// orders are reproducible. Callers bound the size first (`bound`).
pub fn expand(ws: &Workspace, scenario: &Scenario) -> Plan {
    expand_in(&ws.boards, &ws.recipes, scenario)
}

/// `expand`, given the boards and recipes rather than a whole workspace.
pub fn expand_in(
    boards: &BTreeMap<BoardName, Board>,
    recipes: &BTreeMap<TestName, Recipe>,
    scenario: &Scenario,
) -> Plan {
    let m = &scenario.matrix;
    let mut candidates: BTreeSet<Address> = BTreeSet::new();
    let mut order: Vec<Address> = Vec::new();
    let mut skipped = Vec::new();

    for (i, block) in blocks(boards, recipes, scenario).iter().enumerate() {
        let excludes = if i == 0 { m.exclude.as_slice() } else { &[] };
        for board_name in &block.boards {
            let Some(board) = boards.get(board_name) else {
                continue;
            };
            for image in &block.images {
                for test in &block.tests {
                    let Some(recipe) = recipes.get(test) else {
                        continue;
                    };
                    let mut push = |a: Address| {
                        if !excludes.iter().any(|p| a.matches(p)) && candidates.insert(a.clone()) {
                            order.push(a);
                        }
                    };
                    if !recipe.uses_storage {
                        push(Address {
                            image: image.clone(),
                            board: board_name.clone(),
                            storage: None,
                            filesystem: None,
                            test: test.clone(),
                        });
                        continue;
                    }
                    for pattern in &block.storages {
                        let matching: Vec<_> = board
                            .storage
                            .iter()
                            .filter(|s| glob::matches(pattern, s.name.as_str()))
                            .collect();
                        if matching.is_empty() {
                            skipped.push(Skipped {
                                address: Address {
                                    image: image.clone(),
                                    board: board_name.clone(),
                                    storage: Some(StorageName::new(pattern.clone())),
                                    filesystem: None,
                                    test: test.clone(),
                                },
                                reason: format!(
                                    "board {board_name} has no storage matching `{pattern}`"
                                ),
                            });
                        }
                        for st in matching {
                            for fs in &block.filesystems {
                                push(Address {
                                    image: image.clone(),
                                    board: board_name.clone(),
                                    storage: Some(st.name.clone()),
                                    filesystem: Some(fs.clone()),
                                    test: test.clone(),
                                });
                            }
                        }
                    }
                }
            }
        }
    }

    let mut cells = Vec::with_capacity(order.len());
    for a in order {
        match make_cell(boards, recipes, scenario, &a) {
            Ok(c) => cells.push(c),
            Err(reason) => skipped.push(Skipped { address: a, reason }),
        }
    }
    // Stable and grouped by board: each board's worker walks its cells in this order.
    cells.sort_by(|x, y| x.address.board.cmp(&y.address.board));
    Plan { cells, skipped }
}

/// Builds a cell, or says why this combination cannot be measured.
fn make_cell(
    boards: &BTreeMap<BoardName, Board>,
    recipes: &BTreeMap<TestName, Recipe>,
    scenario: &Scenario,
    a: &Address,
) -> Result<Cell, String> {
    let board = boards
        .get(&a.board)
        .ok_or_else(|| format!("unknown board {}", a.board))?;
    let recipe = recipes
        .get(&a.test)
        .ok_or_else(|| format!("unknown test {}", a.test))?;
    let image = scenario
        .images
        .get(&a.image)
        .ok_or_else(|| format!("unknown image {}", a.image))?;
    if !matches!(image.source, ImageSource::Installed) {
        if board.flash == Flash::None {
            return Err(format!(
                "image {} must be flashed, but board {} has no [flash] method",
                a.image, a.board
            ));
        }
        // apply would measure the OS already on the board under this image's key.
        return Err(format!(
            "flashing is not implemented yet; image {} cannot be verified on board {}",
            a.image, a.board
        ));
    }
    let storage = match &a.storage {
        None => None,
        Some(name) => Some(
            board
                .storage(name)
                .ok_or_else(|| format!("board {} has no storage {name}", a.board))?,
        ),
    };
    if let Some(st) = storage
        && recipe.uses_device
        && st.device.is_none()
    {
        return Err(format!(
            "test {} reads the storage's block device, but storage {} declares no device",
            a.test, st.name
        ));
    }
    let filesystem = match &a.filesystem {
        None => None,
        Some(fs) if fs.as_str() == AS_IS => Some(as_is()),
        Some(fs) => {
            let f = scenario
                .filesystems
                .get(fs)
                .ok_or_else(|| format!("unknown filesystem {fs}"))?;
            let st = storage.ok_or("a filesystem needs a storage")?;
            if st.role == StorageRole::Boot {
                return Err(format!(
                    "storage {} is the boot storage; benchpipe never formats it",
                    st.name
                ));
            }
            if st.device.is_none() {
                return Err(format!(
                    "storage {} has no device, so it cannot be formatted as {fs}",
                    st.name
                ));
            }
            Some(f.clone())
        }
    };
    let mut params = recipe.params.clone();
    if let Some(over) = scenario.params.get(&a.test) {
        for (k, v) in over {
            params.insert(k.clone(), v.clone());
        }
    }
    let inputs = key::cell_inputs(
        image,
        board,
        storage,
        filesystem.as_ref(),
        recipe,
        &params,
        &scenario.method,
    );
    Ok(Cell {
        key: CellKey::of(&inputs),
        address: a.clone(),
        inputs: inputs.to_json(),
        params,
        method: scenario.method.clone(),
        filesystem,
    })
}

#[cfg(test)]
pub(crate) mod fixtures {
    //! A small workspace built in code, independent of the config parser, so that the
    //! golden keys pin the encoding alone.

    use std::collections::BTreeMap;
    use std::path::PathBuf;
    use std::time::Duration;

    use crate::model::*;

    pub fn recipe(name: &str, uses_storage: bool) -> Recipe {
        Recipe {
            name: TestName::new(name),
            file: PathBuf::from(format!("pipeline/{name}.toml")),
            description: format!("{name} test"),
            needs: Default::default(),
            facts: Vec::new(),
            exclusive: vec![],
            uses_storage,
            uses_device: false,
            option_params: Default::default(),
            params: BTreeMap::from([("size".to_string(), ParamValue::Str("64M".into()))]),
            setup: vec![],
            run: Step {
                on: Side::Board,
                command: "fio --size={{ size }} --filename={{ dir }}/f".into(),
                timeout: Some(Duration::from_secs(60)),
            },
            parser: ParserSpec::named("fio-json").expect("a registered parser"),
            teardown: vec![],
            services: vec![],
            metrics: vec![MetricSpec {
                name: "random_read".into(),
                from: "jobs[jobname=randread].read.bw_bytes".into(),
                scale: 1e-6,
                unit: "MB/s".into(),
                better: Better::Higher,
                primary: true,
            }],
        }
    }

    pub fn board(name: &str, model: &str) -> Board {
        Board {
            name: BoardName::new(name),
            file: PathBuf::from(format!("boards/{name}.toml")),
            model: model.into(),
            arch: Some("aarch64".into()),
            memory: None,
            connection: Connection::Ssh(SshTarget {
                host: "10.0.0.1".into(),
                port: None,
                user: Some("pi".into()),
                identity: None,
                password_env: None,
                known_hosts: None,
            }),
            flash: Flash::None,
            power: None,
            storage: vec![
                Storage {
                    name: StorageName::new("sd"),
                    role: StorageRole::Boot,
                    device: Some("/dev/mmcblk0".into()),
                    path: "/var/tmp/bp".into(),
                    model: Some("Samsung Evo+ 32GB".into()),
                },
                Storage {
                    name: StorageName::new("usb"),
                    role: StorageRole::Scratch,
                    device: Some("/dev/disk/by-id/usb-Kingston".into()),
                    path: "/mnt/usb".into(),
                    model: None,
                },
            ],
            workdir: "/var/tmp/benchpipe".into(),
            thermal: None,
        }
    }

    pub fn workspace() -> Workspace {
        let mut ws = Workspace::default();
        for b in [
            board("pi-1", "Raspberry Pi 4"),
            board("pi-2", "Raspberry Pi 4"),
        ] {
            ws.boards.insert(b.name.clone(), b);
        }
        for r in [recipe("disk-4k", true), recipe("xz", false)] {
            ws.recipes.insert(r.name.clone(), r);
        }
        let scenario = Scenario {
            name: "study".into(),
            file: PathBuf::from("scenarios/study.toml"),
            title: "A study".into(),
            description: None,
            images: BTreeMap::from([(
                ImageName::new("installed"),
                Image {
                    name: ImageName::new("installed"),
                    source: ImageSource::Installed,
                    expect: Default::default(),
                },
            )]),
            filesystems: BTreeMap::from([(
                FsName::new("ext4"),
                Filesystem {
                    name: FsName::new("ext4"),
                    kind: "ext4".into(),
                    mkfs_options: vec![],
                    mount_options: vec!["noatime".into()],
                },
            )]),
            matrix: Matrix {
                image: vec![ImageName::new("installed")],
                board: vec![BoardName::new("pi-1"), BoardName::new("pi-2")],
                storage: vec!["*".into()],
                filesystem: vec![FsName::new(AS_IS), FsName::new("ext4")],
                test: vec![TestName::new("disk-4k"), TestName::new("xz")],
                exclude: vec![],
                include: vec![],
            },
            method: Method::default(),
            params: BTreeMap::new(),
            compare: vec![],
        };
        ws.scenarios.push(scenario);
        ws
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    use crate::model::{Connection, Side, SshTarget};

    fn keys(ws: &Workspace) -> Vec<String> {
        expand(ws, &ws.scenarios[0])
            .cells
            .iter()
            .map(|c| format!("{} {}", c.key, c.address.label()))
            .collect()
    }

    #[test]
    fn expansion_collapses_storage_for_tests_that_do_not_use_it_and_skips_what_cannot_apply() {
        let ws = fixtures::workspace();
        let plan = expand(&ws, &ws.scenarios[0]);
        // Per board: disk-4k on sd/as-is, usb/as-is, usb/ext4 (sd/ext4 is boot: skipped), xz once.
        assert_eq!(plan.cells.len(), 8, "{:#?}", keys(&ws));
        assert_eq!(plan.skipped.len(), 2);
        assert!(
            plan.skipped[0].reason.contains("boot storage"),
            "{:?}",
            plan.skipped
        );
    }

    #[test]
    fn exclude_removes_and_include_adds_back_like_a_ci_matrix() {
        let mut ws = fixtures::workspace();
        let m = &mut ws.scenarios[0].matrix;
        m.exclude.push(CellPattern {
            board: Some("pi-*".into()),
            filesystem: Some("ext4".into()),
            ..CellPattern::default()
        });
        m.include.push(CellPattern {
            board: Some("pi-2".into()),
            storage: Some("usb".into()),
            filesystem: Some("ext4".into()),
            test: Some("disk-4k".into()),
            ..CellPattern::default()
        });
        let labels: Vec<String> = expand(&ws, &ws.scenarios[0])
            .cells
            .iter()
            .map(|c| c.address.label())
            .collect();
        assert_eq!(
            labels,
            [
                "disk-4k on pi-1 sd/as-is (installed)",
                "disk-4k on pi-1 usb/as-is (installed)",
                "xz on pi-1 (installed)",
                "disk-4k on pi-2 sd/as-is (installed)",
                "disk-4k on pi-2 usb/as-is (installed)",
                "xz on pi-2 (installed)",
                "disk-4k on pi-2 usb/ext4 (installed)",
            ]
        );
    }

    #[test]
    fn a_storage_the_board_lacks_and_an_image_it_cannot_flash_are_skipped_with_reasons() {
        let mut ws = fixtures::workspace();
        ws.boards
            .get_mut(&"pi-2".into())
            .unwrap()
            .storage
            .truncate(1);
        let s = &mut ws.scenarios[0];
        s.matrix.storage = vec!["usb".into()];
        s.images.insert(
            "raspios".into(),
            crate::model::Image {
                name: "raspios".into(),
                source: ImageSource::Url {
                    url: "https://example.invalid/raspios.img.xz".into(),
                    sha256: "0".repeat(64),
                },
                expect: Default::default(),
            },
        );
        s.matrix.image.push("raspios".into());
        let plan = expand(&ws, &ws.scenarios[0]);
        let reasons: Vec<&str> = plan.skipped.iter().map(|s| s.reason.as_str()).collect();
        assert!(
            reasons.contains(&"board pi-2 has no storage matching `usb`"),
            "{reasons:?}"
        );
        assert!(
            reasons
                .iter()
                .any(|r| r.contains("must be flashed, but board pi-1 has no [flash]")),
            "{reasons:?}"
        );
        assert!(
            plan.cells
                .iter()
                .all(|c| c.address.image.as_str() == "installed")
        );
    }

    #[test]
    fn an_image_on_a_board_with_flash_is_skipped_until_flashing_exists() {
        let mut ws = fixtures::workspace();
        ws.boards.get_mut(&"pi-1".into()).unwrap().flash = crate::model::Flash::Dd {
            via: "helper".into(),
            device: "/dev/mmcblk0".into(),
        };
        let s = &mut ws.scenarios[0];
        s.images.insert(
            "raspios".into(),
            crate::model::Image {
                name: "raspios".into(),
                source: ImageSource::Url {
                    url: "https://example.invalid/raspios.img.xz".into(),
                    sha256: "0".repeat(64),
                },
                expect: crate::model::Expectations {
                    os_release: BTreeMap::from([("ID".into(), "raspbian".into())]),
                    uname_m: None,
                },
            },
        );
        s.matrix.image.push("raspios".into());
        let plan = expand(&ws, &ws.scenarios[0]);
        assert!(
            plan.skipped.iter().any(|s| s.reason
                == "flashing is not implemented yet; image raspios cannot be verified on board pi-1"),
            "{:?}",
            plan.skipped
        );
        assert!(
            plan.cells
                .iter()
                .all(|c| c.address.image.as_str() == "installed")
        );
    }

    #[test]
    fn a_test_reading_the_device_skips_storage_without_one() {
        let mut ws = fixtures::workspace();
        ws.recipes.get_mut(&"disk-4k".into()).unwrap().uses_device = true;
        for b in ws.boards.values_mut() {
            b.storage[1].device = None;
        }
        ws.scenarios[0].matrix.filesystem = vec![FsName::new(AS_IS)];
        let plan = expand(&ws, &ws.scenarios[0]);
        let storages: Vec<_> = plan
            .cells
            .iter()
            .filter_map(|c| c.address.storage.as_ref().map(|s| s.to_string()))
            .collect();
        assert_eq!(storages, ["sd", "sd"]);
        assert!(
            plan.skipped
                .iter()
                .any(|s| s.reason == "test disk-4k reads the storage's block device, but storage usb declares no device"),
            "{:?}",
            plan.skipped
        );
    }

    #[test]
    fn golden_keys() {
        // Pinned: a change here means every stored cell gets a new key. Do it only on
        // purpose, with a new `key::ENCODING`.
        //
        // Changed once, from benchpipe-cell-v1 to v2: v1 hashed serde_json's output and
        // relied on its `preserve_order` feature staying off, which any dependency can
        // switch on; and `idle`, `services` and `parse_regex` had been added to v1
        // without a bump. v2 is `canonical::CanonicalWriter`, with every field always present.
        // The v1 keys were ada66502..., dc38ed9d..., e897d2d9..., 968237b3...,
        // 96154fbe..., fdd0a64f..., e50c25ec..., c845deb0... in this order.
        let ws = fixtures::workspace();
        let got = keys(&ws);
        let want = [
            "b1e2564f2786a07a798e25db6c93fe94 disk-4k on pi-1 sd/as-is (installed)",
            "18ce5500e7d7a3eb8e821f47d4fdaf29 disk-4k on pi-1 usb/as-is (installed)",
            "726dd468405936b0343482645b544bcc disk-4k on pi-1 usb/ext4 (installed)",
            "a90e31b259b4b6ae7ee6c152059f65d7 xz on pi-1 (installed)",
            "72c72452d4f9e51d758080169c259fc9 disk-4k on pi-2 sd/as-is (installed)",
            "044bb9060db0e25c174271621171a9a2 disk-4k on pi-2 usb/as-is (installed)",
            "894fe5cba0e732746a16c54ee6bcde7a disk-4k on pi-2 usb/ext4 (installed)",
            "ba351674369e6f36da59b62625737694 xz on pi-2 (installed)",
        ];
        assert_eq!(got, want);
    }

    #[test]
    fn golden_canonical_bytes() {
        // The whole encoding of one cell, so that a changed key shows which field moved.
        // Its key, computed outside the project:
        // python3 -c "import hashlib,sys; print(hashlib.sha256(b'benchpipe-cell-v2\x00'
        //   + sys.stdin.buffer.read()).hexdigest()[:32])" < bytes
        let ws = fixtures::workspace();
        let scenario = &ws.scenarios[0];
        let board = &ws.boards[&"pi-1".into()];
        let recipe = &ws.recipes[&"xz".into()];
        let inputs = key::cell_inputs(
            &scenario.images[&"installed".into()],
            board,
            None,
            None,
            recipe,
            &recipe.params,
            &scenario.method,
        );
        let want = concat!(
            "r6:",
            "s5:images19:installed:installed",
            "s5:boardr3:s4:names4:pi-1s5:models14:Raspberry Pi 4s4:archs7:aarch64",
            "s7:storagen",
            "s10:filesystemn",
            "s4:testr9:",
            "s4:names2:xz",
            "s5:setupl0:",
            "s3:runr2:s2:ons5:boards7:commands44:fio --size={{ size }} --filename={{ dir }}/f",
            "s8:teardownl0:",
            "s6:paramsm1:s4:sizes3:64M",
            "s6:parserr2:s4:names8:fio-jsons7:versioni1;",
            "s11:parse_regexn",
            "s7:metricsl1:r3:s4:names11:random_read",
            "s4:froms36:jobs[jobname=randread].read.bw_bytes",
            "s5:scalef3eb0c6f7a0b5ed8d", // 1e-6
            "s8:servicesl0:",
            "s6:methodr4:",
            "s8:cooldowns4:none",
            "s4:idlen",
            "s11:warmup_runsi1;",
            "s8:warmup_sn",
        );
        assert_eq!(
            String::from_utf8(key::canonical_bytes(&inputs)).unwrap(),
            want
        );
        assert_eq!(
            CellKey::of(&inputs).as_str(),
            "a90e31b259b4b6ae7ee6c152059f65d7",
            "the key of xz on pi-1 in golden_keys"
        );
    }

    #[test]
    fn keys_ignore_addresses_and_credentials_but_not_what_changes_numbers() {
        let base = fixtures::workspace();
        let k0 = keys(&base);

        let mut ws = base.clone();
        for b in ws.boards.values_mut() {
            b.connection = Connection::Ssh(SshTarget {
                host: "192.0.2.7".into(),
                port: Some(2222),
                user: Some("root".into()),
                identity: Some("/root/.ssh/other".into()),
                password_env: Some("PW".into()),
                known_hosts: None,
            });
            b.file = "elsewhere/b.toml".into();
            b.workdir = "/other".into();
            b.storage[1].device = Some("/dev/loop7".into());
            b.storage[1].path = "/mnt/elsewhere".into();
        }
        ws.scenarios[0].method.runs.min = 10;
        ws.scenarios[0].method.runs.max = 20;
        ws.scenarios[0].method.validity.hot_celsius = 70.0;
        ws.scenarios[0].title = "Another title".into();
        ws.scenarios[0].file = "scenarios/renamed.toml".into();
        for r in ws.recipes.values_mut() {
            r.file = "pipeline/elsewhere.toml".into();
            r.description = "described otherwise".into();
            r.run.timeout = Some(Duration::from_secs(5));
        }
        assert_eq!(
            keys(&ws),
            k0,
            "addresses, credentials, run counts, timeouts, titles and file names are not inputs"
        );

        type Change = Box<dyn Fn(&mut Workspace)>;
        let changes: Vec<(&str, Change)> = vec![
            (
                "recipe text",
                Box::new(|w| {
                    w.recipes
                        .get_mut(&"disk-4k".into())
                        .unwrap()
                        .run
                        .command
                        .push_str(" --direct=1")
                }),
            ),
            (
                "board model",
                Box::new(|w| {
                    w.boards.get_mut(&"pi-1".into()).unwrap().model = "Raspberry Pi 5".into()
                }),
            ),
            (
                "storage model",
                Box::new(|w| {
                    w.boards.get_mut(&"pi-1".into()).unwrap().storage[1].model =
                        Some("Samsung T7".into())
                }),
            ),
            (
                "mount options",
                Box::new(|w| {
                    w.scenarios[0]
                        .filesystems
                        .get_mut(&"ext4".into())
                        .unwrap()
                        .mount_options = vec![]
                }),
            ),
            (
                "warm-up",
                Box::new(|w| w.scenarios[0].method.warmup.runs = 2),
            ),
            (
                "params",
                Box::new(|w| {
                    w.scenarios[0].params.insert(
                        "disk-4k".into(),
                        [(
                            "size".to_string(),
                            crate::model::ParamValue::Str("128M".into()),
                        )]
                        .into(),
                    );
                }),
            ),
            (
                "cool-down",
                Box::new(|w| {
                    w.scenarios[0].method.cooldown = crate::model::Cooldown::Fixed {
                        duration: Duration::from_secs(1),
                    }
                }),
            ),
            (
                "idle gate",
                Box::new(|w| {
                    w.scenarios[0].method.idle = Some(crate::model::IdleGate {
                        load_below: 0.5,
                        hold: Duration::from_secs(30),
                        max: Duration::from_secs(600),
                    })
                }),
            ),
            (
                "services",
                Box::new(|w| {
                    w.recipes.get_mut(&"xz".into()).unwrap().services =
                        vec![crate::model::ServiceSpec {
                            name: "iperf3".into(),
                            on: Side::Controller,
                            command: "iperf3 -s".into(),
                            ready: None,
                            ready_timeout: Duration::from_secs(10),
                        }]
                }),
            ),
            (
                "metric scale",
                Box::new(|w| w.recipes.get_mut(&"xz".into()).unwrap().metrics[0].scale = 1e-3),
            ),
        ];
        for (what, change) in changes {
            let mut ws = base.clone();
            change(&mut ws);
            let k = keys(&ws);
            let differ = k.iter().zip(&k0).filter(|(a, b)| a != b).count();
            assert!(differ > 0, "changing the {what} must change some keys");
        }
    }
}
