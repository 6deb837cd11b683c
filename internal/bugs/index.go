package bugs

import (
	"bufio"
	"bytes"
	"container/heap"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"sort"
	"syscall"
	"time"
)

// IndexPath is the bug store's index: one line per change of a bug — the
// bug's summary after the change — appended under the store's lock. The bug
// files stay the record; the index is what makes opening, deduplicating and
// listing cost the same at any number of bugs. A missing index is rebuilt
// from the bug files (delete it to rebuild after editing bug files by hand).
const IndexPath = Dir + "/index.ndjson"

// Summary is what the index knows of a bug: what bug_list shows and what
// deduplication needs.
type Summary struct {
	ID          string    `json:"id"`
	Title       string    `json:"title,omitempty"`
	UnitID      string    `json:"unit_id,omitempty"`
	Severity    string    `json:"severity,omitempty"`
	Category    string    `json:"category,omitempty"`
	Status      string    `json:"status,omitempty"`
	Fingerprint string    `json:"fingerprint,omitempty"`
	Evidence    int       `json:"evidence"`
	UpdatedAt   time.Time `json:"updated_at"`
	// Unreadable says why the bug file could not be read or decoded (the
	// id is taken; nothing else is known).
	Unreadable string `json:"unreadable,omitempty"`
	// Gone marks an id whose bug file was never written (an Open that
	// crashed between its index line and its file): the id stays taken.
	Gone bool `json:"gone,omitempty"`
}

// SummaryOf summarises a bug.
func SummaryOf(b *Bug) Summary {
	return Summary{
		ID: b.ID, Title: b.Title, UnitID: b.UnitID, Severity: b.Severity, Category: b.Category,
		Status: b.Status, Fingerprint: b.Fingerprint, Evidence: len(b.Evidence), UpdatedAt: b.UpdatedAt,
	}
}

// bucket groups the bugs bug_list can ask for at once; each holds its ids
// sorted by number.
type bucket struct {
	status string
	sev    int
	unit   string
}

// index is a store's view of IndexPath, kept current by reading only what
// was appended since (catchUp).
type index struct {
	ino   uint64
	off   int64 // bytes of the file applied
	lines int

	byID       map[int]Summary
	byFP       map[string]int
	unreadable map[int]string
	buckets    map[bucket][]int
	maxID      int
	// verified: the last line read was checked against its bug file, or
	// written by this store.
	lastID   int
	verified bool
}

func newIndex() *index {
	return &index{byID: map[int]Summary{}, byFP: map[string]int{}, unreadable: map[int]string{}, buckets: map[bucket][]int{}}
}

func keyOf(s Summary) bucket {
	return bucket{status: s.Status, sev: SeverityRank(s.Severity), unit: s.UnitID}
}

// apply makes s the index's view of its bug: O(log b + size of its two
// buckets) for the move between buckets (a copy of ids, not a scan of bugs).
func (x *index) apply(s Summary) {
	n := IDNumber(s.ID)
	if n == 0 {
		return
	}
	x.maxID = max(x.maxID, n)
	x.lastID = n
	if old, ok := x.byID[n]; ok {
		k := keyOf(old)
		ids := x.buckets[k]
		if i, found := slices.BinarySearch(ids, n); found {
			ids = slices.Delete(ids, i, i+1)
		}
		if len(ids) == 0 {
			delete(x.buckets, k)
		} else {
			x.buckets[k] = ids
		}
		if x.byFP[old.Fingerprint] == n {
			delete(x.byFP, old.Fingerprint)
		}
		delete(x.byID, n)
	}
	delete(x.unreadable, n)
	switch {
	case s.Gone:
		return
	case s.Unreadable != "":
		x.unreadable[n] = s.Unreadable
		return
	}
	x.byID[n] = s
	if s.Fingerprint != "" {
		x.byFP[s.Fingerprint] = n
	}
	k := keyOf(s)
	ids := x.buckets[k]
	i, _ := slices.BinarySearch(ids, n)
	x.buckets[k] = slices.Insert(ids, i, n)
}

