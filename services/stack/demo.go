package stack

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/mirobody/mirobody-go/services/conf"
	"github.com/mirobody/mirobody-go/services/vfs/accounts"
	"github.com/mirobody/mirobody-go/services/wire"
)

// DemoEmail is the account `mirobody dev` creates on first run.
const DemoEmail = "demo@mirobody.local"

// ensureDemo returns a working API key for the demo account, creating the
// account and the key when needed. The key is kept in keyFile (mode 0600)
// so every dev run can print it; outside dev, keys are shown only once.
func ensureDemo(ctx context.Context, cfg *conf.Config, log *slog.Logger, keyFile string) (string, error) {
	nc, err := cliConn(cfg, "mirobody-dev", log)
	if err != nil {
		return "", err
	}
	defer nc.Close()
	acc := accounts.NewAccounts(wire.NewClient(wire.ClientOptions{Conn: nc}))
	if b, err := os.ReadFile(keyFile); err == nil {
		key := strings.TrimSpace(string(b))
		if _, err := acc.VerifyKey(ctx, &accounts.KeyVerifyRequest{Hash: accounts.HashKey(key)}); err == nil {
			return key, nil
		}
	}
	a, err := acc.Get(ctx, &accounts.AccountGetRequest{Email: DemoEmail})
	if wire.IsCode(err, wire.NotFound) {
		a, err = acc.Create(ctx, &accounts.AccountCreateRequest{Email: DemoEmail})
	}
	if err != nil {
		return "", fmt.Errorf("ensuring the demo account: %w", err)
	}
	k, err := acc.CreateKey(ctx, &accounts.KeyCreateRequest{AccountID: a.ID, Name: "dev demo"})
	if err != nil {
		return "", fmt.Errorf("creating the demo key: %w", err)
	}
	if err := os.WriteFile(keyFile, []byte(k.Key+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("saving the demo key: %w", err)
	}
	return k.Key, nil
}
