-- +goose Up
-- External MCP servers per account (registry-svc/design.md "External MCP
-- servers"). secrets is the AES-GCM sealed JSON of the credentials
-- (nonce || ciphertext, key derived from SECRET_KEY, the account and name
-- as associated data), NULL when none.
CREATE TABLE mcp_servers (
    account_id uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    name       text COLLATE "C" NOT NULL,
    url        text NOT NULL,
    auth       text NOT NULL DEFAULT 'none',
    enabled    boolean NOT NULL DEFAULT true,
    secrets    bytea,
    created    timestamptz NOT NULL DEFAULT now(),
    updated    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (account_id, name)
);

-- +goose Down
DROP TABLE mcp_servers;
