//! `benchpipe boards`: list the boards, preflight them, trust a host key.

use std::path::Path;

use super::BoardsAction;
use crate::config;
use crate::error::{Error, Result};
use crate::power::PowerAction;
use crate::shown::shown;

pub(super) fn run(action: BoardsAction, root: &Path) -> Result<()> {
    let boards = config::load_boards(root).map_err(Error::Config)?;
    match action {
        BoardsAction::List { store } => {
            // The store as `apply` in this root would use it; none yet is no error.
            let dir = root.join(&store.store);
            let store = crate::store::Store::open_read(&dir).ok();
            for b in boards.values() {
                let how = match &b.connection {
                    crate::model::Connection::Local => "local".to_string(),
                    crate::model::Connection::Ssh(t) => format!("ssh {}", t.host),
                };
                // The state's every text as the store holds it is shown on one line,
                // controls escaped: the store may be someone else's.
                let state = match store.as_ref().map(|s| s.board_state(&b.name)) {
                    Some(Ok(Some(st))) if st.identity == "unverified" => format!(
                        "image: unverified (a flash of {} began in session {})",
                        shown(&st.image),
                        shown(&st.verified_session)
                    ),
                    Some(Ok(Some(st))) => format!(
                        "image: {} ({}), verified in session {}{}",
                        shown(&st.image),
                        shown(&short(&st.identity)),
                        shown(&st.verified_session),
                        st.host_key
                            .map(|k| format!(", host key accepted after flash {}", shown(&k)))
                            .unwrap_or_default()
                    ),
                    Some(Err(e)) => format!("image: unreadable state: {e}"),
                    _ => "image: never verified".to_string(),
                };
                println!("{}  {}  {}  {}", b.name, b.model, how, state);
            }
            Ok(())
        }
        BoardsAction::Check { names } => {
            // The built-in recipes and the workspace's own: the tools apply would need.
            let recipes = config::load_recipes(root).map_err(Error::Config)?;
            let recipes: Vec<&crate::model::Recipe> = recipes.values().collect();
            let mut chosen = Vec::new();
            for n in &names {
                let Some(b) = boards.get(&crate::model::BoardName::new(n.as_str())) else {
                    let known: Vec<String> = boards.keys().map(ToString::to_string).collect();
                    return Err(Error::Usage(format!(
                        "no board named `{n}` in {}/boards; known: {}",
                        root.display(),
                        known.join(", ")
                    )));
                };
                chosen.push(b);
            }
            if names.is_empty() {
                chosen = boards.values().collect();
            }
            let connector = crate::transport::RealConnector;
            let checks: Vec<crate::preflight::BoardCheck> = std::thread::scope(|s| {
                let handles: Vec<_> = chosen
                    .iter()
                    .map(|b| {
                        let (recipes, connector) = (&recipes, &connector);
                        s.spawn(move || crate::preflight::check(b, recipes, connector))
                    })
                    .collect();
                handles
                    .into_iter()
                    .zip(&chosen)
                    .map(|(h, b)| {
                        h.join().unwrap_or_else(|_| crate::preflight::BoardCheck {
                            board: b.name.to_string(),
                            ok: false,
                            findings: vec!["the check itself failed (a bug)".into()],
                        })
                    })
                    .collect()
            });
            for c in &checks {
                println!("{}", c.line());
            }
            let failed = checks.iter().filter(|c| !c.ok).count();
            if failed > 0 {
                return Err(Error::BoardsFailed {
                    failed,
                    total: checks.len(),
                });
            }
            Ok(())
        }
        BoardsAction::Power { action, names } => {
            let action = match action {
                super::lab::PowerArg::On => PowerAction::On,
                super::lab::PowerArg::Off => PowerAction::Off,
                super::lab::PowerArg::Cycle => PowerAction::Cycle,
            };
            let mut failed = 0;
            for n in &names {
                let Some(board) = boards.get(&crate::model::BoardName::new(n.as_str())) else {
                    let known: Vec<String> = boards.keys().map(ToString::to_string).collect();
                    return Err(Error::Usage(format!(
                        "no board named `{n}` in {}/boards; known: {}",
                        root.display(),
                        known.join(", ")
                    )));
                };
                match power(board, &boards, action) {
                    Ok(on) => println!("{n}: power {}: done{on}", action.word()),
                    Err(e) => {
                        failed += 1;
                        println!("{n}: power {} failed: {e}", action.word());
                    }
                }
            }
            if failed > 0 {
                return Err(Error::BoardsFailed {
                    failed,
                    total: names.len(),
                });
            }
            Ok(())
        }
        BoardsAction::Trust {
            name,
            fingerprint,
            yes,
        } => {
            use crate::transport::ssh::{self, Accept};
            let board = boards
                .get(&crate::model::BoardName::new(name.as_str()))
                .ok_or_else(|| {
                    let known: Vec<String> = boards.keys().map(ToString::to_string).collect();
                    Error::Usage(format!(
                        "no board named `{name}` in {}/boards; known: {}",
                        root.display(),
                        known.join(", ")
                    ))
                })?;
            let crate::model::Connection::Ssh(target) = &board.connection else {
                return Err(Error::Usage(format!(
                    "board `{name}` is local; it has no host key to trust"
                )));
            };
            let timeout = std::time::Duration::from_secs(30);
            let accept = match (fingerprint, yes) {
                (Some(fp), _) => {
                    if fp.trim().strip_prefix("SHA256:").is_none_or(str::is_empty) {
                        return Err(Error::Usage(format!(
                            "--fingerprint {fp:?}: expected SHA256:... as `ssh-keygen -lf` prints it"
                        )));
                    }
                    Accept::Fingerprint(fp)
                }
                (None, true) => Accept::Offered,
                (None, false) => {
                    // Show what the board offers, so the user can compare it on the board.
                    let (_, key) = ssh::scan_host_key(
                        &board.name,
                        target,
                        timeout,
                        &ssh::ConnectOptions::default(),
                    )?;
                    let fp = key.fingerprint();
                    return Err(Error::Usage(format!(
                        "board `{name}` offers {} key {fp}. Compare it with the board's own \
                         (ssh-keygen -lf /etc/ssh/ssh_host_*_key.pub on the board), then run \
                         `benchpipe boards trust {name} --fingerprint {fp}` \
                         (or --yes to trust whatever is offered, for scripted labs only)",
                        key.algorithm
                    )));
                }
            };
            let t = ssh::trust(&board.name, target, timeout, &accept)?;
            println!(
                "trusted {name}: wrote {} {} {} to {}",
                t.host,
                t.algorithm,
                t.fingerprint,
                t.known_hosts.display()
            );
            Ok(())
        }
    }
}

/// Runs `board`'s power `action` where its plan says (`crate::power`); returns " on
/// HOST" when that was not the controller.
fn power(
    board: &crate::model::Board,
    boards: &std::collections::BTreeMap<crate::model::BoardName, crate::model::Board>,
    action: PowerAction,
) -> std::result::Result<String, crate::power::PowerError> {
    use crate::transport::Connector;
    let plan = crate::power::plan(board, action)?;
    let connector = crate::transport::RealConnector;
    let mut t = match &plan.via {
        Some(v) => connector.board(&crate::power::via_board(board, boards, v))?,
        None => connector.controller(),
    };
    crate::power::run(t.as_mut(), action, &plan)?;
    Ok(plan.via.map(|v| format!(" on {v}")).unwrap_or_default())
}

/// `sha256:` and the first 12 hex digits, or the identity as it is.
fn short(identity: &str) -> String {
    match identity.strip_prefix("sha256:") {
        // By characters: a stored identity may be any text, and a byte index into it
        // could fall inside a character.
        Some(hex) => format!("sha256:{}", hex.chars().take(12).collect::<String>()),
        None => identity.to_string(),
    }
}
