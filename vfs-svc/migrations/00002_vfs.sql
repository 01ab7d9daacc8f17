-- +goose Up
CREATE EXTENSION IF NOT EXISTS pg_trgm;
CREATE EXTENSION IF NOT EXISTS btree_gin;

-- One row per file. Directories are implied by paths. session_id is '' for
-- account-scoped files (/memories/...). COLLATE "C" makes byte order the
-- index order, so a directory's contents are one index range
-- [dir || '/', dir || '0') with no LIKE pattern to escape.
CREATE TABLE vfs_files (
    account_id uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    session_id text COLLATE "C" NOT NULL,
    path       text COLLATE "C" NOT NULL,
    content    text NOT NULL,
    size       bigint NOT NULL,
    version    bigint NOT NULL,
    modified   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (account_id, session_id, path)
);
-- grep: pg_trgm answers regular expression filters from the index; the
-- account column (btree_gin) keeps one account's search off the others'.
CREATE INDEX vfs_files_content_trgm ON vfs_files USING gin (account_id, content gin_trgm_ops);

-- Bytes stored per account, kept in step by every write in the same
-- transaction. Locking this row also serialises one account's changes.
CREATE TABLE vfs_usage (
    account_id uuid PRIMARY KEY REFERENCES accounts (id) ON DELETE CASCADE,
    bytes      bigint NOT NULL DEFAULT 0
);

-- +goose Down
DROP TABLE vfs_usage;
DROP TABLE vfs_files;
