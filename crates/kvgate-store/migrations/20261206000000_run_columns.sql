-- A finished run's measured requests as columns (see `run_columns.rs`): written in the transaction
-- that finishes the run, read by the analysis instead of stepping every row. Part -1 is the run's
-- dictionary (its item ids and prompt digests), parts 0, 1, … hold at most 65,536 rows each; each
-- part carries the sha256 of its bytes. Runs finished before this migration have none and are read
-- from their rows.
CREATE TABLE run_columns (
    id INTEGER PRIMARY KEY,
    run_id INTEGER NOT NULL REFERENCES runs(id),
    part INTEGER NOT NULL CHECK (part >= -1),
    rows INTEGER NOT NULL CHECK (rows >= 0),
    sha256 TEXT NOT NULL CHECK (length(sha256) = 64),
    data BLOB NOT NULL,
    UNIQUE (run_id, part)
);

-- Like the rows they are derived from: nothing under a finished run can be added, changed or
-- removed.
CREATE TRIGGER run_columns_finished_no_insert
BEFORE INSERT ON run_columns
WHEN (SELECT state FROM runs WHERE id = NEW.run_id) <> 'running'
BEGIN
    SELECT RAISE(ABORT, 'run is finished: its columns cannot change');
END;

CREATE TRIGGER run_columns_finished_no_update
BEFORE UPDATE ON run_columns
WHEN (SELECT state FROM runs WHERE id = OLD.run_id) <> 'running'
  OR (SELECT state FROM runs WHERE id = NEW.run_id) <> 'running'
BEGIN
    SELECT RAISE(ABORT, 'run is finished: its columns cannot change');
END;

CREATE TRIGGER run_columns_finished_no_delete
BEFORE DELETE ON run_columns
WHEN (SELECT state FROM runs WHERE id = OLD.run_id) <> 'running'
BEGIN
    SELECT RAISE(ABORT, 'run is finished: its columns cannot change');
END;
