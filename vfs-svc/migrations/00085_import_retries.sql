-- +goose Up
-- Import requests are safe to send again (vfs-svc/design.md "Imports over
-- NATS"): a chunk's answer is kept with its digest until the next chunk, so
-- that a resent chunk gets the same answer, and a commit's result is kept
-- for an hour after the import is gone, so that a resent commit does too.
ALTER TABLE data_imports ADD COLUMN last_digest bytea;
ALTER TABLE data_imports ADD COLUMN last_answer jsonb;

CREATE TABLE data_import_results (
    id         uuid PRIMARY KEY,
    account_id uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    result     jsonb NOT NULL,
    created    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX data_import_results_created_idx ON data_import_results (created);

-- +goose Down
DROP TABLE data_import_results;
ALTER TABLE data_imports DROP COLUMN last_answer;
ALTER TABLE data_imports DROP COLUMN last_digest;
