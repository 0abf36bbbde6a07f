//! A run as a `kvgate-run` file: exported whole (header, requests, evidence, scrapes) and
//! imported back, bound to the frozen manifest of its cell.

use super::*;

impl App {
    /// The run as a `kvgate-run` JSONL file: header, requests, evidence, scrapes. It carries the
    /// verdicts, so it is refused until the study's policy is locked.
    pub async fn export_run(&self, run_id: i64) -> Result<String, AppError> {
        let run = self.store.get_run(run_id).await?;
        self.require_locked_policy(
            run.study_id,
            "no run file is written (it carries the verdicts)",
        )
        .await?;
        if run.state == RunState::Running {
            return Err(AppError::new(
                ErrorCode::Conflict,
                format!("run {run_id} is still running: export it once it has finished"),
            ));
        }
        let manifest = self
            .store
            .list_manifests(run.study_id)
            .await?
            .into_iter()
            .find(|m| m.id == run.manifest_id)
            .ok_or_else(|| AppError::storage(format!("run {run_id}: its manifest is missing")))?;
        let config: Value = serde_json::from_str(&run.config_json)
            .map_err(|e| AppError::storage(format!("run {run_id}: stored config: {e}")))?;
        let header = RunFileHeader {
            format: RUN_FILE_FORMAT.into(),
            version: RUN_FILE_VERSION,
            kind: run.kind.as_str().into(),
            cell: run.cell.clone(),
            manifest_sha256: manifest.digest.unwrap_or_default(),
            label: run.label.clone(),
            provenance: run.provenance.as_str().to_owned(),
            config,
            config_sha256: run.config_sha256.clone(),
            wall_anchor_unix_ms: run.wall_anchor_unix_ms,
            started_at: run.started_at.clone(),
            finished_at: run.finished_at.clone(),
            state: run.state.as_str().into(),
            elapsed_ms: run.elapsed_ms,
            planned: run.planned,
            note: run.note.clone(),
        };
        let requests = self
            .store
            .run_requests(run_id)
            .await?
            .into_iter()
            .map(|s| RunFileRequest {
                record: s.record,
                repeat: s.repeat,
                warmup: s.warmup,
                verdict: s.verdict,
            })
            .collect();
        let evidence = self
            .store
            .run_evidence(run_id)
            .await?
            .into_iter()
            .map(|e| RunFileEvidence {
                kind: e.kind,
                source_name: e.source_name,
                sha256: e.sha256,
                text: e.text,
                parsed_json: e.parsed_json,
            })
            .collect();
        let scrapes = self
            .store
            .run_scrapes(run_id)
            .await?
            .into_iter()
            .map(|s| RunFileScrape {
                at_ms: s.at_ms,
                values: serde_json::from_str(&s.values_json).unwrap_or(Value::Null),
            })
            .collect();
        Ok(render_run_file(&RunFile {
            header,
            requests,
            evidence,
            scrapes,
        }))
    }

    /// Imports a `kvgate-run` file into a study, bound to the frozen manifest of the cell it
    /// names, whose digest must match. Atomic: on any error nothing is stored. The same run
    /// (same configuration digest and start) imported twice is refused.
    pub async fn import_run_file(
        &self,
        study_id: i64,
        source_name: &str,
        text: &str,
        provenance: RunProvenance,
    ) -> Result<RunSummary, AppError> {
        let file = parse_run_file(source_name, text).map_err(|e| invalid(e.to_string()))?;
        let h = &file.header;
        let stored = self.manifest(study_id, &h.cell).await?;
        if stored.digest.as_deref() != Some(h.manifest_sha256.as_str()) {
            return Err(invalid(format!(
                "{source_name} line 1, $.manifest_sha256: expected the frozen manifest of cell {} ({}), found {}",
                h.cell,
                stored.digest.as_deref().unwrap_or("a draft, not frozen"),
                h.manifest_sha256
            )));
        }
        let kind = RunKind::parse(&h.kind).ok_or_else(|| {
            invalid(format!(
                "{source_name} line 1, $.kind: expected quality or load, found {:?}",
                h.kind
            ))
        })?;
        let state = RunState::parse(&h.state)
            .filter(|s| *s != RunState::Running)
            .ok_or_else(|| {
                invalid(format!(
                    "{source_name} line 1, $.state: expected completed, cancelled, interrupted or failed, found {:?}",
                    h.state
                ))
            })?;
        let duplicate = self
            .store
            .list_runs(study_id)
            .await?
            .into_iter()
            .find(|r| r.config_sha256 == h.config_sha256 && r.started_at == h.started_at);
        if let Some(existing) = duplicate {
            return Err(AppError::new(
                ErrorCode::Conflict,
                format!(
                    "{source_name}: this run is already in the study as run {} (same configuration sha256 and start time)",
                    existing.id
                ),
            ));
        }
        let new = NewRun {
            study_id,
            manifest_id: stored.id,
            kind,
            label: h.label.clone(),
            provenance,
            config_json: canonical_json(&h.config),
            config_sha256: h.config_sha256.clone(),
            wall_anchor_unix_ms: h.wall_anchor_unix_ms,
            started_at: h.started_at.clone(),
            owner_pid: None,
        };
        let requests: Vec<StoredRequest> = file
            .requests
            .iter()
            .map(|r| StoredRequest {
                record: r.record.clone(),
                repeat: r.repeat,
                warmup: r.warmup,
                verdict: r.verdict.clone(),
            })
            .collect();
        let evidence: Vec<RunEvidence> = file
            .evidence
            .iter()
            .map(|e| RunEvidence {
                kind: e.kind.clone(),
                source_name: e.source_name.clone(),
                sha256: e.sha256.clone(),
                text: e.text.clone(),
                parsed_json: e.parsed_json.clone(),
            })
            .collect();
        let scrapes: Vec<MetricScrapeRow> = file
            .scrapes
            .iter()
            .map(|s| MetricScrapeRow {
                at_ms: s.at_ms,
                values_json: s.values.to_string(),
            })
            .collect();
        let finished_at = h
            .finished_at
            .clone()
            .unwrap_or_else(kvgate_store::now_rfc3339);
        let run = self
            .store
            .insert_finished_run(
                &new,
                state,
                &finished_at,
                h.elapsed_ms,
                h.planned,
                h.note.as_deref(),
                &requests,
                &evidence,
                &scrapes,
            )
            .await?;
        Ok(summary_of(run))
    }
}
