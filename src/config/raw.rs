//! The input files exactly as written: serde types with byte spans, unknown keys denied.
//!
//! Enum-like values are kept as spanned strings and checked in the validation pass, so
//! that a bad value gets "expected one of ..." at its own position; tagged enums would
//! lose the position (see TOOLS.md).

use std::collections::BTreeMap;

use serde::Deserialize;
use toml::Spanned;

type S<T> = Spanned<T>;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Board {
    pub model: S<String>,
    pub arch: Option<S<Arch>>,
    pub memory: Option<S<String>>,
    pub workdir: Option<S<String>>,
    pub thermal: Option<S<String>>,
    pub local: Option<S<bool>>,
    pub ssh: Option<S<Ssh>>,
    pub flash: Option<S<Flash>>,
    pub power: Option<Power>,
    pub boot: Option<S<Boot>>,
    pub meter: Option<S<Meter>>,
    #[serde(default)]
    pub storage: Vec<S<Storage>>,
    #[serde(default)]
    pub network: Vec<S<Network>>,
    #[serde(default)]
    pub health: Vec<S<Health>>,
    pub labgrid: Option<S<Labgrid>>,
}

/// A board's `labgrid = { coordinator, place, wait }`: `config::labgrid`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Labgrid {
    pub coordinator: S<String>,
    pub place: S<String>,
    pub wait: Option<S<String>>,
}

/// A board's `[[health]]` check: `config::health`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Health {
    pub name: S<String>,
    pub command: S<String>,
    pub timeout: Option<S<String>>,
}

/// A board's `arch`: one `uname -m` word, or the list of those its CPU can run.
#[derive(Debug)]
pub enum Arch {
    /// Positioned by the enclosing `Spanned`.
    One(String),
    Many(Vec<S<String>>),
}

// By hand rather than `untagged`, as `Cooldown`: each list item keeps its position.
impl<'de> Deserialize<'de> for Arch {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Arch;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str(
                    "a `uname -m` word like \"aarch64\", or a list like [\"aarch64\", \"armv7l\"]",
                )
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Arch, E> {
                Ok(Arch::One(v.to_string()))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, seq: A) -> Result<Arch, A::Error> {
                Vec::<S<String>>::deserialize(serde::de::value::SeqAccessDeserializer::new(seq))
                    .map(Arch::Many)
            }
        }
        d.deserialize_any(Visit)
    }
}

/// `[[network]]`: a link the board is reached over by tests.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Network {
    pub name: S<String>,
    pub address: S<String>,
    pub interface: S<String>,
    pub kind: Option<S<String>>,
    pub model: Option<S<String>>,
}

/// `[boot]`: the board's boot configuration benchpipe may edit (the UAS step).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Boot {
    pub cmdline: S<String>,
}

/// `[meter]`: every source's keys in one table; which apply is checked in
/// `config::meter`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Meter {
    pub file: Option<S<String>>,
    pub unit: Option<S<String>>,
    pub current: Option<S<String>>,
    pub voltage: Option<S<String>>,
    pub current_unit: Option<S<String>>,
    pub voltage_unit: Option<S<String>>,
    pub pmic: Option<S<bool>>,
    pub command: Option<S<String>>,
    pub json: Option<S<String>>,
    pub idle: Option<S<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ssh {
    pub host: S<String>,
    pub port: Option<S<i64>>,
    pub user: Option<S<String>>,
    pub identity: Option<S<String>>,
    pub password_env: Option<S<String>>,
    pub known_hosts: Option<S<String>>,
    pub connect_timeout: Option<S<String>>,
    pub keepalive: Option<S<String>>,
    pub host_key: Option<S<String>>,
    pub proxy_jump: Option<S<String>>,
    pub r#become: Option<S<String>>,
    pub sudo_password_env: Option<S<String>>,
}

