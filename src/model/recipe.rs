//! What a recipe (`pipeline/<test>.toml`) means once checked: its steps on each side,
//! services, needs, facts, parser and metrics.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::TestName;

#[derive(Clone, Debug, PartialEq, Serialize)]
#[expect(
    clippy::struct_excessive_bools,
    reason = "each bool is an independent fact of the recipe: what it uses, whether it keeps a series or runs per member"
)]
pub struct Recipe {
    pub name: TestName,
    /// The workspace's `pipeline/NAME.toml`, or `<built-in>/pipeline/NAME.toml`.
    pub file: PathBuf,
    /// Built in or the workspace's, and its text's sha256: what `plan` says and a cell's
    /// facts record. Not in the key: the key hashes what the recipe means, not its text.
    #[serde(skip)]
    pub source: RecipeSource,
    pub description: String,
    /// What each side that runs a step or service needs: `[needs.board]`,
    /// `[needs.controller]`, or a flat `[needs]` for a recipe on one side only.
    pub needs: BTreeMap<Side, Needs>,
    /// `[facts]`: tool versions and the like, recorded in each cell's facts.
    pub facts: Vec<FactSpec>,
    /// Shared resources: cells holding the same resource never run at once across boards.
    pub exclusive: Vec<String>,
    /// Whether the test touches storage. A test that does not collapses the storage
    /// and filesystem axes, so it is not run once per disk for nothing.
    pub uses_storage: bool,
    /// Whether a template reads `{{ device }}`, the storage's block device: such a test
    /// applies only to storage that declares one.
    pub uses_device: bool,
    /// `uses_storage = "device"`: the test reads the raw block device (hdparm), so its
    /// numbers do not depend on any filesystem: one cell per device, with no
    /// filesystem in its address or key, and no filesystem comparison drawn from it.
    pub raw_device: bool,
    /// Whether the test goes over the network to the board: a scenario's `network` axis
    /// repeats it per link, and `{{ host }}` is the link's address. `uses_network`, by
    /// default whether a step or service template reads `{{ host }}`, `{{ bind_address }}`
    /// or `{{ controller_address }}`.
    pub uses_network: bool,
    /// Whether a template reads `bind_address` or `controller_address`: only then are
    /// they found when a cell opens (`network::addresses`). Not in the key: the
    /// templates that read them are.
    #[serde(skip)]
    pub uses_addresses: bool,
    /// `[[requires]]`: checks run before the cell's setup. One that exits non-zero and
    /// prints a reason means the test cannot apply there, and the cell is skipped with
    /// it; one that fails without a word is a failure. Not in the key: they decide
    /// whether to measure, not what.
    pub requires: Vec<Step>,
    /// String parameters a template puts at the start of a shell word, where a value
    /// starting with `-` would be taken as an option: such values are refused.
    #[serde(skip)]
    pub option_params: std::collections::BTreeSet<String>,
    /// Default template parameters; a scenario's `[params.TEST]` overrides them.
    pub params: BTreeMap<String, ParamValue>,
    /// `[param_patterns]`: the form a string parameter's value must have, checked on
    /// the default and on every scenario's override. A check, not an input of the key.
    #[serde(skip)]
    pub param_patterns: BTreeMap<String, ParamPattern>,
    /// `series = true`: each run's sample keeps the telemetry's temperature and CPU
    /// clock over time (bounded, `telemetry::summary::SERIES_MAX` points), and the
    /// report draws them. Not part of the cell key: it changes what is kept, not the
    /// numbers.
    pub series: bool,
    /// `[tmpfs]`: a tmpfs of the cell's own at `{{ tmpfs }}`, which benchpipe mounts
    /// before the setup and unmounts after the teardown (`storage::tmpfs`). Not in the
    /// key: its size bounds the space, it changes no number, and the commands that use
    /// the tmpfs name it in their text.
    pub tmpfs: Option<TmpfsSpec>,
    /// Run once per cell before its services start (e.g. generate a corpus).
    pub setup: Vec<Step>,
    /// `[[setup]]` with `after = "services"`: run once per cell after its services are
    /// ready and before warm-up (create the database, install the application, log in).
    pub setup_after_services: Vec<Step>,
    /// `secrets`: names of values a step makes at run time that must never be stored
    /// or shown (a generated password, a login cookie). Each is the file
    /// `{{ secrets }}/NAME` in the cell's secret directory on the controller (mode
    /// 0700, removed when the cell ends); commands read it at shell time, board
    /// commands get it on stdin (`input_secret`), and its value is redacted from every
    /// output benchpipe keeps or prints. Not part of the cell key.
    pub secrets: Vec<String>,
    /// `[[before_run]]`: run before every warm-up and measured run, untimed (outside
    /// the measured command and its telemetry): dropping the page cache so that each
    /// read comes from the disk. In the key: they change the numbers.
    pub before_run: Vec<Step>,
    /// The measured command; run once per warm-up and measured run.
    pub run: Step,
    /// `[run] per_member = true`: the command is run once per member of the system
    /// under test (a board is its only member), all at once on the run's side, each
    /// with that member's `board` and `host`; the run's document is
    /// `{"members": {NAME: document}}` and its metrics are `per_member` or `sum_of`.
    pub run_per_member: bool,
    pub parser: ParserSpec,
    /// Run once per cell after the last run, even when a run failed.
    pub teardown: Vec<Step>,
    /// Daemons started after setup and stopped for sure when the cell ends, fails or
    /// is interrupted (iperf3 -s for a client on the controller).
    pub services: Vec<ServiceSpec>,
    /// Metrics in the order the recipe declares them: the order of a report's columns.
    /// The cell key lists the parsed ones by name, so reordering changes no key.
    pub metrics: Vec<MetricSpec>,
}

