//! Digests of safetensors checkpoints: per-tensor hashes, the canonical weights digest, scales.

use kvgate_core::manifest::ScaleGranularity;
use kvgate_formats::weights::{CheckpointFormat, ScaleKind, WEIGHTS_DIGEST_SCHEME};
use sha2::{Digest, Sha256};

use crate::checkpoint::*;

fn sha_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[test]
fn per_tensor_digests_hash_exactly_the_tensor_bytes() {
    let model = base_model();
    let dir = single_file_dir(&model);
    let d = digest(dir.path());
    assert_eq!(d.format, CheckpointFormat::Safetensors);
    assert_eq!(d.files, vec!["model.safetensors".to_string()]);
    assert_eq!(d.weight_tensor_count as usize, model.len());
    assert_eq!(d.scale_tensor_count, 0);
    assert_eq!(d.scales_digest, None);
    assert_eq!(d.scale_granularity, None);
    assert_eq!(
        d.weight_bytes,
        model.iter().map(|t| t.data.len() as u64).sum::<u64>()
    );
    for t in &model {
        let got = d.tensors.iter().find(|g| g.name == t.name).unwrap();
        assert_eq!(got.dtype, "BF16");
        assert_eq!(got.shape, t.shape);
        assert_eq!(got.bytes, t.data.len() as u64);
        assert_eq!(got.sha256, sha_hex(&t.data), "{}", t.name);
    }
    let names: Vec<&str> = d.tensors.iter().map(|t| t.name.as_str()).collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted, "weight tensors are listed sorted by name");
}

#[test]
fn weights_digest_is_the_documented_canonical_serialization() {
    let model = base_model();
    let dir = single_file_dir(&model);
    let d = digest(dir.path());
    let mut lines: Vec<String> = model
        .iter()
        .map(|t| {
            let dims: Vec<String> = t.shape.iter().map(|x| x.to_string()).collect();
            format!(
                "{}\tBF16\t[{}]\t{}\n",
                t.name,
                dims.join(","),
                sha_hex(&t.data)
            )
        })
        .collect();
    lines.sort();
    let text = format!("{WEIGHTS_DIGEST_SCHEME}\n{}", lines.concat());
    assert_eq!(d.weights_digest, sha_hex(text.as_bytes()));
    assert_eq!(d.digest_scheme, "kvgate-weights-v1");
    assert!(kvgate_core::canonical::is_sha256_hex(&d.weights_digest));
}

#[test]
fn per_tensor_scales_are_found_with_layer_kind_granularity_and_range() {
    let mut model = base_model();
    model.extend(per_tensor_scales());
    let dir = single_file_dir(&model);
    let d = digest(dir.path());
    assert_eq!(d.scale_tensor_count, 2 * LAYERS as u64);
    assert_eq!(d.weight_tensor_count as usize, base_model().len());
    assert_eq!(d.scale_granularity, Some(ScaleGranularity::PerTensor));
    assert_eq!(d.scale_bytes, 4 * 2 * LAYERS as u64);
    assert!(d.scales_digest.is_some());

    let k2 = d
        .scale_tensors
        .iter()
        .find(|s| s.tensor.name == "model.layers.2.self_attn.k_scale")
        .unwrap();
    assert_eq!(k2.kind, ScaleKind::K);
    assert_eq!(k2.layer, Some(2));
    assert_eq!(k2.pattern, "*.k_scale");
    assert_eq!(k2.granularity, Some(ScaleGranularity::PerTensor));
    assert_eq!(k2.tensor.dtype, "F32");
    assert_eq!(
        (k2.min, k2.max, k2.non_finite),
        (Some(2.25), Some(2.25), Some(0))
    );
    let v0 = d
        .scale_tensors
        .iter()
        .find(|s| s.tensor.name == "model.layers.0.self_attn.v_scale")
        .unwrap();
    assert_eq!((v0.kind, v0.layer), (ScaleKind::V, Some(0)));
    assert_eq!((v0.min, v0.max), (Some(0.5), Some(0.5)));
    assert!(d.tensors.iter().all(|t| !t.name.ends_with("_scale")));
}

