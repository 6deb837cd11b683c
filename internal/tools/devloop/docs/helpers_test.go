package docs

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/schema"
	"github.com/toolhost/toolhost/internal/util/wirejson"

	"github.com/toolhost/toolhost/internal/callctx"
	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/internal/tool"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// project is a temp project dir shared by several agents' contexts.
type project struct {
	t     testing.TB
	dir   string
	clock *testutil.FakeClock
}

func newProject(t testing.TB) *project {
	t.Helper()
	return &project{t: t, dir: t.TempDir(), clock: testutil.NewFakeClock(testutil.FakeEpoch, time.Second)}
}

// ctx returns a call context for agent (short name), with the sandbox
// allow-list of the embedded configs/agents.json.
func (p *project) ctx(agent string) *callctx.Ctx {
	p.t.Helper()
	return testutil.NewCtx(p.t, testutil.CtxOptions{Agent: agent, Dir: p.dir, Clock: p.clock})
}

func (p *project) path(rel string) string { return filepath.Join(p.dir, filepath.FromSlash(rel)) }

func (p *project) read(rel string) string {
	p.t.Helper()
	b, err := os.ReadFile(p.path(rel))
	if err != nil {
		p.t.Fatal(err)
	}
	return string(b)
}

func (p *project) write(rel, content string) {
	p.t.Helper()
	if err := os.MkdirAll(filepath.Dir(p.path(rel)), 0o755); err != nil {
		p.t.Fatal(err)
	}
	if err := os.WriteFile(p.path(rel), []byte(content), 0o644); err != nil {
		p.t.Fatal(err)
	}
}

// run calls tl the way the engine would: the arguments must pass the tool's
// input schema, then the tool runs. It returns the result decoded into out
// and the error (a rejection or system failure) if any.
func run[Out any](t testing.TB, c *callctx.Ctx, tl tool.Tool, args any) (Out, tool.Result, error) {
	t.Helper()
	var out Out
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	sch, err := schema.Compile(tl.Spec().InputSchema)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := wirejson.DecodeAny(raw)
	if err != nil {
		t.Fatal(err)
	}
	if err := sch.Check(doc); err != nil {
		t.Fatalf("%s: test arguments %s do not match the input schema: %v", tl.Spec().Name, raw, err)
	}
	r, err := tl.Call(context.Background(), c, raw)
	if err != nil {
		return out, r, err
	}
	if err := json.Unmarshal(r.Structured, &out); err != nil {
		t.Fatal(err)
	}
	return out, r, nil
}

// mustRun is run for calls expected to succeed with ok:true.
func mustRun[Out any](t testing.TB, c *callctx.Ctx, tl tool.Tool, args any) Out {
	t.Helper()
	out, r, err := run[Out](t, c, tl, args)
	if err != nil {
		t.Fatalf("%s: %v", tl.Spec().Name, err)
	}
	if r.Failed {
		t.Fatalf("%s: ok:false: %s", tl.Spec().Name, r.Reason)
	}
	return out
}

// bootstrapPRD creates a PRD site with the given chapter ids (title = id
// upper-cased first letter).
func bootstrapPRD(t testing.TB, c *callctx.Ctx, ids ...string) {
	t.Helper()
	var chs []map[string]string
	for _, id := range ids {
		chs = append(chs, map[string]string{"id": id, "title": strings.ToUpper(id[:1]) + id[1:]})
	}
	mustRun[BootstrapOutput](t, c, BootstrapPRDSite(), map[string]any{"title": "Todo App PRD", "chapters": chs})
}
