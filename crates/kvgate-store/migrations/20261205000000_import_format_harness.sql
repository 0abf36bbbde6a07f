-- no-transaction
-- An import may also read evaluation-harness results: lm-evaluation-harness `--log_samples`
-- files ('lm-eval-samples') and Inspect AI logs ('inspect'), stored as quality runs. SQLite cannot
-- alter a CHECK, so the table is rebuilt with its rows, index and triggers unchanged; foreign
-- keys are off only for the rebuild (runs keep pointing at the same import ids).
PRAGMA foreign_keys = OFF;
BEGIN IMMEDIATE;
CREATE TABLE imports_rebuilt (
    id             INTEGER PRIMARY KEY,
    study_id       INTEGER NOT NULL REFERENCES studies (id) ON DELETE RESTRICT,
    manifest_id    INTEGER NOT NULL REFERENCES manifests (id) ON DELETE RESTRICT,
    format         TEXT    NOT NULL CHECK (format IN ('vllm-bench', 'guidellm', 'aiperf',
                       'inference-perf', 'prometheus', 'vllm-log', 'llamacpp-log', 'nvidia-smi',
                       'jsonl', 'lm-eval-samples', 'inspect', 'csv', 'parquet')),
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
INSERT INTO imports_rebuilt (id, study_id, manifest_id, format, parser_version, tool, source_name,
                             source_sha256, source_bytes, imported_at, options_json, runs,
                             requests, aggregates, scrapes, evidence, warnings_json)
    SELECT id, study_id, manifest_id, format, parser_version, tool, source_name, source_sha256,
           source_bytes, imported_at, options_json, runs, requests, aggregates, scrapes,
           evidence, warnings_json
    FROM imports;
DROP TABLE imports;
ALTER TABLE imports_rebuilt RENAME TO imports;

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
COMMIT;
PRAGMA foreign_keys = ON;
