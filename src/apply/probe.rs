//! `apply --dry-run`'s look at the disks its destructive steps would overwrite: for
//! each (board, device), what the board reports of it (`lsblk`: model, serial, size),
//! over a session opened with a short connect timeout; an unreachable board is said,
//! and the dry run prints anyway. Reads only.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::Value;

use crate::model::{BoardName, Connection, Workspace};
use crate::plan::schedule::Schedule;
use crate::shown::one_line;
use crate::transport::Connector;
use crate::transport::quote;

/// How long a probe waits for a board's SSH to answer, and for its `lsblk`.
const CONNECT: Duration = Duration::from_secs(5);
const COMMAND: Duration = Duration::from_secs(15);
/// The most devices probed in one dry run, and the longest value kept of a report.
const MOST_DEVICES: usize = 32;
const MOST_CHARS: usize = 80;

/// What a board said of one device, as a line for people.
pub type Reports = BTreeMap<(BoardName, String), String>;

/// Probes every device `schedule`'s destructive steps name (at most `MOST_DEVICES`),
/// one session per board.
pub fn disks(ws: &Workspace, schedule: &Schedule, connector: &dyn Connector) -> Reports {
    let mut wanted: BTreeMap<BoardName, Vec<String>> = BTreeMap::new();
    let mut count = 0;
    for walk in &schedule.boards {
        for step in &walk.steps {
            if let Some((host, device)) = step.action.overwritten_device(&walk.board) {
                let list = wanted.entry(host).or_default();
                if !list.iter().any(|d| d == device) && count < MOST_DEVICES {
                    list.push(device.to_string());
                    count += 1;
                }
            }
        }
    }
    let mut out = Reports::new();
    for (host, devices) in wanted {
        let said = |d: &str| (host.clone(), d.to_string());
        let Some(board) = ws.boards.get(&host) else {
            for d in &devices {
                out.insert(
                    said(d),
                    format!("{host} is no board of the workspace: not probed"),
                );
            }
            continue;
        };
        let mut quick = board.clone();
        if let Connection::Ssh(t) = &mut quick.connection {
            t.connect_timeout = Some(t.connect_timeout.map_or(CONNECT, |c| c.min(CONNECT)));
        }
        let mut t = match connector.board(&quick) {
            Ok(t) => t,
            Err(e) => {
                let why = one_line(&e.to_string())
                    .chars()
                    .take(200)
                    .collect::<String>();
                for d in &devices {
                    out.insert(
                        said(d),
                        format!("{host} unreachable ({why}): its model, serial and size unknown"),
                    );
                }
                continue;
            }
        };
        for d in &devices {
            let command = format!(
                "lsblk -J -b -d -o NAME,MODEL,SERIAL,SIZE -- {} 2>&1",
                quote::sh(d)
            );
            let line = match t.run(&command, Some(COMMAND)) {
                Ok(o) if o.exit.success() => reported(&o.stdout).unwrap_or_else(|| {
                    format!("{host} reports nothing lsblk reads of {}", one_line(d))
                }),
                Ok(o) => format!(
                    "{host} reports no such block device ({})",
                    cut(o.stdout_str().trim())
                ),
                Err(e) => format!("{host}: lsblk failed ({})", cut(&e.to_string())),
            };
            out.insert(said(d), line);
        }
    }
    out
}

/// `model M, serial S, N bytes` from lsblk's JSON (sizes as numbers or, from older
/// util-linux, strings); each value on one line, cut.
fn reported(json: &[u8]) -> Option<String> {
    let doc: Value = serde_json::from_slice(json).ok()?;
    let dev = doc.get("blockdevices")?.as_array()?.first()?;
    let text = |k: &str| {
        dev.get(k)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(cut)
    };
    let size = match dev.get("size") {
        Some(Value::Number(n)) => n.as_u64(),
        Some(Value::String(s)) => s.trim().parse().ok(),
        _ => None,
    };
    Some(format!(
        "the board reports: model {}, serial {}, {}",
        text("model").unwrap_or_else(|| "unknown".into()),
        text("serial").unwrap_or_else(|| "none".into()),
        size.map_or("size unknown".into(), |b| format!("{b} bytes"))
    ))
}

fn cut(s: &str) -> String {
    let one = one_line(s);
    match one.char_indices().nth(MOST_CHARS) {
        Some((i, _)) => format!("{}...", &one[..i]),
        None => one.into_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lsblk_reports_are_read_whichever_size_type_and_hostile_values_are_cut() {
        let new = br#"{"blockdevices": [{"name":"sda","model":"Samsung SSD 870 ","serial":"S5Y1","size":500107862016}]}"#;
        assert_eq!(
            reported(new).unwrap(),
            "the board reports: model Samsung SSD 870, serial S5Y1, 500107862016 bytes"
        );
        let old =
            br#"{"blockdevices": [{"name":"loop3","model":null,"serial":null,"size":"1048576"}]}"#;
        assert_eq!(
            reported(old).unwrap(),
            "the board reports: model unknown, serial none, 1048576 bytes"
        );
        let long = format!(
            r#"{{"blockdevices": [{{"model":"{}\u001b[2J\n","size":1}}]}}"#,
            "x".repeat(1000)
        );
        let said = reported(long.as_bytes()).unwrap();
        assert!(said.len() < 200 && !said.contains('\u{1b}'), "{said}");
        assert_eq!(reported(b"lsblk: /dev/nope: not a block device"), None);
    }
}