/// All methods' fields in one table; which ones apply is checked against `method`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Flash {
    pub method: S<String>,
    pub via: Option<S<String>>,
    pub node: Option<S<i64>>,
    pub device: Option<S<String>>,
    pub command: Option<S<String>>,
    pub dir: Option<S<String>>,
    pub accept_new_host_key: Option<S<bool>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Power {
    pub cycle: Option<S<String>>,
    pub on: Option<S<String>>,
    pub off: Option<S<String>>,
    pub via: Option<S<String>>,
    pub boot_timeout: Option<S<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Storage {
    pub name: S<String>,
    pub role: S<String>,
    pub device: Option<S<String>>,
    pub path: Option<S<String>>,
    pub model: Option<S<String>>,
    pub uas: Option<S<bool>>,
    pub usb_id: Option<S<String>>,
    pub driver: Option<S<String>>,
    /// The device's serial number, as the board reports it.
    pub serial: Option<S<String>>,
    /// The device's size in bytes (`lsblk -bdno SIZE`).
    pub size: Option<S<i64>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Recipe {
    pub description: Option<S<String>>,
    /// true, false, "filesystem" (= true) or "device".
    pub uses_storage: Option<S<toml::Value>>,
    /// Whether the test goes over the network (default: its templates read `host`).
    pub uses_network: Option<S<bool>>,
    pub needs: Option<Needs>,
    #[serde(default)]
    pub facts: BTreeMap<S<String>, S<Fact>>,
    #[serde(default)]
    pub exclusive: Vec<S<String>>,
    #[serde(default)]
    pub params: BTreeMap<S<String>, S<toml::Value>>,
    #[serde(default)]
    pub param_patterns: BTreeMap<S<String>, S<ParamPattern>>,
    /// Keep each run's temperature and clock over time (`burn-in`).
    pub series: Option<S<bool>>,
    /// `[tmpfs]`: a tmpfs of the cell's own, mounted by benchpipe.
    pub tmpfs: Option<S<Tmpfs>>,
    #[serde(default)]
    pub requires: Vec<Step>,
    #[serde(default)]
    pub setup: Vec<Step>,
    /// Names of values steps make that must never be stored or shown.
    #[serde(default)]
    pub secrets: Vec<S<String>>,
    /// Untimed steps before every warm-up and measured run.
    #[serde(default)]
    pub before_run: Vec<Step>,
    pub run: S<RunStep>,
    #[serde(default)]
    pub teardown: Vec<Step>,
    #[serde(default)]
    pub services: Vec<Service>,
    pub metrics: Option<S<BTreeMap<S<String>, S<Metric>>>>,
    /// Options of `parse = "regex"`.
    pub parse_regex: Option<S<ParseRegex>>,
}

/// `[tmpfs]`: its `size`, MiB as an integer, or a string template giving MiB or `N%`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tmpfs {
    pub size: S<toml::Value>,
}

/// `[parse_regex]`: one `pattern` or a list of `patterns`, each with named groups.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ParseRegex {
    pub pattern: Option<S<String>>,
    pub patterns: Option<S<Vec<S<String>>>>,
    pub stream: Option<S<String>>,
    pub decimal_comma: Option<S<bool>>,
}

/// `[[services]]`: a daemon running for the whole cell (iperf3 -s, nginx).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Service {
    pub name: S<String>,
    pub on: Option<S<String>>,
    pub command: S<String>,
    pub ready: Option<S<String>>,
    pub ready_timeout: Option<S<String>>,
}

/// `[needs]`: flat package lists (`apt`, `dnf`, `apk`, `pacman`) and `commands` for a
/// recipe on one side, or `[needs.board]` and
/// `[needs.controller]`; which form fits is checked in validation, with positions.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Needs {
    pub apt: Option<S<Vec<S<String>>>>,
    pub apt_non_free: Option<S<Vec<S<String>>>>,
    pub dnf: Option<S<Vec<S<String>>>>,
    pub apk: Option<S<Vec<S<String>>>>,
    pub pacman: Option<S<Vec<S<String>>>>,
    pub commands: Option<S<Vec<S<String>>>>,
    pub board: Option<S<SideNeeds>>,
    pub controller: Option<S<SideNeeds>>,
    pub members: Option<S<SideNeeds>>,
    pub peer: Option<S<SideNeeds>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SideNeeds {
    #[serde(default)]
    pub apt: Vec<S<String>>,
    #[serde(default)]
    pub apt_non_free: Vec<S<String>>,
    #[serde(default)]
    pub dnf: Vec<S<String>>,
    #[serde(default)]
    pub apk: Vec<S<String>>,
    #[serde(default)]
    pub pacman: Vec<S<String>>,
    #[serde(default)]
    pub commands: Vec<S<String>>,
}

