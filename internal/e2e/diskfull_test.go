package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/audit"
	"github.com/toolhost/toolhost/internal/stdioclient"
	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/internal/testutil/smalldisk"
)

// TestDiskFull runs a real toolhost on a project dir that is a small real
// tmpfs, fills the disk, keeps calling, frees the space and calls again.
// At every step each shared NDJSON file (audit, events, timeline, coder
// log) parses line by line and every JSON file is whole; in the end every
// call that succeeded has its audit row — also the ones that ran while the
// disk was full — and the audit chain verifies.
func TestDiskFull(t *testing.T) {
	disk := smalldisk.New(t, 1<<20)
	project := filepath.Join(disk.Dir, "proj")
	c, err := stdioclient.Start(testutil.Toolhost(t), []string{"serve", "--agent", "coder", "--unit", "api", "--project-dir", project}, os.Environ())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(10 * time.Second)
	ctx := context.Background()
	succeeded := map[string]string{} // call id → tool
	failed := 0
	n := 0
	call := func(tool string, args map[string]any) {
		n++
		id := fmt.Sprintf("call-%03d", n)
		r, err := c.CallTool(ctx, tool, args, map[string]any{"call_id": id})
		if err != nil {
			t.Fatalf("%s: %v\n%s", tool, err, c.Stderr())
		}
		if r.IsError {
			failed++
			return
		}
		succeeded[id] = tool
	}
	round := func(i int) {
		msg := strings.Repeat("m", 300+i%7*100)
		call("timeline_append", map[string]any{"kind": "disk.full", "message": msg})
		call("append_coder_log", map[string]any{"message": msg})
		call("update_todo_item", map[string]any{"id": fmt.Sprintf("step-%03d", 1+i%5), "status": "doing"})
		call("sandbox_check", map[string]any{"path": "units/api/x.go", "op": "write"})
	}
	call("write_todolist", map[string]any{"items": items(5)})
	for i := range 5 {
		round(i)
	}
	checkFiles(t, project)
	if len(succeeded) != n {
		t.Fatalf("%d of %d calls failed before the disk filled", n-len(succeeded), n)
	}

	disk.Fill(t, 6<<10)
	okBefore := len(succeeded)
	for i := range 40 {
		round(i)
		checkFiles(t, project)
	}
	if failed == 0 {
		t.Fatal("no call failed: the disk did not fill")
	}
	if len(succeeded) == okBefore {
		t.Fatal("no call succeeded on the full disk (sandbox_check writes nothing and should)")
	}

	disk.Free(t)
	for i := range 5 {
		round(i)
	}
	checkFiles(t, project)
	if err := c.Close(10 * time.Second); err != nil {
		t.Fatalf("close: %v\n%s", err, c.Stderr())
	}
	checkFiles(t, project)

	rows := map[string]bool{}
	if _, err := audit.Each(project, audit.Filter{}, func(r *audit.Row) error {
		rows[r.CallID] = true
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for id, tool := range succeeded {
		if !rows[id] {
			t.Errorf("%s (%s) succeeded but has no audit row", id, tool)
		}
	}
	v, err := audit.Verify(project)
	if err != nil || v.Problem != nil {
		t.Fatalf("audit verify: %v %+v", err, v.Problem)
	}
	t.Logf("%d calls: %d succeeded, %d failed on the full disk; %d audit rows verified", n, len(succeeded), failed, v.Rows)
}

// checkFiles fails the test when a shared NDJSON file holds a line that
// does not parse, or a JSON file is not whole.
func checkFiles(t *testing.T, project string) {
	t.Helper()
	err := filepath.Walk(project, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() || strings.Contains(p, "/.toolhost/locks/") {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(project, p)
		switch {
		case strings.HasSuffix(p, ".ndjson"):
			if len(b) > 0 && b[len(b)-1] != '\n' {
				t.Errorf("%s ends in a partial line: %q", rel, b[max(0, len(b)-60):])
			}
			for i, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
				if line != "" && !json.Valid([]byte(line)) {
					t.Errorf("%s line %d does not parse: %.80q", rel, i+1, line)
				}
			}
		case strings.HasSuffix(p, ".json"):
			if !json.Valid(b) {
				t.Errorf("%s is not whole: %.80q", rel, b)
			}
		case strings.Contains(p, ".toolhost-tmp-"):
			t.Errorf("temp file left behind: %s", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
