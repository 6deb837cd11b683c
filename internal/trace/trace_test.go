package trace

import (
	"context"
	"strings"
	"testing"
)

// TestNilIsFree: without a provider every hook is a nil check and the
// engine's entry points return what they were given.
func TestNilIsFree(t *testing.T) {
	var p *Provider
	s := p.Session(Identity{SessionID: "s"})
	if s != nil || s.Args() {
		t.Fatal("a nil provider has no session")
	}
	s.End()
	s.AuditFailed()
	ctx := context.Background()
	got, call := s.Call(ctx, "t", "c", Parent{})
	if got != ctx || call != nil {
		t.Fatal("Call without a session and without a parent must return ctx unchanged")
	}
	call.End(Outcome{})
	var r *Request
	r.End(0, "")
	if err := p.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestPropagatesWithoutExporting: a caller's traceparent still reaches
// upstreams and commands when nothing is exported.
func TestPropagatesWithoutExporting(t *testing.T) {
	var s *Session
	ctx, _ := s.Call(context.Background(), "t", "c", Parent{Traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", Tracestate: "a=b"})
	tp, ts := Context(ctx)
	if tp != "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01" || ts != "a=b" {
		t.Fatalf("Context = %q %q", tp, ts)
	}
	env := env(ctx, []string{"PATH=/bin", "TRACEPARENT=00-old-old-01", "TRACESTATE=old"})
	want := []string{"PATH=/bin", "TRACEPARENT=" + tp, "TRACESTATE=a=b"}
	if strings.Join(env, " ") != strings.Join(want, " ") {
		t.Fatalf("env = %v, want %v", env, want)
	}
	for _, bad := range []string{"", "garbage", "00-00000000000000000000000000000000-00f067aa0ba902b7-01", "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"} {
		ctx, _ := s.Call(context.Background(), "t", "c", Parent{Traceparent: bad})
		if tp, _ := Context(ctx); tp != "" {
			t.Errorf("invalid traceparent %q must be ignored, got %q", bad, tp)
		}
	}
}
