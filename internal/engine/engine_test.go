package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/audit"
	"github.com/toolhost/toolhost/internal/callctx"
	"github.com/toolhost/toolhost/internal/engine"
	"github.com/toolhost/toolhost/internal/fault"
	"github.com/toolhost/toolhost/internal/policy"
	"github.com/toolhost/toolhost/internal/tool"
)

// httpStatusError is what an upstream client returns for an HTTP error.
type httpStatusError struct{ status int }

func (e *httpStatusError) Error() string   { return fmt.Sprintf("upstream answered HTTP %d", e.status) }
func (e *httpStatusError) HTTPStatus() int { return e.status }

func TestRetry(t *testing.T) {
	t.Parallel()
	transient := tool.Transient(errors.New("upstream flapped"))
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	reset := fmt.Errorf("read body: %w", syscall.ECONNRESET)
	cases := []struct {
		name       string
		effect     tool.Effect
		permission string
		maxRetries int
		faults     []error
		wantStatus audit.Status
		wantCalls  int32
		wantRetry  int
	}{
		{"read fails twice then succeeds", tool.ReadOnly, policy.Read, 3, []error{transient, transient}, audit.StatusOK, 3, 2},
		{"read fails three times, budget two", tool.ReadOnly, policy.Read, 2, []error{transient, transient, transient}, audit.StatusError, 3, 2},
		{"write is never retried", tool.Additive, policy.Write, 3, []error{transient, transient}, audit.StatusError, 1, 0},
		{"read listed as write is never retried", tool.ReadOnly, policy.Write, 5, []error{refused}, audit.StatusError, 1, 0},
		{"read without budget", tool.ReadOnly, policy.Read, 0, []error{transient}, audit.StatusError, 1, 0},
		{"connection refused", tool.ReadOnly, policy.Read, 1, []error{refused}, audit.StatusOK, 2, 1},
		{"connection reset", tool.ReadOnly, policy.Read, 1, []error{reset}, audit.StatusOK, 2, 1},
		{"HTTP 503 is transient", tool.ReadOnly, policy.Read, 1, []error{&httpStatusError{503}}, audit.StatusOK, 2, 1},
		{"HTTP 502 then 504", tool.ReadOnly, policy.Read, 2, []error{&httpStatusError{502}, &httpStatusError{504}}, audit.StatusOK, 3, 2},
		{"HTTP 404 is not transient", tool.ReadOnly, policy.Read, 3, []error{&httpStatusError{404}}, audit.StatusError, 1, 0},
		{"plain error is not transient", tool.ReadOnly, policy.Read, 3, []error{errors.New("bad data")}, audit.StatusError, 1, 0},
		{"expected failure is not retried", tool.ReadOnly, policy.Read, 3, []error{tool.Fail(nil, "no such bug")}, audit.StatusOKFalse, 1, 0},
		{"timed-out attempt is retried", tool.ReadOnly, policy.Read, 2, []error{errSlow}, audit.StatusOK, 2, 1},
		{"every attempt times out", tool.ReadOnly, policy.Read, 1, []error{errSlow, errSlow}, audit.StatusTimeout, 2, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := &script{faults: tc.faults}
			r := newRig(t, rigOpts{
				tools:  []tool.Tool{scripted("flaky", tc.effect, s)},
				policy: map[string]policy.Rule{"flaky": {Permission: tc.permission, MaxRetries: tc.maxRetries, TimeoutMS: 100}},
			})
			out := r.call(t, "flaky", `{"text":"hi"}`)
			if out.Status != tc.wantStatus || out.Retries != tc.wantRetry || s.calls.Load() != tc.wantCalls {
				t.Fatalf("got %s calls=%d; want status %s retries %d calls %d", describe(out), s.calls.Load(), tc.wantStatus, tc.wantRetry, tc.wantCalls)
			}
			rows := r.sink.all()
			if len(rows) != 1 || rows[0].RetryCount != tc.wantRetry || rows[0].Status != tc.wantStatus {
				t.Fatalf("audit rows %+v; want one row with retry_count %d status %s", rows, tc.wantRetry, tc.wantStatus)
			}
			if tc.wantStatus == audit.StatusOK && mustText(t, out).Attempt != int(tc.wantCalls) {
				t.Fatalf("result came from attempt %d, want %d", mustText(t, out).Attempt, tc.wantCalls)
			}
		})
	}
}

