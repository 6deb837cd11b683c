package audit

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/toolhost/toolhost/internal/ndjson"
)

// Kinds of Problem.
const (
	ProblemEdited    = "edited"
	ProblemRemoved   = "removed"
	ProblemReordered = "reordered"
	ProblemInserted  = "inserted"
	ProblemTruncated = "truncated"
	ProblemRestarted = "restarted"
)

// Problem is the first place where the chain does not hold.
type Problem struct {
	Kind string     `json:"kind"`
	At   ndjson.Pos `json:"at"`
	// Seq is the chain number of the row named (0 when the line has none).
	Seq    int64  `json:"seq,omitempty"`
	Detail string `json:"detail"`
}

func (p *Problem) Error() string { return fmt.Sprintf("%s: %s", p.At, p.Detail) }

// Verification is what Verify found.
type Verification struct {
	// Lines is how many lines of the chain were verified, Rows how many of
	// them are calls (the rest are the chain's own records).
	Lines   int64  `json:"lines"`
	Rows    int64  `json:"rows"`
	Files   int    `json:"files"`
	ChainID string `json:"chain_id,omitempty"`
	// LastSeq and LastSHA256 are the end of the chain: keep them elsewhere
	// to prove later that nothing before them changed.
	LastSeq    int64       `json:"last_seq"`
	LastSHA256 string      `json:"last_sha256,omitempty"`
	Checkpoint *Checkpoint `json:"checkpoint,omitempty"`
	// Legacy counts rows written before the chain started (not covered).
	Legacy int `json:"legacy,omitempty"`
	// Unanchored counts lines after the checkpoint: chained, but a cut
	// among them would not be seen (written within the last fsync interval,
	// or before a crash).
	Unanchored int64 `json:"unanchored,omitempty"`
	// Notes say what Verify accepted and why (torn writes a writer recorded,
	// a rotation interrupted by a crash…).
	Notes   []string `json:"notes,omitempty"`
	Problem *Problem `json:"problem,omitempty"`
}

// Verify walks the hash chain of a project's audit trail across its
// rotated files and returns the first line that was edited, removed,
// reordered or inserted, or the rows cut off the end (by the checkpoint),
// in Problem; a nil Problem means every line verified. The error is for a
// trail that cannot be read at all.
//
// What a crash leaves is not a problem: rows written after the last
// checkpoint (the checkpoint follows the batched fsync, so after a crash
// the file is ahead of it, never behind), a rotation that stopped between
// its steps, and bytes of a torn write that the next writer recorded in a
// resume record. A torn last line that no writer has recorded yet is
// reported as a note when the checkpoint does not reach past it.
//
// The chain proves that the trail was not changed by anyone who did not
// also recompute every later hash and the checkpoint; keeping LastSHA256
// (or an export) outside the project makes that proof independent of the
// project's files.
func Verify(projectDir string) (*Verification, error) {
	cp, err := readCheckpoint(projectDir)
	if err != nil {
		return nil, err
	}
	r, err := ndjson.OpenDir(projectDir, Path, ndjson.Options{MaxLine: tailWindow})
	if err != nil {
		return nil, err
	}
	defer r.Close()
	if r.Files() == 0 {
		return nil, fmt.Errorf("no audit trail in %s: no call was made in this project yet, or the project dir is wrong", filepath.Join(projectDir, ".toolhost"))
	}
	return VerifyLines(fileLines{r}, r.Files(), cp)
}

// Lines is what VerifyLines walks: the lines of a trail in order, as
// stored, from any store.
type Lines interface {
	Next() bool
	// Line is the current line without its newline.
	Line() []byte
	// Pos names where the line is, for the problem's message.
	Pos() ndjson.Pos
	// File numbers the file (or part) the line is in: the lines of one
	// file share it, and a rotate record ends one.
	File() int
	// Terminated reports whether the line ended with its newline.
	Terminated() bool
	Err() error
}

// fileLines is a trail's files as Lines.
type fileLines struct{ *ndjson.Reader }

func (f fileLines) File() int { return f.Segment().Index }

// VerifyLines walks the chain over lines (Verify's rules, whatever store
// holds them) against the checkpoint cp (nil: none) of a trail of files
// files.
func VerifyLines(r Lines, files int, cp *Checkpoint) (*Verification, error) {
	w := &walker{r: r, cp: cp, v: &Verification{Files: files, Checkpoint: cp}}
	w.walk()
	if r.Err() != nil {
		return nil, r.Err()
	}
	return w.v, nil
}

