package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

type writeOp struct {
	name string
	do   func(s *Sandbox, p string, data []byte) error
}

var writeOps = []writeOp{
	{"CheckWrite", func(s *Sandbox, p string, _ []byte) error { _, err := s.CheckWrite(p); return err }},
	{"WriteFile", func(s *Sandbox, p string, data []byte) error { return s.WriteFile(p, data) }},
	{"AppendFile", func(s *Sandbox, p string, data []byte) error { return s.AppendFile(p, data) }},
	{"Update", func(s *Sandbox, p string, data []byte) error {
		return s.Update(p, func(old []byte) ([]byte, error) { return append(old, data...), nil })
	}},
	{"WriteFilesBatch", func(s *Sandbox, p string, data []byte) error {
		// An allowed companion first: a refused p must leave it unwritten.
		return s.WriteFiles([]File{{Path: "prd/batch-companion.txt", Data: data}, {Path: p, Data: data}})
	}},
	{"RenameInto", func(s *Sandbox, p string, data []byte) error {
		if err := s.WriteFile("prd/rename-src.txt", data); err != nil {
			return err
		}
		return s.Rename("prd/rename-src.txt", p)
	}},
}

// TestWriteVerdicts runs every path of the table through every write
// operation on a fresh fixture: an allowed path ends up holding the data at
// the cleaned location; a refused one is a sandbox violation, and in both
// cases nothing outside the project, nothing in another agent's tree and no
// symlink changes.
func TestWriteVerdicts(t *testing.T) {
	t.Parallel()
	long := "prd/" + strings.Repeat("a/", MaxPathLen/2)
	deep := "prd/" + strings.Repeat("d/", MaxPathDepth) + "f.txt"
	cases := []struct {
		name   string
		path   string
		ok     bool
		detail string // part of the refusal message
		at     string // where an allowed write lands (default: path)
	}{
		{name: "file in allowed tree", path: "prd/index.html", ok: true},
		{name: "new nested dirs", path: "prd/new/deep/page.html", ok: true},
		{name: "dot file leaf", path: "prd/.hidden", ok: true},
		{name: "glob file pattern", path: "agent-state/pm-todo.json", ok: true},
		{name: "deeper literal base", path: "memory/devloop/pm/key.md", ok: true},
		{name: "top-level literal file", path: "timeline.ndjson", ok: true},
		{name: "named dot dir", path: ".toolhost/audit.ndjson", ok: true},
		{name: "glob between literals", path: "units/a/tests/x.test.ts", ok: true},
		{name: "dot segment cleaned", path: "./prd/./x.html", ok: true, at: "prd/x.html"},
		{name: "double slash cleaned", path: "prd//y.html", ok: true, at: "prd/y.html"},
		{name: "dotdot inside tree cleaned", path: "prd/a/../b.html", ok: true, at: "prd/b.html"},
		{name: "base itself", path: "prd", detail: "allowed directory itself"},
		{name: "base with slash", path: "prd/", detail: "allowed directory itself"},
		{name: "deep base itself", path: "memory/devloop/pm", detail: "allowed directory itself"},
		{name: "prefix confusion dir", path: "prd-evil/x", detail: "(allowed: "},
		{name: "prefix confusion sibling", path: "memory/devloop/pm2/x", detail: "(allowed: "},
		{name: "other agent state", path: "agent-state/coder-todo.json", detail: "(allowed: "},
		{name: "star does not cross slash", path: "agent-state/pm-x/y.json", detail: "(allowed: "},
		{name: "below a literal file", path: "timeline.ndjson/x", detail: "(allowed: "},
		{name: "case differs", path: "PRD/x.html", detail: "(allowed: "},
		{name: "absolute outside", path: "/etc/passwd", detail: "absolute paths"},
		{name: "absolute inside project", path: "/proj/prd/x", detail: "absolute paths"},
		{name: "backslash absolute", path: `\prd\x`, detail: "absolute paths"},
		{name: "empty", path: "", detail: "empty path"},
		{name: "dot", path: ".", detail: "empty path"},
		{name: "dot slash", path: "./", detail: "empty path"},
		{name: "dotdot out", path: "prd/../../outside/secret.txt", detail: "leaves the project"},
		{name: "dotdot to parent", path: "..", detail: "leaves the project"},
		{name: "dotdot into another tree", path: "prd/../memory/other/x.txt", detail: "(allowed: "},
		{name: "dotdot via prefix twin", path: "prd/a/../../prd-evil/x", detail: "(allowed: "},
		{name: "NUL byte", path: "prd/a\x00b", detail: "NUL"},
		{name: "too long", path: long, detail: "longer than"},
		{name: "too deep", path: deep, detail: "deeper than"},
		{name: "in-root symlink leaves subtree", path: "prd/m/devloop/pm/key.md", detail: "prd/m is a symlink"},
		{name: "absolute symlink out", path: "prd/out/secret.txt", detail: "prd/out is a symlink"},
		{name: "relative symlink out", path: "prd/rel-out/new.txt", detail: "prd/rel-out is a symlink"},
		{name: "dangling leaf symlink", path: "prd/dangling", detail: "symlink"},
		{name: "dangling middle symlink", path: "prd/dangling-dir/x", detail: "symlink"},
		{name: "in-subtree leaf symlink", path: "prd/inlink", detail: "symlink"},
		{name: "in-subtree middle symlink", path: "prd/sub/c.html", detail: "prd/sub is a symlink"},
		{name: "symlink inside base leaves pattern", path: "units/b/tests/x.test.ts", detail: "units/b/tests is a symlink"},
		{name: "base is a symlink", path: "docs/x.html", detail: "docs is a symlink"},
		{name: "leaf symlink to other agent file", path: "agent-state/pm-link.json", detail: "symlink"},
		{name: "hard link to outside", path: "prd/hard.txt", detail: "hard links"},
		{name: "hard link inside project", path: "prd/hard2.txt", detail: "hard links"},
		{name: "fifo leaf", path: "prd/fifo", detail: "not a regular file"},
		{name: "directory leaf", path: "prd/dir", detail: "is a directory"},
		{name: "directory leaf via pattern", path: "units/a/tests", detail: "is a directory"},
		{name: "dot dir in tree", path: "prd/.git/config", detail: "dot-directory .git"},
		{name: "dot dir new", path: "prd/x/.ssh/authorized_keys", detail: "dot-directory .ssh"},
		{name: "dot dir inside named dot dir", path: ".toolhost/.git/x", detail: "dot-directory .git"},
		{name: "file below a file", path: "prd/index.html/x", detail: "prd/index.html is not a directory"},
	}
	if len(cases) < 40 {
		t.Fatalf("the table must hold at least 40 cases, has %d", len(cases))
	}
	for _, tc := range cases {
		for _, op := range writeOps {
			t.Run(tc.name+"/"+op.name, func(t *testing.T) {
				t.Parallel()
				fx := newFixture(t)
				s := fx.sandbox(t)
				before := snapshot(t, fx.root)
				data := []byte("written by " + op.name + "\n")
				err := op.do(s, tc.path, data)
				after := snapshot(t, fx.root)
				at := tc.at
				if at == "" {
					at = tc.path
				}
				if tc.ok {
					if err != nil {
						t.Fatalf("%s(%q): %v", op.name, tc.path, err)
					}
					if op.name != "CheckWrite" {
						got := after[filepath.Join("proj", at)]
						if !strings.HasSuffix(got, string(data)) {
							t.Errorf("%s: %s holds %q, want the data", op.name, at, got)
						}
					}
				} else {
					var se *Error
					if !errors.Is(err, ErrEscape) || !errors.As(err, &se) {
						t.Fatalf("%s(%q) = %v, want a sandbox violation", op.name, tc.path, err)
					}
					if !strings.HasPrefix(err.Error(), "Sandbox violation: devloop-pm tried to write ") ||
						!strings.Contains(err.Error(), "(allowed: prd/**, agent-state/pm-*.json") ||
						!strings.Contains(err.Error(), tc.detail) {
						t.Errorf("message %q: want the standard form mentioning %q", err, tc.detail)
					}
				}
				// Only the target file, the rename source, new parent
				// directories of an allowed target, lock files and
				// temp-file-free directories may differ.
				target := filepath.Join("proj", at)
				keep := func(p string) bool {
					switch {
					case p == "proj/prd/rename-src.txt":
						return true
					case p == "proj/prd/batch-companion.txt" && tc.ok:
						return true
					case under("proj/.toolhost/locks")(p) && (tc.ok && op.name != "CheckWrite" || op.name == "RenameInto"):
						// Writes lock the file (Update, appends) or its
						// directory (atomic replaces) across processes;
						// RenameInto writes its source first.
						return true
					case !tc.ok:
						return false
					}
					return p == target || strings.HasPrefix(target, p+"/") && after[p] == "dir"
				}
				if d := diff(before, after, keep); len(d) > 0 {
					t.Errorf("%s(%q) changed %v", op.name, tc.path, d)
				}
				for p, v := range after {
					if strings.Contains(p, ".toolhost-tmp-") {
						t.Errorf("temp file left behind: %s", p)
					}
					if strings.HasPrefix(v, "symlink:") && before[p] != v {
						t.Errorf("symlink created: %s", p)
					}
				}
			})
		}
	}
}

