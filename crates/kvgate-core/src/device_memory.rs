//! Allocated device memory as the engine reported it at startup, kept beside its usable KV
//! capacity: a smaller KV representation can leave the reserved pool flat while it stores more
//! tokens, so neither figure alone says whether capacity improved (the seed's memory boundary).
//!
//! Every figure is in MiB and absent when the log does not state it, never 0.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// One engine start's memory split into weights, live state and reserved working memory.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct DeviceMemory {
    /// Model weights: vLLM `Model loading took X GiB`; llama.cpp the sum of its `model buffer
    /// size` lines (every device and repacked copy). Under vLLM tensor parallelism, one worker's
    /// share.
    pub weights_mib: Option<f64>,
    /// The KV cache: vLLM `Available KV cache memory: X GiB` (the pool reserved for it);
    /// llama.cpp the sum of its `KV buffer size` lines.
    pub kv_cache_mib: Option<f64>,
    /// vLLM CUDA graphs: `Graph capturing finished in N secs, took X GiB`.
    pub cuda_graph_mib: Option<f64>,
    /// llama.cpp recurrent state of hybrid models (`RS buffer size`): live state beside the KV.
    pub recurrent_state_mib: Option<f64>,
    /// llama.cpp working memory: the sum of its `compute buffer size` and `output buffer size`
    /// lines.
    pub compute_mib: Option<f64>,
    /// Where each figure was read, e.g. `weights_mib: run 3, startup log line 23`.
    pub sources: Vec<String>,
    /// Figures a later run of the cell states differently from the one shown, e.g.
    /// `kv_cache_mib: run 7 states 23.91 MiB, not 45`; empty when the runs agree.
    #[serde(default)]
    pub differences: Vec<String>,
}

impl DeviceMemory {
    /// Whether no figure was read.
    pub fn is_empty(&self) -> bool {
        self.weights_mib.is_none()
            && self.kv_cache_mib.is_none()
            && self.cuda_graph_mib.is_none()
            && self.recurrent_state_mib.is_none()
            && self.compute_mib.is_none()
    }

    /// The sum of the figures the log states, and how many of the five it states: a total over
    /// fewer parts is a lower bound, said so by the count.
    pub fn stated_total_mib(&self) -> Option<(f64, usize)> {
        let parts: Vec<f64> = [
            self.weights_mib,
            self.kv_cache_mib,
            self.cuda_graph_mib,
            self.recurrent_state_mib,
            self.compute_mib,
        ]
        .into_iter()
        .flatten()
        .collect();
        if parts.is_empty() {
            return None;
        }
        let sum: f64 = parts.iter().sum();
        Some(((sum * 100.0).round() / 100.0, parts.len()))
    }

    /// One line for people: each stated figure in MiB or GiB, then the parts the log left
    /// unstated, e.g. `weights 92.10 MiB · KV cache 45.00 MiB · compute 16.83 MiB (not stated:
    /// CUDA graphs, recurrent state)`.
    pub fn describe(&self) -> String {
        let parts = [
            ("weights", self.weights_mib),
            ("KV cache", self.kv_cache_mib),
            ("CUDA graphs", self.cuda_graph_mib),
            ("recurrent state", self.recurrent_state_mib),
            ("compute", self.compute_mib),
        ];
        let stated: Vec<String> = parts
            .iter()
            .filter_map(|(name, v)| v.map(|v| format!("{name} {}", size_mib(v))))
            .collect();
        let absent: Vec<&str> = parts
            .iter()
            .filter(|(_, v)| v.is_none())
            .map(|(name, _)| *name)
            .collect();
        if stated.is_empty() {
            return "not stated by any startup log".to_owned();
        }
        let mut line = stated.join(" · ");
        if !absent.is_empty() {
            line.push_str(&format!(" (not stated: {})", absent.join(", ")));
        }
        line
    }

