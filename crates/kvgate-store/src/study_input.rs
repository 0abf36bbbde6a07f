//! Loads a study's stored runs, evidence and measured requests into the analysis input of
//! `kvgate-core` (which decides everything from it).
//!
//! Cells are the study's frozen manifests; what their evidence decides (the invalid-cell rule,
//! the capacity roll-up) is `kvgate_core::evidence`. Runs still in progress are left out; every
//! other run, whatever its end, counts.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// FNV-1a, 64 bit.
struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }
}

use crate::{RunState, Store, StoreError};
use kvgate_core::analysis::{CapacityEvidence, CellInput, RequestRow, RunInput, StudyInput};
use kvgate_core::evidence::{CellEvidence, EvidenceKind};
use kvgate_core::policy::ItemStrata;
use kvgate_core::test_cell::TestCell;
use serde_json::Value;

/// Why a study could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("manifest of cell `{cell}`: {reason}")]
    Manifest { cell: String, reason: String },
}

/// Reads every frozen cell of a study with its finished runs, evidence and measured requests.
pub async fn load_study(store: &Store, study_id: i64) -> Result<StudyInput, LoadError> {
    let manifests = store.list_manifests(study_id).await?;
    let runs = store.list_runs(study_id).await?;
    let mut cells: Vec<CellInput> = Vec::new();
    let mut cell_of_manifest: HashMap<i64, usize> = HashMap::new();
    for m in manifests.iter().filter(|m| m.is_frozen()) {
        let test_cell = TestCell::from_name(&m.cell).map_err(|e| LoadError::Manifest {
            cell: m.cell.clone(),
            reason: e.to_string(),
        })?;
        cell_of_manifest.insert(m.id, cells.len());
        cells.push(CellInput {
            cell: m.cell.clone(),
            test_cell,
            manifest_sha256: m.digest.clone().unwrap_or_default(),
            invalid_reasons: Vec::new(),
            runs: Vec::new(),
            capacity: CapacityEvidence::default(),
        });
    }
    let mut evidence: Vec<CellEvidence> = cells.iter().map(|_| CellEvidence::default()).collect();
    let mut run_slot: HashMap<i64, (usize, usize)> = HashMap::new();
    for run in runs.iter().filter(|r| r.state != RunState::Running) {
        let Some(&ci) = cell_of_manifest.get(&run.manifest_id) else {
            continue;
        };
        let cell = &mut cells[ci];
        for e in store.run_evidence(run.id).await? {
            // Kinds this version does not know carry nothing for the analysis.
            if let Some(kind) = EvidenceKind::parse(&e.kind) {
                evidence[ci].absorb(cell, run.id, kind, &e.source_name, &e.text);
            }
        }
        let kind = run.kind;
        run_slot.insert(run.id, (ci, cell.runs.len()));
        // Imports record whether their rows sit on one clock; KV Gate's own runs always do.
        let clocked = serde_json::from_str::<Value>(&run.config_json)
            .ok()
            .and_then(|c| c["import"]["clocked"].as_bool())
            .unwrap_or(true);
        cell.runs.push(RunInput {
            run_id: run.id,
            kind,
            clocked,
            requests: Vec::new(),
        });
    }
    for (cell, evidence) in cells.iter_mut().zip(evidence) {
        evidence.close(cell);
    }
    let mut items: Vec<(String, Option<ItemStrata>)> = Vec::new();
    // Item ids repeat once per cell and pass: looked up by the borrowed row text, hashed with
    // FNV-1a (ids are short and not attacker-chosen keys of a long-lived table).
    let mut item_index: HashMap<String, u32, BuildHasherDefault<Fnv>> = HashMap::default();
    let mut last: Option<(i64, usize, usize)> = None;
    store
        .for_each_measured_request(study_id, |q| {
            let slot = match last {
                Some((id, ci, ri)) if id == q.run_id => Some((ci, ri)),
                _ => run_slot.get(&q.run_id).copied(),
            };
            let Some((ci, ri)) = slot else { return };
            last = Some((q.run_id, ci, ri));
            let item = q.item_id.map(|id| match item_index.get(id) {
                Some(&i) => i,
                None => {
                    let i = items.len() as u32;
                    items.push((id.to_owned(), ItemStrata::from_item_id(id)));
                    item_index.insert(id.to_owned(), i);
                    i
                }
            });
            cells[ci].runs[ri].requests.push(RequestRow {
                item,
                repeat: q.repeat,
                status: q.status,
                planned_ms: q.planned_arrival_ms,
                dispatch_ms: q.dispatch_ms,
                first_token_ms: q.first_token_ms,
                finish_ms: q.finish_ms,
                prompt_tokens: q.prompt_tokens,
                completion_tokens: q.completion_tokens,
                accepted: q.accepted,
            });
        })
        .await?;
    Ok(StudyInput { items, cells })
}
