//! What the board is and how it is now: facts recorded beside samples, temperature and
//! load.

use std::collections::BTreeMap;
use std::time::Duration;

use super::Job;
use super::worker::{Transports, Worker, board_host};
use crate::bench::Vars;
use crate::model::{Board, Side, TestName};
use crate::store::{CellFacts, NetworkFact, OsRelease, Packages, RecipeFact, Scalar};
use crate::transport::{Transport, quote};

/// What the board is, recorded beside each cell's samples: the provenance that explains
/// numbers later (kernel, OS release, CPU, governor, memory). Tool versions come from
/// the recipes' `[facts]` (`recipe_facts`).
pub(super) fn gather_facts(t: &mut dyn Transport, board: &Board) -> CellFacts {
    const SCRIPT: &str = r#"
echo "@@kernel"; uname -srm
echo "@@os_release"; cat /etc/os-release 2>/dev/null
echo "@@cpus"; nproc 2>/dev/null
echo "@@cpu_model"; (grep -m1 -E '^(model name|Model)' /proc/cpuinfo | cut -d: -f2-) 2>/dev/null
echo "@@governor"; cat /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor 2>/dev/null
echo "@@memory_kib"; awk '/^MemTotal/ {print $2}' /proc/meminfo 2>/dev/null
"#;
    let mut facts = CellFacts {
        board: Some(board.name.as_str().into()),
        model: Some(board.model.as_str().into()),
        // Which benchpipe measured: the report's provenance shows it.
        benchpipe: Some(env!("CARGO_PKG_VERSION").into()),
        ..CellFacts::default()
    };
    match t.run(SCRIPT, Some(Duration::from_secs(60))) {
        Ok(out) => {
            let text = out.stdout_str();
            let sections = crate::sections::parse(&text);
            let os: OsRelease = sections
                .get("os_release")
                .unwrap_or_default()
                .iter()
                .filter_map(|l| l.split_once('='))
                .map(|(key, v)| (key.to_string(), v.trim_matches('"').into()))
                .collect();
            facts.os_release = sections.get("os_release").map(|_| os);
            let value = |name: &str| {
                let v = sections.joined(name)?;
                (!v.is_empty()).then(|| Scalar::from(v))
            };
            facts.kernel = value("kernel");
            facts.cpus = value("cpus");
            facts.cpu_model = value("cpu_model");
            facts.governor = value("governor");
            facts.memory_kib = value("memory_kib");
        }
        Err(e) => facts.error = Some(e.to_string().into()),
    }
    facts
}

/// The recipe a cell ran, as its facts record it: built in or the workspace's file, and
/// the sha256 of its text. The key hashes what the recipe means; this says which text.
pub(super) fn recipe_fact(recipe: &crate::model::Recipe) -> RecipeFact {
    RecipeFact {
        file: Scalar::of(&recipe.file),
        origin: Scalar::of(&recipe.source.origin),
        sha256: Some(recipe.source.sha256.as_str().into()),
        other: BTreeMap::new(),
    }
}

/// The most of a fact's output that is kept: a version line, not a stream.
const FACT_BYTES: usize = 1024;

impl Worker<'_> {
    /// Each recipe's `[facts]`, gathered once per board: its `tools` to merge into that
    /// recipe's cells' facts (`CellFacts::merge`), with the installed versions of the
    /// packages its `[needs]` name (`packages`, `controller_packages`). A command that
    /// fails records nothing.
    pub(super) fn recipe_facts(
        &self,
        t: &mut Transports<'_>,
        jobs: &[&Job<'_>],
    ) -> BTreeMap<TestName, CellFacts> {
        let mut vars = Vars::new();
        vars.set("workdir", self.board.workdir.clone())
            .set("controller_dir", self.service_dir(Side::Controller))
            .set("board", self.board.name.as_str())
            .set("host", board_host(self.board));
        let mut out = BTreeMap::new();
        let mut managers = BTreeMap::new();
        for job in jobs {
            let recipe = job.recipe;
            t.peer.clone_from(&job.cell.peer);
            if (recipe.facts.is_empty() && recipe.needs.is_empty())
                || out.contains_key(&recipe.name)
            {
                continue;
            }
            let mut entry = CellFacts::default();
            for fact in &recipe.facts {
                if let Some(v) = run_fact(t.side(fact.on), &fact.command, &vars) {
                    entry.tools.insert(fact.name.clone(), v.into());
                }
            }
            // The versions of the packages the recipe names, as installed on each side.
            for (side, needs) in &recipe.needs {
                let manager = *managers
                    .entry(*side)
                    .or_insert_with(|| super::provision::manager_of(t.side(*side)).ok());
                let Some(m) = manager else { continue };
                let versions =
                    super::provision::package_versions(t.side(*side), m, needs.packages_for(m));
                if !versions.is_empty() {
                    let slot = match side {
                        Side::Board | Side::Members => &mut entry.packages,
                        Side::Controller => &mut entry.controller_packages,
                        Side::Peer => &mut entry.peer_packages,
                    };
                    *slot = Some(Packages {
                        manager: Scalar::of(&m),
                        installed: versions.into_iter().map(|(k, v)| (k, v.into())).collect(),
                        other: BTreeMap::new(),
                    });
                }
            }
            out.insert(recipe.name.clone(), entry);
        }
        out
    }
}

