//! The order of a quality run: every item once per repeat, each repeat in its own shuffled
//! order, reproducible from the seed recorded with the run.

use crate::prng::SplitMix64;

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
