//! Engine warm-up kept apart from prefix-cache warm-up (the guide: "separate engine warm-up from
//! prefix-cache warm-up"). A run's warm-up requests are corpus items that are not then measured:
//! sending a measured item first would leave its prompt in the server's prefix cache, so its
//! measured request would start warm while the others start cold.

use std::collections::BTreeSet;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::prng::SplitMix64;

/// The warm-up of one run, as recorded in its configuration (`warmup`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
pub struct WarmupPlan {
    /// Warm-up requests asked for.
    pub requested: u32,
    /// The items sent as warm-up, in the order sent: never one of the measured items.
    pub items: Vec<String>,
    /// Why fewer items than asked for are sent, when that is so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub shortfall: Option<String>,
}

/// Draws `requested` warm-up items from the corpus items outside the measured set, in an order
/// drawn from `seed`. When the corpus has fewer such items, fewer are sent and `shortfall` says
/// why: a measured item is never used to warm up.
pub fn plan_warmup(
    corpus: &[String],
    measured: &[String],
    requested: u32,
    seed: u64,
) -> WarmupPlan {
    let measured: BTreeSet<&str> = measured.iter().map(String::as_str).collect();
    let mut spare: Vec<&String> = corpus
        .iter()
        .filter(|id| !measured.contains(id.as_str()))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    SplitMix64::from_label(&format!("warmup/{seed}")).shuffle(&mut spare);
    let items: Vec<String> = spare
        .into_iter()
        .take(requested as usize)
        .cloned()
        .collect();
    let shortfall = (items.len() < requested as usize).then(|| {
        format!(
            "{requested} warm-up request(s) asked for, {} corpus item(s) outside the measured set: \
             {} sent (a measured item is never sent as warm-up)",
            items.len(),
            items.len()
        )
    });
    WarmupPlan {
        requested,
        items,
        shortfall,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("item-{i:02}")).collect()
    }

    #[test]
    fn warm_up_items_are_never_measured_items() {
        let corpus = ids(30);
        for seed in 0..50 {
            // Measured: every item but three, in a seed-dependent choice.
            let mut measured = corpus.clone();
            SplitMix64::new(seed).shuffle(&mut measured);
            measured.truncate(27);
            let plan = plan_warmup(&corpus, &measured, 2, seed);
            assert_eq!(plan.items.len(), 2);
            assert_eq!(plan.shortfall, None);
            for id in &plan.items {
                assert!(!measured.contains(id), "seed {seed}: {id} is measured");
                assert!(corpus.contains(id));
            }
        }
    }

    #[test]
    fn a_corpus_with_nothing_left_over_sends_no_warm_up_and_says_why() {
        let corpus = ids(8);
        let plan = plan_warmup(&corpus, &corpus, 1, 7);
        assert!(plan.items.is_empty());
        let why = plan.shortfall.expect("the shortfall is named");
        assert!(why.contains("never sent as warm-up"), "{why}");
        // One left over, two asked for: one sent, the shortfall named.
        let plan = plan_warmup(&corpus, &corpus[1..], 2, 7);
        assert_eq!(plan.items, ["item-00"]);
        assert!(plan.shortfall.is_some());
        // None asked for: none sent, nothing short.
        let plan = plan_warmup(&corpus, &corpus[..2], 0, 7);
        assert_eq!((plan.items.len(), plan.shortfall), (0, None));
    }

    #[test]
    fn the_draw_is_seeded_and_ignores_duplicates_and_corpus_order() {
        let corpus = ids(20);
        let measured = &corpus[..10];
        let a = plan_warmup(&corpus, measured, 3, 11);
        let mut shuffled = corpus.clone();
        shuffled.reverse();
        shuffled.push(corpus[15].clone());
        assert_eq!(plan_warmup(&shuffled, measured, 3, 11), a);
        let distinct: BTreeSet<&String> = a.items.iter().collect();
        assert_eq!(distinct.len(), 3);
        // Another seed draws other items (for some seed: the draw is not fixed).
        assert!((0..20).any(|s| plan_warmup(&corpus, measured, 3, s).items != a.items));
    }

    #[test]
    fn the_plan_serializes_as_the_run_config_records_it() {
        let plan = plan_warmup(&ids(3), &ids(2), 1, 1);
        let v = serde_json::to_value(&plan).unwrap();
        assert_eq!(v, serde_json::json!({"requested": 1, "items": ["item-02"]}));
    }
}
