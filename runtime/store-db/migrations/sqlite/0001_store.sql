-- Schema version 1: the LightningStore's records. Each record is kept whole as its wire JSON
-- (`record`), beside the columns the store looks things up by.

CREATE TABLE rollouts (
    seq                INTEGER PRIMARY KEY,          -- insertion order: queries list rollouts in it
    rollout_id         TEXT    NOT NULL UNIQUE,
    status             TEXT    NOT NULL,
    queue_seq          INTEGER,                      -- place in the queue; NULL when not queued
    last_span_sequence INTEGER NOT NULL DEFAULT 0,   -- the rollout's span sequence counter
    record             TEXT    NOT NULL
);
CREATE INDEX rollouts_queue ON rollouts (queue_seq) WHERE queue_seq IS NOT NULL;
CREATE INDEX rollouts_status ON rollouts (status);

CREATE TABLE attempts (
    rollout_id  TEXT    NOT NULL,
    sequence_id INTEGER NOT NULL,
    attempt_id  TEXT    NOT NULL,
    watchdog_at REAL,                                -- when the watchdog looks at it next
    record      TEXT    NOT NULL,
    PRIMARY KEY (rollout_id, sequence_id)
) WITHOUT ROWID;
CREATE UNIQUE INDEX attempts_by_id ON attempts (rollout_id, attempt_id);
CREATE INDEX attempts_watchdog ON attempts (watchdog_at) WHERE watchdog_at IS NOT NULL;

CREATE TABLE spans (
    seq              INTEGER PRIMARY KEY,            -- arrival order
    rollout_id       TEXT    NOT NULL,
    attempt_sequence INTEGER NOT NULL,
    span_id          TEXT    NOT NULL,
    record           TEXT    NOT NULL
);
CREATE UNIQUE INDEX spans_key ON spans (rollout_id, attempt_sequence, span_id);

-- Span sequence counters of rollout ids the store does not hold (Agent-lightning 0.3.0 issues
-- them for any id); a rollout created later under such an id takes its counter over.
CREATE TABLE orphan_span_counters (
    rollout_id TEXT PRIMARY KEY,
    last       INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE resources (
    seq          INTEGER PRIMARY KEY,
    resources_id TEXT NOT NULL UNIQUE,
    record       TEXT NOT NULL
);

CREATE TABLE workers (
    seq       INTEGER PRIMARY KEY,
    worker_id TEXT NOT NULL UNIQUE,
    record    TEXT NOT NULL
);

-- Single values: `latest_resources` (the id of the latest resources bundle), `run` (the run
-- record: what agl-host ran, when, and its results).
CREATE TABLE store_values (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;