func readCheckpoint(projectDir string) (*Checkpoint, error) {
	b, err := os.ReadFile(filepath.Join(projectDir, filepath.FromSlash(CheckpointPath)))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var cp Checkpoint
	if err := json.Unmarshal(b, &cp); err != nil {
		return nil, fmt.Errorf("%s is not valid JSON (%v): the checkpoint was damaged or edited", CheckpointPath, err)
	}
	return &cp, nil
}

// chained is a line of the chain met during the walk.
type chained struct {
	linkInfo
	hash [32]byte
	pos  ndjson.Pos
	seg  int // rotation number of its file (0: live)
	call bool
}

type walker struct {
	r  Lines
	cp *Checkpoint
	v  *Verification

	started bool
	prev    *chained // last line of the chain
	before  [32]byte // hash of the line before prev
	rotated bool     // prev is a rotate record: the next line must open the next file
	// pending is the line read ahead while a problem was being named.
	pending *chained

	// gap: lines since prev that are not lines of the chain.
	gap      int64
	gapHash  hash.Hash
	gapFirst ndjson.Pos
	gapJSON  bool
	gapTorn  bool // the gap is a last line without its newline
}

// next reads the next line; ok is false at the end.
func (w *walker) next() (line []byte, ok bool) {
	if !w.r.Next() {
		return nil, false
	}
	return w.r.Line(), true
}

func (w *walker) current(line []byte, l linkInfo) *chained {
	c := &chained{linkInfo: l, hash: lineHash(line), pos: w.r.Pos(), seg: w.r.File()}
	c.call = l.Chain == nil
	return c
}

func (w *walker) fail(kind string, at ndjson.Pos, seq int64, format string, args ...any) {
	w.v.Problem = &Problem{Kind: kind, At: at, Seq: seq, Detail: fmt.Sprintf(format, args...)}
}

func (w *walker) note(format string, args ...any) {
	w.v.Notes = append(w.v.Notes, fmt.Sprintf(format, args...))
}

func (w *walker) walk() {
	for {
		line, ok := w.next()
		if !ok {
			w.end()
			return
		}
		l, isLink := link(line)
		if !isLink {
			w.notChained(line)
			continue
		}
		c := w.current(line, l)
		if !w.accept(c) {
			return
		}
	}
}

// notChained handles a line without chain fields: rows from before the
// chain, or bytes between two lines of it (judged at the next line).
func (w *walker) notChained(line []byte) {
	if !w.started {
		if json.Valid(line) {
			w.v.Legacy++
		}
		return
	}
	if w.gap == 0 {
		w.gapHash, w.gapFirst = sha256.New(), w.r.Pos()
	}
	w.gapHash.Write(line)
	n := int64(len(line))
	if w.r.Terminated() {
		w.gapHash.Write([]byte{'\n'})
		n++
	} else {
		w.gapTorn = true
	}
	w.gap += n
	w.gapJSON = w.gapJSON || json.Valid(line)
}

// accept checks one line of the chain against the line before it; false
// when it found the problem.
func (w *walker) accept(c *chained) bool {
	if !w.started {
		return w.first(c)
	}
	if w.gap > 0 && !w.acceptGap(c) {
		return false
	}
	p := w.prev
	switch {
	case w.rotated && c.seg == p.seg:
		w.fail(ProblemInserted, c.pos, c.Seq, "line after the record that rotated this file: nothing is written to a file after its rotation")
		return false
	case c.Chain != nil && c.Chain.Event == ChainStart:
		w.fail(ProblemRestarted, c.pos, c.Seq, "the chain starts again here (seq %d) after seq %d at %s: the rows before were replaced, or this line was inserted", c.Seq, p.Seq, p.pos)
		return false
	case c.Seq == p.Seq+1 && *c.Prev == hexHash(p.hash):
		// The link holds.
	case c.Seq == p.Seq && *c.Prev == hexHash(w.before):
		w.fail(ProblemInserted, p.pos, p.Seq, "row seq %d was inserted: the line after it (%s) links to the line before it", p.Seq, c.pos)
		return false
	case c.Seq == p.Seq+1:
		if w.insertedHere(c) {
			return false
		}
		w.fail(ProblemEdited, p.pos, p.Seq, "row seq %d was edited: row seq %d (%s) records another hash for it", p.Seq, c.Seq, c.pos)
		return false
	default:
		if w.insertedHere(c) {
			return false
		}
		w.outOfPlace(c)
		return false
	}
	if c.Chain != nil && c.Chain.Event == ChainResume && c.Chain.Skipped != nil && c.Chain.Skipped.Cut && w.gap == 0 {
		w.note("a torn write of %d bytes (a writer killed inside its write, or a crash) was cut off by the next writer at %s", c.Chain.Skipped.Bytes, c.pos)
	}
	if c.Chain != nil && c.Chain.Event == ChainContinue && c.seg == p.seg {
		w.fail(ProblemInserted, c.pos, c.Seq, "a record that continues the chain from another file, inside a file")
		return false
	}
	return w.take(c)
}

