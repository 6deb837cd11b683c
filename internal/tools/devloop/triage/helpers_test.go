package triage

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/callctx"
	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/internal/tool"
)

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

// newCtx builds the Ctx of a bug-triager call on project dir, working in
// the project dir, at a clock that stands still.
func newCtx(t testing.TB, dir string) *callctx.Ctx {
	t.Helper()
	return testutil.NewCtx(t, testutil.CtxOptions{Agent: "bug-triager", Dir: dir, Cwd: ".",
		Clock: testutil.NewFakeClock(time.Date(2026, 11, 30, 6, 0, 0, 0, time.UTC), 0)})
}

// failReason returns the ok:false reason of err as the model reads it (the
// tool's words and what tool.Explain makes of the error behind them),
// failing the test when err is something else.
func failReason(t testing.TB, err error) string {
	t.Helper()
	var f *tool.Failure
	if !errors.As(err, &f) {
		t.Fatalf("want an ok:false failure, got %v", err)
	}
	return tool.Explain(nil, f)
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
