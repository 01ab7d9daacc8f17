-- +goose Up
-- One row per tool call (services/vfs/audit): sizes and argument names,
-- never argument values. account_id is text without a foreign key so that
-- anonymous calls are kept and a deleted account's trail outlives it until
-- the retention delete (vfs-svc/design.md "Audit log").
CREATE TABLE audit_log (
    id             bigserial PRIMARY KEY,
    at             timestamptz NOT NULL,
    account_id     text NOT NULL DEFAULT '',
    caller_kind    text NOT NULL,
    agent          text NOT NULL DEFAULT '',
    tool           text NOT NULL,
    outcome        text NOT NULL,
    duration_ms    double precision NOT NULL,
    argument_bytes integer NOT NULL,
    result_bytes   integer NOT NULL,
    argument_keys  text[] NOT NULL DEFAULT '{}'
);
CREATE INDEX audit_log_account_idx ON audit_log (account_id, id DESC);
CREATE INDEX audit_log_at_idx ON audit_log (at);

-- +goose Down
DROP TABLE audit_log;
