package integrator

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

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
	out, err := healthWait(ctx, e.c, HealthWaitInput{Targets: []HealthTarget{
		{Unit: "api", URL: fmt.Sprintf("http://127.0.0.1:%d/health", port)},
	}, TimeoutMS: 110000, IntervalMS: 100})
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
			out, err := healthWait(context.Background(), e.c, HealthWaitInput{Targets: []HealthTarget{{URL: tt.url}}, TimeoutMS: 100})
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
	out, err := healthWait(context.Background(), e.c, HealthWaitInput{Targets: []HealthTarget{{URL: srv.URL}}, TimeoutMS: 300, IntervalMS: 50})
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
		_, err := healthWait(ctx, e.c, HealthWaitInput{Targets: []HealthTarget{
			{URL: fmt.Sprintf("http://127.0.0.1:%d/", deadPort(t))},
		}, TimeoutMS: 110000, IntervalMS: 50})
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
	out, err := healthWait(context.Background(), e.c, HealthWaitInput{Targets: []HealthTarget{{Unit: "ghost", URL: "http://127.0.0.1:1/"}}, TimeoutMS: 100})
	if err != nil || out.OK || !strings.Contains(out.Targets[0].Error, "not in integration/units.json") || out.Targets[0].Attempts != 0 {
		t.Fatalf("result = %+v, %v", out, err)
	}
}
