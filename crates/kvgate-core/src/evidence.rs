//! The evidence a run keeps about the engine it talked to, and what a cell's evidence decides:
//! the invalid-cell rule (no compatibility evidence, or evidence showing a problem, means the
//! cell gets no score) and the roll-up of the engine's KV capacity and load figures.
//!
//! Pure: the store keeps each piece as text under its [`EvidenceKind`]; the analysis loader
//! hands those texts here.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::analysis::CellInput;
use crate::compat::{CellValidity, ObservedEngine};
use crate::metrics::{CanonicalMetric, MetricSummary};

/// What a stored piece of run evidence is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, TS, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EvidenceKind {
    /// An engine startup log, verbatim.
    StartupLog,
    /// The `vllm:cache_config_info` lines of a scrape, verbatim.
    CacheConfigInfo,
    /// A [`MetricSummary`] of the run's scrapes, as JSON.
    Metrics,
    /// A [`CompatibilityRecord`], as JSON.
    Compatibility,
}

impl EvidenceKind {
    pub const ALL: [EvidenceKind; 4] = [
        EvidenceKind::StartupLog,
        EvidenceKind::CacheConfigInfo,
        EvidenceKind::Metrics,
        EvidenceKind::Compatibility,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            EvidenceKind::StartupLog => "startup_log",
            EvidenceKind::CacheConfigInfo => "cache_config_info",
            EvidenceKind::Metrics => "metrics",
            EvidenceKind::Compatibility => "compatibility",
        }
    }

    pub fn parse(s: &str) -> Option<EvidenceKind> {
        Self::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

/// A run's compatibility evidence as stored: what the engine showed (absent when nothing did)
/// and the check of it against the cell's manifest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct CompatibilityRecord {
    pub observed: Option<ObservedEngine>,
    pub validity: CellValidity,
}

impl CompatibilityRecord {
    /// The stored text: keys sorted at every level (through a JSON value), the form runs have
    /// always been stored in, so the same check gives the same bytes and sha256.
    pub fn to_text(&self) -> String {
        serde_json::to_value(self)
            .and_then(|v| serde_json::to_string(&v))
            .unwrap_or_default()
    }

    pub fn from_text(text: &str) -> Result<CompatibilityRecord, String> {
        serde_json::from_str(text).map_err(|e| e.to_string())
    }
}

/// Folds the cell's evidence in, run by run, then closes it with [`CellEvidence::close`].
#[derive(Debug, Default)]
pub struct CellEvidence {
    compatibility_seen: bool,
}

impl CellEvidence {
    /// One stored piece of evidence of run `run_id`: a compatibility problem makes the cell
    /// invalid (named with the run); the engine's KV capacity and the scrapes' load figures
    /// roll up into the cell's capacity evidence. Other kinds carry nothing for the analysis.
    pub fn absorb(
        &mut self,
        cell: &mut CellInput,
        run_id: i64,
        kind: EvidenceKind,
        source_name: &str,
        text: &str,
    ) {
        match kind {
            EvidenceKind::Compatibility => match CompatibilityRecord::from_text(text) {
                Ok(record) => {
                    self.compatibility_seen = true;
                    for p in record.validity.problems {
                        let reason = format!("run {run_id}: {p}");
                        if !cell.invalid_reasons.contains(&reason) {
                            cell.invalid_reasons.push(reason);
                        }
                    }
                    if let Some(observed) = record.observed {
                        let cap = &mut cell.capacity;
                        cap.engine_kv_tokens = cap.engine_kv_tokens.or(observed.kv_cache_tokens);
                        cap.engine_kv_mib = cap.engine_kv_mib.or(observed.kv_cache_mib);
                    }
                }
                Err(err) => cell.invalid_reasons.push(format!(
                    "run {run_id}: compatibility evidence {source_name} cannot be read: {err}"
                )),
            },
            EvidenceKind::Metrics => {
                let Ok(summary) = serde_json::from_str::<MetricSummary>(text) else {
                    return;
                };
                let cap = &mut cell.capacity;
                let gauge = |m| summary.gauges.get(&m).map(|g| g.max);
                cap.kv_usage_max = max_opt(cap.kv_usage_max, gauge(CanonicalMetric::KvCacheUsage));
                cap.waiting_max = max_opt(cap.waiting_max, gauge(CanonicalMetric::RequestsWaiting));
                cap.running_max = max_opt(cap.running_max, gauge(CanonicalMetric::RequestsRunning));
                if let Some(inc) = summary
                    .counters
                    .get(&CanonicalMetric::PreemptionsTotal)
                    .and_then(|c| c.increase)
                {
                    cap.preemptions_delta = Some(cap.preemptions_delta.unwrap_or(0.0) + inc);
                }
                if !cap.runs.contains(&run_id) {
                    cap.runs.push(run_id);
                }
            }
            EvidenceKind::StartupLog | EvidenceKind::CacheConfigInfo => {}
        }
    }