// first checks the first line of the chain.
func (w *walker) first(c *chained) bool {
	switch {
	case c.Chain != nil && c.Chain.Event == ChainStart && c.Seq == 1 && *c.Prev == "":
		w.v.ChainID = c.Chain.ID
		if w.v.Legacy > 0 {
			w.note("%d rows before the chain started (written by a toolhost without it) are not covered", w.v.Legacy)
		}
	case c.Chain != nil && c.Chain.Event == ChainContinue:
		w.fail(ProblemRemoved, c.pos, c.Seq, "the trail begins with a continuation from %s, which is not there: rows 1 to %d were removed", c.Chain.From, c.Seq-1)
		return false
	default:
		w.fail(ProblemRemoved, c.pos, c.Seq, "the chain's first line is missing: the trail begins at seq %d; rows before it were removed", c.Seq)
		return false
	}
	w.started = true
	return w.take(c)
}

// take makes c the end of the chain so far.
func (w *walker) take(c *chained) bool {
	if w.cp != nil && c.Seq == w.cp.Seq && w.v.ChainID == w.cp.ID && hexHash(c.hash) != w.cp.SHA256 {
		w.fail(ProblemEdited, c.pos, c.Seq, "row seq %d differs from the checkpoint of %s: it, or the chain up to it, was rewritten", c.Seq, w.cp.TS.Format("2006-01-02T15:04:05Z07:00"))
		return false
	}
	if w.prev != nil {
		w.before = w.prev.hash
	}
	w.prev = c
	w.rotated = c.Chain != nil && c.Chain.Event == ChainRotate
	w.v.Lines++
	if c.call {
		w.v.Rows++
	}
	return true
}

// acceptGap judges the lines between the chain's last line and c.
func (w *walker) acceptGap(c *chained) bool {
	sum := hex.EncodeToString(w.gapHash.Sum(nil))
	defer func() { w.gap, w.gapJSON, w.gapTorn = 0, false, false }()
	switch {
	case w.gapJSON:
		w.fail(ProblemInserted, w.gapFirst, 0, "line is not part of the chain (no seq/prev): it was inserted, or a row was edited into it")
		return false
	case c.Chain != nil && c.Chain.Event == ChainResume && c.Chain.Skipped != nil && !c.Chain.Skipped.Cut &&
		c.Chain.Skipped.Bytes == w.gap && c.Chain.Skipped.SHA256 == sum:
		w.note("%d bytes at %s are a torn write (a crash during a write), recorded by the writer at %s", w.gap, w.gapFirst, c.pos)
		return true
	default:
		w.fail(ProblemEdited, w.gapFirst, 0, "line is not valid JSON and no writer recorded it as a torn write: it was edited, or inserted")
		return false
	}
}

// insertedHere reports (and records) the case where c does not belong:
// the next line of the chain links to the line before c as if c were not
// there, and no later line links to c.
func (w *walker) insertedHere(c *chained) bool {
	n, ok := w.nextChained()
	if !ok || n.Seq != w.prev.Seq+1 || *n.Prev != hexHash(w.prev.hash) {
		w.pending = n
		return false
	}
	// c might still be a genuine row moved up: then the row after it in the
	// chain links to it.
	want := hexHash(c.hash)
	for {
		m, ok := w.nextChained()
		if !ok {
			break
		}
		if m.Seq == c.Seq+1 && *m.Prev == want {
			w.fail(ProblemReordered, c.pos, c.Seq, "row seq %d stands before seq %d (%s): rows were reordered", c.Seq, n.Seq, n.pos)
			return true
		}
	}
	w.fail(ProblemInserted, c.pos, c.Seq, "row seq %d was inserted: the line after it (%s) links to the line before it", c.Seq, n.pos)
	return true
}

