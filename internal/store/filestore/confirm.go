package filestore

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/toolhost/toolhost/internal/confirm"
	"github.com/toolhost/toolhost/internal/sandbox"
)

// confirmations is .toolhost/confirmations.json (confirm.Store).
type confirmations struct{ w *confirm.Store }

func (c *confirmations) Claim(_ context.Context, session, agent string) error {
	return c.w.Claim(session, agent)
}

func (c *confirmations) Check(_ context.Context, call confirm.Call) (confirm.Result, error) {
	return c.w.Check(call)
}

func (c *confirmations) Take(_ context.Context, call confirm.Call) (confirm.Result, error) {
	return c.w.Take(call)
}

func (c *confirmations) Decide(_ context.Context, id string, approve bool) (*confirm.Entry, error) {
	return c.w.Decide(id, approve)
}

func (c *confirmations) List(context.Context) ([]*confirm.Entry, error) { return c.w.List() }

// Where the request states' shared records live, relative to the project
// dir.
const (
	// KeyPath holds the project's HMAC key for request states (hex).
	KeyPath = ".toolhost/request-state.key"
	// RedeemedPath holds the nonces of the request states already used,
	// until they expire.
	RedeemedPath = ".toolhost/request-states.json"
)

// requestStates is confirm.StateStore on the two files above.
type requestStates struct{ door Door }

// Key reads the key, or creates it under the file's lock so two processes
// agree on one.
func (r *requestStates) Key(context.Context) ([]byte, error) {
	parse := func(b []byte) []byte {
		k, err := hex.DecodeString(string(bytes.TrimSpace(b)))
		if err != nil || len(k) < 32 {
			return nil
		}
		return k
	}
	if b, err := r.door.ReadFile(KeyPath); err == nil {
		if k := parse(b); k != nil {
			return k, nil
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	var key []byte
	err := r.door.Update(KeyPath, func(old []byte) ([]byte, error) {
		if k := parse(old); k != nil {
			key = k
			return nil, nil
		}
		key = make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return nil, err
		}
		return []byte(hex.EncodeToString(key) + "\n"), nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", KeyPath, err)
	}
	return key, nil
}

// Redeem records the nonce under the file's lock, dropping expired ones.
func (r *requestStates) Redeem(_ context.Context, nonce string, exp, now time.Time) error {
	return sandbox.UpdateJSON(r.door, RedeemedPath, func(f *redeemed, _ bool) error {
		kept := f.States[:0]
		for _, s := range f.States {
			if now.Before(s.Exp) {
				kept = append(kept, s)
			}
			if s.Nonce == nonce {
				return fmt.Errorf("%w at %s: a confirmation answer counts once", confirm.ErrStateReplayed, s.At.Format(time.RFC3339))
			}
		}
		f.States = append(kept, redeemedState{Nonce: nonce, Exp: exp, At: now})
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
