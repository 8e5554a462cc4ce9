//! The cell key's tests: keys independent of insertion and serde order, what is an
//! input and what is not, and `cell.json`'s inputs read back in the shapes it keeps.

use std::time::Duration;

use serde_json::Value;

use super::*;
use crate::canonical::canonical_bytes;
use crate::cell::CellKey;
use crate::plan::fixtures;

fn doc() -> Input {
    Input::record([
        ("b", Input::from("x")),
        (
            "a",
            Input::List(vec![Input::Int(1), Input::Float(2.5), Input::Int(-3)]),
        ),
        (
            "m",
            Input::Map(BTreeMap::from([
                ("z".to_string(), Input::Bool(true)),
                ("k".to_string(), Input::None),
            ])),
        ),
        ("d", Input::Secs(Duration::from_millis(1500))),
    ])
}

#[test]
fn the_key_is_sha256_of_the_canonical_bytes_behind_the_encoding_prefix() {
    // Expected values computed outside the project:
    // python3 -c "import hashlib; print(hashlib.sha256(b'benchpipe-cell-v3\x00'
    //   + b'r4:s1:bs1:xs1:al3:i1;f4004000000000000i-3;s1:mm2:s1:kns1:zb1'
    //   + b's1:dd1500000000;').hexdigest()[:32])"
    // Record fields keep their written order (b before a); map keys are sorted.
    assert_eq!(
        String::from_utf8(canonical_bytes(&doc())).unwrap(),
        "r4:s1:bs1:xs1:al3:i1;f4004000000000000i-3;s1:mm2:s1:kns1:zb1s1:dd1500000000;"
    );
    assert_eq!(
        CellKey::of(&doc()).as_str(),
        "7506872a4cccb6ad1730d794c0969102"
    );
}

#[test]
fn keys_do_not_depend_on_insertion_order_or_serde_json_object_order() {
    // The recorded JSON may come out in any object order (reversed here, as
    // `preserve_order` would keep a reversed insertion); it is not what is hashed.
    fn reversed(v: &Input) -> Input {
        match v {
            Input::Record(f) => {
                Input::Record(f.iter().rev().map(|(k, v)| (*k, reversed(v))).collect())
            }
            Input::List(l) => Input::List(l.iter().map(reversed).collect()),
            other => other.clone(),
        }
    }
    // serde_json with `preserve_order` keeps objects in insertion order; the key
    // must not. Parameters inserted in opposite orders, and the inputs' JSON with
    // its objects reversed, give the same bytes.
    let ws = fixtures::workspace();
    let scenario = &ws.scenarios[0];
    let board = &ws.boards[&"pi-1".into()];
    let recipe = &ws.recipes[&"disk-4k".into()];
    let image = &scenario.images[&"installed".into()];
    let names = ["size", "bs", "jobs", "direct", "zeta", "alpha"];
    let value = |i: usize| match i % 4 {
        0 => ParamValue::Int(i as i64),
        1 => ParamValue::Float(i as f64 / 3.0),
        2 => ParamValue::Bool(true),
        _ => ParamValue::Str(format!("v{i}")),
    };
    let mut forward = BTreeMap::new();
    for (i, n) in names.iter().enumerate() {
        forward.insert(n.to_string(), value(i));
    }
    let mut backward = BTreeMap::new();
    for (i, n) in names.iter().enumerate().rev() {
        backward.insert(n.to_string(), value(i));
    }
    let inputs = |params: &BTreeMap<String, ParamValue>| {
        cell_inputs(&BoardCell {
            image,
            board,
            storage: board.storage.first(),
            filesystem: None,
            network: None,
            recipe,
            params,
            method: &scenario.method,
        })
    };
    let a = inputs(&forward);
    let b = inputs(&backward);
    assert_eq!(canonical_bytes(&a), canonical_bytes(&b));
    assert_eq!(CellKey::of(&a), CellKey::of(&b));

    assert_eq!(
        a.to_json(),
        reversed(&a).to_json(),
        "the JSON form is the same document"
    );
    assert_ne!(
        CellKey::of(&a),
        CellKey::of(&reversed(&a)),
        "field order is fixed by this module and part of the encoding"
    );

    // Map keys are written in byte order, whatever the insertion order.
    let bytes = String::from_utf8(canonical_bytes(&a)).unwrap();
    let at = |name: &str| bytes.find(&format!("s{}:{name}", name.len())).unwrap();
    let mut sorted = names;
    sorted.sort_unstable();
    for w in sorted.windows(2) {
        assert!(at(w[0]) < at(w[1]), "{} before {}", w[0], w[1]);
    }
}

