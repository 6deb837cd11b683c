package audit_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/audit"
	"github.com/toolhost/toolhost/internal/ndjson"
	"github.com/toolhost/toolhost/internal/sandbox"
	"github.com/toolhost/toolhost/internal/testutil/smalldisk"
)

func auditDoor(t *testing.T, dir string) *sandbox.Sandbox {
	t.Helper()
	d, err := sandbox.New(dir, "toolhost", []string{".toolhost/**"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d
}

// writeTrail writes n rows through `procs` sinks at once (each on its own
// door, so each has its own descriptors and lock, as processes do) and
// closes them (which fsyncs and writes the checkpoint).
func writeTrail(t *testing.T, dir string, procs, n int, maxBytes int64) {
	t.Helper()
	var wg sync.WaitGroup
	for p := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sink := audit.NewFileSink(auditDoor(t, dir), audit.Options{SyncEvery: 5 * time.Millisecond, MaxBytes: maxBytes, Project: "p-1"})
			for i := range n / procs {
				r := &audit.Row{TS: time.Now(), CallID: fmt.Sprintf("c%d-%d", p, i), Agent: "coder", Tool: "t", Status: audit.StatusOK, DurationMS: float64(i)}
				if err := sink.Write(r); err != nil {
					t.Error(err)
				}
			}
			if err := sink.Close(); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
}

func verify(t *testing.T, dir string) *audit.Verification {
	t.Helper()
	v, err := audit.Verify(dir)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestChainSixWritersAcrossRotations(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeTrail(t, dir, 6, 600, 8<<10)
	v := verify(t, dir)
	if v.Problem != nil {
		t.Fatalf("clean trail: %+v", v.Problem)
	}
	if v.Rows != 600 || v.Files < 5 {
		t.Fatalf("verified %d rows in %d files, want 600 rows in several files", v.Rows, v.Files)
	}
	if v.Checkpoint == nil || v.Checkpoint.Seq != v.LastSeq || v.Unanchored != 0 {
		t.Fatalf("checkpoint %+v, last seq %d: closed sinks anchor the end", v.Checkpoint, v.LastSeq)
	}
	// Every row readable across the files, every call once.
	seen := map[string]bool{}
	bad, err := audit.Each(dir, audit.Filter{}, func(r *audit.Row) error {
		if seen[r.CallID] {
			return fmt.Errorf("%s twice", r.CallID)
		}
		seen[r.CallID] = true
		return nil
	})
	if err != nil || bad.Count != 0 || len(seen) != 600 {
		t.Fatalf("Each: %d rows, %v, %s", len(seen), err, bad)
	}
}

// trail is a clean trail in three files and the lines of each, for the
// tampering cases.
type trail struct {
	dir   string
	files []string // absolute, oldest first (the live file last)
}

func newTrail(t *testing.T) trail {
	t.Helper()
	dir := t.TempDir()
	writeTrail(t, dir, 1, 60, 4<<10)
	d := auditDoor(t, dir)
	segs, err := d.Segments(audit.Path)
	if err != nil || len(segs) < 3 {
		t.Fatalf("%d files (%v), want at least 3", len(segs), err)
	}
	tr := trail{dir: dir}
	for _, s := range segs {
		tr.files = append(tr.files, filepath.Join(dir, s.Path))
	}
	if v := verify(t, dir); v.Problem != nil {
		t.Fatalf("clean trail: %+v", v.Problem)
	}
	return tr
}

func (tr trail) lines(t *testing.T, f int) []string {
	t.Helper()
	b, err := os.ReadFile(tr.files[f])
	if err != nil {
		t.Fatal(err)
	}
	return strings.SplitAfter(string(b), "\n")
}

func (tr trail) write(t *testing.T, f int, lines []string) {
	t.Helper()
	if err := os.WriteFile(tr.files[f], []byte(strings.Join(lines, "")), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (tr trail) rel(f int) string {
	r, _ := filepath.Rel(tr.dir, tr.files[f])
	return filepath.ToSlash(r)
}

// forge makes a row that links to the line before it, as someone who knows
// the scheme would write it.
func forge(prevLine string, seq int64) string {
	sum := sha256.Sum256([]byte(strings.TrimSuffix(prevLine, "\n")))
	r := audit.Row{TS: time.Now(), CallID: "forged", Agent: "x", Tool: "forged", Status: audit.StatusOK, Seq: seq, Prev: hex.EncodeToString(sum[:])}
	return string(r.AppendJSON(nil)) + "\n"
}

func TestVerifyNamesTheTampering(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		tamper func(t *testing.T, tr trail) (kind, at string)
	}{
		{"edit a field", func(t *testing.T, tr trail) (string, string) {
			l := tr.lines(t, 1)
			l[4] = strings.Replace(l[4], `"status":"ok"`, `"status":"rejected"`, 1)
			tr.write(t, 1, l)
			return audit.ProblemEdited, tr.rel(1) + ":5"
		}},
		{"delete a row", func(t *testing.T, tr trail) (string, string) {
			l := tr.lines(t, 0)
			tr.write(t, 0, slices.Delete(l, 6, 7))
			return audit.ProblemRemoved, tr.rel(0) + ":7"
		}},
		{"swap two rows", func(t *testing.T, tr trail) (string, string) {
			l := tr.lines(t, 1)
			l[3], l[4] = l[4], l[3]
			tr.write(t, 1, l)
			return audit.ProblemReordered, tr.rel(1) + ":4"
		}},
		{"insert a forged row that links back", func(t *testing.T, tr trail) (string, string) {
			l := tr.lines(t, 1)
			var prev struct{ Seq int64 }
			_ = json.Unmarshal([]byte(l[2]), &prev)
			tr.write(t, 1, slices.Insert(l, 3, forge(l[2], prev.Seq+1)))
			return audit.ProblemInserted, tr.rel(1) + ":4"
		}},
		{"insert a forged row with a wrong link", func(t *testing.T, tr trail) (string, string) {
			l := tr.lines(t, 1)
			var prev struct{ Seq int64 }
			_ = json.Unmarshal([]byte(l[2]), &prev)
			tr.write(t, 1, slices.Insert(l, 3, forge("something else", prev.Seq+1)))
			return audit.ProblemInserted, tr.rel(1) + ":4"
		}},
		{"insert a plain row", func(t *testing.T, tr trail) (string, string) {
			l := tr.lines(t, 0)
			r := audit.Row{CallID: "plain", Tool: "t", Status: "ok"}
			tr.write(t, 0, slices.Insert(l, 2, string(r.AppendJSON(nil))+"\n"))
			return audit.ProblemInserted, tr.rel(0) + ":3"
		}},
		{"truncate the file", func(t *testing.T, tr trail) (string, string) {
			last := len(tr.files) - 1
			l := tr.lines(t, last)
			tr.write(t, last, l[:len(l)-4]) // the last 3 rows (and the empty tail)
			return audit.ProblemTruncated, tr.rel(last) + fmt.Sprintf(":%d", len(l)-4)
		}},
		{"cut the file mid-line", func(t *testing.T, tr trail) (string, string) {
			last := len(tr.files) - 1
			b, _ := os.ReadFile(tr.files[last])
			if err := os.WriteFile(tr.files[last], b[:len(b)-40], 0o644); err != nil {
				t.Fatal(err)
			}
			l := strings.Split(string(b), "\n")
			return audit.ProblemTruncated, tr.rel(last) + fmt.Sprintf(":%d", len(l)-2)
		}},
		{"edit a line into garbage", func(t *testing.T, tr trail) (string, string) {
			l := tr.lines(t, 0)
			l[5] = l[5][:30] + "\n"
			tr.write(t, 0, l)
			return audit.ProblemEdited, tr.rel(0) + ":6"
		}},
		{"remove a rotated file", func(t *testing.T, tr trail) (string, string) {
			if err := os.Remove(tr.files[1]); err != nil {
				t.Fatal(err)
			}
			return audit.ProblemRemoved, tr.rel(2) + ":1"
		}},
		{"remove the oldest file", func(t *testing.T, tr trail) (string, string) {
			if err := os.Remove(tr.files[0]); err != nil {
				t.Fatal(err)
			}
			return audit.ProblemRemoved, tr.rel(1) + ":1"
		}},
		{"move the first row of a file to the file before", func(t *testing.T, tr trail) (string, string) {
			a, b := tr.lines(t, 0), tr.lines(t, 1)
			moved := b[1]
			tr.write(t, 1, slices.Delete(b, 1, 2))
			tr.write(t, 0, slices.Insert(a, len(a)-2, moved)) // before the rotate record
			return audit.ProblemReordered, tr.rel(0) + fmt.Sprintf(":%d", len(a)-1)
		}},
		{"append a plain row at the end", func(t *testing.T, tr trail) (string, string) {
			last := len(tr.files) - 1
			l := tr.lines(t, last)
			r := audit.Row{CallID: "plain", Tool: "t", Status: "ok"}
			tr.write(t, last, append(l, string(r.AppendJSON(nil))+"\n"))
			return audit.ProblemInserted, tr.rel(last) + fmt.Sprintf(":%d", len(l))
		}},
		{"append a plain row, then more rows are written", func(t *testing.T, tr trail) (string, string) {
			last := len(tr.files) - 1
			l := tr.lines(t, last)
			r := audit.Row{CallID: "plain", Tool: "t", Status: "ok"}
			tr.write(t, last, append(l, string(r.AppendJSON(nil))+"\n"))
			writeTrail(t, tr.dir, 1, 1, 0)
			return audit.ProblemInserted, tr.rel(last) + fmt.Sprintf(":%d", len(l))
		}},
		{"edit the last row (anchored by the checkpoint)", func(t *testing.T, tr trail) (string, string) {
			last := len(tr.files) - 1
			l := tr.lines(t, last)
			n := len(l) - 2
			l[n] = strings.Replace(l[n], `"agent":"coder"`, `"agent":"pm"`, 1)
			tr.write(t, last, l)
			return audit.ProblemEdited, tr.rel(last) + fmt.Sprintf(":%d", n+1)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tr := newTrail(t)
			kind, at := tc.tamper(t, tr)
			v := verify(t, tr.dir)
			if v.Problem == nil {
				t.Fatalf("tampering not noticed: %d rows verified", v.Rows)
			}
			if v.Problem.Kind != kind || v.Problem.At.String() != at {
				t.Fatalf("problem %s at %s (%s), want %s at %s", v.Problem.Kind, v.Problem.At, v.Problem.Detail, kind, at)
			}
		})
	}
}

// TestVerifyAfterCrashes: what a crash leaves is not tampering.
func TestVerifyAfterCrashes(t *testing.T) {
	t.Parallel()
	t.Run("rows written after the last checkpoint", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		writeTrail(t, dir, 1, 10, 0)
		// A sink that never syncs (killed before its first fsync).
		sink := audit.NewFileSink(auditDoor(t, dir), audit.Options{SyncEvery: time.Hour})
		for i := range 5 {
			if err := sink.Write(&audit.Row{CallID: fmt.Sprint(i), Tool: "t", Status: "ok"}); err != nil {
				t.Fatal(err)
			}
		}
		v := verify(t, dir)
		if v.Problem != nil || v.Rows != 15 || v.Unanchored != 5 {
			t.Fatalf("problem %+v, rows %d, unanchored %d; want 15 rows, the last 5 unanchored", v.Problem, v.Rows, v.Unanchored)
		}
		_ = sink.Close()
	})
	t.Run("a torn write, cut by the next writer", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		writeTrail(t, dir, 1, 10, 0)
		p := filepath.Join(dir, audit.Path)
		f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = f.WriteString(`{"ts":"2026-12-01T00:00:00Z","call_id":"torn","ag`)
		f.Close()
		if v := verify(t, dir); v.Problem != nil || len(v.Notes) == 0 {
			t.Fatalf("torn tail before the next write: %+v %v", v.Problem, v.Notes)
		}
		writeTrail(t, dir, 1, 3, 0)
		v := verify(t, dir)
		if v.Problem != nil || v.Rows != 13 {
			t.Fatalf("after the torn write: %+v, %d rows", v.Problem, v.Rows)
		}
		if !strings.Contains(strings.Join(v.Notes, "\n"), "torn write of 49 bytes") {
			t.Errorf("notes %v: want the torn write named", v.Notes)
		}
		bad, err := audit.Each(dir, audit.Filter{}, func(*audit.Row) error { return nil })
		if err != nil || bad.Count != 0 {
			t.Errorf("readers: %v, bad %s; want the torn line gone", err, bad)
		}
	})
	t.Run("rows from before the chain", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		if err := os.MkdirAll(filepath.Join(dir, ".toolhost"), 0o755); err != nil {
			t.Fatal(err)
		}
		legacy := `{"ts":"2026-01-01T00:00:00Z","call_id":"old","agent":"pm","tool":"t","status":"ok","retry_count":0,"duration_ms":1}` + "\n"
		if err := os.WriteFile(filepath.Join(dir, audit.Path), []byte(legacy+legacy), 0o644); err != nil {
			t.Fatal(err)
		}
		writeTrail(t, dir, 1, 4, 0)
		v := verify(t, dir)
		if v.Problem != nil || v.Rows != 4 || v.Legacy != 2 {
			t.Fatalf("%+v, rows %d, legacy %d", v.Problem, v.Rows, v.Legacy)
		}
	})
	t.Run("a rotation stopped after its rename", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		writeTrail(t, dir, 1, 40, 4<<10)
		// The next file never started: no live file, and the checkpoint at
		// most at the rotated file's last line.
		if err := os.Remove(filepath.Join(dir, audit.Path)); err != nil {
			t.Fatal(err)
		}
		segs, _ := auditDoor(t, dir).Segments(audit.Path)
		anchorAtEnd(t, dir, segs[len(segs)-1].Path)
		before := verify(t, dir)
		if before.Problem != nil {
			t.Fatalf("before the next write: %+v", before.Problem)
		}
		writeTrail(t, dir, 1, 3, 4<<10)
		if v := verify(t, dir); v.Problem != nil || v.Rows != before.Rows+3 {
			t.Fatalf("after: %+v, %d rows, want %d", v.Problem, v.Rows, before.Rows+3)
		}
	})
	t.Run("a rotation stopped before its rename", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		writeTrail(t, dir, 1, 40, 4<<10)
		// The file that ends in its rotate record is still the live file:
		// no later file, the checkpoint at most at that record.
		segs, _ := auditDoor(t, dir).Segments(audit.Path)
		newest := segs[len(segs)-2]
		if err := os.Rename(filepath.Join(dir, newest.Path), filepath.Join(dir, audit.Path)); err != nil {
			t.Fatal(err)
		}
		anchorAtEnd(t, dir, audit.Path)
		before := verify(t, dir)
		if before.Problem != nil {
			t.Fatalf("before the next write: %+v", before.Problem)
		}
		writeTrail(t, dir, 1, 3, 4<<10)
		v := verify(t, dir)
		if v.Problem != nil || v.Rows != before.Rows+3 {
			t.Fatalf("after: %+v, %d rows, want %d", v.Problem, v.Rows, before.Rows+3)
		}
		if segs2, _ := auditDoor(t, dir).Segments(audit.Path); len(segs2) != len(segs) {
			t.Errorf("%d files after the rotation was finished, want %d", len(segs2), len(segs))
		}
	})
}

