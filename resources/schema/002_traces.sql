-- pkbw run store, schema 2: per-rank execution traces (docs/tracing.md). One row per traced rank,
-- one row per event. Times are CLOCK_MONOTONIC nanoseconds of the machine that ran the rank.

CREATE TABLE trace_ranks (
    run_id          INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    rank            INTEGER NOT NULL,
    pid             INTEGER NOT NULL DEFAULT 0,
    source          TEXT NOT NULL DEFAULT '',
    dropped_records INTEGER NOT NULL DEFAULT 0,
    complete        INTEGER NOT NULL DEFAULT 1,
    names           TEXT NOT NULL DEFAULT '{}', -- {"thread:<tid>": name, "stream:<id>": name}
    event_count     INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (run_id, rank)
) WITHOUT ROWID;

-- The columns the timeline and the analyses filter on; everything else of an event (grid, block,
-- registers, copy details, payload, ...) is in `details`, the event's JSON line minus these columns.
CREATE TABLE trace_events (
    id       INTEGER PRIMARY KEY,
    run_id   INTEGER NOT NULL,
    rank     INTEGER NOT NULL,
    kind     TEXT NOT NULL,
    name     TEXT NOT NULL,
    start_ns INTEGER NOT NULL,
    end_ns   INTEGER NOT NULL,
    stream   INTEGER,
    device   INTEGER,
    category TEXT NOT NULL DEFAULT '',
    details  TEXT NOT NULL DEFAULT '{}',
    FOREIGN KEY (run_id, rank) REFERENCES trace_ranks (run_id, rank) ON DELETE CASCADE
);
-- A window of one rank's timeline; the per-kind scans of one run (kernel summary).
CREATE INDEX trace_events_time ON trace_events (run_id, rank, start_ns);
CREATE INDEX trace_events_kind ON trace_events (run_id, kind, name);
