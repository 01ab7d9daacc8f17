-- +goose Up
-- A task may wait for its client's input (services/vfs/tasks
-- StatusInputRequired): call is what the gateway needs to run the tool
-- again on any replica, input_requests the questions still pending,
-- answers those given so far (vfs-svc/design.md "Tasks").
ALTER TABLE mcp_tasks ADD COLUMN call jsonb, ADD COLUMN input_requests jsonb, ADD COLUMN answers jsonb;

-- +goose Down
ALTER TABLE mcp_tasks DROP COLUMN call, DROP COLUMN input_requests, DROP COLUMN answers;
