package confirm

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/toolhost/toolhost/internal/contract"
	"github.com/toolhost/toolhost/internal/fault"
	"github.com/toolhost/toolhost/internal/sandbox"
)

// Path is the store, relative to the project dir.
const Path = ".toolhost/confirmations.json"

// DefaultTTL bounds how long a pending confirmation waits for a decision and
// how long an approval waits for its call.
const DefaultTTL = 10 * time.Minute

// keep is how long closed entries stay in the file for `toolhost approve
// --list` and post-mortems before they are pruned.
const keep = 24 * time.Hour

// KeepClaim is how long a session id stays bound to its agent after its
// last use: far longer than a confirmation lives, so an id is never handed
// to a second agent while a decision made for the first may wait.
const KeepClaim = 30 * 24 * time.Hour

// Entry states.
const (
	Pending    = "pending"
	Approved   = "approved"
	Denied     = "denied"
	Used       = "used"
	Expired    = "expired"
	Superseded = "superseded"
)

// Entry is one confirmation.
type Entry struct {
	ID        string          `json:"id"`
	SessionID string          `json:"session_id"`
	Agent     string          `json:"agent"`
	Tool      string          `json:"tool"`
	ArgsHash  string          `json:"args_hash"`
	Arguments json.RawMessage `json:"arguments"`
	CallID    string          `json:"call_id"`
	Status    string          `json:"status"`
	// Decision is approved or denied once a human decided; kept when the
	// entry is used.
	Decision  string     `json:"decision,omitempty"`
	TTLMS     int64      `json:"ttl_ms"`
	CreatedAt time.Time  `json:"created_at"`
	ExpiresAt time.Time  `json:"expires_at"`
	DecidedAt *time.Time `json:"decided_at,omitempty"`
	UsedAt    *time.Time `json:"used_at,omitempty"`
	UsedBy    string     `json:"used_by,omitempty"`
}

// File is the document at Path.
type File struct {
	Confirmations []*Entry `json:"confirmations"`
	// Sessions binds each session id to the one agent that uses it.
	Sessions []*Claim `json:"sessions,omitempty"`
}

// Claim records that a session id belongs to an agent: a confirmation is
// asked, decided and used inside one agent's session, so a second agent
// presenting the same id is refused instead of sharing its decisions.
type Claim struct {
	SessionID string    `json:"session_id"`
	Agent     string    `json:"agent"`
	Since     time.Time `json:"since"`
	Seen      time.Time `json:"seen"`
}

// Door is the part of the services' sandbox door the store needs.
type Door interface {
	Update(rel string, fn func(old []byte) ([]byte, error)) error
	ReadFile(rel string) ([]byte, error)
}

// Clock is the time source (a fake in tests).
type Clock interface{ Now() time.Time }

// Store is the confirmation store of one project in its files.
type Store struct {
	Door  Door
	Clock Clock
}

// Call is a call that needs confirmation.
type Call struct {
	SessionID string
	Agent     string
	Tool      string
	CallID    string
	// Args are the arguments as received; their canonical form decides
	// whether two calls are identical.
	Args json.RawMessage
	// Preview is what a human is shown (secrets redacted).
	Preview json.RawMessage
	TTL     time.Duration
}

// Verdict is what Check decided.
type Verdict int

const (
	// Ask means no decision applies: Result.Entry is the pending
	// confirmation the human must decide on.
	Ask Verdict = iota
	// Run means an approval was consumed; the call may run.
	Run
	// Deny means a human denied this exact call.
	Deny
)

// Result is the outcome of Check.
type Result struct {
	Verdict Verdict
	Entry   *Entry
	// Expired is an approval for this exact call that came too late.
	Expired *Entry
	// Superseded are pending confirmations of the same tool and session
	// that this call replaced.
	Superseded []*Entry
}

// Errors of Decide, matched with errors.Is.
var (
	ErrNotFound = errors.New("confirmation not found")
	ErrClosed   = errors.New("confirmation already closed")
	ErrExpired  = errors.New("confirmation expired")
)

// SessionTakenError is a session id that another agent of the project
// already uses: claiming it, and asking, taking or deciding a confirmation
// under it, are refused.
type SessionTakenError struct {
	SessionID string
	// Agent is the agent the session belongs to.
	Agent string
	// Want is the agent that presented the id.
	Want string
}

