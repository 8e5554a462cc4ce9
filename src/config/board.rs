//! Validates one board file (`boards/<name>.toml`) into a `model::Board`.

use std::collections::{BTreeMap, BTreeSet};

use toml::Spanned;

use super::{Source, boot, names, raw, ssh, template};
use crate::bench::Vars;
use crate::diag::Diagnostic;
use crate::model::{Board, BoardName, Connection, Flash, Storage, StorageName, StorageRole};

use crate::storage::rules;

pub fn validate(src: &Source, raw: raw::Board, diags: &mut Vec<Diagnostic>) -> Option<Board> {
    let name = src.stem.clone();
    let start = diags.len();

    let model = non_empty(src, &raw.model, "model", diags);
    if let Err(e) = names::control_free(&model, false) {
        diags.push(src.at_value(&raw.model, format!("`model` {e}")));
    }
    let workdir = match &raw.workdir {
        Some(w) => {
            if absolute(src, w, "workdir", diags) {
                workdir_is_safe(src, w, diags);
            }
            w.get_ref().trim_end_matches('/').to_string()
        }
        None => format!("/var/tmp/benchpipe/{name}"),
    };
    let connection = connection(src, &raw, diags);
    let boot_cmdline = boot::cmdline(src, raw.boot.as_ref(), diags);
    // A `[boot]` whose file was refused is reported there, not again at each `uas`.
    let declared = boot_cmdline.as_deref().or(raw.boot.as_ref().map(|_| ""));
    let uas = (declared, raw.power.is_some());
    let storage = storage(src, &raw.storage, &workdir, uas, diags);
    let network = super::network::networks(src, &raw.network, diags);
    let host = match &raw.ssh {
        Some(ssh) => ssh.get_ref().host.get_ref().clone(),
        None => "localhost".to_string(),
    };
    let flash = match &raw.flash {
        Some(f) => flash(src, f, &storage, &name, &host, diags),
        None => Some(Flash::None),
    };
    let ctx = TemplateContext::new(&name, &host, &storage, flash.as_ref());
    let power = raw
        .power
        .as_ref()
        .and_then(|p| super::power::power(src, p, raw.flash.as_ref(), flash.as_ref(), &ctx, diags));
    if raw.power.is_none() {
        super::power::none_to_boot(src, raw.flash.as_ref(), flash.as_ref(), diags);
    }
    let meter = raw
        .meter
        .as_ref()
        .and_then(|m| super::meter::validate(src, m, &name, &host, diags));
    let arch = arch(src, raw.arch.as_ref(), diags);
    let health = super::health::validate(src, &raw.health, diags);
    let labgrid = raw
        .labgrid
        .as_ref()
        .and_then(|l| super::labgrid::validate(src, l, diags));
    let memory_mib = raw.memory.as_ref().and_then(|m| {
        super::units::parse_memory(m.get_ref())
            .map_err(|e| diags.push(src.at_value(m, e)))
            .ok()
    });

    // A warning (a scratch device named only by its kernel name) leaves the board usable.
    if diags[start..].iter().any(|d| !d.warning) {
        return None;
    }
    Some(Board {
        name: BoardName::new(name),
        file: src.rel.clone(),
        model,
        arch,
        memory: raw.memory.map(Spanned::into_inner),
        memory_mib,
        connection: connection?,
        flash: flash?,
        power,
        meter,
        storage,
        network,
        workdir,
        thermal: raw.thermal.map(Spanned::into_inner),
        accept_new_host_key: raw
            .flash
            .as_ref()
            .and_then(|f| f.get_ref().accept_new_host_key.as_ref())
            .is_some_and(|a| *a.get_ref()),
        boot_cmdline,
        health,
        labgrid,
    })
}

