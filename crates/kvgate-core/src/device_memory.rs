//! Allocated device memory as the engine reported it at startup, kept beside its usable KV
//! capacity: a smaller KV representation can leave the reserved pool flat while it stores more
//! tokens, so neither figure alone says whether capacity improved (the seed's memory boundary).
//!
//! Beside them, the memory nvidia-smi saw allocated on the GPUs (an imported `--format=csv` file):
//! a flat allocated reading does not disprove a capacity improvement either, since engines reserve
//! a similar pool whatever the KV dtype and store more tokens in it.
//!
//! Every figure is in MiB and absent when the log (or file) does not state it, never 0.

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
    /// Allocated device memory read by nvidia-smi: the highest `memory.used` of each GPU of the
    /// imported file, summed over its GPUs. Each GPU's peak may fall at another sample, so this
    /// bounds the simultaneous total from above; engines hold their pool from startup on, so the
    /// peaks differ little. Absent when no nvidia-smi file was imported for the cell.
    #[serde(default)]
    pub allocated_mib: Option<f64>,
    /// How many GPUs `allocated_mib` sums (those with at least one `memory.used` reading).
    #[serde(default)]
    pub allocated_gpus: Option<u32>,
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
            && self.allocated_mib.is_none()
    }

    /// The sum of the figures the log states, and how many of the five it states: a total over
    /// fewer parts is a lower bound, said so by the count. nvidia-smi's allocated reading is
    /// another measure of the same memory, never a part of this sum.
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
    /// CUDA graphs, recurrent state)`, then nvidia-smi's reading when one was imported:
    /// `· allocated (nvidia-smi) 61.20 GiB over 1 GPU`.
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
        let allocated = self.allocated_mib.map(|mib| {
            let gpus = self.allocated_gpus.unwrap_or(0);
            let plural = if gpus == 1 { "" } else { "s" };
            format!(
                "allocated (nvidia-smi) {} over {gpus} GPU{plural}",
                size_mib(mib)
            )
        });
        match (stated.is_empty(), allocated) {
            (true, None) => "not stated by any startup log".to_owned(),
            (true, Some(allocated)) => format!("{allocated} (no startup log states its parts)"),
            (false, allocated) => {
                let mut line = stated.join(" · ");
                if !absent.is_empty() {
                    line.push_str(&format!(" (not stated: {})", absent.join(", ")));
                }
                if let Some(allocated) = allocated {
                    line.push_str(&format!(" · {allocated}"));
                }
                line
            }
        }
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
        // The allocated reading and its GPU count come from one file: taken or kept together.
        match (self.allocated_mib, other.allocated_mib) {
            (None, Some(v)) => {
                self.allocated_mib = Some(v);
                self.allocated_gpus = other.allocated_gpus;
                self.sources.extend(
                    other
                        .sources
                        .iter()
                        .filter(|s| s.starts_with("allocated_mib:"))
                        .map(|s| s.replacen(": ", &format!(": run {run_id}, "), 1)),
                );
            }
            (Some(a), Some(b)) if (a - b).abs() > 0.005 => self.differences.push(format!(
                "allocated_mib: run {run_id} states {b} MiB, not {a}"
            )),
            _ => {}
        }
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
    fn the_allocated_reading_is_shown_beside_the_parts_never_added_to_them() {
        // 62670 + 62001 MiB over two GPUs = 124671 MiB = 121.75 GiB (124671 / 1024 = 121.749…).
        let m = DeviceMemory {
            kv_cache_mib: Some(5130.24),
            allocated_mib: Some(124671.0),
            allocated_gpus: Some(2),
            ..DeviceMemory::default()
        };
        assert_eq!(
            m.describe(),
            "KV cache 5.01 GiB (not stated: weights, CUDA graphs, recurrent state, compute) \
             · allocated (nvidia-smi) 121.75 GiB over 2 GPUs"
        );
        assert_eq!(m.stated_total_mib(), Some((5130.24, 1)));
        // 62668.8 MiB / 1024 = 61.20 GiB, one GPU, no startup log.
        let alone = DeviceMemory {
            allocated_mib: Some(62668.8),
            allocated_gpus: Some(1),
            ..DeviceMemory::default()
        };
        assert!(!alone.is_empty());
        assert_eq!(alone.stated_total_mib(), None);
        assert_eq!(
            alone.describe(),
            "allocated (nvidia-smi) 61.20 GiB over 1 GPU (no startup log states its parts)"
        );
    }

    #[test]
    fn folding_keeps_the_first_allocated_reading_with_its_gpu_count() {
        let smi = |mib: f64, gpus: u32| DeviceMemory {
            allocated_mib: Some(mib),
            allocated_gpus: Some(gpus),
            sources: vec!["allocated_mib: nvidia-smi smi.csv".to_owned()],
            ..DeviceMemory::default()
        };
        let mut cell = memory(Some(92.1), None);
        cell.fold(4, smi(124671.0, 2));
        cell.fold(9, smi(62000.0, 1));
        assert_eq!(cell.allocated_mib, Some(124671.0));
        assert_eq!(cell.allocated_gpus, Some(2));
        assert!(cell
            .sources
            .contains(&"allocated_mib: run 4, nvidia-smi smi.csv".to_owned()));
        assert_eq!(
            cell.differences,
            vec!["allocated_mib: run 9 states 62000 MiB, not 124671"]
        );
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
