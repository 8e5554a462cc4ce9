//! The validated model: what boards, scenarios and recipes mean once `config/` has checked them.
//!
//! Everything downstream (plan, apply, report) sees only these types, never raw TOML.
//! Names are typed so that a board name cannot be passed where a test name is expected.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

mod cluster;
mod firstboot;
pub mod health;
mod image_url;
pub mod labgrid;
mod meter;
mod recipe;
pub use cluster::*;
pub use firstboot::{
    Attachment, AuthorizedKey, DERIVATION, Firstboot, FirstbootKind, PasswordHash, Preparation,
    prepared_identity,
};
pub use image_url::{ImageUrl, REDACTED, redact as redact_url};
pub use meter::*;
mod packages;
pub use packages::PackageManager;
pub use recipe::*;
mod report;
pub use report::{Axis, ColumnSpec, Labels, Percent, ReportSpec, TableSpec, kept_apart};

macro_rules! typed_name {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub String);

        impl $name {
            pub fn new(s: impl Into<String>) -> Self {
                Self(s.into())
            }
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl From<&str> for $name {
            fn from(s: &str) -> Self {
                Self(s.to_string())
            }
        }
    };
}

/// Whether a text is usable as a name (a board's, a test's, an image's, a storage's, a
/// filesystem's, a network's): it appears in globs, paths of the store and shell
/// commands, so it is kept to a plain alphabet. `config` holds every file stem and table
/// key to it, and the store every name it reads back before one makes a path.
pub fn is_plain_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 100
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && !name.starts_with(['.', '-'])
        && !name.contains("..")
}

typed_name!(
    /// A board's name: the stem of its file in `boards/`.
    BoardName
);
typed_name!(
    /// A test's name: the stem of its recipe file in `pipeline/`.
    TestName
);
typed_name!(
    /// An OS image's name: a key of a scenario's `[images]` table.
    ImageName
);
typed_name!(
    /// A storage device's name, unique within one board.
    StorageName
);
typed_name!(
    /// A filesystem setup's name: `as-is` or a key of a scenario's `[filesystems]` table.
    FsName
);
typed_name!(
    /// A network interface's name as a board declares it (`lan`, `wifi`), unique within
    /// one board.
    NetworkName
);

/// The built-in filesystem that means "use the storage as it is, format nothing".
pub const AS_IS: &str = "as-is";

/// The filesystem kind that means "what the image gave us at the storage's path": the
/// root filesystem or any directory the image holds; never formatted, never unmounted,
/// its type recorded as a fact.
pub const AS_FLASHED: &str = "as-flashed";

/// The kinds a scenario's `[filesystems]` may declare: benchpipe's mkfs makes the first
/// four; `as-flashed` formats nothing.
pub const FS_KINDS: [&str; 5] = ["ext4", "btrfs", "xfs", "f2fs", AS_FLASHED];

/// Everything loaded for one invocation: the scenarios named on the command line and
/// the boards and recipes they can refer to.
#[derive(Clone, Debug, Default)]
pub struct Workspace {
    /// The directory holding `boards/`, `pipeline/`, `scenarios/`; relative paths in
    /// reports are taken from here so that no absolute path leaks into them.
    pub root: PathBuf,
    pub boards: BTreeMap<BoardName, Board>,
    pub recipes: BTreeMap<TestName, Recipe>,
    pub scenarios: Vec<Scenario>,
    /// Problems that do not stop the load (a broken board file no scenario uses),
    /// rendered for the terminal.
    pub warnings: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Board {
    pub name: BoardName,
    /// The file this board came from, relative to the workspace root.
    pub file: PathBuf,
    pub model: String,
    /// `arch`: the `uname -m` words the board's CPU can run (an image's `uname_m` must
    /// be one of them), in the file's order; empty when not declared.
    pub arch: Vec<String>,
    /// `memory` as written ("512 MiB").
    pub memory: Option<String>,
    /// `memory` in MiB: what `check` holds a tmpfs against.
    pub memory_mib: Option<u64>,
    pub connection: Connection,
    pub flash: Flash,
    pub power: Option<Power>,
    /// `[meter]`: where the board's watts are read, if anywhere.
    pub meter: Option<Meter>,
    pub storage: Vec<Storage>,
    /// `[[network]]`: the links tests can reach the board over; empty when it declares
    /// none (tests then reach it at its SSH host).
    pub network: Vec<Network>,
    /// Where benchpipe keeps its files on the board (corpus, sampler output).
    /// Distinct per board, because lab boards share one filesystem.
    pub workdir: String,
    /// Files whose content is a temperature in millidegrees Celsius (default
    /// `/sys/class/thermal/thermal_zone*/temp`).
    pub thermal: Option<String>,
    /// `[flash] accept_new_host_key`: a host key that changed is accepted, and recorded,
    /// only when connecting right after a flash benchpipe performed and verified.
    pub accept_new_host_key: bool,
    /// `[boot] cmdline`: the kernel command line file the UAS step edits
    /// (`/boot/firmware/cmdline.txt`); nothing else edits it, and without it nothing does.
    pub boot_cmdline: Option<String>,
    /// `[[health]]`: what the board must pass before its cells run.
    pub health: Vec<health::HealthCheck>,
    /// `labgrid`: the place apply acquires before the board's first step and releases
    /// after its last.
    pub labgrid: Option<labgrid::LabgridPlace>,
}

impl Board {
    pub fn storage(&self, name: &StorageName) -> Option<&Storage> {
        self.storage.iter().find(|s| &s.name == name)
    }