// anchorAtEnd rewrites the checkpoint to name the last line of rel, as it
// would be after a crash that came before anything later was synced.
func anchorAtEnd(t *testing.T, dir, rel string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, rel))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	last := lines[len(lines)-1]
	var l struct {
		Seq   int64
		Chain *audit.ChainRecord
	}
	_ = json.Unmarshal([]byte(last), &l)
	var cp audit.Checkpoint
	cb, _ := os.ReadFile(filepath.Join(dir, audit.CheckpointPath))
	_ = json.Unmarshal(cb, &cp)
	sum := sha256.Sum256([]byte(last))
	cp.Seq, cp.SHA256 = l.Seq, hex.EncodeToString(sum[:])
	nb, _ := json.Marshal(cp)
	if err := os.WriteFile(filepath.Join(dir, audit.CheckpointPath), nb, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestSinkFullDisk: rows the full disk refuses are kept and written, in
// order and chained, once there is room; the file never holds a partial
// row.
func TestSinkFullDisk(t *testing.T) {
	disk := smalldisk.New(t, 256<<10)
	door := auditDoor(t, disk.Dir)
	sink := audit.NewFileSink(door, audit.Options{SyncEvery: time.Hour})
	write := func(i int) error {
		return sink.Write(&audit.Row{CallID: fmt.Sprint(i), Tool: "t", Status: "ok", Arguments: json.RawMessage(`{"pad":"` + strings.Repeat("x", 900) + `"}`)})
	}
	if err := write(0); err != nil {
		t.Fatal(err)
	}
	disk.Fill(t, 3000)
	deferred := 0
	for i := 1; i < 20; i++ {
		var de *audit.DeferredError
		if err := write(i); errors.As(err, &de) {
			deferred++
		} else if err != nil {
			t.Fatalf("row %d: %v", i, err)
		}
		b, _ := os.ReadFile(filepath.Join(disk.Dir, audit.Path))
		if len(b) > 0 && b[len(b)-1] != '\n' {
			t.Fatalf("row %d left a partial line", i)
		}
	}
	if deferred == 0 {
		t.Fatal("the disk never filled")
	}
	disk.Free(t)
	if err := write(20); err != nil {
		t.Fatal(err)
	}
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	var ids []string
	if _, err := audit.Each(disk.Dir, audit.Filter{}, func(r *audit.Row) error { ids = append(ids, r.CallID); return nil }); err != nil {
		t.Fatal(err)
	}
	want := make([]string, 21)
	for i := range want {
		want[i] = fmt.Sprint(i)
	}
	if !slices.Equal(ids, want) {
		t.Fatalf("rows %v, want 0…20 in order", ids)
	}
	if v := verify(t, disk.Dir); v.Problem != nil {
		t.Fatalf("%+v", v.Problem)
	}
}

// TestFollowAcrossRotation: a follower of the trail gets every row written
// after it started, once, while the trail rotates, and no chain record.
func TestFollowAcrossRotation(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeTrail(t, dir, 1, 2, 0)
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := make(chan string, 100)
	done := make(chan error, 1)
	// From the end of the trail as it is now (a cursor, so the follower's
	// start cannot race the writes below).
	fi, err := os.Stat(filepath.Join(dir, audit.Path))
	if err != nil {
		t.Fatal(err)
	}
	from := ndjson.Cursor{Ino: fi.Sys().(*syscall.Stat_t).Ino, Off: fi.Size()}
	go func() {
		done <- audit.Follow(ctx, root, ndjson.FollowOptions{From: &from, Poll: 5 * time.Millisecond}, func(r *audit.Row, _ ndjson.Cursor) error {
			got <- r.CallID
			return nil
		})
	}()
	sink := audit.NewFileSink(auditDoor(t, dir), audit.Options{MaxBytes: 1500})
	for i := range 30 {
		if err := sink.Write(&audit.Row{CallID: fmt.Sprintf("f%d", i), Tool: "t", Status: "ok"}); err != nil {
			t.Fatal(err)
		}
	}
	_ = sink.Close()
	for i := range 30 {
		select {
		case id := <-got:
			if id != fmt.Sprintf("f%d", i) {
				t.Fatalf("row %d is %s", i, id)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("only %d of 30 rows followed", i)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if segs, _ := auditDoor(t, dir).Segments(audit.Path); len(segs) < 4 {
		t.Fatalf("%d files: the trail did not rotate under the follower", len(segs))
	}
}

func TestOTLPRecord(t *testing.T) {
	t.Parallel()
	var buf strings.Builder
	w := audit.NewOTLPWriter(&buf, "1.2.3", "p-1", "/proj")
	rows := []audit.Row{
		{TS: time.Unix(1700000000, 5), CallID: "c1", Agent: "coder", Tool: "bash", Status: audit.StatusRejected, ErrorKind: "guard",
			Traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", Seq: 7, Prev: "ab"},
		{TS: time.Unix(1700000001, 0), CallID: "c2", Agent: "coder", Tool: "t", Status: audit.StatusOK, Traceparent: "garbage"},
	}
	for i := range rows {
		if err := w.Add(&rows[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var req struct {
		ResourceLogs []struct {
			ScopeLogs []struct {
				LogRecords []struct {
					TimeUnixNano   string
					SeverityNumber int
					TraceID        string `json:"traceId"`
					SpanID         string `json:"spanId"`
					Attributes     []struct {
						Key   string
						Value map[string]any
					}
				}
			}
		}
	}
	if err := json.Unmarshal([]byte(buf.String()), &req); err != nil || strings.Count(buf.String(), "\n") != 1 {
		t.Fatalf("%v: %s", err, buf.String())
	}
	recs := req.ResourceLogs[0].ScopeLogs[0].LogRecords
	if len(recs) != 2 || recs[0].TimeUnixNano != "1700000000000000005" || recs[0].SeverityNumber != 13 ||
		recs[0].TraceID != "4bf92f3577b34da6a3ce929d0e0e4736" || recs[0].SpanID != "00f067aa0ba902b7" || recs[1].TraceID != "" {
		t.Fatalf("records %+v", recs)
	}
	attrs := map[string]any{}
	for _, a := range recs[0].Attributes {
		for _, v := range a.Value {
			attrs[a.Key] = v
		}
	}
	if attrs["gen_ai.tool.name"] != "bash" || attrs["error.type"] != "guard" || attrs["toolhost.audit.seq"] != "7" {
		t.Fatalf("attributes %v", attrs)
	}
}
