//! The report's provenance: per configuration (a table row's image, board, storage,
//! filesystem and network, across tests), what produced its numbers, read only from what the store
//! kept with each cell (`cell.json` inputs, `facts.json`, `fingerprint.json`, the runs'
//! telemetry). A fact whose value differs between the configuration's cells is a warning.
//!
//! Nothing shown is a local path, a device node or a secret: board-side device names and
//! loop backing files are left out, and a host key shows only as its `SHA256:`
//! fingerprint.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::network::LinkFacts;
use crate::plan::{Address, Cell};
use crate::store::{CellData, CellFacts, FirstbootFact, NetworkFact, OsRelease, Scalar};
use crate::telemetry::StoredTelemetry;

/// How many hex digits of a cell key are shown (enough to find its directory).
pub const SHORT_KEY: usize = 12;

/// The fact of a Wi-Fi link's rate and signal, read when each cell opened.
const WIFI_FACT: &str = "Wi-Fi link";

/// One configuration's provenance.
#[derive(Clone, Debug, Serialize)]
pub struct Provenance {
    /// `pi-1 / usb / ext4 / raspios`, as comparisons name it.
    pub config: String,
    /// `fact`, `value` rows in a fixed order; a differing fact lists each value with
    /// the tests it was seen under.
    pub facts: Vec<Fact>,
    /// The cells behind the configuration's rows: `test key-prefix`.
    pub cells: Vec<String>,
    /// Facts that differ between the configuration's cells, one line each.
    pub warnings: Vec<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Fact {
    pub name: String,
    pub value: String,
    /// Whether the configuration's cells disagree on it.
    pub differs: bool,
}

/// Board, storage, filesystem, network and image: a configuration.
type Config<'a> = (&'a str, &'a str, &'a str, &'a str, &'a str);

/// The address without its test: what a provenance entry is per.
fn config_of(a: &Address) -> Config<'_> {
    (
        a.board.as_str(),
        a.storage.as_ref().map_or("", |s| s.as_str()),
        a.filesystem.as_ref().map_or("", |s| s.as_str()),
        a.network.as_ref().map_or("", |s| s.as_str()),
        a.image.as_str(),
    )
}

/// The provenance of every configuration with measured runs, in report order (the
/// views', each holding its cell's data: not looked up again by key).
pub(super) fn provenance(views: &[super::cells::View]) -> Vec<Provenance> {
    let measured = views
        .iter()
        .filter(|v| v.data.measured_count() > 0)
        .map(|v| (v.cell, v.data));
    super::groups_in_order(measured, |(cell, _)| config_of(&cell.address))
        .into_iter()
        .map(|(_, group)| {
            let label = super::compare::config_label(&group[0].0.address);
            let cells: Vec<(String, &Cell, &CellData)> = group
                .into_iter()
                .map(|(cell, d)| (cell.address.test.to_string(), cell, d))
                .collect();
            entry(label, &cells)
        })
        .collect()
}

