-- no-transaction
-- An audit event may also be an 'intervention': a named intervention (who, why, which
-- held-constant findings it accepts) recorded for a candidate. SQLite cannot alter a CHECK, so the
-- table is rebuilt with its rows, hashes and triggers unchanged; foreign keys are off only for the
-- rebuild (adjudications keep pointing at the same (study_id, seq)).
PRAGMA foreign_keys = OFF;
BEGIN IMMEDIATE;
CREATE TABLE audit_events_rebuilt (
    study_id      INTEGER NOT NULL REFERENCES studies (id) ON DELETE RESTRICT,
    seq           INTEGER NOT NULL CHECK (seq >= 1),
    at            TEXT    NOT NULL CHECK (julianday(at) IS NOT NULL),
    actor         TEXT    NOT NULL CHECK (length(trim(actor)) > 0),
    kind          TEXT    NOT NULL CHECK (kind IN ('label', 'signoff', 'decision', 'intervention')),
    subject       TEXT    NOT NULL,
    payload_json  TEXT    NOT NULL CHECK (json_valid(payload_json)),
    previous_json TEXT    CHECK (previous_json IS NULL OR json_valid(previous_json)),
    prev_hash     TEXT    NOT NULL CHECK (length(prev_hash) = 64),
    hash          TEXT    NOT NULL CHECK (length(hash) = 64),
    PRIMARY KEY (study_id, seq)
) STRICT;
INSERT INTO audit_events_rebuilt (study_id, seq, at, actor, kind, subject, payload_json,
                                  previous_json, prev_hash, hash)
    SELECT study_id, seq, at, actor, kind, subject, payload_json, previous_json, prev_hash, hash
    FROM audit_events;
DROP TABLE audit_events;
ALTER TABLE audit_events_rebuilt RENAME TO audit_events;

CREATE TRIGGER audit_events_no_update
BEFORE UPDATE ON audit_events
BEGIN
    SELECT RAISE(ABORT, 'audit events are append-only: an event never changes');
END;

CREATE TRIGGER audit_events_no_delete
BEFORE DELETE ON audit_events
BEGIN
    SELECT RAISE(ABORT, 'audit events are append-only: an event is never deleted');
END;
COMMIT;
PRAGMA foreign_keys = ON;
