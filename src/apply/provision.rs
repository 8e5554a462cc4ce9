//! Provisioning: the commands the recipes need, installed where missing with the
//! package manager of the side's distribution (its os-release picks apt, dnf, apk or
//! pacman), and the work and storage directories.
//!
//! Each recipe stands alone: a package its manager does not have, or an install that
//! fails, fails only the cells of the recipes that need it, with that cause; the other
//! recipes' cells go on. apt installs keep the distribution's daemons from starting
//! and take back the units they enable (`quiet_install`); what each install added is
//! recorded in the board's `installed.json` (`store::Install`).

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use super::Job;
use super::route::{Route, merged, os_name, os_release, route};
use super::worker::Worker;
use crate::failure::CellFailure;
use crate::model::{Needs, PackageManager, Recipe, Side, TestName};
use crate::transport::{Transport, TransportError, quote};

/// The recipes provisioning could not serve, and why: their cells fail with it.
pub(super) type Unserved = BTreeMap<TestName, CellFailure>;

/// The installs provisioning made, each under the name of the board whose record keeps
/// it (a board, a peer, a cluster member; the controller's under the walk's name).
pub(super) type Installs = Vec<(crate::model::BoardName, crate::store::Install)>;

impl Worker<'_> {
    /// Adds provisioning's installs to the boards' records; one that cannot be written
    /// is said, and the walk goes on.
    pub(super) fn record_installs(&self, installs: Installs) {
        for (board, mut install) in installs {
            install.session = self.session.to_string();
            if let Err(e) = self.store.record_install(&board, install) {
                self.phase(
                    None,
                    format!("could not record what provisioning installed on {board}: {e}"),
                );
            }
        }
    }
}

impl Worker<'_> {
    /// Makes the board ready for its cells: tools installed, work and storage dirs
    /// there. `Err` fails every cell; the returned recipes fail only their own.
    pub(super) fn prepare(
        &self,
        board: &mut dyn Transport,
        controller: &mut dyn Transport,
        jobs: &[&Job<'_>],
    ) -> Result<Unserved, CellFailure> {
        // Each side installs and checks only what the recipes say that side needs.
        let recipes: BTreeMap<_, &Recipe> =
            jobs.iter().map(|j| (&j.recipe.name, j.recipe)).collect();
        // A board is the only member of itself: it gets what every member needs.
        let mut installs = Installs::new();
        let board_side = provision(
            board,
            self.name(),
            &[Side::Board, Side::Members],
            recipes.values().copied(),
            &mut installs,
        );
        let controller_side = board_side.and_then(|mut unserved| {
            on_controller(
                controller,
                recipes.values().copied(),
                &mut unserved,
                &mut installs,
            )
            .map(|()| unserved)
        });
        // What was installed is recorded also when a later side failed.
        let installs: Installs = installs
            .into_iter()
            .map(|(_, i)| (self.board.name.clone(), i))
            .collect();
        self.record_installs(installs);
        let unserved = controller_side?;
        let mut dirs = vec![self.board.workdir.clone()];
        for j in jobs {
            if let Some(st) = &j.cell.address.storage
                && let Some(st) = self.board.storage(st)
            {
                dirs.push(st.path.clone());
            }
        }
        dirs.sort();
        dirs.dedup();
        let cmd = format!("mkdir -p -- {}", quote::join(&dirs));
        let out = board.run(&cmd, Some(Duration::from_secs(60)))?;
        if !out.exit.success() {
            return Err(CellFailure::step_failed(
                "create work directories",
                &cmd,
                &out.exit,
                &out.stderr_str(),
            ));
        }
        Ok(unserved)
    }

    /// Provisions each connected peer for the recipes of the cells that use it; a peer
    /// that cannot serve a recipe fails that recipe's cells (added to `unserved`).
    pub(super) fn prepare_peers(
        &self,
        peers: &mut super::peer::Peers,
        jobs: &[&Job<'_>],
        unserved: &mut Unserved,
    ) {
        for (name, session) in peers.iter_mut() {
            let recipes: BTreeMap<_, &Recipe> = jobs
                .iter()
                .filter(|j| j.cell.peer.as_ref() == Some(name))
                .map(|j| (&j.recipe.name, j.recipe))
                .collect();
            if recipes.is_empty() {
                continue;
            }
            let mut installs = Installs::new();
            let provisioned = provision(
                session,
                name.as_str(),
                &[Side::Peer],
                recipes.values().copied(),
                &mut installs,
            );
            self.record_installs(
                installs
                    .into_iter()
                    .map(|(_, i)| (name.clone(), i))
                    .collect(),
            );
            match provisioned {
                Ok(lacking) => {
                    for (test, cause) in lacking {
                        unserved.entry(test).or_insert(cause);
                    }
                }
                Err(cause) => {
                    for test in recipes.keys() {
                        unserved.entry((*test).clone()).or_insert(cause.clone());
                    }
                }
            }
        }
    }
}

/// How a package manager is driven: every command runs as root, non-interactive, and
/// waits for a lock another install holds (boards that share one system, as the lab's
/// do, provision at the same time). apt's daemons are kept from starting, and the units
/// its install enabled disabled again (`quiet_install`); the other managers' packages
/// start nothing on install.
fn install_command(m: PackageManager, packages: &[&str]) -> String {
    let p = quote::join(packages);
    match m {
        PackageManager::Apt => super::quiet_install::apt_script(packages),
        PackageManager::Dnf => format!("dnf install -y -q {p}"),
        PackageManager::Apk => format!("apk add -q {p}"),
        PackageManager::Pacman => format!("pacman -S --noconfirm --needed {p}"),
    }
}

/// Refreshes the manager's package lists (its failure, offline say, is not fatal:
/// the lists it had are asked again).
fn update_command(m: PackageManager) -> &'static str {
    match m {
        PackageManager::Apt => "apt-get -o DPkg::Lock::Timeout=600 update -q",
        PackageManager::Dnf => "dnf makecache -q",
        PackageManager::Apk => "apk update -q",
        PackageManager::Pacman => "pacman -Sy --noconfirm",
    }
}

