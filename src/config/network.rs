//! A board's `[[network]]` entries: the links tests reach it over, each with its name,
//! the address tests use, the board-side interface whose facts are read, and its kind.

use std::collections::BTreeMap;

use toml::Spanned;

use super::{Source, names, raw};
use crate::diag::Diagnostic;
use crate::model::{LinkKind, Network, NetworkName};
use crate::network::rules;

pub(super) fn networks(
    src: &Source,
    raw: &[Spanned<raw::Network>],
    diags: &mut Vec<Diagnostic>,
) -> Vec<Network> {
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    let mut out = Vec::new();
    for entry in raw {
        let n = entry.get_ref();
        let name = n.name.get_ref();
        if !names::is_plain_name(name) {
            diags.push(src.at_value(
                &n.name,
                format!("bad network name `{name}`: use letters, digits, `-`, `_` and `.`"),
            ));
        }
        if let Some(first) = seen.get(name.as_str()) {
            let line = src.at(*first..*first, "").line;
            diags.push(
                src.at_value(&n.name, format!("network `{name}` is declared twice"))
                    .with_help(format!("the first `{name}` is on line {line}; network names must be unique within a board")),
            );
        } else {
            seen.insert(name, n.name.span().start);
        }
        if let Some(why) = rules::address_problem(n.address.get_ref()) {
            diags.push(
                src.at_value(&n.address, format!("bad network address: {why}"))
                    .with_help("write the board's IPv4 address on this link (`192.168.1.20`) or a host name that resolves to it"),
            );
        }
        if let Some(why) = rules::interface_problem(n.interface.get_ref()) {
            diags.push(
                src.at_value(&n.interface, format!("bad interface `{}`: {why}", n.interface.get_ref()))
                    .with_help("the board-side interface as `ip link` names it, such as `eth0`, `end0` or `wlan0`"),
            );
        }
        let kind = n.kind.as_ref().and_then(|k| match k.get_ref().as_str() {
            "wired" => Some(LinkKind::Wired),
            "wifi" => Some(LinkKind::Wifi),
            other => {
                let help = names::help_for(other, ["wired", "wifi"], "link kinds");
                diags.push(
                    src.at_value(
                        k,
                        format!("unknown network kind `{other}`; expected `wired` or `wifi`"),
                    )
                    .with_help(help),
                );
                None
            }
        });
        if let Some(m) = &n.model
            && let Err(e) = names::control_free(m.get_ref(), false)
        {
            diags.push(src.at_value(m, format!("`model` {e}")));
        }
        out.push(Network {
            name: NetworkName::new(name.clone()),
            address: n.address.get_ref().clone(),
            interface: n.interface.get_ref().clone(),
            kind,
            model: n.model.as_ref().map(|m| m.get_ref().clone()),
        });
    }
    out
}
