package dashboard_test

import (
	"bufio"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/testutil"
)

// TestDemoDashboard: `toolhost demo --dashboard` serves the dashboard
// while the demo runs (the page answers before the demo has finished),
// shows the demo's calls and refusals, keeps serving after the demo, and
// stops on Ctrl-C.
func TestDemoDashboard(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "project")
	cmd := exec.Command(testutil.Toolhost(t), "demo", "--dashboard", "--dashboard-addr", "127.0.0.1:0", "--project-dir", dir)
	// No browser to open here: the command says so and serves on.
	cmd.Env = append(os.Environ(), "BROWSER=", "DISPLAY=", "WAYLAND_DISPLAY=")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr testutil.SyncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	urlCh, after := make(chan string, 1), make(chan struct{})
	var mu sync.Mutex
	var once sync.Once
	var lines []string
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			l := sc.Text()
			mu.Lock()
			lines = append(lines, l)
			mu.Unlock()
			if u, ok := strings.CutPrefix(l, "toolhost dashboard: "); ok {
				urlCh <- u
			}
			if strings.Contains(l, "the dashboard keeps running") {
				once.Do(func() { close(after) })
			}
		}
		exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	})
	output := func() string {
		mu.Lock()
		defer mu.Unlock()
		return strings.Join(lines, "\n") + "\n" + stderr.String()
	}
	var d dash
	select {
	case d.URL = <-urlCh:
	case err := <-exited:
		t.Fatalf("toolhost demo --dashboard exited (%v) before it served:\n%s", err, output())
	case <-time.After(60 * time.Second):
		t.Fatalf("toolhost demo --dashboard printed no URL:\n%s", output())
	}
	// The page and its state answer while the demo plays.
	if status, _ := d.get(t, "/", nil); status != http.StatusOK {
		t.Fatalf("GET / = %d", status)
	}
	d.state(t)
	select {
	case <-after:
		t.Fatalf("the dashboard answered only once the demo had finished:\n%s", output())
	default:
	}
	select {
	case <-after:
	case err := <-exited:
		t.Fatalf("toolhost demo --dashboard exited (%v) instead of serving on:\n%s", err, output())
	case <-time.After(3 * time.Minute):
		t.Fatalf("the demo did not finish:\n%s", output())
	}
	eventually(t, 10*time.Second, func() string {
		s := d.state(t)
		refused := 0
		for _, r := range s.Audit {
			if r.Status == "rejected" {
				refused++
			}
		}
		if len(s.Agents) != 6 || len(s.Audit) < 40 || refused < 2 {
			return "the demo's six agents, calls and refusals are not all shown"
		}
		return ""
	})
	if !strings.Contains(output(), "no browser to open here") {
		t.Errorf("demo --dashboard did not say there is no browser to open:\n%s", output())
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("after Ctrl-C: %v\n%s", err, output())
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("toolhost demo --dashboard did not stop on Ctrl-C:\n%s", output())
	}
}
