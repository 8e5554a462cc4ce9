//! A cell's `facts.json` as typed records: what apply writes beside a cell's samples and
//! what the report's provenance reads back. Reading is lenient, as stores of every
//! benchpipe version must read: a field a store lacks, or holds in another type, reads
//! as absent, and fields no record names are kept (`other`).

use std::collections::BTreeMap;

use serde::de::{DeserializeOwned, Deserializer};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Fingerprint;
use crate::network::LinkFacts;

/// A fact's value as stored: text, a number or a boolean (older stores hold some counts
/// as text, `"cpus": "4"`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Scalar {
    Text(String),
    Number(serde_json::Number),
    Bool(bool),
}

impl Scalar {
    /// As a count: a number, or text that is one.
    pub fn as_u64(&self) -> Option<u64> {
        match self {
            Scalar::Number(n) => n.as_u64(),
            Scalar::Text(s) => s.trim().parse().ok(),
            Scalar::Bool(_) => None,
        }
    }
}

impl Scalar {
    /// A value that serializes as text, a number or a boolean; none for anything else
    /// (`null`, a list).
    pub fn of(v: &impl Serialize) -> Option<Scalar> {
        serde_json::from_value(serde_json::to_value(v).ok()?).ok()
    }
}

impl From<String> for Scalar {
    fn from(s: String) -> Self {
        Scalar::Text(s)
    }
}

impl From<&str> for Scalar {
    fn from(s: &str) -> Self {
        Scalar::Text(s.to_string())
    }
}

/// A field read leniently: absent when the store holds it in another type.
fn lenient<'de, D: Deserializer<'de>, T: DeserializeOwned>(d: D) -> Result<Option<T>, D::Error> {
    Ok(serde_json::from_value(Value::deserialize(d)?).ok())
}

/// A map read leniently: entries of another type are left out.
fn lenient_map<'de, D: Deserializer<'de>, T: DeserializeOwned>(
    d: D,
) -> Result<BTreeMap<String, T>, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::Object(m) => m
            .into_iter()
            .filter_map(|(k, v)| Some((k, serde_json::from_value(v).ok()?)))
            .collect(),
        _ => BTreeMap::new(),
    })
}

/// A map that may be absent, read leniently: none when the store holds no map, and
/// entries of another type left out.
fn lenient_some_map<'de, D: Deserializer<'de>, T: DeserializeOwned>(
    d: D,
) -> Result<Option<BTreeMap<String, T>>, D::Error> {
    Ok(match Value::deserialize(d)? {
        m @ Value::Object(_) => lenient_map(m).ok(),
        _ => None,
    })
}

/// A list read leniently: items of another type are left out.
fn lenient_list<'de, D: Deserializer<'de>, T: DeserializeOwned>(d: D) -> Result<Vec<T>, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::Array(a) => a
            .into_iter()
            .filter_map(|v| serde_json::from_value(v).ok())
            .collect(),
        _ => Vec::new(),
    })
}

/// `facts.json`: what the board was when the cell opened (`gather-facts`), with the
/// recipe's tools and packages, the image's flash, the storage, the link, or a
/// cluster's members.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CellFacts {
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub board: Option<Scalar>,
    /// The board's model as declared.
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub model: Option<Scalar>,
    /// The benchpipe version that measured.
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub benchpipe: Option<Scalar>,
    /// `uname -srm`.
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub kernel: Option<Scalar>,
    /// `/etc/os-release`, its quotes removed (an entry of another type is left out,
    /// not the whole).
    #[serde(
        deserialize_with = "lenient_some_map",
        skip_serializing_if = "Option::is_none"
    )]
    pub os_release: Option<OsRelease>,
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub cpus: Option<Scalar>,
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub cpu_model: Option<Scalar>,
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub governor: Option<Scalar>,
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub memory_kib: Option<Scalar>,
    /// Before benchpipe loaded the board: the base of `idle+N`.
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub idle_temperature_c: Option<f64>,
    /// Why the board's facts could not be read.
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub error: Option<Scalar>,
    /// The board's state drift compares (`plan::drift`).
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<Fingerprint>,
    /// The recipe's `[facts]`: tool name -> its version line.
    #[serde(
        deserialize_with = "lenient_map",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub tools: BTreeMap<String, Scalar>,
    /// The installed versions of the packages the recipe names, per side.
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub packages: Option<Packages>,
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub controller_packages: Option<Packages>,
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub peer_packages: Option<Packages>,
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub recipe: Option<RecipeFact>,
    /// What benchpipe's flash of the cell's image wrote.
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub flashed: Option<Flashed>,
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub storage: Option<StorageFact>,
    /// What holds the cell's path (`findmnt`).
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub storage_filesystem: Option<PathFilesystem>,
    /// The link a networked cell ran over.
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub network: Option<NetworkFact>,
    /// A cluster's cell: the cluster, and each member's facts under its name.
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub cluster: Option<ClusterFact>,
    #[serde(
        deserialize_with = "lenient_map",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub members: BTreeMap<String, CellFacts>,
    /// Fields no record above names (`format`, and what other versions wrote).
    #[serde(flatten)]
    pub other: BTreeMap<String, Value>,
}

