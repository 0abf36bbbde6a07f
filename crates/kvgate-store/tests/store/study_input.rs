//! The loader against a real SQLite file: prompt digests recorded, recomputed for rows stored
//! before they were, and missing (with the reason) when the corpus cannot be found.

use kvgate_core::analysis::analyze;
use kvgate_core::fixtures::{CorpusItem, FixtureItem};
use kvgate_core::manifest::Manifest;
use kvgate_core::pairing::{item_prompt_sha256, UnpairedReason};
use kvgate_core::policy::Policy;
use kvgate_core::run::{RequestRecord, RequestStatus};
use kvgate_core::study::{NewStudy, Provenance};
use kvgate_core::validator::Verdict;
use kvgate_store::study_input::{load_study, CorpusRef};
use kvgate_store::{NewRun, RunKind, RunProvenance, RunState, Store, StoreError, StoredRequest};
use serde_json::json;

use crate::fresh;

const B0: &str = include_str!("../../../../fixtures/manifests/smollm2-135m-cpu-b0.json");
const Q8: &str = include_str!("../../../../fixtures/manifests/smollm2-135m-cpu-q8.json");
const ITEMS: &str = include_str!("../../../../fixtures/demo/corpus/items.jsonl");
const POLICY: &str = include_str!("../../../../fixtures/policies/demo-cpu.json");

