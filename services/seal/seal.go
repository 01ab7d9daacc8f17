// Package seal encrypts small secrets with AES-256-GCM, as nonce ‖
// ciphertext, under a key derived from SECRET_KEY for one purpose (or
// under a raw key). The gateway seals MCP sessions, OAuth pages and token
// signing keys with it, and vfs-svc seals external MCP server credentials.
package seal

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
)

// ErrOpen is any sealed value that does not open: tampered, truncated,
// sealed under another key, or bound to other additional data.
var ErrOpen = errors.New("sealed value does not open")

// Box seals and opens values under one key.
type Box struct{ aead cipher.AEAD }

// Derive returns a box whose key is HKDF-SHA256 of secret for purpose, so
// that one SECRET_KEY yields independent keys for independent uses.
func Derive(secret []byte, purpose string) (*Box, error) {
	key, err := hkdf.Key(sha256.New, secret, nil, purpose, 32)
	if err != nil {
		return nil, fmt.Errorf("deriving the %s key: %w", purpose, err)
	}
	return New(key)
}

// New returns a box over a raw AES key (16, 24 or 32 bytes).
func New(key []byte) (*Box, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("creating the cipher: %w", err)
	}
	a, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("creating the cipher: %w", err)
	}
	return &Box{aead: a}, nil
}

// Seal encrypts plain bound to ad (which must be given again to open it)
// with a fresh random nonce. It cannot fail: crypto/rand.Read never
// returns an error (it crashes the program instead, since Go 1.24).
func (b *Box) Seal(plain, ad []byte) []byte {
	ns := b.aead.NonceSize()
	out := make([]byte, ns, ns+len(plain)+b.aead.Overhead())
	_, _ = rand.Read(out)
	return b.aead.Seal(out, out, plain, ad)
}

// Open decrypts a value sealed with the same key and ad; anything else is
// ErrOpen.
func (b *Box) Open(sealed, ad []byte) ([]byte, error) {
	ns := b.aead.NonceSize()
	if len(sealed) < ns+b.aead.Overhead() {
		return nil, ErrOpen
	}
	plain, err := b.aead.Open(nil, sealed[:ns], sealed[ns:], ad)
	if err != nil {
		return nil, ErrOpen
	}
	return plain, nil
}
