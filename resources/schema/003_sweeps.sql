-- pkbw run store, schema 3 (issue 17): sweeps, every (generation, problem) pair of a batch of runs
-- (docs/sweeps.md). A sweep row holds the flags every run of it was given; one pair row per
-- (generation, problem) links the run that judged it. A pair without a finished run is what a resume
-- runs again.

CREATE TABLE sweeps (
    id         INTEGER PRIMARY KEY,
    uuid       TEXT NOT NULL UNIQUE,      -- survives `pkbw store merge` (ids do not)
    name       TEXT NOT NULL DEFAULT '',
    mode       TEXT NOT NULL,             -- eval | perf
    backend    TEXT NOT NULL DEFAULT '',  -- cuda | host | pkb-python
    world_size INTEGER NOT NULL,
    options    TEXT NOT NULL DEFAULT '{}', -- JSON: the run flags, the generation folders, the name mapping
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    status     TEXT NOT NULL               -- running | done | interrupted | submitted
);
CREATE INDEX sweeps_name ON sweeps (name, created_at);

CREATE TABLE sweep_pairs (
    sweep_id         INTEGER NOT NULL REFERENCES sweeps (id) ON DELETE CASCADE,
    generation_label TEXT NOT NULL,
    problem_stem     TEXT NOT NULL,
    problem_id       INTEGER,
    solution_path    TEXT NOT NULL,
    placed_by        TEXT NOT NULL DEFAULT 'name', -- how the file was matched to the problem
    position         INTEGER NOT NULL DEFAULT 0,   -- order of the plan (task chunks follow it)
    run_id           INTEGER REFERENCES runs (id) ON DELETE SET NULL,
    state            TEXT NOT NULL DEFAULT 'pending', -- pending | done | failed (no run recorded)
    message          TEXT NOT NULL DEFAULT '',
    seconds          REAL,
    PRIMARY KEY (sweep_id, generation_label, problem_stem)
) WITHOUT ROWID;
CREATE INDEX sweep_pairs_run ON sweep_pairs (run_id);
