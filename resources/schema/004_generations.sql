-- pkbw run store, schema 4 (issue 18: generating candidates; docs/generate.md, docs/store.md).
-- A generation is one `pkbw generate` or `pkbw agent` invocation against one model; its exchanges
-- are every HTTP request made (retries included), with the reply, tokens, latency and cost estimate.
-- API keys are never stored: requests are recorded without their headers.

CREATE TABLE generations (
    id           INTEGER PRIMARY KEY,
    kind         TEXT NOT NULL,              -- generate | agent
    label        TEXT NOT NULL,              -- the output folder: solutions_<b>_<p>_<hw>_<provider>_<slug>
    provider     TEXT NOT NULL,
    model        TEXT NOT NULL,
    wire_format  TEXT NOT NULL,              -- openai-chat | anthropic-messages | gemini-generate
    base_url     TEXT NOT NULL,
    backend      TEXT NOT NULL,
    precision    TEXT NOT NULL,
    hardware     TEXT NOT NULL DEFAULT '',
    output_dir   TEXT NOT NULL,
    settings     TEXT NOT NULL DEFAULT '{}', -- JSON: max tokens, samples, retries, concurrency, budget
    command_line TEXT NOT NULL DEFAULT '[]',
    started_at   TEXT NOT NULL,
    ended_at     TEXT,
    status       TEXT NOT NULL DEFAULT 'running' -- running | done | failed | interrupted
);
CREATE INDEX generations_started ON generations (started_at, id);

CREATE TABLE generation_exchanges (
    id             INTEGER PRIMARY KEY,
    generation_id  INTEGER NOT NULL REFERENCES generations (id) ON DELETE CASCADE,
    problem_stem   TEXT NOT NULL,
    sample         INTEGER NOT NULL,          -- 0..k-1 for --samples k
    attempt        INTEGER NOT NULL DEFAULT 0,-- the agent's attempt (0 for generate)
    try_number     INTEGER NOT NULL,          -- 0 for the first HTTP try, 1.. for retries
    url            TEXT NOT NULL,             -- never holds a key (keys travel in headers)
    streamed       INTEGER NOT NULL DEFAULT 0,
    system_prompt  TEXT NOT NULL DEFAULT '',
    user_prompt    TEXT NOT NULL DEFAULT '',
    request_body   TEXT NOT NULL,
    http_status    INTEGER,
    reply_body     TEXT NOT NULL DEFAULT '',  -- as received (SSE events for a streamed reply)
    reply_text     TEXT NOT NULL DEFAULT '',  -- the model's text
    finish_reason  TEXT NOT NULL DEFAULT '',  -- the provider's own word (stop, length, end_turn, MAX_TOKENS, ...)
    outcome        TEXT NOT NULL,             -- saved | truncated | no_code | empty | refused | http_error | retry
    message        TEXT NOT NULL DEFAULT '',
    input_tokens   INTEGER,
    output_tokens  INTEGER,
    latency_ms     REAL,
    cost_usd       REAL,                      -- estimate from a price table; NULL when unknown
    solution_path  TEXT NOT NULL DEFAULT '',
    solution_sha256 TEXT NOT NULL DEFAULT '',
    started_at     TEXT NOT NULL
);
CREATE INDEX generation_exchanges_generation ON generation_exchanges (generation_id, problem_stem, sample, attempt);

-- The agent's trajectory: one row per attempt, linked to the run that judged it and to its parent.
CREATE TABLE agent_attempts (
    generation_id  INTEGER NOT NULL REFERENCES generations (id) ON DELETE CASCADE,
    problem_stem   TEXT NOT NULL,
    attempt        INTEGER NOT NULL,          -- 1..K
    parent_attempt INTEGER,                   -- the attempt whose verdict was fed back (NULL for 1)
    exchange_id    INTEGER REFERENCES generation_exchanges (id) ON DELETE SET NULL,
    run_id         INTEGER REFERENCES runs (id) ON DELETE SET NULL,
    verdict        TEXT NOT NULL,             -- pass | mismatch | compile_error | no_code | truncated | ...
    speedup        REAL,                      -- reference time / candidate time, when timed
    fast           INTEGER NOT NULL DEFAULT 0,-- passed and faster than the reference
    feedback       TEXT NOT NULL DEFAULT '',  -- what the next attempt was told
    source         TEXT NOT NULL DEFAULT '',
    cost_usd       REAL,
    PRIMARY KEY (generation_id, problem_stem, attempt)
) WITHOUT ROWID;
CREATE INDEX agent_attempts_run ON agent_attempts (run_id);