func TestRetryStopsAtOnceOnCancel(t *testing.T) {
	t.Parallel()
	s := &script{faults: []error{tool.Transient(errors.New("flap")), tool.Transient(errors.New("flap"))}, started: make(chan struct{}, 4)}
	r := newRig(t, rigOpts{
		tools:  []tool.Tool{scripted("flaky", tool.ReadOnly, s)},
		policy: map[string]policy.Rule{"flaky": {Permission: policy.Read, MaxRetries: 5}},
	})
	// A backoff far longer than the test may run: only cancellation can end
	// the wait.
	r.eng.RetryBase, r.eng.RetryCap = time.Hour, time.Hour
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-s.started; cancel() }()
	out := r.eng.Call(ctx, engine.Request{Tool: "flaky", Args: json.RawMessage(`{"text":"x"}`)})
	if out.Status != audit.StatusCancelled || s.calls.Load() != 1 || out.Retries != 0 {
		t.Fatalf("got %s after %d attempts; want cancelled after 1", describe(out), s.calls.Load())
	}
}

func TestTimeout(t *testing.T) {
	t.Parallel()
	s := &script{faults: []error{errSlow}}
	r := newRig(t, rigOpts{
		tools:  []tool.Tool{scripted("slow_write", tool.Additive, s)},
		policy: map[string]policy.Rule{"slow_write": {Permission: policy.Write, TimeoutMS: 40, MaxRetries: 3}},
	})
	out := r.call(t, "slow_write", `{"text":"x"}`)
	if !out.IsError || out.Status != audit.StatusTimeout || !strings.Contains(out.Message, "timed out after 40 ms") {
		t.Fatalf("got %s; want isError timeout 'timed out after 40 ms'", describe(out))
	}
	if rows := r.sink.all(); len(rows) != 1 || rows[0].Status != audit.StatusTimeout || rows[0].RetryCount != 0 {
		t.Fatalf("audit rows %+v", rows)
	}
}

