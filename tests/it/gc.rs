//! Integration tests: `benchpipe gc` on a real store: the cells of an older matrix go,
//! the scenario's own stay, a dry run removes nothing, what is no cell of the store's is
//! never touched, and a held store is refused.

use crate::spine::{Project, text};

fn dirs(p: &Project) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(p.dir.join("results"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().to_string())
        .filter(|n| n.contains("-sleepy-here"))
        .collect();
    out.sort();
    out
}

#[test]
fn gc_removes_only_the_cells_no_scenario_refers_to() {
    let p = Project::local("gc").local_scenario("s", &["sleepy"], 1, "");
    let out = p.bp(&["apply", "scenarios/s.toml"]);
    assert!(out.status.success(), "{}", text(&out));
    let old = dirs(&p);
    assert_eq!(old.len(), 1);
    // The recipe's parameter changes: a new cell, the old one unreferenced.
    let rel = p.dir.join("scenarios/s.toml");
    let s = std::fs::read_to_string(&rel).unwrap() + "[params.sleepy]\nvalue = 2.5\n";
    std::fs::write(&rel, s).unwrap();
    let out = p.bp(&["apply", "scenarios/s.toml"]);
    assert!(out.status.success(), "{}", text(&out));
    let both = dirs(&p);
    assert_eq!(both.len(), 2);
    let new: Vec<&String> = both.iter().filter(|d| !old.contains(d)).collect();
    // Planted: a directory and a link named like a cell, neither the store's.
    let planted_dir = p
        .dir
        .join(format!("results/{}-sleepy-here", "ab".repeat(16)));
    std::fs::create_dir(&planted_dir).unwrap();
    std::fs::write(planted_dir.join("notes.txt"), "mine\n").unwrap();
    let outside = p.dir.join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::fs::write(outside.join("cell.json"), "{}").unwrap();
    let link = p
        .dir
        .join(format!("results/{}-sleepy-here", "cd".repeat(16)));
    std::os::unix::fs::symlink(&outside, &link).unwrap();

    let dry = p.bp(&["gc", "--dry-run", "scenarios/s.toml"]);
    let said = text(&dry);
    assert!(dry.status.success(), "{said}");
    assert!(said.contains(&format!("would remove {}", old[0])), "{said}");
    assert!(said.contains("gc: would remove 1 cell(s)"), "{said}");
    assert!(
        p.dir.join("results").join(&old[0]).is_dir(),
        "a dry run removed"
    );

    let gc = p.bp(&["gc", "scenarios/s.toml"]);
    let said = text(&gc);
    assert!(gc.status.success(), "{said}");
    assert!(said.contains(&format!("removed {}", old[0])), "{said}");
    assert!(!p.dir.join("results").join(&old[0]).exists(), "{said}");
    assert!(
        p.dir
            .join("results")
            .join(new[0])
            .join("samples.jsonl")
            .is_file(),
        "{said}"
    );
    assert!(
        planted_dir.join("notes.txt").is_file(),
        "a directory not the store's"
    );
    assert!(outside.join("cell.json").is_file(), "through a link");
    std::fs::remove_file(&link).unwrap();
    // The kept cell is complete: nothing to run, the report renders.
    let plan = p.bp(&["plan", "scenarios/s.toml"]);
    assert!(text(&plan).contains("complete"), "{}", text(&plan));
    let again = p.bp(&["gc", "scenarios/s.toml"]);
    assert!(
        text(&again).contains("gc: removed 0 cell(s)"),
        "{}",
        text(&again)
    );
}

/// While an apply holds the store, gc is refused and removes nothing.
#[test]
fn gc_is_refused_while_an_apply_holds_the_store() {
    let p = Project::local("gc-held").local_scenario("s", &["sleepy"], 1, "");
    let store = benchpipe::store::Store::open(p.dir.join("results")).unwrap();
    let _held = store.lock().unwrap();
    let gc = p.bp(&["gc", "scenarios/s.toml"]);
    let said = text(&gc);
    assert_eq!(gc.status.code(), Some(1), "{said}");
    assert!(
        said.contains("is locked by another benchpipe apply"),
        "{said}"
    );
}

/// The image cache beside the store: an image the scenario declares keeps its files;
/// another image's files, a prepared image no kept key names, and a dead process's
/// temporary copy go; a lock file, a link and a file the cache never makes stay.
#[test]
fn gc_removes_the_image_cache_files_of_images_no_scenario_uses() {
    let kept = "1a".repeat(32);
    let other = "2b".repeat(32);
    let (key, derived) = ("3c".repeat(32), "4d".repeat(32));
    let p = Project::local("gc-images").local_scenario(
        "s",
        &["sleepy"],
        1,
        &format!("\n[images.old]\npath = \"old.img\"\nsha256 = \"{kept}\"\n"),
    );
    let out = p.bp(&["apply", "--no-report", "scenarios/s.toml"]);
    assert!(out.status.success(), "{}", text(&out));
    let cache = p.dir.join("image-cache");
    std::fs::create_dir(&cache).unwrap();
    let put = |name: &str, text: &str| std::fs::write(cache.join(name), text).unwrap();
    put(&kept, "kept image");
    put(&format!("{kept}.facts.json"), "{}");
    put(&other, "another image");
    put(&format!("{other}.part"), "half");
    put(&format!("{other}.lock"), "");
    put(
        &format!("{key}.derived.json"),
        &format!("{{\"derived_sha256\": \"{derived}\"}}"),
    );
    put(&format!("{derived}.img"), "prepared");
    // pid 0x7fffffff: no process has it.
    put(&format!(".{key}.2147483647-a1b2c3.tmp"), "half a copy");
    put("notes.txt", "mine");
    std::os::unix::fs::symlink(p.dir.join("notes-elsewhere"), cache.join("5e".repeat(32))).unwrap();
    let listing = || {
        let mut v: Vec<String> = std::fs::read_dir(&cache)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().to_string())
            .collect();
        v.sort();
        v
    };
    let before = listing();
    let out = p.bp(&["gc", "--dry-run", "scenarios/s.toml"]);
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    assert_eq!(listing(), before, "a dry run removes nothing");
    assert!(
        said.contains("gc: would remove 5 image cache file(s)"),
        "{said}"
    );
    assert!(said.contains(&format!("would remove image-cache/{other}.part")));
    let out = p.bp(&["gc", "scenarios/s.toml"]);
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    assert!(said.contains("gc: removed 5 image cache file(s)"), "{said}");
    let mut left = vec![
        kept.clone(),
        format!("{kept}.facts.json"),
        format!("{other}.lock"),
        "5e".repeat(32),
        "notes.txt".to_string(),
    ];
    // Each removal was made holding its image's lock.
    for stem in [&other, &key, &derived] {
        let lock = format!("{stem}.lock");
        if !left.contains(&lock) {
            left.push(lock);
        }
    }
    left.sort();
    assert_eq!(listing(), left);
}