/// `arch`: the `uname -m` words the board's CPU can run (a Pi 4's Cortex-A72 runs
/// `aarch64` and `armv7l`), one or a list, each checked, in the file's order.
fn arch(
    src: &Source,
    raw: Option<&Spanned<raw::Arch>>,
    diags: &mut Vec<Diagnostic>,
) -> Vec<String> {
    let Some(raw) = raw else { return Vec::new() };
    let words: Vec<Spanned<String>> = match raw.get_ref() {
        raw::Arch::One(w) => vec![Spanned::new(raw.span(), w.clone())],
        raw::Arch::Many(v) if v.is_empty() => {
            diags.push(
                src.at_value(raw, "`arch` is an empty list")
                    .with_help("list the `uname -m` words the board's CPU can run, like [\"aarch64\", \"armv7l\"], or leave `arch` out"),
            );
            return Vec::new();
        }
        raw::Arch::Many(v) => v.clone(),
    };
    let mut out: Vec<String> = Vec::new();
    for w in &words {
        if !super::image::uname_word(src, w, "arch", diags) {
            continue;
        }
        if out.contains(w.get_ref()) {
            diags.push(src.at_value(w, format!("`{}` is listed twice in `arch`", w.get_ref())));
            continue;
        }
        out.push(w.get_ref().clone());
    }
    out
}

fn non_empty(
    src: &Source,
    value: &Spanned<String>,
    key: &str,
    diags: &mut Vec<Diagnostic>,
) -> String {
    if value.get_ref().trim().is_empty() {
        diags.push(src.at_value(value, format!("`{key}` must not be empty")));
    }
    value.get_ref().clone()
}

/// Reports a value that is not an absolute path (or holds a control character);
/// returns whether it is one.
fn absolute(src: &Source, value: &Spanned<String>, key: &str, diags: &mut Vec<Diagnostic>) -> bool {
    let v = value.get_ref();
    let message = if !v.starts_with('/') {
        format!("`{key}` must be an absolute path on the board, starting with `/`")
    } else if let Err(e) = names::control_free(v, false) {
        format!("`{key}` {e}")
    } else {
        return true;
    };
    diags.push(src.at_value(value, message));
    false
}

/// benchpipe creates, fills and removes files under its work directory, so it must be
/// a directory of its own, never `/`, a system directory or someone's home.
fn workdir_is_safe(src: &Source, value: &Spanned<String>, diags: &mut Vec<Diagnostic>) {
    const SYSTEM: [&str; 19] = [
        "bin", "boot", "dev", "etc", "home", "lib", "lib32", "lib64", "media", "mnt", "opt",
        "proc", "root", "run", "sbin", "srv", "sys", "tmp", "usr",
    ];
    let v = value.get_ref();
    let message = if v.split('/').any(|part| part == "." || part == "..") {
        Some(format!(
            "`workdir` `{v}` has a `.` or `..` part: write the path it means"
        ))
    } else if v.trim_end_matches('/').is_empty() {
        Some("`workdir` cannot be `/`, the board's root".to_string())
    } else {
        None
    };
    if let Some(message) = message {
        diags.push(src.at_value(value, message));
        return;
    }
    let path = v.trim_end_matches('/');
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    let why = match parts.as_slice() {
        ["home", _] | ["root"] => Some("a home directory"),
        [top] if SYSTEM.contains(top) || *top == "var" => Some("a system directory"),
        ["var", "tmp" | "lib" | "log" | "cache"] => Some("a system directory"),
        _ => None,
    };
    if let Some(why) = why {
        diags.push(
            src.at_value(value, format!("workdir `{path}` is {why}; benchpipe creates and removes files in its work directory"))
                .with_help("use a directory of benchpipe's own, like `/var/tmp/benchpipe/<board>` (the default) or `/home/pi/benchpipe`"),
        );
    }
}

fn connection(src: &Source, raw: &raw::Board, diags: &mut Vec<Diagnostic>) -> Option<Connection> {
    let local = raw.local.as_ref().filter(|l| *l.get_ref());
    match (local, &raw.ssh) {
        (Some(l), Some(_)) => {
            diags.push(
                src.at_value(l, "a board is reached either locally or over SSH, not both")
                    .with_help("remove `local = true` or the `[ssh]` table"),
            );
            None
        }
        (Some(_), None) => Some(Connection::Local),
        (None, Some(ssh)) => Some(Connection::Ssh(ssh::target(src, ssh.get_ref(), diags))),
        (None, None) => {
            diags.push(
                src.whole("this board says nothing about how to reach it")
                    .with_help("add `local = true` (the controller itself) or an `[ssh]` table with `host = \"...\"`"),
            );
            None
        }
    }
}

