//! Command-line arguments -> library calls -> exit code. No logic of its own beyond
//! choosing what to print.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::Ordering;

use clap::{Parser, Subcommand};

use crate::check;
use crate::config;
use crate::error::{Error, Result};
use crate::model::{Scenario, Workspace};
use crate::plan::{self, Plan};
use crate::store::OnDrift;
use crate::store::Store;

mod apply_cmd;
mod boards;
mod compare;
mod confirm;
mod gc;
mod history;
mod init;
mod lab;
mod plan_view;
mod reports;
mod saved_plan;
mod signals;
mod status;
mod store_cmd;
pub use plan_view::{PLAN_JSON_FORMAT, dry_run_text, plan_text};
use reports::{load_for_report, write_reports_of};
pub use reports::{report_plans, stored_names, write_reports};
use signals::{SIGNAL, install_signals};

#[derive(Parser, Debug)]
#[command(
    name = "benchpipe",
    version,
    about = "Declarative, reproducible benchmarking of single-board computers"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(clap::Args, Debug)]
pub struct StoreArg {
    /// The results store.
    #[arg(long, default_value = "results", value_name = "DIR")]
    pub store: PathBuf,
}

/// The store a read-only command (`report`, `compare`) reads. Named with `--store`, it
/// must exist: a report of a mistyped path would read as "no measurements yet".
#[derive(clap::Args, Debug)]
pub struct ReadStoreArg {
    /// The results store (default: results; a store named here must exist).
    #[arg(long, value_name = "DIR")]
    pub store: Option<PathBuf>,
}

impl ReadStoreArg {
    /// The store's path: the default `results` (a workspace before its first apply has
    /// none), or the one named, which must be a directory.
    pub fn path(&self) -> Result<PathBuf> {
        match &self.store {
            None => Ok(PathBuf::from("results")),
            Some(p) => existing_store(
                "--store",
                p,
                "name the directory `apply --store` wrote, or leave --store out for `results`",
            )
            .map(|()| p.clone()),
        }
    }
}

/// A store the command line names must be there: an error (exit 2) naming the flag,
/// then `hint`.
fn existing_store(flag: &str, path: &std::path::Path, hint: &str) -> Result<()> {
    let why = match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => return Ok(()),
        Ok(_) => "not a directory".to_string(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => "no such directory".to_string(),
        Err(e) => e.to_string(),
    };
    Err(Error::Usage(format!(
        "{flag}: no store at {} ({why}): {hint}",
        crate::shown::one_line(&path.display().to_string())
    )))
}

#[derive(clap::Args, Debug)]
pub struct CellsArg {
    /// The most cells one scenario's matrix may expand to.
    #[arg(long, default_value_t = plan::DEFAULT_MAX_CELLS, value_name = "N")]
    pub max_cells: u64,
}

#[derive(clap::Args, Debug, Default)]
pub struct SelectArg {
    /// Run only the cells matching PATTERN (repeatable): axis=glob pairs such as
    /// `board=pi-1,test=xz`, or a cell key prefix. Plan shows the others as skipped.
    #[arg(long, value_name = "PATTERN")]
    pub only: Vec<String>,
    /// Measure the cells matching PATTERN again (repeatable), like a terraform taint:
    /// their stored runs stay on disk but no longer count. Plan only shows it; apply
    /// records it in the store (redo.json) before running.
    #[arg(long, value_name = "PATTERN")]
    pub redo: Vec<String>,
    /// What to do with cells measured on a board that has changed since (kernel,
    /// os-release, firmware, boot config): refuse to add runs to them (default), keep
    /// their runs and add new ones, or redo them. The choice is recorded in the store.
    #[arg(long, value_enum, default_value_t = OnDrift::Refuse, value_name = "CHOICE")]
    pub on_drift: OnDrift,
    /// Run only the K-th of N deterministic shares of the plan (like 2/3), split by
    /// board (a cluster with its members, a board with its peers, boards flashed through
    /// one host), so that N controllers given the same files never drive one board
    /// together.
    #[arg(long, value_name = "K/N")]
    pub shard: Option<String>,
}

