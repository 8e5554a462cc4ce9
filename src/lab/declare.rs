//! Who a flashed image lets in on its first boot, as its boot partition declares it:
//! cloud-init NoCloud `user-data` (a MIME multipart's cloud-config parts merged by
//! `multipart`), the Raspberry Pi OS files (`ssh`, `userconf.txt`, the lines Raspberry
//! Pi Imager writes into `firstrun.sh`) and an Armbian preset. Pure:
//! file contents in, a declaration and a boot log out. Every input is hostile: read
//! bounded, each value checked, anything not understood refused with a log line, and
//! nothing from the image is ever run.

use std::collections::BTreeMap;

/// The most any one declaration file may hold.
pub const MAX_FILE: u64 = 64 << 10;
/// The boot log keeps at most this many lines.
const MAX_LOG: usize = 200;
const MAX_USERS: usize = 16;
const MAX_KEYS: usize = 32;
/// The lab images' cloud-init default user (`users: [default]`, top-level
/// `ssh_authorized_keys`): Raspberry Pi OS's traditional one.
pub const DEFAULT_USER: &str = "pi";

/// The key types sshd takes, in authorized_keys' first field.
const KEY_TYPES: &[&str] = &[
    "ssh-ed25519",
    "ssh-rsa",
    "ecdsa-sha2-nistp256",
    "ecdsa-sha2-nistp384",
    "ecdsa-sha2-nistp521",
    "sk-ssh-ed25519@openssh.com",
    "sk-ecdsa-sha2-nistp256@openssh.com",
];

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct User {
    pub name: String,
    /// `TYPE BASE64`, comments and options dropped.
    pub keys: Vec<String>,
}

/// What the boot partition declares. `ssh` false: sshd is not started.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Declared {
    pub ssh: bool,
    pub users: Vec<User>,
    pub hostname: Option<String>,
    /// Which kinds of declaration were found: `cloud-init`, `raspios`, `armbian`.
    pub kinds: Vec<&'static str>,
}

/// The boot log: what was read, taken and refused. Bounded; never holds a value that
/// may be a secret (passwords, hashes), only names.
#[derive(Debug, Default)]
pub struct Log(pub Vec<String>);

impl Log {
    pub fn say(&mut self, line: impl Into<String>) {
        if self.0.len() < MAX_LOG {
            self.0.push(cut(&line.into(), 300));
        } else if self.0.len() == MAX_LOG {
            self.0.push("(more lines left out)".into());
        }
    }
}

/// `s` on one line, controls escaped, cut to `max` characters (a value from the image).
fn cut(s: &str, max: usize) -> String {
    let line = crate::shown::one_line(s);
    match line.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line.into_owned(),
    }
}

/// A file of the boot partition by name: `None` when missing, an error when refused.
pub type BootFile<'a> = dyn Fn(&str) -> Result<Option<Vec<u8>>, String> + 'a;

/// The files a declaration can come from: the boot partition's, by lower-case name,
/// through `boot`, and the root partition's Armbian preset (`/root/.not_logged_in_yet`).
pub struct Sources<'a> {
    pub boot: &'a BootFile<'a>,
    pub armbian_root: Option<Vec<u8>>,
}

impl Declared {
    fn add_user(&mut self, name: &str, keys: Vec<String>, log: &mut Log) {
        if let Some(u) = self.users.iter_mut().find(|u| u.name == name) {
            for k in keys {
                if !u.keys.contains(&k) && u.keys.len() < MAX_KEYS {
                    u.keys.push(k);
                }
            }
        } else if self.users.len() < MAX_USERS {
            self.users.push(User {
                name: name.to_string(),
                keys,
            });
        } else {
            log.say(format!("more than {MAX_USERS} users: {name} refused"));
        }
    }

    fn set_hostname(&mut self, source: &str, name: &str, log: &mut Log) {
        if !hostname_ok(name) {
            log.say(format!(
                "{source}: hostname {name:?} refused (not a host name)"
            ));
        } else if self.hostname.is_none() {
            self.hostname = Some(name.to_string());
        }
    }
}