fn storage(
    src: &Source,
    raw: &[Spanned<raw::Storage>],
    workdir: &str,
    (cmdline, power): (Option<&str>, bool),
    diags: &mut Vec<Diagnostic>,
) -> Vec<Storage> {
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    let mut out = Vec::new();
    for entry in raw {
        let s = entry.get_ref();
        let name = s.name.get_ref();
        if !names::is_plain_name(name) {
            diags.push(src.at_value(
                &s.name,
                format!("bad storage name `{name}`: use letters, digits, `-`, `_` and `.`"),
            ));
        }
        if let Some(first) = seen.get(name.as_str()) {
            let line = src.at(*first..*first, "").line;
            diags.push(
                src.at_value(&s.name, format!("storage `{name}` is declared twice"))
                    .with_help(format!("the first `{name}` is on line {line}; storage names must be unique within a board")),
            );
        } else {
            seen.insert(name, s.name.span().start);
        }
        let role = match s.role.get_ref().as_str() {
            "boot" => StorageRole::Boot,
            "scratch" => StorageRole::Scratch,
            other => {
                diags.push(
                    src.at_value(&s.role, format!("unknown storage role `{other}`; expected `boot` or `scratch`"))
                        .with_help("`boot` holds the OS and is never formatted; `scratch` may be formatted for filesystem cells"),
                );
                StorageRole::Boot
            }
        };
        if let Some(p) = &s.path
            && absolute(src, p, "path", diags)
            && let Some(why) = rules::storage_path(
                p.get_ref(),
                s.device.is_some() && s.role.get_ref() == "scratch",
            )
        {
            diags.push(
                src.at_value(p, format!("bad storage path: {why}"))
                    .with_help("use a directory of its own, such as `/mnt/usb`, or leave `path` out of a scratch storage with a device to mount it under the workdir"),
            );
        }
        if let Some(d) = &s.device
            && absolute(src, d, "device", diags)
            && let Some(why) = rules::device_path(d.get_ref())
        {
            diags.push(src.at_value(d, format!("bad device: {why}")));
        }
        if let Some(m) = &s.model
            && let Err(e) = names::control_free(m.get_ref(), false)
        {
            diags.push(src.at_value(m, format!("`model` {e}")));
        }
        let path = match (&s.path, &s.device, role) {
            (Some(p), _, _) => p.get_ref().trim_end_matches('/').to_string(),
            (None, Some(_), StorageRole::Scratch) => format!("{workdir}/mnt/{name}"),
            (None, _, _) => {
                diags.push(
                    src.at_value(entry, format!("storage `{name}` needs `path`: the directory on the board where tests put their files"))
                        .with_help("only a scratch storage with a `device` may leave it out; it is then mounted at `<workdir>/mnt/<name>`"),
                );
                String::new()
            }
        };
        out.push(Storage {
            name: StorageName::new(name.clone()),
            role,
            device: s.device.as_ref().map(|d| d.get_ref().clone()),
            path,
            model: s.model.as_ref().map(|m| m.get_ref().clone()),
            uas: boot::uas(src, s, cmdline, power, diags),
            driver: driver(src, s, diags),
            serial: serial(src, s, diags),
            size_bytes: size(src, s, diags),
        });
        which_device(src, s, role, diags);
    }
    boot_overlap(src, raw, diags);
    out
}

/// A storage's `serial`: one line of printable text, on a storage with a `device`.
fn serial(src: &Source, s: &raw::Storage, diags: &mut Vec<Diagnostic>) -> Option<String> {
    let v = s.serial.as_ref()?;
    let text = v.get_ref().trim();
    if text.is_empty() || text.len() > 128 || names::control_free(text, false).is_err() {
        diags.push(
            src.at_value(v, "bad `serial`: expected the device's serial number, 1 to 128 printable characters")
                .with_help("as `lsblk -dno SERIAL /dev/sdX` or `udevadm info -q property -n /dev/sdX | grep ID_SERIAL_SHORT` prints it"),
        );
        return None;
    }
    if s.device.is_none() {
        diags.push(src.at_value(
            v,
            "`serial` needs the storage's `device`: it is the device's",
        ));
        return None;
    }
    Some(text.to_string())
}

