//! Validates a board's `[power]` table (`cycle`, `on`, `off`, `via`, `boot_timeout`) and
//! the `via` host that a flash or power template runs on.

use toml::Spanned;

use super::board::{TemplateContext, board_template};
use super::{Source, names, raw};
use crate::diag::Diagnostic;
use crate::model::{Flash, Power};

/// Bounds of `[power] boot_timeout`: a board cannot boot in under a second, and one that
/// takes over an hour is not coming back.
const BOOT_TIMEOUT: (std::time::Duration, std::time::Duration) = (
    std::time::Duration::from_secs(1),
    std::time::Duration::from_secs(3600),
);

pub(super) fn power(
    src: &Source,
    p: &raw::Power,
    raw_flash: Option<&Spanned<raw::Flash>>,
    flash: Option<&Flash>,
    ctx: &TemplateContext,
    diags: &mut Vec<Diagnostic>,
) -> Option<Power> {
    let start = diags.len();
    for t in [&p.cycle, &p.on, &p.off].into_iter().flatten() {
        board_template(src, t, ctx, false, diags);
    }
    if let Some(via) = &p.via {
        via_is_valid(src, via, diags);
    }
    // A board that is flashed must be able to boot the new image: a cycle, or off then
    // on. (A flash command may reboot the board itself, so it needs neither.)
    let cycles = p.cycle.is_some() || (p.on.is_some() && p.off.is_some());
    if let (Some(Flash::Dd { .. } | Flash::Tpi { .. }), Some(f), false) = (flash, raw_flash, cycles)
    {
        diags.push(
            src.at_value(
                &f.get_ref().method,
                "this board is flashed, but its [power] can neither cycle it nor switch it off and on",
            )
            .with_help("give [power] `cycle`, or both `off` and `on`"),
        );
    }
    let boot_timeout = p
        .boot_timeout
        .as_ref()
        .and_then(|t| super::ssh::bounded(src, t, "boot_timeout", BOOT_TIMEOUT, diags))
        .unwrap_or(crate::model::DEFAULT_BOOT_TIMEOUT);
    if diags.len() > start {
        return None;
    }
    let text = |v: &Option<Spanned<String>>| v.as_ref().map(|v| v.get_ref().clone());
    Some(Power {
        cycle: text(&p.cycle),
        on: text(&p.on),
        off: text(&p.off),
        via: text(&p.via),
        boot_timeout,
    })
}

/// A board flashed with dd and no `[power]` at all: nothing would boot the image it
/// wrote (a tpi board is powered through its BMC, and a flash command may reboot the
/// board itself), and the walk would find out only after the flash.
pub(super) fn none_to_boot(
    src: &Source,
    raw_flash: Option<&Spanned<raw::Flash>>,
    flash: Option<&Flash>,
    diags: &mut Vec<Diagnostic>,
) {
    if let (Some(Flash::Dd { .. }), Some(f)) = (flash, raw_flash) {
        diags.push(
            src.at_value(
                f,
                "this board is flashed with dd, but has no [power] table: nothing can switch it off and on to boot the image dd wrote",
            )
            .with_help("add [power] with `cycle`, or both `off` and `on` (a smart plug, a relay, a PoE switch), or flash with `method = \"command\"` that reboots the board itself"),
        );
    }
}

/// `via` names a board of the workspace or an SSH destination (`[user@]host[:port]`, a
/// `~/.ssh/config` alias): one word, never an option.
pub(super) fn via_is_valid(
    src: &Source,
    via: &Spanned<String>,
    diags: &mut Vec<Diagnostic>,
) -> bool {
    let v = via.get_ref();
    let message = if v.trim().is_empty() {
        "`via` must not be empty".to_string()
    } else if v.starts_with('-') {
        format!("`via` `{v}` starts with `-`: a host, never an option")
    } else if v.chars().any(char::is_whitespace) {
        format!("`via` `{v}` holds a space: expected a board's name or [user@]host[:port]")
    } else if let Err(e) = names::control_free(v, false) {
        format!("`via` {e}")
    } else {
        return true;
    };
    diags.push(src.at_value(via, message));
    false
}
