package bugs

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/sandbox"
)

func newBug(i int, unit, sev string) NewBug {
	return NewBug{Title: fmt.Sprintf("bug %d", i), UnitID: unit, Severity: sev, Evidence: Evidence{Repro: "r"}, By: "tester", At: time.Unix(int64(i), 0).UTC()}
}

// reference lists bugs the slow way, from the bug files, as bug_list did
// before the index.
func reference(t *testing.T, dir string, q Query) (total int, ids []string) {
	t.Helper()
	all, _, err := Scan(dir)
	if err != nil {
		t.Fatal(err)
	}
	var match []*Bug
	for _, b := range all {
		if (q.Status == "" || b.Status == q.Status) && (q.UnitID == "" || b.UnitID == q.UnitID) && (q.Severity == "" || b.Severity == q.Severity) {
			match = append(match, b)
		}
	}
	slices.SortFunc(match, func(a, b *Bug) int {
		if d := SeverityRank(a.Severity) - SeverityRank(b.Severity); d != 0 {
			return d
		}
		return IDNumber(a.ID) - IDNumber(b.ID)
	})
	for _, b := range match[:min(q.Limit, len(match))] {
		ids = append(ids, b.ID)
	}
	return len(match), ids
}

func listIDs(l Listing) []string {
	var ids []string
	for _, b := range l.Bugs {
		ids = append(ids, b.ID)
	}
	return ids
}

// TestIndexMatchesTheFiles: two stores on one project (two processes)
// open, re-report and move bugs in random order; every listing either of
// them gives equals the one computed from the bug files.
func TestIndexMatchesTheFiles(t *testing.T) {
	t.Parallel()
	dir, door := bugsDoor(t)
	door2, err := sandbox.New(dir, "toolhost", []string{"bugs/**", ".toolhost/**"})
	if err != nil {
		t.Fatal(err)
	}
	defer door2.Close()
	stores := []*Store{{Door: door}, {Door: door2}}
	rng := rand.New(rand.NewPCG(1, 2))
	units := []string{"", "api", "web"}
	sevs := []string{"blocker", "major", "minor"}
	opened := 0
	for step := range 400 {
		s := stores[rng.IntN(2)]
		switch r := rng.IntN(10); {
		case r < 5 || opened == 0:
			if _, err := s.Open(newBug(opened, units[rng.IntN(3)], sevs[rng.IntN(3)])); err != nil {
				t.Fatal(err)
			}
			opened++
		case r < 6:
			// A repeated report: same title, unit and test as an earlier one
			// only when it was opened with unit "" (else a new bug).
			if _, err := s.Open(newBug(rng.IntN(opened), "", "minor")); err != nil {
				t.Fatal(err)
			}
		default:
			id := FormatID(1 + rng.IntN(opened))
			b, err := Load(dir, id)
			if err != nil {
				t.Fatal(err)
			}
			if targets := AllowedTargets(b.Status); len(targets) > 0 {
				if _, _, err := s.Transition(id, targets[rng.IntN(len(targets))], "x", "", time.Now()); err != nil {
					t.Fatal(err)
				}
			}
		}
		if step%20 != 19 {
			continue
		}
		checkReadIndex(t, dir)
		for _, q := range []Query{{Limit: 100}, {Limit: 7}, {Status: StatusOpen, Limit: 50}, {UnitID: "api", Limit: 1000}, {Severity: "major", Status: StatusTriaged, Limit: 1000}} {
			total, want := reference(t, dir, q)
			for i, s := range stores {
				got, err := s.List(q)
				if err != nil {
					t.Fatal(err)
				}
				if got.Total != total || !slices.Equal(listIDs(got), want) {
					t.Fatalf("step %d, store %d, %+v: total %d %v, want %d %v", step, i, q, got.Total, listIDs(got), total, want)
				}
			}
		}
	}
}