fn items() -> Vec<FixtureItem> {
    ITEMS
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn demo_sha() -> String {
    kvgate_core::canonical::sha256_hex(ITEMS.as_bytes())
}

async fn new_study(store: &Store, name: &str) -> i64 {
    store
        .insert_study(
            &NewStudy {
                name: name.into(),
                description: String::new(),
            },
            Provenance::User,
        )
        .await
        .unwrap()
        .id
}

async fn frozen(store: &Store, sid: i64, cell: &str, text: &str) -> i64 {
    store.save_manifest_draft(sid, cell, text).await.unwrap();
    let digest = Manifest::from_json(text).unwrap().digest().unwrap();
    store
        .freeze_manifest(sid, cell, text, &digest)
        .await
        .unwrap()
        .id
}

/// A quality run of the frozen manifest `manifest_id` with `config`, started.
async fn start_quality(
    store: &Store,
    sid: i64,
    manifest_id: i64,
    label: &str,
    config: &serde_json::Value,
) -> kvgate_store::RunRecord {
    store
        .create_run(&NewRun {
            study_id: sid,
            manifest_id,
            kind: RunKind::Quality,
            label: label.into(),
            provenance: RunProvenance::Recorded,
            config_json: config.to_string(),
            config_sha256: kvgate_core::canonical::canonical_sha256(config),
            wall_anchor_unix_ms: 1_780_000_000_000,
            started_at: "2026-12-01T10:00:00.000Z".into(),
            owner_pid: None,
        })
        .await
        .unwrap()
}

/// A finished quality run of `cell` over the corpus `corpus_sha`, one judged request per item,
/// each with the digest `digest(item)` gives (None: stored before digests were recorded).
async fn run(
    store: &Store,
    sid: i64,
    manifest_id: i64,
    corpus_sha: &str,
    items: &[FixtureItem],
    digest: impl Fn(&FixtureItem) -> Option<String>,
) -> Result<i64, StoreError> {
    let config = json!({"kind": "quality", "seed": 7, "concurrency": 1, "repeats": 1,
        "corpus": {"dir": "fixtures/elsewhere", "items_sha256": corpus_sha}});
    let run = start_quality(store, sid, manifest_id, "quality", &config).await;
    let requests: Vec<StoredRequest> = items
        .iter()
        .enumerate()
        .map(|(i, item)| StoredRequest {
            record: RequestRecord {
                index: i as u32,
                item_id: Some(item.id.clone()),
                prompt_sha256: digest(item),
                planned_arrival_ms: i as f64 * 100.0,
                dispatch_ms: Some(i as f64 * 100.0),
                client_delay_ms: Some(0.0),
                first_token_ms: Some(i as f64 * 100.0 + 10.0),
                chunk_times_ms: vec![],
                finish_ms: Some(i as f64 * 100.0 + 50.0),
                status: RequestStatus::Ok,
                http_status: Some(200),
                error: None,
                output_text: "{}".into(),
                prompt_tokens: Some(500),
                completion_tokens: Some(20),
                cached_prompt_tokens: None,
                finish_reason: Some("stop".into()),
                engine_timings: None,
            },
            repeat: 0,
            warmup: false,
            verdict: Some(Verdict {
                accepted: i % 2 == 0,
                reasons: vec![],
                fenced: false,
                extracted: None,
                detail: vec![],
            }),
        })
        .collect();
    store
        .finish_run(
            run.id,
            RunState::Completed,
            Some(1000.0),
            Some(items.len() as i64),
            None,
            &requests,
            &[],
            &[],
        )
        .await
        .map(|r| r.id)
}

/// Rows stored without a digest (the committed recordings) pair with rows that recorded one,
/// through the digest recomputed from the corpus and the manifest; when the corpus is not found
/// the rows do not pair and the run says why; a malformed digest is refused on write.
#[tokio::test]
async fn legacy_rows_pair_with_the_recomputed_digest_and_an_unknown_corpus_is_named() {
    let (_dir, store) = fresh().await;
    let sid = new_study(&store, "pairs").await;
    let b0 = frozen(&store, sid, "B0", B0).await;
    let q8 = frozen(&store, sid, "Q8", Q8).await;
    let q8_manifest = Manifest::from_json(Q8).unwrap();
    let all = items();
    let four = &all[..4];
    let sha = demo_sha();
    // B0: recorded before digests existed.
    run(&store, sid, b0, &sha, four, |_| None).await.unwrap();
    // Q8: digests recorded when sent.
    let recorded = run(&store, sid, q8, &sha, four, |i| {
        Some(item_prompt_sha256(i, &q8_manifest))
    })
    .await
    .unwrap();
    // Q8 again, legacy, over a corpus nobody can find.
    let lost = run(&store, sid, q8, &"f".repeat(64), four, |_| None)
        .await
        .unwrap();
    // A digest that is not one is refused, naming the request and the field.
    let err = run(&store, sid, q8, &sha, four, |_| Some("not-a-digest".into()))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("prompt_sha256"), "{err}");

    let mut asked: Vec<String> = Vec::new();
    let mut corpora = |c: &CorpusRef| {
        asked.push(c.items_sha256.clone());
        if c.items_sha256 == demo_sha() {
            Ok(items().into_iter().map(CorpusItem::Generated).collect())
        } else {
            Err(format!("no corpus {}", c.items_sha256))
        }
    };
    let mut input = load_study(&store, sid, &mut corpora).await.unwrap();
    // Each corpus is looked up once.
    asked.sort();
    assert_eq!(asked, [demo_sha(), "f".repeat(64)]);

    let rows = |cell: usize, run: i64| -> Vec<Option<&str>> {
        input.cells[cell]
            .runs
            .iter()
            .find(|r| r.run_id == run)
            .unwrap()
            .requests
            .iter()
            .map(|r| r.prompt.map(|p| input.prompts[p as usize].as_str()))
            .collect()
    };
    let b0_run = input.cells[0].runs[0].run_id;
    // B0's recomputed digests are the ones Q8 recorded: the same prompt, proven.
    assert_eq!(rows(0, b0_run), rows(1, recorded));
    assert!(rows(0, b0_run).iter().all(Option::is_some));
    assert!(rows(1, lost).iter().all(Option::is_none));
    let note = input.cells[1]
        .runs
        .iter()
        .find(|r| r.run_id == lost)
        .unwrap()
        .prompt_note
        .clone()
        .unwrap();
    assert!(
        note.contains("was not found") && note.contains("no corpus ffff"),
        "{note}"
    );
    assert_eq!(input.cells[0].admission_limit, Some(1));
    assert_eq!(
        input.cells[1].evaluation_corpus_sha256.as_deref(),
        Some(sha.as_str())
    );

    // These runs carry no startup evidence: take the cells as valid to read their pairs.
    for c in &mut input.cells {
        c.invalid_reasons.clear();
    }
    let policy = Policy::from_json_text(POLICY).unwrap();
    let a = analyze(&policy, &input);
    let q8 = &a.cells[1];
    let overall = q8.paired.iter().find(|r| r.stratum == "overall").unwrap();
    assert_eq!(overall.n, 4);
    assert_eq!(q8.unpaired.len(), 1, "{:?}", q8.unpaired);
    assert_eq!(q8.unpaired[0].key, format!("run {lost}"));
    assert_eq!(q8.unpaired[0].reason, UnpairedReason::PromptUnknown);
    assert_eq!(q8.corpus_mismatches.len(), 1);
    assert_eq!(q8.corpus_mismatches[0].run, lost);
}