/// `/etc/os-release`'s keys and values.
pub type OsRelease = BTreeMap<String, Scalar>;

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Packages {
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub manager: Option<Scalar>,
    /// Package -> installed version.
    #[serde(deserialize_with = "lenient_map")]
    pub installed: BTreeMap<String, Scalar>,
    #[serde(flatten)]
    pub other: BTreeMap<String, Value>,
}

/// The recipe text a cell ran: built in or the workspace's file, by its sha256.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RecipeFact {
    #[serde(deserialize_with = "lenient")]
    pub file: Option<Scalar>,
    #[serde(deserialize_with = "lenient")]
    pub origin: Option<Scalar>,
    #[serde(deserialize_with = "lenient")]
    pub sha256: Option<Scalar>,
    #[serde(flatten)]
    pub other: BTreeMap<String, Value>,
}

/// What a flash wrote and proved.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Flashed {
    /// `dd` when absent; `command`, `tpi`.
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub method: Option<Scalar>,
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub file_sha256: Option<String>,
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub written_bytes: Option<u64>,
    /// The read-back's sha256: present when the flash was verified.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub written_sha256: Option<Value>,
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub uncompressed_bytes: Option<u64>,
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub uncompressed_sha256: Option<String>,
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub bmap_mapped_bytes: Option<u64>,
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub base_file_sha256: Option<String>,
    /// A `tpi` flash: the image's path on the BMC, and whether it was uploaded (or there).
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub bmc_path: Option<String>,
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub uploaded: Option<bool>,
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub firstboot: Option<FirstbootFact>,
    /// The host key taken right after the flash (an OpenSSH key line or `SHA256:`).
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub accepted_host_key: Option<String>,
    #[serde(flatten)]
    pub other: BTreeMap<String, Value>,
}

/// What a prepared image's first boot was given (never the key's text or a password).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct FirstbootFact {
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub kind: Option<Scalar>,
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub user: Option<Scalar>,
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub key_fingerprint: Option<String>,
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub hostname: Option<Scalar>,
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub derivation_key: Option<Scalar>,
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub derived_sha256: Option<Scalar>,
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub derived_bytes: Option<u64>,
    #[serde(flatten)]
    pub other: BTreeMap<String, Value>,
}

/// A storage device's facts as stored (`storage::facts::StorageFacts` when written).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct StorageFact {
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub vendor: Option<Scalar>,
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub model: Option<Scalar>,
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub serial: Option<Scalar>,
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub size_bytes: Option<u64>,
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub rotational: Option<bool>,
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub scheduler: Option<Scalar>,
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub usb: Option<UsbFact>,
    #[serde(flatten)]
    pub other: BTreeMap<String, Value>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct UsbFact {
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub driver: Option<Scalar>,
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub driver_from: Option<Scalar>,
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub speed: Option<Scalar>,
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub id: Option<Scalar>,
    #[serde(flatten)]
    pub other: BTreeMap<String, Value>,
}

/// The filesystem that holds a cell's path.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PathFilesystem {
    #[serde(rename = "type", deserialize_with = "lenient")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<Scalar>,
    #[serde(flatten)]
    pub other: BTreeMap<String, Value>,
}

/// The link a networked cell ran over: the network as declared (never its address) and
/// what the board said of its interface, or why it could not.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct NetworkFact {
    #[serde(deserialize_with = "lenient")]
    pub name: Option<Scalar>,
    #[serde(deserialize_with = "lenient")]
    pub interface: Option<Scalar>,
    #[serde(deserialize_with = "lenient")]
    pub kind: Option<Scalar>,
    #[serde(deserialize_with = "lenient")]
    pub model: Option<Scalar>,
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub link: Option<LinkFacts>,
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub error: Option<Scalar>,
    #[serde(flatten)]
    pub other: BTreeMap<String, Value>,
}

