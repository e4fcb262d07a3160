-- pkbw run store, schema 1. docs/store.md describes every column. Enumerated text columns (mode,
-- status, side, outcome) have no CHECK constraint on purpose: SQLite cannot alter a CHECK without
-- rebuilding the table, and a later migration may add a value; pkbw validates them in C++.

CREATE TABLE runs (
    id                    INTEGER PRIMARY KEY,
    problem_id            INTEGER,
    problem_stem          TEXT NOT NULL,
    mode                  TEXT NOT NULL,
    backend               TEXT NOT NULL,
    world_size            INTEGER NOT NULL,
    dtype                 TEXT NOT NULL,
    m                     INTEGER,
    n                     INTEGER,
    input_shapes          TEXT NOT NULL DEFAULT '{}',
    atol                  REAL NOT NULL,
    rtol                  REAL NOT NULL,
    trials                INTEGER NOT NULL,
    seed                  INTEGER,
    solution_path         TEXT NOT NULL DEFAULT '',
    solution_sha256       TEXT NOT NULL DEFAULT '',
    solution_kind         TEXT NOT NULL,
    generation_label      TEXT NOT NULL DEFAULT '',
    generation_backend    TEXT NOT NULL DEFAULT '',
    generation_precision  TEXT NOT NULL DEFAULT '',
    generation_hardware   TEXT NOT NULL DEFAULT '',
    generation_provider   TEXT NOT NULL DEFAULT '',
    generation_model      TEXT NOT NULL DEFAULT '',
    generation_parsed     INTEGER NOT NULL DEFAULT 0,
    writer_host           TEXT NOT NULL,
    writer_pid            INTEGER NOT NULL,
    writer_start_ticks    INTEGER,
    gpu_names             TEXT NOT NULL DEFAULT '[]',
    driver_version        TEXT NOT NULL DEFAULT '',
    cuda_runtime_version  TEXT NOT NULL DEFAULT '',
    cuda_compiled_version TEXT NOT NULL DEFAULT '',
    nccl_runtime_version  TEXT NOT NULL DEFAULT '',
    nccl_compiled_version TEXT NOT NULL DEFAULT '',
    pkbw_version          TEXT NOT NULL DEFAULT '',
    command_line          TEXT NOT NULL DEFAULT '[]',
    started_at            TEXT NOT NULL,
    ended_at              TEXT,
    status                TEXT NOT NULL,
    exit_code             INTEGER,
    summary               TEXT NOT NULL DEFAULT '',
    run_dir               TEXT NOT NULL DEFAULT ''
);
-- The run list is filtered by one of these and sorted by date; id breaks ties so pages are stable.
CREATE INDEX runs_started ON runs (started_at, id);
CREATE INDEX runs_problem ON runs (problem_stem, started_at);
CREATE INDEX runs_generation ON runs (generation_label, started_at);
CREATE INDEX runs_backend ON runs (backend, started_at);
CREATE INDEX runs_status ON runs (status, started_at);

CREATE TABLE rank_results (
    run_id     INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    trial      INTEGER NOT NULL,
    rank       INTEGER NOT NULL,
    side       TEXT NOT NULL,
    outcome    TEXT NOT NULL,
    phase      TEXT NOT NULL DEFAULT '',
    message    TEXT NOT NULL DEFAULT '',
    exit_code  INTEGER,
    signal     INTEGER,
    started_at TEXT,
    ended_at   TEXT,
    wall_ms    REAL,
    compile_ms REAL,
    PRIMARY KEY (run_id, trial, rank, side)
) WITHOUT ROWID;

-- Rowid table (not WITHOUT ROWID): error maps make rows up to 256 KiB.
CREATE TABLE tensor_results (
    id                  INTEGER PRIMARY KEY,
    run_id              INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    trial               INTEGER NOT NULL,
    rank                INTEGER NOT NULL,
    name                TEXT NOT NULL,
    pass                INTEGER NOT NULL,
    shape_match         INTEGER NOT NULL,
    ref_shape           TEXT NOT NULL,
    cand_shape          TEXT NOT NULL,
    ref_dtype           TEXT NOT NULL,
    cand_dtype          TEXT NOT NULL,
    dtype_match         INTEGER NOT NULL,
    numel               INTEGER NOT NULL,
    mismatch_count      INTEGER NOT NULL,
    mismatch_fraction   REAL,
    max_abs_error       REAL,
    max_rel_error       REAL,
    worst_ratio         REAL,
    first_mismatch      INTEGER NOT NULL,
    worst_mismatch      INTEGER NOT NULL,
    max_ulp             INTEGER,
    min_passing_atol    REAL,
    ref_nan_count       INTEGER NOT NULL,
    ref_inf_count       INTEGER NOT NULL,
    ref_zero_count      INTEGER NOT NULL,
    ref_min             REAL,
    ref_max             REAL,
    ref_mean            REAL,
    ref_all_zero        INTEGER NOT NULL,
    ref_constant        INTEGER NOT NULL,
    cand_nan_count      INTEGER NOT NULL,
    cand_inf_count      INTEGER NOT NULL,
    cand_zero_count     INTEGER NOT NULL,
    cand_min            REAL,
    cand_max            REAL,
    cand_mean           REAL,
    cand_all_zero       INTEGER NOT NULL,
    cand_constant       INTEGER NOT NULL,
    message             TEXT NOT NULL DEFAULT '',
    error_map_src_rows  INTEGER NOT NULL DEFAULT 0,
    error_map_src_cols  INTEGER NOT NULL DEFAULT 0,
    error_map_rows      INTEGER NOT NULL DEFAULT 0,
    error_map_cols      INTEGER NOT NULL DEFAULT 0,
    error_map           BLOB,
    UNIQUE (run_id, trial, rank, name)
);

-- One row per timed iteration. side: 0 reference, 1 candidate (an integer: this table is the bulk
-- of the file and its key is stored in every row).
CREATE TABLE perf_samples (
    run_id    INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    side      INTEGER NOT NULL,
    rank      INTEGER NOT NULL,
    block     INTEGER NOT NULL,
    iteration INTEGER NOT NULL,
    ms        REAL NOT NULL,
    PRIMARY KEY (run_id, side, rank, block, iteration)
) WITHOUT ROWID;

CREATE TABLE perf_summaries (
    run_id    INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    side      TEXT NOT NULL,
    rank      INTEGER NOT NULL,
    statistic TEXT NOT NULL,
    value     REAL,
    PRIMARY KEY (run_id, side, rank, statistic)
) WITHOUT ROWID;

CREATE TABLE artifacts (
    id     INTEGER PRIMARY KEY,
    run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    trial  INTEGER,
    rank   INTEGER,
    kind   TEXT NOT NULL,
    path   TEXT NOT NULL
);
CREATE INDEX artifacts_run ON artifacts (run_id);
