//! `[images.NAME.firstboot]`: what a flashed image must say on its boot partition so that
//! the board comes up reachable (a user, the controller's public key, SSH on, its host
//! name), and the identities derived from it: the per-board preparation, the derivation
//! key that names the prepared image in the cache, and what a cell key holds of it.

use std::collections::BTreeMap;
use std::fmt;
use std::fmt::Write as _;

use serde::Serialize;
use sha2::{Digest, Sha256};

use super::BoardName;
use crate::canonical::{Input, canonical_bytes};

/// The domain prefix of a derivation key; bump it when what a kind writes changes, so
/// that no image derived by an older benchpipe is reused.
pub const DERIVATION: &str = "benchpipe-firstboot-v1";

/// How the image's first boot reads its configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FirstbootKind {
    /// cloud-init's NoCloud seed on the boot partition (`user-data`, `meta-data`,
    /// `network-config`): Ubuntu, HypriotOS, Raspberry Pi OS since 2024-11.
    CloudInit,
    /// Older Raspberry Pi OS: `ssh`, `userconf.txt`, and `firstrun.sh` run through
    /// `systemd.run=` in `cmdline.txt`, as Raspberry Pi Imager writes them.
    Raspios,
    /// Armbian: `armbian_first_run.txt` on a FAT boot partition, which
    /// `armbian-firstrun-config` sources as root on the first boot.
    Armbian,
}

impl FirstbootKind {
    pub const NAMES: [&'static str; 4] = ["cloud-init", "raspios", "armbian", "none"];

    pub fn name(self) -> &'static str {
        match self {
            FirstbootKind::CloudInit => "cloud-init",
            FirstbootKind::Raspios => "raspios",
            FirstbootKind::Armbian => "armbian",
        }
    }
}

/// One OpenSSH public key, as `authorized_keys` takes it: its type and base64 blob (the
/// file's comment is left out, so the fingerprint covers every byte written).
#[derive(Clone, PartialEq, Eq, Serialize)]
pub struct AuthorizedKey {
    /// `ssh-ed25519 AAAA...`.
    #[serde(skip)]
    pub line: String,
    /// `SHA256:...` as `ssh-keygen -l` prints it: what records and reports show.
    pub fingerprint: String,
}

impl fmt::Debug for AuthorizedKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.fingerprint)
    }
}

/// A `crypt(3)` hash (`$6$...`), never a password: written only into the prepared image,
/// never into a record, a report or output.
#[derive(Clone, PartialEq, Eq)]
pub struct PasswordHash(pub String);

impl fmt::Debug for PasswordHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("PasswordHash(..)")
    }
}

/// A file the preparation copies in (extra `user-data`, `network-config`), read and
/// checked by `config`: its text and its sha256.
#[derive(Clone, PartialEq, Eq, Serialize)]
pub struct Attachment {
    #[serde(skip)]
    pub text: String,
    pub sha256: String,
}

impl fmt::Debug for Attachment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Attachment(sha256:{})", self.sha256)
    }
}

/// `[images.NAME.firstboot]` as validated. `kind = "none"` leaves the image as it is
/// and is not one of these.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Firstboot {
    pub kind: FirstbootKind,
    /// The user to create (or rename the image's first user to).
    pub user: String,
    /// `authorized_key`: the public key file it names; `None`: each board's own, in
    /// `board_keys`.
    pub authorized_key: Option<AuthorizedKey>,
    /// Without `authorized_key`, the controller's public key per board: the `.pub` beside
    /// its `[ssh] identity`, else `~/.ssh/id_ed25519.pub`, `id_ecdsa.pub`, `id_rsa.pub`.
    pub board_keys: BTreeMap<BoardName, AuthorizedKey>,
    /// `sudo = true`: the user may run anything through `sudo` without a password.
    pub sudo: bool,
    #[serde(skip)]
    pub password_hash: Option<PasswordHash>,
    /// `user_data`: more `#cloud-config`, merged after benchpipe's own.
    pub user_data: Option<Attachment>,
    /// `network_config`: the NoCloud `network-config` file, copied as it is.
    pub network_config: Option<Attachment>,
    /// `hostname`: `{{ board }}` stands for the board's name; `None`: the board's name.
    pub hostname: Option<String>,
}

/// What one board's copy of a prepared image holds: the declaration with this board's
/// key and host name resolved.
#[derive(Clone, Debug, PartialEq)]
pub struct Preparation {
    pub kind: FirstbootKind,
    pub user: String,
    pub key: AuthorizedKey,
    pub sudo: bool,
    pub password_hash: Option<PasswordHash>,
    pub user_data: Option<Attachment>,
    pub network_config: Option<Attachment>,
    pub hostname: String,
}

impl Firstboot {
    /// The host name `template` gives `board`: each `{{ board }}` replaced by its name.
    pub fn render_hostname(template: &str, board: &BoardName) -> String {
        let mut out = String::new();
        let mut rest = template;
        while let Some(at) = rest.find("{{") {
            out.push_str(&rest[..at]);
            if let Some(end) = rest[at..].find("}}") {
                // `config` allows only `board` inside the braces.
                out.push_str(board.as_str());
                rest = &rest[at + end + 2..];
            } else {
                out.push_str(&rest[at..]);
                rest = "";
            }
        }
        out.push_str(rest);
        out
    }

