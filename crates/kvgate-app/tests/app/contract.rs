//! Drift check: the committed TypeScript bindings and JSON Schemas equal what the Rust types
//! generate now. `KVGATE_BLESS=1 cargo test -p kvgate-app --test app contract` rewrites them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

fn read_tree(dir: &Path) -> BTreeMap<String, String> {
    let mut files = BTreeMap::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries {
            let path = entry.unwrap().path();
            if path.is_file() {
                let name = path.file_name().unwrap().to_string_lossy().into_owned();
                files.insert(name, std::fs::read_to_string(&path).unwrap());
            }
        }
    }
    files
}

fn check(committed: &Path, generate: fn(&Path) -> Result<(), String>) {
    if std::env::var_os("KVGATE_BLESS").is_some() {
        if committed.exists() {
            std::fs::remove_dir_all(committed).unwrap();
        }
        generate(committed).unwrap();
        return;
    }
    let fresh = tempfile::tempdir().unwrap();
    generate(fresh.path()).unwrap();
    let want = read_tree(fresh.path());
    let have = read_tree(committed);
    assert!(!want.is_empty(), "nothing was generated");
    let mut problems = Vec::new();
    for (name, text) in &want {
        match have.get(name) {
            None => problems.push(format!("missing: {name}")),
            Some(h) if h != text => problems.push(format!("differs: {name}")),
            Some(_) => {}
        }
    }
    for name in have.keys().filter(|n| !want.contains_key(*n)) {
        problems.push(format!("not generated (stale): {name}"));
    }
    assert!(
        problems.is_empty(),
        "{} is out of date with the Rust types ({}); run `make contract` and commit",
        committed.display(),
        problems.join(", ")
    );
}

#[test]
fn typescript_bindings_match_rust_types() {
    check(
        &repo_root().join("ui/src/lib/bindings"),
        kvgate_app::contract::write_bindings,
    );
}

#[test]
fn json_schemas_match_rust_types() {
    check(
        &repo_root().join("schemas"),
        kvgate_app::contract::write_schemas,
    );
}