/// A finished load run of `manifest_id` with no requests whose only evidence is `log`.
async fn run_with_log(store: &Store, sid: i64, manifest_id: i64, log: &str) -> i64 {
    run_with(store, sid, manifest_id, log, &[]).await
}

/// The same with its scrapes.
async fn run_with(
    store: &Store,
    sid: i64,
    manifest_id: i64,
    log: &str,
    scrapes: &[kvgate_store::MetricScrapeRow],
) -> i64 {
    let config = json!({"kind": "load"});
    let run = store
        .create_run(&NewRun {
            study_id: sid,
            manifest_id,
            kind: RunKind::Load,
            label: "load".into(),
            provenance: RunProvenance::Recorded,
            config_json: config.to_string(),
            config_sha256: kvgate_core::canonical::canonical_sha256(&config),
            wall_anchor_unix_ms: 1_780_000_000_000,
            started_at: "2026-12-01T10:00:00.000Z".into(),
            owner_pid: None,
        })
        .await
        .unwrap();
    let evidence = kvgate_store::RunEvidence {
        kind: "startup_log".into(),
        source_name: "server.log".into(),
        sha256: kvgate_core::canonical::sha256_hex(log.as_bytes()),
        text: log.into(),
        parsed_json: None,
    };
    store
        .finish_run(
            run.id,
            RunState::Completed,
            Some(1000.0),
            Some(0),
            None,
            &[],
            &[evidence],
            scrapes,
        )
        .await
        .unwrap();
    run.id
}

/// Device memory is read from the verbatim stored logs (a stored parse is not needed): the
/// recorded f16 and q8_0 starts show the weights flat and the KV buffer nearly halved; a cell
/// whose second run states another KV buffer names it; a log without memory lines leaves the
/// cell's memory absent, not 0.
#[tokio::test]
async fn device_memory_is_read_from_each_cells_stored_startup_logs() {
    const F16: &str = include_str!("../../../../fixtures/evidence/llamacpp-f16-startup.log");
    const Q8_LOG: &str = include_str!("../../../../fixtures/evidence/llamacpp-q8_0-startup.log");
    let (_dir, store) = fresh().await;
    let sid = store
        .insert_study(
            &NewStudy {
                name: "memory".into(),
                description: String::new(),
            },
            Provenance::User,
        )
        .await
        .unwrap()
        .id;
    let b0 = frozen(&store, sid, "B0", B0).await;
    let q8 = frozen(&store, sid, "Q8", Q8).await;
    let first = run_with_log(&store, sid, b0, F16).await;
    // A second B0 run against a server that printed the q8_0 buffers: a difference, named.
    let second = run_with_log(&store, sid, b0, Q8_LOG).await;
    run_with_log(
        &store,
        sid,
        q8,
        "synthetic: a log without any memory line\n",
    )
    .await;
    let input = load_study(&store, sid, &mut |_: &CorpusRef| Err("none".into()))
        .await
        .unwrap();
    let b0_memory = input.cells[0].capacity.device_memory.clone().unwrap();
    assert_eq!(b0_memory.weights_mib, Some(92.10));
    assert_eq!(b0_memory.kv_cache_mib, Some(45.00));
    assert_eq!(b0_memory.compute_mib, Some(16.83));
    assert_eq!(b0_memory.cuda_graph_mib, None);
    assert_eq!(
        b0_memory.sources[0],
        format!("weights_mib: run {first}, startup log line 129")
    );
    assert_eq!(
        b0_memory.differences,
        vec![
            format!("kv_cache_mib: run {second} states 23.91 MiB, not 45"),
            format!("compute_mib: run {second} states 16.86 MiB, not 16.83"),
        ]
    );
    assert_eq!(input.cells[1].capacity.device_memory, None);
}

