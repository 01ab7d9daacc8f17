-- +goose Up
-- Revoked access tokens (kind 'token', by jti) and killed grants (kind
-- 'grant', by refresh family), kept until every token they name has
-- expired, so that a revocation survives restarts and every gateway
-- replica sees it (gateway/design.md "Revocation").
CREATE TABLE oauth_revocations (
    kind    text NOT NULL,
    id      text NOT NULL,
    until   timestamptz NOT NULL,
    created timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (kind, id)
);
CREATE INDEX oauth_revocations_created_idx ON oauth_revocations (created);
CREATE INDEX oauth_revocations_until_idx ON oauth_revocations (until);

-- Failed password attempts of the OAuth login page, per email and per
-- client IP (key 'email:<lowercase email>' or 'ip:<address>'), with the
-- lockout they earned.
CREATE TABLE oauth_login_attempts (
    key          text PRIMARY KEY,
    failures     integer NOT NULL DEFAULT 0,
    locked_until timestamptz,
    updated      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX oauth_login_attempts_updated_idx ON oauth_login_attempts (updated);

-- +goose Down
DROP TABLE oauth_login_attempts;
DROP TABLE oauth_revocations;
