-- pkbw run store, schema 5 (issue 19): the code and the artifacts that ran travel with the run.
-- `blobs` holds file contents once each, keyed by the SHA-256 of the bytes (checked when read);
-- `run_files` links a run to the blobs it archived, with the role each played (docs/store.md
-- "Archived files"). Normal stores archive sources, compile diagnostics and logs; a bundle
-- (`pkbw export-bundle`) also archives the run's artifacts (role 'artifact').

CREATE TABLE blobs (
    sha256 TEXT PRIMARY KEY NOT NULL, -- of `data`, 64 lowercase hex digits
    size   INTEGER NOT NULL,
    data   BLOB NOT NULL
);

CREATE TABLE run_files (
    run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    role   TEXT NOT NULL, -- candidate_source, reference_source, compile_log, diagnostics, rank_log, config, artifact
    name   TEXT NOT NULL, -- the file as the run saw it (artifact: its path relative to the store's folder)
    trial  INTEGER,
    rank   INTEGER,
    sha256 TEXT NOT NULL REFERENCES blobs (sha256),
    PRIMARY KEY (run_id, role, name)
) WITHOUT ROWID;
CREATE INDEX run_files_blob ON run_files (sha256);
