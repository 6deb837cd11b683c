package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/audit"
	"github.com/toolhost/toolhost/internal/confirm"
	"github.com/toolhost/toolhost/internal/engine"
	"github.com/toolhost/toolhost/internal/fault"
	"github.com/toolhost/toolhost/internal/policy"
	"github.com/toolhost/toolhost/internal/tool"
)

func confirmRig(t *testing.T) (*rig, *script) {
	s := &script{}
	r := newRig(t, rigOpts{
		tools:  []tool.Tool{scripted("guarded_write", tool.Destructive, s)},
		policy: map[string]policy.Rule{"guarded_write": {Permission: policy.Write, Confirm: true}},
	})
	return r, s
}

func TestConfirmByElicitation(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name       string
		answer     engine.Elicitation
		err        error
		panics     bool
		args       string
		wantAsked  bool
		wantRun    bool
		wantStatus audit.Status
		wantKind   string
		wantMsg    string
	}{
		{name: "accept runs", answer: engine.Elicitation{Action: "accept", Content: map[string]any{"confirm": true}},
			args: `{"text":"go"}`, wantAsked: true, wantRun: true, wantStatus: audit.StatusOK},
		{name: "accept with empty form runs", answer: engine.Elicitation{Action: "accept"},
			args: `{"text":"go"}`, wantAsked: true, wantRun: true, wantStatus: audit.StatusOK},
		{name: "accept with confirm unticked refuses", answer: engine.Elicitation{Action: "accept", Content: map[string]any{"confirm": false}},
			args: `{"text":"go"}`, wantAsked: true, wantStatus: audit.StatusRejected, wantKind: "user_declined", wantMsg: "declined by user"},
		{name: "decline refuses", answer: engine.Elicitation{Action: "decline"},
			args: `{"text":"go"}`, wantAsked: true, wantStatus: audit.StatusRejected, wantKind: "user_declined", wantMsg: "declined by user"},
		{name: "cancel waits for toolhost approve", answer: engine.Elicitation{Action: "cancel"},
			args: `{"text":"go"}`, wantAsked: true, wantStatus: audit.StatusRejected, wantKind: "needs_confirmation", wantMsg: "toolhost approve cf-"},
		{name: "client error", err: errors.New("method not found"),
			args: `{"text":"go"}`, wantAsked: true, wantStatus: audit.StatusRejected, wantKind: "confirmation_failed", wantMsg: "method not found"},
		{name: "client panics", panics: true,
			args: `{"text":"go"}`, wantAsked: true, wantStatus: audit.StatusError, wantKind: "panic", wantMsg: "the daemon is still serving"},
		{name: "invalid call is never shown to a human", answer: engine.Elicitation{Action: "accept"},
			args: `{"text":""}`, wantStatus: audit.StatusRejected, wantKind: "validation", wantMsg: "text"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, s := confirmRig(t)
			var asked []string
			elicit := func(_ context.Context, msg string, schema any) (engine.Elicitation, error) {
				b, _ := json.Marshal(schema)
				asked = append(asked, msg+"\n"+string(b))
				if tc.panics {
					panic("elicitation client blew up")
				}
				return tc.answer, tc.err
			}
			out := r.eng.Call(context.Background(), engine.Request{Tool: "guarded_write", Args: json.RawMessage(tc.args), Elicit: elicit})
			if (len(asked) == 1) != tc.wantAsked || (s.calls.Load() == 1) != tc.wantRun {
				t.Fatalf("asked %d times, ran %d times; want asked=%t ran=%t", len(asked), s.calls.Load(), tc.wantAsked, tc.wantRun)
			}
			if out.Status != tc.wantStatus || out.Kind.String() != tc.wantKind || !strings.Contains(out.Message, tc.wantMsg) {
				t.Fatalf("got %s; want %s/%s %q", describe(out), tc.wantStatus, tc.wantKind, tc.wantMsg)
			}
			if tc.wantAsked && (!strings.Contains(asked[0], "guarded_write") || !strings.Contains(asked[0], `"text": "go"`) ||
				!strings.Contains(asked[0], `"confirm":{"`)) {
				t.Fatalf("the human was not shown the tool and its arguments: %s", asked[0])
			}
			if rows := r.sink.all(); len(rows) != 1 || rows[0].Status != tc.wantStatus || rows[0].ErrorKind != tc.wantKind {
				t.Fatalf("audit rows %+v", rows)
			}
		})
	}
}