// TestAuditCompleteness makes one call of every fate and expects exactly one
// row per call with the right status, kind, identity and redacted arguments.
func TestAuditCompleteness(t *testing.T) {
	t.Parallel()
	const n = 3 // every fate n times
	repeat := func(err error) []error {
		out := make([]error, n)
		for i := range out {
			out[i] = err
		}
		return out
	}
	started := make(chan struct{}, n)
	tools := []tool.Tool{
		scripted("echo", tool.ReadOnly, &script{}),
		scripted("expected_fail", tool.ReadOnly, &script{faults: repeat(tool.Fail(nil, "nothing to do; pass another id"))}),
		scripted("broken", tool.Additive, &script{faults: repeat(errors.New("disk on fire"))}),
		scripted("slow", tool.ReadOnly, &script{faults: repeat(errSlow)}),
		scripted("hangs", tool.ReadOnly, &script{faults: repeat(errSlow), started: started}),
		scripted("not_for_agent", tool.ReadOnly, &script{}),
		scripted("denied", tool.ReadOnly, &script{}),
		scripted("odd_permission", tool.ReadOnly, &script{}),
		scripted("needs_human", tool.Additive, &script{}),
		tool.New(tool.Spec{Name: "upstream_tool", Description: "from an upstream", Source: "mcp:gh"}, (&script{}).run),
		tool.New(tool.Spec{Name: "panicky", Description: "panics"}, func(context.Context, *callctx.Ctx, EchoIn) (EchoOut, error) {
			panic("boom")
		}),
		tool.New(tool.Spec{Name: "writer", Description: "writes in.Path", Effect: tool.Additive},
			func(_ context.Context, c *callctx.Ctx, in EchoIn) (EchoOut, error) {
				return EchoOut{Status: tool.Status{OK: true}}, c.Files.WriteFile(in.Path, []byte(in.Text))
			}),
		tool.New(tool.Spec{Name: "shell", Description: "guarded", Effect: tool.Additive, Commands: tool.ScriptField("command")}, (&script{}).run),
	}
	r := newRig(t, rigOpts{
		tools:     tools,
		denyAgent: []string{"not_for_agent"},
		policy: map[string]policy.Rule{
			"slow":           {Permission: policy.Read, TimeoutMS: 30},
			"denied":         {Permission: policy.Deny},
			"odd_permission": {Permission: "admin"},
			"needs_human":    {Permission: policy.Write, Confirm: true},
		},
	})
	cases := []struct {
		tool, args string
		status     audit.Status
		kind       string
		ctx        func() (context.Context, context.CancelFunc)
	}{
		{tool: "echo", args: `{"text":"hi","token":"s3cr3t","data":{"Password":"pw","nested":[{"api_key":"k"}]}}`, status: audit.StatusOK},
		{tool: "expected_fail", args: `{"text":"x"}`, status: audit.StatusOKFalse},
		{tool: "broken", args: `{"text":"x"}`, status: audit.StatusError, kind: "system"},
		{tool: "panicky", args: `{"text":"x"}`, status: audit.StatusError, kind: "panic"},
		{tool: "slow", args: `{"text":"x"}`, status: audit.StatusTimeout, kind: "timeout"},
		{tool: "hangs", args: `{"text":"x"}`, status: audit.StatusCancelled, kind: "cancelled", ctx: func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			go func() { <-started; cancel() }()
			return ctx, cancel
		}},
		{tool: "not_for_agent", args: `{"text":"x"}`, status: audit.StatusRejected, kind: "policy"},
		{tool: "denied", args: `{"text":"x"}`, status: audit.StatusRejected, kind: "policy"},
		{tool: "odd_permission", args: `{"text":"x"}`, status: audit.StatusRejected, kind: "policy"},
		{tool: "upstream_tool", args: `{"text":"x"}`, status: audit.StatusRejected, kind: "policy"},
		{tool: "echo", args: `{"text":5}`, status: audit.StatusRejected, kind: "validation"},
		{tool: "writer", args: `{"text":"x","path":"../escape"}`, status: audit.StatusRejected, kind: "sandbox"},
		{tool: "shell", args: `{"text":"x","command":"curl -d '{\"a\":1}' http://x"}`, status: audit.StatusRejected, kind: "guard"},
		{tool: "needs_human", args: `{"text":"x"}`, status: audit.StatusRejected, kind: "needs_confirmation"},
		{tool: "no_such_tool", args: `{}`, status: audit.StatusRejected, kind: "unknown_tool"},
	}
	for i := range n * len(cases) {
		tc := cases[i%len(cases)]
		ctx, cancel := context.WithCancel(context.Background())
		if tc.ctx != nil {
			ctx, cancel = tc.ctx()
		}
		callID := fmt.Sprintf("call-%02d", i)
		out := r.eng.Call(ctx, engine.Request{Tool: tc.tool, Args: json.RawMessage(tc.args), Meta: callctx.Meta{CallID: callID, UnitID: "u1"}})
		cancel()
		if out.Status != tc.status || out.Kind.String() != tc.kind {
			t.Errorf("%s %s: got %s; want %s/%s", tc.tool, tc.args, describe(out), tc.status, tc.kind)
		}
		if (tc.status == audit.StatusOK || tc.status == audit.StatusOKFalse) == out.IsError {
			t.Errorf("%s: isError %t for status %s", tc.tool, out.IsError, out.Status)
		}
	}
	rows := r.sink.all()
	if len(rows) != n*len(cases) {
		t.Fatalf("%d rows for %d calls", len(rows), n*len(cases))
	}
	for i, row := range rows {
		tc := cases[i%len(cases)]
		if row.CallID != fmt.Sprintf("call-%02d", i) || row.Tool != tc.tool || row.Status != tc.status || row.ErrorKind != tc.kind ||
			row.Agent != "tester" || row.SessionID != "sess-1" || row.ProjectID != "p1" || row.UnitID != "u1" || row.TS.IsZero() || row.DurationMS < 0 {
			t.Errorf("row %d = %+v; want call-%02d %s %s/%s", i, row, i, tc.tool, tc.status, tc.kind)
		}
		if (row.Status != audit.StatusOK) != (row.Error != "") {
			t.Errorf("row %d: status %s with error %q", i, row.Status, row.Error)
		}
	}
	if got := rows[0].Arguments; strings.Contains(string(got), "s3cr3t") || strings.Contains(string(got), `"pw"`) ||
		strings.Contains(string(got), `"k"`) || !strings.Contains(string(got), `"hi"`) {
		t.Fatalf("arguments not redacted right: %s", got)
	}
	if rows[9].Source != "mcp:gh" || rows[0].Source != "builtin" || rows[14].Source != "" {
		t.Fatalf("sources %q %q %q", rows[9].Source, rows[0].Source, rows[14].Source)
	}
	if msg := rows[8].Error; !strings.Contains(msg, `permission "admin"`) || !strings.Contains(msg, "not read, write or deny") {
		t.Fatalf("unknown permission message: %q", msg)
	}
	if !strings.Contains(r.log.String(), `"event":"tool_panic"`) {
		t.Fatalf("panic not logged: %s", r.log.String())
	}
}

type failingSink struct{}

func (failingSink) Write(*audit.Row) error { return errors.New("disk full") }

// blockingSink never answers until the test ends.
type blockingSink struct{ release chan struct{} }

func (b blockingSink) Write(*audit.Row) error { <-b.release; return nil }

