//! A run per member (`[run] per_member = true`): every member's command started at
//! once in one shell script, each one's output kept apart, and the run's metrics read
//! from each member's output: a value per member and their sums.
//!
//! The script runs each member's command in the background with its output in a file
//! of its own, waits for all, then prints each member's output after a marker line
//! holding a random nonce, the member's name and exit status (on both streams), so a
//! tool's own output can never pose as another member's. A member whose command
//! failed, or whose output gives no value, fails the whole run: a sum is only ever the
//! sum of every member's value of the same run.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::{MetricsError, parse};
use crate::model::{MemberMetric, Recipe, member_metric};
use crate::transport::quote;

/// One member's part of a run's output.
#[derive(Clone, Debug, PartialEq)]
pub struct Section {
    pub member: String,
    /// The member command's exit status (a signal is 128 + its number, as the shell says).
    pub status: i32,
    pub stdout: String,
    pub stderr: String,
}

/// A fresh random marker for one run's sections.
pub fn nonce() -> String {
    crate::transport::random_hex::<8>()
}

fn marker(nonce: &str) -> String {
    format!("==> benchpipe-{nonce} member")
}

/// The script that runs each `(member, command)` at once, its output files in `dir`
/// (a directory of the side's claimed workdir, made and removed by the script).
pub fn script(dir: &str, nonce: &str, commands: &[(String, String)]) -> String {
    let d = quote::sh(dir);
    let mut s = format!("d={d}\nrm -rf -- \"$d\" && mkdir -p -m 700 -- \"$d\" || exit 1\n");
    for (i, (_, command)) in commands.iter().enumerate() {
        // The newline before `)` keeps a trailing comment from eating it.
        let _ = write!(
            s,
            "(\n{command}\n) </dev/null >\"$d/{i}.out\" 2>\"$d/{i}.err\" & p{i}=$!\n"
        );
    }
    for i in 0..commands.len() {
        let _ = writeln!(s, "wait \"$p{i}\"; r{i}=$?");
    }
    s.push_str("st=0\n");
    let m = marker(nonce);
    for (i, (member, _)) in commands.iter().enumerate() {
        let line = quote::sh(&format!("{m} {member} exit"));
        let _ = write!(
            s,
            "printf '\\n%s %s <==\\n' {line} \"$r{i}\"; cat \"$d/{i}.out\"\n\
             printf '\\n%s %s <==\\n' {line} \"$r{i}\" >&2; cat \"$d/{i}.err\" >&2\n\
             [ \"$r{i}\" -eq 0 ] || st=1\n"
        );
    }
    s.push_str("rm -rf -- \"$d\"\nexit $st");
    s
}

/// Why a run's output could not be split per member.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum SplitError {
    #[error("member {member} has no output section (the run was cut short)")]
    Missing { member: String },
}

/// Each member's section of a run's output, in `members` order.
pub fn split(
    nonce: &str,
    members: &[String],
    stdout: &str,
    stderr: &str,
) -> Result<Vec<Section>, SplitError> {
    let out = sections(nonce, stdout);
    let err = sections(nonce, stderr);
    members
        .iter()
        .map(|m| {
            let (status, stdout) = out
                .get(m)
                .cloned()
                .ok_or_else(|| SplitError::Missing { member: m.clone() })?;
            let stderr = err.get(m).map(|(_, e)| e.clone()).unwrap_or_default();
            Ok(Section {
                member: m.clone(),
                status,
                stdout,
                stderr,
            })
        })
        .collect()
}

