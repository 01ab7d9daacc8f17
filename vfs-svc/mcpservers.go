package vfssvc

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/mirobody/mirobody-go/services/registry"
	"github.com/mirobody/mirobody-go/services/seal"
	"github.com/mirobody/mirobody-go/services/vfs/mcpservers"
	"github.com/mirobody/mirobody-go/services/wire"
)

// secretsInfo separates the MCP server key from anything else derived
// from SECRET_KEY.
const secretsInfo = "mirobody mcp server secrets v1"

func (s *Service) registerMCPServers(svc *wire.Service) error {
	return errors.Join(
		wire.Serve(svc, mcpservers.Create, s.createMCPServer),
		wire.Serve(svc, mcpservers.List, s.listMCPServers),
		wire.Serve(svc, mcpservers.Update, s.updateMCPServer),
		wire.Serve(svc, mcpservers.Delete, s.deleteMCPServer),
		wire.Serve(svc, mcpservers.SetSecrets, s.setMCPServerSecrets),
		wire.Serve(svc, mcpservers.ClaimOAuth, s.claimMCPServerOAuth),
	)
}

// secretsBox returns the box for server secrets, keyed by HKDF-SHA256
// from SECRET_KEY, or nil when SECRET_KEY is not set.
func secretsBox(secretKey string) (*seal.Box, error) {
	if secretKey == "" {
		return nil, nil
	}
	return seal.Derive([]byte(secretKey), secretsInfo)
}

// secretsAD binds a sealed value to its row, so that it cannot be copied
// to another account or server.
func secretsAD(account, name string) []byte { return []byte(account + "\x00" + name) }

func (s *Service) seal(account, name string, sec *mcpservers.MCPServerSecrets) ([]byte, error) {
	if sec == nil || (sec.AccessToken == "" && len(sec.Headers) == 0 && sec.OAuth == nil) {
		return nil, nil
	}
	if s.secrets == nil {
		return nil, wire.Errorf(wire.FailedPrecondition, "SECRET_KEY is not set, so server credentials cannot be stored encrypted")
	}
	plain, err := json.Marshal(sec)
	if err != nil {
		return nil, fmt.Errorf("encoding server secrets: %w", err)
	}
	return s.secrets.Seal(plain, secretsAD(account, name)), nil
}

func (s *Service) open(account, name string, sealed []byte) (*mcpservers.MCPServerSecrets, error) {
	if sealed == nil {
		return nil, nil
	}
	if s.secrets == nil {
		return nil, wire.Errorf(wire.FailedPrecondition, "the credentials of server %s cannot be decrypted (SECRET_KEY missing or changed)", name)
	}
	plain, err := s.secrets.Open(sealed, secretsAD(account, name))
	if err != nil {
		return nil, wire.Errorf(wire.FailedPrecondition, "the credentials of server %s cannot be decrypted (SECRET_KEY changed?)", name)
	}
	var sec mcpservers.MCPServerSecrets
	if err := json.Unmarshal(plain, &sec); err != nil {
		return nil, fmt.Errorf("decoding server secrets: %w", err)
	}
	return &sec, nil
}

func checkServerKey(account, name string) error {
	if _, err := uuid.Parse(account); err != nil {
		return wire.Errorf(wire.InvalidArgument, "account id %q is not a UUID", account)
	}
	if !registry.ServerNamePattern.MatchString(name) {
		return wire.Errorf(wire.InvalidArgument, "server name %q must match [a-z0-9_-]{1,32}", name)
	}
	return nil
}

func (s *Service) createMCPServer(ctx context.Context, req *mcpservers.MCPServerCreateRequest) (*mcpservers.MCPServer, error) {
	m := req.Server
	if err := checkServerKey(m.AccountID, m.Name); err != nil {
		return nil, err
	}
	if m.URL == "" {
		return nil, wire.Errorf(wire.InvalidArgument, "a server needs a URL")
	}
	if m.Auth == "" {
		m.Auth = registry.AuthNone
	}
	sealed, err := s.seal(m.AccountID, m.Name, m.Secrets)
	if err != nil {
		return nil, err
	}
	err = s.pool.QueryRow(ctx, `INSERT INTO mcp_servers (account_id, name, url, auth, enabled, secrets) VALUES ($1, $2, $3, $4, $5, $6)
		RETURNING created, updated`, m.AccountID, m.Name, m.URL, m.Auth, m.Enabled, sealed).Scan(&m.Created, &m.Updated)
	switch {
	case isUniqueViolation(err):
		return nil, wire.Errorf(wire.AlreadyExists, "a server named %q exists", m.Name)
	case isForeignKeyViolation(err):
		return nil, wire.Errorf(wire.NotFound, "no such account")
	case err != nil:
		return nil, fmt.Errorf("inserting MCP server: %w", err)
	}
	m.Secrets = nil
	return &m, nil
}

func (s *Service) listMCPServers(ctx context.Context, req *mcpservers.MCPServerListRequest) (*mcpservers.MCPServerListResponse, error) {
	if _, err := uuid.Parse(req.AccountID); err != nil {
		return nil, wire.Errorf(wire.InvalidArgument, "account id %q is not a UUID", req.AccountID)
	}
	rows, err := s.pool.Query(ctx, `SELECT account_id, name, url, auth, enabled, created, updated, secrets
		FROM mcp_servers WHERE account_id = $1 ORDER BY name`, req.AccountID)
	if err != nil {
		return nil, fmt.Errorf("listing MCP servers: %w", err)
	}
	out := []mcpservers.MCPServer{}
	var sealed [][]byte
	for rows.Next() {
		var m mcpservers.MCPServer
		var sec []byte
		if err := rows.Scan(&m.AccountID, &m.Name, &m.URL, &m.Auth, &m.Enabled, &m.Created, &m.Updated, &sec); err != nil {
			rows.Close()
			return nil, fmt.Errorf("listing MCP servers: %w", err)
		}
		out = append(out, m)
		sealed = append(sealed, sec)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing MCP servers: %w", err)
	}
	if req.WithSecrets {
		for i := range out {
			sec, err := s.open(out[i].AccountID, out[i].Name, sealed[i])
			if err != nil {
				// One unreadable row must not hide the account's other servers.
				s.log.WarnContext(ctx, "MCP server credentials cannot be decrypted", "account", out[i].AccountID, "server", out[i].Name, "err", err)
				out[i].Unreadable = true
				continue
			}
			out[i].Secrets = sec
		}
	}
	return &mcpservers.MCPServerListResponse{Servers: out}, nil
}