func TestAuditSinkFailureNeverFailsTheCall(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	cases := []struct {
		name string
		sink audit.Sink
		want string
	}{
		{"sink errors", failingSink{}, "disk full"},
		{"sink blocks past the default 1 s bound", blockingSink{release: release}, "did not answer within 1s"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, rigOpts{tools: []tool.Tool{scripted("echo", tool.ReadOnly, &script{})}, sink: tc.sink})
			out := r.call(t, "echo", `{"text":"still answered","password":"hunter2"}`)
			// The schema forbids "password": the call is rejected, and the
			// rejection must still be answered and its row counted.
			if out.Status != audit.StatusRejected || out.Kind != fault.Validation {
				t.Fatalf("got %s", describe(out))
			}
			out = r.call(t, "echo", `{"text":"still answered"}`)
			if mustText(t, out).Text != "still answered" {
				t.Fatalf("call failed: %s", describe(out))
			}
			if n := r.eng.AuditFailures(); n != 2 {
				t.Fatalf("AuditFailures = %d, want 2", n)
			}
			logs := r.log.String()
			if !strings.Contains(logs, `"event":"audit_write_failed"`) || !strings.Contains(logs, tc.want) ||
				!strings.Contains(logs, `"arguments":{"text":"still answered"}`) {
				t.Fatalf("log lacks the failed row: %s", logs)
			}
			if strings.Contains(logs, "hunter2") {
				t.Fatalf("secret leaked into the log: %s", logs)
			}
		})
	}
}

// TestReloadNeverAffectsARunningCall changes the policy while a call runs:
// the running call keeps its decision, the next call gets the new one.
func TestReloadNeverAffectsARunningCall(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	blocker := tool.New(tool.Spec{Name: "blocker", Description: "waits for the test", Effect: tool.ReadOnly},
		func(ctx context.Context, _ *callctx.Ctx, in EchoIn) (EchoOut, error) {
			started <- struct{}{}
			select {
			case <-release:
			case <-ctx.Done():
				return EchoOut{}, ctx.Err()
			}
			return EchoOut{Status: tool.Status{OK: true}, Text: in.Text}, nil
		})
	r := newRig(t, rigOpts{tools: []tool.Tool{blocker}, policy: map[string]policy.Rule{"blocker": {Permission: policy.Read, TimeoutMS: 60000}}})
	done := make(chan *engine.Outcome, 1)
	go func() { done <- r.call(t, "blocker", `{"text":"first"}`) }()
	<-started
	path := r.eng.Policy.Path()
	if err := os.WriteFile(path, []byte(`{"tools":{"blocker":{"permission":"deny","timeout_ms":1}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(path, later, later); err != nil {
		t.Fatal(err)
	}
	if out := r.call(t, "blocker", `{"text":"second"}`); out.Kind != fault.Policy {
		t.Fatalf("new policy not in force for a new call: %s", describe(out))
	}
	close(release)
	if out := <-done; mustText(t, out).Text != "first" {
		t.Fatalf("running call was affected by the reload: %s", describe(out))
	}
}

// TestEnvAllowListFollowsReload: the env allow-list tools see (placeholders'
// {{env:NAME}}) comes from the policy in force when the call starts.
func TestEnvAllowListFollowsReload(t *testing.T) {
	t.Parallel()
	seen := make(chan []string, 2)
	peek := tool.New(tool.Spec{Name: "peek", Description: "reports the env allow-list", Effect: tool.ReadOnly},
		func(_ context.Context, c *callctx.Ctx, in EchoIn) (EchoOut, error) {
			seen <- c.Settings.EnvAllowList
			return EchoOut{Status: tool.Status{OK: true}, Text: in.Text}, nil
		})
	r := newRig(t, rigOpts{tools: []tool.Tool{peek}, policy: map[string]policy.Rule{"peek": {Permission: policy.Read}}})
	mustText(t, r.call(t, "peek", `{"text":"a"}`))
	if got := <-seen; len(got) != 0 {
		t.Fatalf("allow-list before reload = %v, want empty", got)
	}
	path := r.eng.Policy.Path()
	if err := os.WriteFile(path, []byte(`{"tools":{"peek":{"permission":"read"}},"env_allowlist":["NODE_ENV"]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(path, later, later); err != nil {
		t.Fatal(err)
	}
	mustText(t, r.call(t, "peek", `{"text":"b"}`))
	if got := <-seen; len(got) != 1 || got[0] != "NODE_ENV" {
		t.Fatalf("allow-list after reload = %v, want [NODE_ENV]", got)
	}
}
