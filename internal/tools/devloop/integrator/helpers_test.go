package integrator

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/callctx"
	"github.com/toolhost/toolhost/internal/procs"
	"github.com/toolhost/toolhost/internal/testutil"
)

var (
	unitBinOnce sync.Once
	unitBinPath string
	unitBinErr  error
	unitBinDir  string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if unitBinDir != "" {
		_ = os.RemoveAll(unitBinDir)
	}
	os.Exit(code)
}

// unitServer builds testdata/unitserver once per test process.
func unitServer(t *testing.T) string {
	t.Helper()
	unitBinOnce.Do(func() {
		unitBinDir, unitBinErr = os.MkdirTemp("", "unitserver-")
		if unitBinErr != nil {
			return
		}
		unitBinPath = filepath.Join(unitBinDir, "unitserver")
		out, err := exec.Command("go", "build", "-o", unitBinPath, "./testdata/unitserver").CombinedOutput()
		if err != nil {
			unitBinErr = fmt.Errorf("go build unitserver: %v\n%s", err, out)
		}
	})
	if unitBinErr != nil {
		t.Fatal(unitBinErr)
	}
	return unitBinPath
}

// progressLog records the progress a tool reports.
type progressLog struct {
	mu    sync.Mutex
	calls []float64
	msgs  []string
}

func (p *progressLog) fn(progress, _ float64, msg string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls = append(p.calls, progress)
	p.msgs = append(p.msgs, msg)
}

func (p *progressLog) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.calls)
}

// env is an in-process integrator session on a temp project.
type env struct {
	dir      string
	c        *callctx.Ctx
	procs    *procs.Manager
	progress *progressLog
}

func newEnv(t *testing.T) *env {
	t.Helper()
	return newEnvAt(t, t.TempDir())
}

// newEnvAt opens a session on dir; two envs on one dir act like two
// toolhost processes sharing a project.
func newEnvAt(t *testing.T, dir string) *env {
	t.Helper()
	m := procs.NewManager(procs.Options{Grace: 500 * time.Millisecond})
	pl := &progressLog{}
	c := testutil.NewCtx(t, testutil.CtxOptions{Agent: "integrator", Dir: dir, Clock: callctx.SystemClock{},
		EnvAllowList: []string{"TOOLHOST_TEST_ALLOWED"}, Procs: m, Progress: pl.fn})
	// Registered after NewCtx's cleanup, so it runs first: the units stop
	// before the doors close.
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Errorf("close process owner: %v", err)
		}
	})
	return &env{dir: c.ProjectDir, c: c, procs: m, progress: pl}
}

// unitDir creates units/<id> in the project.
func (e *env) unitDir(t *testing.T, id string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(e.dir, "units", id), 0o755); err != nil {
		t.Fatal(err)
	}
}

func (e *env) readJSON(t *testing.T, rel string, v any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(e.dir, rel))
	if err != nil {
		t.Fatal(err)
	}
	if len(b) == 0 || b[len(b)-1] != '\n' {
		t.Fatalf("%s does not end with a newline", rel)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
}

// waitGroupSize waits until the process group has at least n live members.
func waitGroupSize(t *testing.T, pgid, n int) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		m, _ := procs.GroupMembers(pgid)
		if len(m) >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process group %d has %d members, want %d", pgid, len(m), n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func noGroupLeft(t *testing.T, pgid int) {
	t.Helper()
	if m, err := procs.GroupMembers(pgid); err != nil || len(m) != 0 {
		t.Fatalf("process group %d still has %v (%v)", pgid, m, err)
	}
}

func deadPort(t *testing.T) int {
	t.Helper()
	p, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// waitIgnoringTerm waits until the stubborn unit's child has said it ignores
// SIGTERM (it prints "stubborn child" after signal.Ignore); a group of two
// alone does not mean the child is past that point.
func waitIgnoringTerm(t *testing.T, projectDir, unit string) {
	t.Helper()
	log := filepath.Join(projectDir, "integration", "logs", unit+".out.log")
	deadline := time.Now().Add(15 * time.Second)
	for {
		if b, _ := os.ReadFile(log); strings.Contains(string(b), "stubborn child") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never said the child ignores SIGTERM", log)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
