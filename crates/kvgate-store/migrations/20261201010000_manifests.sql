-- Manifests of deployment bundles. A draft is editable; once frozen (frozen_at and digest set)
-- the row can never change or disappear: changing anything means a new manifest, a new digest.
CREATE TABLE manifests (
    id         INTEGER PRIMARY KEY,
    study_id   INTEGER NOT NULL REFERENCES studies (id) ON DELETE RESTRICT,
    cell       TEXT    NOT NULL CHECK (length(cell) BETWEEN 1 AND 32),
    -- As authored while a draft; the canonical JSON (RFC 8785) the digest covers once frozen.
    text       TEXT    NOT NULL,
    digest     TEXT    CHECK (digest IS NULL OR (length(digest) = 64 AND digest NOT GLOB '*[^0-9a-f]*')),
    created_at TEXT    NOT NULL,
    updated_at TEXT    NOT NULL,
    frozen_at  TEXT,
    CHECK ((frozen_at IS NULL) = (digest IS NULL)),
    UNIQUE (study_id, cell)
) STRICT;

CREATE TRIGGER manifests_frozen_no_update
BEFORE UPDATE ON manifests
WHEN OLD.frozen_at IS NOT NULL
BEGIN
    SELECT RAISE(ABORT, 'manifest is frozen: a frozen manifest cannot change');
END;

CREATE TRIGGER manifests_frozen_no_delete
BEFORE DELETE ON manifests
WHEN OLD.frozen_at IS NOT NULL
BEGIN
    SELECT RAISE(ABORT, 'manifest is frozen: a frozen manifest cannot be deleted');
END;