// confirmationID pulls the id out of a needs_confirmation message.
func confirmationID(t *testing.T, out *engine.Outcome) string {
	t.Helper()
	if out.Kind != fault.NeedsConfirmation || !out.IsError {
		t.Fatalf("want needs_confirmation, got %s", describe(out))
	}
	i := strings.Index(out.Message, "{")
	var p struct {
		NeedsConfirmation bool            `json:"needs_confirmation"`
		ID                string          `json:"confirmation_id"`
		Tool              string          `json:"tool"`
		Arguments         json.RawMessage `json:"arguments"`
	}
	if i < 0 || json.Unmarshal([]byte(out.Message[i:]), &p) != nil || !p.NeedsConfirmation || p.ID == "" || p.Tool == "" {
		t.Fatalf("no preview in %q", out.Message)
	}
	return p.ID
}

func TestConfirmByApproval(t *testing.T) {
	t.Parallel()
	t.Run("approval is used exactly once", func(t *testing.T) {
		t.Parallel()
		r, s := confirmRig(t)
		id := confirmationID(t, r.call(t, "guarded_write", `{"text":"a","data":{"x":1,"y":2}}`))
		// Asking again before a decision returns the same pending id.
		if again := confirmationID(t, r.call(t, "guarded_write", `{"data":{"y":2,"x":1},"text":"a"}`)); again != id {
			t.Fatalf("second ask made a new id %s (first %s)", again, id)
		}
		if _, err := r.store.Decide(context.Background(), id, true); err != nil {
			t.Fatal(err)
		}
		// Same arguments in another key order and layout are the same call.
		out := r.call(t, "guarded_write", "{ \"data\": {\"y\":2, \"x\":1}, \"text\": \"a\" }")
		if mustText(t, out).Text != "a" || s.calls.Load() != 1 {
			t.Fatalf("approved call did not run: %s", describe(out))
		}
		confirmationID(t, r.call(t, "guarded_write", `{"text":"a","data":{"x":1,"y":2}}`))
		if s.calls.Load() != 1 {
			t.Fatalf("approval used twice")
		}
	})
	t.Run("approval for other arguments is refused and supersedes", func(t *testing.T) {
		t.Parallel()
		r, s := confirmRig(t)
		first := confirmationID(t, r.call(t, "guarded_write", `{"text":"a"}`))
		second := confirmationID(t, r.call(t, "guarded_write", `{"text":"b"}`))
		if first == second {
			t.Fatal("different arguments shared a confirmation")
		}
		if _, err := r.store.Decide(context.Background(), first, true); !errors.Is(err, confirm.ErrClosed) {
			t.Fatalf("approving a superseded confirmation: %v", err)
		}
		if _, err := r.store.Decide(context.Background(), second, true); err != nil {
			t.Fatal(err)
		}
		confirmationID(t, r.call(t, "guarded_write", `{"text":"c"}`))
		if s.calls.Load() != 0 {
			t.Fatal("an approval for other arguments ran the call")
		}
		var superseded []*audit.Row
		for _, row := range r.sink.all() {
			if row.Status == audit.StatusSuperseded {
				superseded = append(superseded, row)
			}
		}
		if len(superseded) != 1 || !strings.Contains(superseded[0].Error, first) || string(superseded[0].Arguments) != `{"text":"a"}` {
			t.Fatalf("superseded rows %+v", superseded)
		}
	})
	t.Run("denied", func(t *testing.T) {
		t.Parallel()
		r, s := confirmRig(t)
		id := confirmationID(t, r.call(t, "guarded_write", `{"text":"a"}`))
		if _, err := r.store.Decide(context.Background(), id, false); err != nil {
			t.Fatal(err)
		}
		out := r.call(t, "guarded_write", `{"text":"a"}`)
		if out.Kind != fault.UserDenied || !strings.Contains(out.Message, "denied by user") || s.calls.Load() != 0 {
			t.Fatalf("got %s", describe(out))
		}
	})
	t.Run("approval older than its TTL is refused", func(t *testing.T) {
		t.Parallel()
		r, s := confirmRig(t)
		id := confirmationID(t, r.call(t, "guarded_write", `{"text":"a"}`))
		if _, err := r.store.Decide(context.Background(), id, true); err != nil {
			t.Fatal(err)
		}
		r.clock.Add(policy.DefaultConfirmTTL + time.Second)
		out := r.call(t, "guarded_write", `{"text":"a"}`)
		if next := confirmationID(t, out); next == id || !strings.Contains(out.Message, id+" expired") || s.calls.Load() != 0 {
			t.Fatalf("expired approval: %s", describe(out))
		}
	})
	t.Run("pending confirmation expires", func(t *testing.T) {
		t.Parallel()
		r, _ := confirmRig(t)
		id := confirmationID(t, r.call(t, "guarded_write", `{"text":"a"}`))
		r.clock.Add(policy.DefaultConfirmTTL + time.Second)
		if _, err := r.store.Decide(context.Background(), id, true); !errors.Is(err, confirm.ErrExpired) {
			t.Fatalf("late approval: %v", err)
		}
	})
}