fn entry(config: String, cells: &[(String, &Cell, &CellData)]) -> Provenance {
    let keys = cells
        .iter()
        .map(|(test, cell, _)| {
            let key = cell.key.as_str();
            format!("{test} {}", &key[..key.len().min(SHORT_KEY)])
        })
        .collect();
    // Each cell's facts, as an index into the distinct lists of them. The cells of a
    // configuration mostly have the same sources (stored facts, fingerprint, the inputs
    // shown): such a cell's facts are the last one's, not made again.
    let mut lists: Vec<Vec<(String, String)>> = Vec::new();
    let mut list_of: Vec<usize> = Vec::with_capacity(cells.len());
    let mut last: Option<(&Cell, &CellData)> = None;
    for (_, cell, d) in cells {
        // Compared as inputs first: the JSON form is made only for a cell whose facts
        // are made.
        let same = last.is_some_and(|(lc, ld)| {
            ld.record.is_some() == d.record.is_some()
                && ld.facts == d.facts
                && ld.fingerprint == d.fingerprint
                && SHOWN_INPUTS
                    .iter()
                    .all(|(_, p)| lc.inputs.pointer(p) == cell.inputs.pointer(p))
        });
        if !same {
            lists.push(cell_facts(
                cell.address.test.as_str(),
                d,
                &shown_inputs(cell, d),
            ));
        }
        list_of.push(lists.len() - 1);
        last = Some((cell, d));
    }
    // Mostly a configuration's cells agree on every fact: then its facts are the
    // first cell's, without the bookkeeping of which test saw which value.
    if let Some((first, rest)) = lists.split_first() {
        let distinct = {
            let mut names: Vec<&str> = first.iter().map(|(n, _)| n.as_str()).collect();
            names.sort_unstable();
            names.windows(2).all(|w| w[0] != w[1])
        };
        if distinct && rest.iter().all(|f| f == first) {
            return Provenance {
                config,
                facts: lists
                    .into_iter()
                    .next()
                    .unwrap_or_default()
                    .into_iter()
                    .map(|(name, value)| Fact {
                        name,
                        value,
                        differs: false,
                    })
                    .collect(),
                cells: keys,
                warnings: Vec::new(),
            };
        }
    }
    // fact name -> value -> the tests it was seen under; names keep first-seen order.
    let mut names: Vec<String> = Vec::new();
    let mut seen: BTreeMap<String, BTreeMap<String, Vec<String>>> = BTreeMap::new();
    for ((test, _, _), list) in cells.iter().zip(list_of) {
        for (name, value) in &lists[list] {
            if !seen.contains_key(name) {
                names.push(name.clone());
            }
            let tests = seen
                .entry(name.clone())
                .or_default()
                .entry(value.clone())
                .or_default();
            if !tests.contains(test) {
                tests.push(test.clone());
            }
        }
    }
    let mut facts = Vec::new();
    let mut warnings = Vec::new();
    for name in names {
        let values = &seen[&name];
        let differs = values.len() > 1;
        let value = if differs {
            let each: Vec<String> = values
                .iter()
                .map(|(v, tests)| format!("{v} ({})", tests.join(", ")))
                .collect();
            // A radio's rate and signal change from one cell to the next by nature:
            // shown per test, never a warning.
            if name != WIFI_FACT {
                warnings.push(format!(
                    "{name} differs between the cells of {config}: {}",
                    each.join("; ")
                ));
            }
            each.join("; ")
        } else {
            values.keys().next().cloned().unwrap_or_default()
        };
        facts.push(Fact {
            name,
            value,
            differs,
        });
    }
    Provenance {
        config,
        facts,
        cells: keys,
        warnings,
    }
}

fn text(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) => line(s),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// A stored fact as `text` shows it.
fn fact(v: Option<&Scalar>) -> Option<String> {
    match v? {
        Scalar::Text(s) => line(s),
        Scalar::Number(n) => Some(n.to_string()),
        Scalar::Bool(b) => Some(b.to_string()),
    }
}

/// A fact is a line: a tool's banner or a multi-line value shows its first.
fn line(s: &str) -> Option<String> {
    let line = s.lines().map(str::trim).find(|l| !l.is_empty())?;
    Some(clean(line))
}

/// A fact on one line, as every stored text is shown (`shown`: controls escaped), and a
/// readable size: at most 200 characters, `…` where cut.
pub(super) fn clean(s: &str) -> String {
    const MAX: usize = 200;
    let line = crate::shown::one_line(s);
    // Most values are short: as many bytes are at least as many characters.
    if line.len() <= MAX || line.chars().count() <= MAX {
        return line.into_owned();
    }
    let mut out: String = line.chars().take(MAX).collect();
    out.push('…');
    out
}

/// Bytes in binary units (`14.9 GiB`).
fn size(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = bytes as f64;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{bytes} B")
    } else {
        format!("{} {}", super::number(v), UNITS[u])
    }
}