/// Reads every kind of declaration; `None` when there is none (SSH stays off).
pub fn declared(src: &Sources<'_>, log: &mut Log) -> Option<Declared> {
    let mut d = Declared::default();
    let mut read = |name: &str, log: &mut Log| match (src.boot)(name) {
        Ok(v) => v,
        Err(e) => {
            log.say(format!("boot partition: {e}: refused"));
            None
        }
    };
    if let Some(text) = read("user-data", log) {
        d.kinds.push("cloud-init");
        cloud_init(&text, &mut d, log);
    }
    let ssh_file = read("ssh", log).is_some() || read("ssh.txt", log).is_some();
    let userconf = read("userconf.txt", log).or_else(|| read("userconf", log));
    let firstrun = read("firstrun.sh", log);
    if ssh_file || userconf.is_some() || firstrun.is_some() {
        d.kinds.push("raspios");
        raspios(
            ssh_file,
            userconf.as_deref(),
            firstrun.as_deref(),
            &mut d,
            log,
        );
    }
    let boot_preset = read("armbian_first_run.txt", log);
    for (where_, text) in [
        ("/root/.not_logged_in_yet", src.armbian_root.as_deref()),
        ("armbian_first_run.txt", boot_preset.as_deref()),
    ] {
        if let Some(text) = text {
            d.kinds.push("armbian");
            armbian(where_, text, &mut read, &mut d, log);
        }
    }
    if d.kinds.is_empty() {
        log.say(
            "no first-boot declaration on the boot partition (no cloud-init user-data, no \
             Raspberry Pi OS ssh/userconf.txt/firstrun.sh, no Armbian preset): SSH stays off",
        );
        return None;
    }
    Some(d)
}

/// A login name as Debian's adduser takes it.
pub fn user_ok(name: &str) -> bool {
    let b = name.as_bytes();
    !b.is_empty()
        && b.len() <= 32
        && (b[0].is_ascii_lowercase() || b[0] == b'_')
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || b"_-".contains(c))
}

fn hostname_ok(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|l| {
            !l.is_empty()
                && l.len() <= 63
                && !l.starts_with('-')
                && !l.ends_with('-')
                && l.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-')
        })
}

/// One authorized key: `TYPE BASE64 [comment]` with a known type whose blob decodes and
/// names the same type. Options (`command="..."`, `from=`...) are refused.
pub fn key(line: &str) -> Result<String, String> {
    let line = line.trim();
    let mut fields = line.split_ascii_whitespace();
    let (Some(kind), Some(blob)) = (fields.next(), fields.next()) else {
        return Err("not a public key line".into());
    };
    if !KEY_TYPES.contains(&kind) {
        return Err(if kind.contains('=') || kind.contains(',') {
            "a key with options (command=, from=, ...) is refused: the lab writes plain keys".into()
        } else {
            format!("key type {:?} is not one sshd takes", cut(kind, 40))
        });
    }
    if blob.len() > 16 << 10 {
        return Err("a key blob longer than any real key".into());
    }
    let raw = base64(blob).ok_or("a key blob that is not base64")?;
    let named = raw
        .get(..4)
        .map(|n| u32::from_be_bytes([n[0], n[1], n[2], n[3]]) as usize)
        .and_then(|n| raw.get(4..4 + n));
    if named != Some(kind.as_bytes()) {
        return Err(format!("a key blob that is not a {kind} key"));
    }
    Ok(format!("{kind} {blob}"))
}

fn base64(s: &str) -> Option<Vec<u8>> {
    let val = |c: u8| match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    };
    let body = s.trim_end_matches('=');
    if !s.len().is_multiple_of(4) || s.len() - body.len() > 2 {
        return None;
    }
    let mut out = Vec::with_capacity(body.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0);
    for c in body.bytes() {
        acc = (acc << 6) | u32::from(val(c)?);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    Some(out)
}

fn keys_of(source: &str, lines: &[&str], log: &mut Log) -> Vec<String> {
    let mut keys = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        if keys.len() >= MAX_KEYS {
            log.say(format!(
                "{source}: more than {MAX_KEYS} keys: the rest refused"
            ));
            break;
        }
        match key(l) {
            Ok(k) if !keys.contains(&k) => keys.push(k),
            Ok(_) => {}
            Err(why) => log.say(format!("{source}: key {}: {why}: refused", i + 1)),
        }
    }
    keys
}