/// Where a recipe was loaded from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Origin {
    /// Shipped in the binary (`config::builtin`).
    #[default]
    BuiltIn,
    /// The workspace's file, naming a test no built-in recipe has.
    Workspace,
    /// The workspace's file, in place of the built-in of the same name.
    Overrides,
    /// The workspace's file, with the very text of the built-in of the same name (the
    /// source tree's own `pipeline/`).
    SameAsBuiltIn,
}

/// A recipe's origin and the sha256 of its text.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct RecipeSource {
    pub origin: Origin,
    /// Lower-case hex.
    pub sha256: String,
}

impl RecipeSource {
    /// `built-in`, or the file and how it stands to the built-in: what `plan` says.
    pub fn describe(&self, file: &std::path::Path) -> String {
        let file = file.display();
        match self.origin {
            Origin::BuiltIn => format!("built-in ({file})"),
            Origin::Workspace => format!("{file} (the workspace's own)"),
            Origin::Overrides => format!("{file} (the workspace's, in place of the built-in)"),
            Origin::SameAsBuiltIn => {
                format!("{file} (the workspace's, the same text as the built-in)")
            }
        }
    }
}

impl Recipe {
    /// Whether a step streams the controller file this parameter names to its stdin:
    /// such a parameter is the file's address, left out of the cell key (the file's
    /// content is an input through the digest the step checks).
    pub fn is_input_param(&self, name: &str) -> bool {
        self.setup
            .iter()
            .chain(&self.setup_after_services)
            .chain(&self.teardown)
            .any(|s| {
                matches!(&s.input, Some(StepInput::Param(p) | StepInput::Private(p)) if p == name)
            })
    }

    /// The sides its steps and services run on.
    pub fn sides(&self) -> std::collections::BTreeSet<Side> {
        let steps = self
            .setup
            .iter()
            .chain(&self.setup_after_services)
            .chain(&self.before_run)
            .chain([&self.run])
            .chain(&self.teardown);
        steps
            .map(|s| s.on)
            .chain(self.services.iter().map(|s| s.on))
            .collect()
    }

    /// The metrics that drive the precision target (config makes every metric primary
    /// when none is marked).
    pub fn primary_metrics(&self) -> Vec<String> {
        self.metrics
            .iter()
            .filter(|m| m.primary)
            .map(|m| m.name.clone())
            .collect()
    }
}

/// A recipe's `[tmpfs]`: its `size` as written, a template of the recipe's parameters
/// giving MiB (`"{{ size_mib + 8 }}"`, or a TOML integer) or a share of the board's RAM
/// (`"50%"`); `storage::tmpfs::resolve` turns it into a `TmpfsSize` per cell.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TmpfsSpec {
    pub size: String,
}

/// The size of a cell's tmpfs, resolved from its parameters and checked against the
/// bounds (`storage::tmpfs::MAX_MIB`, `MAX_PERCENT`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TmpfsSize {
    /// MiB; the board must have that much memory available when it is mounted.
    Mib(u64),
    /// A share of the board's RAM, as tmpfs's own `size=N%`.
    PercentOfRam(u64),
}

impl fmt::Display for TmpfsSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TmpfsSize::Mib(n) => write!(f, "{n} MiB"),
            TmpfsSize::PercentOfRam(p) => write!(f, "{p}% of RAM"),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ParamValue {
    Int(i64),
    Float(f64),
    Bool(bool),
    Str(String),
}