/// Each run's scrapes become its series on its own clock: a failed scrape is a gap, the
/// preemption delta after a restart counts from 0 (never negative) and the restart is marked.
#[tokio::test]
async fn each_runs_scrapes_become_its_load_series_with_restarts() {
    let (_dir, store) = fresh().await;
    let sid = store
        .insert_study(
            &NewStudy {
                name: "series".into(),
                description: String::new(),
            },
            Provenance::User,
        )
        .await
        .unwrap()
        .id;
    let b0 = frozen(&store, sid, "B0", B0).await;
    let row = |at_ms: f64, values: serde_json::Value| kvgate_store::MetricScrapeRow {
        at_ms,
        values_json: values.to_string(),
    };
    // Synthetic vLLM-shaped scrapes: 3 preemptions, then a restart (7 → 2).
    let scrapes = [
        row(
            0.0,
            json!({"values": {"preemptions_total": 4.0, "kv_cache_usage": 0.5, "requests_waiting": 1.0}}),
        ),
        row(1_000.0, json!({"error": "connection refused"})),
        row(
            2_000.0,
            json!({"values": {"preemptions_total": 7.0, "kv_cache_usage": 0.9, "requests_running": 12.0}}),
        ),
        row(
            3_000.0,
            json!({"values": {"preemptions_total": 2.0, "a_metric_from_later": 1.0}}),
        ),
    ];
    let with = run_with(&store, sid, b0, "synthetic\n", &scrapes).await;
    let without = run_with_log(&store, sid, b0, "synthetic\n").await;
    let input = load_study(&store, sid, &mut |_: &CorpusRef| Err("none".into()))
        .await
        .unwrap();
    let series = &input.cells[0].capacity.metric_series;
    // The run without scrapes has no series (not an empty one drawn flat).
    assert_eq!(series.len(), 1);
    assert_ne!(series[0].run_id, without);
    let s = &series[0];
    assert_eq!(s.run_id, with);
    let at: Vec<f64> = s.points.iter().map(|p| p.at_ms).collect();
    assert_eq!(at, [0.0, 2_000.0, 3_000.0]);
    let deltas: Vec<Option<f64>> = s.points.iter().map(|p| p.preemptions_delta).collect();
    assert_eq!(deltas, [None, Some(3.0), Some(2.0)]);
    assert_eq!(s.restarts_at_ms, [3_000.0]);
    assert_eq!(s.points[1].kv_usage, Some(0.9));
    assert_eq!(s.points[2].kv_usage, None);
}

/// A finished quality run of `cell` over the demo corpus with `n` measured requests (and two
/// warm-ups) that vary every field the analysis reads: items (and none), digests (and none),
/// statuses, verdicts (and none), times (and none), token counts (and none, then the item's).
/// Row `i` names item `ids[i % ids.len()]` and prompt `i % digests`.
async fn varied_run(
    store: &Store,
    sid: i64,
    manifest_id: i64,
    (ids, digests): (&[String], usize),
    n: usize,
) -> i64 {
    let requests = varied_requests((ids, digests), n);
    finished_quality_run(store, sid, manifest_id, &requests).await
}

