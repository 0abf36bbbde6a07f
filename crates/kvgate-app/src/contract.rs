//! The typed contract with the outside: TypeScript bindings for the UI (ts-rs) and JSON Schemas
//! (schemars), generated from the Rust types so the two can never drift apart unnoticed.
//!
//! `write_bindings` and `write_schemas` render everything into a folder; the `contract` test
//! renders into a temporary folder and compares it with the committed `ui/src/lib/bindings/`
//! and `schemas/` (set `KVGATE_BLESS=1` to rewrite them instead).

use std::path::Path;

use kvgate_core::fixtures::{CorpusMeta, DisjointReport, FixtureItem};
use kvgate_core::kv_capacity::{KvBytesBreakdown, RollbackFit, TokenCapacity};
use kvgate_core::manifest::{Finding, Manifest, ManifestProblem};
use kvgate_core::policy::strata;
use kvgate_core::study::{NewStudy, Provenance, Study, StudyProgress};
use kvgate_core::validator::Verdict;
use kvgate_formats::weights::{CheckpointDigest, WeightsComparison};
use schemars::JsonSchema;
use ts_rs::{Config, TS};

use crate::analysis::{LockPolicyInput, PolicyStatus, StudyAnalysis, StudyResults};
use crate::credentials::{EndpointKeyInput, EndpointKeyStatus, KeyStore, KeyringState};
use crate::fixtures::{GenerateFixtures, LoadedCorpus};
use crate::imports::{ImportEvent, ImportInput, ImportPreview, ImportSummary};
use crate::llm::LocalServer;
use crate::manifests::{
    ManifestCapacity, ManifestCheck, ManifestDiff, ManifestVocabulary, StoredManifest,
};
use crate::runs::{LoadRunInput, QualityRunInput, RunDetail, RunEvent, RunSummary, SweepInput};
use crate::weights::{CheckpointComparison, WeightsProgress};
use crate::{AppError, AppInfo, ErrorCode};

/// Exports every type the UI exchanges with the shells, with its dependencies, into `dir`.
pub fn write_bindings(dir: &Path) -> Result<(), String> {
    let cfg = kvgate_core::ts_config().with_out_dir(dir);
    fn one<T: TS + 'static>(cfg: &Config) -> Result<(), String> {
        T::export_all(cfg).map_err(|e| format!("exporting {}: {e}", T::ident(cfg)))
    }
    one::<AppInfo>(&cfg)?;
    one::<AppError>(&cfg)?;
    one::<ErrorCode>(&cfg)?;
    one::<crate::Problem>(&cfg)?;
    one::<Study>(&cfg)?;
    one::<NewStudy>(&cfg)?;
    one::<Provenance>(&cfg)?;
    one::<StudyProgress>(&cfg)?;
    one::<Manifest>(&cfg)?;
    one::<ManifestProblem>(&cfg)?;
    one::<StoredManifest>(&cfg)?;
    one::<ManifestCheck>(&cfg)?;
    one::<ManifestVocabulary>(&cfg)?;
    one::<ManifestDiff>(&cfg)?;
    one::<Finding>(&cfg)?;
    one::<ManifestCapacity>(&cfg)?;
    one::<KvBytesBreakdown>(&cfg)?;
    one::<TokenCapacity>(&cfg)?;
    one::<RollbackFit>(&cfg)?;
    one::<FixtureItem>(&cfg)?;
    one::<CorpusMeta>(&cfg)?;
    one::<LoadedCorpus>(&cfg)?;
    one::<GenerateFixtures>(&cfg)?;
    one::<crate::fixtures::ImportFixtures>(&cfg)?;
    one::<crate::fixtures::OpenedCorpus>(&cfg)?;
    one::<DisjointReport>(&cfg)?;
    one::<Verdict>(&cfg)?;
    one::<CheckpointDigest>(&cfg)?;
    one::<WeightsComparison>(&cfg)?;
    one::<WeightsProgress>(&cfg)?;
    one::<CheckpointComparison>(&cfg)?;
    one::<QualityRunInput>(&cfg)?;
    one::<LoadRunInput>(&cfg)?;
    one::<SweepInput>(&cfg)?;
    one::<kvgate_core::sweep::SweepPlace>(&cfg)?;
    one::<RunSummary>(&cfg)?;
    one::<RunDetail>(&cfg)?;
    one::<RunEvent>(&cfg)?;
    one::<kvgate_core::warmup::WarmupPlan>(&cfg)?;
    one::<kvgate_core::run::CellOrder>(&cfg)?;
    one::<LocalServer>(&cfg)?;
    one::<ImportInput>(&cfg)?;
    one::<ImportPreview>(&cfg)?;
    one::<ImportSummary>(&cfg)?;
    one::<ImportEvent>(&cfg)?;
    one::<LockPolicyInput>(&cfg)?;
    one::<PolicyStatus>(&cfg)?;
    one::<kvgate_core::policy::PolicyProblem>(&cfg)?;
    one::<StudyAnalysis>(&cfg)?;
    one::<StudyResults>(&cfg)?;
    one::<kvgate_core::stats::PairsPlan>(&cfg)?;
    one::<crate::review::ReviewFilter>(&cfg)?;
    one::<crate::review::ReviewQueue>(&cfg)?;
    one::<crate::review::ReviewIndex>(&cfg)?;
    one::<crate::review::ReviewIndexColumns>(&cfg)?;
    one::<crate::review::ReviewRowLabel>(&cfg)?;
    one::<crate::review::LabelInput>(&cfg)?;
    one::<crate::review::LabelOutcome>(&cfg)?;
    one::<crate::review::AuditReport>(&cfg)?;
    one::<crate::signoff::Checklist>(&cfg)?;
    one::<crate::signoff::SignInput>(&cfg)?;
    one::<crate::signoff::DecideInput>(&cfg)?;
    one::<crate::interventions::InterventionInput>(&cfg)?;
    one::<crate::recovery::RecordRecoveryInput>(&cfg)?;
    one::<crate::recovery::RecoveryStatus>(&cfg)?;
    one::<crate::packet::PacketExportInput>(&cfg)?;
    one::<crate::packet::PacketExport>(&cfg)?;
    one::<crate::packet::PacketView>(&cfg)?;
    one::<crate::signing::PacketKey>(&cfg)?;
    one::<crate::files::ChartFormat>(&cfg)?;
    one::<crate::files::SavedFile>(&cfg)?;
    one::<crate::files::PathKind>(&cfg)?;
    one::<EndpointKeyInput>(&cfg)?;
    one::<EndpointKeyStatus>(&cfg)?;
    one::<KeyStore>(&cfg)?;
    one::<KeyringState>(&cfg)?;
    let path = dir.join("strata.ts");
    std::fs::write(&path, strata_module())
        .map_err(|e| format!("writing {}: {e}", path.display()))?;
    Ok(())
}

