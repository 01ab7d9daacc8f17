-- +goose Up
-- A turn is recorded when its run begins (finish 'running') and completed
-- by run_id when it ends; error says why a turn failed (agent-svc/design.md
-- "Durable runs").
ALTER TABLE session_turns ADD COLUMN run_id text NOT NULL DEFAULT '';
ALTER TABLE session_turns ADD COLUMN error text NOT NULL DEFAULT '';
CREATE UNIQUE INDEX session_turns_run_idx ON session_turns (session_id, run_id) WHERE run_id <> '';

-- +goose Down
DROP INDEX session_turns_run_idx;
ALTER TABLE session_turns DROP COLUMN error;
ALTER TABLE session_turns DROP COLUMN run_id;
