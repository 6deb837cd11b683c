package sandbox

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// testAllow is the allow-list of the fixture sandbox: an agent's own trees, a
// top-level file, a pattern with a glob between literal directories, and
// toolhost's dot-directory.
var testAllow = []string{
	"prd/**",
	"agent-state/pm-*.json",
	"memory/devloop/pm/**",
	"units/*/tests/**",
	"docs/**",
	"timeline.ndjson",
	".toolhost/**",
}

const secret = "SECRET outside the project\n"

// fixture is a project dir with every kind of trap the sandbox must refuse,
// next to an outside dir holding a secret.
type fixture struct {
	root    string // parent of proj and outside
	proj    string
	outside string
}

func newFixture(t testing.TB) fixture {
	t.Helper()
	root := t.TempDir()
	fx := fixture{root: root, proj: filepath.Join(root, "proj"), outside: filepath.Join(root, "outside")}
	dirs := []string{
		"outside/nested",
		"proj/prd/dir", "proj/prd/chapters", "proj/prd/.git", "proj/prd-evil",
		"proj/memory/devloop/pm", "proj/memory/devloop/pm2", "proj/memory/other",
		"proj/agent-state", "proj/.toolhost", "proj/units/a/tests", "proj/units/a/src", "proj/units/b",
	}
	for _, d := range dirs {
		must(t, os.MkdirAll(filepath.Join(root, d), 0o755))
	}
	files := map[string]string{
		"outside/secret.txt":       secret,
		"proj/prd/index.html":      "<h1>old</h1>\n",
		"proj/memory/other/x.txt":  "memory x\n",
		"proj/timeline.ndjson":     "",
		"proj/prd/chapters/c.html": "c\n",
	}
	for name, content := range files {
		must(t, os.WriteFile(filepath.Join(root, name), []byte(content), 0o644))
	}
	links := map[string]string{
		"proj/prd/m":                    "../memory",                          // in-root, leaves the allowed subtree
		"proj/prd/out":                  fx.outside,                           // absolute, outside
		"proj/prd/rel-out":              "../../outside",                      // relative, outside
		"proj/prd/dangling":             "../../outside/created-through-link", // dangling leaf
		"proj/prd/dangling-dir":         "../../outside/nodir",                // dangling middle
		"proj/prd/inlink":               "index.html",                         // in-subtree leaf
		"proj/prd/sub":                  "chapters",                           // in-subtree middle
		"proj/units/b/tests":            "../a/src",                           // inside the base, outside the pattern
		"proj/docs":                     "prd",                                // the allowed base itself is a symlink
		"proj/agent-state/pm-link.json": "../memory/other/x.txt",              // leaf pointing at another agent's file
	}
	for name, target := range links {
		must(t, os.Symlink(target, filepath.Join(root, name)))
	}
	must(t, os.Link(filepath.Join(fx.outside, "secret.txt"), filepath.Join(fx.proj, "prd/hard.txt")))
	must(t, os.Link(filepath.Join(fx.proj, "memory/other/x.txt"), filepath.Join(fx.proj, "prd/hard2.txt")))
	must(t, syscall.Mkfifo(filepath.Join(fx.proj, "prd/fifo"), 0o644))
	return fx
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func (fx fixture) sandbox(t testing.TB) *Sandbox {
	t.Helper()
	s, err := New(fx.proj, "devloop-pm", testAllow)
	must(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// snapshot maps every path under dir to its content (regular files), its
// link target (symlinks) or "dir".
func snapshot(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			out[rel] = "symlink:" + target
		case d.IsDir():
			out[rel] = "dir"
		case d.Type().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[rel] = string(b)
		default:
			out[rel] = "special:" + d.Type().String()
		}
		return nil
	})
	must(t, err)
	return out
}

// diff lists the paths whose entry differs between two snapshots, ignoring
// those for which keep returns true.
func diff(a, b map[string]string, keep func(string) bool) []string {
	var out []string
	for k, v := range a {
		if w, ok := b[k]; (!ok || w != v) && !keep(k) {
			out = append(out, k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok && !keep(k) {
			out = append(out, k)
		}
	}
	return out
}

func under(prefix string) func(string) bool {
	return func(p string) bool { return p == prefix || strings.HasPrefix(p, prefix+"/") }
}
