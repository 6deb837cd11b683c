package triage

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/toolhost/toolhost/internal/ctxinject"
	"github.com/toolhost/toolhost/internal/journal"
	"github.com/toolhost/toolhost/internal/sandbox"
	"github.com/toolhost/toolhost/internal/tool"
)

// triagerAllow is the bug triager's writeAllowList from configs/agents.json.
var triagerAllow = []string{"triage/**", "agent-state/bug-triager-*.json", "memory/devloop/bug-triager/**"}

type fixedClock struct{ t time.Time }

func (f fixedClock) Now() time.Time { return f.t }

// copyProject copies testdata/project into a fresh temp dir, so tools can
// write without touching the repo.
func copyProject(t testing.TB) string {
	t.Helper()
	dst := t.TempDir()
	src := filepath.Join("testdata", "project")
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// newCtx builds the Ctx of a bug-triager call on project dir.
func newCtx(t testing.TB, dir string) *ctxinject.Ctx {
	t.Helper()
	files, err := sandbox.New(dir, "devloop-bug-triager", triagerAllow)
	if err != nil {
		t.Fatal(err)
	}
	shared, err := files.With("toolhost", journal.ServiceAllowList)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = files.Close(); _ = shared.Close() })
	id := ctxinject.Identity{Agent: "bug-triager", AgentName: "devloop-bug-triager", SessionID: "sess-test", ProjectDir: files.ProjectDir()}
	svc := ctxinject.Services{Files: files, Shared: shared, Timeline: journal.Timeline{Door: shared}, Events: journal.Events{Door: shared},
		Clock: fixedClock{time.Date(2026, 11, 30, 6, 0, 0, 0, time.UTC)}, Log: zerolog.Nop()}
	c, err := ctxinject.New(id, svc, ctxinject.Settings{Cwd: files.ProjectDir(), WriteAllowList: triagerAllow}, ctxinject.Meta{CallID: "call-test"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// failReason returns the ok:false reason of err, failing the test when err
// is something else.
func failReason(t testing.TB, err error) string {
	t.Helper()
	var f *tool.Failure
	if !errors.As(err, &f) {
		t.Fatalf("want an ok:false failure, got %v", err)
	}
	return f.Reason
}

// readJSON decodes a project file, checking the file format every tool
// write must have: pretty-printed with a trailing newline.
func readJSON(t testing.TB, dir, rel string, v any) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	if len(data) == 0 || data[len(data)-1] != '\n' || (len(data) > 2 && data[1] != '\n') {
		t.Errorf("%s is not pretty-printed with a trailing newline:\n%s", rel, data)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
}
