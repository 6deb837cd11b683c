package confirm

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Errors of Redeem, matched with errors.Is.
var (
	ErrStateInvalid  = errors.New("request state does not verify")
	ErrStateExpired  = errors.New("request state expired")
	ErrStateMismatch = errors.New("request state belongs to another call")
	ErrStateReplayed = errors.New("request state already used")
)

// Binding is what a request state is issued for: a retry must match it in
// every field.
type Binding struct {
	Tool string
	// ArgsHash is ArgsHash(tool, arguments): the canonical arguments.
	ArgsHash string
	Agent    string
	// Project identifies the project (its id and absolute directory).
	Project string
}

// statePayload is what a request state carries, signed. The project is
// kept as a digest: the state travels through the client.
type statePayload struct {
	V       int    `json:"v"`
	Tool    string `json:"tool"`
	Args    string `json:"args"`
	Agent   string `json:"agent"`
	Project string `json:"project"`
	Exp     int64  `json:"exp"`
	Nonce   string `json:"nonce"`
}

// StateStore keeps what request states need that must be shared by every
// server of the project: its signing key, and the nonces already redeemed.
// The file store and the database store implement it.
type StateStore interface {
	// Key returns the project's signing key (at least 32 bytes), creating
	// it the first time: every server of the project gets the same key,
	// whichever asked first.
	Key(ctx context.Context) ([]byte, error)
	// Redeem records nonce as used until exp (now is the time of use) and
	// fails with an error that wraps ErrStateReplayed when it was used
	// before; records past their exp may be dropped.
	Redeem(ctx context.Context, nonce string, exp, now time.Time) error
}

// States issues and redeems the requestState of 2026-07-28 multi-round-trip
// confirmations: an HMAC-SHA256 over the binding and an expiry, with the
// project's own key, so a client cannot forge, alter or move a state; and
// a single-use record, so it cannot replay one either.
type States struct {
	Store StateStore
	Clock Clock

	mu  sync.Mutex
	key []byte
}

func projectDigest(p string) string {
	sum := sha256.Sum256([]byte(p))
	return hex.EncodeToString(sum[:16])
}

// projectKey returns the project's key, read once per States.
func (s *States) projectKey(ctx context.Context) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.key != nil {
		return s.key, nil
	}
	key, err := s.Store.Key(ctx)
	if err != nil {
		return nil, fmt.Errorf("request-state key: %w", err)
	}
	s.key = key
	return key, nil
}

func sign(key, payload []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("toolhost request state v1\x00"))
	m.Write(payload)
	return m.Sum(nil)
}

// Issue returns a new state for b, valid for ttl.
func (s *States) Issue(ctx context.Context, b Binding, ttl time.Duration) (string, error) {
	key, err := s.projectKey(ctx)
	if err != nil {
		return "", err
	}
	nonce := make([]byte, 16)
	if _, err := rand.Read(nonce); err != nil {
		return "", err
	}
	payload, err := json.Marshal(statePayload{V: 1, Tool: b.Tool, Args: b.ArgsHash, Agent: b.Agent,
		Project: projectDigest(b.Project), Exp: s.Clock.Now().Add(ttl).UnixMilli(), Nonce: hex.EncodeToString(nonce)})
	if err != nil {
		return "", err
	}
	enc := base64.RawURLEncoding
	return enc.EncodeToString(payload) + "." + enc.EncodeToString(sign(key, payload)), nil
}

// Redeem verifies state against b and uses it up: it must carry this
// project's signature, be unexpired, name the same tool, arguments, agent
// and project, and not have been redeemed before.
func (s *States) Redeem(ctx context.Context, state string, b Binding) error {
	key, err := s.projectKey(ctx)
	if err != nil {
		return err
	}
	// Strict: only the one encoding Issue writes is accepted, so no two
	// strings name the same state.
	enc := base64.RawURLEncoding.Strict()
	body, mac, ok := bytes.Cut([]byte(state), []byte("."))
	if !ok {
		return fmt.Errorf("%w: it is not a state toolhost issued", ErrStateInvalid)
	}
	payload, err1 := enc.DecodeString(string(body))
	sig, err2 := enc.DecodeString(string(mac))
	if err1 != nil || err2 != nil || !hmac.Equal(sig, sign(key, payload)) {
		return fmt.Errorf("%w: its signature does not match (altered, or issued by another project)", ErrStateInvalid)
	}
	var p statePayload
	if err := json.Unmarshal(payload, &p); err != nil || p.V != 1 {
		return fmt.Errorf("%w: unknown state format", ErrStateInvalid)
	}
	now := s.Clock.Now()
	exp := time.UnixMilli(p.Exp).UTC()
	switch {
	case now.After(exp):
		return fmt.Errorf("%w at %s", ErrStateExpired, exp.Format(time.RFC3339))
	case p.Tool != b.Tool:
		return fmt.Errorf("%w: it was issued for tool %s, not %s", ErrStateMismatch, p.Tool, b.Tool)
	case p.Args != b.ArgsHash:
		return fmt.Errorf("%w: it was issued for other arguments of %s", ErrStateMismatch, b.Tool)
	case p.Agent != b.Agent:
		return fmt.Errorf("%w: it was issued to agent %s", ErrStateMismatch, p.Agent)
	case p.Project != projectDigest(b.Project):
		return fmt.Errorf("%w: it was issued for another project", ErrStateMismatch)
	}
	return s.Store.Redeem(ctx, p.Nonce, exp, now)
}