/// A step's input file is named by a path on the controller, an address: moving the
/// file changes no key; its digest, another parameter, does.
#[test]
fn a_step_inputs_path_is_not_an_input_but_its_digest_is() {
    let ws = fixtures::workspace();
    let scenario = &ws.scenarios[0];
    let board = &ws.boards[&"pi-1".into()];
    let mut recipe = ws.recipes[&"xz".into()].clone();
    recipe.setup = vec![crate::model::Step {
        on: crate::model::Side::Board,
        command: "cat > f".into(),
        timeout: None,
        input: Some(crate::model::StepInput::Param("corpus".into())),
    }];
    let key = |corpus: &str, digest: &str| {
        let mut params = recipe.params.clone();
        params.insert("corpus".into(), ParamValue::Str(corpus.into()));
        params.insert("digest".into(), ParamValue::Str(digest.into()));
        CellKey::of(&cell_inputs(&BoardCell {
            image: &scenario.images[&"installed".into()],
            board,
            storage: None,
            filesystem: None,
            network: None,
            recipe: &recipe,
            params: &params,
            method: &scenario.method,
        }))
    };
    assert_eq!(key("a/corpus.txt", "ab"), key("/elsewhere/c.txt", "ab"));
    assert_ne!(key("a/corpus.txt", "ab"), key("a/corpus.txt", "cd"));
}

#[test]
fn a_regex_parsers_patterns_stream_and_comma_are_inputs() {
    let ws = fixtures::workspace();
    let scenario = &ws.scenarios[0];
    let board = &ws.boards[&"pi-1".into()];
    let mut recipe = ws.recipes[&"xz".into()].clone();
    recipe.parser = crate::model::ParserSpec::named("regex").unwrap();
    let mut key = |regex: crate::model::RegexOptions| {
        recipe.parser.options.regex = Some(regex);
        CellKey::of(&cell_inputs(&BoardCell {
            image: &scenario.images[&"installed".into()],
            board,
            storage: None,
            filesystem: None,
            network: None,
            recipe: &recipe,
            params: &recipe.params,
            method: &scenario.method,
        }))
    };
    let base = crate::model::RegexOptions {
        patterns: vec![r"real (?<real>\d+)".into()],
        stream: crate::model::Stream::Stdout,
        decimal_comma: false,
    };
    let k0 = key(base.clone());
    assert_eq!(key(base.clone()), k0);
    let mut other = base.clone();
    other.patterns[0] = r"user (?<real>\d+)".into();
    assert_ne!(key(other), k0, "patterns");
    let mut other = base.clone();
    other.stream = crate::model::Stream::Stderr;
    assert_ne!(key(other), k0, "stream");
    let mut other = base;
    other.decimal_comma = true;
    assert_ne!(key(other), k0, "decimal comma");
}

#[test]
fn the_recorded_json_keeps_the_shapes_of_cell_json() {
    let ws = fixtures::workspace();
    let scenario = &ws.scenarios[0];
    let board = &ws.boards[&"pi-1".into()];
    let doc = cell_inputs(&BoardCell {
        image: &scenario.images[&"installed".into()],
        board,
        storage: board.storage.first(),
        filesystem: None,
        network: None,
        recipe: &ws.recipes[&"xz".into()],
        params: &BTreeMap::from([("level".into(), ParamValue::Int(6))]),
        method: &scenario.method,
    })
    .to_json();
    assert_eq!(doc["image"], "installed:installed");
    assert_eq!(doc["board"]["name"], "pi-1");
    assert_eq!(doc["storage"]["role"], "boot");
    assert_eq!(doc["filesystem"], Value::Null);
    assert_eq!(doc["test"]["params"]["level"], 6);
    assert_eq!(doc["method"]["idle"], Value::Null);
    assert_eq!(doc["test"]["services"], serde_json::json!([]));
}

