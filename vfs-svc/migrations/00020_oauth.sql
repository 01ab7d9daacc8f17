-- +goose Up
-- OAuth authorization server state (gateway/design.md "OAuth authorization
-- server"). Codes and refresh tokens are stored by hash; signing keys hold
-- only the gateway-sealed private half.
CREATE TABLE oauth_signing_keys (
    id             text PRIMARY KEY,
    alg            text NOT NULL,
    public         bytea NOT NULL,
    sealed_private bytea NOT NULL,
    created        timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE oauth_clients (
    id            text PRIMARY KEY,
    name          text NOT NULL,
    redirect_uris text[] NOT NULL,
    created       timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE oauth_codes (
    hash         text PRIMARY KEY,
    client_id    text NOT NULL,
    account_id   uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    redirect_uri text NOT NULL,
    scope        text NOT NULL,
    resource     text NOT NULL,
    challenge    text NOT NULL,
    family       uuid NOT NULL,
    expires      timestamptz NOT NULL,
    used         timestamptz
);
CREATE INDEX oauth_codes_expires_idx ON oauth_codes (expires);

CREATE TABLE oauth_refresh_tokens (
    hash       text PRIMARY KEY,
    family     uuid NOT NULL,
    client_id  text NOT NULL,
    account_id uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    scope      text NOT NULL,
    resource   text NOT NULL,
    created    timestamptz NOT NULL DEFAULT now(),
    expires    timestamptz NOT NULL,
    used       timestamptz,
    revoked    timestamptz
);
CREATE INDEX oauth_refresh_family_idx ON oauth_refresh_tokens (family);
CREATE INDEX oauth_refresh_expires_idx ON oauth_refresh_tokens (expires);

-- +goose Down
DROP TABLE oauth_refresh_tokens;
DROP TABLE oauth_codes;
DROP TABLE oauth_clients;
DROP TABLE oauth_signing_keys;
