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
	"sync"
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

// transitions is the bug's state machine: forward along the normal life
// (open → triaged → fixing → fixed → verified → closed), reopen from
// fixed/verified/closed, wontfix from open/triaged; any other move is
// refused, so a bug's history is always a path through this graph.
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
	AppendFile(rel string, data []byte) error
	Update(rel string, fn func(old []byte) ([]byte, error)) error
	Lock(name string) (unlock func(), err error)
}

// Store is the bug tracker. It keeps an index of the bugs (IndexPath) in
// memory, brought up to date from the file under the store's lock before
// every operation, so one Store should live as long as its session; a new
// Store reads the index once.
type Store struct {
	Door Door

	mu  sync.Mutex // guards idx
	idx *index
}

// allocLock is the cross-process lock that serialises every change of the
// store and its index: id allocation, the fingerprint lookup, transitions.
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

// locked runs fn under the store's cross-process lock with the index up to
// date.
func (s *Store) locked(fn func() error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	unlock, err := s.Door.Lock(allocLock)
	if err != nil {
		return err
	}
	defer unlock()
	if err := s.catchUpLocked(); err != nil {
		return err
	}
	return fn()
}

// Open creates a bug, or — when a bug with the same fingerprint exists, in
// any status — appends the new evidence to it and reports a duplicate.
// Complexity: O(1) in the number of bugs (a fingerprint lookup in the
// index, the counter, one bug file written, one index line appended), plus
// O(a) to catch up with a index lines other processes appended, and the
// size of the duplicate's own file.
func (s *Store) Open(nb NewBug) (Opened, error) {
	var out Opened
	err := s.locked(func() error {
		fp := nb.Fingerprint()
		if n, ok := s.idx.byFP[fp]; ok {
			out.Duplicate = true
			return s.update(FormatID(n), func(cur *Bug) error {
				out.EvidenceAdded = cur.Cite(nb)
				out.Bug = cur
				return nil
			})
		}
		next, err := s.nextNumber()
		if err != nil {
			return err
		}
		// An unreadable or gone bug's id is taken too: the index's highest
		// id counts them.
		next = max(next, s.idx.maxID+1)
		bug := nb.Bug(FormatID(next))
		data, err := sandbox.MarshalJSON(bug)
		if err != nil {
			return err
		}
		// The index line comes first: a crash before the bug file is
		// written leaves a line that the next lock holder checks against
		// the file (verifyLastLocked) and marks gone.
		if err := s.appendLocked(SummaryOf(bug)); err != nil {
			return err
		}
		if err := s.Door.WriteFile(Path(bug.ID), data); err != nil {
			return err
		}
		// The counter follows the bug file: a crash in between leaves an
		// index whose highest id the next Open sees anyway.
		counter, err := sandbox.MarshalJSON(map[string]int{"next": next + 1})
		if err != nil {
			return err
		}
		if err := s.Door.WriteFile(CounterPath, counter); err != nil {
			return err
		}
		out = Opened{Bug: bug, EvidenceAdded: true}
		return nil
	})
	return out, err
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

// Fingerprint is the new bug's fingerprint.
func (nb NewBug) Fingerprint() string { return Fingerprint(nb.UnitID, nb.Evidence.Test, nb.Title) }

// Bug is the new bug as it is stored under id: open, citing its evidence.
func (nb NewBug) Bug(id string) *Bug {
	ev := nb.Evidence
	ev.AddedAt, ev.AddedBy = nb.At, nb.By
	return &Bug{
		ID: id, Title: strings.TrimSpace(nb.Title), UnitID: nb.UnitID,
		Severity: nb.Severity, Category: nb.Category, Status: StatusOpen, Fingerprint: nb.Fingerprint(),
		Evidence: []Evidence{ev}, History: []Transition{}, OpenedBy: nb.By,
		CreatedAt: nb.At, UpdatedAt: nb.At,
	}
}

// Cite appends the evidence of a duplicate report nb to b, unless b cites
// it already (who added it and when aside); it reports whether it did.
func (b *Bug) Cite(nb NewBug) bool {
	ev := nb.Evidence
	ev.AddedAt, ev.AddedBy = nb.At, nb.By
	if citesAlready(b.Evidence, ev) {
		return false
	}
	b.Evidence = append(b.Evidence, ev)
	b.UpdatedAt = nb.At
	return true
}

// Move moves b to status to along the state machine, recording the
// transition, or returns a *TransitionError.
func (b *Bug) Move(to, by, note string, at time.Time) (Transition, error) {
	if !CanTransition(b.Status, to) {
		return Transition{}, &TransitionError{ID: b.ID, From: b.Status, To: to, Allowed: AllowedTargets(b.Status)}
	}
	tr := Transition{From: b.Status, To: to, By: by, At: at, Note: note}
	b.History = append(b.History, tr)
	b.Status, b.UpdatedAt = to, at
	return tr, nil
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
// targets. Complexity: O(1) in the number of bugs (one bug file rewritten,
// one index line), plus the catch-up of Open.
func (s *Store) Transition(id, to, by, note string, at time.Time) (*Bug, Transition, error) {
	var (
		out *Bug
		tr  Transition
	)
	err := s.locked(func() error {
		return s.update(id, func(cur *Bug) error {
			var err error
			tr, err = cur.Move(to, by, note, at)
			out = cur
			return err
		})
	})
	return out, tr, err
}

// update is a locked read-modify-write of one bug file; the caller holds
// the store's lock. The changed summary goes to the index before the file
// is replaced (see Open for why that order).
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
		if err := s.appendLocked(SummaryOf(&b)); err != nil {
			return nil, err
		}
		return next, nil
	})
}
