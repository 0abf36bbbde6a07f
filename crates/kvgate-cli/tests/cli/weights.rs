use std::path::Path;
use std::process::{Command, Output};

use crate::{stderr, stdout};

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kvgate"))
        .args(args)
        .output()
        .unwrap()
}

/// A minimal safetensors file: 8-byte little-endian header length, JSON header, data.
fn write_safetensors(path: &Path, tensors: &[(&str, &str, &[u64], Vec<u8>)]) {
    let mut header = serde_json::Map::new();
    let mut data = Vec::new();
    for (name, dtype, shape, bytes) in tensors {
        let start = data.len();
        data.extend_from_slice(bytes);
        header.insert(
            (*name).into(),
            serde_json::json!({"dtype": dtype, "shape": shape, "data_offsets": [start, data.len()]}),
        );
    }
    let header = serde_json::to_vec(&header).unwrap();
    let mut file = (header.len() as u64).to_le_bytes().to_vec();
    file.extend_from_slice(&header);
    file.extend_from_slice(&data);
    std::fs::write(path, file).unwrap();
}

#[test]
fn scales_added_keep_the_digest_and_a_changed_weight_does_not() {
    let dir = tempfile::tempdir().unwrap();
    let weight = (
        "model.layers.0.self_attn.k_proj.weight",
        "BF16",
        &[2u64, 2][..],
        vec![1u8, 2, 3, 4, 5, 6, 7, 8],
    );
    for d in ["base", "calibrated", "changed"] {
        std::fs::create_dir(dir.path().join(d)).unwrap();
    }
    write_safetensors(
        &dir.path().join("base/model.safetensors"),
        std::slice::from_ref(&weight),
    );
    write_safetensors(
        &dir.path().join("calibrated/model.safetensors"),
        &[
            weight.clone(),
            (
                "model.layers.0.self_attn.k_scale",
                "F32",
                &[],
                0.5f32.to_le_bytes().to_vec(),
            ),
            (
                "model.layers.0.self_attn.v_scale",
                "F32",
                &[],
                0.25f32.to_le_bytes().to_vec(),
            ),
        ],
    );
    let mut changed = weight.clone();
    changed.3[7] ^= 1;
    write_safetensors(&dir.path().join("changed/model.safetensors"), &[changed]);
    let p = |d: &str| dir.path().join(d).display().to_string();

    let digest = |d: &str| {
        let o = run(&["weights", "digest", &p(d), "--json"]);
        assert!(o.status.success(), "{}", stderr(&o));
        serde_json::from_str::<serde_json::Value>(&stdout(&o)).unwrap()
    };
    let base = digest("base");
    let calibrated = digest("calibrated");
    assert_eq!(base["weights_digest"], calibrated["weights_digest"]);
    assert_eq!(calibrated["scale_tensor_count"], 2);
    assert_eq!(calibrated["scale_granularity"], "per_tensor");
    assert_ne!(digest("changed")["weights_digest"], base["weights_digest"]);

    let o = run(&["weights", "compare", &p("base"), &p("calibrated")]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).starts_with("weights identical, scales added (2)"),
        "{}",
        stdout(&o)
    );

    let o = run(&["weights", "compare", &p("base"), &p("changed")]);
    assert_eq!(o.status.code(), Some(1));
    let text = stdout(&o);
    assert!(text.starts_with("weights differ"), "{text}");
    assert!(
        text.contains("model.layers.0.self_attn.k_proj.weight"),
        "{text}"
    );

    let o = run(&[
        "weights",
        "digest",
        &dir.path().join("missing").display().to_string(),
    ]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("missing"), "{}", stderr(&o));
}