impl fmt::Display for ParamValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParamValue::Int(v) => write!(f, "{v}"),
            ParamValue::Float(v) => write!(f, "{v}"),
            ParamValue::Bool(v) => write!(f, "{v}"),
            ParamValue::Str(v) => f.write_str(v),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    /// The board under test; for a cluster, its `control` member.
    Board,
    Controller,
    /// Every member of the system under test, in order (a board is its only member);
    /// not for a run.
    Members,
    /// The cell's peer board, named by the recipe's `peer` parameter: a client on
    /// another board (iperf3 from one board to another).
    Peer,
}

impl Side {
    /// As the files write it.
    pub fn name(self) -> &'static str {
        match self {
            Side::Board => "board",
            Side::Controller => "controller",
            Side::Members => "members",
            Side::Peer => "peer",
        }
    }

    /// Whether the step runs on a board of the system under test.
    pub fn on_board(self) -> bool {
        matches!(self, Side::Board | Side::Members)
    }
}

/// The parameter that names a recipe's peer board (`on = "peer"` steps).
pub const PEER_PARAM: &str = "peer";

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Step {
    pub on: Side,
    /// A minijinja template; every interpolated value is shell-quoted.
    pub command: String,
    pub timeout: Option<Duration>,
    /// What is streamed to the command's stdin: a controller file a parameter names,
    /// or one of the recipe's secrets.
    pub input: Option<StepInput>,
}

/// A setup or teardown step's stdin.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StepInput {
    /// `input = "NAME"`: a string parameter naming a file on the controller (relative
    /// to where benchpipe runs); an empty value streams nothing.
    Param(String),
    /// `input_secret = "NAME"`: the secret's file in the cell's secret directory on the
    /// controller, so a board command gets the value without it being on any command
    /// line; a missing file fails the step.
    Secret(String),
    /// `input = "NAME"` of a parameter whose `[param_patterns]` entry says
    /// `private_file = true`: the file is opened by `private_file::open` (no link, owned
    /// by the user, nobody else may change it), and the parameter is read by no
    /// command.
    Private(String),
}

/// `[param_patterns]`: a regular expression a string parameter's value must match
/// whole, and what it means in words for the error.
#[derive(Clone, Debug, PartialEq)]
pub struct ParamPattern {
    pub pattern: String,
    pub expected: String,
    /// The value is a regular expression a board's `grep -E` runs: it must compile and
    /// keep to what POSIX ERE and the regex crate read alike (`patterns::ere`).
    pub regex: bool,
    /// The value is the path of a private file on the controller (a password): its
    /// text is checked (`private_file::check_path`), no command may read the
    /// parameter, and a step gets the file on its stdin (`StepInput::Private`), opened
    /// by `private_file::open`.
    pub private_file: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ServiceSpec {
    /// Letters, digits, `-`, `_`, `.`: it names the pid and log files.
    pub name: String,
    pub on: Side,
    /// A template; the process must stay in the foreground.
    pub command: String,
    /// A template run on the same side until it succeeds (for `ready_timeout` at most)
    /// before the first run; e.g. a check that the port listens.
    pub ready: Option<String>,
    pub ready_timeout: Duration,
}

/// The commands that must exist on one side, and per package manager the packages that
/// provide them there (the board's os-release picks the manager).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Needs {
    pub packages: BTreeMap<super::PackageManager, Vec<String>>,
    /// apt packages (each also in `packages`' apt list) that the distribution keeps
    /// outside main (Debian's `non-free`, Ubuntu's `multiverse`): where the side's
    /// sources lack that component, they are read from its mirrors with it.
    pub apt_non_free: Vec<String>,
    pub commands: Vec<String>,
}

impl Needs {
    /// The packages for `manager`; none when the recipe names none for it.
    pub fn packages_for(&self, manager: super::PackageManager) -> &[String] {
        self.packages.get(&manager).map_or(&[], Vec::as_slice)
    }

    /// Whether any package manager has a package named for these commands.
    pub fn has_packages(&self) -> bool {
        self.packages.values().any(|p| !p.is_empty())
    }
}

/// One `[facts]` entry: a template whose trimmed stdout is recorded as `tools.<name>`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FactSpec {
    pub name: String,
    pub on: Side,
    pub command: String,
}