    pub fn network(&self, name: &NetworkName) -> Option<&Network> {
        self.network.iter().find(|n| &n.name == name)
    }
}

/// `[[network]]`: one link a board can be reached over (its wired LAN, its Wi-Fi).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Network {
    pub name: NetworkName,
    /// The address tests reach the board at over this link (`{{ host }}` in a cell of
    /// this network): an IPv4 address or a host name. An address, so never in a key.
    pub address: String,
    /// The board-side interface (`eth0`, `wlan0`) whose link facts are read.
    pub interface: String,
    /// `wired` or `wifi`, when declared.
    pub kind: Option<LinkKind>,
    /// A human description of the link ("100 Mbit/s LAN9514 over USB").
    pub model: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LinkKind {
    Wired,
    Wifi,
}

impl LinkKind {
    pub fn name(self) -> &'static str {
        match self {
            LinkKind::Wired => "wired",
            LinkKind::Wifi => "wifi",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
// One per board: its size does not matter, and boxing would only add noise to every
// construction.
#[allow(clippy::large_enum_variant)]
pub enum Connection {
    /// The controller itself; commands run through the local transport.
    Local,
    Ssh(SshTarget),
}

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct SshTarget {
    /// A host name, an address, or a `Host` alias from `~/.ssh/config`.
    pub host: String,
    pub port: Option<u16>,
    pub user: Option<String>,
    pub identity: Option<PathBuf>,
    /// The name of an environment variable holding a password; never the password.
    pub password_env: Option<String>,
    /// A known_hosts file to check against instead of `~/.ssh/known_hosts`.
    pub known_hosts: Option<PathBuf>,
    /// Bounds the TCP connect, the handshake and authentication; `None` means the
    /// transport's default (10 s).
    pub connect_timeout: Option<std::time::Duration>,
    /// How often a keepalive goes out while a command is silent; `None`: the default.
    pub keepalive: Option<std::time::Duration>,
    /// The host key to expect (`ssh-ed25519 AAAA...`), checked beside known_hosts.
    pub host_key: Option<String>,
    /// A jump host (`user@host:port`, or a `Host` alias), reached first; its own
    /// ProxyJump from `~/.ssh/config` is not followed.
    pub proxy_jump: Option<String>,
    /// `become = "sudo"`: every command runs as root through `sudo`.
    pub become_sudo: bool,
    /// The name of an environment variable holding the sudo password; never the password.
    pub sudo_password_env: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "method", rename_all = "lowercase")]
pub enum Flash {
    /// This board is never reflashed; only `installed` images apply to it.
    None,
    /// Turing Pi BMC: the image is put in `dir` on `via` (the BMC, reached over SSH),
    /// then `tpi flash --local -n NODE -i PATH` runs there.
    Tpi {
        via: String,
        node: u32,
        /// Where on the BMC the images go (its SD card on a real one).
        dir: String,
    },
    /// `dd` to a declared boot device over SSH on `via` (a helper host).
    Dd { via: String, device: String },
    /// A command template run on the controller, or on `via` (a board's name or an SSH
    /// destination) when given.
    Command {
        command: String,
        via: Option<String>,
    },
}

/// Where a `tpi` board's images go on the BMC unless `[flash] dir` says: its SD card.
pub const TPI_DEFAULT_DIR: &str = "/mnt/sdcard/benchpipe";

/// How long a board may take from its power cycle until SSH answers, by default.
pub const DEFAULT_BOOT_TIMEOUT: Duration = Duration::from_secs(300);

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Power {
    /// Command templates that power-cycle the board, switch it on, switch it off; each
    /// optional, but a board that flashes needs `cycle` or both `off` and `on`.
    pub cycle: Option<String>,
    pub on: Option<String>,
    pub off: Option<String>,
    /// Where the templates run: the controller (`None`), or a board's name or an SSH
    /// destination (`[user@]host[:port]` or a `~/.ssh/config` alias).
    pub via: Option<String>,
    /// How long the board may take from its power cycle until SSH answers.
    #[serde(with = "secs")]
    pub boot_timeout: Duration,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StorageRole {
    /// Holds the OS; never formatted by benchpipe.
    Boot,
    /// May be formatted for filesystem cells.
    Scratch,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Storage {
    pub name: StorageName,
    pub role: StorageRole,
    /// A block device (`/dev/disk/by-id/...`); required to format it.
    pub device: Option<String>,
    /// Where tests put their files: a directory on the board, or the mount point
    /// benchpipe uses when it formats `device`.
    pub path: String,
    /// A human description of the medium ("Samsung Evo+ 32GB").
    pub model: Option<String>,
    /// `uas = true | false`: the driver the USB device must run under for this
    /// storage's cells (the UAS board-state step); `None` leaves the board as it is.
    pub uas: Option<Uas>,
    /// `driver = "uas" | "usb-storage"`: the driver this storage's USB device must be
    /// bound to when its cells start (two cases, one with UASP and one without, each
    /// declared as it is); nothing on the board is changed for it. `None`: any.
    pub driver: Option<String>,
    /// `serial`: the device's serial number; a device reporting another is never
    /// formatted or measured (`storage::identity`).
    pub serial: Option<String>,
    /// `size`: the device's size in bytes; a device of another size is never formatted
    /// or measured.
    pub size_bytes: Option<u64>,
}

/// A storage's `uas` setting and the USB device it applies to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Uas {
    /// true: the `uas` driver (no quirk); false: `usb-storage` (`usb-storage.quirks=VID:PID:u`).
    pub enabled: bool,
    /// `usb_id = "vvvv:pppp"` (lower case); `None`: read from the board's sysfs.
    pub usb_id: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Scenario {
    /// The file stem; names the report directory. Not part of any cell key.
    pub name: String,
    pub file: PathBuf,
    pub title: String,
    pub description: Option<String>,
    pub images: BTreeMap<ImageName, Image>,
    pub filesystems: BTreeMap<FsName, Filesystem>,
    pub matrix: Matrix,
    pub method: Method,
    /// Per-test parameter overrides.
    pub params: BTreeMap<TestName, BTreeMap<String, ParamValue>>,
    pub compare: Vec<Compare>,
    /// `[clusters.NAME]`: systems of several boards, values of the board axis.
    pub clusters: BTreeMap<BoardName, Cluster>,
    /// `[report]`'s labels and tables.
    pub report: ReportSpec,
    /// `[report] noise_band` and `wide_ci`: how the report judges its numbers.
    pub precision: Precision,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Image {
    pub name: ImageName,
    pub source: ImageSource,
    /// What the booted OS must show; checks, not cell-key inputs (the sha256 already is).
    pub expect: Expectations,
    /// `[images.NAME.firstboot]`: what a flash writes into the boot partition first;
    /// `None` (or `kind = "none"`): the image is flashed as it is.
    pub firstboot: Option<Firstboot>,
}

impl Image {
    /// What a board runs after a flash of this image: for a prepared image, the base's
    /// identity and this board's derivation key; otherwise the base's identity. The
    /// board's state records it, and a board already at it is not flashed again.
    pub fn runs_as(&self, board: &BoardName) -> String {
        let base = self.source.identity(&self.name);
        match (self.prepared_for(board), self.source.sha256()) {
            (Some(p), Some(sha)) => prepared_identity(&base, &p.derivation_key(sha)),
            _ => base,
        }
    }

    /// This board's preparation, when the image has one.
    pub fn prepared_for(&self, board: &BoardName) -> Option<Preparation> {
        self.firstboot.as_ref()?.for_board(board)
    }
}

/// `[images.NAME.expect]`: what a board running the image must show after boot
/// (`image::expect::check` compares).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Expectations {
    /// `/etc/os-release` fields, by their upper-case names.
    pub os_release: BTreeMap<String, String>,
    /// `uname -m`.
    pub uname_m: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum ImageSource {
    /// Whatever is installed on the board now; never flashed. Its identity for the cell
    /// key is the image name, and the facts record what the OS really was.
    Installed,
    Url {
        /// Shown and stored only redacted (`ImageUrl`).
        url: ImageUrl,
        sha256: String,
        /// `min_rate`: the slowest a download of it may be, in bytes per second (`None`:
        /// `image::DEFAULT_MIN_RATE`).
        min_rate: Option<u64>,
    },
    Path {
        path: PathBuf,
        sha256: String,
    },
}

impl ImageSource {
    /// The declared sha256 of the file; `None` for an installed image.
    pub fn sha256(&self) -> Option<&str> {
        match self {
            ImageSource::Installed => None,
            ImageSource::Url { sha256, .. } | ImageSource::Path { sha256, .. } => Some(sha256),
        }
    }

    /// The part of the image that can change numbers: its content hash.
    pub fn identity(&self, name: &ImageName) -> String {
        match self {
            ImageSource::Installed => format!("installed:{name}"),
            ImageSource::Url { sha256, .. } | ImageSource::Path { sha256, .. } => {
                format!("sha256:{sha256}")
            }
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Filesystem {
    pub name: FsName,
    /// One of `FS_KINDS`, or `as-is`.
    pub kind: String,
    pub mkfs_options: Vec<String>,
    pub mount_options: Vec<String>,
}

impl Filesystem {
    /// Whether benchpipe makes (and later unmounts) this filesystem; `as-is` and
    /// `as-flashed` measure what is there.
    pub fn is_made(&self) -> bool {
        self.kind != AS_IS && self.kind != AS_FLASHED
    }
}

/// The axes, with board globs already resolved to names (a board's or a cluster's).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Matrix {
    pub image: Vec<ImageName>,
    /// The boards with a board file that the globs select.
    pub board: Vec<BoardName>,
    /// The board globs as written: a report also shows the stored cells of boards whose
    /// file is gone when these select them (`plan::stored`).
    pub board_patterns: Vec<String>,
    /// Storage names or globs, matched against each board's own storage at expansion.
    pub storage: Vec<String>,
    /// Network names or globs, matched against each board's `[[network]]` at expansion;
    /// empty: no network axis (tests reach each board at its SSH host).
    pub network: Vec<String>,
    pub filesystem: Vec<FsName>,
    pub test: Vec<TestName>,
    pub exclude: Vec<CellPattern>,
    pub include: Vec<CellPattern>,
}

/// A partial cell address with glob values, as in `exclude` and `include`.
/// An absent axis matches everything.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct CellPattern {
    pub image: Option<String>,
    pub board: Option<String>,
    pub storage: Option<String>,
    pub filesystem: Option<String>,
    pub network: Option<String>,
    pub test: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Method {
    pub cooldown: Cooldown,
    /// Waited for after the cool-down, before warm-up.
    pub idle: Option<IdleGate>,
    pub warmup: Warmup,
    pub runs: Runs,
    /// Confidence level of intervals, e.g. 0.95.
    pub confidence: f64,
    pub order: RunOrder,
    /// How runs are judged from their telemetry. Not part of the cell key: it judges
    /// runs, it does not change them.
    pub validity: Validity,
}

impl Default for Method {
    fn default() -> Self {
        Method {
            cooldown: Cooldown::None,
            idle: None,
            warmup: Warmup {
                runs: 1,
                duration: None,
            },
            runs: Runs {
                min: 3,
                max: 3,
                target: None,
            },
            confidence: 0.95,
            order: RunOrder::Blocked,
            validity: Validity::default(),
        }
    }
}

/// `[method] validity`: the limits behind a run's flags, and what flagged runs mean.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Validity {
    /// A run whose hottest reading is above this is flagged `hot`.
    pub hot_celsius: f64,
    /// A run where other processes used more than this share of the board's CPU
    /// capacity (0.1 = 10%) is flagged `background-load`.
    pub background_load: f64,
    /// Whether statistics leave flagged runs out (they stay in the store either way).
    pub exclude_flagged: bool,
}

impl Default for Validity {
    fn default() -> Self {
        Validity {
            hot_celsius: 80.0,
            background_load: 0.10,
            exclude_flagged: false,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Cooldown {
    None,
    Fixed {
        #[serde(with = "secs")]
        duration: Duration,
    },
    /// Until the board's hottest sensor reads below `celsius`; with `above_idle`,
    /// below the temperature it had when apply first reached it plus `celsius`.
    UntilBelow {
        celsius: f64,
        above_idle: bool,
        #[serde(with = "secs")]
        max: Duration,
    },
}

/// Before measuring, wait until the board is idle: its 1-minute load average below
/// `load_below` without a break for `hold`, waiting at most `max`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct IdleGate {
    pub load_below: f64,
    #[serde(with = "secs")]
    pub hold: Duration,
    #[serde(with = "secs")]
    pub max: Duration,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Warmup {
    /// Runs executed and discarded (kept in the store, marked as warm-up).
    pub runs: u32,
    /// Keep running warm-up runs at least this long.
    #[serde(with = "opt_secs")]
    pub duration: Option<Duration>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Runs {
    pub min: u32,
    pub max: u32,
    /// Relative CI half-width to reach (0.02 for "2%"), between `min` and `max` runs.
    pub target: Option<f64>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunOrder {
    /// A A A B B B: each cell's runs together.
    Blocked,
    /// A B C A B C: drift hits every cell alike.
    Interleaved,
}

/// `[[report.compare]]`: a candidate configuration against a baseline on one metric.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Compare {
    pub test: TestName,
    pub metric: String,
    pub baseline: CellPattern,
    pub candidate: CellPattern,
    /// `pool = "model"`: beside the per-board rows, one verdict per board model.
    pub pool: Option<Pool>,
    /// `noise_band = "5%"`: this comparison's band; None takes `[report] noise_band`.
    pub noise_band: Option<f64>,
    /// `percent = "of-mean"`: the headline percentage over the mean of both (the
    /// seed's convention); the default is of the baseline.
    pub percent: Percent,
}

/// What a `[[report.compare]]` pools its per-board pairs by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Pool {
    /// The boards' `model`: "ext4 vs btrfs-lzo on a Raspberry Pi 4".
    Model,
}

/// Differences smaller than this fraction of the baseline (2%) are not called
/// significant however small p is: boards drift by that much between sessions.
pub const DEFAULT_NOISE_BAND: f64 = 0.02;
/// A table value whose interval's half-width is more than this share of its mean
/// (±10%) gets a warning, unless the scenario's `[report] wide_ci` says otherwise.
pub const DEFAULT_WIDE_CI: f64 = 0.10;

/// `[report]`'s judgement of numbers. Not part of any cell key: it changes how runs
/// read, never what is measured.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Precision {
    /// Differences within this fraction of the baseline are noise (0.02 = ±2%).
    pub noise_band: f64,
    /// A table value whose CI half-width exceeds this fraction of its mean is warned
    /// about (0.1 = ±10%).
    pub wide_ci: f64,
}

impl Default for Precision {
    fn default() -> Self {
        Precision {
            noise_band: DEFAULT_NOISE_BAND,
            wide_ci: DEFAULT_WIDE_CI,
        }
    }
}

mod secs {
    use serde::Serializer;
    use std::time::Duration;
    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64())
    }
}

mod opt_secs {
    use serde::Serializer;
    use std::time::Duration;
    #[expect(
        clippy::ref_option,
        reason = "serde's `serialize_with` hands the field by reference"
    )]
    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_some(&d.as_secs_f64()),
            None => s.serialize_none(),
        }
    }
}