/// A cluster cell's cluster: its name, members in order and control member.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ClusterFact {
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub name: Option<Scalar>,
    #[serde(deserialize_with = "lenient_list")]
    pub members: Vec<Scalar>,
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub control: Option<Scalar>,
    #[serde(flatten)]
    pub other: BTreeMap<String, Value>,
}

impl Scalar {
    /// Its text, when it is text.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Scalar::Text(s) => Some(s),
            Scalar::Number(_) | Scalar::Bool(_) => None,
        }
    }
}

/// A record of another module as the store's record of it (`StorageFacts` as a
/// `StorageFact`, `filesystem_at`'s answer as a `PathFilesystem`): what it serializes
/// as, read as the store reads it, so its fields no record names are kept (`other`).
pub fn record_of<T: DeserializeOwned + Default>(v: &impl Serialize) -> T {
    serde_json::to_value(v)
        .ok()
        .and_then(|v| serde_json::from_value(v).ok())
        .unwrap_or_default()
}

impl CellFacts {
    /// A stored `facts.json` document as facts; fields of another type read as absent.
    pub fn of_stored(doc: &Value) -> CellFacts {
        CellFacts::deserialize(doc).unwrap_or_default()
    }

    /// `more`'s facts over these: each fact `more` holds replaces this one's, as a
    /// recipe's tools and package versions go over the board's facts. What `more` lacks
    /// (an absent field, an empty map) leaves this one's as it is.
    pub fn merge(&mut self, more: &CellFacts) {
        #[expect(
            clippy::ref_option,
            reason = "`clone_from` takes the whole `&Option`, reusing `to`'s allocation"
        )]
        fn over<T: Clone>(to: &mut Option<T>, from: &Option<T>) {
            if from.is_some() {
                to.clone_from(from);
            }
        }
        // Destructured whole: a field added to the record fails to build until merged.
        let CellFacts {
            board,
            model,
            benchpipe,
            kernel,
            os_release,
            cpus,
            cpu_model,
            governor,
            memory_kib,
            idle_temperature_c,
            error,
            fingerprint,
            tools,
            packages,
            controller_packages,
            peer_packages,
            recipe,
            flashed,
            storage,
            storage_filesystem,
            network,
            cluster,
            members,
            other,
        } = more;
        over(&mut self.board, board);
        over(&mut self.model, model);
        over(&mut self.benchpipe, benchpipe);
        over(&mut self.kernel, kernel);
        over(&mut self.os_release, os_release);
        over(&mut self.cpus, cpus);
        over(&mut self.cpu_model, cpu_model);
        over(&mut self.governor, governor);
        over(&mut self.memory_kib, memory_kib);
        over(&mut self.idle_temperature_c, idle_temperature_c);
        over(&mut self.error, error);
        over(&mut self.fingerprint, fingerprint);
        if !tools.is_empty() {
            self.tools.clone_from(tools);
        }
        over(&mut self.packages, packages);
        over(&mut self.controller_packages, controller_packages);
        over(&mut self.peer_packages, peer_packages);
        over(&mut self.recipe, recipe);
        over(&mut self.flashed, flashed);
        over(&mut self.storage, storage);
        over(&mut self.storage_filesystem, storage_filesystem);
        over(&mut self.network, network);
        over(&mut self.cluster, cluster);
        if !members.is_empty() {
            self.members.clone_from(members);
        }
        self.other
            .extend(other.iter().map(|(k, v)| (k.clone(), v.clone())));
    }

    /// As the JSON `facts.json` holds: keys sorted, as every store file's are.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

impl Flashed {
    /// As `facts.json` holds it under `flashed`.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cell's facts as benchpipe 0.1.0 wrote them (the committed example store).
    const OLD: &str = include_str!(
        "../../examples/lab/results/184853faada83893677c9aca18b3c842-smb-lab-1/facts.json"
    );

    #[test]
    fn an_old_stores_facts_read_typed_and_write_back_the_same_json() {
        let doc: Value = serde_json::from_str(OLD).unwrap();
        let f = CellFacts::of_stored(&doc);
        assert_eq!(f.cpus, Some(Scalar::from("2")));
        assert_eq!(f.cpus.as_ref().and_then(Scalar::as_u64), Some(2));
        assert_eq!(
            f.memory_kib.as_ref().and_then(Scalar::as_u64),
            Some(24683772)
        );
        assert_eq!(
            f.os_release.as_ref().unwrap()["VERSION_ID"],
            Scalar::from("12")
        );
        assert_eq!(
            f.fingerprint.as_ref().unwrap().kernel_release,
            "6.18.44-fc-v1300"
        );
        assert_eq!(f.tools["smbd"], Scalar::from("Version 4.17.12-Debian"));
        let p = f.controller_packages.as_ref().unwrap();
        assert_eq!(p.manager, Some(Scalar::from("apt")));
        assert_eq!(p.installed["coreutils"], Scalar::from("9.1-1"));
        // `format` is no fact: kept as it was, with anything else no record names.
        assert_eq!(f.other["format"], Value::from(1));
        assert_eq!(f.to_value(), doc, "nothing lost or changed");
    }