func (s *Service) updateMCPServer(ctx context.Context, req *mcpservers.MCPServerUpdateRequest) (*mcpservers.MCPServer, error) {
	if err := checkServerKey(req.AccountID, req.Name); err != nil {
		return nil, err
	}
	m := mcpservers.MCPServer{AccountID: req.AccountID, Name: req.Name}
	err := s.pool.QueryRow(ctx, `UPDATE mcp_servers SET enabled = $3, updated = now() WHERE account_id = $1 AND name = $2
		RETURNING url, auth, enabled, created, updated`, req.AccountID, req.Name, req.Enabled).Scan(&m.URL, &m.Auth, &m.Enabled, &m.Created, &m.Updated)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, wire.Errorf(wire.NotFound, "no server named %q", req.Name)
	}
	if err != nil {
		return nil, fmt.Errorf("updating MCP server: %w", err)
	}
	return &m, nil
}

func (s *Service) deleteMCPServer(ctx context.Context, req *mcpservers.MCPServerDeleteRequest) (*mcpservers.MCPServer, error) {
	if err := checkServerKey(req.AccountID, req.Name); err != nil {
		return nil, err
	}
	m := mcpservers.MCPServer{AccountID: req.AccountID, Name: req.Name}
	err := s.pool.QueryRow(ctx, `DELETE FROM mcp_servers WHERE account_id = $1 AND name = $2
		RETURNING url, auth, enabled, created, updated`, req.AccountID, req.Name).Scan(&m.URL, &m.Auth, &m.Enabled, &m.Created, &m.Updated)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, wire.Errorf(wire.NotFound, "no server named %q", req.Name)
	}
	if err != nil {
		return nil, fmt.Errorf("deleting MCP server: %w", err)
	}
	return &m, nil
}

func (s *Service) setMCPServerSecrets(ctx context.Context, req *mcpservers.MCPServerSetSecretsRequest) (*mcpservers.MCPServer, error) {
	if err := checkServerKey(req.AccountID, req.Name); err != nil {
		return nil, err
	}
	sealed, err := s.seal(req.AccountID, req.Name, req.Secrets)
	if err != nil {
		return nil, err
	}
	m := mcpservers.MCPServer{AccountID: req.AccountID, Name: req.Name}
	err = s.pool.QueryRow(ctx, `UPDATE mcp_servers SET secrets = $3, updated = now() WHERE account_id = $1 AND name = $2
		RETURNING url, auth, enabled, created, updated`, req.AccountID, req.Name, sealed).Scan(&m.URL, &m.Auth, &m.Enabled, &m.Created, &m.Updated)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, wire.Errorf(wire.NotFound, "no server named %q", req.Name)
	}
	if err != nil {
		return nil, fmt.Errorf("updating MCP server secrets: %w", err)
	}
	return &m, nil
}

// claimMCPServerOAuth checks and clears the pending flow in one
// transaction (the row is locked), so a state is accepted once even when
// two callbacks race.
func (s *Service) claimMCPServerOAuth(ctx context.Context, req *mcpservers.MCPServerClaimOAuthRequest) (*mcpservers.MCPServer, error) {
	if err := checkServerKey(req.AccountID, req.Name); err != nil {
		return nil, err
	}
	refused := wire.Errorf(wire.FailedPrecondition, "this authorization is unknown, expired or already used; start again")
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("claiming an OAuth flow: %w", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	m := mcpservers.MCPServer{AccountID: req.AccountID, Name: req.Name}
	var sealed []byte
	err = tx.QueryRow(ctx, `SELECT url, auth, enabled, created, updated, secrets FROM mcp_servers
		WHERE account_id = $1 AND name = $2 FOR UPDATE`, req.AccountID, req.Name).Scan(&m.URL, &m.Auth, &m.Enabled, &m.Created, &m.Updated, &sealed)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, refused
	}
	if err != nil {
		return nil, fmt.Errorf("claiming an OAuth flow: %w", err)
	}
	sec, err := s.open(req.AccountID, req.Name, sealed)
	if err != nil || sec == nil || sec.OAuth == nil || sec.OAuth.State == "" ||
		subtle.ConstantTimeCompare([]byte(sec.OAuth.State), []byte(req.State)) != 1 || time.Now().After(sec.OAuth.PendingUntil) {
		return nil, refused
	}
	cleared := *sec
	o := *sec.OAuth
	o.State, o.Verifier, o.PendingUntil, o.Link = "", "", time.Time{}, ""
	cleared.OAuth = &o
	resealed, err := s.seal(req.AccountID, req.Name, &cleared)
	if err != nil {
		return nil, err
	}
	if _, err := tx.Exec(ctx, `UPDATE mcp_servers SET secrets = $3, updated = now() WHERE account_id = $1 AND name = $2`,
		req.AccountID, req.Name, resealed); err != nil {
		return nil, fmt.Errorf("claiming an OAuth flow: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("claiming an OAuth flow: %w", err)
	}
	m.Secrets = sec
	return &m, nil
}
