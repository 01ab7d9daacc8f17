-- +goose Up
-- Chat sessions (agent-svc/design.md "Sessions"). messages holds the model
-- messages a turn replays (replaced whole at the end of each turn);
-- session_turns holds the display transcript, one row per turn.
CREATE TABLE sessions (
    id         text COLLATE "C" NOT NULL,
    account_id uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    title      text NOT NULL DEFAULT '',
    agent      text NOT NULL DEFAULT '',
    messages   jsonb NOT NULL DEFAULT '[]',
    turns      integer NOT NULL DEFAULT 0,
    created    timestamptz NOT NULL DEFAULT now(),
    updated    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (id)
);
CREATE INDEX sessions_account_updated_idx ON sessions (account_id, updated DESC, id DESC);

CREATE TABLE session_turns (
    session_id text COLLATE "C" NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq        integer NOT NULL,
    question   text NOT NULL,
    answer     text NOT NULL,
    finish     text NOT NULL,
    events     jsonb NOT NULL DEFAULT '[]',
    created    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (session_id, seq)
);

-- +goose Down
DROP TABLE session_turns;
DROP TABLE sessions;
