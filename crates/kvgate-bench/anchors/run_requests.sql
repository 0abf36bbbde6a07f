-- The import benchmark's anchors write into this table: `run_requests` of
-- crates/kvgate-store/migrations/20261201020000_runs.sql with the same columns, types, CHECKs,
-- primary key and STRICT typing. Left out, because they need the `runs` table KV Gate's store
-- has and the anchors do not: the foreign key to `runs` (KV Gate checks it on every row) and the
-- trigger `run_requests_finished_no_insert` (KV Gate runs its lookup of the run's state on every
-- row). The database uses the store's own settings: WAL journal, synchronous = NORMAL.
PRAGMA journal_mode = WAL;

CREATE TABLE run_requests (
    run_id               INTEGER NOT NULL,
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
    chunk_times_json     TEXT    NOT NULL CHECK (json_valid(chunk_times_json) AND json_type(chunk_times_json) = 'array'),
    engine_timings_json  TEXT    CHECK (engine_timings_json IS NULL OR json_valid(engine_timings_json)),
    verdict_accepted     INTEGER CHECK (verdict_accepted IS NULL OR verdict_accepted IN (0, 1)),
    verdict_reasons_json TEXT    CHECK (verdict_reasons_json IS NULL OR (json_valid(verdict_reasons_json) AND json_type(verdict_reasons_json) = 'array')),
    verdict_json         TEXT    CHECK (verdict_json IS NULL OR json_valid(verdict_json)),
    CHECK ((verdict_json IS NULL) = (verdict_accepted IS NULL)),
    CHECK ((verdict_json IS NULL) = (verdict_reasons_json IS NULL)),
    PRIMARY KEY (run_id, warmup, idx)
) STRICT;