/// A finished quality run of `cell` over the demo corpus holding `requests`, written in the
/// order given.
async fn finished_quality_run(
    store: &Store,
    sid: i64,
    manifest_id: i64,
    requests: &[StoredRequest],
) -> i64 {
    let config = json!({"kind": "quality", "seed": 7, "concurrency": 4, "repeats": 2,
        "corpus": {"dir": "fixtures/elsewhere", "items_sha256": demo_sha()}});
    let run = start_quality(store, sid, manifest_id, "varied", &config).await;
    let measured = requests.iter().filter(|r| !r.warmup).count();
    store
        .finish_run(
            run.id,
            RunState::Completed,
            Some(1000.0),
            Some(measured as i64),
            None,
            requests,
            &[],
            &[],
        )
        .await
        .unwrap()
        .id
}

/// The requests of [`varied_run`].
fn varied_requests((ids, digests): (&[String], usize), n: usize) -> Vec<StoredRequest> {
    let statuses = [
        RequestStatus::Ok,
        RequestStatus::Error,
        RequestStatus::Timeout,
        RequestStatus::Rejected,
        RequestStatus::Unfinished,
    ];
    (0..n + 2)
        .map(|i| {
            let item_id = &ids[i % ids.len()];
            let t = i as f64 * 3.25;
            let some = |k: usize| i % k != 0;
            StoredRequest {
                record: RequestRecord {
                    index: i as u32,
                    item_id: some(11).then(|| item_id.clone()),
                    prompt_sha256: some(5).then(|| format!("{:064x}", i % digests)),
                    planned_arrival_ms: t,
                    dispatch_ms: some(7).then_some(t + 0.5),
                    client_delay_ms: some(3).then_some(0.125),
                    first_token_ms: some(4).then_some(t + 10.0),
                    chunk_times_ms: vec![],
                    finish_ms: some(6).then_some(t + 50.0),
                    status: statuses[i % statuses.len()],
                    http_status: Some(200),
                    error: None,
                    output_text: String::new(),
                    prompt_tokens: some(8).then_some(100 + i as u64),
                    completion_tokens: some(9).then_some(i as u64 % 300),
                    cached_prompt_tokens: None,
                    finish_reason: None,
                    engine_timings: some(2)
                        .then(|| json!({"predicted_per_token_ms": 12.5 + (i % 3) as f64})),
                },
                repeat: (i % 2) as u32,
                warmup: i < 2,
                verdict: some(13).then(|| Verdict {
                    accepted: i % 3 == 0,
                    reasons: vec![],
                    fenced: false,
                    extracted: None,
                    detail: vec![],
                }),
            }
        })
        .collect()
}

/// The columns' triggers as the migration creates them.
fn column_triggers() -> &'static str {
    let migration = include_str!("../../migrations/20261206000000_run_columns.sql");
    &migration[migration.find("CREATE TRIGGER").unwrap()..]
}

/// Runs SQL on the file with the columns' triggers lifted, then restores them: a database
/// written before the columns existed, or changed behind the store's back.
async fn without_column_triggers(store: &Store, sql: &str) {
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
        "DROP TRIGGER run_columns_finished_no_insert; \
         DROP TRIGGER run_columns_finished_no_update; \
         DROP TRIGGER run_columns_finished_no_delete; {sql}; {}",
        column_triggers()
    )))
    .execute(store.pool())
    .await
    .unwrap();
}

