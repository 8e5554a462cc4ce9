//! The scenario's `[clusters.NAME]`: members (board names or globs), the control member,
//! the endpoint, and the deploy and teardown command templates.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use toml::Spanned;

use super::Known;
use crate::bench::Vars;
use crate::config::{Source, names, raw, template, units};
use crate::diag::Diagnostic;
use crate::model::{
    BoardName, CLUSTER_VARIABLES, Cluster, ClusterStep, Endpoint, EndpointAt, Where,
};

/// Most members a cluster may have: a rack, not a data centre (each is a session).
pub const MAX_MEMBERS: usize = 64;

/// Sample values of a deploy or teardown template's variables, typed as at run time.
pub fn sample_vars() -> Vars {
    #[derive(Serialize)]
    struct Member {
        name: &'static str,
        host: &'static str,
        workdir: &'static str,
    }
    let members = [
        Member {
            name: "sample-board-1",
            host: "sample-host-1",
            workdir: "/var/tmp/benchpipe/sample-1",
        },
        Member {
            name: "sample-board-2",
            host: "sample-host-2",
            workdir: "/var/tmp/benchpipe/sample-2",
        },
    ];
    let mut v = Vars::new();
    v.set("cluster", "sample-cluster")
        .set(
            "members",
            minijinja::Value::from(minijinja::value::Serde(members)),
        )
        .set("endpoint_host", "sample-endpoint")
        .set("endpoint_port", 8080)
        .set("board", "sample-board-1")
        .set("host", "sample-host-1")
        .set("workdir", "/var/tmp/benchpipe/sample-1")
        .set(
            "controller_dir",
            "/var/tmp/benchpipe/controller/sample-cluster",
        );
    v
}

/// Validates every `[clusters.NAME]`.
pub(super) fn clusters(
    src: &Source,
    raw: &BTreeMap<Spanned<String>, Spanned<raw::Cluster>>,
    known: &Known,
    diags: &mut Vec<Diagnostic>,
) -> BTreeMap<BoardName, Cluster> {
    let mut out = BTreeMap::new();
    // Board files only: the store's board names include the clusters' own, stored cells.
    let boards = known.board_file_names();
    for (key, c) in raw {
        let name = key.get_ref();
        if !names::is_plain_name(name) {
            diags.push(src.at_value(
                key,
                format!("bad cluster name `{name}`: use letters, digits, `-`, `_` and `.`, starting with a letter or digit"),
            ));
        } else if boards.contains(name.as_str()) {
            diags.push(
                src.at_value(
                    key,
                    format!("cluster `{name}` has the name of a board: on the board axis the two would be one value"),
                )
                .with_help("give the cluster a name of its own, like `cluster-3`"),
            );
        }
        if let Some(cluster) = cluster(src, key, c, known, diags) {
            out.insert(BoardName::new(name.clone()), cluster);
        }
    }
    out
}

fn cluster(
    src: &Source,
    key: &Spanned<String>,
    raw: &Spanned<raw::Cluster>,
    known: &Known,
    diags: &mut Vec<Diagnostic>,
) -> Option<Cluster> {
    let start = diags.len();
    let c = raw.get_ref();
    let name = key.get_ref();
    let members = members(src, name, &c.members, known, diags);
    if members.is_empty() {
        // Nothing to check a member's name against: each would be one more error.
        return None;
    }
    let member_names: Vec<&str> = members.iter().map(BoardName::as_str).collect();
    let member = |v: &Spanned<String>, what: &str, diags: &mut Vec<Diagnostic>| {
        if member_names.contains(&v.get_ref().as_str()) {
            return Some(BoardName::new(v.get_ref().clone()));
        }
        let help = names::help_for(v.get_ref(), member_names.iter().copied(), "members");
        diags.push(
            src.at_value(
                v,
                format!(
                    "{what} `{}` is not a member of cluster `{name}`",
                    v.get_ref()
                ),
            )
            .with_help(help),
        );
        None
    };
    let control = match &c.control {
        Some(v) => member(v, "control", diags),
        None => members.first().cloned(),
    };
    let endpoint = match &c.endpoint {
        None => control.clone().map(|b| Endpoint {
            at: EndpointAt::Board(b),
            port: None,
        }),
        Some(e) => {
            let ep = e.get_ref();
            let at = match (&ep.board, &ep.host) {
                (Some(b), None) => member(b, "endpoint board", diags).map(EndpointAt::Board),
                (None, Some(h)) => host(src, h, diags).map(EndpointAt::Host),
                (None, None) => control.clone().map(EndpointAt::Board),
                (Some(_), Some(h)) => {
                    diags.push(
                        src.at_value(h, "`endpoint` names both a `board` and a `host`")
                            .with_help("give one: a member (`board`), or a name or address of its own (`host`)"),
                    );
                    None
                }
            };
            let port =
                ep.port
                    .as_ref()
                    .and_then(|p| match u16::try_from(*p.get_ref()) {
                        Ok(port) if port > 0 => Some(port),
                        _ => {
                            diags.push(src.at_value(
                                p,
                                format!("`port` = {}: expected 1 to 65535", p.get_ref()),
                            ));
                            None
                        }
                    });
            at.map(|at| Endpoint { at, port })
        }
    };
    if c.deploy.is_empty() && !c.teardown.is_empty() {
        diags.push(
            src.at_value(
                &c.teardown[0],
                "a teardown without a deploy: there is nothing to undo",
            )
            .with_help("add the `[[clusters.NAME.deploy]]` steps it undoes, or remove it"),
        );
    }
    let deploy = steps(src, &c.deploy, &member_names, diags);
    let teardown = steps(src, &c.teardown, &member_names, diags);
    if diags.len() > start {
        return None;
    }
    Some(Cluster {
        name: BoardName::new(name.clone()),
        members,
        control: control?,
        endpoint: endpoint?,
        deploy,
        teardown,
    })
}

