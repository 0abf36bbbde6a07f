//! Which files of a directory are the checkpoint.

use kvgate_formats::weights::fs::open_checkpoint;
use kvgate_formats::weights::CheckpointLayout;

use crate::checkpoint::*;

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

#[test]
fn detect_prefers_the_index_then_safetensors_then_one_gguf() {
    let d = |l: &[&str]| CheckpointLayout::detect(&names(l));
    assert_eq!(
        d(&[
            "config.json",
            "model-00001-of-00002.safetensors",
            "model.safetensors.index.json"
        ])
        .unwrap(),
        CheckpointLayout::ShardedSafetensors {
            index: "model.safetensors.index.json".into()
        }
    );
    assert_eq!(
        d(&["b.safetensors", "config.json", "a.safetensors"]).unwrap(),
        CheckpointLayout::Safetensors {
            files: names(&["a.safetensors", "b.safetensors"])
        }
    );
    assert_eq!(
        d(&["m.Q4_1.gguf", "README.md"]).unwrap(),
        CheckpointLayout::Gguf {
            file: "m.Q4_1.gguf".into()
        }
    );
    let e = d(&["a.gguf", "b.gguf"]).unwrap_err().to_string();
    assert_eq!(
        e,
        "checkpoint: expected one `.gguf` file (name one file), found [a.gguf, b.gguf]"
    );
    let e = d(&["m.gguf", "model.safetensors"]).unwrap_err().to_string();
    assert!(e.contains("not both"), "{e}");
    let e = d(&["config.json"]).unwrap_err().to_string();
    assert_eq!(
        e,
        "checkpoint: expected `model.safetensors.index.json`, `.safetensors` files or one \
         `.gguf` file, found [config.json]"
    );
}

#[test]
fn a_named_file_is_read_alone_and_stray_files_are_ignored() {
    let model = base_model();
    let dir = tempfile::tempdir().unwrap();
    write_safetensors(dir.path(), "model.safetensors", &model);
    std::fs::write(dir.path().join("config.json"), "{}").unwrap();
    std::fs::create_dir(dir.path().join("sub.safetensors")).unwrap();
    let whole = digest(dir.path());
    let one = digest(&dir.path().join("model.safetensors"));
    assert_eq!(whole, one);

    let e = open_checkpoint(&dir.path().join("config.json"))
        .map(|(_, layout)| layout)
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "checkpoint: expected a `.safetensors`, `.safetensors.index.json` or `.gguf` file, \
         found `config.json`"
    );
}