/// `SelectArg`, parsed.
#[derive(Debug, Default)]
pub struct Selection {
    pub only: Vec<plan::select::Selector>,
    pub redo: Vec<plan::select::Selector>,
    pub on_drift: OnDrift,
    pub shard: Option<plan::shard::Shard>,
    /// The shard's boards, dealt once over the plan's cells (`deal`).
    dealt: std::sync::OnceLock<std::collections::BTreeSet<String>>,
}

impl SelectArg {
    pub fn parse(&self) -> Result<Selection> {
        let parse = |v: &[String]| -> Result<Vec<_>> {
            v.iter().map(|t| plan::select::Selector::parse(t)).collect()
        };
        Ok(Selection {
            only: parse(&self.only)?,
            redo: parse(&self.redo)?,
            on_drift: self.on_drift,
            shard: self
                .shard
                .as_deref()
                .map(plan::shard::Shard::parse)
                .transpose()
                .map_err(Error::Usage)?,
            dealt: std::sync::OnceLock::new(),
        })
    }
}

impl Selection {
    /// Deals `--shard` over every cell of the plan (once; later calls keep the first).
    pub fn deal<'c>(
        &self,
        ws: &'c crate::model::Workspace,
        cells: impl IntoIterator<Item = &'c plan::Cell>,
    ) {
        if let Some(shard) = &self.shard {
            let _ = self.dealt.set(shard.owns(ws, cells).into_iter().collect());
        }
    }

    /// Whether apply runs `cell` under `--only` and `--shard` (a shard not dealt yet
    /// runs nothing).
    pub fn runs(&self, cell: &plan::Cell) -> bool {
        let in_shard = self.shard.is_none()
            || self
                .dealt
                .get()
                .is_some_and(|b| b.contains(cell.address.board.as_str()));
        in_shard && (self.only.is_empty() || plan::select::any(&self.only, cell))
    }
    /// Whether `cell` is to be redone (and runs under `--only`).
    pub fn redoes(&self, cell: &plan::Cell) -> bool {
        self.runs(cell) && plan::select::any(&self.redo, cell)
    }
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Make a workspace here (or in --dir): boards/, scenarios/first.toml and a
    /// .gitignore; a board file for each --board host from what it says over SSH (model,
    /// memory, disks, links, distribution, sudo), its free disks commented out; then
    /// print the next three commands. Never replaces a file.
    #[command(
        after_help = "Examples:\n  benchpipe init --board pi@pi4.local\n  benchpipe init --dir lab --board root@cm4-1 --board root@cm4-2"
    )]
    Init(init::InitArgs),
    /// Validate scenario files and the boards and recipes they use.
    #[command(after_help = "Example:\n  benchpipe check scenarios/*.toml")]
    Check {
        #[arg(required = true)]
        files: Vec<PathBuf>,
        #[command(flatten)]
        cells: CellsArg,
    },
    /// Show every cell of the scenarios with its key and state, and what apply would run.
    #[command(
        after_help = "Examples:\n  benchpipe plan scenarios/lab.toml\n  benchpipe plan --json scenarios/lab.toml > plan.json   # then: apply --plan plan.json"
    )]
    Plan {
        #[arg(required = true)]
        files: Vec<PathBuf>,
        #[command(flatten)]
        store: StoreArg,
        /// Print the plan as JSON.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        select: SelectArg,
        #[command(flatten)]
        cells: CellsArg,
    },
    /// Run what the store lacks, on all boards in parallel.
    #[command(
        after_help = "Examples:\n  benchpipe apply --dry-run scenarios/lab.toml\n  benchpipe apply scenarios/lab.toml\n  benchpipe apply --only board=pi-1,test=xz scenarios/lab.toml"
    )]
    Apply(apply_cmd::ApplyArgs),
    /// Statistics on files of numbers (one per line, `#` comments), like ministat:
    /// each file's summary and CI, and each later file's difference from the first.
    #[command(after_help = "Example:\n  benchpipe stats before.txt after.txt")]
    Stats {
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Confidence level of intervals and tests.
        #[arg(long, default_value_t = 0.95)]
        confidence: f64,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Compare two configurations of a scenario on one metric from the store, like a
    /// `[[report.compare]]` entry: the difference with Fieller's CI of the ratio of
    /// means, Welch's p, and a verdict (faster/slower, equivalent, or inconclusive with
    /// the runs that would likely decide it).
    #[command(
        after_help = "Example:\n  benchpipe compare scenarios/lab.toml --metric disk-4k.random_read --baseline storage=sd"
    )]
    Compare {
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// `test.metric`, e.g. disk-4k.random_read.
        #[arg(long)]
        metric: String,
        /// The baseline cells: axis=glob pairs, e.g. `storage=sd,board=pi-*`.
        #[arg(long)]
        baseline: String,
        /// The candidate cells (default: every other cell).
        #[arg(long)]
        candidate: Option<String>,
        /// `model`: also one pooled verdict per board model, beside the per-board rows.
        #[arg(long, value_name = "model")]
        pool: Option<String>,
        /// Differences within this share of the baseline are noise (default: the
        /// scenario's `[report] noise_band`, 2%).
        #[arg(long, value_name = "PERCENT")]
        noise_band: Option<String>,
        /// What the difference is a percentage of: `of-baseline` (default) or `of-mean`
        /// (the difference over the mean of both, like a scenario's `percent`).
        #[arg(long, value_name = "of-baseline|of-mean")]
        percent: Option<String>,
        #[command(flatten)]
        store: ReadStoreArg,
        /// Print JSON.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        cells: CellsArg,
    },
    /// The virtual lab: boards made of network namespaces, each running a real sshd.
    #[command(after_help = "Examples:\n  benchpipe lab up --boards 2\n  benchpipe lab down")]
    Lab {
        #[command(subcommand)]
        action: LabAction,
        /// The project whose boards/ receives the lab's board files.
        #[arg(long, default_value = ".", value_name = "DIR", global = true)]
        root: PathBuf,
    },
    /// Board utilities.
    #[command(
        after_help = "Examples:\n  benchpipe boards check\n  benchpipe boards power cycle pi-1"
    )]
    Boards {
        #[command(subcommand)]
        action: BoardsAction,
        /// The project holding boards/.
        #[arg(long, default_value = ".", value_name = "DIR", global = true)]
        root: PathBuf,
    },
    /// Render the reports of the scenarios from the store.
    #[command(
        after_help = "Examples:\n  benchpipe report scenarios/lab.toml\n  benchpipe report --compare last-month/results results scenarios/lab.toml"
    )]
    Report {
        #[arg(required_unless_present = "compare")]
        files: Vec<PathBuf>,
        #[command(flatten)]
        store: ReadStoreArg,
        /// Where reports go: one directory per scenario inside.
        #[arg(long, default_value = "reports", value_name = "DIR")]
        out: PathBuf,
        /// Compare configurations across two runs instead of writing reports: two
        /// stores (last month's against tonight's) on the scenario FILES, or two
        /// scenario files in --store. Prints Markdown, one table per configuration.
        #[arg(long, num_args = 2, value_names = ["A", "B"])]
        compare: Option<Vec<PathBuf>>,
        /// With --compare: print JSON.
        #[arg(long, requires = "compare")]
        json: bool,
        #[command(flatten)]
        cells: CellsArg,
    },
    /// Each configuration's metrics over the applies (runs), oldest first: per-run
    /// means with their CIs, the change points in them (a permutation-guarded
    /// segmentation that also finds a regression fixed a few runs later), each with
    /// Fieller's CI of the ratio and the stored facts that differ across it.
    #[command(
        after_help = "Examples:\n  benchpipe history scenarios/lab.toml --metric xz.compress\n  benchpipe history scenarios/lab.toml --fail-on regression --findings findings.json   # exit 3 when the newest run regressed"
    )]
    History(history::HistoryArgs),
    /// What each board's walk is doing (phase, cell, for how long), what it finished,
    /// which cells failed and why, and who holds the store's lock: while an apply runs,
    /// and after it ended or died.
    #[command(
        after_help = "Examples:\n  benchpipe status\n  benchpipe status --json --store /var/lib/benchpipe/results"
    )]
    Status {
        #[command(flatten)]
        store: ReadStoreArg,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Remove the store's cells that none of the scenarios given refers to (an old
    /// matrix's, a changed recipe's, a dropped board's); never a cell one of them uses.
    #[command(
        after_help = "Examples:\n  benchpipe gc --dry-run scenarios/*.toml\n  benchpipe gc scenarios/*.toml"
    )]
    Gc(gc::GcArgs),
    /// Store utilities: merge the stores of several controllers into one.
    #[command(
        after_help = "Example:\n  benchpipe store merge ctl-1/results ctl-2/results --into results"
    )]
    Store {
        #[command(subcommand)]
        action: store_cmd::StoreAction,
    },
    /// Print the shell's completion script for benchpipe.
    #[command(
        after_help = "Examples:\n  benchpipe completions bash > /etc/bash_completion.d/benchpipe\n  benchpipe completions zsh > \"${fpath[1]}/_benchpipe\"\n  benchpipe completions fish > ~/.config/fish/completions/benchpipe.fish"
    )]
    Completions {
        /// bash, zsh or fish (also elvish, powershell).
        shell: clap_complete::Shell,
    },
    /// Print benchpipe's man page (roff), from the same definitions as --help.
    #[command(after_help = "Example:\n  benchpipe man > /usr/local/share/man/man1/benchpipe.1")]
    Man,
}

