//! How a recipe's missing commands get onto a side: the one decision `provision` acts
//! on and `boards check` reports, so that what the preflight says apply will do (apt-get,
//! non-free through private lists, nothing without root) is what apply does.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use crate::model::{Needs, PackageManager, Recipe, Side, TestName};
use crate::transport::{Transport, TransportError};

/// What provisioning does about a recipe whose commands are missing on a side.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Route {
    /// The recipe names no package for the side's manager (`None`: for any manager):
    /// its cells are skipped with that reason.
    NoPackage { manager: Option<PackageManager> },
    /// The side's os-release names no package manager benchpipe knows (`os` is what it
    /// runs): its cells fail.
    NoManager { os: String },
    /// Not root there: nothing is installed, and its cells fail.
    NotRoot {
        manager: PackageManager,
        packages: Vec<String>,
    },
    /// Installed with the manager, from the side's own lists.
    Install {
        manager: PackageManager,
        packages: Vec<String>,
    },
    /// apt packages outside main that the side's sources lack: read from the side's
    /// own mirrors with that component (`component`) through private lists
    /// (`non_free`), /etc/apt left as it is.
    NonFree {
        component: &'static str,
        packages: Vec<String>,
    },
    /// The side's lists lack these (after one refresh, in apply): its cells fail.
    Unavailable {
        manager: PackageManager,
        packages: Vec<String>,
    },
}

/// The route for one recipe's `needs` on a side whose manager is `manager` (`Err`:
/// what the side runs, without a known one), running as root there or not, whose lists
/// lack the packages in `gone` (asked only where it matters: root, and packages named).
pub(crate) fn route(
    needs: &Needs,
    manager: Result<PackageManager, &str>,
    is_root: bool,
    gone: &BTreeSet<String>,
    component: &'static str,
) -> Route {
    if !needs.has_packages() {
        return Route::NoPackage { manager: None };
    }
    let manager = match manager {
        Ok(m) => m,
        Err(os) => return Route::NoManager { os: os.to_string() },
    };
    let packages = needs.packages_for(manager).to_vec();
    if packages.is_empty() {
        return Route::NoPackage {
            manager: Some(manager),
        };
    }
    if !is_root {
        return Route::NotRoot { manager, packages };
    }
    let absent: Vec<String> = packages
        .iter()
        .filter(|p| gone.contains(*p))
        .cloned()
        .collect();
    if absent.is_empty() {
        Route::Install { manager, packages }
    } else if manager == PackageManager::Apt
        && absent.iter().all(|p| needs.apt_non_free.contains(p))
    {
        Route::NonFree {
            component,
            packages,
        }
    } else {
        Route::Unavailable {
            manager,
            packages: absent,
        }
    }
}

impl Route {
    /// What apply will do, for `boards check`: "apply installs xz-utils with apt-get".
    pub(crate) fn said(&self) -> String {
        match self {
            Route::NoPackage { manager: None } => {
                "the recipe names no package for it: apply skips its cells".into()
            }
            Route::NoPackage { manager: Some(m) } => {
                format!("the recipe names no {m} package for it: apply skips its cells")
            }
            Route::NoManager { os } => {
                format!("apply cannot install it: no package manager benchpipe knows on {os}")
            }
            Route::NotRoot { manager, packages } => format!(
                "apply cannot install it without root (`{}` needs root; set become = \"sudo\" in [ssh])",
                manager.install_hint(packages)
            ),
            Route::Install { manager, packages } => {
                format!("apply runs `{}`", manager.install_hint(packages))
            }
            Route::NonFree {
                component,
                packages,
            } => format!(
                "apply installs {} from {component}, which the board's apt sources lack: read from its own mirror through private lists, /etc/apt left as it is",
                packages.join(" ")
            ),
            Route::Unavailable { manager, packages } => format!(
                "{} not in the board's {manager} lists: apply refreshes them once, and if still absent fails these cells",
                packages.join(" ")
            ),
        }
    }
}

/// What a recipe needs on these sides together; `None` when it names nothing there.
pub(crate) fn merged(r: &Recipe, on: &[Side]) -> Option<Needs> {
    let mut out: Option<Needs> = None;
    for n in on.iter().filter_map(|s| r.needs.get(s)) {
        let o = out.get_or_insert_with(Needs::default);
        for p in &n.apt_non_free {
            if !o.apt_non_free.contains(p) {
                o.apt_non_free.push(p.clone());
            }
        }
        for (m, p) in &n.packages {
            let list = o.packages.entry(*m).or_default();
            for x in p {
                if !list.contains(x) {
                    list.push(x.clone());
                }
            }
        }
        for c in &n.commands {
            if !o.commands.contains(c) {
                o.commands.push(c.clone());
            }
        }
    }
    out
}