func (e *SessionTakenError) Error() string {
	return fmt.Sprintf("session %s belongs to agent %s in this project; agent %s must use a session of its own (a different --session, or none for a new id)",
		e.SessionID, e.Agent, e.Want)
}

// Claim binds session to agent, or refuses with a *SessionTakenError when
// another agent holds it. A session opened with an id of its choosing
// claims it at start, so two agents configured with one id fail at once
// rather than on their first confirmation.
func (s *Store) Claim(session, agent string) error {
	return sandbox.UpdateJSON(s.Door, Path, func(f *File, _ bool) error {
		now := s.Clock.Now()
		f.Prune(now)
		changed, err := f.ClaimSession(session, agent, now)
		if err == nil && !changed {
			return sandbox.ErrUnchanged
		}
		return err
	})
}

// ClaimSession binds session to agent in f at now: a claim of another
// agent refuses it, and so does a confirmation of another agent in that
// session (recorded before claims were kept); this agent's claim is
// refreshed at most once an hour. changed reports whether f changed. The
// rule of every store that keeps claims in a File.
func (f *File) ClaimSession(session, agent string, now time.Time) (changed bool, err error) {
	for _, c := range f.Sessions {
		if c.SessionID != session {
			continue
		}
		if c.Agent != agent {
			return false, &SessionTakenError{SessionID: session, Agent: c.Agent, Want: agent}
		}
		if now.Sub(c.Seen) < time.Hour {
			return false, nil
		}
		c.Seen = now
		return true, nil
	}
	for _, e := range f.Confirmations {
		if e.SessionID == session && e.Agent != agent {
			return false, &SessionTakenError{SessionID: session, Agent: e.Agent, Want: agent}
		}
	}
	f.Sessions = append(f.Sessions, &Claim{SessionID: session, Agent: agent, Since: now, Seen: now})
	return true, nil
}

// NewID returns a new confirmation id: "cf-" and a ULID.
func NewID() string {
	return "cf-" + ulid.MustNew(ulid.Timestamp(time.Now()), rand.Reader).String()
}

// ArgsHash is the identity of a call's arguments: sha256 over the tool name
// and the canonical JSON (sorted keys, no whitespace), so key order and
// formatting never make two identical calls differ.
func ArgsHash(tool string, args json.RawMessage) (string, error) {
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	c, err := contract.Canonical(args)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(append([]byte(tool+"\x00"), c...))
	return hex.EncodeToString(sum[:]), nil
}

// Check decides a call under the store's lock: it consumes a matching
// approval or denial exactly once, or returns the pending confirmation the
// call waits on (creating it and superseding other pending ones of the same
// tool in the session). A decision matches a call of the same agent in the
// same session, of the same tool with the same canonical arguments; a
// session id that belongs to another agent is refused with a
// *SessionTakenError.
func (s *Store) Check(c Call) (Result, error) { return s.check(c, true) }

// Take consumes a human's decision on this exact call when one waits
// (Run or Deny); otherwise it returns Ask and creates nothing. A client that can ask its human first takes a decision made with
// `toolhost approve` before asking again.
func (s *Store) Take(c Call) (Result, error) { return s.check(c, false) }

func (s *Store) check(c Call, create bool) (Result, error) {
	h, err := ArgsHash(c.Tool, c.Args)
	if err != nil {
		return Result{}, err
	}
	var res Result
	err = sandbox.UpdateJSON(s.Door, Path, func(f *File, _ bool) error {
		now := s.Clock.Now()
		f.Prune(now)
		claimed, err := f.ClaimSession(c.SessionID, c.Agent, now)
		if err != nil {
			return err
		}
		var changed bool
		res, changed = f.Apply(c, h, now, create)
		if !changed && !claimed {
			return sandbox.ErrUnchanged
		}
		return nil
	})
	return res, err
}

