package bugs

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/toolhost/toolhost/internal/fault"
	"github.com/toolhost/toolhost/internal/sandbox"
)

// Statuses, in the order of the normal life of a bug.
const (
	StatusOpen     = "open"
	StatusTriaged  = "triaged"
	StatusFixing   = "fixing"
	StatusFixed    = "fixed"
	StatusVerified = "verified"
	StatusClosed   = "closed"
	StatusWontfix  = "wontfix"
)

// Statuses lists every status.
var Statuses = []string{StatusOpen, StatusTriaged, StatusFixing, StatusFixed, StatusVerified, StatusClosed, StatusWontfix}

// Severities, most urgent first; bug_list sorts by this order.
var Severities = []string{"blocker", "major", "minor"}

// SeverityRank is the sort rank of a severity (unknown values sort last).
func SeverityRank(s string) int {
	if i := slices.Index(Severities, s); i >= 0 {
		return i
	}
	return len(Severities)
}

// transitions is the state machine of SPEC §11: forward along the normal
// life, reopen from fixed/verified/closed, wontfix from open/triaged.
var transitions = map[string][]string{
	StatusOpen:     {StatusTriaged, StatusWontfix},
	StatusTriaged:  {StatusFixing, StatusWontfix},
	StatusFixing:   {StatusFixed},
	StatusFixed:    {StatusVerified, StatusOpen},
	StatusVerified: {StatusClosed, StatusOpen},
	StatusClosed:   {StatusOpen},
	StatusWontfix:  {},
}

// AllowedTargets returns the statuses a bug in status from may move to.
func AllowedTargets(from string) []string {
	return append([]string{}, transitions[from]...)
}

// CanTransition reports whether from → to is a legal move.
func CanTransition(from, to string) bool {
	return slices.Contains(transitions[from], to)
}

// NormalizeTitle folds a title to the form the fingerprint uses: lower case,
// every run of characters other than letters and digits collapsed to one
// space, trimmed. "Login: returns 500!" and "login returns 500" are one bug.
func NormalizeTitle(title string) string {
	var b strings.Builder
	space := false
	for _, r := range strings.ToLower(title) {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if space && b.Len() > 0 {
				b.WriteByte(' ')
			}
			space = false
			b.WriteRune(r)
			continue
		}
		space = true
	}
	return b.String()
}

// Fingerprint identifies "the same bug": sha256 over the unit, the failing
// test's full name and the normalized title, NUL-separated so that no two
// different triples share the input.
func Fingerprint(unit, test, title string) string {
	sum := sha256.Sum256([]byte(unit + "\x00" + strings.TrimSpace(test) + "\x00" + NormalizeTitle(title)))
	return hex.EncodeToString(sum[:])
}

// FormatID returns the id of the n-th bug: BUG-0001 … BUG-9999, BUG-10000 ….
func FormatID(n int) string { return fmt.Sprintf("BUG-%04d", n) }

// IDNumber returns the number inside a bug id (0 when id is not one).
func IDNumber(id string) int {
	if !IDPattern().MatchString(id) {
		return 0
	}
	n, _ := strconv.Atoi(id[len("BUG-"):])
	return n
}

// Door is the part of the sandbox the store writes through.
type Door interface {
	ProjectDir() string
	ReadFile(rel string) ([]byte, error)
	WriteFile(rel string, data []byte) error
	Update(rel string, fn func(old []byte) ([]byte, error)) error
	Lock(name string) (unlock func(), err error)
}

// Store is the write side of the bug tracker.
type Store struct{ Door Door }

// allocLock is the cross-process lock that serialises id allocation and the
// fingerprint lookup, so two processes opening the same bug at once create
// it once.
const allocLock = "bugs"

// NewBug is what bug_open asks for.
type NewBug struct {
	Title    string
	UnitID   string
	Severity string
	Category string
	Evidence Evidence
	By       string
	At       time.Time
}

// Opened is the outcome of Open.
type Opened struct {
	Bug       *Bug
	Duplicate bool
	// EvidenceAdded is false when a duplicate cited exactly what the bug
	// already cites, so nothing was appended.
	EvidenceAdded bool
}