/// Text of a declaration file: UTF-8, no NUL, bounded (the reader bounded it already).
fn text<'t>(source: &str, bytes: &'t [u8], log: &mut Log) -> Option<&'t str> {
    match std::str::from_utf8(bytes) {
        Ok(t) if !t.contains('\0') && bytes.len() as u64 <= MAX_FILE => Some(t),
        _ => {
            log.say(format!("{source}: not a text file: refused"));
            None
        }
    }
}

fn cloud_init(bytes: &[u8], d: &mut Declared, log: &mut Log) {
    use serde_norway::Value;
    let Some(t) = text("user-data", bytes, log) else {
        return;
    };
    let doc: Value = if t.lines().next().map(str::trim_end) == Some("#cloud-config") {
        match serde_norway::from_str(t) {
            Ok(v) => v,
            Err(e) => {
                log.say(format!("user-data: not YAML the lab reads: {e}: refused"));
                return;
            }
        }
    } else if super::multipart::is_mime(t) {
        // cloud-init merges a multipart's text/cloud-config parts (first-boot
        // preparation writes one with extra user-data); the rest is refused there.
        match super::multipart::merged(t, log) {
            Some(v) => v,
            None => return,
        }
    } else {
        log.say(
            "user-data: not #cloud-config nor MIME multipart (a script or #include): refused; \
             the lab runs nothing from the image",
        );
        return;
    };
    let top = match doc {
        Value::Mapping(m) => m,
        Value::Null => serde_norway::Mapping::new(),
        _ => {
            log.say("user-data: not a mapping: refused");
            return;
        }
    };
    d.ssh = true;
    let strings = |v: &Value| -> Option<Vec<String>> {
        match v {
            Value::Sequence(s) => s
                .iter()
                .map(|x| x.as_str().map(str::to_string))
                .collect::<Option<Vec<String>>>(),
            _ => None,
        }
    };
    let mut default_keys = Vec::new();
    let mut disable_root = true;
    let mut users: Option<&Value> = None;
    for (k, v) in &top {
        let Some(k) = k.as_str() else {
            log.say("user-data: a key that is not a string: ignored");
            continue;
        };
        match k {
            "users" => users = Some(v),
            "ssh_authorized_keys" => match strings(v) {
                Some(lines) => {
                    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
                    default_keys = keys_of("user-data ssh_authorized_keys", &lines, log);
                }
                None => log.say("user-data: ssh_authorized_keys is not a list of strings: refused"),
            },
            "hostname" => match v.as_str() {
                Some(h) => d.set_hostname("user-data", h, log),
                None => log.say("user-data: hostname is not a string: refused"),
            },
            "disable_root" => match v.as_bool() {
                Some(b) => disable_root = b,
                None => log.say("user-data: disable_root is not true or false: refused"),
            },
            "ssh_pwauth" => log.say(format!(
                "user-data: ssh_pwauth {}: the lab's boards take keys only (PasswordAuthentication no)",
                if v.as_bool() == Some(true) { "true" } else { "false" }
            )),
            other => log.say(format!(
                "user-data: `{}` is not modelled by the lab: ignored (nothing from the image is run)",
                cut(other, 60)
            )),
        }
    }
    let default_user = Value::Sequence(vec![Value::String("default".into())]);
    let users = users.unwrap_or(&default_user);
    let Value::Sequence(entries) = users else {
        log.say("user-data: users is not a list: refused");
        return;
    };
    for (i, entry) in entries.iter().enumerate().take(MAX_USERS) {
        let at = format!("user-data users[{i}]");
        match entry {
            Value::String(s) if s == "default" => {
                d.add_user(DEFAULT_USER, default_keys.clone(), log);
            }
            Value::String(name) if user_ok(name) => d.add_user(name, Vec::new(), log),
            Value::Mapping(m) => {
                let Some(name) = m.get("name").and_then(Value::as_str) else {
                    log.say(format!("{at}: no name: refused"));
                    continue;
                };
                if !user_ok(name) {
                    log.say(format!(
                        "{at}: user name {:?} refused (not a login name)",
                        cut(name, 60)
                    ));
                    continue;
                }
                let mut keys = Vec::new();
                for (k, v) in m {
                    match k.as_str() {
                        Some("name") => {}
                        Some("ssh_authorized_keys") => match strings(v) {
                            Some(lines) => {
                                let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
                                keys = keys_of(&at, &lines, log);
                            }
                            None => log.say(format!(
                                "{at}: ssh_authorized_keys is not a list of strings: refused"
                            )),
                        },
                        Some(other) => log.say(format!(
                            "{at}: `{}` is not modelled by the lab: ignored",
                            cut(other, 60)
                        )),
                        None => log.say(format!("{at}: a key that is not a string: ignored")),
                    }
                }
                d.add_user(name, keys, log);
            }
            Value::String(name) => log.say(format!(
                "{at}: user name {:?} refused (not a login name)",
                cut(name, 60)
            )),
            _ => log.say(format!(
                "{at}: neither `default`, a name nor a mapping: refused"
            )),
        }
    }
    // cloud-init writes the default keys for root too, behind a refusing command unless
    // `disable_root: false`.
    if !disable_root && !default_keys.is_empty() {
        d.add_user("root", default_keys, log);
    }
}