// catchUpLocked brings the index up to date with IndexPath; the caller
// holds the store's lock. Reading is O(bytes appended since the last call);
// the whole file is read only when it was replaced (compacted or rebuilt
// by another process) or on first use.
func (s *Store) catchUpLocked() error {
	root, err := os.OpenRoot(s.Door.ProjectDir())
	if err != nil {
		return err
	}
	defer root.Close()
	f, err := root.OpenFile(IndexPath, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return s.rebuildLocked(root)
	}
	if err != nil {
		return fmt.Errorf("%s cannot be read (it must be a regular file inside the project): %w", IndexPath, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", IndexPath)
	}
	ino := inode(fi)
	if s.idx == nil || s.idx.ino != ino || fi.Size() < s.idx.off {
		s.idx = newIndex()
		s.idx.ino, s.idx.verified = ino, true
	}
	x := s.idx
	if fi.Size() > x.off {
		buf := make([]byte, fi.Size()-x.off)
		n, err := f.ReadAt(buf, x.off)
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		buf = buf[:n]
		// Only complete lines: a torn last line (a writer killed inside its
		// write) is cut by the next append.
		end := bytes.LastIndexByte(buf, '\n') + 1
		for _, line := range bytes.Split(buf[:end], []byte{'\n'}) {
			var sum Summary
			if len(line) == 0 || json.Unmarshal(line, &sum) != nil {
				continue
			}
			x.apply(sum)
			x.lines++
			x.verified = false
		}
		x.off += int64(end)
	}
	if !x.verified {
		if err := s.verifyLastLocked(root); err != nil {
			return err
		}
	}
	return s.probeLocked(root)
}

// verifyLastLocked checks the last line another process appended against
// its bug file. A line is appended before its bug file is written, and
// every change holds the store's lock, so only the last line can be ahead
// of its file (the writer crashed in between); it is corrected from the
// file.
func (s *Store) verifyLastLocked(root *os.Root) error {
	x := s.idx
	x.verified = true
	if x.lastID == 0 {
		return nil
	}
	want, ok := s.summaryFromFile(root, x.lastID)
	have, known := x.byID[x.lastID]
	if ok && known && have == want {
		return nil
	}
	if !ok && !known {
		return nil // the index says gone or unreadable, and so does the file
	}
	return s.appendLocked(want)
}

// summaryFromFile reads bug n's file: its summary, an unreadable one, or a
// gone one (ok false) when the file does not exist.
func (s *Store) summaryFromFile(root *os.Root, n int) (Summary, bool) {
	id := FormatID(n)
	b, err := load(root, id)
	switch {
	case err == nil:
		return SummaryOf(b), true
	case errors.Is(err, errNoBug):
		return Summary{ID: id, Gone: true}, false
	default:
		return Summary{ID: id, Unreadable: err.Error()}, false
	}
}

// probeLocked indexes bug files numbered past the highest id the index
// knows: written by an Open that crashed before its index line, or by a
// toolhost from before the index. O(1) when there are none.
func (s *Store) probeLocked(root *os.Root) error {
	for {
		next := s.idx.maxID + 1
		if _, err := root.Lstat(Path(FormatID(next))); err != nil {
			return nil
		}
		sum, _ := s.summaryFromFile(root, next)
		if err := s.appendLocked(sum); err != nil {
			return err
		}
	}
}

// appendLocked appends a summary to the index and applies it.
func (s *Store) appendLocked(sum Summary) error {
	b, err := json.Marshal(sum)
	if err != nil {
		return err
	}
	if err := s.Door.AppendFile(IndexPath, append(b, '\n')); err != nil {
		return err
	}
	x := s.idx
	x.apply(sum)
	x.lines++
	x.off += int64(len(b) + 1)
	x.verified = true
	return s.compactLocked()
}

// compactSlack is how many lines beyond two per bug the index may hold
// before it is compacted.
const compactSlack = 256

// compactLocked rewrites the index with one line per bug once it holds
// more than twice as many lines as bugs (and compactSlack more): O(bugs),
// every O(bugs) changes, so O(1) per change amortised.
func (s *Store) compactLocked() error {
	x := s.idx
	live := len(x.byID) + len(x.unreadable)
	if x.lines <= 2*live+compactSlack {
		return nil
	}
	return s.writeIndexLocked()
}

// rebuildLocked builds the index from the bug files (O(bugs), once: when
// there is no index yet).
func (s *Store) rebuildLocked(root *os.Root) error {
	all, bad, err := Scan(s.Door.ProjectDir())
	if err != nil {
		return err
	}
	s.idx = newIndex()
	for _, b := range all {
		s.idx.apply(SummaryOf(b))
	}
	for _, u := range bad {
		s.idx.apply(Summary{ID: u.ID, Unreadable: u.Reason})
	}
	if err := s.writeIndexLocked(); err != nil {
		return err
	}
	return s.probeLocked(root)
}

// writeIndexLocked replaces IndexPath with one line per bug, by id.
func (s *Store) writeIndexLocked() error {
	x := s.idx
	ids := make([]int, 0, len(x.byID)+len(x.unreadable))
	for n := range x.byID {
		ids = append(ids, n)
	}
	for n := range x.unreadable {
		ids = append(ids, n)
	}
	sort.Ints(ids)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, n := range ids {
		sum, ok := x.byID[n]
		if !ok {
			sum = Summary{ID: FormatID(n), Unreadable: x.unreadable[n]}
		}
		if err := enc.Encode(sum); err != nil {
			return err
		}
	}
	if x.maxID > 0 && !slices.Contains(ids, x.maxID) {
		// Keep the highest id taken even when its bug is gone.
		_ = enc.Encode(Summary{ID: FormatID(x.maxID), Gone: true})
	}
	if err := s.Door.WriteFile(IndexPath, buf.Bytes()); err != nil {
		return err
	}
	root, err := os.OpenRoot(s.Door.ProjectDir())
	if err != nil {
		return err
	}
	defer root.Close()
	fi, err := root.Lstat(IndexPath)
	if err != nil {
		return err
	}
	x.ino, x.off, x.lines, x.verified = inode(fi), fi.Size(), len(ids), true
	return nil
}

func inode(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ino
	}
	return 0
}

