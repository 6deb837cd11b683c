package integrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/internal/tool"
)

// wait calls health_wait through its schemas, as the engine would: args are
// the JSON the model sends.
func wait(t *testing.T, ctx context.Context, e *env, args map[string]any) (HealthWaitOutput, error) {
	t.Helper()
	r, err := testutil.RunTool(t, ctx, e.c, HealthWait(), args)
	if err != nil {
		return HealthWaitOutput{}, err
	}
	var out HealthWaitOutput
	if err := json.Unmarshal(r.Structured, &out); err != nil {
		t.Fatal(err)
	}
	return out, nil
}

func target(unit, url string) map[string]any {
	m := map[string]any{"url": url}
	if unit != "" {
		m["unit"] = unit
	}
	return m
}

func TestHealthWaitReportsACrashAtOnce(t *testing.T) {
	t.Parallel()
	bin := unitServer(t)
	e := newEnv(t)
	e.unitDir(t, "api")
	port := deadPort(t)
	if out := start(t, e, UnitInput{ID: "api", Argv: []string{bin, "-mode", "crash"}, Port: port}); !out.OK {
		t.Fatalf("start = %+v", out)
	}
	// timeout_ms is far beyond the context's deadline: only an early
	// return on the unit's exit lets the call finish without a context error.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := wait(t, ctx, e, map[string]any{"targets": []any{target("api", fmt.Sprintf("http://127.0.0.1:%d/health", port))},
		"timeout_ms": 110000, "interval_ms": 100})
	if err != nil {
		t.Fatalf("health_wait did not return on the crash: %v", err)
	}
	r := out.Targets[0]
	if out.OK || r.Ready || !r.Exited || r.ExitCode == nil || *r.ExitCode != 3 {
		t.Fatalf("result = %+v, want exited with code 3", out)
	}
	if !strings.Contains(strings.Join(r.StderrTail, "\n"), "DATABASE_URL is not set") || strings.Contains(strings.Join(r.StderrTail, "\n"), startMarker) {
		t.Fatalf("stderr_tail = %q, want the unit's message without the start marker", r.StderrTail)
	}
	if !strings.Contains(out.Reason, "exited with code 3") {
		t.Fatalf("reason = %q", out.Reason)
	}
}

func TestHealthWaitOnlyLoopbackTargets(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tests := []struct {
		url  string
		want string
	}{
		{"http://example.com/health", "not a loopback address"},
		{"http://10.0.0.1:8080/", "not a loopback address"},
		{"http://127.0.0.1.nip.io/", "not a loopback address"},
		{"ftp://127.0.0.1/", "scheme must be http or https"},
		{"http://[::2]:80/", "not a loopback address"},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			t.Parallel()
			out, err := wait(t, context.Background(), e, map[string]any{"targets": []any{target("", tt.url)}, "timeout_ms": 100})
			if err != nil || out.OK || !strings.Contains(out.Reason, tt.want) {
				t.Fatalf("health_wait(%s) = %+v, %v; want ok:false with %q", tt.url, out, err, tt.want)
			}
		})
	}
	for _, ok := range []string{"http://127.0.0.1:1/", "http://127.8.9.10/", "http://[::1]:80/x", "https://LOCALHOST:8443/"} {
		if _, err := checkLoopbackURL(ok); err != nil {
			t.Errorf("checkLoopbackURL(%s) = %v, want allowed", ok, err)
		}
	}
	if tr, ok := loopbackClient().Transport.(*http.Transport); !ok || tr.Proxy != nil {
		t.Error("the loopback client must not take a proxy from the environment")
	}
	if err := dialLoopbackOnly("tcp", "93.184.216.34:80", nil); !errors.Is(err, ErrNotLoopback) {
		t.Errorf("dial guard let a public address through: %v", err)
	}
}

func TestHealthWaitTimesOutWithLastError(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	out, err := wait(t, context.Background(), e, map[string]any{"targets": []any{target("", srv.URL)}, "timeout_ms": 300, "interval_ms": 50})
	if err != nil {
		t.Fatal(err)
	}
	r := out.Targets[0]
	if out.OK || r.Ready || r.Status != 503 || r.Attempts < 2 || !strings.Contains(r.Error, "HTTP 503") {
		t.Fatalf("result = %+v, want not ready after several 503s", r)
	}
	if e.progress.count() == 0 {
		t.Fatal("no progress reported while waiting")
	}
}

func TestHealthWaitStopsOnCancel(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := wait(t, ctx, e, map[string]any{"targets": []any{target("", fmt.Sprintf("http://127.0.0.1:%d/", deadPort(t)))},
			"timeout_ms": 110000, "interval_ms": 50})
		done <- err
	}()
	for e.progress.count() == 0 {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled health_wait returned %v, want context.Canceled", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("health_wait kept waiting after cancellation")
	}
}

func TestHealthWaitUnknownUnit(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	out, err := wait(t, context.Background(), e, map[string]any{"targets": []any{target("ghost", "http://127.0.0.1:1/")}, "timeout_ms": 100})
	if err != nil || out.OK || !strings.Contains(out.Targets[0].Error, "not in .toolhost/units.json") || out.Targets[0].Attempts != 0 {
		t.Fatalf("result = %+v, %v", out, err)
	}
}

// The port of a unit comes from port_picker's reservation through the same
// placeholders run_case takes; an unknown one is an ok:false naming it.
func TestHealthWaitResolvesPlaceholders(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	defer srv.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	if err := e.c.Shared.WriteJSON(PortsPath, PortsFile{Reservations: map[string]Reservation{"api": {Port: port}}}); err != nil {
		t.Fatal(err)
	}
	out, err := wait(t, context.Background(), e, map[string]any{"targets": []any{target("", "http://127.0.0.1:{{port:api}}/health")}, "timeout_ms": 2000})
	if err != nil || !out.OK || !out.Targets[0].Ready || out.Targets[0].URL != fmt.Sprintf("http://127.0.0.1:%d/health", port) {
		t.Fatalf("health_wait with {{port:api}} = %+v, %v; want ready at port %d", out, err, port)
	}
	out, err = wait(t, context.Background(), e, map[string]any{"targets": []any{target("", "http://127.0.0.1:{{port:web}}/")}, "timeout_ms": 2000})
	if err != nil || out.OK || !strings.Contains(out.Reason, "no port reserved for unit web") || len(out.Targets) != 0 {
		t.Fatalf("unreserved placeholder = %+v, %v; want ok:false naming port_picker", out, err)
	}
}

// The schema the model reads is the one that guards the call.
func TestHealthWaitSchemaRejects(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, tc := range []struct {
		name string
		args map[string]any
		says string
	}{
		{"no targets", map[string]any{"targets": []any{}}, "targets"},
		{"timeout too short", map[string]any{"targets": []any{target("", "http://127.0.0.1:1/")}, "timeout_ms": 50}, "timeout_ms"},
		{"interval too short", map[string]any{"targets": []any{target("", "http://127.0.0.1:1/")}, "interval_ms": 1}, "interval_ms"},
		{"unit not an id", map[string]any{"targets": []any{target("../x", "http://127.0.0.1:1/")}}, "unit"},
		{"no url", map[string]any{"targets": []any{map[string]any{"unit": "api"}}}, "url"},
		{"unknown field", map[string]any{"targets": []any{target("", "http://127.0.0.1:1/")}, "retries": 3}, "retries"},
	} {
		if _, err := wait(t, context.Background(), e, tc.args); !errors.As(err, new(*tool.ValidationError)) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: %v; want a schema rejection naming %s", tc.name, err, tc.says)
		}
	}
}