/// The members, each a board name or a glob; a board named twice (directly or through
/// two globs) is an error, and so is an empty list.
fn members(
    src: &Source,
    cluster: &str,
    raw: &Spanned<Vec<Spanned<String>>>,
    known: &Known,
    diags: &mut Vec<Diagnostic>,
) -> Vec<BoardName> {
    let all = known.board_names();
    if raw.get_ref().is_empty() {
        diags.push(
            src.at_value(raw, format!("cluster `{cluster}` has no members"))
                .with_help("list its boards, e.g. `members = [\"pi-1\", \"pi-2\"]` or a glob `[\"turing-*\"]`"),
        );
    }
    let mut out: Vec<BoardName> = Vec::new();
    let mut from: BTreeMap<String, String> = BTreeMap::new();
    for v in raw.get_ref() {
        let matched: Vec<&str> = all
            .iter()
            .copied()
            .filter(|b| names::glob_match(v.get_ref(), b))
            .collect();
        if matched.is_empty() {
            let help = names::help_for(v.get_ref(), all.iter().copied(), "boards");
            let what = if names::is_glob(v.get_ref()) {
                "no board matches member"
            } else {
                "unknown board"
            };
            diags.push(
                src.at_value(
                    v,
                    format!("{what} `{}` in cluster `{cluster}`", v.get_ref()),
                )
                .with_help(help),
            );
        }
        for b in matched {
            if known.broken_boards.contains(b) {
                known.used_broken_boards.borrow_mut().insert(b.to_string());
                continue;
            }
            if let Some(first) = from.get(b) {
                let by = if first == v.get_ref() {
                    String::new()
                } else {
                    format!(" (listed first as `{first}`)")
                };
                diags.push(
                    src.at_value(
                        v,
                        format!("board `{b}` is a member of cluster `{cluster}` twice{by}: one board cannot be two members at once"),
                    )
                    .with_help("list each board once"),
                );
                continue;
            }
            from.insert(b.to_string(), v.get_ref().clone());
            out.push(BoardName::from(b));
        }
    }
    if out.len() > MAX_MEMBERS {
        diags.push(src.at_value(
            raw,
            format!(
                "cluster `{cluster}` has {} members, more than the limit of {MAX_MEMBERS}",
                out.len()
            ),
        ));
    }
    out
}

/// An endpoint's own host: a name or an address, never an option or shell text.
fn host(src: &Source, h: &Spanned<String>, diags: &mut Vec<Diagnostic>) -> Option<String> {
    let s = h.get_ref();
    let ok = !s.is_empty()
        && s.len() <= 253
        && !s.starts_with('-')
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '_'));
    if ok {
        return Some(s.clone());
    }
    diags.push(
        src.at_value(h, format!("bad endpoint host `{}`", s.escape_debug()))
            .with_help("a host name or an IP address: letters, digits, `.`, `-`, `:` and `_`, not starting with `-`"),
    );
    None
}

