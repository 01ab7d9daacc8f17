-- +goose Up
-- MCP tasks (services/vfs/tasks): a tool call running in the background,
-- readable and cancellable from every gateway replica. account_id is text
-- without a foreign key: '' is an anonymous caller, whose task only its
-- unguessable id finds (vfs-svc/design.md "Tasks"). Rows past expires_at
-- are invisible and deleted as new tasks are created.
CREATE TABLE mcp_tasks (
    id         text PRIMARY KEY,
    account_id text NOT NULL DEFAULT '',
    principal  text NOT NULL DEFAULT '',
    tool       text NOT NULL,
    call_id    text NOT NULL,
    status     text NOT NULL,
    message    text NOT NULL DEFAULT '',
    result     jsonb,
    error      jsonb,
    created    timestamptz NOT NULL DEFAULT now(),
    updated    timestamptz NOT NULL DEFAULT now(),
    ttl_ms     bigint NOT NULL,
    expires_at timestamptz NOT NULL
);
CREATE INDEX mcp_tasks_expires_idx ON mcp_tasks (expires_at);

-- +goose Down
DROP TABLE mcp_tasks;