/// A prepared image's first boot: the kind (and digests of extra files) the cell's
/// inputs name, and what the flash recorded: the user, the key's fingerprint, the host
/// name and the prepared image's sha256 (the bytes written and read back).
fn firstboot_text(input: &Value, flashed: Option<&FirstbootFact>) -> String {
    let mut s = format!(
        "prepared for {}",
        text(input.get("kind")).unwrap_or_else(|| "?".into())
    );
    for (key, what) in [
        ("user_data", "extra user-data"),
        ("network_config", "network-config"),
    ] {
        if let Some(d) = text(input.get(key)) {
            let _ = write!(s, ", {what} {d}");
        }
    }
    if let Some(f) = flashed {
        if let Some(u) = fact(f.user.as_ref()) {
            let _ = write!(s, ", user {u}");
        }
        if let Some(k) = f.key_fingerprint.as_deref().and_then(host_key_fingerprint) {
            let _ = write!(s, ", key {k}");
        }
        if let Some(h) = fact(f.hostname.as_ref()) {
            let _ = write!(s, ", host name {h}");
        }
        if let Some(d) = fact(f.derived_sha256.as_ref()) {
            let _ = write!(s, "; prepared image sha256:{d}");
        }
    }
    s
}

/// A host key as its `SHA256:` fingerprint: stored as one already, or, from an
/// OpenSSH public key line (`type base64 ...`), computed here. Anything else is not shown.
pub fn host_key_fingerprint(stored: &str) -> Option<String> {
    let s = stored.trim();
    if let Some(rest) = s.strip_prefix("SHA256:") {
        let ok = !rest.is_empty()
            && rest
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'='));
        return ok.then(|| format!("SHA256:{}", rest.trim_end_matches('=')));
    }
    let mut words = s.split_whitespace();
    let kind = words.next()?;
    let blob = decode_base64(words.next()?)?;
    if !(kind.starts_with("ssh-") || kind.starts_with("ecdsa-")) {
        return None;
    }
    let digest = Sha256::digest(&blob);
    Some(format!("SHA256:{}", encode_base64(&digest)))
}

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

fn decode_base64(s: &str) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    let (mut acc, mut bits) = (0u32, 0u32);
    for b in s.trim_end_matches('=').bytes() {
        let v = B64.iter().position(|&c| c == b)? as u32;
        acc = (acc << 6) | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Some(out)
}

/// Unpadded, as `ssh-keygen -l` prints fingerprints.
fn encode_base64(bytes: &[u8]) -> String {
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().fold(0u32, |a, &b| (a << 8) | u32::from(b)) << (8 * (3 - chunk.len()));
        for i in 0..=chunk.len() {
            out.push(B64[(n >> (18 - 6 * i)) as usize & 63] as char);
        }
    }
    out
}

/// `PRETTY_NAME (ID VERSION_ID)` of an os-release object.
fn os_release_text(o: &OsRelease) -> Option<String> {
    let pretty = fact(o.get("PRETTY_NAME"));
    let id = [fact(o.get("ID")), fact(o.get("VERSION_ID"))]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(" ");
    match (pretty, id.is_empty()) {
        (Some(p), false) => Some(format!("{p} ({id})")),
        (Some(p), true) => Some(p),
        (None, false) => Some(id),
        (None, true) => None,
    }
}

/// `MODEL × CPUS` of a board's facts.
fn cpu_text(f: &CellFacts) -> Option<String> {
    fact(f.cpu_model.as_ref()).map(|m| match fact(f.cpus.as_ref()) {
        Some(n) => format!("{m} × {n}"),
        None => m,
    })
}

/// A board's memory in binary units, from its KiB.
fn memory_text(v: &Scalar) -> Option<String> {
    v.as_u64().map(|k| size(k.saturating_mul(1024)))
}

