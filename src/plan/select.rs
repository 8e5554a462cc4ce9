//! Which cells a user named on the command line (`--only`, `--redo`): an axis pattern
//! like the scenario's include/exclude ones, or a prefix of a cell key. Pure.

use crate::error::{Error, Result};
use crate::model::CellPattern;

use super::Cell;

/// One `--only`/`--redo` argument.
#[derive(Clone, Debug, PartialEq)]
pub enum Selector {
    /// `axis=glob,axis=glob`: every named axis must match.
    Cells(CellPattern),
    /// Hex digits: the cells whose key starts with them.
    KeyPrefix(String),
}

impl Selector {
    /// Parses `board=pi-1,test=xz` (globs allowed) or a key prefix such as `7b704c2a`.
    pub fn parse(text: &str) -> Result<Selector> {
        let text = text.trim();
        if !text.contains('=') {
            if !text.is_empty() && text.len() <= 32 && text.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Ok(Selector::KeyPrefix(text.to_ascii_lowercase()));
            }
            return Err(Error::Usage(format!(
                "`{text}`: expected axis=glob pairs (e.g. board=pi-1,test=xz) or a cell key prefix (hex digits)"
            )));
        }
        let p = cell_pattern(text)?;
        Ok(Selector::Cells(p))
    }

    pub fn matches(&self, cell: &Cell) -> bool {
        match self {
            Selector::Cells(p) => cell.address.matches(p),
            Selector::KeyPrefix(k) => cell.key.as_str().starts_with(k.as_str()),
        }
    }
}

/// Parses `axis=glob` pairs (`storage=usb,test=xz`) into a cell pattern.
pub fn cell_pattern(text: &str) -> Result<CellPattern> {
    let mut p = CellPattern::default();
    for part in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (axis, value) = part.split_once('=').ok_or_else(|| {
            Error::Usage(format!("`{part}`: expected axis=glob, e.g. storage=usb"))
        })?;
        let slot = match axis.trim() {
            "image" => &mut p.image,
            "board" => &mut p.board,
            "storage" => &mut p.storage,
            "filesystem" => &mut p.filesystem,
            "network" => &mut p.network,
            "test" => &mut p.test,
            other => {
                return Err(Error::Usage(format!(
                    "`{other}` is not an axis; expected image, board, storage, filesystem, network or test"
                )));
            }
        };
        *slot = Some(value.trim().to_string());
    }
    Ok(p)
}

/// Whether any of `selectors` matches `cell` (none given: false).
pub fn any(selectors: &[Selector], cell: &Cell) -> bool {
    selectors.iter().any(|s| s.matches(cell))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_and_key_prefixes_select_cells() {
        let ws = super::super::fixtures::workspace();
        let plan = super::super::expand(&ws, &ws.scenarios[0]);
        let count = |s: &str| {
            let sel = Selector::parse(s).unwrap();
            plan.cells.iter().filter(|c| sel.matches(c)).count()
        };
        assert_eq!(count("test=xz"), 2);
        assert_eq!(count("board=pi-1,test=xz"), 1);
        assert_eq!(count("board=pi-*, storage=usb"), 4);
        let key = plan.cells[0].key.as_str().to_string();
        assert_eq!(count(&key[..8]), 1);
        assert_eq!(count(&key.to_ascii_uppercase()), 1);
        for bad in ["", "nothex!", "colour=red", "board"] {
            let e = Selector::parse(bad).unwrap_err();
            assert!(matches!(e, Error::Usage(_)), "{bad}: {e}");
        }
    }
}
