//! Whether the device a storage names is the disk its board file declares (`serial`,
//! `size`), judged purely over the facts the board reported for it: a device path such
//! as `/dev/sda` names whatever disk the kernel enumerated there, so a declared identity
//! is what keeps another disk from being formatted or measured.

use super::facts::StorageFacts;
use crate::model::Storage;

/// Why the device is not the declared disk, or `None` when it is (or nothing is
/// declared). A declared value the board did not report is a refusal too: it cannot be
/// compared.
pub fn problem(st: &Storage, facts: Option<&StorageFacts>) -> Option<String> {
    if st.serial.is_none() && st.size_bytes.is_none() {
        return None;
    }
    let device = st.device.as_deref().unwrap_or("");
    let Some(f) = facts else {
        return Some(format!(
            "storage {}: the board reported nothing of {device}, so its serial or size cannot be compared with the board file's",
            st.name
        ));
    };
    if let Some(want) = &st.serial {
        match f.serial.as_deref().map(str::trim) {
            Some(got) if got == want => {}
            Some(got) => {
                return Some(format!(
                    "storage {}: {device} reports serial {}, the board file declares {}: another disk is there",
                    st.name,
                    crate::shown::shown(got),
                    want
                ));
            }
            None => {
                return Some(format!(
                    "storage {}: {device} reports no serial, the board file declares {want}",
                    st.name
                ));
            }
        }
    }
    if let Some(want) = st.size_bytes {
        match f.size_bytes {
            Some(got) if got == want => {}
            Some(got) => {
                return Some(format!(
                    "storage {}: {device} is {got} bytes, the board file declares {want}: another disk is there",
                    st.name
                ));
            }
            None => {
                return Some(format!(
                    "storage {}: {device} reports no size, the board file declares {want} bytes",
                    st.name
                ));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{StorageName, StorageRole};

    fn storage(serial: Option<&str>, size: Option<u64>) -> Storage {
        Storage {
            name: StorageName::new("ssd"),
            role: StorageRole::Scratch,
            device: Some("/dev/sda".into()),
            path: "/mnt/ssd".into(),
            model: None,
            uas: None,
            driver: None,
            serial: serial.map(Into::into),
            size_bytes: size,
        }
    }

    fn facts(serial: Option<&str>, size: Option<u64>) -> StorageFacts {
        StorageFacts {
            device: "/dev/sda".into(),
            serial: serial.map(Into::into),
            size_bytes: size,
            ..Default::default()
        }
    }

    #[test]
    fn only_the_declared_disk_passes_and_anything_else_or_unknown_is_refused() {
        let declared = storage(Some("S3Z1NB0K"), Some(500_107_862_016));
        let same = facts(Some("S3Z1NB0K"), Some(500_107_862_016));
        assert_eq!(problem(&declared, Some(&same)), None);
        for (f, says) in [
            (
                facts(Some("WD-123"), Some(500_107_862_016)),
                "reports serial WD-123",
            ),
            (
                facts(Some("S3Z1NB0K"), Some(1_000_204_886_016)),
                "is 1000204886016 bytes",
            ),
            (facts(None, Some(500_107_862_016)), "reports no serial"),
            (facts(Some("S3Z1NB0K"), None), "reports no size"),
        ] {
            let why = problem(&declared, Some(&f)).expect("refused");
            assert!(
                why.contains(says) && why.starts_with("storage ssd: /dev/sda"),
                "{why}"
            );
        }
        assert!(
            problem(&declared, None)
                .unwrap()
                .contains("cannot be compared")
        );
        // Nothing declared: nothing judged.
        assert_eq!(problem(&storage(None, None), None), None);
        // A size alone is enough to tell a 500 GB disk from a 1 TB one.
        let sized = storage(None, Some(500_107_862_016));
        assert_eq!(
            problem(&sized, Some(&facts(None, Some(500_107_862_016)))),
            None
        );
        assert!(problem(&sized, Some(&facts(None, Some(1)))).is_some());
    }
}