// TestIndexAfterCrashes: what a crash between an index line and its bug
// file leaves is corrected by the next store that takes the lock.
func TestIndexAfterCrashes(t *testing.T) {
	t.Parallel()
	t.Run("index line without its bug file", func(t *testing.T) {
		t.Parallel()
		dir, door := bugsDoor(t)
		s := &Store{Door: door}
		if _, err := s.Open(newBug(1, "", "minor")); err != nil {
			t.Fatal(err)
		}
		// A process wrote the line of BUG-0002 and died before the file.
		if err := door.AppendFile(IndexPath, []byte(`{"id":"BUG-0002","title":"never written","severity":"minor","status":"open","fingerprint":"x","evidence":1,"updated_at":"2026-01-01T00:00:00Z"}`+"\n")); err != nil {
			t.Fatal(err)
		}
		other := &Store{Door: door}
		l, err := other.List(Query{Limit: 10})
		if err != nil || l.Total != 1 || !slices.Equal(listIDs(l), []string{"BUG-0001"}) {
			t.Fatalf("%+v %v: the bug that was never written is listed", l, err)
		}
		res, err := other.Open(newBug(3, "", "minor"))
		if err != nil || res.Bug.ID != "BUG-0003" {
			t.Fatalf("next bug %+v %v: BUG-0002 stays taken", res.Bug, err)
		}
		if l, _ := s.List(Query{Limit: 10}); l.Total != 2 {
			t.Fatalf("the first store sees %d bugs, want 2", l.Total)
		}
		if _, err := os.Stat(filepath.Join(dir, Path("BUG-0002"))); !os.IsNotExist(err) {
			t.Fatalf("BUG-0002 was written after all: %v", err)
		}
	})
	t.Run("index line ahead of a transition", func(t *testing.T) {
		t.Parallel()
		_, door := bugsDoor(t)
		s := &Store{Door: door}
		if _, err := s.Open(newBug(1, "", "minor")); err != nil {
			t.Fatal(err)
		}
		// The line of a move to triaged, the file never rewritten.
		if err := door.AppendFile(IndexPath, []byte(`{"id":"BUG-0001","title":"bug 1","severity":"minor","status":"triaged","evidence":1,"updated_at":"2026-01-01T00:00:00Z"}`+"\n")); err != nil {
			t.Fatal(err)
		}
		l, err := (&Store{Door: door}).List(Query{Status: StatusOpen, Limit: 10})
		if err != nil || l.Total != 1 {
			t.Fatalf("%+v %v: want BUG-0001 open, as its file says", l, err)
		}
	})
	t.Run("bug files the index does not know", func(t *testing.T) {
		t.Parallel()
		dir, door := bugsDoor(t)
		s := &Store{Door: door}
		if _, err := s.Open(newBug(1, "", "minor")); err != nil {
			t.Fatal(err)
		}
		// Written by a toolhost from before the index, or by an Open
		// whose line was lost.
		if err := door.WriteJSON(Path("BUG-0002"), Bug{ID: "BUG-0002", Title: "old", Severity: "major", Status: StatusOpen}); err != nil {
			t.Fatal(err)
		}
		l, err := s.List(Query{Limit: 10})
		if err != nil || !slices.Equal(listIDs(l), []string{"BUG-0002", "BUG-0001"}) {
			t.Fatalf("%v %v", listIDs(l), err)
		}
		// Removing the index rebuilds it from the files.
		if err := os.Remove(filepath.Join(dir, IndexPath)); err != nil {
			t.Fatal(err)
		}
		l, err = (&Store{Door: door}).List(Query{Limit: 10})
		if err != nil || !slices.Equal(listIDs(l), []string{"BUG-0002", "BUG-0001"}) {
			t.Fatalf("after a rebuild: %v %v", listIDs(l), err)
		}
	})
	t.Run("compaction", func(t *testing.T) {
		t.Parallel()
		dir, door := bugsDoor(t)
		s, other := &Store{Door: door}, &Store{Door: door}
		if _, err := s.Open(newBug(1, "", "minor")); err != nil {
			t.Fatal(err)
		}
		if _, err := other.List(Query{Limit: 1}); err != nil {
			t.Fatal(err)
		}
		cycle := []string{StatusTriaged, StatusFixing, StatusFixed, StatusOpen}
		const moves = 2*1 + compactSlack + 40
		for i := range moves {
			if _, _, err := s.Transition("BUG-0001", cycle[i%4], "x", "", time.Now()); err != nil {
				t.Fatal(err)
			}
		}
		b, _ := os.ReadFile(filepath.Join(dir, IndexPath))
		if n := strings.Count(string(b), "\n"); n > moves-30 {
			t.Fatalf("index has %d lines after %d changes of 1 bug: not compacted", n, moves)
		}
		l, err := other.List(Query{Limit: 1})
		if want := cycle[(moves-1)%4]; err != nil || len(l.Bugs) != 1 || l.Bugs[0].Status != want {
			t.Fatalf("the other store after a compaction: %+v %v", l, err)
		}
	})
}

// checkReadIndex: ReadIndex gives the summaries of the bug files and
// leaves the store's files as they were, with the index or without it.
func checkReadIndex(t *testing.T, dir string) {
	t.Helper()
	all, _, err := Scan(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]Summary, len(all))
	for i, b := range all {
		want[i] = SummaryOf(b)
	}
	before := snapshotDir(t, filepath.Join(dir, Dir))
	got, err := ReadIndex(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(got, want, func(a, b Summary) bool { return a == b }) {
		t.Fatalf("ReadIndex: %d summaries, want %d\n%+v\n%+v", len(got), len(want), got, want)
	}
	if after := snapshotDir(t, filepath.Join(dir, Dir)); after != before {
		t.Fatal("ReadIndex changed the bug store")
	}
}

// snapshotDir is the names, sizes and contents of a directory's files.
func snapshotDir(t *testing.T, dir string) string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, e := range ents {
		data, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		fmt.Fprintf(&b, "%s %d %x\n", e.Name(), len(data), data)
	}
	return b.String()
}

func TestReadIndexWithoutIndex(t *testing.T) {
	t.Parallel()
	dir, door := bugsDoor(t)
	s := &Store{Door: door}
	for i := range 5 {
		if _, err := s.Open(newBug(i, "api", "major")); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Remove(filepath.Join(dir, filepath.FromSlash(IndexPath))); err != nil {
		t.Fatal(err)
	}
	checkReadIndex(t, dir)
	if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(IndexPath))); err == nil {
		t.Fatal("ReadIndex wrote an index")
	}
}