// Open creates a bug, or — when a bug with the same fingerprint exists, in
// any status — appends the new evidence to it and reports a duplicate.
func (s *Store) Open(nb NewBug) (Opened, error) {
	unlock, err := s.Door.Lock(allocLock)
	if err != nil {
		return Opened{}, err
	}
	defer unlock()
	// An unreadable bug file cannot be matched as a duplicate, but its id
	// is taken: the new bug must not overwrite it.
	all, bad, err := Scan(s.Door.ProjectDir())
	if err != nil {
		return Opened{}, err
	}
	fp := Fingerprint(nb.UnitID, nb.Evidence.Test, nb.Title)
	ev := nb.Evidence
	ev.AddedAt, ev.AddedBy = nb.At, nb.By
	maxN := 0
	for _, u := range bad {
		maxN = max(maxN, IDNumber(u.ID))
	}
	for _, b := range all {
		maxN = max(maxN, IDNumber(b.ID))
		if b.Fingerprint != fp {
			continue
		}
		out := Opened{Duplicate: true}
		err := s.update(b.ID, func(cur *Bug) error {
			if !citesAlready(cur.Evidence, ev) {
				cur.Evidence = append(cur.Evidence, ev)
				cur.UpdatedAt = nb.At
				out.EvidenceAdded = true
			}
			out.Bug = cur
			return nil
		})
		return out, err
	}
	next, err := s.nextNumber()
	if err != nil {
		return Opened{}, err
	}
	next = max(next, maxN+1)
	bug := &Bug{
		ID: FormatID(next), Title: strings.TrimSpace(nb.Title), UnitID: nb.UnitID,
		Severity: nb.Severity, Category: nb.Category, Status: StatusOpen, Fingerprint: fp,
		Evidence: []Evidence{ev}, History: []Transition{}, OpenedBy: nb.By,
		CreatedAt: nb.At, UpdatedAt: nb.At,
	}
	data, err := sandbox.MarshalJSON(bug)
	if err != nil {
		return Opened{}, err
	}
	if err := s.Door.WriteFile(Path(bug.ID), data); err != nil {
		return Opened{}, err
	}
	// The counter follows the bug file: a crash in between leaves a file
	// whose number the next Open sees anyway.
	counter, err := sandbox.MarshalJSON(map[string]int{"next": next + 1})
	if err != nil {
		return Opened{}, err
	}
	if err := s.Door.WriteFile(CounterPath, counter); err != nil {
		return Opened{}, err
	}
	return Opened{Bug: bug, EvidenceAdded: true}, nil
}

// CounterPath keeps the number of the next bug, so that the id of a deleted
// bug file is never handed out again.
const CounterPath = Dir + "/next-id.json"

// nextNumber reads the counter; a missing or damaged counter gives 0 (the
// bug files then decide).
func (s *Store) nextNumber() (int, error) {
	b, err := s.Door.ReadFile(CounterPath)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	var c struct {
		Next int `json:"next"`
	}
	if json.Unmarshal(b, &c) != nil {
		return 0, nil
	}
	return c.Next, nil
}

// citesAlready reports whether list holds ev, ignoring who added it and when.
func citesAlready(list []Evidence, ev Evidence) bool {
	for _, e := range list {
		e.AddedAt, e.AddedBy = ev.AddedAt, ev.AddedBy
		if e == ev {
			return true
		}
	}
	return false
}

// ErrTransition is matched with errors.Is by every refused transition.
var ErrTransition = errors.New("transition not allowed")

// TransitionError is a move the state machine does not allow.
type TransitionError struct {
	ID, From, To string
	Allowed      []string
}

func (e *TransitionError) Error() string {
	if len(e.Allowed) == 0 {
		return fmt.Sprintf("%s is %s, a final status: no transition leaves it (asked for %s)", e.ID, e.From, e.To)
	}
	return fmt.Sprintf("%s cannot go from %s to %s; allowed from %s: %s", e.ID, e.From, e.To, e.From, strings.Join(e.Allowed, ", "))
}

// Is makes errors.Is(err, ErrTransition) true.
func (e *TransitionError) Is(target error) bool { return target == ErrTransition }

// ErrNotFound is returned for an id with no bug file.
var ErrNotFound = errors.New("no such bug")

// Transition moves a bug to status to, recording {from, to, by, at, note}.
// It returns the updated bug, or a *TransitionError listing the allowed
// targets.
func (s *Store) Transition(id, to, by, note string, at time.Time) (*Bug, Transition, error) {
	var (
		out *Bug
		tr  Transition
	)
	err := s.update(id, func(cur *Bug) error {
		if !CanTransition(cur.Status, to) {
			return &TransitionError{ID: id, From: cur.Status, To: to, Allowed: AllowedTargets(cur.Status)}
		}
		tr = Transition{From: cur.Status, To: to, By: by, At: at, Note: note}
		cur.History = append(cur.History, tr)
		cur.Status, cur.UpdatedAt = to, at
		out = cur
		return nil
	})
	return out, tr, err
}

// update is a locked read-modify-write of one bug file.
func (s *Store) update(id string, fn func(*Bug) error) error {
	return s.Door.Update(Path(id), func(old []byte) ([]byte, error) {
		if old == nil {
			return nil, fmt.Errorf("%w: %s", ErrNotFound, id)
		}
		var b Bug
		if err := json.Unmarshal(old, &b); err != nil {
			return nil, &fault.CorruptFile{Path: Path(id), Format: "JSON", Err: err}
		}
		if b.Evidence == nil {
			b.Evidence = []Evidence{}
		}
		if b.History == nil {
			b.History = []Transition{}
		}
		if err := fn(&b); err != nil {
			return nil, err
		}
		next, err := sandbox.MarshalJSON(&b)
		if err != nil || bytes.Equal(next, old) {
			// Unchanged (a duplicate citing nothing new): no rewrite.
			return nil, err
		}
		return next, nil
	})
}
