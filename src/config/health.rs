//! Validates a board's `[[health]]` checks into `model::HealthCheck`s: a name, a
//! command, a bounded timeout.

use toml::Spanned;

use super::{Source, names, raw, units};
use crate::diag::Diagnostic;
use crate::model::health::{DEFAULT_TIMEOUT, HealthCheck, MAX_TIMEOUT};

/// The most checks a board may declare: each runs before every image's cells.
const MAX_CHECKS: usize = 32;

pub(super) fn validate(
    src: &Source,
    raw: &[Spanned<raw::Health>],
    diags: &mut Vec<Diagnostic>,
) -> Vec<HealthCheck> {
    if let Some(extra) = raw.get(MAX_CHECKS) {
        diags.push(src.at_value(
            extra,
            format!("at most {MAX_CHECKS} `[[health]]` checks; merge some into one command"),
        ));
    }
    let mut out = Vec::new();
    for h in raw.iter().take(MAX_CHECKS) {
        let h = h.get_ref();
        let name = h.name.get_ref().trim();
        if name.is_empty() {
            diags.push(src.at_value(&h.name, "`name` must not be empty"));
        } else if let Err(e) = names::control_free(name, false) {
            diags.push(src.at_value(&h.name, format!("`name` {e}")));
        } else if out.iter().any(|c: &HealthCheck| c.name == name) {
            diags.push(src.at_value(&h.name, format!("a second health check named `{name}`")));
        }
        if h.command.get_ref().trim().is_empty() {
            diags.push(src.at_value(&h.command, "`command` must not be empty"));
        } else if let Err(e) = names::control_free(h.command.get_ref(), true) {
            diags.push(src.at_value(&h.command, format!("`command` {e}")));
        }
        let timeout = match &h.timeout {
            None => DEFAULT_TIMEOUT,
            Some(t) => match units::parse_duration(t.get_ref()) {
                Ok(d) if d > MAX_TIMEOUT || d.is_zero() => {
                    diags.push(src.at_value(
                        t,
                        "`timeout` of a health check must be more than 0s and at most 1h",
                    ));
                    DEFAULT_TIMEOUT
                }
                Ok(d) => d,
                Err(e) => {
                    diags.push(src.at_value(t, e));
                    DEFAULT_TIMEOUT
                }
            },
        };
        out.push(HealthCheck {
            name: name.to_string(),
            command: h.command.get_ref().clone(),
            timeout,
        });
    }
    out
}