// Apply decides call c (whose ArgsHash is h) at now against the entries
// of f, changing them in place: it consumes a matching approval or denial,
// or finds the pending confirmation the call waits on, or (create) adds
// one and supersedes the other pending ones of the same tool by the same
// agent in the session (Entry.Matches decides which entries are the
// call's). changed reports whether any entry changed. The caller holds
// whatever makes the read-modify-write of f exclusive (the file's lock, a
// database's row locks); every store decides by these rules.
func (f *File) Apply(c Call, h string, now time.Time, create bool) (res Result, changed bool) {
	if c.TTL <= 0 {
		c.TTL = DefaultTTL
	}
	for _, e := range f.Confirmations {
		if !e.Matches(c, h) {
			continue
		}
		switch e.Status {
		case Approved, Denied:
			if now.After(e.ExpiresAt) {
				e.Status, changed = Expired, true
				res.Expired = e
				continue
			}
			res.Verdict = Run
			if e.Status == Denied {
				res.Verdict = Deny
			}
			e.Status, e.UsedAt, e.UsedBy = Used, &now, c.CallID
			res.Entry = e
			return res, true
		case Pending:
			if now.After(e.ExpiresAt) {
				e.Status, changed = Expired, true
				continue
			}
			res.Entry = e
		}
	}
	if res.Entry != nil || !create {
		return res, changed
	}
	for _, e := range f.Confirmations {
		if e.Status == Pending && e.SessionID == c.SessionID && e.Agent == c.Agent && e.Tool == c.Tool {
			e.Status = Superseded
			res.Superseded = append(res.Superseded, e)
		}
	}
	e := &Entry{
		ID: NewID(), SessionID: c.SessionID, Agent: c.Agent, Tool: c.Tool,
		ArgsHash: h, Arguments: c.Preview, CallID: c.CallID, Status: Pending, TTLMS: c.TTL.Milliseconds(),
		CreatedAt: now, ExpiresAt: now.Add(c.TTL),
	}
	f.Confirmations = append(f.Confirmations, e)
	res.Entry = e
	return res, true
}

// Matches reports whether e was asked for call c (whose arguments hash to
// h): the same agent, in the same session, calling the same tool with the
// same canonical arguments. The agent is part of the identity: two agents
// never share a decision, even through one session id.
func (e *Entry) Matches(c Call, h string) bool {
	return e.SessionID == c.SessionID && e.Agent == c.Agent && e.Tool == c.Tool && e.ArgsHash == h
}

// Decide records a human's decision on a pending confirmation. An approval
// (or denial) then waits at most the entry's TTL for its call.
func (s *Store) Decide(id string, approve bool) (*Entry, error) {
	var out *Entry
	err := sandbox.UpdateJSON(s.Door, Path, func(f *File, _ bool) error {
		e, err := f.Decide(id, approve, s.Clock.Now())
		out = e
		return err
	})
	return out, err
}

// Decide records the decision on entry id of f at now and returns a copy
// of the entry: the rule of every store (see Apply).
func (f *File) Decide(id string, approve bool, now time.Time) (*Entry, error) {
	for _, e := range f.Confirmations {
		if e.ID != id {
			continue
		}
		if e.Status != Pending {
			return nil, fmt.Errorf("%w: %s is %s, only a pending confirmation can be decided; call the tool again for a new id", ErrClosed, id, e.Status)
		}
		if now.After(e.ExpiresAt) {
			return nil, fmt.Errorf("%w: %s expired at %s; call the tool again for a new id", ErrExpired, id, e.ExpiresAt.Format(time.RFC3339))
		}
		e.Status, e.Decision = Denied, Denied
		if approve {
			e.Status, e.Decision = Approved, Approved
		}
		e.DecidedAt = &now
		e.ExpiresAt = now.Add(time.Duration(e.TTLMS) * time.Millisecond)
		cp := *e
		return &cp, nil
	}
	return nil, fmt.Errorf("%w: no confirmation %s; ids are in the needs_confirmation message", ErrNotFound, id)
}

// List returns every entry in the store.
func (s *Store) List() ([]*Entry, error) {
	b, err := s.Door.ReadFile(Path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	var f File
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, &fault.CorruptFile{Path: Path, Format: "JSON", Err: err}
	}
	return f.Confirmations, nil
}

// Prune drops from f the entries that are closed or expired and were
// created more than a day ago, and the claims unused for KeepClaim.
func (f *File) Prune(now time.Time) {
	kept := f.Confirmations[:0]
	for _, e := range f.Confirmations {
		open := (e.Status == Pending || e.Status == Approved || e.Status == Denied) && !now.After(e.ExpiresAt)
		if open || now.Sub(e.CreatedAt) < keep {
			kept = append(kept, e)
		}
	}
	f.Confirmations = kept
	claims := f.Sessions[:0]
	for _, c := range f.Sessions {
		if now.Sub(c.Seen) < KeepClaim {
			claims = append(claims, c)
		}
	}
	f.Sessions = claims
}