/// The link a networked cell ran over (`facts.json` `network`): its name, interface and
/// kind as declared, and what the board said of it (`LinkFacts`). Never its address.
fn link_facts(net: &NetworkFact, put: &mut impl FnMut(&str, Option<String>)) {
    let mut name = fact(net.name.as_ref()).unwrap_or_default();
    let about: Vec<String> = [fact(net.interface.as_ref()), fact(net.kind.as_ref())]
        .into_iter()
        .flatten()
        .collect();
    if !about.is_empty() {
        let _ = write!(name, " ({})", about.join(", "));
    }
    put("network", Some(name));
    put("network model", fact(net.model.as_ref()));
    let Some(link) = &net.link else {
        put(
            "link",
            fact(net.error.as_ref()).map(|e| format!("not read: {e}")),
        );
        return;
    };
    link_state(link, put);
}

/// What the board said of a link.
fn link_state(link: &LinkFacts, put: &mut impl FnMut(&str, Option<String>)) {
    let text = |s: &Option<String>| s.as_deref().and_then(line);
    if !link.present {
        put("link", Some("no such interface on the board".into()));
        return;
    }
    let speed = link.speed_mbps.map(|s| {
        let mut v = format!("{s} Mb/s");
        if let Some(d) = text(&link.duplex) {
            let _ = write!(v, " {d} duplex");
        }
        if let Some(from) = text(&link.speed_from) {
            let _ = write!(v, " (from {from})");
        }
        v
    });
    put(
        "link speed",
        speed.or_else(|| Some("not reported by the driver".into())),
    );
    put("link state", text(&link.operstate));
    put("link driver", text(&link.driver));
    put("queueing discipline", text(&link.qdisc));
    if let Some(w) = &link.wifi {
        let mut parts = Vec::new();
        if w.connected {
            if let Some(tx) = w.tx_bitrate_mbps {
                parts.push(format!("tx {} Mbit/s", super::number(tx)));
            }
            if let Some(rx) = w.rx_bitrate_mbps {
                parts.push(format!("rx {} Mbit/s", super::number(rx)));
            }
            if let Some(s) = w.signal_dbm {
                parts.push(format!("signal {} dBm", super::number(s as f64)));
            }
            if let Some(f) = w.freq_mhz {
                parts.push(format!("{} MHz", super::number(f)));
            }
        } else {
            parts.push(text(&w.error).unwrap_or_else(|| "not connected".into()));
        }
        put(WIFI_FACT, Some(parts.join(", ")));
    }
}

/// The members of a cell's inputs its provenance shows (keep this list to the ones
/// `cell_facts` asks for), by name and pointer.
const SHOWN_INPUTS: [(&str, &str); 4] = [
    ("image", "/image"),
    ("board", "/board"),
    ("peer", "/peer"),
    ("filesystem", "/filesystem"),
];

/// `SHOWN_INPUTS` as their JSON. They are the plan's, which are the stored cell's (the
/// key hashes them); none when the store holds no record of the cell.
fn shown_inputs(cell: &Cell, d: &CellData) -> Value {
    if d.record.is_none() {
        return Value::Null;
    }
    let mut picked = serde_json::Map::new();
    for (name, pointer) in SHOWN_INPUTS {
        if let Some(v) = cell.inputs.pointer(pointer) {
            picked.insert(name.to_string(), v.to_json());
        }
    }
    Value::Object(picked)
}