    /// This board's preparation; `None` when no key is known for it (`config` refuses
    /// such a scenario, so only a workspace built by hand has none).
    pub fn for_board(&self, board: &BoardName) -> Option<Preparation> {
        let key = self
            .authorized_key
            .as_ref()
            .or_else(|| self.board_keys.get(board))?
            .clone();
        let hostname = match &self.hostname {
            Some(t) => Firstboot::render_hostname(t, board),
            None => board.to_string(),
        };
        Some(Preparation {
            kind: self.kind,
            user: self.user.clone(),
            key,
            sudo: self.sudo,
            password_hash: self.password_hash.clone(),
            user_data: self.user_data.clone(),
            network_config: self.network_config.clone(),
            hostname,
        })
    }

    /// The part of the preparation a cell key holds: what can change a number. The
    /// user's name, its key and password are credentials (as a board's `[ssh] user` and
    /// `identity`, never in a key) and the host name follows the board, which the key
    /// already names; the kind decides what runs at every boot after the first
    /// (cloud-init's services), and extra user-data and network-config can install,
    /// start or reconfigure anything. What is flashed is named in full by the
    /// derivation key, which decides whether a board must be flashed again.
    pub fn key_input(&self) -> Input {
        let digest = |a: &Option<Attachment>| {
            Input::from(
                a.as_ref()
                    .map(|a| Input::from(format!("sha256:{}", a.sha256))),
            )
        };
        Input::record([
            ("kind", Input::from(self.kind.name())),
            ("user_data", digest(&self.user_data)),
            ("network_config", digest(&self.network_config)),
        ])
    }
}

impl Preparation {
    /// The derivation key: sha256 over `DERIVATION` and everything written into the
    /// image for this board, with the base image's declared sha256. It names the
    /// prepared image in the cache and in the board's state; the password hash goes in
    /// only through this digest, never as text anywhere else.
    pub fn derivation_key(&self, base_sha256: &str) -> String {
        let text = |s: &str| Input::from(s);
        let attachment =
            |a: &Option<Attachment>| Input::from(a.as_ref().map(|a| Input::from(&a.text)));
        let tree = Input::record([
            ("base", text(base_sha256)),
            ("kind", text(self.kind.name())),
            ("user", text(&self.user)),
            ("key", text(&self.key.line)),
            ("sudo", Input::from(self.sudo)),
            (
                "password_hash",
                Input::from(self.password_hash.as_ref().map(|h| Input::from(&h.0))),
            ),
            ("user_data", attachment(&self.user_data)),
            ("network_config", attachment(&self.network_config)),
            ("hostname", text(&self.hostname)),
        ]);
        let mut h = Sha256::new();
        h.update(DERIVATION.as_bytes());
        h.update([0u8]);
        h.update(canonical_bytes(&tree));
        h.finalize().iter().fold(String::new(), |mut out, b| {
            let _ = write!(out, "{b:02x}");
            out
        })
    }
}

/// The identity of what a board runs after a flash of an image with this preparation:
/// the base identity, and the derivation key (`results/boards/<board>.json`).
pub fn prepared_identity(base_identity: &str, derivation_key: &str) -> String {
    format!("{base_identity}+firstboot:{derivation_key}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prep() -> Preparation {
        Preparation {
            kind: FirstbootKind::CloudInit,
            user: "pi".into(),
            key: AuthorizedKey {
                line: "ssh-ed25519 AAAA".into(),
                fingerprint: "SHA256:x".into(),
            },
            sudo: true,
            password_hash: None,
            user_data: None,
            network_config: None,
            hostname: "pi-1".into(),
        }
    }

    #[test]
    fn every_written_value_changes_the_derivation_key() {
        let base = prep().derivation_key("ab");
        assert_eq!(prep().derivation_key("ab"), base);
        assert_ne!(prep().derivation_key("cd"), base, "base image");
        let changed: Vec<Preparation> = vec![
            Preparation {
                kind: FirstbootKind::Raspios,
                ..prep()
            },
            Preparation {
                user: "ubuntu".into(),
                ..prep()
            },
            Preparation {
                key: AuthorizedKey {
                    line: "ssh-ed25519 BBBB".into(),
                    fingerprint: "SHA256:y".into(),
                },
                ..prep()
            },
            Preparation {
                sudo: false,
                ..prep()
            },
            Preparation {
                password_hash: Some(PasswordHash("$6$a$b".into())),
                ..prep()
            },
            Preparation {
                hostname: "pi-2".into(),
                ..prep()
            },
            Preparation {
                user_data: Some(Attachment {
                    text: "#cloud-config\n".into(),
                    sha256: "00".into(),
                }),
                ..prep()
            },
        ];
        for p in changed {
            assert_ne!(p.derivation_key("ab"), base, "{p:?}");
        }
    }

    #[test]
    fn a_host_name_template_names_the_board() {
        let b = BoardName::new("pi-1");
        assert_eq!(Firstboot::render_hostname("{{ board }}", &b), "pi-1");
        assert_eq!(
            Firstboot::render_hostname("lab-{{board}}.local", &b),
            "lab-pi-1.local"
        );
        assert_eq!(Firstboot::render_hostname("fixed", &b), "fixed");
    }

    #[test]
    fn a_password_hash_and_a_key_line_are_never_shown() {
        let p = Preparation {
            password_hash: Some(PasswordHash("$6$salt$hash".into())),
            ..prep()
        };
        let shown = format!("{p:?}");
        assert!(!shown.contains("$6$salt$hash"), "{shown}");
        assert!(!shown.contains("AAAA"), "{shown}");
    }
}