#[test]
fn per_head_scales_report_per_head_granularity_and_value_range() {
    let mut model = base_model();
    model.extend(per_head_scales());
    let dir = single_file_dir(&model);
    let d = digest(dir.path());
    assert_eq!(d.scale_granularity, Some(ScaleGranularity::PerHead));
    let k = &d.scale_tensors[0];
    assert_eq!(k.tensor.shape, vec![KV_HEADS]);
    assert_eq!(k.tensor.dtype, "BF16");
    assert_eq!(k.granularity, Some(ScaleGranularity::PerHead));
    assert_eq!((k.min, k.max), (Some(0.125), Some(2.0)));
}

#[test]
fn mixed_granularity_leaves_the_summary_absent() {
    let mut model = base_model();
    model.extend(
        per_tensor_scales()
            .into_iter()
            .filter(|t| t.name.contains("k_scale")),
    );
    model.extend(
        per_head_scales()
            .into_iter()
            .filter(|t| t.name.contains("v_scale")),
    );
    let d = digest(single_file_dir(&model).path());
    assert_eq!(d.scale_tensor_count, 2 * LAYERS as u64);
    assert_eq!(d.scale_granularity, None);
}

#[test]
fn weight_quantization_scales_stay_in_the_weights_digest() {
    let mut model = base_model();
    let base = digest(single_file_dir(&model).path());
    model.push(Tensor::f32(
        "model.layers.0.self_attn.k_proj.weight_scale",
        &[],
        &[0.01],
    ));
    model.push(Tensor::f32(
        "model.layers.0.self_attn.k_proj.input_scale",
        &[],
        &[0.02],
    ));
    let quantized = digest(single_file_dir(&model).path());
    assert_eq!(quantized.scale_tensor_count, 0);
    assert_eq!(quantized.weight_tensor_count, base.weight_tensor_count + 2);
    assert_ne!(quantized.weights_digest, base.weights_digest);
}

#[test]
fn non_finite_scale_values_are_counted() {
    let mut model = base_model();
    model.push(Tensor::f32(
        "model.layers.0.self_attn.k_scale",
        &[3],
        &[0.5, f32::NAN, f32::INFINITY],
    ));
    let d = digest(single_file_dir(&model).path());
    let s = &d.scale_tensors[0];
    assert_eq!(
        (s.min, s.max, s.non_finite),
        (Some(0.5), Some(0.5), Some(2))
    );
}

#[test]
fn scale_digest_json_exports_to_typescript_and_schema() {
    let mut model = base_model();
    model.extend(per_tensor_scales());
    let d = digest(single_file_dir(&model).path());
    let json = serde_json::to_value(&d).unwrap();
    assert_eq!(json["format"], "safetensors");
    assert_eq!(json["scale_granularity"], "per_tensor");
    let scale = &json["scale_tensors"][0];
    assert_eq!(scale["name"], "model.layers.0.self_attn.k_scale");
    assert_eq!(scale["kind"], "k");
    assert_eq!(scale["layer"], 0);
    assert_eq!(scale["min"], 0.25);

    use ts_rs::TS;
    let cfg = kvgate_core::ts_config();
    let decl = <kvgate_formats::weights::CheckpointDigest as TS>::decl(&cfg);
    assert!(decl.contains("weight_bytes: number"), "{decl}");
    let tensor = <kvgate_formats::weights::TensorDigest as TS>::decl(&cfg);
    assert!(tensor.contains("shape: Array<number>"), "{tensor}");
    let scale = <kvgate_formats::weights::ScaleTensor as TS>::decl(&cfg);
    assert!(scale.contains("layer?: number"), "{scale}");
    assert!(scale.contains("non_finite?: number"), "{scale}");
    assert!(scale.contains("bytes: number"), "{scale}");
    let schema = serde_json::to_value(schemars::schema_for!(
        kvgate_formats::weights::CheckpointDigest
    ))
    .unwrap();
    assert!(
        schema["properties"]["weights_digest"].is_object(),
        "{schema}"
    );
}