impl Worker<'_> {
    /// The facts of the link a networked cell runs over (`network::gather`): the
    /// network as declared (never its address) and what the board says of its
    /// interface; none for a cell without a network. A board that cannot say records
    /// the error instead, and the cell goes on.
    pub(super) fn network_facts(
        &self,
        t: &mut dyn Transport,
        cell: &crate::plan::Cell,
    ) -> Option<NetworkFact> {
        let net = self.board.network(cell.address.network.as_ref()?)?;
        let mut doc = NetworkFact {
            name: Scalar::of(&net.name),
            interface: Some(net.interface.as_str().into()),
            kind: Scalar::of(&net.kind),
            model: Scalar::of(&net.model),
            ..NetworkFact::default()
        };
        match crate::network::gather(t, self.connector.sysfs(), &net.interface) {
            Ok(link) => doc.link = Some(link),
            Err(e) => doc.error = Some(e.to_string().into()),
        }
        Some(doc)
    }
}

/// A fact command's trimmed output, at most `FACT_BYTES`; None when it failed. The
/// status is printed after the output, so an output cut at the bound has none: it
/// printed, and what it printed is kept.
pub(super) fn run_fact(t: &mut dyn Transport, command: &str, vars: &Vars) -> Option<String> {
    let command = crate::bench::render(command, vars).ok()?;
    let script = format!(
        "{{ (\n{command}\n) </dev/null 2>/dev/null; echo \"@@$?\"; }} | head -c {}",
        FACT_BYTES + 8
    );
    let out = t.run(&script, Some(Duration::from_secs(30))).ok()?;
    let text = out.stdout_str();
    let value = match text.trim_end().rsplit_once("@@") {
        Some((value, status))
            if !status.is_empty() && status.bytes().all(|b| b.is_ascii_digit()) =>
        {
            (status == "0").then_some(value)?
        }
        _ => &text,
    };
    let mut end = value.len().min(FACT_BYTES);
    while !value.is_char_boundary(end) {
        end -= 1;
    }
    let value = value[..end].trim();
    (!value.is_empty()).then(|| value.to_string())
}

/// The board's 1-minute load average.
pub(super) fn read_load(t: &mut dyn Transport) -> Option<f64> {
    let out = t
        .run("head -c 256 /proc/loadavg", Some(Duration::from_secs(30)))
        .ok()?;
    out.stdout_str().split_whitespace().next()?.parse().ok()
}

/// A board's facts and its idle temperature (before benchpipe loaded it, the base of
/// "idle+N"), which the facts record as `idle_temperature_c`.
pub(super) fn idle_facts(t: &mut dyn Transport, board: &Board) -> (CellFacts, Option<f64>) {
    let idle = read_temperature(t, board);
    let mut facts = gather_facts(t, board);
    facts.idle_temperature_c = idle;
    (facts, idle)
}

/// The board's highest temperature in °C, from its thermal source; None when it has none.
pub(crate) fn read_temperature(t: &mut dyn Transport, board: &Board) -> Option<f64> {
    let source = board
        .thermal
        .as_deref()
        .unwrap_or(crate::telemetry::DEFAULT_THERMAL);
    // The board's shell expands the glob; everything else in it is quoted. A value is
    // a few bytes of a regular file: `/dev/zero` or a FIFO named by mistake must not
    // stream for ever.
    let safe = quote::glob(source);
    let out = t
        .run(
            &format!(
                "for f in {safe}; do [ -f \"$f\" ] && head -c 64 -- \"$f\" 2>/dev/null && echo; done"
            ),
            Some(Duration::from_secs(30)),
        )
        .ok()?;
    out.stdout_str()
        .lines()
        .filter_map(|l| l.trim().parse::<f64>().ok())
        .map(|milli| milli / 1000.0)
        .fold(None, |acc: Option<f64>, c| {
            Some(acc.map_or(c, |a| a.max(c)))
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::local::Local;

    #[test]
    fn a_fact_is_trimmed_bounded_and_nothing_when_its_command_fails() {
        let mut t = Local::new();
        let mut vars = Vars::new();
        vars.set("board", "b 1");
        let fact = |t: &mut Local, c: &str| run_fact(t, c, &vars);
        assert_eq!(
            fact(&mut t, "echo '  v1.2 '; echo @@x").as_deref(),
            Some("v1.2 \n@@x")
        );
        assert_eq!(fact(&mut t, "echo {{ board }}").as_deref(), Some("b 1"));
        assert_eq!(fact(&mut t, "echo partial; exit 3"), None);
        assert_eq!(fact(&mut t, "true"), None, "no output, nothing recorded");
        assert_eq!(
            fact(&mut t, "echo x {{ nope }}"),
            None,
            "a template that fails"
        );
        // Endless output is cut at the bound, and what it printed is kept.
        let endless = fact(&mut t, "yes abc").unwrap();
        assert!(
            endless.len() <= FACT_BYTES && endless.starts_with("abc\nabc"),
            "{endless}"
        );
    }
}
