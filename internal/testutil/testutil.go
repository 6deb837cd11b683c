package testutil

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/toolhost/toolhost/internal/confine"
)

type build struct {
	once sync.Once
	path string
	err  error
	out  []byte
}

var (
	releaseBuild build
	testBuild    build
)

// RepoRoot returns the module root (the directory holding go.mod).
func RepoRoot(t testing.TB) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// Toolhost builds ./cmd/toolhost once per test process and returns the
// binary's path. Beside it, as `make build` installs them, is the helper
// toolhost-confine (ConfineHelper). The binaries live in a ProcessDir,
// removed by the first test process that starts after this one is gone.
func Toolhost(t testing.TB) string {
	t.Helper()
	return releaseBuild.get(t)
}

// ToolhostWithTestTools is Toolhost built with -tags testtools, which adds
// debug_sleep, debug_hang, debug_panic and debug_echo for protocol tests. Agents files
// used with it must list those tools.
func ToolhostWithTestTools(t testing.TB) string {
	t.Helper()
	return testBuild.get(t, "-tags", "testtools")
}

func (b *build) get(t testing.TB, flags ...string) string {
	t.Helper()
	b.once.Do(func() {
		dir, err := ProcessDir("toolhost-bin")
		if err != nil {
			b.err = err
			return
		}
		b.path = filepath.Join(dir, "toolhost")
		args := append([]string{"build"}, flags...)
		args = append(args, "-o", dir+"/", "./cmd/toolhost", "./cmd/toolhost-confine")
		cmd := exec.Command("go", args...)
		cmd.Dir = RepoRoot(t)
		// Built like `make build`: static, as agent CLIs launch it.
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		b.out, b.err = cmd.CombinedOutput()
	})
	if b.err != nil {
		t.Fatalf("build toolhost: %v\n%s", b.err, b.out)
	}
	return b.path
}

// ConfineHelper is the path of the toolhost-confine built beside Toolhost.
func ConfineHelper(t testing.TB) string {
	t.Helper()
	return filepath.Join(filepath.Dir(Toolhost(t)), confine.HelperName)
}

// ConfineCommands are the two ways to run `toolhost confine` by name:
// toolhost's own subcommand and the helper built beside it.
func ConfineCommands(t testing.TB) map[string][]string {
	t.Helper()
	return map[string][]string{
		"toolhost confine": {Toolhost(t), "confine"},
		"toolhost-confine": {ConfineHelper(t)},
	}
}

// NeedTool returns the path of an external program the test needs. It looks
// in env var envVar first, then in the project's .deps/node_modules/.bin,
// then on PATH. When the program is missing, the test fails under CI
// (CI=true) and is skipped elsewhere with the command that installs it.
func NeedTool(t testing.TB, name, envVar, install string) string {
	t.Helper()
	if envVar != "" {
		if p := os.Getenv(envVar); p != "" {
			return p
		}
	}
	local := filepath.Join(RepoRoot(t), ".deps", "node_modules", ".bin", name)
	if _, err := os.Stat(local); err == nil {
		return local
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%s is required in CI but missing; %s", name, install)
	}
	t.Skipf("%s not installed; run: %s", name, install)
	return ""
}

// NeedDeps returns the absolute path of rel, something a scripts/deps
// script installs under the repository (e.g. ".deps/mcp-clients"). When it
// is missing the test fails under CI (CI=true) and is skipped elsewhere
// with the command that installs it.
func NeedDeps(t testing.TB, rel, install string) string {
	t.Helper()
	p := filepath.Join(RepoRoot(t), filepath.FromSlash(rel))
	if _, err := os.Stat(p); err == nil {
		return p
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%s is required in CI but missing; %s", rel, install)
	}
	t.Skipf("%s not installed; run: %s", rel, install)
	return ""
}
