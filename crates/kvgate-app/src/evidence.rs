//! A run's evidence, assembled in one place for the runs KV Gate executes and the runs it
//! imports: the startup logs and `cache_config_info` lines as read, the metric summary, and the
//! compatibility record of what the engine showed against the cell's manifest.

use kvgate_core::canonical::sha256_hex;
use kvgate_core::compat::{check_compatibility, CellValidity, ObservedEngine};
use kvgate_core::evidence::{CompatibilityRecord, EvidenceKind};
use kvgate_core::manifest::Manifest;
use kvgate_core::metrics::MetricSummary;
use kvgate_formats::startup_log::StartupEvidence;
use kvgate_store::RunEvidence;

/// The evidence of one run, in the order it is gathered.
#[derive(Debug, Default)]
pub(crate) struct EvidenceSet {
    rows: Vec<RunEvidence>,
    observed: Option<ObservedEngine>,
}

impl EvidenceSet {
    fn push(
        &mut self,
        kind: EvidenceKind,
        source_name: String,
        text: String,
        parsed: Option<String>,
    ) {
        self.rows.push(RunEvidence {
            kind: kind.as_str().to_owned(),
            source_name,
            sha256: sha256_hex(text.as_bytes()),
            text,
            parsed_json: parsed,
        });
    }

    /// Facts from two pieces of evidence about one engine start are merged; a disagreement is a
    /// conflict that invalidates the cell (`ObservedEngine::merge`).
    fn observe(&mut self, o: ObservedEngine) {
        self.observed = Some(match self.observed.take() {
            Some(prev) => prev.merge(o),
            None => o,
        });
    }

    /// A startup log as read, with what was recognised in it.
    pub(crate) fn startup_log(
        &mut self,
        source_name: String,
        text: String,
        parsed: &StartupEvidence,
    ) {
        self.observe(parsed.observed());
        let json = serde_json::to_string(parsed).ok();
        self.push(EvidenceKind::StartupLog, source_name, text, json);
    }

    /// The `cache_config_info` lines of a scrape, and the facts they carry.
    pub(crate) fn cache_config(
        &mut self,
        source_name: String,
        observed: ObservedEngine,
        excerpt: String,
    ) {
        self.observe(observed);
        self.push(EvidenceKind::CacheConfigInfo, source_name, excerpt, None);
    }

    /// The summary of the run's scrapes.
    pub(crate) fn metrics(&mut self, source_name: String, summary: &MetricSummary) {
        let text = serde_json::to_string(summary).unwrap_or_default();
        self.push(EvidenceKind::Metrics, source_name, text, None);
    }

    /// The compatibility record against the cell's manifest, and the rows. A run KV Gate
    /// executed always gets one (missing evidence is a finding); an import only when its file
    /// carried engine evidence (a load file alone says nothing about the engine).
    pub(crate) fn check(
        mut self,
        manifest: &Manifest,
        always: bool,
    ) -> (Vec<RunEvidence>, CellValidity) {
        let validity = check_compatibility(manifest, self.observed.as_ref());
        if always || self.observed.is_some() {
            let record = CompatibilityRecord {
                observed: self.observed.take(),
                validity: validity.clone(),
            };
            self.push(
                EvidenceKind::Compatibility,
                format!("cell {} manifest vs observed engine", manifest.cell),
                record.to_text(),
                None,
            );
        }
        (self.rows, validity)
    }
}
