-- Runs of a frozen manifest against a server. A run is created `running`; everything it measured
-- (requests, evidence, metric scrapes) is written in the same transaction that sets its final
-- state. Once the state is no longer `running` the run and everything under it is immutable.
CREATE TABLE runs (
    id                  INTEGER PRIMARY KEY,
    study_id            INTEGER NOT NULL REFERENCES studies (id) ON DELETE RESTRICT,
    manifest_id         INTEGER NOT NULL REFERENCES manifests (id) ON DELETE RESTRICT,
    kind                TEXT    NOT NULL CHECK (kind IN ('quality', 'load')),
    state               TEXT    NOT NULL
                        CHECK (state IN ('running', 'completed', 'cancelled', 'interrupted', 'failed')),
    label               TEXT    NOT NULL,
    provenance          TEXT    NOT NULL CHECK (provenance IN ('recorded', 'imported', 'synthetic_demo')),
    -- Canonical JSON of the run's configuration (endpoint without key, seed, arrivals, corpus digest).
    config_json         TEXT    NOT NULL CHECK (json_valid(config_json)),
    config_sha256       TEXT    NOT NULL
                        CHECK (length(config_sha256) = 64 AND config_sha256 NOT GLOB '*[^0-9a-f]*'),
    -- Unix milliseconds of the run clock's zero; every request time is relative to it.
    wall_anchor_unix_ms INTEGER NOT NULL,
    started_at          TEXT    NOT NULL CHECK (julianday(started_at) IS NOT NULL),
    finished_at         TEXT    CHECK (finished_at IS NULL OR julianday(finished_at) IS NOT NULL),
    elapsed_ms          REAL    CHECK (elapsed_ms IS NULL OR elapsed_ms >= 0),
    planned             INTEGER CHECK (planned IS NULL OR planned >= 0),
    -- Measured (non-warmup) requests that ended `ok`, and those that did not.
    ok                  INTEGER NOT NULL DEFAULT 0 CHECK (ok >= 0),
    failed              INTEGER NOT NULL DEFAULT 0 CHECK (failed >= 0),
    note                TEXT,
    -- The process executing the run (NULL for imports): a running run whose process is gone
    -- is marked interrupted by the next process that opens the database.
    owner_pid           INTEGER,
    CHECK ((state = 'running') = (finished_at IS NULL))
) STRICT;

CREATE INDEX runs_by_study ON runs (study_id, id);
CREATE INDEX runs_by_manifest ON runs (manifest_id);

-- A run as the store returns it: with the cell of its manifest.
CREATE VIEW run_records (
    id, study_id, manifest_id, cell, kind, state, label, provenance, config_json, config_sha256,
    wall_anchor_unix_ms, started_at, finished_at, elapsed_ms, planned, ok, failed, note
) AS
SELECT r.id, r.study_id, r.manifest_id, m.cell, r.kind, r.state, r.label, r.provenance,
       r.config_json, r.config_sha256, r.wall_anchor_unix_ms, r.started_at, r.finished_at,
       r.elapsed_ms, r.planned, r.ok, r.failed, r.note
FROM runs r JOIN manifests m ON m.id = r.manifest_id;