#[derive(Subcommand, Debug)]
pub enum LabAction {
    /// Build N boards (needs root): netns + veth + sshd + loop-device disks each, and
    /// write boards/lab-N.toml and the lab's own known_hosts.
    Up {
        #[arg(long, default_value_t = 3)]
        boards: usize,
        /// The boards log in as NAME, the user a flashed image's `[images.*.firstboot]`
        /// declares, and are flashed from the controller (scenarios/lab-flash.toml).
        #[arg(long, value_name = "NAME")]
        user: Option<String>,
        /// Disks written through and attached with direct I/O, so that a read of one
        /// reaches the controller's disk (hdparm can time it); slower to set up.
        #[arg(long)]
        direct_io: bool,
    },
    /// Remove every part of the lab, also after a crash.
    Down,
    /// Show the lab's boards and whether their sshd runs.
    Status,
    /// Power a lab board on, off, or cycle it: off kills everything in its namespace;
    /// on boots the image on its boot disk (its os-release, maybe a new host key).
    Power {
        #[arg(value_enum)]
        action: lab::PowerArg,
        board: String,
        /// The lab's namespace prefix, when `lab up` was given another (tests do).
        #[arg(long, default_value = "bp-lab", hide = true)]
        prefix: String,
        /// The lab's board-name prefix, likewise.
        #[arg(long, default_value = "lab", hide = true)]
        board_prefix: String,
    },
    /// Build a small test image (ext4 holding /etc/os-release; same options, same
    /// bytes) and print its path and sha256, for a scenario's `[images]`.
    Image(lab::ImageArgs),
}