/// For `boards check`: each recipe whose commands are missing on a board, those
/// commands and the route apply would take, from the same read-only questions apply
/// asks (os-release, `id -u`, the manager's lists as they are now; nothing is
/// refreshed or installed).
pub(crate) fn for_preflight(
    t: &mut dyn Transport,
    recipes: &[&Recipe],
    missing: &BTreeSet<String>,
    is_root: bool,
) -> Result<Vec<(TestName, Vec<String>, Route)>, TransportError> {
    let lacking: Vec<(TestName, Needs, Vec<String>)> = recipes
        .iter()
        .filter_map(|r| {
            let n = merged(r, &[Side::Board, Side::Members])?;
            let m: Vec<String> = n
                .commands
                .iter()
                .filter(|c| missing.contains(*c))
                .cloned()
                .collect();
            (!m.is_empty()).then(|| (r.name.clone(), n, m))
        })
        .collect();
    if lacking.is_empty() {
        return Ok(Vec::new());
    }
    let fields = os_release(t)?;
    let manager = PackageManager::for_os_release(&fields).ok_or_else(|| os_name(&fields));
    let component = super::non_free::component(&fields);
    let mut gone = BTreeSet::new();
    if let (Ok(m), true) = (&manager, is_root) {
        let all: BTreeSet<&str> = lacking
            .iter()
            .flat_map(|(_, n, _)| n.packages_for(*m).iter().map(String::as_str))
            .collect();
        if !all.is_empty() {
            gone = super::provision::unavailable(t, *m, &all.into_iter().collect::<Vec<_>>())?;
        }
    }
    Ok(lacking
        .into_iter()
        .map(|(name, n, m)| {
            let r = route(
                &n,
                manager.as_ref().copied().map_err(String::as_str),
                is_root,
                &gone,
                component,
            );
            (name, m, r)
        })
        .collect())
}

/// The side's os-release fields (none when it has no os-release).
pub(crate) fn os_release(
    t: &mut dyn Transport,
) -> Result<BTreeMap<String, String>, TransportError> {
    let out = t.run(
        "cat /etc/os-release 2>/dev/null || cat /usr/lib/os-release 2>/dev/null",
        Some(Duration::from_secs(30)),
    )?;
    Ok(crate::image::expect::parse_os_release(&out.stdout_str()))
}

/// What a side runs, for a message: its os-release's name.
pub(crate) fn os_name(fields: &BTreeMap<String, String>) -> String {
    fields
        .get("PRETTY_NAME")
        .or(fields.get("ID"))
        .cloned()
        .unwrap_or_else(|| "a system without /etc/os-release".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn needs(apt: &[&str], non_free: &[&str], apk: &[&str]) -> Needs {
        let mut n = Needs {
            commands: vec!["iozone".into()],
            ..Needs::default()
        };
        for (m, p) in [(PackageManager::Apt, apt), (PackageManager::Apk, apk)] {
            if !p.is_empty() {
                n.packages
                    .insert(m, p.iter().map(ToString::to_string).collect());
            }
        }
        n.apt_non_free = non_free.iter().map(ToString::to_string).collect();
        n
    }

    fn set(p: &[&str]) -> BTreeSet<String> {
        p.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn iozone3_absent_from_main_goes_through_non_free_and_is_said_so() {
        let n = needs(&["iozone3"], &["iozone3"], &[]);
        let apt = Ok(PackageManager::Apt);
        let r = route(&n, apt, true, &set(&["iozone3"]), "non-free");
        assert!(
            matches!(
                r,
                Route::NonFree {
                    component: "non-free",
                    ..
                }
            ),
            "{r:?}"
        );
        let said = r.said();
        assert!(
            said.contains("from non-free") && said.contains("private lists"),
            "{said}"
        );
        assert!(!said.contains("apt-get install"), "{said}");
        // Listed already (the sources have non-free): a plain install.
        let r = route(&n, apt, true, &set(&[]), "non-free");
        assert_eq!(r.said(), "apply runs `apt-get install iozone3`");
        // Absent, and not declared outside main: the cells fail.
        let main_only = needs(&["iozone3"], &[], &[]);
        let r = route(&main_only, apt, true, &set(&["iozone3"]), "non-free");
        assert!(matches!(r, Route::Unavailable { .. }), "{r:?}");
    }

    #[test]
    fn without_root_a_package_or_a_manager_nothing_is_installed() {
        let n = needs(&["iozone3"], &["iozone3"], &[]);
        let r = route(
            &n,
            Ok(PackageManager::Apt),
            false,
            &set(&["iozone3"]),
            "non-free",
        );
        assert!(r.said().contains("without root"), "{}", r.said());
        let r = route(&n, Ok(PackageManager::Apk), true, &set(&[]), "non-free");
        assert!(r.said().contains("no apk package"), "{}", r.said());
        let r = route(&n, Err("Plan 9"), true, &set(&[]), "non-free");
        assert!(r.said().contains("Plan 9"), "{}", r.said());
        let r = route(
            &needs(&[], &[], &[]),
            Ok(PackageManager::Apt),
            true,
            &set(&[]),
            "non-free",
        );
        assert_eq!(r, Route::NoPackage { manager: None });
    }
}