/// Deploy or teardown steps: each on the controller or a member, its template checked.
fn steps(
    src: &Source,
    raw: &[Spanned<raw::ClusterStep>],
    members: &[&str],
    diags: &mut Vec<Diagnostic>,
) -> Vec<ClusterStep> {
    let allowed: BTreeSet<String> = CLUSTER_VARIABLES.iter().map(ToString::to_string).collect();
    let samples = sample_vars();
    let mut out = Vec::new();
    for s in raw {
        let step = s.get_ref();
        let on = match &step.on {
            None => Some(Where::Controller),
            Some(v) if v.get_ref() == "controller" => Some(Where::Controller),
            Some(v) if members.contains(&v.get_ref().as_str()) => {
                Some(Where::Board(BoardName::new(v.get_ref().clone())))
            }
            Some(v) => {
                let candidates = std::iter::once("controller").chain(members.iter().copied());
                diags.push(
                    src.at_value(
                        v,
                        format!(
                            "`on` = `{}`: expected `controller` or a member of the cluster",
                            v.get_ref()
                        ),
                    )
                    .with_help(names::help_for(
                        v.get_ref(),
                        candidates,
                        "places",
                    )),
                );
                None
            }
        };
        if step.command.get_ref().trim().is_empty() {
            diags.push(src.at_value(&step.command, "`command` is empty: there is nothing to run"));
        }
        if template::check(src, &step.command, &allowed, diags).is_some() {
            template::check_rendered(src, &step.command, &samples, diags);
        }
        let timeout =
            step.timeout
                .as_ref()
                .and_then(|t| match units::parse_duration(t.get_ref()) {
                    Ok(d) if !d.is_zero() => Some(d),
                    Ok(_) => {
                        diags.push(src.at_value(t, "`timeout` must be more than 0 s"));
                        None
                    }
                    Err(e) => {
                        diags.push(src.at_value(t, e));
                        None
                    }
                });
        if let Some(on) = on {
            out.push(ClusterStep {
                on,
                command: step.command.get_ref().clone(),
                timeout,
            });
        }
    }
    out
}

/// Every test of the matrix whose recipe runs a step on a peer board needs its `peer`
/// parameter to name a board of the workspace: the scenario's `[params.TEST] peer`, or
/// the recipe's default.
pub(super) fn peers(
    src: &Source,
    raw: &raw::Scenario,
    clusters: &BTreeMap<BoardName, Cluster>,
    known: &Known,
    diags: &mut Vec<Diagnostic>,
) {
    let all = known.board_names();
    for t in &raw.matrix.get_ref().test {
        let Some(recipe) = known
            .recipes
            .get(&crate::model::TestName::new(t.get_ref().clone()))
        else {
            continue;
        };
        if !recipe.sides().contains(&crate::model::Side::Peer) {
            continue;
        }
        let over = raw
            .params
            .iter()
            .find(|(k, _)| k.get_ref() == t.get_ref())
            .and_then(|(_, o)| {
                o.iter()
                    .find(|(k, _)| k.get_ref() == crate::model::PEER_PARAM)
            })
            .map(|(_, v)| v);
        let value = match over {
            Some(v) => v.get_ref().as_str().map(str::to_string),
            None => match recipe.params.get(crate::model::PEER_PARAM) {
                Some(crate::model::ParamValue::Str(s)) => Some(s.clone()),
                _ => None,
            },
        };
        let value = value.unwrap_or_default();
        if all.contains(value.as_str()) {
            if known.broken_boards.contains(&value) {
                known.used_broken_boards.borrow_mut().insert(value);
            }
            continue;
        }
        let help = names::help_for(&value, all.iter().copied(), "boards");
        let (message, help) = if value.is_empty() {
            (
                format!(
                    "test `{}` runs a step on a peer board, but no peer is named",
                    t.get_ref()
                ),
                format!("name it: `[params.{}]` `peer = \"BOARD\"`", t.get_ref()),
            )
        } else if clusters.contains_key(&BoardName::new(value.clone())) {
            (
                format!(
                    "the peer of test `{}` is cluster `{value}`: a peer is one board",
                    t.get_ref()
                ),
                help,
            )
        } else {
            (
                format!(
                    "the peer of test `{}` is `{value}`, which is no board",
                    t.get_ref()
                ),
                help,
            )
        };
        match over {
            Some(v) => diags.push(src.at_value(v, message).with_help(help)),
            None => diags.push(src.at_value(t, message).with_help(help)),
        }
    }
}
