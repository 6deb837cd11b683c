package engine_test

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/audit"
	"github.com/toolhost/toolhost/internal/callctx"
	"github.com/toolhost/toolhost/internal/policy"
	"github.com/toolhost/toolhost/internal/tool"
)

// TestHungToolIsAnsweredAtItsTimeout calls a tool that ignores its context
// and blocks: the call is still answered as a timeout at the tool's
// deadline with exactly one audit row, and the result the tool produces
// after it is released changes neither.
func TestHungToolIsAnsweredAtItsTimeout(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	returned := make(chan struct{})
	hung := tool.New(tool.Spec{Name: "hung", Description: "test tool hung", Effect: tool.Additive},
		func(_ context.Context, _ *callctx.Ctx, in EchoIn) (EchoOut, error) {
			defer close(returned)
			<-release
			return EchoOut{Status: tool.Status{OK: true}, Text: "late " + in.Text}, nil
		})
	r := newRig(t, rigOpts{
		tools:  []tool.Tool{hung},
		policy: map[string]policy.Rule{"hung": {Permission: policy.Write, TimeoutMS: 50}},
	})
	start := time.Now()
	out := r.call(t, "hung", `{"text":"x"}`)
	took := time.Since(start)
	if out.Status != audit.StatusTimeout || !strings.Contains(out.Message, "timed out after 50 ms") {
		t.Fatalf("got %s; want a timeout after 50 ms", describe(out))
	}
	if took > 2*time.Second {
		t.Fatalf("answered after %s; want about the 50 ms deadline", took)
	}
	close(release)
	<-returned
	time.Sleep(20 * time.Millisecond) // the late result has every chance to land
	if rows := r.sink.all(); len(rows) != 1 || rows[0].Status != audit.StatusTimeout {
		t.Fatalf("audit rows %+v; want one timeout row", rows)
	}
	if out.Status != audit.StatusTimeout || len(out.Result.Structured) != 0 {
		t.Fatalf("the late result reached the outcome: %s", describe(out))
	}
}

// TestStalledAuditSinkIsBounded makes more calls than maxAuditInflight
// (64) against a sink that never answers: each call is answered within
// about the audit bound, every row is counted as failed, and the stalled
// writes hold a bounded number of goroutines.
func TestStalledAuditSinkIsBounded(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	r := newRig(t, rigOpts{
		tools:   []tool.Tool{scripted("echo", tool.ReadOnly, &script{})},
		sink:    blockingSink{release: release},
		auditTO: 5 * time.Millisecond,
	})
	before := runtime.NumGoroutine()
	const calls = 100
	for i := range calls {
		start := time.Now()
		out := r.call(t, "echo", `{"text":"still answered"}`)
		if took := time.Since(start); took > time.Second {
			t.Fatalf("call %d answered after %s; want about the 5 ms audit bound", i, took)
		}
		if mustText(t, out).Text != "still answered" {
			t.Fatalf("call %d: %s", i, describe(out))
		}
	}
	if n := r.eng.AuditFailures(); n != calls {
		t.Fatalf("AuditFailures = %d, want %d", n, calls)
	}
	if grown := runtime.NumGoroutine() - before; grown > 64+8 {
		t.Fatalf("%d goroutines more after %d calls to a stalled sink; want at most the 64 stalled writes and a few", grown, calls)
	}
}
