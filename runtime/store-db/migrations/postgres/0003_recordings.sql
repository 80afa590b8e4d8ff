-- Schema version 3: recordings (replay and fork). Each attempt's recording keeps its tape (JSON
-- text, agl-wasm's format, not parsed here) and the addresses of the blobs it refers to (a JSON
-- array, text); every blob is kept once, under its address (the lowercase hex SHA-256 of its
-- text), however many recordings refer to it: replicas storing the same blob at once insert it
-- once (`ON CONFLICT DO NOTHING`).

CREATE TABLE IF NOT EXISTS recordings (
    rollout_id text NOT NULL,
    attempt_id text NOT NULL,
    tape       text NOT NULL,
    blobs      text NOT NULL,
    PRIMARY KEY (rollout_id, attempt_id)
);

CREATE TABLE IF NOT EXISTS recording_blobs (
    address text PRIMARY KEY,
    text    text NOT NULL
);
