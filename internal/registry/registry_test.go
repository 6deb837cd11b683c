package registry

import (
	"context"
	"encoding/json"
	"sort"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/internal/callctx"
	"github.com/toolhost/toolhost/internal/tool"
)

type fakeTool struct{ spec tool.Spec }

func (f *fakeTool) Spec() *tool.Spec { return &f.spec }
func (f *fakeTool) Call(context.Context, *callctx.Ctx, json.RawMessage) (tool.Result, error) {
	return tool.Result{}, nil
}

func mk(name, source string) tool.Tool {
	return &fakeTool{spec: tool.Spec{Name: name, Source: source, InputSchema: json.RawMessage(`{"type":"object"}`)}}
}

func TestSetSource(t *testing.T) {
	t.Parallel()
	type step struct {
		source string
		rank   int
		tools  []tool.Tool
	}
	cases := []struct {
		name     string
		steps    []step
		want     string // names in binding order
		skipped  string // "name@source" of the tools left out
		whyMatch string
	}{
		{
			name: "sources after built-ins in rank order whatever the arrival order",
			steps: []step{
				{"mcp:b", 1, []tool.Tool{mk("b__x", "mcp:b")}},
				{"mcp:a", 0, []tool.Tool{mk("a__y", "mcp:a"), mk("a__x", "mcp:a")}},
			},
			want: "builtin_one,builtin_two,a__y,a__x,b__x",
		},
		{
			name:     "built-in name wins",
			steps:    []step{{"mcp:a", 0, []tool.Tool{mk("builtin_one", "mcp:a"), mk("a__ok", "mcp:a")}}},
			want:     "builtin_one,builtin_two,a__ok",
			skipped:  "builtin_one@mcp:a",
			whyMatch: "taken by builtin",
		},
		{
			name: "clash between upstreams: lower rank wins even when it arrives later",
			steps: []step{
				{"mcp:b", 1, []tool.Tool{mk("same", "mcp:b")}},
				{"mcp:a", 0, []tool.Tool{mk("same", "mcp:a")}},
			},
			want:     "builtin_one,builtin_two,same",
			skipped:  "same@mcp:b",
			whyMatch: "taken by mcp:a",
		},
		{
			name: "a shadowed tool comes back when the winner goes",
			steps: []step{
				{"mcp:b", 1, []tool.Tool{mk("same", "mcp:b")}},
				{"mcp:a", 0, []tool.Tool{mk("same", "mcp:a")}},
				{"mcp:a", 0, nil},
			},
			want: "builtin_one,builtin_two,same",
		},
		{
			name: "replace is whole: tools missing from the new set go",
			steps: []step{
				{"mcp:a", 0, []tool.Tool{mk("a__1", "mcp:a"), mk("a__2", "mcp:a")}},
				{"mcp:a", 0, []tool.Tool{mk("a__2", "mcp:a")}},
			},
			want: "builtin_one,builtin_two,a__2",
		},
		{
			name: "invalid name and uncompilable schema are skipped, not a panic",
			steps: []step{{"mcp:a", 0, []tool.Tool{
				mk("bad.name", "mcp:a"),
				&fakeTool{spec: tool.Spec{Name: "a__bad", Source: "mcp:a", InputSchema: json.RawMessage(`{"type":"nope"}`)}},
				mk("a__good", "mcp:a"),
			}}},
			want:    "builtin_one,builtin_two,a__good",
			skipped: "a__bad@mcp:a,bad.name@mcp:a",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := New()
			r.Add(mk("builtin_one", "builtin"))
			r.Add(mk("builtin_two", "builtin"))
			var sk []Skipped
			for _, s := range c.steps {
				sk = r.SetSource(s.source, s.rank, s.tools)
			}
			if got := strings.Join(r.Names(), ","); got != c.want {
				t.Fatalf("names = %s, want %s", got, c.want)
			}
			var got []string
			for _, s := range sk {
				got = append(got, s.Name+"@"+s.Source)
				if c.whyMatch != "" && !strings.Contains(s.Reason, c.whyMatch) {
					t.Errorf("reason %q should mention %q", s.Reason, c.whyMatch)
				}
			}
			sort.Strings(got)
			if strings.Join(got, ",") != c.skipped {
				t.Fatalf("skipped = %v, want %s", got, c.skipped)
			}
			e, ok := r.Lookup(strings.Split(c.want, ",")[len(strings.Split(c.want, ","))-1])
			if !ok {
				t.Fatal("lookup of the last served tool failed")
			}
			if sch, err := e.Validator(); sch == nil || err != nil {
				t.Fatalf("the last served tool has no validator: %v", err)
			}
		})
	}
}

func TestAddStillPanicsOnDuplicateBuiltin(t *testing.T) {
	t.Parallel()
	r := New()
	r.Add(mk("x", "builtin"))
	defer func() {
		if recover() == nil {
			t.Fatal("duplicate built-in must panic")
		}
	}()
	r.Add(mk("x", "builtin"))
}
