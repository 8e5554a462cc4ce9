//! Package managers per distribution family, and which one a board uses: the recipes'
//! `[needs]` name packages per manager (`apt`, `dnf`, `apk`, `pacman`), and the board's
//! `/etc/os-release` (`ID`, then `ID_LIKE`) picks the list that applies there.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PackageManager {
    /// Debian, Raspberry Pi OS, Armbian, Ubuntu and their derivatives.
    Apt,
    /// Fedora, RHEL, CentOS, Rocky, AlmaLinux.
    Dnf,
    /// Alpine.
    Apk,
    /// Arch Linux, Arch Linux ARM, Manjaro.
    Pacman,
}

impl PackageManager {
    pub const ALL: [PackageManager; 4] = [
        PackageManager::Apt,
        PackageManager::Dnf,
        PackageManager::Apk,
        PackageManager::Pacman,
    ];

    /// The key in `[needs]`, and the name users see.
    pub fn name(self) -> &'static str {
        match self {
            PackageManager::Apt => "apt",
            PackageManager::Dnf => "dnf",
            PackageManager::Apk => "apk",
            PackageManager::Pacman => "pacman",
        }
    }

    /// The manager of a distribution ID (`debian`, `rocky`, ...), if benchpipe knows it.
    fn of_id(id: &str) -> Option<PackageManager> {
        Some(match id {
            "debian" | "raspbian" | "ubuntu" | "armbian" | "linuxmint" | "pop" | "devuan"
            | "kali" => PackageManager::Apt,
            "fedora" | "rhel" | "centos" | "rocky" | "almalinux" | "ol" | "amzn" => {
                PackageManager::Dnf
            }
            "alpine" | "postmarketos" => PackageManager::Apk,
            "arch" | "archarm" | "manjaro" | "manjaro-arm" | "endeavouros" => {
                PackageManager::Pacman
            }
            _ => return None,
        })
    }

    /// The manager for an os-release: its `ID` if known, else the first known entry of
    /// `ID_LIKE` (Raspberry Pi OS says `ID=raspbian`, `ID_LIKE=debian`).
    pub fn for_os_release(fields: &BTreeMap<String, String>) -> Option<PackageManager> {
        let id = fields.get("ID").map(String::as_str).unwrap_or_default();
        let like = fields
            .get("ID_LIKE")
            .map(String::as_str)
            .unwrap_or_default();
        std::iter::once(id)
            .chain(like.split_whitespace())
            .find_map(|i| PackageManager::of_id(&i.to_ascii_lowercase()))
    }

    /// The command a user runs as root to install `packages` by hand.
    pub fn install_hint(self, packages: &[String]) -> String {
        let verb = match self {
            PackageManager::Apt => "apt-get install",
            PackageManager::Dnf => "dnf install",
            PackageManager::Apk => "apk add",
            PackageManager::Pacman => "pacman -S",
        };
        format!("{verb} {}", packages.join(" "))
    }
}

impl std::fmt::Display for PackageManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::image::expect::parse_os_release;

    fn of(text: &str) -> Option<PackageManager> {
        PackageManager::for_os_release(&parse_os_release(text))
    }

    #[test]
    fn the_package_manager_comes_from_id_then_id_like_of_real_os_release_files() {
        macro_rules! sample {
            ($name:literal) => {
                include_str!(concat!("../../tests/data/os-release/", $name))
            };
        }
        use PackageManager::*;
        for (name, text, want) in [
            ("debian", sample!("debian"), Some(Apt)),
            ("raspbian", sample!("raspbian"), Some(Apt)),
            ("ubuntu", sample!("ubuntu"), Some(Apt)),
            ("fedora", sample!("fedora"), Some(Dnf)),
            ("rocky", sample!("rocky"), Some(Dnf)),
            ("alpine", sample!("alpine"), Some(Apk)),
            ("arch", sample!("arch"), Some(Pacman)),
            ("archarm", sample!("archarm"), Some(Pacman)),
            ("void", sample!("void"), None),
        ] {
            assert_eq!(of(text), want, "{name}");
        }
        // An unknown ID falls back on ID_LIKE, in its order; nothing known, nothing.
        assert_eq!(of("ID=mydistro\nID_LIKE=\"mystery ubuntu\"\n"), Some(Apt));
        assert_eq!(of("ID=\"Debian\"\n"), Some(Apt));
        assert_eq!(of("NAME=x\n"), None);
        assert_eq!(of(""), None);
    }
}
