-- no-transaction
-- A study's provenance may also be 'recorded_demo': the demo study seeded from real recorded
-- runs (llama.cpp on CPU), replacing the synthetic demo. SQLite cannot alter a CHECK, so the
-- table is rebuilt; foreign keys are off only for the rebuild and checked before commit.
PRAGMA foreign_keys = OFF;
BEGIN IMMEDIATE;
CREATE TABLE studies_rebuilt (
    id          INTEGER PRIMARY KEY,
    name        TEXT    NOT NULL UNIQUE COLLATE NOCASE CHECK (length(trim(name)) > 0),
    description TEXT    NOT NULL DEFAULT '',
    provenance  TEXT    NOT NULL CHECK (provenance IN ('synthetic_demo', 'recorded_demo', 'user')),
    created_at  TEXT    NOT NULL
) STRICT;
INSERT INTO studies_rebuilt (id, name, description, provenance, created_at)
    SELECT id, name, description, provenance, created_at FROM studies;
DROP TABLE studies;
ALTER TABLE studies_rebuilt RENAME TO studies;
COMMIT;
PRAGMA foreign_keys = ON;