/// A storage's `size`: a whole number of bytes, on a storage with a `device`.
fn size(src: &Source, s: &raw::Storage, diags: &mut Vec<Diagnostic>) -> Option<u64> {
    let v = s.size.as_ref()?;
    let Ok(bytes) = u64::try_from(*v.get_ref()) else {
        diags.push(
            src.at_value(
                v,
                "bad `size`: expected the device's size in bytes, a positive whole number",
            )
            .with_help("as `lsblk -bdno SIZE /dev/sdX` prints it"),
        );
        return None;
    };
    if bytes == 0 {
        diags.push(
            src.at_value(
                v,
                "bad `size`: expected the device's size in bytes, a positive whole number",
            )
            .with_help("as `lsblk -bdno SIZE /dev/sdX` prints it"),
        );
        return None;
    }
    if s.device.is_none() {
        diags.push(src.at_value(v, "`size` needs the storage's `device`: it is the device's"));
        return None;
    }
    Some(bytes)
}

/// A scratch device named only by where the kernel enumerated it (`/dev/sda`) may be
/// another disk on the next boot (an unmounted backup drive plugged in first): without a
/// `serial`, a `size` or a `/dev/disk/by-id/` path nothing tells them apart.
fn which_device(src: &Source, s: &raw::Storage, role: StorageRole, diags: &mut Vec<Diagnostic>) {
    let Some(d) = &s.device else { return };
    if role != StorageRole::Scratch
        || d.get_ref().starts_with("/dev/disk/by-id/")
        || s.serial.is_some()
        || s.size.is_some()
    {
        return;
    }
    diags.push(
        src.at_value(
            d,
            format!(
                "scratch device `{}` is whatever disk the kernel names so at boot; another disk there would be formatted",
                d.get_ref()
            ),
        )
        .with_help("declare its `serial` and/or `size` (apply then refuses any other device), or name it by `/dev/disk/by-id/...`")
        .as_warning(),
    );
}

/// A storage's `driver`: `uas` or `usb-storage`, on a storage with a `device` (its USB
/// device is found from it) and without `uas` (which sets the driver itself).
fn driver(src: &Source, s: &raw::Storage, diags: &mut Vec<Diagnostic>) -> Option<String> {
    let d = s.driver.as_ref()?;
    let v = d.get_ref();
    if v != "uas" && v != "usb-storage" {
        diags.push(src.at_value(
            d,
            format!(
                "bad driver `{}`: expected `uas` (a UASP case on a port that runs it) or `usb-storage`",
                v.escape_debug()
            ),
        ));
        return None;
    }
    if s.device.is_none() {
        diags.push(src.at_value(
            d,
            "`driver` needs the storage's `device`: its USB device is found from it",
        ));
        return None;
    }
    if let Some(u) = &s.uas {
        diags.push(
            src.at_value(d, "`driver` beside `uas`: `uas` already says the driver")
                .with_help(format!(
                    "remove `driver`; `uas = {}` puts the device under {}",
                    u.get_ref(),
                    if *u.get_ref() {
                        "`uas`"
                    } else {
                        "`usb-storage`"
                    }
                )),
        );
        return None;
    }
    Some(v.clone())
}

/// What a board's templates (`[flash] command`, `[power] cycle/on/off`) may use:
/// `board` and `host` always; `device`, the boot storage's device, when the board
/// declares one; `node`, the Turing Pi node, on a `tpi` board; and a flash command
/// also `image`, the verified image file on the host that runs it.
pub(super) struct TemplateContext {
    pub(super) board: String,
    pub(super) host: String,
    pub(super) device: Option<String>,
    pub(super) node: Option<u32>,
}

