package testutil

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

var (
	buildOnce sync.Once
	buildPath string
	buildErr  error
	buildOut  []byte
)

// RepoRoot returns the module root (the directory holding go.mod).
func RepoRoot(t testing.TB) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// Toolhost builds ./cmd/toolhost once per test process and returns the
// binary's path. The binary lives in a temp dir removed when the process
// exits (callers should use it only during tests).
func Toolhost(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "toolhost-bin-")
		if err != nil {
			buildErr = err
			return
		}
		buildPath = filepath.Join(dir, "toolhost")
		cmd := exec.Command("go", "build", "-o", buildPath, "./cmd/toolhost")
		cmd.Dir = RepoRoot(t)
		buildOut, buildErr = cmd.CombinedOutput()
	})
	if buildErr != nil {
		t.Fatalf("build toolhost: %v\n%s", buildErr, buildOut)
	}
	return buildPath
}

// NeedTool returns the path of an external program the test needs. It looks
// in env var envVar first, then in the project's .deps/bin, then on PATH. When
// the program is missing, the test fails under CI (CI=true) and is skipped
// elsewhere with the command that installs it.
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
