-- pkbw run store, schema 8 (workbench issue: flags with their severity). What a run said beside its
-- verdict, one row each in the order the run gave them: the candidate's code flags with the engine's
-- severity ('info' or 'suspect') and reason (docs/engine.md "Flags beside the verdict"), then the run's
-- warnings ('warning', no reason). Readers take the severity from here; runs written before schema 8
-- have no rows, and readers fall back to the run's summary text.

CREATE TABLE run_flags (
    run_id   INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    seq      INTEGER NOT NULL,
    severity TEXT NOT NULL CHECK (severity IN ('info', 'suspect', 'warning')),
    text     TEXT NOT NULL,
    reason   TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;