func TestMkdirAll(t *testing.T) {
	t.Parallel()
	cases := []struct {
		path string
		ok   bool
	}{
		{"prd/assets/img", true},
		{"prd", true},
		{"units/c/tests/unit", true},
		{"units/c", true},
		{"memory/devloop/pm/sub", true},
		{"memory/devloop/pm2", false},
		{"units/c/src", false},
		{"prd/.git/hooks", false},
		{"prd/m/devloop", false},
		{"prd/out/x", false},
		{"docs/sub", false},
		{"/tmp/x", false},
		{"prd/../../outside/x", false},
	}
	for _, tc := range cases {
		t.Run(tc.path, func(t *testing.T) {
			t.Parallel()
			fx := newFixture(t)
			s := fx.sandbox(t)
			outBefore := snapshot(t, fx.outside)
			err := s.MkdirAll(tc.path)
			if tc.ok {
				if err != nil {
					t.Fatalf("MkdirAll(%q): %v", tc.path, err)
				}
				fi, err := os.Lstat(filepath.Join(fx.proj, tc.path))
				if err != nil || !fi.IsDir() {
					t.Fatalf("%s is not a directory after MkdirAll: %v", tc.path, err)
				}
				return
			}
			if !errors.Is(err, ErrEscape) {
				t.Fatalf("MkdirAll(%q) = %v, want a sandbox violation", tc.path, err)
			}
			if d := diff(outBefore, snapshot(t, fx.outside), func(string) bool { return false }); len(d) > 0 {
				t.Errorf("outside changed: %v", d)
			}
		})
	}
}