async fn study_of_every_kind_of_row(store: &Store) -> (i64, Vec<i64>) {
    let sid = store
        .insert_study(
            &NewStudy {
                name: "columns".into(),
                description: String::new(),
            },
            Provenance::User,
        )
        .await
        .unwrap()
        .id;
    let b0 = frozen(store, sid, "B0", B0).await;
    let q8 = frozen(store, sid, "Q8", Q8).await;
    let q8_manifest = Manifest::from_json(Q8).unwrap();
    let all = items();
    let sha = demo_sha();
    let mut runs = vec![
        // Stored before digests: recomputed from the corpus.
        run(store, sid, b0, &sha, &all[..6], |_| None)
            .await
            .unwrap(),
        run(store, sid, q8, &sha, &all[..6], |i| {
            Some(item_prompt_sha256(i, &q8_manifest))
        })
        .await
        .unwrap(),
        // A corpus nobody can find.
        run(store, sid, q8, &"f".repeat(64), &all[..3], |_| None)
            .await
            .unwrap(),
    ];
    let ids: Vec<String> = all.iter().map(|i| i.id.clone()).collect();
    // More rows than a part holds: three parts.
    runs.push(varied_run(store, sid, b0, (&ids, 97), 2 * kvgate_store::PART_ROWS + 17).await);
    runs.push(varied_run(store, sid, q8, (&ids[2..9], 97), 40).await);
    // A run with no measured request at all.
    runs.push(varied_run(store, sid, q8, (&ids, 97), 0).await);
    // Dictionaries large enough to be looked up on both cores: the second run names items the
    // first numbered and new ones, mixed through both halves of its dictionary.
    let many: Vec<String> = (0..6000).map(|k| format!("many-{k}")).collect();
    runs.push(varied_run(store, sid, b0, (&many, 9001), 6000).await);
    let mixed: Vec<String> = (0..6000)
        .map(|j| format!("many-{}", j * 7 % 9000))
        .collect();
    runs.push(varied_run(store, sid, q8, (&mixed, 9001), 6000).await);
    // The first of those two sent again, by the other cell: the same dictionary, whose numbers
    // the load takes from the first run instead of looking its entries up again.
    runs.push(varied_run(store, sid, q8, (&many, 9001), 6000).await);
    (sid, runs)
}

fn demo_corpora(c: &CorpusRef) -> Result<Vec<CorpusItem>, String> {
    if c.items_sha256 == demo_sha() {
        Ok(items().into_iter().map(CorpusItem::Generated).collect())
    } else {
        Err(format!("no corpus {}", c.items_sha256))
    }
}

/// What the analysis reads of a study is the same from its runs' columns as from their rows (a
/// database written before the columns): every field, absent values, item and prompt numbers,
/// recomputed digests and the notes of runs whose prompts cannot be known; a run of more rows
/// than a part holds is read across its parts in order.
#[tokio::test]
async fn a_study_loads_the_same_from_its_runs_columns_as_from_their_rows() {
    let (_dir, store) = fresh().await;
    let (sid, runs) = study_of_every_kind_of_row(&store).await;
    for &run in &runs {
        assert!(store.has_run_columns(run).await.unwrap(), "run {run}");
    }
    let parts: i64 = sqlx::query_scalar("SELECT count(*) FROM run_columns WHERE run_id = ?")
        .bind(runs[3])
        .fetch_one(store.pool())
        .await
        .unwrap();
    assert_eq!(parts, 4, "a dictionary and three parts");
    let dictionary = |run: i64| {
        sqlx::query_scalar::<_, String>(
            "SELECT sha256 FROM run_columns WHERE run_id = ? AND part = -1",
        )
        .bind(run)
        .fetch_one(store.pool())
    };
    let (first, again, other) = (runs[6], runs[8], runs[7]);
    assert_eq!(
        dictionary(first).await.unwrap(),
        dictionary(again).await.unwrap()
    );
    assert_ne!(
        dictionary(first).await.unwrap(),
        dictionary(other).await.unwrap()
    );
    let from_columns = load_study(&store, sid, &mut demo_corpora).await.unwrap();
    let measured: usize = from_columns
        .cells
        .iter()
        .flat_map(|c| &c.runs)
        .map(|r| r.requests.len())
        .sum();
    assert_eq!(
        measured,
        6 + 6 + 3 + 2 * kvgate_store::PART_ROWS + 17 + 40 + 3 * 6000
    );

    without_column_triggers(&store, "DELETE FROM run_columns").await;
    for &run in &runs {
        assert!(!store.has_run_columns(run).await.unwrap());
    }
    let from_rows = load_study(&store, sid, &mut demo_corpora).await.unwrap();
    assert_eq!(from_columns, from_rows);
    // The comparison sees what matters: absent values, prompts and the notes are there.
    let varied = &from_rows.cells[0].runs[1].requests;
    assert!(varied.iter().any(|r| r.item.is_none()));
    assert!(varied.iter().any(|r| r.accepted.is_none()));
    assert!(varied.iter().any(|r| r.dispatch_ms.get().is_none()));
    assert!(varied.iter().any(|r| r.engine_itl_ms.get() == Some(13.5)));
    assert!(varied
        .iter()
        .any(|r| r.prompt_tokens.get().is_none() && r.item_input_tokens.get().is_some()));
    assert!(from_rows.cells[1].runs[1].prompt_note.is_some());
}

