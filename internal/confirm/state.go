package confirm

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"sync"
	"time"

	"github.com/toolhost/toolhost/internal/callctx"
	"github.com/toolhost/toolhost/internal/sandbox"
)

// Paths of the request-state stores, relative to the project dir.
const (
	// KeyPath holds the project's HMAC key for request states (hex).
	KeyPath = ".toolhost/request-state.key"
	// RedeemedPath holds the nonces of the request states already used, until
	// they expire.
	RedeemedPath = ".toolhost/request-states.json"
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

// States issues and redeems the requestState of 2026-07-28 multi-round-trip
// confirmations: an HMAC-SHA256 over the binding and an expiry, with the
// project's own key, so a client cannot forge, alter or move a state; and
// a single-use record, so it cannot replay one either.
type States struct {
	Door  Door
	Clock callctx.Clock

	mu  sync.Mutex
	key []byte
}

func projectDigest(p string) string {
	sum := sha256.Sum256([]byte(p))
	return hex.EncodeToString(sum[:16])
}

// projectKey returns the project's key, creating it (under the store's
// lock, so two processes agree on one) the first time.
func (s *States) projectKey() ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.key != nil {
		return s.key, nil
	}
	parse := func(b []byte) []byte {
		k, err := hex.DecodeString(string(bytes.TrimSpace(b)))
		if err != nil || len(k) < 32 {
			return nil
		}
		return k
	}
	if b, err := s.Door.ReadFile(KeyPath); err == nil {
		if k := parse(b); k != nil {
			s.key = k
			return k, nil
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	var key []byte
	err := s.Door.Update(KeyPath, func(old []byte) ([]byte, error) {
		if k := parse(old); k != nil {
			key = k
			return nil, sandbox.ErrUnchanged
		}
		key = make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return nil, err
		}
		return []byte(hex.EncodeToString(key) + "\n"), nil
	})
	if errors.Is(err, sandbox.ErrUnchanged) {
		err = nil
	}
	if err != nil {
		return nil, fmt.Errorf("request-state key %s: %w", KeyPath, err)
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
func (s *States) Issue(b Binding, ttl time.Duration) (string, error) {
	key, err := s.projectKey()
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
func (s *States) Redeem(state string, b Binding) error {
	key, err := s.projectKey()
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
	return sandbox.UpdateJSON(s.Door, RedeemedPath, func(f *redeemed, _ bool) error {
		kept := f.States[:0]
		for _, r := range f.States {
			if now.Before(r.Exp) {
				kept = append(kept, r)
			}
			if r.Nonce == p.Nonce {
				return fmt.Errorf("%w at %s: a confirmation answer counts once", ErrStateReplayed, r.At.Format(time.RFC3339))
			}
		}
		f.States = append(kept, redeemedState{Nonce: p.Nonce, Exp: exp, At: now})
		return nil
	})
}

type redeemed struct {
	States []redeemedState `json:"states"`
}

type redeemedState struct {
	Nonce string    `json:"nonce"`
	Exp   time.Time `json:"exp"`
	At    time.Time `json:"at"`
}