/// A shell word as Imager writes it: 'single-quoted' or bare, nothing to expand.
fn plain_word(w: &str) -> Option<&str> {
    let inner = w
        .strip_prefix('\'')
        .and_then(|r| r.strip_suffix('\''))
        .unwrap_or(w);
    (!inner.is_empty() && !inner.contains(['\'', '"', '$', '`', '\\', '\n'])).then_some(inner)
}

fn raspios(
    ssh_file: bool,
    userconf: Option<&[u8]>,
    firstrun: Option<&[u8]>,
    d: &mut Declared,
    log: &mut Log,
) {
    const CUSTOM: &str = "/usr/lib/raspberrypi-sys-mods/imager_custom ";
    const USERCONF: &str = "/usr/lib/userconf-pi/userconf ";
    if ssh_file {
        d.ssh = true;
        log.say("raspios: the ssh file turns SSH on");
    }
    let mut user: Option<String> = None;
    if let Some(t) = userconf.and_then(|b| text("userconf.txt", b, log)) {
        match t.lines().next().and_then(|l| l.split_once(':')) {
            Some((name, _hash)) if user_ok(name) => user = Some(name.to_string()),
            Some((name, _)) => log.say(format!(
                "userconf.txt: user name {:?} refused (not a login name)",
                cut(name, 60)
            )),
            None => log.say("userconf.txt: not `user:hash`: refused"),
        }
    }
    let mut keys = Vec::new();
    let mut ignored = 0usize;
    if let Some(t) = firstrun.and_then(|b| text("firstrun.sh", b, log)) {
        for line in t.lines().map(str::trim) {
            if let Some(rest) = line.strip_prefix(CUSTOM) {
                let words: Vec<&str> = rest.split_ascii_whitespace().collect();
                match words.as_slice() {
                    ["set_hostname", h] => match plain_word(h) {
                        Some(h) => d.set_hostname("firstrun.sh", h, log),
                        None => log.say("firstrun.sh: set_hostname with shell syntax: refused"),
                    },
                    ["enable_ssh", rest @ ..] => {
                        d.ssh = true;
                        if let Some(quoted) = rest.strip_prefix(&["-k"]) {
                            let joined = quoted.join(" ");
                            for k in joined.split('\'').filter(|k| !k.trim().is_empty()) {
                                match key(k) {
                                    Ok(k) if !keys.contains(&k) => keys.push(k),
                                    Ok(_) => {}
                                    Err(why) => {
                                        log.say(format!("firstrun.sh: key: {why}: refused"));
                                    }
                                }
                            }
                        }
                    }
                    _ => ignored += 1,
                }
            } else if let Some(rest) = line.strip_prefix(USERCONF) {
                match rest.split_ascii_whitespace().next().and_then(plain_word) {
                    Some(name) if user_ok(name) => user = Some(name.to_string()),
                    _ => log.say("firstrun.sh: userconf with a user name the lab refuses"),
                }
            } else if let Some(rest) = line
                .strip_prefix("install -o \"$FIRSTUSER\" -m 600 <(printf \"")
                .and_then(|r| r.strip_suffix("\") \"$FIRSTUSERHOME/.ssh/authorized_keys\""))
            {
                for k in rest.split("\\n") {
                    match key(k) {
                        Ok(k) if !keys.contains(&k) => keys.push(k),
                        Ok(_) => {}
                        Err(why) => log.say(format!("firstrun.sh: key: {why}: refused")),
                    }
                }
            } else if line == "systemctl enable ssh" {
                d.ssh = true;
            } else if !line.is_empty() && !line.starts_with('#') {
                ignored += 1;
            }
        }
        log.say(format!(
            "firstrun.sh: read the lines Raspberry Pi Imager writes; {ignored} other line(s) \
             ignored (the lab runs nothing from the image)"
        ));
    }
    match user {
        Some(name) => d.add_user(&name, keys, log),
        None if !keys.is_empty() => {
            log.say("raspios: keys but no user (no userconf): nobody to log in as");
        }
        None => {}
    }
    if !d.ssh {
        log.say("raspios: no ssh file and no enable_ssh in firstrun.sh: SSH stays off");
    }
}