    #[test]
    fn typed_facts_round_trip() {
        let mut f = CellFacts {
            board: Some("pi-1".into()),
            kernel: Some("Linux 6.6 aarch64".into()),
            memory_kib: Some(Scalar::Number(8_000_000.into())),
            idle_temperature_c: Some(41.5),
            flashed: Some(Flashed {
                method: Some("dd".into()),
                written_sha256: Some(Value::from("ab")),
                bmap_mapped_bytes: Some(123),
                firstboot: Some(FirstbootFact {
                    user: Some("pi".into()),
                    ..FirstbootFact::default()
                }),
                ..Flashed::default()
            }),
            network: Some(NetworkFact {
                name: Some("wifi".into()),
                link: Some(LinkFacts {
                    interface: "wlan0".into(),
                    present: true,
                    speed_mbps: Some(1000),
                    ..LinkFacts::default()
                }),
                ..NetworkFact::default()
            }),
            ..CellFacts::default()
        };
        f.tools.insert("xz".into(), "xz 5.4".into());
        f.members.insert(
            "m1".into(),
            CellFacts {
                kernel: Some("k".into()),
                ..CellFacts::default()
            },
        );
        let json = serde_json::to_string(&f).unwrap();
        let back: CellFacts = serde_json::from_str(&json).unwrap();
        assert_eq!(back, f);
        assert_eq!(CellFacts::of_stored(&f.to_value()), f);
    }

    #[test]
    fn a_field_of_another_type_reads_as_absent_not_as_an_error() {
        let doc = serde_json::json!({
            "kernel": {"not": "text"},
            "os_release": {"PRETTY_NAME": "Debian", "ODD": ["x"]},
            "cpus": 4,
            "tools": {"ok": "1", "bad": [1]},
            "flashed": {"bmap_mapped_bytes": "many", "method": "dd"},
            "network": {"name": "eth", "link": {"speed_mbps": "fast", "present": true}},
            "cluster": {"members": ["a", {"x": 1}, "b"]},
            "members": "nope",
            "storage": 7,
        });
        let f = CellFacts::of_stored(&doc);
        assert_eq!(f.kernel, None);
        // An os-release entry of another type is left out, not the whole os-release.
        let os = f.os_release.as_ref().unwrap();
        assert_eq!(os.keys().collect::<Vec<_>>(), ["PRETTY_NAME"]);
        assert_eq!(f.cpus.as_ref().and_then(Scalar::as_u64), Some(4));
        assert_eq!(f.tools.keys().collect::<Vec<_>>(), ["ok"]);
        let flashed = f.flashed.unwrap();
        assert_eq!(
            (flashed.bmap_mapped_bytes, flashed.method),
            (None, Some("dd".into()))
        );
        let net = f.network.unwrap();
        assert_eq!(net.name, Some("eth".into()));
        assert_eq!(net.link, None, "a link of another shape is none");
        assert_eq!(
            f.cluster.unwrap().members,
            [Scalar::from("a"), Scalar::from("b")]
        );
        assert!(f.members.is_empty() && f.storage.is_none());
        assert_eq!(
            CellFacts::of_stored(&Value::from("x")),
            CellFacts::default()
        );
    }

    /// `merge` is the JSON merge apply did before its facts were typed: each top-level
    /// field the recipe's facts hold replaces the board's, nothing else changes.
    #[test]
    fn merge_puts_each_fact_the_other_holds_over_this_ones() {
        let board: Value = serde_json::from_str(OLD).unwrap();
        let recipe = serde_json::json!({
            "tools": {"fio": "fio-3.33"},
            "packages": {"manager": "apt", "installed": {"fio": "3.33-3"}},
            "peer_packages": {"manager": "apk", "installed": {"iperf3": "3.16"}},
            "surprise": [1, 2],
        });
        let mut merged = CellFacts::of_stored(&board);
        merged.merge(&CellFacts::of_stored(&recipe));
        let mut want = board.clone();
        want.as_object_mut()
            .unwrap()
            .extend(recipe.as_object().unwrap().clone());
        assert_eq!(merged.to_value(), want);
        // Nothing held, nothing changed.
        let before = merged.clone();
        merged.merge(&CellFacts::default());
        assert_eq!(merged, before);
    }
}
