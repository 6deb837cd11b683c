package dashboard_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
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
	// No browser to open here: the command says so and serves on.
	env := append(os.Environ(), "BROWSER=", "DISPLAY=", "WAYLAND_DISPLAY=")
	p := testutil.Start(t, testutil.Toolhost(t), []string{"demo", "--dashboard", "--dashboard-addr", "127.0.0.1:0", "--project-dir", dir}, env, testutil.DashboardURL)
	d := dash{URL: p.URL, proc: p}
	finished := func(l string) bool { return strings.Contains(l, "the dashboard keeps running") }
	// The page and its state answer while the demo plays.
	if status, _ := d.get(t, "/", nil); status != http.StatusOK {
		t.Fatalf("GET / = %d", status)
	}
	d.state(t)
	if _, done := p.WaitFor(0, finished); done {
		t.Fatalf("the dashboard answered only once the demo had finished:\n%s", p.Log())
	}
	if _, done := p.WaitFor(3*time.Minute, finished); !done {
		t.Fatalf("the demo did not finish, or toolhost demo --dashboard exited (%v) instead of serving on:\n%s", p.Err(), p.Log())
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
	if !strings.Contains(p.Log(), "no browser to open here") {
		t.Errorf("demo --dashboard did not say there is no browser to open:\n%s", p.Log())
	}
	if err := p.Cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Done():
		if err := p.Err(); err != nil {
			t.Fatalf("after Ctrl-C: %v\n%s", err, p.Log())
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("toolhost demo --dashboard did not stop on Ctrl-C:\n%s", p.Log())
	}
}
