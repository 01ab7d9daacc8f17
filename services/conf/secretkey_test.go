package conf

import (
	"strings"
	"testing"
)

// goodKey is a SECRET_KEY that passes CheckSecretKey.
const goodKey = "3f1c9a7be04d52e8a6c1f09b7d3e25a4c8b61f0e9d2a7c35b4e8f1a06d9c2b7e"

// Start-up refuses a SECRET_KEY that is short or a known placeholder
// (issue 15), naming the key and never echoing it.
func TestSecretKeyChecked(t *testing.T) {
	for _, tc := range []struct {
		name, key, want string
	}{
		{"unset", "", ""},
		{"random hex", goodKey, ""},
		{"shipped placeholder", "change-me", "placeholder"},
		{"placeholder in capitals", "CHANGEME", "placeholder"},
		{"one repeated byte", strings.Repeat("a", 64), "placeholder"},
		{"short", "0123456789abcdef0123456789abcde", "31 bytes, shorter than 32"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(LoadOptions{Path: writeFile(t, ""), LookupEnv: env(map[string]string{"SECRET_KEY": tc.key})})
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), "SECRET_KEY: ") || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("error %v, want one naming SECRET_KEY with %q", err, tc.want)
			case err != nil && tc.key != "" && strings.Contains(err.Error(), tc.key):
				t.Errorf("error %v echoes the key", err)
			}
		})
	}
}