impl TemplateContext {
    pub(super) fn new(board: &str, host: &str, storage: &[Storage], flash: Option<&Flash>) -> Self {
        TemplateContext {
            board: board.to_string(),
            host: host.to_string(),
            device: storage
                .iter()
                .filter(|s| s.role == StorageRole::Boot)
                .find_map(|s| s.device.clone()),
            node: match flash {
                Some(Flash::Tpi { node, .. }) => Some(*node),
                _ => None,
            },
        }
    }
}

/// Checks a board template against the variables `ctx` says apply (and `image` for a
/// flash command): an unknown one is an error at its place.
pub(super) fn board_template(
    src: &Source,
    template: &Spanned<String>,
    ctx: &TemplateContext,
    flash: bool,
    diags: &mut Vec<Diagnostic>,
) {
    let mut allowed: BTreeSet<String> = ["board", "host"].map(String::from).into();
    let mut samples = Vars::new();
    samples
        .set("board", ctx.board.as_str())
        .set("host", ctx.host.as_str());
    if let Some(device) = &ctx.device {
        allowed.insert("device".into());
        samples.set("device", device.as_str());
    }
    if let Some(node) = ctx.node {
        allowed.insert("node".into());
        samples.set("node", node.to_string());
    }
    if flash {
        allowed.insert("image".into());
        samples.set("image", "/var/tmp/benchpipe/images/sample.img");
    }
    if template::check(src, template, &allowed, diags).is_some() {
        template::check_rendered(src, template, &samples, diags);
    }
}

/// A scratch device that is, holds or lies inside a boot storage's device would be
/// formatted with the system on it. Naming alone decides here (`/dev/sda` holds
/// `/dev/sda1`); symlinks such as `/dev/disk/by-id/...` are resolved on the board, where
/// `storage::prepare` also refuses any device holding `/` or `/boot`.
fn boot_overlap(src: &Source, raw: &[Spanned<raw::Storage>], diags: &mut Vec<Diagnostic>) {
    let with_device = |role: &'static str| {
        raw.iter().filter_map(move |e| {
            let s = e.get_ref();
            let d = s.device.as_ref()?;
            (s.role.get_ref() == role && d.get_ref().starts_with('/')).then_some((s, d))
        })
    };
    for (scratch, dev) in with_device("scratch") {
        for (boot, boot_dev) in with_device("boot") {
            if rules::overlaps(dev.get_ref(), boot_dev.get_ref()) {
                diags.push(
                    src.at_value(
                        dev,
                        format!(
                            "scratch storage `{}` on `{}` overlaps boot storage `{}` on `{}`: formatting it would destroy the system",
                            scratch.name.get_ref(),
                            dev.get_ref(),
                            boot.name.get_ref(),
                            boot_dev.get_ref()
                        ),
                    )
                    .with_help("a scratch device must be another disk than the boot disk, or another partition of it"),
                );
            }
        }
    }
}