-- One row per request the run planned, warmups included. Every measurement that was not taken
-- is NULL, never 0. The validator's verdict, when the run judged responses, sits on the same row.
CREATE TABLE run_requests (
    run_id               INTEGER NOT NULL REFERENCES runs (id) ON DELETE RESTRICT,
    warmup               INTEGER NOT NULL CHECK (warmup IN (0, 1)),
    idx                  INTEGER NOT NULL CHECK (idx BETWEEN 0 AND 4294967295),
    repeat               INTEGER NOT NULL CHECK (repeat BETWEEN 0 AND 4294967295),
    item_id              TEXT,
    status               TEXT    NOT NULL
                         CHECK (status IN ('ok', 'error', 'timeout', 'rejected', 'unfinished')),
    planned_arrival_ms   REAL    NOT NULL,
    dispatch_ms          REAL,
    client_delay_ms      REAL,
    first_token_ms       REAL,
    finish_ms            REAL,
    http_status          INTEGER CHECK (http_status IS NULL OR http_status BETWEEN 0 AND 65535),
    prompt_tokens        INTEGER CHECK (prompt_tokens IS NULL OR prompt_tokens >= 0),
    completion_tokens    INTEGER CHECK (completion_tokens IS NULL OR completion_tokens >= 0),
    cached_prompt_tokens INTEGER CHECK (cached_prompt_tokens IS NULL OR cached_prompt_tokens >= 0),
    finish_reason        TEXT,
    error                TEXT,
    output_text          TEXT    NOT NULL,
    -- Arrival of every text chunk, a JSON array of milliseconds.
    chunk_times_json     TEXT    NOT NULL CHECK (json_valid(chunk_times_json) AND json_type(chunk_times_json) = 'array'),
    -- The engine's own timing object verbatim; NULL when the engine sent none.
    engine_timings_json  TEXT    CHECK (engine_timings_json IS NULL OR json_valid(engine_timings_json)),
    verdict_accepted     INTEGER CHECK (verdict_accepted IS NULL OR verdict_accepted IN (0, 1)),
    -- The verdict's reason codes, a JSON array, for queries; `verdict_json` is the whole verdict.
    verdict_reasons_json TEXT    CHECK (verdict_reasons_json IS NULL OR (json_valid(verdict_reasons_json) AND json_type(verdict_reasons_json) = 'array')),
    verdict_json         TEXT    CHECK (verdict_json IS NULL OR json_valid(verdict_json)),
    CHECK ((verdict_json IS NULL) = (verdict_accepted IS NULL)),
    CHECK ((verdict_json IS NULL) = (verdict_reasons_json IS NULL)),
    PRIMARY KEY (run_id, warmup, idx)
) STRICT;

-- Server-side evidence captured for the run, text exactly as captured.
CREATE TABLE run_evidence (
    run_id      INTEGER NOT NULL REFERENCES runs (id) ON DELETE RESTRICT,
    seq         INTEGER NOT NULL CHECK (seq >= 0),
    kind        TEXT    NOT NULL
                CHECK (kind IN ('startup_log', 'cache_config_info', 'metrics', 'compatibility')),
    source_name TEXT    NOT NULL,
    sha256      TEXT    NOT NULL CHECK (length(sha256) = 64 AND sha256 NOT GLOB '*[^0-9a-f]*'),
    text        TEXT    NOT NULL,
    parsed_json TEXT    CHECK (parsed_json IS NULL OR json_valid(parsed_json)),
    PRIMARY KEY (run_id, seq)
) STRICT;

-- Scrapes of the server's metrics endpoint during the run, at run-clock milliseconds.
CREATE TABLE run_metric_scrapes (
    run_id      INTEGER NOT NULL REFERENCES runs (id) ON DELETE RESTRICT,
    seq         INTEGER NOT NULL CHECK (seq >= 0),
    at_ms       REAL    NOT NULL,
    values_json TEXT    NOT NULL CHECK (json_valid(values_json)),
    PRIMARY KEY (run_id, seq)
) STRICT;

-- A run measures one frozen manifest of its own study, and always starts running with no counts.
CREATE TRIGGER runs_need_frozen_manifest
BEFORE INSERT ON runs
WHEN NOT EXISTS (
    SELECT 1 FROM manifests
    WHERE id = NEW.manifest_id AND study_id = NEW.study_id AND frozen_at IS NOT NULL
)
BEGIN
    SELECT RAISE(ABORT, 'run needs a frozen manifest: the manifest is a draft, missing or of another study');
END;

CREATE TRIGGER runs_start_running
BEFORE INSERT ON runs
WHEN NEW.state <> 'running' OR NEW.ok <> 0 OR NEW.failed <> 0
BEGIN
    SELECT RAISE(ABORT, 'run starts running: a new run has no final state and no counts');
END;

CREATE TRIGGER runs_finished_no_update
BEFORE UPDATE ON runs
WHEN OLD.state <> 'running'
BEGIN
    SELECT RAISE(ABORT, 'run is finished: a finished run cannot change');
END;

