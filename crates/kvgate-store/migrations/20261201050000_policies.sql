-- The acceptance policy of a study, pre-registered by the service owner. Locking stores the
-- canonical JSON with its sha256, time and author; a locked version never changes. A change is a
-- new version; when results existed at that moment the version says so, permanently.
CREATE TABLE policies (
    id                    INTEGER PRIMARY KEY,
    study_id              INTEGER NOT NULL REFERENCES studies (id) ON DELETE RESTRICT,
    version               INTEGER NOT NULL CHECK (version >= 1),
    policy_json           TEXT    NOT NULL CHECK (json_valid(policy_json)),
    sha256                TEXT    NOT NULL
                          CHECK (length(sha256) = 64 AND sha256 NOT GLOB '*[^0-9a-f]*'),
    locked_at             TEXT    NOT NULL CHECK (julianday(locked_at) IS NOT NULL),
    locked_by             TEXT    NOT NULL CHECK (length(trim(locked_by)) > 0),
    -- Runs of the study holding measured requests when this version was locked.
    runs_at_lock          INTEGER NOT NULL CHECK (runs_at_lock >= 0),
    changed_after_results INTEGER NOT NULL CHECK (changed_after_results IN (0, 1)),
    CHECK (version > 1 OR changed_after_results = 0),
    UNIQUE (study_id, version)
) STRICT;

CREATE TRIGGER policies_no_update
BEFORE UPDATE ON policies
BEGIN
    SELECT RAISE(ABORT, 'policy is locked: a locked policy never changes; lock a new version');
END;

CREATE TRIGGER policies_no_delete
BEFORE DELETE ON policies
BEGIN
    SELECT RAISE(ABORT, 'policy is locked: a locked policy is never deleted');
END;

-- Versions follow one another without gaps.
CREATE TRIGGER policies_next_version
BEFORE INSERT ON policies
WHEN NEW.version != 1 + coalesce((SELECT max(version) FROM policies WHERE study_id = NEW.study_id), 0)
BEGIN
    SELECT RAISE(ABORT, 'policy version must follow the latest locked version of its study');
END;