func TestRename(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, from, to string
		ok             bool
	}{
		{"same dir", "prd/index.html", "prd/home.html", true},
		{"across dirs", "prd/index.html", "prd/chapters/moved.html", true},
		{"across trees", "prd/index.html", "memory/devloop/pm/x.md", true},
		{"into new dirs", "prd/index.html", "prd/a/b/c.html", true},
		{"replace existing", "prd/index.html", "prd/chapters/c.html", true},
		{"destination refused", "prd/index.html", "memory/other/x.txt", false},
		{"source refused", "memory/other/x.txt", "prd/x.txt", false},
		{"source is a symlink", "prd/inlink", "prd/real.html", false},
		{"source is a hard link", "prd/hard.txt", "prd/mine.txt", false},
		{"source is a directory", "prd/dir", "prd/dir2", false},
		{"destination is a symlink", "prd/index.html", "prd/dangling", false},
		{"destination through symlink", "prd/index.html", "prd/out/secret.txt", false},
		{"destination is a hard link", "prd/index.html", "prd/hard.txt", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fx := newFixture(t)
			s := fx.sandbox(t)
			before := snapshot(t, fx.root)
			err := s.Rename(tc.from, tc.to)
			after := snapshot(t, fx.root)
			if !tc.ok {
				if !errors.Is(err, ErrEscape) {
					t.Fatalf("Rename(%q, %q) = %v, want a sandbox violation", tc.from, tc.to, err)
				}
				if d := diff(before, after, func(string) bool { return false }); len(d) > 0 {
					t.Errorf("refused rename changed %v", d)
				}
				return
			}
			if err != nil {
				t.Fatalf("Rename(%q, %q): %v", tc.from, tc.to, err)
			}
			if _, ok := after[filepath.Join("proj", tc.from)]; ok {
				t.Errorf("%s still exists", tc.from)
			}
			if got, want := after[filepath.Join("proj", tc.to)], before[filepath.Join("proj", tc.from)]; got != want {
				t.Errorf("%s holds %q, want %q", tc.to, got, want)
			}
		})
	}
}

