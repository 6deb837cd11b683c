package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/toolhost/toolhost/internal/agents"
	"github.com/toolhost/toolhost/internal/audit"
	"github.com/toolhost/toolhost/internal/callctx"
	"github.com/toolhost/toolhost/internal/engine"
	"github.com/toolhost/toolhost/internal/fault"
	"github.com/toolhost/toolhost/internal/journal"
	"github.com/toolhost/toolhost/internal/policy"
	"github.com/toolhost/toolhost/internal/registry"
	"github.com/toolhost/toolhost/internal/rules"
	"github.com/toolhost/toolhost/internal/sandbox"
	"github.com/toolhost/toolhost/internal/session"
	"github.com/toolhost/toolhost/internal/store"
	"github.com/toolhost/toolhost/internal/store/filestore"
	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/internal/tool"
	"github.com/toolhost/toolhost/internal/trace"
)

// EchoIn is the input of the test tools.
type EchoIn struct {
	Text    string         `json:"text" jsonschema:"minLength=1" jsonschema_description:"text to echo"`
	Token   string         `json:"token,omitempty" jsonschema_description:"a secret that must never reach the audit trail"`
	Path    string         `json:"path,omitempty" jsonschema_description:"project-relative path to write"`
	Command string         `json:"command,omitempty" jsonschema_description:"shell command checked by the guard"`
	Data    map[string]any `json:"data,omitempty" jsonschema_description:"anything"`
}

// EchoOut is the output of the test tools.
type EchoOut struct {
	tool.Status
	Text    string `json:"text,omitempty" jsonschema_description:"the echoed text"`
	Attempt int    `json:"attempt,omitempty" jsonschema_description:"which attempt answered"`
}

// errSlow makes an attempt block until its context ends.
var errSlow = errors.New("slow attempt")

// script is a test tool whose attempt i fails with faults[i] (or blocks for
// errSlow) and succeeds after the faults run out.
type script struct {
	calls  atomic.Int32
	faults []error
	// started is signalled at the start of every attempt when non-nil.
	started chan struct{}
}

func (s *script) run(ctx context.Context, _ *callctx.Ctx, in EchoIn) (EchoOut, error) {
	n := int(s.calls.Add(1))
	if s.started != nil {
		s.started <- struct{}{}
	}
	if n <= len(s.faults) {
		if f := s.faults[n-1]; f == errSlow {
			<-ctx.Done()
			return EchoOut{}, ctx.Err()
		} else if f != nil {
			return EchoOut{}, f
		}
	}
	return EchoOut{Status: tool.Status{OK: true}, Text: in.Text, Attempt: n}, nil
}

func scripted(name string, effect tool.Effect, s *script) tool.Tool {
	return tool.New(tool.Spec{Name: name, Description: "test tool " + name, Effect: effect}, s.run)
}

// memSink keeps rows in memory.
type memSink struct {
	mu   sync.Mutex
	rows []*audit.Row
}

func (m *memSink) Write(r *audit.Row) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.rows = append(m.rows, r)
	return nil
}

func (m *memSink) all() []*audit.Row {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]*audit.Row(nil), m.rows...)
}

type guardError struct{ cmd string }

func (g *guardError) Error() string             { return "inline JSON in " + g.cmd + "; write it to a file" }
func (g *guardError) RejectionKind() fault.Kind { return fault.Guard }

// rig is an engine over a temp project with the given tools and policy.
type rig struct {
	eng   *engine.Engine
	sink  *memSink
	log   *testutil.SyncBuffer
	dir   string
	clock *testutil.FakeClock
	store store.Confirmations
}

type rigOpts struct {
	tools  []tool.Tool
	policy map[string]policy.Rule
	// denyAgent lists tools the agent's toolPolicy leaves out.
	denyAgent []string
	sink      audit.Sink
	auditTO   time.Duration
	// trace is the session's telemetry (nil: none).
	trace *trace.Session
	// rules are the policy file's rules, compiled against the rig's tools.
	rules []rules.Rule
}

func newRig(t testing.TB, o rigOpts) *rig {
	t.Helper()
	dir := t.TempDir()
	reg := registry.New()
	ag := &agents.Agent{Name: "devloop-tester", Short: "tester"}
	for _, tl := range o.tools {
		reg.Add(tl)
		name := tl.Spec().Name
		denied := false
		for _, d := range o.denyAgent {
			denied = denied || d == name
		}
		if !denied {
			ag.CLI.ToolPolicy = append(ag.CLI.ToolPolicy, name)
		}
	}
	pf := filepath.Join(dir, "policy.json")
	b, err := json.Marshal(policy.File{Tools: o.policy, Rules: o.rules})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pf, b, 0o644); err != nil {
		t.Fatal(err)
	}
	proj := filepath.Join(dir, "project")
	files, err := sandbox.New(proj, ag.Name, []string{"out/**"})
	if err != nil {
		t.Fatal(err)
	}
	shared, err := files.With("toolhost", journal.ServiceAllowList)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { files.Close(); shared.Close() })
	logs := &testutil.SyncBuffer{}
	log := zerolog.New(logs)
	clock := testutil.NewFakeClock(testutil.FakeEpoch, 0)
	ms := &memSink{}
	var sink audit.Sink = ms
	if o.sink != nil {
		sink = o.sink
	}
	fst, err := filestore.Open(proj, filestore.Options{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fst.Close() })
	store := fst.Confirmations()
	eng := &engine.Engine{
		Registry: reg, Agent: ag, Policy: policy.LoadWith(pf, log, session.RuleOptions(reg, proj)), Audit: sink,
		Identity: callctx.Identity{Agent: "tester", AgentName: ag.Name, SessionID: "sess-1", ProjectID: "p1", ProjectDir: proj},
		Services: callctx.Services{Files: files, Shared: shared, Timeline: fst.Timeline(),
			Events: fst.Events(), Clock: clock, Log: log},
		Log:          log,
		Guard:        func(cmd tool.Command) error { return guardIf(cmd.Script) },
		Confirm:      store,
		AuditTimeout: o.auditTO,
		RetryBase:    time.Millisecond,
		RetryCap:     4 * time.Millisecond,
		Trace:        o.trace,
	}
	eng.Init()
	return &rig{eng: eng, sink: ms, log: logs, dir: proj, clock: clock, store: store}
}

func guardIf(cmd string) error {
	if strings.Contains(cmd, "{") {
		return &guardError{cmd: cmd}
	}
	return nil
}

func (r *rig) call(t testing.TB, name string, args string) *engine.Outcome {
	t.Helper()
	return r.eng.Call(context.Background(), engine.Request{Tool: name, Args: json.RawMessage(args)})
}

func mustText(t testing.TB, out *engine.Outcome) EchoOut {
	t.Helper()
	if out.IsError {
		t.Fatalf("unexpected error outcome: %s (%s/%s)", out.Message, out.Status, out.Kind)
	}
	var o EchoOut
	if err := json.Unmarshal(out.Result.Structured, &o); err != nil {
		t.Fatalf("decode result %s: %v", out.Result.Structured, err)
	}
	return o
}

func describe(o *engine.Outcome) string {
	return fmt.Sprintf("status=%s kind=%s retries=%d msg=%q", o.Status, o.Kind, o.Retries, o.Message)
}