/// A shell test that succeeds when the manager's lists have the package `"$p"`.
fn available_test(m: PackageManager) -> &'static str {
    match m {
        PackageManager::Apt => "apt-cache show -- \"$p\" >/dev/null 2>&1",
        PackageManager::Dnf => "dnf -q info \"$p\" >/dev/null 2>&1",
        PackageManager::Apk => "apk search -q -e \"$p\" 2>/dev/null | grep -q .",
        PackageManager::Pacman => "pacman -Si \"$p\" >/dev/null 2>&1",
    }
}

/// The packages of `packages` the manager's lists lack.
pub(super) fn unavailable(
    t: &mut dyn Transport,
    m: PackageManager,
    packages: &[&str],
) -> Result<BTreeSet<String>, TransportError> {
    let script = format!(
        "for p in {}; do {} || echo \"$p\"; done",
        quote::join(packages),
        available_test(m)
    );
    let out = t.run(&script, Some(Duration::from_secs(300)))?;
    Ok(out.stdout_str().lines().map(str::to_string).collect())
}

/// The side's package manager, from its os-release; `Err` holds what the side runs.
pub(super) fn manager_of(t: &mut dyn Transport) -> Result<PackageManager, String> {
    let fields = os_release(t).map_err(|e| e.to_string())?;
    PackageManager::for_os_release(&fields).ok_or_else(|| os_name(&fields))
}

/// What the recipes need on the controller, installed; a recipe it cannot serve joins
/// `unserved` (unless a board side already put it there).
pub(super) fn on_controller<'r>(
    controller: &mut dyn Transport,
    recipes: impl Iterator<Item = &'r Recipe>,
    unserved: &mut Unserved,
    installs: &mut Installs,
) -> Result<(), CellFailure> {
    let mine = provision(
        controller,
        "the controller",
        &[Side::Controller],
        recipes,
        installs,
    )?;
    for (test, cause) in mine {
        unserved.entry(test).or_insert(cause);
    }
    Ok(())
}