CREATE TRIGGER runs_finished_no_delete
BEFORE DELETE ON runs
WHEN OLD.state <> 'running'
BEGIN
    SELECT RAISE(ABORT, 'run is finished: a finished run cannot be deleted');
END;

-- What was run, where and how never changes, not even while the run is running.
CREATE TRIGGER runs_identity_no_update
BEFORE UPDATE ON runs
WHEN OLD.state = 'running' AND (
    NEW.id IS NOT OLD.id
    OR NEW.study_id IS NOT OLD.study_id
    OR NEW.manifest_id IS NOT OLD.manifest_id
    OR NEW.kind IS NOT OLD.kind
    OR NEW.label IS NOT OLD.label
    OR NEW.provenance IS NOT OLD.provenance
    OR NEW.config_json IS NOT OLD.config_json
    OR NEW.config_sha256 IS NOT OLD.config_sha256
    OR NEW.wall_anchor_unix_ms IS NOT OLD.wall_anchor_unix_ms
    OR NEW.started_at IS NOT OLD.started_at
)
BEGIN
    SELECT RAISE(ABORT, 'run identity cannot change: its manifest, configuration and start are fixed at creation');
END;

-- Nothing under a finished run can be added, changed or removed.
CREATE TRIGGER run_requests_finished_no_insert
BEFORE INSERT ON run_requests
WHEN (SELECT state FROM runs WHERE id = NEW.run_id) <> 'running'
BEGIN
    SELECT RAISE(ABORT, 'run is finished: its requests cannot change');
END;

CREATE TRIGGER run_requests_finished_no_update
BEFORE UPDATE ON run_requests
WHEN (SELECT state FROM runs WHERE id = OLD.run_id) <> 'running'
  OR (SELECT state FROM runs WHERE id = NEW.run_id) <> 'running'
BEGIN
    SELECT RAISE(ABORT, 'run is finished: its requests cannot change');
END;

CREATE TRIGGER run_requests_finished_no_delete
BEFORE DELETE ON run_requests
WHEN (SELECT state FROM runs WHERE id = OLD.run_id) <> 'running'
BEGIN
    SELECT RAISE(ABORT, 'run is finished: its requests cannot change');
END;

CREATE TRIGGER run_evidence_finished_no_insert
BEFORE INSERT ON run_evidence
WHEN (SELECT state FROM runs WHERE id = NEW.run_id) <> 'running'
BEGIN
    SELECT RAISE(ABORT, 'run is finished: its evidence cannot change');
END;

CREATE TRIGGER run_evidence_finished_no_update
BEFORE UPDATE ON run_evidence
WHEN (SELECT state FROM runs WHERE id = OLD.run_id) <> 'running'
  OR (SELECT state FROM runs WHERE id = NEW.run_id) <> 'running'
BEGIN
    SELECT RAISE(ABORT, 'run is finished: its evidence cannot change');
END;

CREATE TRIGGER run_evidence_finished_no_delete
BEFORE DELETE ON run_evidence
WHEN (SELECT state FROM runs WHERE id = OLD.run_id) <> 'running'
BEGIN
    SELECT RAISE(ABORT, 'run is finished: its evidence cannot change');
END;

CREATE TRIGGER run_metric_scrapes_finished_no_insert
BEFORE INSERT ON run_metric_scrapes
WHEN (SELECT state FROM runs WHERE id = NEW.run_id) <> 'running'
BEGIN
    SELECT RAISE(ABORT, 'run is finished: its metric scrapes cannot change');
END;

CREATE TRIGGER run_metric_scrapes_finished_no_update
BEFORE UPDATE ON run_metric_scrapes
WHEN (SELECT state FROM runs WHERE id = OLD.run_id) <> 'running'
  OR (SELECT state FROM runs WHERE id = NEW.run_id) <> 'running'
BEGIN
    SELECT RAISE(ABORT, 'run is finished: its metric scrapes cannot change');
END;

CREATE TRIGGER run_metric_scrapes_finished_no_delete
BEFORE DELETE ON run_metric_scrapes
WHEN (SELECT state FROM runs WHERE id = OLD.run_id) <> 'running'
BEGIN
    SELECT RAISE(ABORT, 'run is finished: its metric scrapes cannot change');
END;