// Query selects bugs for List; zero fields match everything.
type Query struct {
	Status   string
	UnitID   string
	Severity string
	// Limit caps the bugs returned (Total still counts every match).
	Limit int
}

// Listing is what List returns.
type Listing struct {
	// Total is how many bugs match, before Limit.
	Total int
	// Bugs are the first Limit matches, by severity (blocker, major, minor)
	// then id.
	Bugs []Summary
	// Unreadable names the bug files that could not be read, by id.
	Unreadable []Unreadable
}

// List returns the bugs matching q from the index. Complexity: O(a) to
// catch up with the a index lines appended since this store last looked,
// then O(b + limit·log b) for the b buckets (status × severity × unit) —
// independent of the number of bugs.
func (s *Store) List(q Query) (Listing, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	unlock, err := s.Door.Lock(allocLock)
	if err != nil {
		return Listing{}, err
	}
	err = s.catchUpLocked()
	unlock()
	if err != nil {
		return Listing{}, err
	}
	x := s.idx
	var out Listing
	bySev := map[int][][]int{}
	for k, ids := range x.buckets {
		if (q.Status == "" || k.status == q.Status) && (q.UnitID == "" || k.unit == q.UnitID) &&
			(q.Severity == "" || k.sev == SeverityRank(q.Severity)) {
			out.Total += len(ids)
			bySev[k.sev] = append(bySev[k.sev], ids)
		}
	}
	sevs := make([]int, 0, len(bySev))
	for r := range bySev {
		sevs = append(sevs, r)
	}
	sort.Ints(sevs)
	out.Bugs = []Summary{}
	for _, r := range sevs {
		for _, n := range mergeFirst(bySev[r], q.Limit-len(out.Bugs)) {
			out.Bugs = append(out.Bugs, x.byID[n])
		}
		if len(out.Bugs) >= q.Limit {
			break
		}
	}
	for n, why := range x.unreadable {
		out.Unreadable = append(out.Unreadable, Unreadable{ID: FormatID(n), Reason: why})
	}
	sort.Slice(out.Unreadable, func(i, j int) bool { return IDNumber(out.Unreadable[i].ID) < IDNumber(out.Unreadable[j].ID) })
	return out, nil
}