func TestRemove(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	s := fx.sandbox(t)
	must(t, s.Remove("prd/index.html"))
	if _, err := os.Lstat(filepath.Join(fx.proj, "prd/index.html")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("prd/index.html still there: %v", err)
	}
	for _, p := range []string{"memory/other/x.txt", "prd/out/secret.txt", "prd/hard.txt", "prd/dir", "prd"} {
		if err := s.Remove(p); !errors.Is(err, ErrEscape) {
			t.Errorf("Remove(%q) = %v, want a sandbox violation", p, err)
		}
	}
	if err := s.Remove("prd/missing/x"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Remove of a missing file = %v, want not-exist", err)
	}
	if b, _ := os.ReadFile(filepath.Join(fx.outside, "secret.txt")); string(b) != secret {
		t.Errorf("secret changed: %q", b)
	}
}

func TestReads(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	s := fx.sandbox(t)
	cases := []struct {
		path string
		want string // content; "" means refused
	}{
		{"prd/index.html", "<h1>old</h1>\n"},
		{"memory/other/x.txt", "memory x\n"},          // reads are not limited by the allow-list
		{"prd/inlink", "<h1>old</h1>\n"},              // in-project symlinks are followed
		{"prd/m/other/x.txt", "memory x\n"},           // in-project, through a directory symlink
		{"prd/out/secret.txt", ""},                    // leaves the project
		{"prd/rel-out/secret.txt", ""},                // leaves the project
		{"../outside/secret.txt", ""},                 // leaves the project
		{filepath.Join(fx.outside, "secret.txt"), ""}, // absolute
	}
	for _, tc := range cases {
		b, err := s.ReadFile(tc.path)
		_, cerr := s.CheckRead(tc.path)
		if tc.want == "" {
			if !errors.Is(err, ErrEscape) || !errors.Is(cerr, ErrEscape) {
				t.Errorf("ReadFile(%q) = %q, %v; CheckRead = %v; want violations", tc.path, b, err, cerr)
			} else if !strings.Contains(err.Error(), "tried to read") {
				t.Errorf("read violation message %q does not say read", err)
			}
			continue
		}
		if err != nil || string(b) != tc.want || cerr != nil {
			t.Errorf("ReadFile(%q) = %q, %v; CheckRead = %v; want %q", tc.path, b, err, cerr, tc.want)
		}
	}
}

