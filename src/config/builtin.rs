//! The recipes shipped inside the binary: every `pipeline/*.toml` of the source tree, so
//! that a workspace needs no `pipeline/` of its own (a release archive has none).

use std::path::PathBuf;

/// What a built-in recipe's path starts with in diagnostics and in what `plan` says:
/// never a file on disk.
pub const BUILT_IN: &str = "<built-in>";

/// `(name, text)` of every shipped recipe, in name order. One list: the test below
/// checks it against `pipeline/`, so a new recipe cannot be left out of the binary.
pub const RECIPES: &[(&str, &str)] = &[
    ("burn-in", include_str!("../../pipeline/burn-in.toml")),
    (
        "burn-in-wordpress",
        include_str!("../../pipeline/burn-in-wordpress.toml"),
    ),
    ("dd-write", include_str!("../../pipeline/dd-write.toml")),
    ("disk-1m", include_str!("../../pipeline/disk-1m.toml")),
    ("disk-4k", include_str!("../../pipeline/disk-4k.toml")),
    ("drupal", include_str!("../../pipeline/drupal.toml")),
    (
        "drupal-login",
        include_str!("../../pipeline/drupal-login.toml"),
    ),
    ("fs-stack", include_str!("../../pipeline/fs-stack.toml")),
    ("hdparm", include_str!("../../pipeline/hdparm.toml")),
    ("http", include_str!("../../pipeline/http.toml")),
    ("http-load", include_str!("../../pipeline/http-load.toml")),
    ("iozone", include_str!("../../pipeline/iozone.toml")),
    ("iozone-1m", include_str!("../../pipeline/iozone-1m.toml")),
    ("iperf", include_str!("../../pipeline/iperf.toml")),
    (
        "iperf3-all-boards",
        include_str!("../../pipeline/iperf3-all-boards.toml"),
    ),
    (
        "iperf3-bidir",
        include_str!("../../pipeline/iperf3-bidir.toml"),
    ),
    (
        "iperf3-board-to-controller",
        include_str!("../../pipeline/iperf3-board-to-controller.toml"),
    ),
    (
        "iperf3-controller-to-board",
        include_str!("../../pipeline/iperf3-controller-to-board.toml"),
    ),
    (
        "iperf3-from-board",
        include_str!("../../pipeline/iperf3-from-board.toml"),
    ),
    (
        "iperf3-peer",
        include_str!("../../pipeline/iperf3-peer.toml"),
    ),
    (
        "iperf3-to-board",
        include_str!("../../pipeline/iperf3-to-board.toml"),
    ),
    (
        "minecraft-startup",
        include_str!("../../pipeline/minecraft-startup.toml"),
    ),
    ("nfs", include_str!("../../pipeline/nfs.toml")),
    ("smb", include_str!("../../pipeline/smb.toml")),
    ("smb-fs", include_str!("../../pipeline/smb-fs.toml")),
    (
        "startup-kubectl",
        include_str!("../../pipeline/startup-kubectl.toml"),
    ),
    (
        "startup-nginx",
        include_str!("../../pipeline/startup-nginx.toml"),
    ),
    ("wordpress", include_str!("../../pipeline/wordpress.toml")),
    (
        "wordpress-login",
        include_str!("../../pipeline/wordpress-login.toml"),
    ),
    ("xz", include_str!("../../pipeline/xz.toml")),
    ("xz-pinned", include_str!("../../pipeline/xz-pinned.toml")),
];

/// The text of the built-in recipe `name`, if there is one.
pub fn recipe(name: &str) -> Option<&'static str> {
    RECIPES.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}

/// How a built-in recipe is named where a path would be: `<built-in>/pipeline/NAME.toml`.
pub fn shown_path(name: &str) -> PathBuf {
    PathBuf::from(format!("{BUILT_IN}/pipeline/{name}.toml"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The list and `pipeline/` agree, name and text: a recipe added to (or changed in)
    /// the source tree is the one the binary ships.
    #[test]
    fn the_built_in_list_is_every_recipe_of_pipeline() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("pipeline");
        let mut on_disk: Vec<(String, String)> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "toml"))
            .map(|p| {
                let name = p.file_stem().unwrap().to_string_lossy().into_owned();
                (name, std::fs::read_to_string(&p).unwrap())
            })
            .collect();
        on_disk.sort();
        let listed: Vec<(String, String)> = RECIPES
            .iter()
            .map(|(n, t)| (n.to_string(), t.to_string()))
            .collect();
        let names = |v: &[(String, String)]| v.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
        assert_eq!(
            names(&listed),
            names(&on_disk),
            "src/config/builtin.rs RECIPES must list every pipeline/*.toml, in name order"
        );
        assert!(
            listed == on_disk,
            "a listed recipe's text is not its file's"
        );
    }
}