/// A `[facts]` entry: `name = "command"` or `name = { on = "controller", command = ".." }`.
#[derive(Debug)]
pub enum Fact {
    /// Run on the board; the entry's span is the command's.
    Command(String),
    Table(FactTable),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FactTable {
    pub on: Option<S<String>>,
    pub command: S<String>,
}

// By hand, as `Cooldown`, so that the table form keeps its own errors and positions.
impl<'de> Deserialize<'de> for Fact {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Fact;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a command, or a table like { on = \"controller\", command = \"...\" }")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Fact, E> {
                Ok(Fact::Command(v.to_string()))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<Fact, A::Error> {
                FactTable::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    .map(Fact::Table)
            }
        }
        d.deserialize_any(Visit)
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    pub on: Option<S<String>>,
    pub command: S<String>,
    pub timeout: Option<S<String>>,
    /// A string parameter naming a controller file streamed to the command's stdin.
    pub input: Option<S<String>>,
    /// A secret of the recipe streamed to the command's stdin.
    pub input_secret: Option<S<String>>,
    /// `"services"`: a setup step run once the cell's services are ready.
    pub after: Option<S<String>>,
}

/// `[param_patterns.NAME]`: the form a string parameter's value must have.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ParamPattern {
    pub pattern: S<String>,
    pub expected: S<String>,
    /// The value is itself a regular expression, checked as one (`grep -E`'s subset).
    pub regex: Option<S<bool>>,
    /// The value names a private file on the controller, given to a step as its `input`.
    pub private_file: Option<S<bool>>,
}

/// `[run]`: a step plus its parser. Not `flatten`ed, which would defeat deny_unknown_fields.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunStep {
    pub on: Option<S<String>>,
    pub command: S<String>,
    pub timeout: Option<S<String>>,
    pub parse: S<String>,
    /// Run once per member of the system under test, all at once.
    pub per_member: Option<S<bool>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Metric {
    /// What reports call it: "4K random read".
    pub label: Option<S<String>>,
    pub from: Option<S<String>>,
    pub unit: Option<S<String>>,
    pub better: Option<S<String>>,
    pub scale: Option<S<f64>>,
    pub primary: Option<S<bool>>,
    pub per_watt: Option<S<String>>,
    pub joules: Option<S<bool>>,
    /// In a `per_member` run: a value per member.
    pub per_member: Option<S<bool>>,
    /// In a `per_member` run: the sum over the members of a `per_member` metric.
    pub sum_of: Option<S<String>>,
    /// The flag a run gets when this metric is above 0.
    pub flag: Option<S<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    pub title: S<String>,
    pub description: Option<S<String>>,
    #[serde(default)]
    pub images: BTreeMap<S<String>, S<Image>>,
    #[serde(default)]
    pub filesystems: BTreeMap<S<String>, S<Filesystem>>,
    pub matrix: S<Matrix>,
    pub method: Option<Method>,
    #[serde(default)]
    pub params: BTreeMap<S<String>, BTreeMap<S<String>, S<toml::Value>>>,
    pub report: Option<Report>,
    /// `[clusters.NAME]`: several boards measured as one system.
    #[serde(default)]
    pub clusters: BTreeMap<S<String>, S<Cluster>>,
}

/// `[clusters.NAME]`: members, where board-side steps go, the endpoint, and the deploy
/// and teardown commands.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cluster {
    pub members: S<Vec<S<String>>>,
    pub control: Option<S<String>>,
    pub endpoint: Option<S<Endpoint>>,
    #[serde(default)]
    pub deploy: Vec<S<ClusterStep>>,
    #[serde(default)]
    pub teardown: Vec<S<ClusterStep>>,
}

/// `endpoint = { board = "lab-1", port = 8080 }` or `{ host = "...", port = ... }`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Endpoint {
    pub board: Option<S<String>>,
    pub host: Option<S<String>>,
    pub port: Option<S<i64>>,
}

/// `[[clusters.NAME.deploy]]` and `[[clusters.NAME.teardown]]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClusterStep {
    pub on: Option<S<String>>,
    pub command: S<String>,
    pub timeout: Option<S<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Image {
    pub installed: Option<S<bool>>,
    pub url: Option<S<String>>,
    pub path: Option<S<String>>,
    pub sha256: Option<S<String>>,
    /// An http(s) download's slowest acceptable rate, like `100kB/s`.
    pub min_rate: Option<S<String>>,
    pub expect: Option<Expect>,
    pub firstboot: Option<S<Firstboot>>,
}