/// `NAME=value` lines as Armbian's presets are written: values bare or quoted, nothing
/// to expand. Only names are logged: values may be passwords.
fn armbian(
    where_: &str,
    bytes: &[u8],
    read: &mut dyn FnMut(&str, &mut Log) -> Option<Vec<u8>>,
    d: &mut Declared,
    log: &mut Log,
) {
    let Some(t) = text(where_, bytes, log) else {
        return;
    };
    let mut vars: BTreeMap<&str, &str> = BTreeMap::new();
    for line in t.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Some((name, value)) = line.split_once('=') else {
            log.say(format!("{where_}: a line that is no NAME=value: ignored"));
            continue;
        };
        if !name
            .bytes()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == b'_')
        {
            log.say(format!("{where_}: a line that is no NAME=value: ignored"));
            continue;
        }
        let value = value
            .strip_prefix('"')
            .and_then(|v| v.strip_suffix('"'))
            .or_else(|| value.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')))
            .unwrap_or(value);
        if value.contains(['$', '`', '\\', '"', '\'']) {
            log.say(format!("{where_}: {name} holds shell syntax: refused"));
            continue;
        }
        vars.insert(name, value);
    }
    d.ssh = true;
    let mut keys_from = |var: &str, log: &mut Log| -> Vec<String> {
        let Some(url) = vars.get(var).filter(|v| !v.is_empty()) else {
            return Vec::new();
        };
        let file = ["file:///boot/firmware/", "file:///boot/"]
            .iter()
            .find_map(|p| url.strip_prefix(p));
        let Some(file) = file.filter(|f| !f.is_empty() && !f.contains('/')) else {
            log.say(format!(
                "{where_}: {var} names a URL the board would download at first login; the \
                 lab fetches nothing (only file:///boot/NAME on the boot partition): refused"
            ));
            return Vec::new();
        };
        if let Some(b) = read(&file.to_ascii_lowercase(), log) {
            match text(file, &b, log) {
                Some(t) => keys_of(
                    &format!("{where_} {var}"),
                    &t.lines().collect::<Vec<_>>(),
                    log,
                ),
                None => Vec::new(),
            }
        } else {
            log.say(format!(
                "{where_}: {var} names {file}, which the boot partition lacks"
            ));
            Vec::new()
        }
    };
    let user_keys = keys_from("PRESET_USER_KEY", log);
    let root_keys = keys_from("PRESET_ROOT_KEY", log);
    match vars.get("PRESET_USER_NAME") {
        Some(name) if user_ok(name) => d.add_user(name, user_keys, log),
        Some(name) => log.say(format!(
            "{where_}: PRESET_USER_NAME {:?} refused (not a login name)",
            cut(name, 60)
        )),
        None => log.say(format!(
            "{where_}: no PRESET_USER_NAME: Armbian would ask on the console"
        )),
    }
    if !root_keys.is_empty() {
        d.add_user("root", root_keys, log);
    }
}

#[cfg(test)]
#[path = "declare_tests.rs"]
mod tests;
