-- Schema version 1: the LightningStore's records, shared by every agl-host process (replica) that
-- opens this database. Each record is kept whole as its wire JSON (`record`, text: the exact bytes
-- serde wrote, key order and numbers untouched), beside the columns the store looks things up
-- and locks by. The version lives in `agl_schema` (created by the migration runner).

CREATE TABLE rollouts (
    seq                bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, -- insertion order
    rollout_id         text   NOT NULL UNIQUE,
    status             text   NOT NULL,
    queue_seq          bigint,                    -- place in the queue; NULL when not queued
    last_span_sequence bigint NOT NULL DEFAULT 0, -- the rollout's span sequence counter
    record             text   NOT NULL
);
CREATE INDEX rollouts_queue ON rollouts (queue_seq) WHERE queue_seq IS NOT NULL;
CREATE INDEX rollouts_status ON rollouts (status);

-- Places in the queue: drawn without a lock, so enqueuing replicas never wait on each other.
CREATE SEQUENCE rollout_queue_seq;

CREATE TABLE attempts (
    rollout_id  text             NOT NULL,
    sequence_id bigint           NOT NULL,
    attempt_id  text             NOT NULL,
    watchdog_at double precision,            -- when the watchdog looks at it next
    record      text             NOT NULL,
    PRIMARY KEY (rollout_id, sequence_id)
);
CREATE UNIQUE INDEX attempts_by_id ON attempts (rollout_id, attempt_id);
CREATE INDEX attempts_watchdog ON attempts (watchdog_at) WHERE watchdog_at IS NOT NULL;

CREATE TABLE spans (
    seq              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, -- arrival order
    rollout_id       text   NOT NULL,
    attempt_sequence bigint NOT NULL,
    span_id          text   NOT NULL,
    record           text   NOT NULL
);
CREATE UNIQUE INDEX spans_key ON spans (rollout_id, attempt_sequence, span_id);

-- Span sequence counters of rollout ids the store does not hold (Agent-lightning 0.3.0 issues
-- them for any id); a rollout created later under such an id takes its counter over.
CREATE TABLE orphan_span_counters (
    rollout_id text   PRIMARY KEY,
    last       bigint NOT NULL
);

CREATE TABLE resources (
    seq          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    resources_id text   NOT NULL UNIQUE,
    record       text   NOT NULL
);

CREATE TABLE workers (
    seq       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    worker_id text   NOT NULL UNIQUE,
    record    text   NOT NULL
);

-- Single values: `latest_resources` (the id of the latest resources bundle), `run` (the run
-- record: what agl-host ran, when, and its results).
CREATE TABLE store_values (
    key   text PRIMARY KEY,
    value text NOT NULL
);