fn flash(
    src: &Source,
    raw: &Spanned<raw::Flash>,
    storage: &[Storage],
    board: &str,
    host: &str,
    diags: &mut Vec<Diagnostic>,
) -> Option<Flash> {
    let f = raw.get_ref();
    let method = f.method.get_ref().as_str();
    // Which optional keys each method takes; any other key present is a mistake.
    if let (Some(a), "none") = (&f.accept_new_host_key, method) {
        diags.push(src.at_value(
            a,
            "`accept_new_host_key` does not apply to flash method `none`: only a flash makes a new key",
        ));
        return None;
    }
    // Required keys, then optional ones.
    let (takes, optional): (&[&str], &[&str]) = match method {
        "none" => (&[], &[]),
        "tpi" => (&["via", "node"], &["dir"]),
        "dd" => (&["via", "device"], &[]),
        "command" => (&["command"], &["via"]),
        other => {
            let help = names::help_for(other, ["tpi", "dd", "command", "none"], "flash methods");
            diags.push(
                src.at_value(
                    &f.method,
                    format!(
                        "unknown flash method `{other}`; expected `tpi`, `dd`, `command` or `none`"
                    ),
                )
                .with_help(help),
            );
            return None;
        }
    };
    let present: [(&str, Option<std::ops::Range<usize>>); 5] = [
        ("via", f.via.as_ref().map(Spanned::span)),
        ("node", f.node.as_ref().map(Spanned::span)),
        ("device", f.device.as_ref().map(Spanned::span)),
        ("command", f.command.as_ref().map(Spanned::span)),
        ("dir", f.dir.as_ref().map(Spanned::span)),
    ];
    let mut ok = true;
    for (key, span) in &present {
        match span {
            Some(span) if !takes.contains(key) && !optional.contains(key) => {
                diags.push(src.at(
                    span.clone(),
                    format!("`{key}` does not apply to flash method `{method}`"),
                ));
                ok = false;
            }
            None if takes.contains(key) => {
                diags.push(src.at_value(raw, format!("flash method `{method}` needs `{key}`")));
                ok = false;
            }
            _ => {}
        }
    }
    if let Some(via) = &f.via {
        ok &= super::power::via_is_valid(src, via, diags);
    }
    if let Some(dir) = &f.dir {
        ok &= absolute(src, dir, "dir", diags);
    }
    if !ok {
        return None;
    }
    let text =
        |v: &Option<Spanned<String>>| v.as_ref().map(|v| v.get_ref().clone()).unwrap_or_default();
    match method {
        "tpi" => {
            let node = f.node.as_ref()?;
            if let Ok(n @ 1..=4) = u32::try_from(*node.get_ref()) {
                Some(Flash::Tpi {
                    via: text(&f.via),
                    node: n,
                    dir: f
                        .dir
                        .as_ref()
                        .map_or(crate::model::TPI_DEFAULT_DIR.to_string(), |d| {
                            d.get_ref().trim_end_matches('/').to_string()
                        }),
                })
            } else {
                diags.push(src.at_value(
                    node,
                    format!(
                        "bad node {}: expected a node number, 1 to 4 on a Turing Pi",
                        node.get_ref()
                    ),
                ));
                None
            }
        }
        "dd" => {
            let device = f.device.as_ref()?;
            boot_device(src, device, storage, diags).map(|device| Flash::Dd {
                via: text(&f.via),
                device,
            })
        }
        "command" => {
            let command = f.command.as_ref()?;
            let ctx = TemplateContext::new(board, host, storage, None);
            board_template(src, command, &ctx, true, diags);
            Some(Flash::Command {
                command: command.get_ref().clone(),
                via: f.via.as_ref().map(|v| v.get_ref().clone()),
            })
        }
        _ => Some(Flash::None),
    }
}

/// `dd` writes a whole device, so it must be the board's declared boot storage: a typo
/// here could otherwise overwrite a disk nobody meant to touch. Accepts the storage's
/// name or its device path; yields the device path.
fn boot_device(
    src: &Source,
    device: &Spanned<String>,
    storage: &[Storage],
    diags: &mut Vec<Diagnostic>,
) -> Option<String> {
    let wanted = device.get_ref();
    let found = storage
        .iter()
        .find(|s| s.device.as_deref() == Some(wanted.as_str()) || s.name.as_str() == wanted);
    match found {
        Some(s) if s.role == StorageRole::Boot => {
            if let Some(d) = &s.device {
                Some(d.clone())
            } else {
                diags.push(src.at_value(
                    device,
                    format!("storage `{}` has no `device` for dd to write to", s.name),
                ));
                None
            }
        }
        Some(s) => {
            diags.push(
                src.at_value(
                    device,
                    format!(
                        "dd would write to storage `{}`, whose role is scratch, not boot",
                        s.name
                    ),
                )
                .with_help("flash only onto the storage declared with `role = \"boot\"`"),
            );
            None
        }
        None => {
            let boots: Vec<String> = storage
                .iter()
                .filter(|s| s.role == StorageRole::Boot)
                .map(|s| format!("`{}`", s.device.as_deref().unwrap_or(s.name.as_str())))
                .collect();
            let help = if boots.is_empty() {
                "declare the device first: [[storage]] with name, role = \"boot\" and device"
                    .to_string()
            } else {
                format!("boot storage of this board: {}", boots.join(", "))
            };
            diags.push(
                src.at_value(
                    device,
                    format!("dd device `{wanted}` is not a declared boot storage of this board"),
                )
                .with_help(help),
            );
            None
        }
    }
}
