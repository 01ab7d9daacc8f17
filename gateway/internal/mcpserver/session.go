package mcpserver

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mirobody/mirobody-go/services/seal"
)

// session is what a legacy Mcp-Session-Id carries. It is sealed rather than
// stored, so that every gateway replica can open it (gateway/design.md "Sessions").
type session struct {
	// Version is the protocol version negotiated by initialize.
	Version string `json:"v"`
	// Account binds the session to the account that created it ("" when
	// anonymous); a session is not valid for another account.
	Account string `json:"a,omitempty"`
	// Issued is the Unix time of initialize.
	Issued int64 `json:"t"`
	// Nonce makes two sessions of one client at one second distinct.
	Nonce string `json:"n"`
	// Caps are the client's capabilities a tool may use (elicitation,
	// sampling, roots), declared in initialize.
	Caps []string `json:"c,omitempty"`
}

// sealer seals and opens session ids with AES-256-GCM. The first key
// seals; every key opens, so a rotation adds the new key in front and drops
// the old one once its sessions expired.
type sealer struct {
	boxes []*seal.Box
	ttl   time.Duration
	now   func() time.Time
}

// errBadSession is any session id that does not open, is expired, or
// belongs to someone else. Callers never learn which.
var errBadSession = errors.New("unknown session")

// sessionKeys returns the AEAD keys from config: MCP_SESSION_KEYS when set
// (base64, 32 bytes each), else one key derived from SECRET_KEY, else a
// random key (one replica, sessions lost on restart: reported by the caller).
func sessionKeys(keys []string, secret string) (out [][]byte, random bool, err error) {
	for i, k := range keys {
		b, err := base64.StdEncoding.DecodeString(k)
		if err != nil || len(b) != 32 {
			return nil, false, fmt.Errorf("MCP_SESSION_KEYS entry %d is not base64 of 32 bytes", i+1)
		}
		out = append(out, b)
	}
	if len(out) > 0 {
		return out, false, nil
	}
	if secret != "" {
		sum := sha256.Sum256([]byte("mirobody mcp session key\x00" + secret))
		return [][]byte{sum[:]}, false, nil
	}
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return [][]byte{b}, true, nil
}

// newSealer returns a sealer over keys (at least one).
func newSealer(keys [][]byte, ttl time.Duration) (*sealer, error) {
	s := &sealer{ttl: ttl, now: time.Now}
	for _, k := range keys {
		b, err := seal.New(k)
		if err != nil {
			return nil, fmt.Errorf("creating the session cipher: %w", err)
		}
		s.boxes = append(s.boxes, b)
	}
	return s, nil
}

// seal returns the session id for sess, stamped now.
func (s *sealer) seal(sess session) string {
	sess.Issued = s.now().Unix()
	n := make([]byte, 8)
	_, _ = rand.Read(n)
	sess.Nonce = base64.RawURLEncoding.EncodeToString(n)
	plain, _ := json.Marshal(sess)
	return base64.RawURLEncoding.EncodeToString(s.boxes[0].Seal(plain, []byte("mcp-session")))
}

// open returns the session sealed in id, valid for account.
func (s *sealer) open(id, account string) (*session, error) {
	raw, err := base64.RawURLEncoding.DecodeString(id)
	if err != nil {
		return nil, errBadSession
	}
	for _, b := range s.boxes {
		plain, err := b.Open(raw, []byte("mcp-session"))
		if err != nil {
			continue
		}
		var sess session
		if json.Unmarshal(plain, &sess) != nil {
			return nil, errBadSession
		}
		issued := time.Unix(sess.Issued, 0)
		if s.now().Sub(issued) > s.ttl || issued.After(s.now().Add(time.Minute)) {
			return nil, errBadSession
		}
		if sess.Account != account {
			return nil, errBadSession
		}
		return &sess, nil
	}
	return nil, errBadSession
}

// subjectSessionDeleted tells every gateway replica that a client ended its
// session with DELETE.
const subjectSessionDeleted = "events.gateway.session_deleted"

// sessionDeleted is the event on subjectSessionDeleted.
type sessionDeleted struct {
	Nonce string    `json:"nonce"`
	Until time.Time `json:"until"`
}

// expiry is when a session issued at sess.Issued stops opening.
func (s *sealer) expiry(sess *session) time.Time {
	return time.Unix(sess.Issued, 0).Add(s.ttl)
}