/// Columns that are not what the run finished with are refused with the run and the part
/// named, never read: bytes that are not their sha256, a row naming an item the dictionary does
/// not hold (its digest recomputed to match), a count that is not the run's measured requests;
/// and a finished run's columns cannot be changed at all.
/// A run's columns, part by part: number, rows, sha256 and bytes.
async fn columns_of(store: &Store, run: i64) -> Vec<(i64, i64, String, Vec<u8>)> {
    sqlx::query_as(
        "SELECT part, rows, sha256, data FROM run_columns WHERE run_id = ? ORDER BY part",
    )
    .bind(run)
    .fetch_all(store.pool())
    .await
    .unwrap()
}

/// A run's columns are built from its rows as they are written when they come in plan order,
/// and read back from the stored rows when they do not: both ways give the same bytes, and the
/// same ok and failed counts as counting the stored rows. The rows include what SQLite does not
/// hand back as given (a time of `-0.0` reads back as `0.0`), and one out of order only after a
/// whole part was built and written.
#[tokio::test]
async fn a_runs_columns_built_as_its_rows_are_written_are_those_read_back_from_them() {
    let (_dir, store) = fresh().await;
    let sid = new_study(&store, "built").await;
    let b0 = frozen(&store, sid, "B0", B0).await;
    let ids: Vec<String> = items().iter().map(|i| i.id.clone()).collect();
    let mut in_order = varied_requests((&ids, 97), kvgate_store::PART_ROWS + 300);
    for (k, r) in in_order.iter_mut().enumerate().skip(2).step_by(1000) {
        let record = &mut r.record;
        match k % 4 {
            0 => record.planned_arrival_ms = -0.0,
            1 => record.dispatch_ms = Some(-0.0),
            2 => record.finish_ms = Some(-0.0),
            _ => record.engine_timings = Some(json!({"predicted_per_token_ms": -0.0})),
        }
    }
    // The warm-ups last: not measured, so the measured rows are still in plan order.
    let mut warmups_last = in_order.clone();
    warmups_last.rotate_left(2);
    assert!(warmups_last[warmups_last.len() - 1].warmup);
    // Two measured rows swapped after the first part is full.
    let mut swapped = in_order.clone();
    let at = kvgate_store::PART_ROWS + 100;
    swapped.swap(at, at + 1);

    let built = finished_quality_run(&store, sid, b0, &in_order).await;
    let built_warmups_last = finished_quality_run(&store, sid, b0, &warmups_last).await;
    let read_back = finished_quality_run(&store, sid, b0, &swapped).await;

    let columns = columns_of(&store, built).await;
    assert_eq!(columns.len(), 3, "a dictionary and two parts");
    assert_eq!(columns[0].1, (kvgate_store::PART_ROWS + 300) as i64);
    assert!(columns == columns_of(&store, built_warmups_last).await);
    assert!(columns == columns_of(&store, read_back).await);

    let counted: (i64, i64) = sqlx::query_as(
        "SELECT sum(status = 'ok'), sum(status <> 'ok') FROM run_requests \
         WHERE run_id = ? AND warmup = 0",
    )
    .bind(built)
    .fetch_one(store.pool())
    .await
    .unwrap();
    for run in [built, built_warmups_last, read_back] {
        let record = store.get_run(run).await.unwrap();
        assert_eq!((record.ok, record.failed), counted, "run {run}");
    }
}

