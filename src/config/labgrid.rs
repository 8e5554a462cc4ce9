//! Validates a board's `labgrid = { coordinator, place, wait }` into a
//! `model::labgrid::LabgridPlace`: every value reaches `labgrid-client`'s argv.

use toml::Spanned;

use super::{Source, raw, units};
use crate::diag::Diagnostic;
use crate::model::labgrid::{DEFAULT_WAIT, LabgridPlace, MAX_PLACE, is_place_name};

pub(super) fn validate(
    src: &Source,
    raw: &Spanned<raw::Labgrid>,
    diags: &mut Vec<Diagnostic>,
) -> Option<LabgridPlace> {
    let start = diags.len();
    let l = raw.get_ref();
    let place = l.place.get_ref();
    if place.is_empty() {
        diags.push(src.at_value(&l.place, "`place` must not be empty"));
    } else if !is_place_name(place) {
        diags.push(
            src.at_value(
                &l.place,
                format!(
                    "`place` must be a labgrid place's exact name: letters, digits, `.`, `_`, `-`, at most {MAX_PLACE}, not starting with `-` or `.`"
                ),
            )
            .with_help("labgrid-client -x HOST:PORT places lists the coordinator's places"),
        );
    }
    let coordinator = l.coordinator.get_ref();
    if let Err(e) = host_port(coordinator) {
        diags.push(
            src.at_value(&l.coordinator, format!("`coordinator` {e}"))
                .with_help("the coordinator's address as labgrid-client -x takes it, like \"lab.example.org:20408\""),
        );
    }
    let wait = match &l.wait {
        None => DEFAULT_WAIT,
        Some(w) => units::parse_duration(w.get_ref())
            .map_err(|e| diags.push(src.at_value(w, e)))
            .unwrap_or(DEFAULT_WAIT),
    };
    if diags.len() > start {
        return None;
    }
    Some(LabgridPlace {
        coordinator: coordinator.clone(),
        place: place.clone(),
        wait,
    })
}

/// `HOST:PORT`: a host name or IPv4 address (letters, digits, `.`, `-`, `_`), or an
/// IPv6 address in brackets, then a port from 1 to 65535.
fn host_port(text: &str) -> Result<(), String> {
    let Some((host, port)) = text.rsplit_once(':') else {
        return Err(format!(
            "must be HOST:PORT, not `{}`",
            crate::shown::shown(text)
        ));
    };
    let host_ok = match host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        Some(v6) => {
            !v6.is_empty()
                && v6
                    .chars()
                    .all(|c| c.is_ascii_hexdigit() || matches!(c, ':' | '.'))
        }
        None => {
            !host.is_empty()
                && host.len() <= 253
                && !host.starts_with(['-', '.'])
                && host
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'))
        }
    };
    if !host_ok {
        return Err(format!(
            "has no valid host in `{}`: a host name, an IPv4 address or [IPv6]",
            crate::shown::shown(text)
        ));
    }
    match port.parse::<u16>() {
        Ok(p) if p > 0 && port.chars().all(|c| c.is_ascii_digit()) => Ok(()),
        _ => Err(format!(
            "has no valid port in `{}`: 1 to 65535",
            crate::shown::shown(text)
        )),
    }
}