/// Every JSON pointer into a cell's recorded inputs, with the value there.
fn pointers<'v>(at: String, v: &'v Value, out: &mut Vec<(String, &'v Value)>) {
    match v {
        Value::Object(m) => m
            .iter()
            .for_each(|(k, x)| pointers(format!("{at}/{k}"), x, out)),
        Value::Array(a) => a
            .iter()
            .enumerate()
            .for_each(|(i, x)| pointers(format!("{at}/{i}"), x, out)),
        _ => {}
    }
    out.push((at, v));
}

#[test]
fn a_cells_inputs_read_the_same_through_the_tree_as_through_their_json() {
    let ws = fixtures::workspace();
    let plan = crate::plan::expand(&ws, &ws.scenarios[0]);
    assert!(!plan.cells.is_empty());
    let mut seen_text = 0;
    for cell in &plan.cells {
        // The tree is asked first: a lookup must not need the JSON form made.
        let json = cell.inputs.tree().to_json();
        let mut all = Vec::new();
        pointers(String::new(), &json, &mut all);
        for (p, v) in all {
            assert!(cell.inputs.pointer(&p).is_some(), "{p} is in the tree");
            assert_eq!(cell.inputs.text(&p), v.as_str(), "text at {p}");
            let texts = v
                .as_array()
                .map(|a| a.iter().filter_map(Value::as_str).collect());
            assert_eq!(cell.inputs.texts(&p), texts, "texts at {p}");
            seen_text += usize::from(v.is_string());
        }
        for absent in [
            "/nope",
            "/board/nope",
            "/test/metrics/99",
            "board",
            "/image/x",
        ] {
            assert_eq!(cell.inputs.pointer(absent), None, "{absent}");
        }
        assert_eq!(cell.inputs.json(), &json);
    }
    assert!(seen_text > 0);
}

/// A board's `arch`: one word is written as the string it always was (its cells
/// keep their keys); several are a list in sorted order, so the file's order is no
/// input; and each form reads back from `cell.json` as it was written.
#[test]
fn a_boards_arch_is_a_string_for_one_word_and_a_sorted_list_for_several() {
    let ws = fixtures::workspace();
    let board = ws.boards[&"pi-1".into()].clone();
    let written = |b: &Board| {
        let inputs = BoardInputs::of(b);
        let text = String::from_utf8(canonical_bytes(&inputs.input())).unwrap();
        let back = BoardInputs::from_json(&inputs.input().to_json());
        assert_eq!(back.as_ref(), Some(&inputs), "{text}");
        text
    };
    assert!(written(&board).ends_with("s4:archs7:aarch64"));
    let one_way = Board {
        arch: vec!["armv7l".into(), "aarch64".into()],
        ..board.clone()
    };
    let other_way = Board {
        arch: vec!["aarch64".into(), "armv7l".into()],
        ..board.clone()
    };
    assert_eq!(written(&one_way), written(&other_way));
    assert!(written(&one_way).ends_with("s4:archl2:s7:aarch64s6:armv7l"));
    let none = Board {
        arch: Vec::new(),
        ..board
    };
    assert!(written(&none).ends_with("s4:archn"));
    // Only the forms `input` writes: not a one-word list, an unsorted one, a number.
    for bad in [
        serde_json::json!({"name": "b", "model": "m", "arch": ["aarch64"]}),
        serde_json::json!({"name": "b", "model": "m", "arch": ["b", "a"]}),
        serde_json::json!({"name": "b", "model": "m", "arch": 64}),
    ] {
        assert_eq!(BoardInputs::from_json(&bad), None, "{bad}");
    }
}