/// Checks that every command the recipes need on `on` exists there, installing the
/// missing ones' packages, when running as root there, with the side's package
/// manager. Returns the recipes left without their commands, each with its cause;
/// each apt install is added to `installs` (under the side's name; callers give it the
/// board whose record keeps it).
pub(super) fn provision<'r>(
    t: &mut dyn Transport,
    side: &str,
    on: &[Side],
    recipes: impl Iterator<Item = &'r Recipe>,
    installs: &mut Installs,
) -> Result<Unserved, CellFailure> {
    let owned: Vec<(&TestName, Needs)> = recipes
        .filter_map(|r| merged(r, on).map(|n| (&r.name, n)))
        .collect();
    let needs: Vec<(&TestName, &Needs)> = owned.iter().map(|(t, n)| (*t, n)).collect();
    let commands: BTreeSet<&str> = needs
        .iter()
        .flat_map(|(_, n)| n.commands.iter().map(String::as_str))
        .collect();
    let mut unserved = Unserved::new();
    if commands.is_empty() {
        return Ok(unserved);
    }
    let (missing, leftover) = missing_and_leftover(t, &commands)?;
    if leftover {
        take_back_leftover(t, side, installs)?;
    }
    let lacking: Vec<(&TestName, &Needs, Vec<String>)> = needs
        .iter()
        .map(|(name, n)| {
            let m: Vec<String> = n
                .commands
                .iter()
                .filter(|c| missing.contains(c))
                .cloned()
                .collect();
            (*name, *n, m)
        })
        .filter(|(_, _, m)| !m.is_empty())
        .collect();
    // A recipe naming no package for a command it lacks (iozone, which Debian does not
    // package) cannot run here: a skip with the reason, not a failure, and the other
    // recipes go on.
    let not_installed = |m: &[String], why: &str| {
        let verb = if m.len() == 1 { "is" } else { "are" };
        CellFailure::NotApplicable {
            reason: format!("{} {verb} not installed on {side}{why}", m.join(", ")),
        }
    };
    // Each recipe's way to its commands is `route`'s, the one `boards check` reports:
    // first what needs no question to the side (no package named), then the manager
    // and root, then the manager's lists.
    let no_question = |n: &Needs| route(n, Err(""), false, &BTreeSet::new(), "");
    let (lacking, no_package): (Vec<_>, Vec<_>) = lacking
        .into_iter()
        .partition(|(_, n, _)| !matches!(no_question(n), Route::NoPackage { .. }));
    for (name, _, m) in no_package {
        unserved.insert(name.clone(), not_installed(&m, ""));
    }
    if lacking.is_empty() {
        return Ok(unserved);
    }
    let fields = os_release(t)?;
    let Some(manager) = PackageManager::for_os_release(&fields) else {
        let os = os_name(&fields);
        for (name, _, m) in lacking {
            unserved.insert(
                name.clone(),
                CellFailure::NoPackageManager {
                    side: side.to_string(),
                    os: os.clone(),
                    commands: m,
                },
            );
        }
        return Ok(unserved);
    };
    let component = super::non_free::component(&fields);
    let is_root = t
        .run("id -u", Some(Duration::from_secs(30)))
        .is_ok_and(|o| o.stdout_str().trim() == "0");
    let lacks =
        |commands: Vec<String>, packages: &[String], installed| CellFailure::MissingCommands {
            side: side.to_string(),
            commands,
            packages: packages.to_vec(),
            installed,
            manager: Some(manager),
        };
    // Without root, or with no package named for this manager, nothing can help.
    let mut wanted: Vec<(&TestName, &Needs, &[String])> = Vec::new();
    for (name, n, m) in &lacking {
        let packages = n.packages_for(manager);
        match route(n, Ok(manager), is_root, &BTreeSet::new(), component) {
            Route::NoPackage { .. } => {
                let why = format!(" (the recipe names no {} package for it)", manager.name());
                unserved.insert((*name).clone(), not_installed(m, &why));
            }
            Route::NotRoot { .. } => {
                unserved.insert((*name).clone(), lacks(m.clone(), packages, false));
            }
            _ => wanted.push((name, n, packages)),
        }
    }
    let all: BTreeSet<&str> = wanted
        .iter()
        .flat_map(|(_, _, p)| p.iter().map(String::as_str))
        .collect();
    if all.is_empty() {
        return Ok(unserved);
    }
    let all: Vec<&str> = all.into_iter().collect();
    // Packages the lists lack, after one refresh of the lists, fail only their recipes.
    let mut gone = unavailable(t, manager, &all)?;
    if !gone.is_empty() {
        let _ = t.run(update_command(manager), Some(Duration::from_secs(900)))?;
        let again: Vec<&str> = gone.iter().map(String::as_str).collect();
        gone = unavailable(t, manager, &again)?;
    }
    let mut installable: BTreeSet<&str> = BTreeSet::new();
    let mut to_install: Vec<(&TestName, &[String])> = Vec::new();
    // Recipes whose only absent packages are ones they say live outside main: read
    // from the side's mirrors with that component (`non_free`).
    let mut from_non_free: Vec<(&TestName, &[String])> = Vec::new();
    for (name, n, packages) in wanted {
        match route(n, Ok(manager), true, &gone, component) {
            Route::NonFree { .. } => from_non_free.push((name, packages)),
            Route::Unavailable {
                packages: absent, ..
            } => {
                unserved.insert(
                    name.clone(),
                    CellFailure::PackageUnavailable {
                        side: side.to_string(),
                        manager,
                        packages: absent,
                    },
                );
            }
            _ => {
                installable.extend(packages.iter().map(String::as_str));
                to_install.push((name, packages));
            }
        }
    }
    if installable.is_empty() && from_non_free.is_empty() {
        return Ok(unserved);
    }
    if !installable.is_empty() {
        let installable: Vec<&str> = installable.into_iter().collect();
        let install = install_command(manager, &installable);
        let mut out = t.run(&install, Some(Duration::from_secs(1800)))?;
        record(installs, side, manager, &out);
        if !out.exit.success() && out.exit.code != Some(3) {
            // Stale lists name versions the mirror no longer has: refresh, try once more.
            let _ = t.run(update_command(manager), Some(Duration::from_secs(900)))?;
            out = t.run(&install, Some(Duration::from_secs(1800)))?;
            record(installs, side, manager, &out);
        }
        if !out.exit.success() {
            let cause = CellFailure::step_failed(
                format!("{side}: provision"),
                &manager.install_hint(
                    &installable
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>(),
                ),
                &out.exit,
                &out.stderr_str(),
            );
            for (name, _) in to_install.drain(..) {
                unserved.insert(name.clone(), cause.clone());
            }
        }
    }
    if !from_non_free.is_empty() {
        let packages: BTreeSet<&str> = from_non_free
            .iter()
            .flat_map(|(_, p)| p.iter().map(String::as_str))
            .collect();
        let packages: Vec<&str> = packages.into_iter().collect();
        let out = t.run(
            &super::non_free::install_script(component, &packages),
            Some(Duration::from_secs(1800)),
        )?;
        record(installs, side, manager, &out);
        if out.exit.success() {
            to_install.extend(from_non_free);
        } else {
            let cause = CellFailure::step_failed(
                format!("{side}: provision from {component}"),
                &format!(
                    "apt-get install {} (from the {component} component)",
                    packages.join(" ")
                ),
                &out.exit,
                &out.stderr_str(),
            );
            for (name, _) in from_non_free {
                unserved.insert(name.clone(), cause.clone());
            }
        }
    }
    let still = missing_commands(t, &commands)?;
    for (name, packages) in to_install {
        let n = needs.iter().find(|(r, _)| *r == name).map(|(_, n)| *n);
        let left: Vec<String> = n
            .map(|n| {
                n.commands
                    .iter()
                    .filter(|c| still.contains(c))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        if !left.is_empty() {
            unserved.insert(name.clone(), lacks(left, packages, true));
        }
    }
    Ok(unserved)
}

/// An apt install's report, added to `installs` when it did or found anything.
fn record(
    installs: &mut Installs,
    side: &str,
    manager: PackageManager,
    out: &crate::transport::Output,
) {
    if manager != PackageManager::Apt {
        return;
    }
    let r = super::quiet_install::parse(&out.stdout_str());
    if r.policy.is_empty() && r.packages.is_empty() && r.recovered_packages.is_empty() {
        return;
    }
    installs.push((
        crate::model::BoardName::new(side),
        crate::store::Install {
            session: String::new(),
            side: side.to_string(),
            manager: manager.name().to_string(),
            policy: r.policy,
            packages: r.packages,
            disabled: r.disabled,
            recovered_packages: r.recovered_packages,
            recovered_disabled: r.recovered_disabled,
        },
    ));
}

/// The installed version of each of `packages` (those not installed are left out), as
/// the side's package database says: recorded in the cells' facts beside the tools'
/// own `[facts]`.
pub(super) fn package_versions(
    t: &mut dyn Transport,
    m: PackageManager,
    packages: &[String],
) -> BTreeMap<String, String> {
    if packages.is_empty() {
        return BTreeMap::new();
    }
    let query = match m {
        // The section too: one outside main (`non-free/utils`) says where it came from.
        PackageManager::Apt => "dpkg-query -W -f='${Version} ${Section}' -- \"$p\"",
        PackageManager::Dnf => "rpm -q --qf '%{VERSION}-%{RELEASE}' -- \"$p\"",
        // `apk info -e -v fio` prints `fio-3.36-r0`: the name's prefix is cut below.
        PackageManager::Apk => "apk info -e -v \"$p\"",
        PackageManager::Pacman => "pacman -Q -- \"$p\" | cut -d' ' -f2",
    };
    let script = format!(
        "for p in {}; do v=$({query} 2>/dev/null | head -c 200); \
         [ -n \"$v\" ] && printf '%s\\t%s\\n' \"$p\" \"$v\"; done",
        quote::join(packages)
    );
    let Ok(out) = t.run(&script, Some(Duration::from_secs(60))) else {
        return BTreeMap::new();
    };
    out.stdout_str()
        .lines()
        .filter_map(|l| l.split_once('\t'))
        .map(|(p, v)| {
            let v = v.trim();
            let v = v.strip_prefix(&format!("{p}-")).unwrap_or(v);
            let v = match v.rsplit_once(' ') {
                Some((version, section)) if section.contains('/') => {
                    format!("{} ({section})", version.trim())
                }
                Some((version, _)) => version.trim().to_string(),
                None => v.to_string(),
            };
            (p.to_string(), v)
        })
        .filter(|(_, v)| !v.is_empty())
        .collect()
}

/// `missing_commands`, and whether an apt install an earlier apply began was left
/// unfinished there (`quiet_install`: its marker, or benchpipe's policy-rc.d).
fn missing_and_leftover(
    t: &mut dyn Transport,
    commands: &BTreeSet<&str>,
) -> Result<(Vec<String>, bool), TransportError> {
    use super::quiet_install::{MARK, POLICY, STATE};
    let words: Vec<&str> = commands.iter().copied().collect();
    // A command name holds no `/`: the marker line is never one.
    let script = format!(
        "for c in {}; do command -v \"$c\" >/dev/null 2>&1 || echo \"$c\"; done; \
         if [ -e {} ] || grep -qxF -- {} {} 2>/dev/null; then echo /leftover-install; fi",
        quote::join(&words),
        quote::sh(&format!("{STATE}/in-progress")),
        quote::sh(MARK),
        quote::sh(POLICY),
    );
    let out = t.run(&script, Some(Duration::from_secs(60)))?;
    let mut leftover = false;
    let missing = out
        .stdout_str()
        .lines()
        .filter(|l| {
            let marker = *l == "/leftover-install";
            leftover |= marker;
            !marker
        })
        .map(str::to_string)
        .collect();
    Ok((missing, leftover))
}

/// An install an earlier apply left unfinished on an apt side: finished and taken back
/// (the install script with no package), and recorded.
fn take_back_leftover(
    t: &mut dyn Transport,
    side: &str,
    installs: &mut Installs,
) -> Result<(), CellFailure> {
    if manager_of(t) != Ok(PackageManager::Apt) {
        return Ok(());
    }
    let script = super::quiet_install::apt_script(&[]);
    let out = t.run(&script, Some(Duration::from_secs(1800)))?;
    record(installs, side, PackageManager::Apt, &out);
    if out.exit.success() {
        return Ok(());
    }
    Err(CellFailure::step_failed(
        format!("{side}: provision"),
        "take back an unfinished install",
        &out.exit,
        &out.stderr_str(),
    ))
}

pub(crate) fn missing_commands(
    t: &mut dyn Transport,
    commands: &BTreeSet<&str>,
) -> Result<Vec<String>, TransportError> {
    let words: Vec<&str> = commands.iter().copied().collect();
    let script = format!(
        "for c in {}; do command -v \"$c\" >/dev/null 2>&1 || echo \"$c\"; done",
        quote::join(&words)
    );
    let out = t.run(&script, Some(Duration::from_secs(60)))?;
    Ok(out.stdout_str().lines().map(str::to_string).collect())
}