#[derive(Subcommand, Debug)]
pub enum BoardsAction {
    /// Add a board's SSH host key to its known_hosts: the explicit step that accepts an
    /// unknown or changed key. Only the key whose fingerprint you name is written.
    Trust {
        name: String,
        /// The fingerprint you checked on the board (`SHA256:...`, as the refusal and
        /// `ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub` print it).
        #[arg(long, value_name = "SHA256:...")]
        fingerprint: Option<String>,
        /// Trust whatever key the board offers now, unseen (scripted labs only).
        #[arg(long, conflicts_with = "fingerprint")]
        yes: bool,
    },
    /// List the boards, how they are reached, and the image each was last verified
    /// to run (from the store's results/boards/).
    List {
        #[command(flatten)]
        store: StoreArg,
    },
    /// Preflight every board (or the ones named), all at once: reachable, host key
    /// known, login, root or sudo, free space, the recipes' tools, throttle state. One
    /// line per board; exit 1 when one fails.
    Check { names: Vec<String> },
    /// Switch boards on or off, or power-cycle them: their [power] templates (cycle,
    /// or off then on), run on the controller or their `via` host; a tpi board without
    /// [power] through its BMC (`tpi power`). One line per board; exit 1 when one fails.
    Power {
        #[arg(value_enum)]
        action: lab::PowerArg,
        #[arg(required = true)]
        names: Vec<String>,
    },
}

pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::from(crate::error::EXIT_BAD_INPUT)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    install_signals();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Error::Interrupted) => {
            eprintln!("{}", render_error(&Error::Interrupted));
            ExitCode::from(128 + SIGNAL.load(Ordering::SeqCst).clamp(1, 127) as u8)
        }
        Err(e) => {
            eprintln!("{}", render_error(&e));
            ExitCode::from(e.exit_code())
        }
    }
}

/// An error as printed: its lines kept, any other control character escaped (`shown`):
/// a message may quote a path or a value from a store someone sent.
fn render_error(e: &Error) -> String {
    let text = match e {
        Error::Config(_) => e.to_string(),
        _ => format!("error: {e}"),
    };
    crate::shown::into_lines(text)
}

/// How many combinations that cannot apply `check` lists (`plan` lists them all).
const CHECK_NOT_APPLICABLE: usize = 20;

/// Loads the workspace the scenario files belong to.
pub fn load(files: &[PathBuf], max_cells: u64) -> Result<Workspace> {
    let root = config::find_root(files);
    let ws = check::load_limited(&root, files, max_cells).map_err(Error::Config)?;
    for w in &ws.warnings {
        eprint!("{w}");
    }
    Ok(ws)
}

/// The plans of every scenario, in command-line order.
pub fn plans(ws: &Workspace) -> Vec<(&Scenario, Plan)> {
    ws.scenarios
        .iter()
        .map(|s| (s, plan::expand(ws, s)))
        .collect()
}

/// `plans`, with the cells the store already knows cannot run (their board's kernel
/// lacks their filesystem) moved to each plan's `skipped`.
pub fn known_plans<'w>(ws: &'w Workspace, store: &Store) -> Result<Vec<(&'w Scenario, Plan)>> {
    let facts = store.all_board_facts(ws.boards.keys())?;
    let mut all = plans(ws);
    for (_, p) in &mut all {
        plan::known::skip_known(p, &facts);
    }
    Ok(all)
}

