//! A board's `[boot] cmdline` and its storage's `uas` and `usb_id`: what the UAS step
//! needs, checked before anything runs (the file must be declared, the device known,
//! and the board able to power-cycle).

use toml::Spanned;

use super::{Source, names, raw};
use crate::diag::Diagnostic;
use crate::model::Uas;

/// `[boot] cmdline`: an absolute file path on the board, no `..`, no control character.
pub(super) fn cmdline(
    src: &Source,
    boot: Option<&Spanned<raw::Boot>>,
    diags: &mut Vec<Diagnostic>,
) -> Option<String> {
    let c = &boot?.get_ref().cmdline;
    let v = c.get_ref();
    let why = if !v.starts_with('/') {
        Some("must be an absolute path on the board, like `/boot/firmware/cmdline.txt`".to_string())
    } else if v.ends_with('/') || v.split('/').any(|p| p == "." || p == "..") {
        Some("must name a file, with no `.` or `..` parts".to_string())
    } else if v.starts_with("/proc/") || v.starts_with("/sys/") || v.starts_with("/dev/") {
        Some("must be a file benchpipe may edit, not in /proc, /sys or /dev".to_string())
    } else {
        names::control_free(v, false).err()
    };
    match why {
        Some(why) => {
            diags.push(src.at_value(c, format!("`cmdline` {why}")));
            None
        }
        None => Some(v.clone()),
    }
}

/// A storage's `uas` (with its optional `usb_id`): it needs a `device` to find the USB
/// device, the board's `[boot] cmdline` to edit and a `[power]` cycle to apply it.
pub(super) fn uas(
    src: &Source,
    s: &raw::Storage,
    cmdline: Option<&str>,
    power: bool,
    diags: &mut Vec<Diagnostic>,
) -> Option<Uas> {
    let usb_id = s.usb_id.as_ref().and_then(|id| {
        let v = id.get_ref();
        let ok = v.len() == 9
            && v.as_bytes()[4] == b':'
            && v.bytes()
                .enumerate()
                .all(|(i, b)| i == 4 || b.is_ascii_hexdigit());
        if !ok {
            diags.push(src.at_value(
                id,
                format!("bad usb_id `{v}`: expected the USB device's `VID:PID` in hexadecimal, like `174c:55aa` (from `lsusb`)"),
            ));
        }
        ok.then(|| v.to_ascii_lowercase())
    });
    let Some(uas) = &s.uas else {
        if let Some(id) = &s.usb_id {
            diags.push(
                src.at_value(id, "`usb_id` is only used with `uas`")
                    .with_help("add `uas = true` or `uas = false`, or remove `usb_id`"),
            );
        }
        return None;
    };
    let mut ok = true;
    if s.device.is_none() {
        diags.push(src.at_value(
            uas,
            "`uas` needs the storage's `device`: its USB device is found from it",
        ));
        ok = false;
    }
    if cmdline.is_none() {
        diags.push(
            src.at_value(uas, "`uas` needs the board's kernel command line file, and this board declares none")
                .with_help("add `[boot]` with `cmdline = \"/boot/firmware/cmdline.txt\"` (the file the board boots with); benchpipe edits no file that is not declared"),
        );
        ok = false;
    }
    if !power {
        diags.push(
            src.at_value(
                uas,
                "`uas` needs a `[power] cycle`: the driver changes only at boot",
            )
            .with_help(
                "add `[power]` with `cycle = \"...\"`, a command that power-cycles the board",
            ),
        );
        ok = false;
    }
    ok.then(|| Uas {
        enabled: *uas.get_ref(),
        usb_id,
    })
}