// mergeFirst returns the k smallest ids of sorted lists, in order: a
// k-way merge, O(k·log len(lists)).
func mergeFirst(lists [][]int, k int) []int {
	h := &idHeap{lists: lists}
	for i, l := range lists {
		if len(l) > 0 {
			h.cs = append(h.cs, cursor{list: i})
		}
	}
	heap.Init(h)
	var out []int
	for len(out) < k && h.Len() > 0 {
		c := h.items()[0]
		out = append(out, lists[c.list][c.pos])
		if c.pos+1 < len(lists[c.list]) {
			h.items()[0].pos++
			heap.Fix(h, 0)
		} else {
			heap.Pop(h)
		}
	}
	return out
}

type cursor struct{ list, pos int }

type idHeap struct {
	cs    []cursor
	lists [][]int
}

func (h *idHeap) items() []cursor { return h.cs }
func (h *idHeap) Len() int        { return len(h.cs) }
func (h *idHeap) Less(i, j int) bool {
	return h.lists[h.cs[i].list][h.cs[i].pos] < h.lists[h.cs[j].list][h.cs[j].pos]
}
func (h *idHeap) Swap(i, j int) { h.cs[i], h.cs[j] = h.cs[j], h.cs[i] }
func (h *idHeap) Push(v any)    { h.cs = append(h.cs, v.(cursor)) }
func (h *idHeap) Pop() any {
	c := h.cs[len(h.cs)-1]
	h.cs = h.cs[:len(h.cs)-1]
	return c
}

// ReadIndex returns the summaries of a project's bugs, by id, reading the
// index as it is and never writing it (Store.List brings the index up to
// date first, which may write): the read side for a live view (the
// dashboard). Ids the index marks gone are left out; a bug file that could
// not be read keeps its id with Unreadable set. Bug files past the highest
// id indexed (an Open that crashed before its index line) are read too,
// and without an index at all the bug files are (Scan).
func ReadIndex(projectDir string) ([]Summary, error) {
	root, err := os.OpenRoot(projectDir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	x := newIndex()
	f, err := root.OpenFile(IndexPath, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		all, bad, err := Scan(projectDir)
		if err != nil {
			return nil, err
		}
		for _, b := range all {
			x.apply(SummaryOf(b))
		}
		for _, u := range bad {
			x.apply(Summary{ID: u.ID, Unreadable: u.Reason})
		}
	case err != nil:
		return nil, fmt.Errorf("%s cannot be read (it must be a regular file inside the project): %w", IndexPath, err)
	default:
		defer f.Close()
		if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
			return nil, fmt.Errorf("%s is not a regular file", IndexPath)
		}
		dec := json.NewDecoder(bufio.NewReader(f))
		for {
			var sum Summary
			if err := dec.Decode(&sum); err != nil {
				// A torn last line ends the read: the next append cuts it.
				break
			}
			x.apply(sum)
		}
	}
	for n := x.maxID + 1; ; n++ {
		if _, err := root.Lstat(Path(FormatID(n))); err != nil {
			break
		}
		b, err := load(root, FormatID(n))
		if err != nil {
			x.apply(Summary{ID: FormatID(n), Unreadable: err.Error()})
			continue
		}
		x.apply(SummaryOf(b))
	}
	out := make([]Summary, 0, len(x.byID)+len(x.unreadable))
	for _, s := range x.byID {
		out = append(out, s)
	}
	for n, why := range x.unreadable {
		out = append(out, Summary{ID: FormatID(n), Unreadable: why})
	}
	sort.Slice(out, func(i, j int) bool { return IDNumber(out[i].ID) < IDNumber(out[j].ID) })
	return out, nil
}
