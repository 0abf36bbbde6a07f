-- Studies: one review of one KV-precision change each.
CREATE TABLE studies (
    id          INTEGER PRIMARY KEY,
    name        TEXT    NOT NULL UNIQUE COLLATE NOCASE CHECK (length(trim(name)) > 0),
    description TEXT    NOT NULL DEFAULT '',
    provenance  TEXT    NOT NULL CHECK (provenance IN ('synthetic_demo', 'user')),
    created_at  TEXT    NOT NULL
) STRICT;

-- Small workspace-wide facts (last opened study, whether the demo was seeded).
CREATE TABLE settings (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) STRICT;