// TestUpdateLock proves the cross-process lock serialises read-modify-write:
// many concurrent increments through separate Sandbox values (separate file
// descriptors, as in separate processes) lose none.
func TestUpdateLock(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	const workers, rounds = 8, 25
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := fx.sandbox(t)
			for range rounds {
				err := UpdateJSON(s, "agent-state/pm-counter.json", func(v *struct{ N int }, _ bool) error {
					v.N++
					return nil
				})
				if err != nil {
					t.Errorf("worker %d: %v", w, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b, err := os.ReadFile(filepath.Join(fx.proj, "agent-state/pm-counter.json"))
	must(t, err)
	if want := fmt.Sprintf("{\n  \"N\": %d\n}\n", workers*rounds); string(b) != want {
		t.Errorf("counter file = %q, want %q", b, want)
	}
}

// TestUpdateJSONUnchanged: a function returning ErrUnchanged ends the update
// as a success without rewriting the file (same inode, same bytes), while
// any other error is returned as it is.
func TestUpdateJSONUnchanged(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	s := fx.sandbox(t)
	const p = "agent-state/pm-counter.json"
	must(t, UpdateJSON(s, p, func(v *struct{ N int }, _ bool) error { v.N = 7; return nil }))
	before, err := os.Stat(filepath.Join(fx.proj, p))
	must(t, err)
	if err := UpdateJSON(s, p, func(v *struct{ N int }, _ bool) error {
		v.N = 8 // ignored: the function says nothing changed
		return ErrUnchanged
	}); err != nil {
		t.Fatalf("ErrUnchanged = %v, want success", err)
	}
	after, err := os.Stat(filepath.Join(fx.proj, p))
	must(t, err)
	if !os.SameFile(before, after) {
		t.Error("ErrUnchanged still replaced the file")
	}
	boom := errors.New("boom")
	if err := UpdateJSON(s, p, func(*struct{ N int }, bool) error { return boom }); !errors.Is(err, boom) {
		t.Errorf("other error = %v, want boom", err)
	}
	if b, _ := os.ReadFile(filepath.Join(fx.proj, p)); string(b) != "{\n  \"N\": 7\n}\n" {
		t.Errorf("file = %q, want N 7", b)
	}
}

func TestUpdateLongPath(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	s := fx.sandbox(t)
	p := "prd/" + strings.Repeat("d/", 60) + strings.Repeat("n", 200)
	must(t, s.Update(p, func([]byte) ([]byte, error) { return []byte("x"), nil }))
	if b, err := os.ReadFile(filepath.Join(fx.proj, p)); err != nil || string(b) != "x" {
		t.Fatalf("read back %q: %v", b, err)
	}
}

func TestLockRefusesSymlinkedLockDir(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	must(t, os.Symlink(fx.outside, filepath.Join(fx.proj, ".toolhost/locks")))
	s := fx.sandbox(t)
	if _, err := s.Lock("x"); err == nil || !errors.Is(err, ErrEscape) {
		t.Fatalf("Lock through a symlinked lock dir = %v, want a sandbox violation", err)
	}
	if _, err := os.Stat(filepath.Join(fx.outside, "x.lock")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a lock file was created outside: %v", err)
	}
}

func TestNewRejectsBadPatterns(t *testing.T) {
	t.Parallel()
	for _, p := range []string{"/etc/**", "../x/**", "prd/../memory/**", "prd//x", "[", "./prd/**"} {
		if _, err := New(t.TempDir(), "a", []string{p}); err == nil {
			t.Errorf("New accepted pattern %q", p)
		}
	}
}

func TestBases(t *testing.T) {
	t.Parallel()
	s := newFixture(t).sandbox(t)
	want := []string{"prd", "agent-state", "memory/devloop/pm", "units", "docs", ".", ".toolhost"}
	if got := s.Bases(); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("Bases() = %v, want %v", got, want)
	}
}

func TestJSONFileFormat(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	s := fx.sandbox(t)
	must(t, s.WriteJSON("prd/site.json", map[string]any{"title": "a<b>", "n": 1}))
	b, err := os.ReadFile(filepath.Join(fx.proj, "prd/site.json"))
	must(t, err)
	if want := "{\n  \"n\": 1,\n  \"title\": \"a<b>\"\n}\n"; string(b) != want {
		t.Errorf("site.json = %q, want %q", b, want)
	}
}

func BenchmarkWriteFile(b *testing.B) {
	fx := newFixture(b)
	s := fx.sandbox(b)
	data := []byte("{\n  \"a\": 1\n}\n")
	for b.Loop() {
		if err := s.WriteFile("memory/devloop/pm/deep/er/key.md", data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCheckWrite(b *testing.B) {
	fx := newFixture(b)
	s := fx.sandbox(b)
	for b.Loop() {
		if _, err := s.CheckWrite("prd/chapters/c.html"); err != nil {
			b.Fatal(err)
		}
	}
}

// TestReadsRefuseSpecialFiles: a FIFO an earlier step left in the tree must
// not hang a read (open(2) of a FIFO without a writer blocks) and is
// refused; CheckRead gives the same verdict as the read.
func TestReadsRefuseSpecialFiles(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	s := fx.sandbox(t)
	for _, p := range []string{"prd/fifo", "prd/sub/../fifo"} {
		b, err := s.ReadFile(p)
		if !errors.Is(err, ErrEscape) || !strings.Contains(err.Error(), "tried to read "+p) {
			t.Errorf("ReadFile(%q) = %q, %v; want a read violation", p, b, err)
		}
		b, err = s.ReadTail(p, 4)
		if !errors.Is(err, ErrEscape) {
			t.Errorf("ReadTail(%q) = %q, %v; want a read violation", p, b, err)
		}
		if _, err := s.CheckRead(p); !errors.Is(err, ErrEscape) {
			t.Errorf("CheckRead(%q) = %v; want the read's violation", p, err)
		}
	}
	if _, err := s.CheckRead("prd/chapters"); err != nil {
		t.Errorf("CheckRead of a directory = %v; want allowed", err)
	}
}

// TestLongComponent: a name longer than the file system allows is refused
// as text, so sandbox_check (CheckWrite) and the write agree even when the
// parent directory does not exist yet, and the write leaves nothing behind.
func TestLongComponent(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	s := fx.sandbox(t)
	long := strings.Repeat("a", MaxNameLen+1)
	for _, p := range []string{"prd/newdir/" + long, "prd/newdir/" + long + "/x.html", "prd/" + long} {
		_, cerr := s.CheckWrite(p)
		werr := s.WriteFile(p, []byte("x"))
		if !errors.Is(cerr, ErrEscape) || !errors.Is(werr, ErrEscape) || !strings.Contains(werr.Error(), "longer than") {
			t.Errorf("%.40q…: CheckWrite = %v, WriteFile = %v; want the same violation from both", p, cerr, werr)
		}
	}
	if _, err := os.Lstat(filepath.Join(fx.proj, "prd/newdir")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a refused write created prd/newdir (%v)", err)
	}
	if _, err := s.CheckWrite("prd/" + strings.Repeat("a", MaxNameLen)); err != nil {
		t.Errorf("a %d-byte name is refused: %v", MaxNameLen, err)
	}
}

// TestReadFileCap: a huge (sparse) file is refused with its size, without
// being read into memory, both by ReadFile and by Update (which reads the
// current content before calling its function); Update leaves it as it was.
func TestReadFileCap(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := New(dir, "devloop-pm", []string{"prd/**"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := os.MkdirAll(filepath.Join(dir, "prd"), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, "prd", "big.html"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(100 << 30); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := s.ReadFile("prd/big.html"); err == nil || !strings.Contains(err.Error(), "over the") {
		t.Fatalf("want a size error, got %v", err)
	}
	called := false
	err = s.Update("prd/big.html", func([]byte) ([]byte, error) {
		called = true
		return []byte("replaced"), nil
	})
	if err == nil || !strings.Contains(err.Error(), "prd/big.html is 107374182400 bytes, over the") {
		t.Fatalf("Update: want a size error naming the file, got %v", err)
	}
	if called {
		t.Error("Update called its function on a file it could not read whole")
	}
	if fi, err := os.Stat(filepath.Join(dir, "prd", "big.html")); err != nil || fi.Size() != 100<<30 {
		t.Errorf("the refused file changed: %v, %v", fi, err)
	}
}

// TestLockWaitersHoldNoThreads: while another holder (a separate
// descriptor, as another process has) keeps a named lock, 64 goroutines of
// one sandbox asking for it wait with one of them in flock(2) and the rest
// on the in-process gate, so the process does not run a thread per waiter
// (a burst of timeline_append once ran 263 threads); once the holder lets
// go every one of them gets the lock.
func TestLockWaitersHoldNoThreads(t *testing.T) {
	fx := newFixture(t)
	other, s := fx.sandbox(t), fx.sandbox(t)
	unlock, err := other.Lock("timeline")
	must(t, err)
	before := threads(t)
	const waiters = 64
	var wg sync.WaitGroup
	var got atomic.Int64
	for range waiters {
		wg.Go(func() {
			u, err := s.Lock("timeline")
			if err != nil {
				t.Error(err)
				return
			}
			got.Add(1)
			u()
		})
	}
	// Wait until every waiter is either in flock or at the gate.
	var inFlock, atGate int
	for inFlock+atGate < waiters {
		runtime.Gosched()
		inFlock, atGate = lockWaiters()
	}
	if inFlock != 1 {
		t.Errorf("%d goroutines wait in flock(2) for one lock, want 1 (the rest at the gate)", inFlock)
	}
	if n := threads(t); n-before > waiters/4 {
		t.Errorf("the process runs %d threads with %d goroutines waiting for one lock (%d before)", n, waiters, before)
	}
	unlock()
	wg.Wait()
	if got.Load() != waiters {
		t.Fatalf("%d of %d waiters got the lock", got.Load(), waiters)
	}
}

// lockWaiters counts the goroutines of this process waiting for a named
// lock in flock(2) and at the lock's in-process gate.
func lockWaiters() (inFlock, atGate int) {
	buf := make([]byte, 8<<20)
	buf = buf[:runtime.Stack(buf, true)]
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		switch {
		case strings.Contains(g, "sandbox.flock("):
			inFlock++
		case strings.Contains(g, "sandbox.(*lockGates).enter("):
			atGate++
		}
	}
	return inFlock, atGate
}

// threads is the Threads figure of /proc/self/status.
func threads(t *testing.T) int {
	b, err := os.ReadFile("/proc/self/status")
	must(t, err)
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Threads:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			must(t, err)
			return n
		}
	}
	t.Fatal("no Threads line in /proc/self/status")
	return 0
}