    /// Folds in the memory of another run of the same cell: a figure this side lacks is taken
    /// from it (with its sources); a figure both state is kept from the first run, and a later
    /// run that differs is named in `differences` so the cell never shows one run's figure as all.
    pub fn fold(&mut self, run_id: i64, other: DeviceMemory) {
        let fields: [(&str, &mut Option<f64>, Option<f64>); 5] = [
            ("weights_mib", &mut self.weights_mib, other.weights_mib),
            ("kv_cache_mib", &mut self.kv_cache_mib, other.kv_cache_mib),
            (
                "cuda_graph_mib",
                &mut self.cuda_graph_mib,
                other.cuda_graph_mib,
            ),
            (
                "recurrent_state_mib",
                &mut self.recurrent_state_mib,
                other.recurrent_state_mib,
            ),
            ("compute_mib", &mut self.compute_mib, other.compute_mib),
        ];
        for (name, mine, theirs) in fields {
            match (*mine, theirs) {
                (None, Some(v)) => {
                    *mine = Some(v);
                    self.sources.extend(
                        other
                            .sources
                            .iter()
                            .filter(|s| s.starts_with(&format!("{name}:")))
                            .map(|s| s.replacen(": ", &format!(": run {run_id}, "), 1)),
                    );
                }
                (Some(a), Some(b)) if (a - b).abs() > 0.005 => self
                    .differences
                    .push(format!("{name}: run {run_id} states {b} MiB, not {a}")),
                _ => {}
            }
        }
    }
}

/// `92.10 MiB`, or `14.25 GiB` from 1024 MiB on (two decimals, as the engines print them).
pub fn size_mib(mib: f64) -> String {
    if mib.abs() >= 1024.0 {
        format!("{:.2} GiB", mib / 1024.0)
    } else {
        format!("{mib:.2} MiB")
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn the_line_for_people_names_what_the_log_did_not_state() {
        let m = DeviceMemory {
            weights_mib: Some(14590.77),
            kv_cache_mib: Some(5130.24),
            cuda_graph_mib: Some(512.0),
            ..DeviceMemory::default()
        };
        assert_eq!(
            m.describe(),
            "weights 14.25 GiB · KV cache 5.01 GiB · CUDA graphs 512.00 MiB \
             (not stated: recurrent state, compute)"
        );
        assert_eq!(
            DeviceMemory::default().describe(),
            "not stated by any startup log"
        );
        // 1023.99 MiB stays in MiB; exactly 1024 is 1.00 GiB.
        assert_eq!(size_mib(1023.99), "1023.99 MiB");
        assert_eq!(size_mib(1024.0), "1.00 GiB");
    }
    use super::*;

    fn memory(weights: Option<f64>, kv: Option<f64>) -> DeviceMemory {
        DeviceMemory {
            weights_mib: weights,
            kv_cache_mib: kv,
            sources: [
                weights.map(|_| "weights_mib: startup log line 4".to_owned()),
                kv.map(|_| "kv_cache_mib: startup log line 9".to_owned()),
            ]
            .into_iter()
            .flatten()
            .collect(),
            ..DeviceMemory::default()
        }
    }

    #[test]
    fn a_total_over_fewer_parts_says_how_many() {
        assert_eq!(DeviceMemory::default().stated_total_mib(), None);
        assert!(DeviceMemory::default().is_empty());
        // 462.96 + 28.05 weights (two model buffers summed upstream) and 24.00 KV.
        let m = memory(Some(491.01), Some(24.0));
        assert_eq!(m.stated_total_mib(), Some((515.01, 2)));
        // A stated 0 is a figure, not absence: it counts as a part.
        let zero = DeviceMemory {
            cuda_graph_mib: Some(0.0),
            ..DeviceMemory::default()
        };
        assert!(!zero.is_empty());
        assert_eq!(zero.stated_total_mib(), Some((0.0, 1)));
    }

    #[test]
    fn folding_runs_fills_gaps_keeps_the_first_and_names_a_difference() {
        let mut cell = DeviceMemory::default();
        cell.fold(1, memory(None, Some(45.0)));
        cell.fold(7, memory(Some(92.1), Some(23.91)));
        // The weights came from run 7, and its source says so; the KV figure stays run 1's.
        assert_eq!(cell.weights_mib, Some(92.1));
        assert_eq!(cell.kv_cache_mib, Some(45.0));
        assert_eq!(
            cell.sources,
            vec![
                "kv_cache_mib: run 1, startup log line 9",
                "weights_mib: run 7, startup log line 4"
            ]
        );
        assert_eq!(
            cell.differences,
            vec!["kv_cache_mib: run 7 states 23.91 MiB, not 45"]
        );
        // The same figure again (to the two decimals printed) is no difference.
        cell.fold(8, memory(Some(92.1), Some(45.0)));
        assert_eq!(cell.differences.len(), 1);
    }
}
