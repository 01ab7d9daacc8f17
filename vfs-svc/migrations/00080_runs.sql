-- +goose Up
-- A run is a chat turn's durable state (agent-svc/design.md "Durable runs"):
-- who owns it and until when (the lease), its last checkpoint, a tool call
-- waiting for the user's approval, and its numbered events for replay.
CREATE TABLE runs (
    id          text PRIMARY KEY,
    account_id  uuid NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    session_id  text NOT NULL,
    state       text NOT NULL,            -- running, paused, done
    request     jsonb NOT NULL,
    owner       text NOT NULL DEFAULT '',
    lease_until timestamptz NOT NULL DEFAULT now(),
    takeovers   int NOT NULL DEFAULT 0,
    checkpoint  jsonb,
    last_seq    bigint NOT NULL DEFAULT 0,
    approval    jsonb,
    decision    jsonb,
    cancelled   boolean NOT NULL DEFAULT false,
    created     timestamptz NOT NULL DEFAULT now(),
    updated     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX runs_expired_idx ON runs (lease_until) WHERE state = 'running';

CREATE TABLE run_events (
    run_id text NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    seq    bigint NOT NULL,
    event  json NOT NULL, -- json, not jsonb: a replay shows the event byte for byte as it streamed
    PRIMARY KEY (run_id, seq)
);

-- +goose Down
DROP TABLE run_events;
DROP TABLE runs;
