-- The recovery plan of a study (check 4): canary route, breach rule, drain deadline, admission
-- before restore and a dated rehearsal, recorded by the service owner as canonical JSON with its
-- sha256. A recorded version never changes; a new plan is a new version, and the recovery check's
-- evidence (and so any signature over it) follows the latest one.
CREATE TABLE recovery_plans (
    id          INTEGER PRIMARY KEY,
    study_id    INTEGER NOT NULL REFERENCES studies (id) ON DELETE RESTRICT,
    version     INTEGER NOT NULL CHECK (version >= 1),
    plan_json   TEXT    NOT NULL CHECK (json_valid(plan_json)),
    sha256      TEXT    NOT NULL
                CHECK (length(sha256) = 64 AND sha256 NOT GLOB '*[^0-9a-f]*'),
    recorded_at TEXT    NOT NULL CHECK (julianday(recorded_at) IS NOT NULL),
    recorded_by TEXT    NOT NULL CHECK (length(trim(recorded_by)) > 0),
    UNIQUE (study_id, version)
) STRICT;

CREATE TRIGGER recovery_plans_no_update
BEFORE UPDATE ON recovery_plans
BEGIN
    SELECT RAISE(ABORT, 'a recorded recovery plan never changes; record a new version');
END;

CREATE TRIGGER recovery_plans_no_delete
BEFORE DELETE ON recovery_plans
BEGIN
    SELECT RAISE(ABORT, 'a recorded recovery plan is never deleted');
END;

CREATE TRIGGER recovery_plans_next_version
BEFORE INSERT ON recovery_plans
WHEN NEW.version != 1 + coalesce((SELECT max(version) FROM recovery_plans WHERE study_id = NEW.study_id), 0)
BEGIN
    SELECT RAISE(ABORT, 'recovery plan version must follow the latest version of its study');
END;
