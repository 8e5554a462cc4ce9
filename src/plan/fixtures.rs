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
        source: RecipeSource::default(),
        description: format!("{name} test"),
        needs: BTreeMap::default(),
        facts: Vec::new(),
        exclusive: vec![],
        uses_storage,
        uses_device: false,
        uses_addresses: false,
        raw_device: false,
        uses_network: false,
        requires: vec![],
        option_params: std::collections::BTreeSet::new(),
        param_patterns: BTreeMap::default(),
        series: false,
        tmpfs: None,
        before_run: Vec::new(),
        params: BTreeMap::from([("size".to_string(), ParamValue::Str("64M".into()))]),
        setup: vec![],
        setup_after_services: vec![],
        secrets: vec![],
        run: Step {
            on: Side::Board,
            command: "fio --size={{ size }} --filename={{ dir }}/f".into(),
            timeout: Some(Duration::from_secs(60)),
            input: None,
        },
        run_per_member: false,
        parser: ParserSpec::named("fio-json").expect("a registered parser"),
        teardown: vec![],
        services: vec![],
        metrics: vec![MetricSpec {
            name: "random_read".into(),
            label: None,
            from: "jobs[jobname=randread].read.bw_bytes".into(),
            scale: 1e-6,
            unit: "MB/s".into(),
            better: Better::Higher,
            primary: true,
            derive: None,
            member: MemberMetric::Whole,
            flag: None,
        }],
    }
}

pub fn board(name: &str, model: &str) -> Board {
    Board {
        name: BoardName::new(name),
        file: PathBuf::from(format!("boards/{name}.toml")),
        model: model.into(),
        arch: vec!["aarch64".into()],
        memory: None,
        memory_mib: None,
        connection: Connection::Ssh(SshTarget {
            host: "10.0.0.1".into(),
            port: None,
            user: Some("pi".into()),
            identity: None,
            password_env: None,
            known_hosts: None,
            ..SshTarget::default()
        }),
        flash: Flash::None,
        power: None,
        meter: None,
        storage: vec![
            Storage {
                name: StorageName::new("sd"),
                role: StorageRole::Boot,
                device: Some("/dev/mmcblk0".into()),
                path: "/var/tmp/bp".into(),
                model: Some("Samsung Evo+ 32GB".into()),
                uas: None,
                driver: None,
                serial: None,
                size_bytes: None,
            },
            Storage {
                name: StorageName::new("usb"),
                role: StorageRole::Scratch,
                device: Some("/dev/disk/by-id/usb-Kingston".into()),
                path: "/mnt/usb".into(),
                model: None,
                uas: None,
                driver: None,
                serial: None,
                size_bytes: None,
            },
        ],
        network: Vec::new(),
        workdir: "/var/tmp/benchpipe".into(),
        thermal: None,
        accept_new_host_key: false,
        boot_cmdline: None,
        health: Vec::new(),
        labgrid: None,
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
                expect: Expectations::default(),
                firstboot: None,
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
            board_patterns: vec!["pi-*".into()],
            storage: vec!["*".into()],
            network: vec![],
            filesystem: vec![FsName::new(AS_IS), FsName::new("ext4")],
            test: vec![TestName::new("disk-4k"), TestName::new("xz")],
            exclude: vec![],
            include: vec![],
        },
        method: Method::default(),
        params: BTreeMap::new(),
        compare: vec![],
        clusters: BTreeMap::new(),
        report: ReportSpec::default(),
        precision: Precision::default(),
    };
    ws.scenarios.push(scenario);
    ws
}
