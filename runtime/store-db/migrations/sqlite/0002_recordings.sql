-- Schema version 2: recordings (replay and fork). Each attempt's recording keeps its tape (JSON
-- text, agl-wasm's format, not parsed here) and the addresses of the blobs it refers to (a JSON
-- array); every blob is kept once, under its address (the lowercase hex SHA-256 of its text),
-- however many recordings refer to it. Rowid tables: their rows are large.

CREATE TABLE recordings (
    seq        INTEGER PRIMARY KEY,
    rollout_id TEXT NOT NULL,
    attempt_id TEXT NOT NULL,
    tape       TEXT NOT NULL,
    blobs      TEXT NOT NULL,
    UNIQUE (rollout_id, attempt_id)
);

CREATE TABLE recording_blobs (
    seq     INTEGER PRIMARY KEY,
    address TEXT NOT NULL UNIQUE,
    text    TEXT NOT NULL
);