/// One cell's facts as `(name, value)`, in the order the report shows them, from its
/// stored data and `shown_inputs`; `test` is the cell's.
fn cell_facts(test: &str, d: &CellData, inputs: &Value) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    // A fact's name may hold a stored key (a tool's, a package's, a member's): names and
    // values are shown as every stored text is (`shown`).
    let mut put = |name: &str, value: Option<String>| {
        if let Some(v) = value.filter(|v| !v.is_empty()) {
            let name = crate::shown::shown(name).into_owned();
            out.push((name, crate::shown::into_shown(v)));
        }
    };
    let stored = d.facts.as_deref().map(CellFacts::of_stored);
    let facts = stored.as_ref();
    let inputs = Some(inputs);
    let flashed = facts.and_then(|f| f.flashed.as_ref());

    // The image: the one the scenario declares (its sha256, in the cell's inputs), and
    // how it was put on the board when benchpipe flashed it.
    // A prepared image's inputs are a record of its base and its preparation.
    let image = inputs.and_then(|i| i.get("image"));
    let base = image.and_then(|i| i.get("base")).or(image);
    put(
        "image",
        text(base).map(|i| match i.strip_prefix("installed:") {
            Some(_) => "as installed on the board (not flashed by benchpipe)".to_string(),
            None => i,
        }),
    );
    put(
        "first boot",
        image
            .and_then(|i| i.get("firstboot"))
            .map(|f| firstboot_text(f, flashed.and_then(|x| x.firstboot.as_ref()))),
    );
    put(
        "flashed",
        flashed.map(|f| {
            let mut s = fact(f.method.as_ref()).unwrap_or_else(|| "dd".into());
            if f.written_sha256.is_some() {
                s.push_str(", verified by read-back");
            }
            if let Some(b) = f.bmap_mapped_bytes {
                let _ = write!(s, ", {} mapped by bmap", size(b));
            }
            s
        }),
    );
    put(
        "host key accepted after the flash",
        flashed
            .and_then(|f| f.accepted_host_key.as_deref())
            .and_then(host_key_fingerprint),
    );
    put(
        "board model",
        facts
            .and_then(|f| fact(f.model.as_ref()))
            .or_else(|| text(inputs.and_then(|i| i.pointer("/board/model")))),
    );
    put("kernel", facts.and_then(|f| fact(f.kernel.as_ref())));
    let fp = d.fingerprint.as_ref().map(|f| &f.fingerprint);
    put("kernel build", fp.map(|f| clean(&f.kernel_version)));
    put(
        "os-release",
        facts
            .and_then(|f| f.os_release.as_ref())
            .and_then(os_release_text),
    );
    put(
        "firmware",
        fp.and_then(|f| f.firmware.as_deref().map(clean)),
    );
    put("cpu", facts.and_then(cpu_text));
    put("governor", facts.and_then(|f| fact(f.governor.as_ref())));
    put(
        "memory",
        facts
            .and_then(|f| f.memory_kib.as_ref())
            .and_then(memory_text),
    );
    // A cluster's members, in its order, each one's facts under its name.
    if let Some((cluster, all)) = facts.and_then(|f| Some((f.cluster.as_ref()?, f))) {
        let names: Vec<String> = cluster
            .members
            .iter()
            .filter_map(|v| fact(Some(v)))
            .collect();
        put("cluster members", Some(names.join(", ")));
        put("control member", fact(cluster.control.as_ref()));
        for name in &names {
            let Some(m) = all.members.get(name) else {
                continue;
            };
            put(&format!("{name} board model"), fact(m.model.as_ref()));
            put(&format!("{name} kernel"), fact(m.kernel.as_ref()));
            put(
                &format!("{name} os-release"),
                m.os_release.as_ref().and_then(os_release_text),
            );
            put(&format!("{name} cpu"), cpu_text(m));
            put(&format!("{name} governor"), fact(m.governor.as_ref()));
            put(
                &format!("{name} memory"),
                m.memory_kib.as_ref().and_then(memory_text),
            );
            for (tool, v) in &m.tools {
                put(&format!("{name} tool {tool}"), fact(Some(v)));
            }
        }
    }
    // The board a peer step ran on.
    put(
        "peer board",
        inputs
            .and_then(|i| i.get("peer"))
            .filter(|p| p.is_object())
            .and_then(|p| {
                let name = text(p.get("name"))?;
                Some(match text(p.get("model")) {
                    Some(m) => format!("{name} ({m})"),
                    None => name,
                })
            }),
    );
    // The recipe text the cell ran: built in or the workspace's file, by its sha256.
    // Named per test, since a configuration's tests each have their own.
    if let Some(r) = facts.and_then(|f| f.recipe.as_ref()) {
        let from = match fact(r.origin.as_ref()).as_deref() {
            Some("built-in") => Some("built-in".to_string()),
            _ => fact(r.file.as_ref()),
        };
        let sha = fact(r.sha256.as_ref()).map(|h| format!("sha256:{h}"));
        let parts: Vec<String> = [from, sha].into_iter().flatten().collect();
        put(&format!("recipe {test}"), Some(parts.join(", ")));
    }
    for (name, v) in facts.map(|f| &f.tools).into_iter().flatten() {
        put(&format!("tool {name}"), fact(Some(v)));
    }
    let packages = facts.map(|f| {
        [
            (&f.packages, "board"),
            (&f.controller_packages, "controller"),
        ]
    });
    for (p, side) in packages.into_iter().flatten() {
        let Some(p) = p else { continue };
        let manager = fact(p.manager.as_ref()).unwrap_or_default();
        for (name, v) in &p.installed {
            put(
                &format!("package {name} ({side}, {manager})"),
                fact(Some(v)),
            );
        }
    }
    if let Some(st) = facts.and_then(|f| f.storage.as_ref()) {
        let model = [fact(st.vendor.as_ref()), fact(st.model.as_ref())]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join(" ");
        put("storage model", Some(model));
        put("storage serial", fact(st.serial.as_ref()));
        put("storage size", st.size_bytes.map(size));
        put(
            "storage kind",
            st.rotational
                .map(|r| if r { "rotational" } else { "non-rotational" }.to_string()),
        );
        put("I/O scheduler", fact(st.scheduler.as_ref()));
        if let Some(usb) = &st.usb {
            put(
                "USB driver",
                fact(usb.driver.as_ref()).map(|d| match fact(usb.driver_from.as_ref()) {
                    Some(from) => format!("{d} (from {from})"),
                    None => d,
                }),
            );
            put("USB link speed", fact(usb.speed.as_ref()));
            put("USB id", fact(usb.id.as_ref()));
        }
    }
    if let Some(fs) = inputs
        .and_then(|i| i.get("filesystem"))
        .filter(|f| f.is_object())
    {
        let list = |k: &str| {
            fs.get(k)
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(|v| text(Some(v))).collect::<Vec<_>>())
                .unwrap_or_default()
        };
        put("filesystem", text(fs.get("kind")));
        let kind = text(fs.get("kind")).unwrap_or_default();
        let made = kind != crate::model::AS_IS && kind != crate::model::AS_FLASHED;
        let mount = list("mount_options");
        put(
            "mount options",
            match (mount.is_empty(), made) {
                (false, _) => Some(mount.join(",")),
                (true, true) => Some("defaults".into()),
                (true, false) => None,
            },
        );
        let mkfs = list("mkfs_options");
        put("mkfs options", (!mkfs.is_empty()).then(|| mkfs.join(" ")));
    }
    put(
        "path is on",
        facts
            .and_then(|f| f.storage_filesystem.as_ref())
            .and_then(|f| fact(f.kind.as_ref())),
    );
    if let Some(net) = facts.and_then(|f| f.network.as_ref()) {
        link_facts(net, &mut put);
    }
    // The meter a board's watts were read from (the runs' telemetry).
    let mut meters: Vec<String> = d
        .measured()
        .filter_map(|s| match s.telemetry.as_ref()? {
            StoredTelemetry::Summary(t) => t.get().power.as_ref().map(|p| clean(&p.source)),
            StoredTelemetry::Value(v) => v.pointer("/power/source")?.as_str().map(clean),
        })
        .collect();
    meters.sort();
    meters.dedup();
    put(
        "power meter",
        (!meters.is_empty()).then(|| meters.join("; ")),
    );
    put("benchpipe", facts.and_then(|f| fact(f.benchpipe.as_ref())));
    out
}