/// The parsers `parse = "..."` can name, with their versions, in the order lists show
/// them: `bench::parse::REGISTRY` holds one of each, in this order (its tests check).
/// Both are cell key inputs: a version is bumped when a parser's document for the same
/// input changes, and re-runs every stored cell of it. Model owns the names so that it
/// needs nothing of `bench`.
pub const PARSERS: [(&str, u32); 14] = [
    ("fio-json", 1),
    ("time", 1),
    ("iperf3-json", 1),
    ("json", 1),
    ("hdparm", 1),
    ("dd", 1),
    ("regex", 1),
    ("iozone", 1),
    ("iperf3-text", 1),
    ("iperf2", 1),
    ("wrk", 1),
    ("ab", 1),
    ("wrk+ab", 1),
    ("wrk+login", 1),
];

/// A parser of `PARSERS`, by name. Only that list makes one, so a value always names a
/// parser that exists; config finds it with "did you mean".
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct ParserName(&'static str);

impl ParserName {
    /// The registered parser of that name.
    pub fn get(name: &str) -> Option<ParserName> {
        PARSERS
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(n, _)| ParserName(n))
    }

    /// Every registered parser, in registry order.
    pub fn all() -> impl Iterator<Item = ParserName> {
        PARSERS.iter().map(|(n, _)| ParserName(n))
    }

    /// Its version (`PARSERS`); part of the cell key.
    pub fn version(self) -> u32 {
        PARSERS
            .iter()
            .find(|(n, _)| *n == self.0)
            .map_or(1, |(_, v)| *v)
    }

    pub fn as_str(self) -> &'static str {
        self.0
    }
}

impl fmt::Display for ParserName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

/// How a recipe's run output becomes a document that metric paths select from: a
/// registered parser and, for the data-driven ones, its options. Name, version and
/// options are part of the cell key.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ParserSpec {
    pub name: ParserName,
    pub options: ParserOptions,
}

impl ParserSpec {
    /// The registered parser of that name, without options.
    pub fn named(name: &str) -> Option<ParserSpec> {
        ParserName::get(name).map(|name| ParserSpec {
            name,
            options: ParserOptions::default(),
        })
    }

    /// Every registered parser without options, in registry order.
    pub fn all() -> impl Iterator<Item = ParserSpec> {
        ParserName::all().map(|name| ParserSpec {
            name,
            options: ParserOptions::default(),
        })
    }

    pub fn name(&self) -> &'static str {
        self.name.as_str()
    }

    /// Bumped when a parser's output for the same input changes; part of the cell key.
    pub fn version(&self) -> u32 {
        self.name.version()
    }
}

/// Options of the parsers that take them; empty (the default) for the others.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ParserOptions {
    /// `[parse_regex]`, for `parse = "regex"`.
    pub regex: Option<RegexOptions>,
}

/// The regex parser's options: patterns with named groups, checked by config (syntax,
/// size, named groups, one name once).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RegexOptions {
    pub patterns: Vec<String>,
    pub stream: Stream,
    /// `94,1` reads as 94.1 (a board's locale); otherwise a capture with a comma is text.
    pub decimal_comma: bool,
}

/// A command's output stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Stream {
    Stdout,
    Stderr,
}

impl Stream {
    pub fn name(self) -> &'static str {
        match self {
            Stream::Stdout => "stdout",
            Stream::Stderr => "stderr",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Better {
    Higher,
    Lower,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MetricSpec {
    pub name: String,
    /// `label`: what reports call it ("4K random read"); the name when absent. Not part
    /// of the cell key: it changes no number.
    pub label: Option<String>,
    /// A path into the parsed document: `jobs[jobname=randread].read.bw_bytes`, `real`.
    pub from: String,
    /// Multiplied into the parsed value (e.g. 1e-6 to turn B/s into MB/s).
    pub scale: f64,
    pub unit: String,
    pub better: Better,
    /// Primary metrics drive the precision target of adaptive run counts.
    pub primary: bool,
    /// A metric computed from a run's other values rather than parsed from its
    /// output: never part of a cell's key, never primary, `from` and `scale` unused.
    pub derive: Option<Derived>,
    /// In a `per_member` run: one value per member, or the sum of such a metric.
    pub member: MemberMetric,
    /// `flag = "NAME"`: a run whose value is above 0 (non-2xx responses, socket
    /// errors) is flagged NAME, shown and counted like the telemetry's flags and left
    /// out of the statistics with `exclude_flagged`. A judgment, not a key input.
    pub flag: Option<String>,
}

/// How a metric of a `per_member` run is taken.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MemberMetric {
    /// A metric of the whole run (the only kind outside `per_member` runs).
    #[default]
    Whole,
    /// `per_member = true`: `from` read in each member's document, stored as
    /// `NAME@MEMBER` (`member_metric`); never primary.
    Each,
    /// `sum_of = "metric"`: the sum over every member of that `Each` metric, of the same
    /// run; a member without its value fails the run, so no partial sum is stored.
    SumOf(String),
}

/// The stored name of a `per_member` metric's value for one member.
pub fn member_metric(metric: &str, member: &str) -> String {
    format!("{metric}@{member}")
}

/// What a derived metric is computed from.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Derived {
    /// `per_watt = "metric"`: that metric over the run's mean watts (MB/s per W).
    PerWatt(String),
    /// `joules = true`: the run's mean watts times its duration.
    Joules,
}

impl MetricSpec {
    /// Whether the metric's values come from a board's `[meter]`: the watts themselves,
    /// or a metric derived from them (a board without a meter has none, never a number).
    pub fn needs_meter(&self) -> bool {
        self.derive.is_some() || self.name == POWER_W || self.name == IDLE_W
    }

