package dashboard_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/audit"
	"github.com/toolhost/toolhost/internal/ndjson"
)

// TestBigTrail: with 1 GB of audit rows (rotated files of 64 MiB, as the
// sink lays them out) the page is served in under a second and the state
// it loads shows the newest rows: the trail is read from its end.
// TOOLHOST_TEST_AUDIT_BYTES sets another size.
func TestBigTrail(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 1 GB audit trail")
	}
	size := int64(1 << 30)
	if s := os.Getenv("TOOLHOST_TEST_AUDIT_BYTES"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		size = n
	}
	dir := t.TempDir()
	var fs syscall.Statfs_t
	if err := syscall.Statfs(dir, &fs); err == nil && int64(fs.Bavail)*int64(fs.Bsize) < 3*size {
		t.Skipf("needs %d MiB free in %s for the trail", 3*size>>20, dir)
	}
	rows := writeTrail(t, dir, size)
	d := runDashboard(t, "--project-dir", dir)

	start := time.Now()
	status, page := d.get(t, "/", nil)
	if took := time.Since(start); status != http.StatusOK || took > time.Second {
		t.Fatalf("GET / = %d after %v (%d bytes), want 200 within 1 s", status, took, len(page))
	}
	start = time.Now()
	s := d.state(t)
	took := time.Since(start)
	t.Logf("%d rows (%d MiB): the page was served and the state with the newest rows answered in %v", rows, size>>20, took)
	if took > time.Second {
		t.Errorf("the state took %v, want within 1 s", took)
	}
	if len(s.Audit) != 500 || s.Audit[0].CallID != "newest-0099" || s.Audit[99].CallID != "newest-0000" || s.Audit[100].Agent != "coder" {
		t.Fatalf("%d rows shown, first %+v: want the 500 newest, newest first", len(s.Audit), s.Audit[:min(2, len(s.Audit))])
	}
}

// writeTrail writes size bytes of audit rows: old rows in rotated files of
// audit.DefaultMaxBytes (one file's rows made once and written again under
// each name, so a gigabyte takes seconds), then 100 rows of this minute in
// the live file. It returns how many rows.
func writeTrail(t testing.TB, dir string, size int64) int {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, ".toolhost"), 0o755); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-48 * time.Hour)
	var seg []byte
	n := 0
	for int64(len(seg)) < min(size, audit.DefaultMaxBytes) {
		r := &audit.Row{TS: old.Add(time.Duration(n) * time.Millisecond), CallID: fmt.Sprintf("old-%09d", n), SessionID: "sess-big",
			Agent: "coder", Tool: fmt.Sprintf("tool_%02d", n%40), Source: "builtin", Arguments: json.RawMessage(`{"path":"units/api/src/x.ts"}`),
			Status: audit.StatusOK, DurationMS: float64(n%50) / 10, Seq: int64(n + 1), Prev: "ab"}
		seg = append(r.AppendJSON(seg), '\n')
		n++
	}
	perSeg, total := n, 0
	written := int64(0)
	for i := 1; written+int64(len(seg)) <= size; i++ {
		if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(ndjson.RotatedName(audit.Path, i))), seg, 0o644); err != nil {
			t.Fatal(err)
		}
		written += int64(len(seg))
		total += perSeg
	}
	f, err := os.Create(filepath.Join(dir, filepath.FromSlash(audit.Path)))
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	var line []byte
	for i := range 100 {
		r := &audit.Row{TS: time.Now().Add(time.Duration(i-100) * time.Millisecond), CallID: fmt.Sprintf("newest-%04d", i), SessionID: "sess-big",
			Agent: "pm", Tool: "timeline_append", Status: audit.StatusOK, DurationMS: 1}
		line = append(r.AppendJSON(line[:0]), '\n')
		_, _ = w.Write(line)
		total++
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return total
}
