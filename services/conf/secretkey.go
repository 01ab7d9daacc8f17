package conf

import (
	"fmt"
	"slices"
	"strings"
)

// MinSecretKeyBytes is the shortest SECRET_KEY accepted: 32 bytes, what
// `openssl rand -hex 32` (64 characters) comfortably exceeds.
const MinSecretKeyBytes = 32

// placeholders are values shipped in examples and manifests, refused
// whatever their length, compared case-insensitively.
var placeholders = []string{
	"change-me", "changeme", "change_me", "change-me-please", "replace-me", "replaceme",
	"secret", "secret-key", "secret_key", "secretkey", "your-secret-key", "your_secret_key",
	"mysecret", "password", "default", "example", "test", "dev", "mirobody", "todo", "xxx",
}

// CheckSecretKey reports why key cannot be a SECRET_KEY (every secret the
// services seal and sign derives from it), or nil. An empty key is
// allowed: it means no SECRET_KEY, which the services handle on their own.
// The message never contains the key.
func CheckSecretKey(key string) error {
	if key == "" {
		return nil
	}
	lower := strings.ToLower(strings.TrimSpace(key))
	if slices.Contains(placeholders, lower) || strings.Trim(lower, lower[:1]) == "" {
		return fmt.Errorf("is a placeholder, not a secret; make one with: openssl rand -hex 32")
	}
	if len(key) < MinSecretKeyBytes {
		return fmt.Errorf("is %d bytes, shorter than %d; make one with: openssl rand -hex 32", len(key), MinSecretKeyBytes)
	}
	return nil
}