/// `[images.NAME.firstboot]`: what a flash writes into the image's boot partition.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Firstboot {
    pub kind: S<String>,
    pub user: Option<S<String>>,
    pub authorized_key: Option<S<String>>,
    pub sudo: Option<S<bool>>,
    pub password_hash: Option<S<String>>,
    /// Refused with a message of its own (and never repeated): a clear password.
    pub password: Option<S<toml::Value>>,
    pub user_data: Option<S<String>>,
    pub network_config: Option<S<String>>,
    pub hostname: Option<S<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    #[serde(default)]
    pub os_release: BTreeMap<S<String>, S<String>>,
    pub uname_m: Option<S<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Filesystem {
    pub kind: S<String>,
    #[serde(default)]
    pub mkfs_options: Vec<S<String>>,
    #[serde(default)]
    pub mount_options: Vec<S<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Matrix {
    pub image: Vec<S<String>>,
    pub board: Vec<S<String>>,
    #[serde(default)]
    pub storage: Vec<S<String>>,
    #[serde(default)]
    pub network: Vec<S<String>>,
    pub filesystem: Option<Vec<S<String>>>,
    pub test: Vec<S<String>>,
    #[serde(default)]
    pub exclude: Vec<S<Pattern>>,
    #[serde(default)]
    pub include: Vec<S<Pattern>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pattern {
    pub image: Option<S<String>>,
    pub board: Option<S<String>>,
    pub storage: Option<S<String>>,
    pub filesystem: Option<S<String>>,
    pub network: Option<S<String>>,
    pub test: Option<S<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Method {
    pub cooldown: Option<S<Cooldown>>,
    pub warmup: Option<S<Warmup>>,
    pub runs: Option<S<Runs>>,
    pub confidence: Option<S<f64>>,
    pub order: Option<S<String>>,
    pub validity: Option<S<Validity>>,
    pub idle: Option<S<Idle>>,
}

/// `idle = { load_below = 0.5, for = "30s", max = "10m" }`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Idle {
    pub load_below: S<f64>,
    #[serde(rename = "for")]
    pub hold: Option<S<String>>,
    pub max: Option<S<String>>,
}

/// `validity = { hot = "80C", background_load = "10%", exclude_flagged = false }`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Validity {
    pub hot: Option<S<String>>,
    pub background_load: Option<S<String>>,
    pub exclude_flagged: Option<S<bool>>,
}

/// `cooldown = "15m"` or `cooldown = { until_below = "50C", max = "15m" }`.
#[derive(Debug)]
pub enum Cooldown {
    Fixed(String),
    UntilBelow(UntilBelow),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UntilBelow {
    pub until_below: S<String>,
    pub max: Option<S<String>>,
}

// By hand rather than `untagged`: an untagged enum answers every mistake with "did not
// match any variant", while this keeps the inner table's own errors and positions.
impl<'de> Deserialize<'de> for Cooldown {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Cooldown;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str(
                    "a duration like \"15m\", or a table like { until_below = \"50C\", max = \"15m\" }",
                )
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Cooldown, E> {
                Ok(Cooldown::Fixed(v.to_string()))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<Cooldown, A::Error> {
                UntilBelow::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    .map(Cooldown::UntilBelow)
            }
        }
        d.deserialize_any(Visit)
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Warmup {
    pub runs: Option<S<i64>>,
    pub duration: Option<S<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Runs {
    pub min: Option<S<i64>>,
    pub max: Option<S<i64>>,
    pub target: Option<S<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Report {
    #[serde(default)]
    pub compare: Vec<S<Compare>>,
    /// `[report.labels]`: per axis, glob -> label; `metric`: `test.metric` -> label.
    pub labels: Option<S<Labels>>,
    /// `[[report.table]]`.
    #[serde(default)]
    pub table: Vec<S<Table>>,
    /// `"2%"`: differences within it are noise.
    pub noise_band: Option<S<String>>,
    /// `"10%"`: CI half-widths beyond this share of the mean are warned about.
    pub wide_ci: Option<S<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Labels {
    #[serde(default)]
    pub image: BTreeMap<S<String>, S<String>>,
    #[serde(default)]
    pub board: BTreeMap<S<String>, S<String>>,
    #[serde(default)]
    pub storage: BTreeMap<S<String>, S<String>>,
    #[serde(default)]
    pub filesystem: BTreeMap<S<String>, S<String>>,
    #[serde(default)]
    pub network: BTreeMap<S<String>, S<String>>,
    #[serde(default)]
    pub metric: BTreeMap<S<String>, S<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Table {
    pub title: S<String>,
    pub description: Option<S<String>>,
    pub columns: S<Vec<S<String>>>,
    pub rows: Option<S<Vec<S<String>>>>,
    pub pivot: Option<S<String>>,
    pub only: Option<S<Pattern>>,
    #[serde(default)]
    pub labels: BTreeMap<S<String>, S<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Compare {
    pub metric: S<String>,
    pub baseline: S<Pattern>,
    pub candidate: Option<S<Pattern>>,
    /// `"model"`: one pooled verdict per board model too.
    pub pool: Option<S<String>>,
    pub noise_band: Option<S<String>>,
    /// `"of-baseline"` (default) or `"of-mean"`: what the headline percentage is of.
    pub percent: Option<S<String>>,
}
