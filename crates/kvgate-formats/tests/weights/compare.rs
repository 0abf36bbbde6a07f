//! The variants of issue 11, each against the base checkpoint, with the verdict each must get.

use kvgate_formats::weights::{compare, DifferenceKind, TensorDifference, WeightsVerdict};

use crate::checkpoint::*;

fn verdict_of(
    base: &[Tensor],
    candidate_dir: &std::path::Path,
) -> kvgate_formats::weights::WeightsComparison {
    let b = digest(single_file_dir(base).path());
    let c = digest(candidate_dir);
    compare(&b, &c)
}

#[test]
fn an_identical_copy_is_weights_identical() {
    let model = base_model();
    let cmp = verdict_of(&model, single_file_dir(&model).path());
    assert_eq!(cmp.verdict, WeightsVerdict::WeightsIdentical);
    assert_eq!(cmp.to_string(), "weights identical");
    assert!(cmp.weights_identical());
    assert_eq!(cmp.base_weights_digest, cmp.candidate_weights_digest);
}

#[test]
fn per_tensor_scales_added_keep_the_weights_digest() {
    let base = base_model();
    let mut calibrated = base.clone();
    calibrated.extend(per_tensor_scales());
    let cmp = verdict_of(&base, single_file_dir(&calibrated).path());
    let n = 2 * LAYERS as u64;
    assert_eq!(
        cmp.verdict,
        WeightsVerdict::WeightsIdenticalScalesAdded { count: n }
    );
    assert_eq!(
        cmp.to_string(),
        format!("weights identical, scales added ({n})")
    );
    assert_eq!(cmp.base_weights_digest, cmp.candidate_weights_digest);
    assert_eq!(cmp.scales_added.len() as u64, n);
    assert!(cmp.weights_identical());
}

#[test]
fn per_head_scales_added_in_another_tensor_order_keep_the_weights_digest() {
    let base = base_model();
    // Scales interleaved and tensors written in reverse: file layout must not matter.
    let mut calibrated: Vec<Tensor> = per_head_scales();
    calibrated.extend(base.iter().rev().cloned());
    let cmp = verdict_of(&base, single_file_dir(&calibrated).path());
    assert_eq!(
        cmp.verdict,
        WeightsVerdict::WeightsIdenticalScalesAdded {
            count: 2 * LAYERS as u64
        }
    );
}

#[test]
fn one_changed_weight_element_is_a_bytes_difference_naming_the_tensor() {
    let base = base_model();
    let mut changed = base.clone();
    changed.extend(per_tensor_scales());
    let target = "model.layers.1.mlp.down_proj.weight";
    let t = changed.iter_mut().find(|t| t.name == target).unwrap();
    t.data[6] ^= 0x01; // lowest mantissa bit of element 3
    let cmp = verdict_of(&base, single_file_dir(&changed).path());
    let WeightsVerdict::WeightsDiffer { differences } = &cmp.verdict else {
        panic!("expected weights differ, got {cmp}");
    };
    assert_eq!(differences.len(), 1);
    assert_eq!(differences[0].name, target);
    assert_eq!(differences[0].what, DifferenceKind::Bytes);
    assert_ne!(cmp.base_weights_digest, cmp.candidate_weights_digest);
    assert!(!cmp.weights_identical());
    let text = cmp.to_string();
    assert!(
        text.starts_with("weights differ\n  bytes: model.layers.1.mlp.down_proj.weight (sha256 "),
        "{text}"
    );
}

#[test]
fn a_renamed_tensor_is_missing_plus_extra() {
    let base = base_model();
    let mut renamed = base.clone();
    let t = renamed
        .iter_mut()
        .find(|t| t.name == "model.layers.0.mlp.up_proj.weight")
        .unwrap();
    t.name = "model.layers.0.mlp.up_proj_renamed.weight".into();
    let cmp = verdict_of(&base, single_file_dir(&renamed).path());
    let WeightsVerdict::WeightsDiffer { differences } = &cmp.verdict else {
        panic!("expected weights differ, got {cmp}");
    };
    let got: Vec<(&str, DifferenceKind)> = differences
        .iter()
        .map(|d| (d.name.as_str(), d.what))
        .collect();
    assert_eq!(
        got,
        vec![
            ("model.layers.0.mlp.up_proj.weight", DifferenceKind::Missing),
            (
                "model.layers.0.mlp.up_proj_renamed.weight",
                DifferenceKind::Extra
            ),
        ]
    );
    assert_eq!(
        cmp.to_string(),
        "weights differ\n  missing: model.layers.0.mlp.up_proj.weight\n  \
         extra: model.layers.0.mlp.up_proj_renamed.weight"
    );
}

