package oauth

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mirobody/mirobody-go/services/seal"
)

// box seals small values for the browser (the login cookie, the pending
// authorization request of a page) with AES-256-GCM, so that any replica
// can open them and none has to store them. The purpose is bound as
// additional data: a value sealed for one use never opens for another.
type box struct {
	sb  *seal.Box
	now func() time.Time
}

// errBoxed is any sealed value that does not open or has expired.
var errBoxed = errors.New("invalid or expired")

// newBox derives the box key from secret.
func newBox(secret []byte) (*box, error) {
	sb, err := seal.Derive(secret, "mirobody oauth pages v1")
	if err != nil {
		return nil, err
	}
	return &box{sb: sb, now: time.Now}, nil
}

type boxed struct {
	Expires int64           `json:"e"`
	Value   json.RawMessage `json:"v"`
}

// seal returns v sealed for purpose, valid for ttl.
func (b *box) seal(purpose string, v any, ttl time.Duration) (string, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("sealing %s: %w", purpose, err)
	}
	plain, err := json.Marshal(boxed{Expires: b.now().Add(ttl).Unix(), Value: raw})
	if err != nil {
		return "", fmt.Errorf("sealing %s: %w", purpose, err)
	}
	return base64.RawURLEncoding.EncodeToString(b.sb.Seal(plain, []byte(purpose))), nil
}

// open reads a value sealed for purpose into v.
func (b *box) open(purpose, sealed string, v any) error {
	raw, err := base64.RawURLEncoding.DecodeString(sealed)
	if err != nil {
		return errBoxed
	}
	plain, err := b.sb.Open(raw, []byte(purpose))
	if err != nil {
		return errBoxed
	}
	var bx boxed
	if json.Unmarshal(plain, &bx) != nil || b.now().Unix() >= bx.Expires || json.Unmarshal(bx.Value, v) != nil {
		return errBoxed
	}
	return nil
}