    /// After every run: a cell that no run gave compatibility evidence is invalid.
    pub fn close(self, cell: &mut CellInput) {
        if !self.compatibility_seen && cell.invalid_reasons.is_empty() {
            cell.invalid_reasons.push(
                "invalid — compatibility evidence missing: no run of this cell carries startup evidence"
                    .into(),
            );
        }
    }
}

fn max_opt(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.max(y)),
        (x, None) => x,
        (None, y) => y,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::CapacityEvidence;
    use crate::compat::CompatProblem;
    use crate::test_cell::TestCell;

    fn cell() -> CellInput {
        CellInput {
            cell: "C1".into(),
            test_cell: TestCell::from_name("C1").unwrap(),
            manifest_sha256: String::new(),
            invalid_reasons: Vec::new(),
            runs: Vec::new(),
            capacity: CapacityEvidence::default(),
            evaluation_corpus_sha256: None,
            admission_limit: None,
            manifest: None,
            interventions: Vec::new(),
        }
    }

    fn record(problems: Vec<CompatProblem>, tokens: Option<u64>) -> String {
        CompatibilityRecord {
            observed: Some(ObservedEngine {
                kv_cache_tokens: tokens,
                ..ObservedEngine::default()
            }),
            validity: CellValidity {
                valid: problems.is_empty(),
                problems,
            },
        }
        .to_text()
    }

    #[test]
    fn kinds_round_trip_their_stored_names() {
        for kind in EvidenceKind::ALL {
            assert_eq!(EvidenceKind::parse(kind.as_str()), Some(kind));
            assert_eq!(
                serde_json::to_value(kind).unwrap(),
                serde_json::Value::String(kind.as_str().into())
            );
        }
        assert_eq!(EvidenceKind::parse("validity"), None);
    }

    #[test]
    fn the_record_is_stored_in_the_form_runs_always_wrote() {
        // `{"observed": …, "validity": …}`: the texts (and sha256) of stored runs stay valid.
        let text = record(Vec::new(), Some(1000));
        assert!(text.starts_with("{\"observed\":{"), "{text}");
        assert!(
            text.ends_with(",\"validity\":{\"problems\":[],\"valid\":true}}"),
            "{text}"
        );
        let old = serde_json::json!({"observed": {"kv_cache_tokens": 1000}, "validity": {"valid": true, "problems": []}});
        let record = CompatibilityRecord::from_text(&old.to_string()).unwrap();
        assert_eq!(record.validity.problems.len(), 0);
        assert_eq!(
            CompatibilityRecord::from_text(&text)
                .unwrap()
                .observed
                .unwrap()
                .kv_cache_tokens,
            Some(1000)
        );
    }

    #[test]
    fn no_compatibility_evidence_makes_the_cell_invalid() {
        let mut c = cell();
        let mut e = CellEvidence::default();
        e.absorb(&mut c, 1, EvidenceKind::StartupLog, "log", "INFO …");
        e.close(&mut c);
        assert_eq!(c.invalid_reasons.len(), 1);
        assert!(c.invalid_reasons[0].contains("compatibility evidence missing"));
    }

    #[test]
    fn problems_invalidate_once_and_capacity_rolls_up() {
        let mut c = cell();
        let mut e = CellEvidence::default();
        let problem = CompatProblem::new("kv_dtype", "`fp8`", "`auto`", "the engine ran bf16");
        let text = record(vec![problem], Some(5000));
        e.absorb(&mut c, 7, EvidenceKind::Compatibility, "check", &text);
        e.absorb(&mut c, 7, EvidenceKind::Compatibility, "check", &text);
        e.absorb(
            &mut c,
            8,
            EvidenceKind::Compatibility,
            "check",
            &record(vec![], Some(6000)),
        );
        e.close(&mut c);
        assert_eq!(c.invalid_reasons.len(), 1, "{:?}", c.invalid_reasons);
        assert!(c.invalid_reasons[0].starts_with("run 7: "));
        assert_eq!(
            c.capacity.engine_kv_tokens,
            Some(5000),
            "the first run's figure"
        );
        // Unreadable evidence is a reason too, never a silent pass.
        let mut c = cell();
        let mut e = CellEvidence::default();
        e.absorb(&mut c, 9, EvidenceKind::Compatibility, "check", "{not json");
        e.close(&mut c);
        assert!(c.invalid_reasons[0].contains("cannot be read"));
    }
}