#[tokio::test]
async fn columns_that_are_not_the_runs_are_refused_and_cannot_be_changed() {
    let (_dir, store) = fresh().await;
    let (sid, runs) = study_of_every_kind_of_row(&store).await;
    let run = runs[4];
    for sql in [
        format!("UPDATE run_columns SET rows = 3 WHERE run_id = {run}"),
        format!("DELETE FROM run_columns WHERE run_id = {run}"),
        format!(
            "INSERT INTO run_columns (run_id, part, rows, sha256, data) \
             VALUES ({run}, 5, 0, '{}', x'')",
            "0".repeat(64)
        ),
    ] {
        let err = sqlx::query(sqlx::AssertSqlSafe(sql.clone()))
            .execute(store.pool())
            .await
            .unwrap_err();
        assert!(err.to_string().contains("run is finished"), "{sql}: {err}");
    }

    let data: Vec<u8> =
        sqlx::query_scalar("SELECT data FROM run_columns WHERE run_id = ? AND part = 0")
            .bind(run)
            .fetch_one(store.pool())
            .await
            .unwrap();
    let dictionary: Vec<u8> =
        sqlx::query_scalar("SELECT data FROM run_columns WHERE run_id = ? AND part = -1")
            .bind(run)
            .fetch_one(store.pool())
            .await
            .unwrap();
    let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
    let sha = kvgate_core::canonical::sha256_hex;
    let load = || async {
        load_study(&store, sid, &mut demo_corpora)
            .await
            .unwrap_err()
            .to_string()
    };
    let set = |part: i64, bytes: &[u8], digest: String| {
        format!(
            "UPDATE run_columns SET data = x'{}', sha256 = '{digest}' \
             WHERE run_id = {run} AND part = {part}",
            hex(bytes)
        )
    };

    // A verdict flipped, its digest left.
    let mut flipped = data.clone();
    let rows = flipped.len() / 78;
    flipped[12 * rows + rows] ^= 1;
    without_column_triggers(&store, &set(0, &flipped, sha(&data))).await;
    let err = load().await;
    assert!(
        err.contains("run_columns")
            && err.contains(&format!("run {run}, part 0: its bytes are not its sha256")),
        "{err}"
    );

    // The first row's item one past the dictionary's, the digest recomputed.
    let items = u32::from_le_bytes(dictionary[16..20].try_into().unwrap());
    let mut beyond = data.clone();
    beyond[..4].copy_from_slice(&items.to_le_bytes());
    without_column_triggers(&store, &set(0, &beyond, sha(&beyond))).await;
    let err = load().await;
    assert!(
        err.contains("part 0: row 0 names no stored item or prompt"),
        "{err}"
    );

    // The part restored; the dictionary counting one row more, its digest recomputed.
    without_column_triggers(&store, &set(0, &data, sha(&data))).await;
    let mut more = dictionary.clone();
    let total = u64::from_le_bytes(more[4..12].try_into().unwrap());
    more[4..12].copy_from_slice(&(total + 1).to_le_bytes());
    without_column_triggers(&store, &set(-1, &more, sha(&more))).await;
    let err = load().await;
    assert!(
        err.contains(&format!(
            "part -1: counts {} rows, the run has {total} measured requests",
            total + 1
        )),
        "{err}"
    );

    // A part that holds a number, not bytes: refused by SQLite, named by run and part.
    without_column_triggers(&store, &set(-1, &dictionary, sha(&dictionary))).await;
    without_column_triggers(
        &store,
        &format!("UPDATE run_columns SET data = 7 WHERE run_id = {run} AND part = 0"),
    )
    .await;
    let err = load().await;
    assert!(
        err.contains(&format!("run {run}, part 0: its bytes cannot be read")),
        "{err}"
    );

    // Restored whole: the study loads again.
    without_column_triggers(&store, &set(0, &data, sha(&data))).await;
    load_study(&store, sid, &mut demo_corpora).await.unwrap();
}
