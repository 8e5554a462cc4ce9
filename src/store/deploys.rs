//! How long each cluster's deploy took when it last succeeded, in
//! `results/boards/<cluster>.deploy.json`: the schedule's estimate of a deploy step, so
//! `--deadline` leaves a cluster's cells whose deploy cannot end in time.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::Store;
use super::files::{read_json, sync_dir, to_json_bytes, write_atomic};
use crate::error::{Error, Result};
use crate::model::BoardName;

/// A cluster's last deploy durations, per deploy step.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DeployTimes {
    pub format: u32,
    pub cluster: String,
    /// The apply session that last recorded a duration (merge keeps the later).
    pub session: String,
    /// The deploy step (the index of its first command in the cluster's `deploy`) ->
    /// seconds its commands took, the last time they all succeeded.
    #[serde(default)]
    pub seconds: BTreeMap<usize, f64>,
}

impl Store {
    fn deploy_path(&self, cluster: &BoardName) -> std::path::PathBuf {
        self.root
            .join("boards")
            .join(format!("{cluster}.deploy.json"))
    }

    /// The cluster's recorded deploy durations; empty when none succeeded yet.
    pub fn deploy_times(&self, cluster: &BoardName) -> Result<BTreeMap<usize, f64>> {
        let t: Option<DeployTimes> = read_json(&self.deploy_path(cluster))?;
        Ok(t.map(|t| t.seconds)
            .unwrap_or_default()
            .into_iter()
            .filter(|(_, s)| s.is_finite() && *s >= 0.0)
            .collect())
    }

    /// The recorded deploy durations of each of `names` that has some (clusters; a
    /// board has none).
    pub fn deploy_times_of<'b>(
        &self,
        names: impl IntoIterator<Item = &'b BoardName>,
    ) -> Result<BTreeMap<BoardName, BTreeMap<usize, f64>>> {
        let mut out = BTreeMap::new();
        for n in names {
            let t = self.deploy_times(n)?;
            if !t.is_empty() {
                out.insert(n.clone(), t);
            }
        }
        Ok(out)
    }

    /// Records that the cluster's deploy step `from` took `seconds`. Only the cluster's
    /// own walk writes its file, under apply's lock.
    pub fn record_deploy_time(
        &self,
        cluster: &BoardName,
        session: &str,
        from: usize,
        seconds: f64,
    ) -> Result<()> {
        let name = cluster.as_str();
        if name.is_empty() || name.starts_with('.') || name.contains(['/', '\0']) {
            return Err(Error::Store(format!(
                "a deploy time for `{name}`: not a cluster name"
            )));
        }
        let mut t: DeployTimes = read_json(&self.deploy_path(cluster))?.unwrap_or_default();
        t.format = super::FORMAT;
        t.cluster = name.to_string();
        t.session = session.to_string();
        t.seconds.insert(from, seconds);
        let dir = self.root.join("boards");
        std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
        write_atomic(&self.deploy_path(cluster), &to_json_bytes(&t)?)?;
        sync_dir(&dir)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deploy_time_is_recorded_per_step_and_read_back() {
        let dir = std::env::temp_dir().join(format!("bp-deploys-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let store = Store::open(&dir).unwrap();
        let c = BoardName::new("k3s");
        assert!(store.deploy_times(&c).unwrap().is_empty());
        store.record_deploy_time(&c, "1-2", 0, 12.5).unwrap();
        store.record_deploy_time(&c, "3-4", 2, 1.0).unwrap();
        store.record_deploy_time(&c, "3-4", 0, 10.0).unwrap();
        let want = BTreeMap::from([(0, 10.0), (2, 1.0)]);
        assert_eq!(store.deploy_times(&c).unwrap(), want);
        assert!(
            store
                .record_deploy_time(&BoardName::new("../x"), "1-2", 0, 1.0)
                .is_err()
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