/// The fixture strata as TypeScript constants: the UI's one copy of [`strata`], typed with the
/// enums' bindings so a screen never keeps its own list.
fn strata_module() -> String {
    let types = [
        "Language",
        "LengthClass",
        "Position",
        "TaskType",
        "AnswerKind",
    ];
    let consts = [
        "LANGUAGES",
        "LENGTH_CLASSES",
        "POSITIONS",
        "TASK_TYPES",
        "ANSWER_KINDS",
    ];
    let quoted = |v: &str| serde_json::to_string(v).expect("a string serializes");
    let mut out = String::from(
        "// This file was generated from kvgate-core's fixture strata (`make contract`). Do not edit this file manually.\n",
    );
    let mut imports: Vec<&str> = types.to_vec();
    imports.sort_unstable();
    for t in imports {
        out.push_str(&format!("import type {{ {t} }} from \"./{t}\";\n"));
    }
    out.push_str("\n/** Each dimension's values in reading order: every list, filter and marginal row follows it. */\n");
    let dims = strata();
    for ((t, c), d) in types.iter().zip(consts).zip(&dims) {
        let values: Vec<String> = d.values.iter().map(|v| quoted(v)).collect();
        out.push_str(&format!(
            "export const {c}: readonly {t}[] = [{}];\n",
            values.join(", ")
        ));
    }
    out.push_str(
        "\n/** The dimensions in reading order: the key of a segment filter and of a marginal stratum (`key=value`), the name, the values. */\nexport const STRATA = [\n",
    );
    for (c, d) in consts.iter().zip(&dims) {
        out.push_str(&format!(
            "  {{ key: {}, label: {}, values: {c} }},\n",
            quoted(d.key),
            quoted(d.label)
        ));
    }
    out.push_str("] as const;\n");
    out
}

/// Writes the JSON Schema of every file format KV Gate reads or writes into `dir`.
pub fn write_schemas(dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    fn one<T: JsonSchema>(dir: &Path, file: &str) -> Result<(), String> {
        let schema = schemars::schema_for!(T);
        let mut text = serde_json_pretty(&schema)?;
        text.push('\n');
        let path = dir.join(file);
        std::fs::write(&path, text).map_err(|e| format!("writing {}: {e}", path.display()))
    }
    one::<Study>(dir, "study.schema.json")?;
    one::<Manifest>(dir, "manifest.schema.json")?;
    one::<FixtureItem>(dir, "fixture-item.schema.json")?;
    one::<CorpusMeta>(dir, "corpus.schema.json")?;
    one::<kvgate_core::fixtures::team::TeamItemInput>(dir, "team-item-input.schema.json")?;
    one::<kvgate_core::fixtures::team::TeamItem>(dir, "team-item.schema.json")?;
    one::<kvgate_core::fixtures::team::TeamCorpusMeta>(dir, "team-corpus.schema.json")?;
    one::<Verdict>(dir, "verdict.schema.json")?;
    one::<kvgate_core::run::RequestRecord>(dir, "run-record.schema.json")?;
    one::<kvgate_core::policy::Policy>(dir, "policy.schema.json")?;
    one::<kvgate_core::recovery::RecoveryPlan>(dir, "recovery-plan.schema.json")?;
    one::<StudyAnalysis>(dir, "analysis.schema.json")?;
    one::<crate::packet::PacketIndex>(dir, "packet-index.schema.json")?;
    Ok(())
}

fn serde_json_pretty<T: serde::Serialize>(value: &T) -> Result<String, String> {
    serde_json::to_string_pretty(value).map_err(|e| e.to_string())
}
