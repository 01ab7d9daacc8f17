-- +goose Up
-- Committed imports, so that a user can list what was imported and delete
-- one import. Each stored row names the import that last wrote it (NULL for
-- rows stored before this migration); an import whose rows were all
-- overwritten or deleted is no longer listed.
CREATE TABLE data_import_log (
    id         uuid PRIMARY KEY,
    account_id uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    kind       text NOT NULL,
    format     text NOT NULL,
    written    bigint NOT NULL,
    created    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX data_import_log_account_idx ON data_import_log (account_id, created);
ALTER TABLE health_series ADD COLUMN import_id uuid;
ALTER TABLE genetic_variants ADD COLUMN import_id uuid;
CREATE INDEX health_series_import_idx ON health_series (account_id, import_id);
CREATE INDEX genetic_variants_import_idx ON genetic_variants (account_id, import_id);

-- +goose Down
DROP INDEX genetic_variants_import_idx;
DROP INDEX health_series_import_idx;
ALTER TABLE genetic_variants DROP COLUMN import_id;
ALTER TABLE health_series DROP COLUMN import_id;
DROP TABLE data_import_log;