    /// What reports call the metric: its label, else its name.
    pub fn label(&self) -> &str {
        self.label.as_deref().unwrap_or(&self.name)
    }

    /// The metric's value for a run with these metrics lasting `seconds`: parsed ones
    /// as stored, derived ones computed (absent without the run's watts).
    pub fn value(&self, metrics: &BTreeMap<String, f64>, seconds: f64) -> Option<f64> {
        let w = || metrics.get(POWER_W).copied().filter(|w| *w > 0.0);
        let v = match &self.derive {
            None => metrics.get(&self.name).copied(),
            Some(Derived::PerWatt(of)) => Some(metrics.get(of)? / w()?),
            Some(Derived::Joules) => Some(w()? * seconds),
        };
        v.filter(|v| v.is_finite())
    }

    /// The metrics power gives every run on a board with a `[meter]`: stored by the
    /// sampler, never by a parser.
    pub fn power() -> [MetricSpec; 2] {
        let spec = |name: &str, label: &str| MetricSpec {
            name: name.into(),
            label: Some(label.into()),
            from: String::new(),
            scale: 1.0,
            unit: "W".into(),
            better: Better::Lower,
            primary: false,
            derive: None,
            member: MemberMetric::Whole,
            flag: None,
        };
        [spec(IDLE_W, "idle power"), spec(POWER_W, "power")]
    }
}

impl MetricSpec {
    /// The metrics a `series = true` recipe's runs get from the sampler: the hottest
    /// temperature and the mean CPU clock over the run (absent where the board has no
    /// thermal zone or no cpufreq).
    pub fn series() -> [MetricSpec; 2] {
        let spec = |name: &str, label: &str, unit: &str, better| MetricSpec {
            name: name.into(),
            label: Some(label.into()),
            from: String::new(),
            scale: 1.0,
            unit: unit.into(),
            better,
            primary: false,
            derive: None,
            member: MemberMetric::Whole,
            flag: None,
        };
        [
            spec(TEMP_MAX_C, "hottest temperature", "°C", Better::Lower),
            spec(FREQ_MEAN_MHZ, "mean CPU clock", "MHz", Better::Higher),
        ]
    }
}

/// The metric names of a series recipe's hottest temperature and mean clock.
pub const TEMP_MAX_C: &str = "temp_max_c";
pub const FREQ_MEAN_MHZ: &str = "freq_mean_mhz";

/// The metric names of a run's mean watts during it and in the idle window before.
pub const POWER_W: &str = "power_w";
pub const IDLE_W: &str = "idle_w";

impl Recipe {
    /// A metric of the recipe by name, or one of the power metrics.
    pub fn metric(&self, name: &str) -> Option<MetricSpec> {
        self.metrics
            .iter()
            .find(|m| m.name == name)
            .cloned()
            .or_else(|| MetricSpec::power().into_iter().find(|m| m.name == name))
            .or_else(|| {
                (self.series)
                    .then(|| MetricSpec::series().into_iter().find(|m| m.name == name))
                    .flatten()
            })
    }

    /// The recipe's own flags that a run's metrics raise: each `flag` metric above 0,
    /// in metric order, each flag once.
    pub fn metric_flags(&self, metrics: &BTreeMap<String, f64>) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for m in &self.metrics {
            if let Some(flag) = &m.flag
                && metrics.get(&m.name).is_some_and(|v| *v > 0.0)
                && !out.contains(flag)
            {
                out.push(flag.clone());
            }
        }
        out
    }

    /// The metrics parsed from a run's output (not the derived ones).
    pub fn parsed_metrics(&self) -> impl Iterator<Item = &MetricSpec> {
        self.metrics.iter().filter(|m| m.derive.is_none())
    }
}
