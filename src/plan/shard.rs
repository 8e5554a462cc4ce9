//! `--shard K/N`: a deterministic share of a plan for one of N controllers, split by
//! walk unit so that no board is driven by two controllers: a board with every cluster
//! it is a member of and every board its cells take as a peer (and theirs) are one unit,
//! as are boards flashed through one host (`via`: a Turing Pi BMC, a dd helper), which
//! flashes one board at a time and must see one controller.
//! Units in name order are dealt round-robin; every controller, given the same files,
//! deals the same.

use std::collections::BTreeMap;

use crate::cell::Cell;

/// One share of N: `k` counted from 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    pub k: u32,
    pub n: u32,
}

/// The most shards a plan is split into.
pub const MAX_SHARDS: u32 = 1000;

impl Shard {
    /// `K/N`, 1 <= K <= N <= `MAX_SHARDS`; else what was expected.
    pub fn parse(text: &str) -> Result<Shard, String> {
        let expected = || {
            format!(
                "--shard `{text}`: expected K/N, the K-th of N shares (1 <= K <= N <= {MAX_SHARDS}), like 2/3"
            )
        };
        let (k, n) = text.split_once('/').ok_or_else(expected)?;
        let (k, n) = (
            k.parse::<u32>().map_err(|_| expected())?,
            n.parse::<u32>().map_err(|_| expected())?,
        );
        if k == 0 || k > n || n > MAX_SHARDS {
            return Err(expected());
        }
        Ok(Shard { k, n })
    }

    /// The board names (boards and clusters, as cells' `board`) whose cells are this
    /// shard's, out of `cells`; `ws` says which host flashes each board.
    pub fn owns<'c>(
        self,
        ws: &'c crate::model::Workspace,
        cells: impl IntoIterator<Item = &'c Cell>,
    ) -> Vec<String> {
        let via = |b: &'c crate::model::BoardName| -> Option<&'c str> {
            match &ws.boards.get(b)?.flash {
                crate::model::Flash::Tpi { via, .. } | crate::model::Flash::Dd { via, .. } => {
                    Some(via.as_str())
                }
                crate::model::Flash::Command { via, .. } => via.as_deref(),
                crate::model::Flash::None => None,
            }
        };
        self.owns_of(cells.into_iter().map(|cell| {
            let mut with: Vec<&str> = Vec::new();
            if let Some(c) = &cell.cluster {
                with.extend(c.members.iter().map(crate::model::BoardName::as_str));
                // A flash host joins the boards it flashes (and is itself one, when a board).
                with.extend(c.members.iter().filter_map(&via));
            }
            with.extend(cell.peer.as_ref().map(crate::model::BoardName::as_str));
            with.extend(via(&cell.address.board));
            (cell.address.board.as_str(), with)
        }))
    }

    /// `owns` over each cell's board and the boards it walks with (its cluster's
    /// members, its peer).
    fn owns_of<'a>(self, links: impl IntoIterator<Item = (&'a str, Vec<&'a str>)>) -> Vec<String> {
        let units = units(links);
        let mut first_of: BTreeMap<String, String> = BTreeMap::new();
        for (name, unit) in &units {
            first_of
                .entry(unit.clone())
                .and_modify(|f| {
                    if name < f {
                        f.clone_from(name);
                    }
                })
                .or_insert_with(|| name.clone());
        }
        // Units in the order of their first name, dealt round-robin.
        let mut order: Vec<(&String, &String)> = first_of.iter().map(|(u, f)| (f, u)).collect();
        order.sort();
        let mine: Vec<&String> = order
            .iter()
            .enumerate()
            .filter(|(i, _)| u32::try_from(*i).is_ok_and(|i| i % self.n == self.k - 1))
            .map(|(_, (_, u))| *u)
            .collect();
        units
            .iter()
            .filter(|(_, u)| mine.contains(u))
            .map(|(name, _)| name.clone())
            .collect()
    }
}

/// The representative of `name`'s unit, registering `name` if new.
fn root(parent: &mut BTreeMap<String, String>, name: &str) -> String {
    let mut at = name.to_string();
    // Bounded: each step moves to a name that sorts lower (see `join`).
    while let Some(p) = parent.get(&at).filter(|p| **p != at) {
        at = p.clone();
    }
    parent
        .entry(name.to_string())
        .or_insert_with(|| name.to_string());
    at
}

/// Each name's unit (its representative), by union of a cell's board with the boards
/// it walks with.
fn units<'a>(links: impl IntoIterator<Item = (&'a str, Vec<&'a str>)>) -> BTreeMap<String, String> {
    let mut parent: BTreeMap<String, String> = BTreeMap::new();
    let mut join = |a: &str, b: &str| {
        let (ra, rb) = (root(&mut parent, a), root(&mut parent, b));
        let (low, high) = if ra <= rb { (ra, rb) } else { (rb, ra) };
        parent.insert(high, low.clone());
        parent.entry(low.clone()).or_insert(low);
    };
    for (board, with) in links {
        join(board, board);
        for other in with {
            join(board, other);
        }
    }
    let names: Vec<String> = parent.keys().cloned().collect();
    names
        .into_iter()
        .map(|n| {
            let r = root(&mut parent, &n);
            (n, r)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::Shard;

    fn deal(n: u32, links: &[(&str, &[&str])]) -> Vec<Vec<String>> {
        (1..=n)
            .map(|k| {
                let mut mine = Shard { k, n }.owns_of(links.iter().map(|(b, w)| (*b, w.to_vec())));
                mine.sort();
                mine
            })
            .collect()
    }

    /// Every name in exactly one share; a cluster with its members and a board with
    /// its peer (and the peer's peer) in the same one; units dealt round-robin.
    #[test]
    fn each_board_is_in_one_share_with_its_cluster_and_its_peers() {
        let links: &[(&str, &[&str])] = &[
            ("a", &[]),
            ("k3s", &["m1", "m2"]),
            ("m1", &[]),
            ("b", &["c"]),
            ("c", &["d"]),
            ("e", &[]),
        ];
        let shares = deal(3, links);
        let mut all: Vec<String> = shares.concat();
        all.sort();
        assert_eq!(all, ["a", "b", "c", "d", "e", "k3s", "m1", "m2"]);
        let share_of = |name: &str| shares.iter().position(|s| s.iter().any(|n| n == name));
        assert_eq!(share_of("k3s"), share_of("m1"));
        assert_eq!(share_of("m2"), share_of("m1"));
        assert_eq!(share_of("b"), share_of("d"));
        // Units by first name: a, b(c,d), e, k3s(m1,m2): dealt 1,2,3,1.
        assert_eq!(shares[0], ["a", "k3s", "m1", "m2"]);
        assert_eq!(shares[1], ["b", "c", "d"]);
        assert_eq!(shares[2], ["e"]);
        assert_eq!(deal(1, links)[0].len(), 8);
    }

    #[test]
    fn a_shard_is_k_of_n() {
        assert_eq!(Shard::parse("2/3"), Ok(Shard { k: 2, n: 3 }));
        for bad in ["0/3", "4/3", "3", "a/b", "1/1001", "-1/2", "1/0"] {
            assert!(Shard::parse(bad).is_err(), "{bad}");
        }
    }
}
