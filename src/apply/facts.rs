//! What the board is and how it is now: facts recorded beside samples, temperature and
//! load.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Value, json};

use crate::model::Board;
use crate::transport::{Transport, quote};

/// What the board is, recorded beside each cell's samples: the provenance that explains
/// numbers later (kernel, OS release, CPU, governor, memory, tool versions).
pub(super) fn gather_facts(t: &mut dyn Transport, board: &Board) -> Value {
    const SCRIPT: &str = r#"
echo "@@kernel"; uname -srm
echo "@@os_release"; cat /etc/os-release 2>/dev/null
echo "@@cpus"; nproc 2>/dev/null
echo "@@cpu_model"; (grep -m1 -E '^(model name|Model)' /proc/cpuinfo | cut -d: -f2-) 2>/dev/null
echo "@@governor"; cat /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor 2>/dev/null
echo "@@memory_kib"; awk '/^MemTotal/ {print $2}' /proc/meminfo 2>/dev/null
echo "@@fio"; fio --version 2>/dev/null
echo "@@xz"; xz --version 2>/dev/null | head -n1
"#;
    let mut facts = serde_json::Map::new();
    facts.insert("board".into(), json!(board.name));
    facts.insert("model".into(), json!(board.model));
    match t.run(SCRIPT, Some(Duration::from_secs(60))) {
        Ok(out) => {
            let text = out.stdout_str();
            let mut current: Option<String> = None;
            let mut sections: BTreeMap<String, Vec<String>> = BTreeMap::new();
            for line in text.lines() {
                if let Some(name) = line.strip_prefix("@@") {
                    current = Some(name.to_string());
                    sections.entry(name.to_string()).or_default();
                } else if let Some(c) = &current {
                    sections
                        .entry(c.clone())
                        .or_default()
                        .push(line.to_string());
                }
            }
            for (k, lines) in sections {
                if k == "os_release" {
                    let mut os = serde_json::Map::new();
                    for l in lines {
                        if let Some((key, v)) = l.split_once('=') {
                            os.insert(key.to_string(), json!(v.trim_matches('"')));
                        }
                    }
                    facts.insert(k, Value::Object(os));
                } else {
                    let v = lines.join("\n").trim().to_string();
                    if !v.is_empty() {
                        facts.insert(k, json!(v));
                    }
                }
            }
        }
        Err(e) => {
            facts.insert("error".into(), json!(e.to_string()));
        }
    }
    Value::Object(facts)
}

/// The board's 1-minute load average.
pub(super) fn read_load(t: &mut dyn Transport) -> Option<f64> {
    let out = t
        .run("head -c 256 /proc/loadavg", Some(Duration::from_secs(30)))
        .ok()?;
    out.stdout_str().split_whitespace().next()?.parse().ok()
}

/// The board's highest temperature in °C, from its thermal source; None when it has none.
pub(super) fn read_temperature(t: &mut dyn Transport, board: &Board) -> Option<f64> {
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