pub fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Init(args) => init::run(&args),
        Command::Check { files, cells } => {
            let ws = load(&files, cells.max_cells)?;
            reports::check_templates(&ws)?;
            let all = plans(&ws);
            let cells: usize = all.iter().map(|(_, p)| p.cells.len()).sum();
            let skipped: usize = all.iter().map(|(_, p)| p.skipped.len()).sum();
            let cannot = match skipped {
                0 => String::new(),
                n => format!("; {n} combination(s) of the matrix cannot apply:"),
            };
            println!(
                "ok: {} scenario(s), {} board(s), {} test(s), {} cell(s){cannot}",
                ws.scenarios.len(),
                ws.boards.len(),
                ws.recipes.len(),
                cells
            );
            print!(
                "{}",
                plan_view::not_applicable(&all, CHECK_NOT_APPLICABLE, "  not applicable: ")
            );
            Ok(())
        }
        Command::Plan {
            files,
            store,
            json,
            select,
            cells,
        } => {
            let select = select.parse()?;
            let ws = load(&files, cells.max_cells)?;
            let store = Store::open_read(&store.store)?;
            let out = plan_text(&ws, &store, json, &select)?;
            print!("{out}");
            Ok(())
        }
        Command::Apply(args) => apply_cmd::run(args),
        Command::Stats {
            files,
            confidence,
            json,
        } => compare::stats(&files, confidence, json),
        Command::Compare {
            files,
            metric,
            baseline,
            candidate,
            pool,
            noise_band,
            percent,
            store,
            json,
            cells,
        } => compare::compare(
            &files,
            &store.path()?,
            &compare::CompareArgs {
                metric,
                baseline,
                candidate,
                pool,
                noise_band,
                percent,
                json,
                max_cells: cells.max_cells,
            },
        ),
        Command::Lab { action, root } => match action {
            LabAction::Up {
                boards,
                user,
                direct_io,
            } => {
                let options = crate::lab::LabOptions {
                    login_user: user,
                    direct_io,
                    ..crate::lab::LabOptions::default()
                };
                let info = crate::lab::up_with(&root, boards, &options)?;
                if info.already_up {
                    println!("lab already up with {} board(s)", info.boards.len());
                }
                for b in &info.boards {
                    println!("{}  {}  {}", b.name, b.address, b.board_file.display());
                }
                Ok(())
            }
            LabAction::Down => {
                crate::lab::down(&root)?;
                println!("lab down");
                Ok(())
            }
            LabAction::Image(args) => lab::image(&args),
            LabAction::Power {
                action,
                board,
                prefix,
                board_prefix,
            } => lab::power(&root, action, &board, &prefix, &board_prefix),
            LabAction::Status => {
                match crate::lab::status(&root)? {
                    None => println!("no lab under {}", root.display()),
                    Some(info) => {
                        for b in &info.boards {
                            println!(
                                "{}  {}  sshd {}",
                                b.name,
                                b.address,
                                if b.sshd_running {
                                    "running"
                                } else {
                                    "NOT running"
                                }
                            );
                        }
                    }
                }
                Ok(())
            }
        },
        Command::Boards { action, root } => boards::run(action, &root),
        Command::Gc(args) => gc::run(&args),
        Command::Store { action } => store_cmd::run(&action),
        Command::Status { store, json } => status::status(&store.path()?, json),
        Command::History(args) => history::history(&args),
        Command::Completions { shell } => {
            let mut command = <Cli as clap::CommandFactory>::command();
            clap_complete::generate(shell, &mut command, "benchpipe", &mut std::io::stdout());
            Ok(())
        }
        Command::Man => {
            let mut page = Vec::new();
            clap_mangen::Man::new(<Cli as clap::CommandFactory>::command())
                .render(&mut page)
                .map_err(|e| Error::Other(format!("the man page: {e}")))?;
            std::io::Write::write_all(&mut std::io::stdout(), &page)
                .map_err(|e| Error::Other(format!("stdout: {e}")))
        }
        Command::Report {
            files,
            store,
            compare: Some(sides),
            json,
            cells,
            ..
        } => compare::report_across(&files, &sides, &store.path()?, json, cells.max_cells),
        Command::Report {
            files,
            store,
            out,
            cells,
            ..
        } => {
            // The store first: a board it holds cells of needs no board file to be
            // reported (retired, renamed, a lab torn down).
            let store = Store::open_read(store.path()?)?;
            let data = store.all_for_report()?;
            let ws = load_for_report(&files, cells.max_cells, &stored_names(&data))?;
            let written = write_reports_of(&ws, &store, &data, &out);
            crate::parallel::free_later(data);
            for path in written? {
                println!("{}", path.display());
            }
            Ok(())
        }
    }
}

/// Parses `axis=glob,axis=glob` into a cell pattern.
fn parse_pattern(text: &str) -> Result<crate::model::CellPattern> {
    crate::plan::select::cell_pattern(text)
}
