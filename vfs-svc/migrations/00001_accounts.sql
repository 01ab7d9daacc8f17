-- +goose Up
CREATE TABLE accounts (
    id            uuid PRIMARY KEY,
    email         text NOT NULL,
    password_hash text,
    created       timestamptz NOT NULL DEFAULT now(),
    disabled      boolean NOT NULL DEFAULT false
);
CREATE UNIQUE INDEX accounts_email_key ON accounts (lower(email));

CREATE TABLE api_keys (
    id           uuid PRIMARY KEY,
    account_id   uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    name         text NOT NULL,
    prefix       text NOT NULL,
    hash         text NOT NULL UNIQUE,
    scopes       text[] NOT NULL,
    created      timestamptz NOT NULL DEFAULT now(),
    last_used    timestamptz,
    revoked      timestamptz
);
CREATE INDEX api_keys_account_idx ON api_keys (account_id, created DESC);

-- +goose Down
DROP TABLE api_keys;
DROP TABLE accounts;