#[test]
fn a_changed_dtype_is_a_dtype_difference() {
    let base = base_model();
    let mut retyped = base.clone();
    // Same bytes, read as F16: only the dtype differs.
    let t = retyped
        .iter_mut()
        .find(|t| t.name == "model.norm.weight")
        .unwrap();
    t.dtype = "F16".into();
    let cmp = verdict_of(&base, single_file_dir(&retyped).path());
    assert_eq!(
        cmp.verdict,
        WeightsVerdict::WeightsDiffer {
            differences: vec![TensorDifference {
                name: "model.norm.weight".into(),
                what: DifferenceKind::Dtype,
                base: Some("BF16".into()),
                candidate: Some("F16".into()),
            }]
        }
    );
    assert_eq!(
        cmp.to_string(),
        "weights differ\n  dtype: model.norm.weight (BF16 → F16)"
    );
}

#[test]
fn a_reshaped_tensor_is_a_shape_difference() {
    let base = base_model();
    let mut reshaped = base.clone();
    let t = reshaped
        .iter_mut()
        .find(|t| t.name == "lm_head.weight")
        .unwrap();
    t.shape = vec![HIDDEN, 64];
    let cmp = verdict_of(&base, single_file_dir(&reshaped).path());
    let WeightsVerdict::WeightsDiffer { differences } = &cmp.verdict else {
        panic!("expected weights differ, got {cmp}");
    };
    assert_eq!(differences[0].what, DifferenceKind::Shape);
    assert_eq!(differences[0].base.as_deref(), Some("[64,16]"));
}

#[test]
fn the_same_tensors_sharded_differently_are_identical() {
    let base = base_model();
    let single = digest(single_file_dir(&base).path());

    let two = tempfile::tempdir().unwrap();
    let (a, b) = base.split_at(10);
    write_sharded(
        two.path(),
        &[
            ("model-00001-of-00002.safetensors", a.to_vec()),
            ("model-00002-of-00002.safetensors", b.to_vec()),
        ],
    );
    let three = tempfile::tempdir().unwrap();
    let mut scaled = base.clone();
    scaled.extend(per_tensor_scales());
    let (x, rest) = scaled.split_at(5);
    let (y, z) = rest.split_at(17);
    write_sharded(
        three.path(),
        &[
            ("model-00001-of-00003.safetensors", z.to_vec()),
            ("model-00002-of-00003.safetensors", x.to_vec()),
            ("model-00003-of-00003.safetensors", y.to_vec()),
        ],
    );

    let two_d = digest(two.path());
    assert_eq!(two_d.files.len(), 2);
    assert_eq!(two_d.weights_digest, single.weights_digest);
    assert_eq!(
        compare(&single, &two_d).verdict,
        WeightsVerdict::WeightsIdentical
    );
    let three_d = digest(three.path());
    assert_eq!(three_d.files.len(), 3);
    assert_eq!(three_d.weights_digest, single.weights_digest);
    assert_eq!(
        compare(&two_d, &three_d).to_string(),
        format!("weights identical, scales added ({})", 2 * LAYERS)
    );
    assert!(three_d.notes.is_empty(), "{:?}", three_d.notes);
}

#[test]
fn recalibrated_or_removed_scales_are_listed_without_changing_the_verdict() {
    let mut a = base_model();
    a.extend(per_tensor_scales());
    let mut b = base_model();
    b.extend(
        per_tensor_scales()
            .into_iter()
            .filter(|t| t.name != "model.layers.2.self_attn.v_scale"),
    );
    let k0 = b
        .iter_mut()
        .find(|t| t.name == "model.layers.0.self_attn.k_scale")
        .unwrap();
    k0.data = 0.75f32.to_le_bytes().to_vec();
    let cmp = compare(
        &digest(single_file_dir(&a).path()),
        &digest(single_file_dir(&b).path()),
    );
    assert_eq!(cmp.verdict, WeightsVerdict::WeightsIdentical);
    assert_eq!(cmp.scales_removed, vec!["model.layers.2.self_attn.v_scale"]);
    assert_eq!(cmp.scales_changed, vec!["model.layers.0.self_attn.k_scale"]);
    assert_eq!(
        cmp.to_string(),
        "weights identical\n  scale removed: model.layers.2.self_attn.v_scale\n  \
         scale changed: model.layers.0.self_attn.k_scale"
    );
}

#[test]
fn comparison_serializes_with_a_tagged_verdict() {
    let base = base_model();
    let mut scaled = base.clone();
    scaled.extend(per_head_scales());
    let cmp = verdict_of(&base, single_file_dir(&scaled).path());
    let json = serde_json::to_value(&cmp).unwrap();
    assert_eq!(json["verdict"]["kind"], "weights_identical_scales_added");
    assert_eq!(json["verdict"]["count"], 6);

    use ts_rs::TS;
    let decl = <WeightsVerdict as TS>::decl(&kvgate_core::ts_config());
    assert!(decl.contains("\"kind\": \"weights_differ\""), "{decl}");
    assert!(decl.contains("count: number"), "{decl}");
}
