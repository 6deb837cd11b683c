package engine_test

import (
	"context"
	"encoding/json"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/audit"
	"github.com/toolhost/toolhost/internal/callctx"
	"github.com/toolhost/toolhost/internal/engine"
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

// TestTimedOutCallsParkNoGoroutine: calls whose tool honours its context
// and so returns at its deadline leave nothing waiting out the overrun
// grace behind them (a goroutine each did, for 250 ms).
func TestTimedOutCallsParkNoGoroutine(t *testing.T) {
	prompt := tool.New(tool.Spec{Name: "prompt", Description: "test tool that returns at its deadline", Effect: tool.ReadOnly},
		func(ctx context.Context, _ *callctx.Ctx, in EchoIn) (EchoOut, error) {
			<-ctx.Done()
			return EchoOut{}, ctx.Err()
		})
	r := newRig(t, rigOpts{
		tools:  []tool.Tool{prompt},
		policy: map[string]policy.Rule{"prompt": {Permission: policy.Read, TimeoutMS: 5}},
	})
	const calls = 100
	var wg sync.WaitGroup
	for range calls {
		wg.Go(func() {
			if out := r.call(t, "prompt", `{"text":"x"}`); out.Status != audit.StatusTimeout {
				t.Errorf("got %s; want a timeout", describe(out))
			}
		})
	}
	wg.Wait()
	// The engine's idle pool workers stay a while by design; what must not
	// is the timeout stage's context.AfterFunc goroutine.
	// Within a time well short of the 250 ms grace, for the last of them
	// to finish starting its timer.
	buf := make([]byte, 1<<22)
	parked := func() int {
		return strings.Count(string(buf[:runtime.Stack(buf, true)]), "created by context.(*afterFuncCtx)")
	}
	n := parked()
	for deadline := time.Now().Add(150 * time.Millisecond); n > 0 && time.Now().Before(deadline); n = parked() {
		time.Sleep(5 * time.Millisecond)
	}
	if n > 0 {
		t.Fatalf("%d goroutines of the timeout stage still parked right after %d timed-out calls; want none", n, calls)
	}
}

// TestSlowAuditSinkUnderABurstKeepsEveryRow makes far more calls at once
// than maxAuditInflight against a sink that is slow but answers (one write
// at a time, 1 ms each, as a disk that syncs every row): every call waits
// its turn within the audit bound and every row lands in the sink, none in
// the log. (Before, a call that found 64 writes in flight sent its row to
// the log at once, so a burst on a slow disk left holes in the trail.)
func TestSlowAuditSinkUnderABurstKeepsEveryRow(t *testing.T) {
	t.Parallel()
	sink := &slowSink{each: time.Millisecond}
	r := newRig(t, rigOpts{
		tools:   []tool.Tool{scripted("echo", tool.ReadOnly, &script{})},
		sink:    sink,
		auditTO: 10 * time.Second,
	})
	const calls = 300
	var wg sync.WaitGroup
	for range calls {
		wg.Go(func() {
			if out := r.call(t, "echo", `{"text":"burst"}`); out.IsError {
				t.Errorf("call: %s", describe(out))
			}
		})
	}
	wg.Wait()
	if n := r.eng.AuditFailures(); n != 0 {
		t.Fatalf("AuditFailures = %d after a burst of %d calls on a slow sink; want 0", n, calls)
	}
	if n := sink.rows(); n != calls {
		t.Fatalf("the sink stored %d rows of %d calls", n, calls)
	}
}

// slowSink stores rows one at a time, taking each long.
type slowSink struct {
	each time.Duration
	mu   sync.Mutex
	n    int
}

func (s *slowSink) Write(*audit.Row) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	time.Sleep(s.each)
	s.n++
	return nil
}

func (s *slowSink) rows() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// TestAnswerWhileTheToolHolds: with Request.Answer (a transport that can
// answer before Call returns, stdio) the tool runs on Call's own
// goroutine; one that ignores its context is answered through Answer as a
// timeout while it still holds that goroutine, Call returns nil once it
// lets go, and the late result changes neither the answer nor the one
// audit row. A stalled sink is answered through Answer the same way.
func TestAnswerWhileTheToolHolds(t *testing.T) {
	t.Parallel()
	t.Run("hung tool", func(t *testing.T) {
		t.Parallel()
		release := make(chan struct{})
		hung := tool.New(tool.Spec{Name: "hung", Description: "test tool hung", Effect: tool.Additive},
			func(_ context.Context, _ *callctx.Ctx, in EchoIn) (EchoOut, error) {
				<-release
				return EchoOut{Status: tool.Status{OK: true}, Text: "late " + in.Text}, nil
			})
		r := newRig(t, rigOpts{
			tools:  []tool.Tool{hung},
			policy: map[string]policy.Rule{"hung": {Permission: policy.Write, TimeoutMS: 50}},
		})
		answered := make(chan *engine.Outcome, 2)
		returned := make(chan *engine.Outcome, 1)
		go func() {
			returned <- r.eng.Call(context.Background(), engine.Request{Tool: "hung", Args: json.RawMessage(`{"text":"x"}`),
				Answer: func(out *engine.Outcome) { answered <- out }})
		}()
		out := <-answered
		if out.Status != audit.StatusTimeout || !strings.Contains(out.Message, "timed out after 50 ms") {
			t.Fatalf("answered %s; want a timeout after 50 ms", describe(out))
		}
		select {
		case got := <-returned:
			t.Fatalf("Call returned %v while its tool still ran", got)
		default:
		}
		close(release)
		if got := <-returned; got != nil {
			t.Fatalf("Call returned %s after an early answer; want nil", describe(got))
		}
		if len(answered) != 0 {
			t.Fatal("answered twice")
		}
		if rows := r.sink.all(); len(rows) != 1 || rows[0].Status != audit.StatusTimeout {
			t.Fatalf("audit rows %+v; want one timeout row", rows)
		}
	})
	t.Run("stalled sink", func(t *testing.T) {
		t.Parallel()
		release := make(chan struct{})
		r := newRig(t, rigOpts{
			tools:   []tool.Tool{scripted("echo", tool.ReadOnly, &script{})},
			sink:    blockingSink{release: release},
			auditTO: 5 * time.Millisecond,
		})
		answered := make(chan *engine.Outcome, 2)
		returned := make(chan *engine.Outcome, 1)
		go func() {
			returned <- r.eng.Call(context.Background(), engine.Request{Tool: "echo", Args: json.RawMessage(`{"text":"still answered"}`),
				Answer: func(out *engine.Outcome) { answered <- out }})
		}()
		if out := <-answered; mustText(t, out).Text != "still answered" {
			t.Fatalf("answered %s", describe(out))
		}
		close(release)
		if got := <-returned; got != nil {
			t.Fatalf("Call returned %s after the audit bound answered; want nil", describe(got))
		}
		if n := r.eng.AuditFailures(); n != 1 {
			t.Fatalf("AuditFailures = %d, want 1", n)
		}
	})
}
