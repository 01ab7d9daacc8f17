package natsx

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/nats-io/nkeys"
)

// SeedFile is where an identity's NKey seed lives in a credentials folder
// (NATS_CREDS_DIR).
func SeedFile(dir, identity string) string { return filepath.Join(dir, identity+".nk") }

// EnsureSeeds makes sure dir holds a seed for every identity of the table,
// creating the missing ones (files 0600 in a 0700 folder) and keeping the
// others, and returns each identity's public key.
func EnsureSeeds(dir string) (map[string]string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating the NATS credentials folder: %w", err)
	}
	keys := map[string]string{}
	for _, id := range IdentityNames() {
		path := SeedFile(dir, id)
		pub, err := PublicKey(path)
		if errors.Is(err, fs.ErrNotExist) {
			pub, err = newSeed(path)
		}
		if err != nil {
			return nil, err
		}
		keys[id] = pub
	}
	return keys, nil
}

// PublicKey reads a user seed file and returns its public key.
func PublicKey(path string) (string, error) {
	kp, err := readSeed(path)
	if err != nil {
		return "", err
	}
	defer kp.Wipe()
	pub, err := kp.PublicKey()
	if err != nil || !nkeys.IsValidPublicUserKey(pub) {
		return "", fmt.Errorf("NATS seed %s is not a user seed", path)
	}
	return pub, nil
}

// Seed returns the seed stored in path, for writing it somewhere else
// (compose's .env). It never goes into logs or errors.
func Seed(path string) (string, error) {
	kp, err := readSeed(path)
	if err != nil {
		return "", err
	}
	defer kp.Wipe()
	seed, err := kp.Seed()
	if err != nil {
		return "", fmt.Errorf("NATS seed %s has no seed: %w", path, err)
	}
	return string(seed), nil
}

func newSeed(path string) (string, error) {
	kp, err := nkeys.CreateUser()
	if err != nil {
		return "", fmt.Errorf("creating a NATS user key: %w", err)
	}
	defer kp.Wipe()
	seed, err := kp.Seed()
	if err != nil {
		return "", fmt.Errorf("creating a NATS user key: %w", err)
	}
	pub, err := kp.PublicKey()
	if err != nil {
		return "", fmt.Errorf("creating a NATS user key: %w", err)
	}
	// O_EXCL: two first runs at once must not overwrite each other's seed.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", fmt.Errorf("saving NATS seed: %w", err)
	}
	if _, err := f.Write(append(seed, '\n')); err != nil {
		f.Close()
		return "", fmt.Errorf("saving NATS seed %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("saving NATS seed %s: %w", path, err)
	}
	return pub, nil
}

// readSeed reads and parses the seed file at path; the caller wipes the key.
func readSeed(path string) (nkeys.KeyPair, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading NATS seed: %w", err)
	}
	kp, err := nkeys.ParseDecoratedNKey(b)
	if err != nil {
		return nil, fmt.Errorf("parsing NATS seed %s: %w", path, err)
	}
	return kp, nil
}
