//! The values every recipe command template receives, as one typed record: `check`
//! allows its names and renders templates with its sample; apply sets it for each cell.
//! A name added here is one both see (`set_on` destructures every field).

use super::Vars;
use crate::network::addresses::{BIND_ADDRESS, CONTROLLER_ADDRESS};

/// A cell's template values (a recipe's parameters are set beside them).
#[derive(Clone, Debug, PartialEq)]
pub struct TemplateVars {
    /// The storage's path, or the workdir for a test without storage.
    pub dir: String,
    /// The storage's device; empty without one.
    pub device: String,
    pub workdir: String,
    pub controller_dir: String,
    pub board: String,
    /// Where the cell's tests reach the board.
    pub host: String,
    /// The run's number (0 until runs start).
    pub run: i64,
    /// The cell's key.
    pub cell: String,
    /// The cell's secret directory on the controller.
    pub secrets: String,
    /// The cell's tmpfs, for a recipe with `[tmpfs]`.
    pub tmpfs: Option<String>,
    /// The addresses a serving recipe's servers are held to: (bind, controller).
    pub addresses: Option<(String, String)>,
}

impl TemplateVars {
    /// Every name `set_on` can set: the names `check` allows.
    pub const NAMES: [&'static str; 12] = [
        "dir",
        "device",
        "workdir",
        "controller_dir",
        "board",
        "host",
        "run",
        "cell",
        "secrets",
        "tmpfs",
        BIND_ADDRESS,
        CONTROLLER_ADDRESS,
    ];

    /// Sample values, typed as at run time, every optional one present: what `check`
    /// renders templates with.
    pub fn sample() -> TemplateVars {
        TemplateVars {
            dir: "/var/tmp/benchpipe/sample/mnt/storage".into(),
            device: "/dev/sample".into(),
            workdir: "/var/tmp/benchpipe/sample".into(),
            controller_dir: "/var/tmp/benchpipe/controller/sample-board".into(),
            board: "sample-board".into(),
            host: "sample-host".into(),
            run: 0,
            cell: "0123456789abcdef0123456789abcdef".into(),
            secrets: "/var/tmp/benchpipe/controller/sample-board/secrets-0123456789abcdef0123456789abcdef".into(),
            tmpfs: Some(
                "/var/tmp/benchpipe/sample/sample-test-0123456789abcdef0123456789abcdef".into(),
            ),
            addresses: Some(("192.0.2.2".into(), "192.0.2.1".into())),
        }
    }

    /// Sets every value on `vars`.
    pub fn set_on(&self, vars: &mut Vars) {
        // Destructured whole: a field added above fails to build until it is set here.
        let TemplateVars {
            dir,
            device,
            workdir,
            controller_dir,
            board,
            host,
            run,
            cell,
            secrets,
            tmpfs,
            addresses,
        } = self;
        vars.set("dir", dir.as_str())
            .set("device", device.as_str())
            .set("workdir", workdir.as_str())
            .set("controller_dir", controller_dir.as_str())
            .set("board", board.as_str())
            .set("host", host.as_str())
            .set("run", *run)
            .set("cell", cell.as_str())
            .set("secrets", secrets.as_str());
        if let Some(t) = tmpfs {
            vars.set("tmpfs", t.as_str());
        }
        if let Some((bind, controller)) = addresses {
            vars.set(BIND_ADDRESS, bind.as_str())
                .set(CONTROLLER_ADDRESS, controller.as_str());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_check_allows_is_one_apply_sets_and_no_other() {
        let mut vars = Vars::new();
        TemplateVars::sample().set_on(&mut vars);
        let set: Vec<&str> = vars.names().collect();
        let mut allowed = TemplateVars::NAMES.to_vec();
        allowed.sort_unstable();
        assert_eq!(set, allowed);
    }
}
