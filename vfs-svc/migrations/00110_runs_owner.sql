-- +goose Up
-- A claim sent again finds the run its owner token already holds
-- (vfs.runs.claim is idempotent); only running runs are looked up.
CREATE INDEX runs_owner_idx ON runs (owner) WHERE state = 'running';

-- +goose Down
DROP INDEX runs_owner_idx;
