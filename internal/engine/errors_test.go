package engine_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/internal/audit"
	"github.com/toolhost/toolhost/internal/callctx"
	"github.com/toolhost/toolhost/internal/fault"
	"github.com/toolhost/toolhost/internal/sandbox"
	"github.com/toolhost/toolhost/internal/tool"
)

// TestSystemErrorsReachTheModelSafely runs tools that fail with real system
// errors through the engine: the model reads what failed in the tool's
// terms, what to do and the error id, never the raw OS or JSON text; the
// log holds the whole error under the same id; nothing on disk changes.
func TestSystemErrorsReachTheModelSafely(t *testing.T) {
	t.Parallel()
	type state struct {
		Phase string `json:"phase"`
	}
	tools := []tool.Tool{
		tool.New(tool.Spec{Name: "update_state", Description: "merges into out/state.json", Effect: tool.Additive},
			func(_ context.Context, c *callctx.Ctx, in EchoIn) (EchoOut, error) {
				err := sandbox.UpdateJSON(c.Files, "out/state.json", func(s *state, _ bool) error { s.Phase = in.Text; return nil })
				return EchoOut{Status: tool.Status{OK: true}}, err
			}),
		tool.New(tool.Spec{Name: "read_config", Description: "reads a file by absolute path"},
			func(context.Context, *callctx.Ctx, EchoIn) (EchoOut, error) {
				_, err := os.ReadFile("/nonexistent-toolhost-dir/db-password.txt")
				return EchoOut{}, err
			}),
		tool.New(tool.Spec{Name: "leaky", Description: "fails with a secret in its error"},
			func(context.Context, *callctx.Ctx, EchoIn) (EchoOut, error) {
				return EchoOut{}, errors.New("dial postgres://admin:hunter2@10.0.0.7:5432: refused")
			}),
		tool.New(tool.Spec{Name: "vouched", Description: "fails with a message written for the model"},
			func(context.Context, *callctx.Ctx, EchoIn) (EchoOut, error) {
				return EchoOut{}, fault.Wrap(errors.New("read tcp: i/o timeout"), "the search index is being rebuilt; call again in a minute")
			}),
	}
	r := newRig(t, rigOpts{tools: tools})
	corrupt := []byte(`{"phase": oops}`)
	statePath := filepath.Join(r.dir, "out", "state.json")
	if err := os.MkdirAll(filepath.Dir(statePath), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(statePath, corrupt, 0o644); err != nil {
		t.Fatal(err)
	}
	idRE := regexp.MustCompile(`\(error id ([0-9A-Z]{26})\)$`)
	cases := []struct {
		tool  string
		want  string
		never []string
		// logged is a fragment of the raw error the log must keep.
		logged string
	}{
		{"update_state", "update_state failed: the file out/state.json is corrupt (not valid JSON) and was left as it is; repair it or move it away (or ask a human to), then call again",
			[]string{"invalid character", "oops"}, "invalid character 'o'"},
		{"read_config", "read_config failed: a file the tool needs does not exist; the arguments may well be fine",
			[]string{"/nonexistent-toolhost-dir", "db-password", "no such file"}, "/nonexistent-toolhost-dir/db-password.txt"},
		{"leaky", "leaky failed: an internal error; the arguments may well be fine: call once more, and if it fails again tell a human and cite the error id",
			[]string{"hunter2", "10.0.0.7", "postgres"}, "hunter2@10.0.0.7"},
		{"vouched", "vouched failed: the search index is being rebuilt; call again in a minute",
			[]string{"i/o timeout"}, "read tcp: i/o timeout"},
	}
	for i, tc := range cases {
		out := r.call(t, tc.tool, `{"text":"building"}`)
		if !out.IsError || out.Status != audit.StatusError || out.Kind != fault.System {
			t.Fatalf("%s: %s; want a system error", tc.tool, describe(out))
		}
		if !strings.HasPrefix(out.Message, tc.want) {
			t.Errorf("%s: the model read %q; want it to start %q", tc.tool, out.Message, tc.want)
		}
		for _, n := range tc.never {
			if strings.Contains(out.Message, n) {
				t.Errorf("%s: the model read %q, which leaks %q", tc.tool, out.Message, n)
			}
		}
		m := idRE.FindStringSubmatch(out.Message)
		if m == nil || m[1] != out.ErrorID {
			t.Fatalf("%s: message %q does not end with its error id %s", tc.tool, out.Message, out.ErrorID)
		}
		if row := r.sink.all()[i]; row.ErrorID != out.ErrorID || row.Error != out.Message {
			t.Errorf("%s: audit row %+v; want the error id and the message the model read", tc.tool, row)
		}
		var logged bool
		for _, line := range strings.Split(r.log.String(), "\n") {
			logged = logged || strings.Contains(line, `"error_id":"`+out.ErrorID+`"`) && strings.Contains(line, tc.logged)
		}
		if !logged {
			t.Errorf("%s: no log line with error id %s and %q:\n%s", tc.tool, out.ErrorID, tc.logged, r.log.String())
		}
	}
	if b, err := os.ReadFile(statePath); err != nil || string(b) != string(corrupt) {
		t.Fatalf("the corrupt file changed: %q, %v", b, err)
	}
}
