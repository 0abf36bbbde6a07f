-- Review of paired disagreements. Every label (and later sign-off and decision) is appended to
-- the study's audit chain: each event carries the hash of the one before and its own hash over
-- its content, so an edit made outside the app shows when the chain is verified. The current
-- label of each pair is kept in `adjudications` for queries; it must always equal what the chain
-- replays, and the app says so when it does not.

-- The seed of a study's blind A/B order, recorded once.
CREATE TABLE review_queues (
    study_id   INTEGER PRIMARY KEY REFERENCES studies (id) ON DELETE RESTRICT,
    seed       TEXT    NOT NULL CHECK (length(seed) > 0),
    created_at TEXT    NOT NULL CHECK (julianday(created_at) IS NOT NULL)
) STRICT;

CREATE TRIGGER review_queues_no_update
BEFORE UPDATE ON review_queues
BEGIN
    SELECT RAISE(ABORT, 'the blind order seed is recorded: it never changes');
END;

CREATE TABLE audit_events (
    study_id      INTEGER NOT NULL REFERENCES studies (id) ON DELETE RESTRICT,
    seq           INTEGER NOT NULL CHECK (seq >= 1),
    at            TEXT    NOT NULL CHECK (julianday(at) IS NOT NULL),
    actor         TEXT    NOT NULL CHECK (length(trim(actor)) > 0),
    kind          TEXT    NOT NULL CHECK (kind IN ('label', 'signoff', 'decision')),
    subject       TEXT    NOT NULL,
    payload_json  TEXT    NOT NULL CHECK (json_valid(payload_json)),
    previous_json TEXT    CHECK (previous_json IS NULL OR json_valid(previous_json)),
    prev_hash     TEXT    NOT NULL CHECK (length(prev_hash) = 64),
    hash          TEXT    NOT NULL CHECK (length(hash) = 64),
    PRIMARY KEY (study_id, seq)
) STRICT;

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

CREATE TABLE adjudications (
    study_id     INTEGER NOT NULL REFERENCES studies (id) ON DELETE RESTRICT,
    pair_id      TEXT    NOT NULL,
    label        TEXT    NOT NULL CHECK (label IN ('candidate_regression', 'baseline_error',
                             'both_acceptable', 'both_wrong', 'ambiguous_item')),
    note         TEXT    NOT NULL,
    labelled_by  TEXT    NOT NULL,
    labelled_at  TEXT    NOT NULL,
    -- The audit event that set this label.
    event_seq    INTEGER NOT NULL,
    PRIMARY KEY (study_id, pair_id),
    FOREIGN KEY (study_id, event_seq) REFERENCES audit_events (study_id, seq)
) STRICT;
