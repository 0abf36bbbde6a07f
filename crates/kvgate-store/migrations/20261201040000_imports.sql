-- Files imported from other tools. An import binds one source file (by its sha256) to one cell
-- of one study, records how it was read (format, parser version, warnings) and how many rows it
-- produced, and owns the runs it created. It is written in the same transaction as those runs:
-- a failed import leaves nothing. The same file is imported into a study once.
CREATE TABLE imports (
    id             INTEGER PRIMARY KEY,
    study_id       INTEGER NOT NULL REFERENCES studies (id) ON DELETE RESTRICT,
    manifest_id    INTEGER NOT NULL REFERENCES manifests (id) ON DELETE RESTRICT,
    format         TEXT    NOT NULL CHECK (format IN ('vllm-bench', 'guidellm', 'aiperf',
                       'inference-perf', 'prometheus', 'vllm-log', 'llamacpp-log', 'jsonl', 'csv',
                       'parquet')),
    parser_version TEXT    NOT NULL,
    -- The tool and version the file names, when it does.
    tool           TEXT,
    -- The file name as given (no directories).
    source_name    TEXT    NOT NULL,
    source_sha256  TEXT    NOT NULL
                   CHECK (length(source_sha256) = 64 AND source_sha256 NOT GLOB '*[^0-9a-f]*'),
    source_bytes   INTEGER NOT NULL CHECK (source_bytes >= 0),
    imported_at    TEXT    NOT NULL CHECK (julianday(imported_at) IS NOT NULL),
    -- The column mapping of a CSV or Parquet import, or other reading options, as JSON.
    options_json   TEXT    CHECK (options_json IS NULL OR json_valid(options_json)),
    runs           INTEGER NOT NULL CHECK (runs >= 0),
    requests       INTEGER NOT NULL CHECK (requests >= 0),
    aggregates     INTEGER NOT NULL CHECK (aggregates >= 0),
    scrapes        INTEGER NOT NULL CHECK (scrapes >= 0),
    evidence       INTEGER NOT NULL CHECK (evidence >= 0),
    -- Every correction the parser made, a JSON array of {at, message, rows}.
    warnings_json  TEXT    NOT NULL CHECK (json_valid(warnings_json) AND json_type(warnings_json) = 'array'),
    UNIQUE (study_id, source_sha256)
) STRICT;

CREATE INDEX imports_by_study ON imports (study_id, id);

CREATE TRIGGER imports_no_update
BEFORE UPDATE ON imports
BEGIN
    SELECT RAISE(ABORT, 'import is recorded: an import never changes');
END;

CREATE TRIGGER imports_no_delete
BEFORE DELETE ON imports
BEGIN
    SELECT RAISE(ABORT, 'import is recorded: an import is never deleted');
END;

CREATE TRIGGER imports_need_frozen_manifest
BEFORE INSERT ON imports
WHEN NOT EXISTS (
    SELECT 1 FROM manifests
    WHERE id = NEW.manifest_id AND study_id = NEW.study_id AND frozen_at IS NOT NULL
)
BEGIN
    SELECT RAISE(ABORT, 'import needs a frozen manifest: the manifest is a draft, missing or of another study');
END;

-- Which import created a run (NULL for runs KV Gate executed), and how much of a run its source
-- carries: one row per request, only the tool's aggregates, or evidence alone (a startup log,
-- metric scrapes) with no requests at all.
ALTER TABLE runs ADD COLUMN import_id INTEGER REFERENCES imports (id) ON DELETE RESTRICT;
ALTER TABLE runs ADD COLUMN granularity TEXT NOT NULL DEFAULT 'per_request'
    CHECK (granularity IN ('per_request', 'aggregate', 'evidence'));

CREATE INDEX runs_by_import ON runs (import_id);

CREATE TRIGGER runs_import_no_update
BEFORE UPDATE OF import_id, granularity ON runs
WHEN NEW.import_id IS NOT OLD.import_id OR NEW.granularity IS NOT OLD.granularity
BEGIN
    SELECT RAISE(ABORT, 'run identity cannot change: its import and granularity are fixed at creation');
END;

-- Numbers a tool reported about a whole run (totals, rates, its own percentiles), verbatim with
-- their unit. They are the tool's figures, shown as such; KV Gate's own statistics are computed
-- from request rows where rows exist.
CREATE TABLE run_aggregates (
    run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE RESTRICT,
    seq    INTEGER NOT NULL CHECK (seq >= 0),
    name   TEXT    NOT NULL,
    stat   TEXT    NOT NULL,
    value  REAL    NOT NULL,
    unit   TEXT    NOT NULL,
    PRIMARY KEY (run_id, seq)
) STRICT;

CREATE TRIGGER run_aggregates_finished_no_insert
BEFORE INSERT ON run_aggregates
WHEN (SELECT state FROM runs WHERE id = NEW.run_id) <> 'running'
BEGIN
    SELECT RAISE(ABORT, 'run is finished: its aggregates cannot change');
END;

CREATE TRIGGER run_aggregates_finished_no_update
BEFORE UPDATE ON run_aggregates
WHEN (SELECT state FROM runs WHERE id = OLD.run_id) <> 'running'
  OR (SELECT state FROM runs WHERE id = NEW.run_id) <> 'running'
BEGIN
    SELECT RAISE(ABORT, 'run is finished: its aggregates cannot change');
END;

CREATE TRIGGER run_aggregates_finished_no_delete
BEFORE DELETE ON run_aggregates
WHEN (SELECT state FROM runs WHERE id = OLD.run_id) <> 'running'
BEGIN
    SELECT RAISE(ABORT, 'run is finished: its aggregates cannot change');
END;

DROP VIEW run_records;

CREATE VIEW run_records (
    id, study_id, manifest_id, cell, kind, state, label, provenance, config_json, config_sha256,
    wall_anchor_unix_ms, started_at, finished_at, elapsed_ms, planned, ok, failed, note,
    import_id, granularity
) AS
SELECT r.id, r.study_id, r.manifest_id, m.cell, r.kind, r.state, r.label, r.provenance,
       r.config_json, r.config_sha256, r.wall_anchor_unix_ms, r.started_at, r.finished_at,
       r.elapsed_ms, r.planned, r.ok, r.failed, r.note, r.import_id, r.granularity
FROM runs r JOIN manifests m ON m.id = r.manifest_id;