// outOfPlace handles a line whose seq is not the next one.
func (w *walker) outOfPlace(c *chained) {
	want := w.prev.Seq + 1
	if c.Seq < want {
		w.fail(ProblemReordered, c.pos, c.Seq, "row seq %d comes after seq %d (%s): rows were reordered or copied", c.Seq, w.prev.Seq, w.prev.pos)
		return
	}
	// c links to the line before it and the next line carries the seq
	// after the expected one: c's seq itself was changed.
	if *c.Prev == hexHash(w.prev.hash) && w.pending != nil && w.pending.Seq == want+1 {
		w.fail(ProblemEdited, c.pos, want, "row seq %d was edited: it carries seq %d", want, c.Seq)
		return
	}
	// A gap: the missing rows are either later in the trail (moved) or gone.
	if w.pending != nil && w.pending.Seq == want {
		w.fail(ProblemReordered, c.pos, c.Seq, "row seq %d stands where seq %d belongs; seq %d is at %s: rows were reordered", c.Seq, want, want, w.pending.pos)
		return
	}
	for {
		m, ok := w.nextChained()
		if !ok {
			break
		}
		if m.Seq == want {
			w.fail(ProblemReordered, c.pos, c.Seq, "row seq %d stands where seq %d belongs; seq %d is at %s: rows were reordered", c.Seq, want, want, m.pos)
			return
		}
	}
	if c.Seq-1 == want {
		w.fail(ProblemRemoved, c.pos, want, "row seq %d was removed: it stood between %s and %s", want, w.prev.pos, c.pos)
		return
	}
	w.fail(ProblemRemoved, c.pos, want, "rows seq %d to %d were removed: they stood between %s and %s", want, c.Seq-1, w.prev.pos, c.pos)
}

// nextChained reads ahead to the next line of the chain (used only once a
// problem is being named, so consuming the reader is fine).
func (w *walker) nextChained() (*chained, bool) {
	for {
		line, ok := w.next()
		if !ok {
			return nil, false
		}
		if l, ok := link(line); ok {
			return w.current(line, l), true
		}
	}
}

// end checks the end of the trail against the checkpoint.
func (w *walker) end() {
	if !w.started {
		if w.v.Legacy > 0 {
			w.note("%d rows, none of them chained (written by a toolhost without the chain): nothing to verify", w.v.Legacy)
		}
		return
	}
	p := w.prev
	w.v.LastSeq, w.v.LastSHA256 = p.Seq, hexHash(p.hash)
	if w.gap > 0 {
		if w.gapJSON || !w.gapTorn {
			w.fail(ProblemInserted, w.gapFirst, 0, "lines after the chain's last line are not part of it (no seq/prev): they were inserted")
			return
		}
		w.note("the last line (%s) is a torn write: a crash during a write, or the file was cut there; the next write records it", w.gapFirst)
	}
	switch cp := w.cp; {
	case cp == nil:
		w.note("no checkpoint yet (written after the first fsync): rows cut off the end would not be noticed")
	case cp.ID != w.v.ChainID:
		w.fail(ProblemRemoved, p.pos, 0, "the checkpoint (%s) names chain %s, but the trail is chain %s: the trail was replaced", CheckpointPath, cp.ID, w.v.ChainID)
	case cp.Seq > p.Seq:
		w.fail(ProblemTruncated, p.pos, p.Seq+1, "the trail ends at seq %d but the checkpoint of %s records seq %d: rows %d to %d were cut off the end",
			p.Seq, cp.TS.Format("2006-01-02T15:04:05Z07:00"), cp.Seq, p.Seq+1, cp.Seq)
	case cp.Seq < p.Seq:
		w.v.Unanchored = p.Seq - cp.Seq
	}
	if w.rotated {
		w.note("the last file ends with its rotate record and the next one was not started (a crash during the rotation); the next write starts it")
	}
}