/// member -> (status, text after its marker up to the next marker).
fn sections(nonce: &str, text: &str) -> BTreeMap<String, (i32, String)> {
    let m = marker(nonce);
    let mut out: BTreeMap<String, (i32, String)> = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in text.split_inclusive('\n') {
        let bare = line.trim_end_matches(['\n', '\r']);
        if let Some(rest) = bare.strip_prefix(&m)
            && let Some(rest) = rest.strip_suffix(" <==")
            && let Some((name, status)) = rest.trim_start().split_once(" exit ")
            && let Ok(status) = status.trim().parse::<i32>()
        {
            // The script prints a blank line before each marker; it is not the tool's.
            if let Some(c) = &current
                && let Some((_, text)) = out.get_mut(c)
                && text.ends_with('\n')
            {
                text.pop();
            }
            out.insert(name.to_string(), (status, String::new()));
            current = Some(name.to_string());
            continue;
        }
        if let Some(c) = &current
            && let Some((_, text)) = out.get_mut(c)
        {
            text.push_str(line);
        }
    }
    out
}

/// The run's metrics from its members' sections: each `per_member` metric as
/// `NAME@MEMBER`, each `sum_of` as the sum of its metric over every member. Any
/// member's output without its value fails it all, naming the member.
pub fn metrics(
    recipe: &Recipe,
    sections: &[Section],
) -> Result<BTreeMap<String, f64>, MetricsError> {
    let mut out = BTreeMap::new();
    let mut each: BTreeMap<&str, f64> = BTreeMap::new();
    for s in sections {
        let member = |source: MetricsError| MetricsError::Member {
            member: s.member.clone(),
            source: Box::new(source),
        };
        let doc = parse::parse(&recipe.parser, &s.stdout, &s.stderr).map_err(|source| {
            member(MetricsError::Output {
                parser: recipe.parser.name(),
                source,
            })
        })?;
        for m in recipe
            .parsed_metrics()
            .filter(|m| m.member == MemberMetric::Each)
        {
            let v = parse::select_number(&doc, &m.from).map_err(|source| {
                member(MetricsError::Select {
                    metric: m.name.clone(),
                    source,
                })
            })? * m.scale;
            if !v.is_finite() {
                return Err(member(MetricsError::NotFinite {
                    metric: m.name.clone(),
                    value: v,
                }));
            }
            out.insert(member_metric(&m.name, &s.member), v);
            *each.entry(m.name.as_str()).or_insert(0.0) += v;
        }
    }
    for m in recipe.parsed_metrics() {
        if let MemberMetric::SumOf(of) = &m.member {
            let v = each.get(of.as_str()).copied().unwrap_or(0.0);
            if !v.is_finite() {
                return Err(MetricsError::NotFinite {
                    metric: m.name.clone(),
                    value: v,
                });
            }
            out.insert(m.name.clone(), v);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::Transport;
    use crate::transport::local::Local;

    /// The script in a real shell: both members' outputs come back apart, with their
    /// statuses, even when one prints a line that looks like a marker without the nonce.
    #[test]
    fn the_script_keeps_each_members_output_and_status_apart() {
        let dir = std::env::temp_dir().join(format!("bp-members-{}", std::process::id()));
        let nonce = nonce();
        let commands = vec![
            (
                "b1".to_string(),
                "echo one; echo '==> benchpipe-0000 member b2 exit 0 <=='; echo e1 >&2".to_string(),
            ),
            (
                "b2".to_string(),
                "sleep 0.2; echo two; exit 3 # a comment".to_string(),
            ),
        ];
        let s = script(&dir.to_string_lossy(), &nonce, &commands);
        let out = Local::new().run(&s, None).unwrap();
        assert!(!out.exit.success(), "a member failed");
        let names = vec!["b1".to_string(), "b2".to_string()];
        let got = split(&nonce, &names, &out.stdout_str(), &out.stderr_str()).unwrap();
        assert_eq!(got[0].status, 0);
        assert_eq!(
            got[0].stdout,
            "one\n==> benchpipe-0000 member b2 exit 0 <==\n"
        );
        assert_eq!(got[0].stderr, "e1\n");
        assert_eq!((got[1].status, got[1].stdout.as_str()), (3, "two\n"));
        assert_eq!(got[1].stderr, "");
        assert!(!dir.exists(), "the script removes its directory");
        let missing = split(&nonce, &["b3".to_string()], &out.stdout_str(), "").unwrap_err();
        assert_eq!(
            missing.to_string(),
            "member b3 has no output section (the run was cut short)"
        );
    }
}
