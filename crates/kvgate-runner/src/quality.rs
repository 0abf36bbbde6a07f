//! The order of a quality run: every item once per repeat, each repeat in its own shuffled
//! order, reproducible from the seed recorded with the run.

use kvgate_core::prng::SplitMix64;

/// `(repeat, item_id)` pairs: repeat 0 first (all items, shuffled), then repeat 1 (shuffled
/// again), … Blocks per repeat keep every repeat a complete pass for repeated-run variation.
pub fn quality_order(items: &[String], repeats: u32, seed: u64) -> Vec<(u32, String)> {
    let mut g = SplitMix64::new(seed);
    let mut out = Vec::with_capacity(items.len() * repeats as usize);
    let mut order: Vec<usize> = (0..items.len()).collect();
    for repeat in 0..repeats {
        g.shuffle(&mut order);
        out.extend(order.iter().map(|&i| (repeat, items[i].clone())));
    }
    out
}

/// The chat request body for one fixture item under a cell's manifest (one function for the
/// runner and for the prompt digest the analysis recomputes, see `kvgate_core::pairing`).
pub use kvgate_core::pairing::chat_body;

#[cfg(test)]
mod tests {
    use super::*;
    use kvgate_core::fixtures::FixtureItem;
    use kvgate_core::manifest::Manifest;
    use serde_json::json;

    fn manifest() -> Manifest {
        let text = include_str!("../../../fixtures/manifests/smollm2-135m-cpu-q8.json");
        Manifest::from_json(text).expect("the fixture manifest parses")
    }

    #[test]
    fn quality_order_is_complete_per_repeat_and_seeded() {
        let items: Vec<String> = (0..10).map(|i| format!("i{i}")).collect();
        let a = quality_order(&items, 3, 7);
        assert_eq!(a.len(), 30);
        for repeat in 0..3 {
            let mut ids: Vec<&String> = a
                .iter()
                .filter(|(r, _)| *r == repeat)
                .map(|(_, id)| id)
                .collect();
            ids.sort();
            assert_eq!(ids, items.iter().collect::<Vec<_>>());
        }
        assert_eq!(a, quality_order(&items, 3, 7));
        assert_ne!(a, quality_order(&items, 3, 8));
    }

    #[test]
    fn chat_body_carries_manifest_decoding_and_cap() {
        let mut m = manifest();
        m.decoding.top_k = Some(1);
        m.stopping.stop = vec!["</s>".into()];
        let item = FixtureItem {
            messages: vec![kvgate_core::fixtures::ChatMessage {
                role: kvgate_core::fixtures::Role::User,
                content: "Which torque?".into(),
            }],
            ..sample_item()
        };
        let body = chat_body(&item, &m);
        assert_eq!(body["max_tokens"], 256);
        assert_eq!(body["temperature"], 0.0);
        assert_eq!(body["top_k"], 1);
        assert_eq!(body["stop"], json!(["</s>"]));
        assert!(body.get("top_p").is_none(), "absent stays absent: {body}");
        assert_eq!(body["messages"][0]["role"], "user");
        assert_eq!(body["messages"][0]["content"], "Which torque?");
    }

    fn sample_item() -> FixtureItem {
        let text = include_str!("../tests/data/one-item.json");
        serde_json::from_str(text).expect("the sample item parses")
    }
}
