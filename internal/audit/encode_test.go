package audit_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/audit"
)

// plainRow is Row without its MarshalJSON: what encoding/json's reflection
// makes of the same fields.
type plainRow audit.Row

func reflected(t testing.TB, r audit.Row) []byte {
	t.Helper()
	b, err := json.Marshal(plainRow(r))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestAppendJSONMatchesEncodingJSON: the hand encoder writes byte for byte
// what json.Marshal writes for the same row, empty optional fields omitted.
func TestAppendJSONMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	ts := time.Date(2026, 11, 30, 7, 5, 4, 123456789, time.UTC)
	rows := []audit.Row{
		{TS: ts, CallID: "01J", Agent: "devloop-coder", Tool: "echo", Status: audit.StatusOK},
		{
			TS: ts.Add(-123456789), CallID: "c-1", SessionID: "s", ProjectID: "42", Agent: "a", UnitID: "u", Tool: "t",
			Source: "mcp:srv", Arguments: json.RawMessage(`{"text":"hi","n":[1,2.5,-3e-7],"o":{"k":null,"b":true}}`),
			Status: audit.StatusRejected, ErrorKind: "validation", Rule: "no-force-push", Error: "items[2].id: does not match pattern ^step-\\d{3}$",
			ErrorID: "E1", RetryCount: 2, DurationMS: 12.345,
			Sandbox:         "landlock abi 7; write units/a/tests/ $TMPDIR; connect any; bind any; signals scoped",
			Traceparent:     "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01",
			ClientSessionID: "4e34980b-8323-4360-a205-d47a90187a22", ClientAgentID: "a324ae0543bdbc4e5", ToolUseID: "toolu_01",
		},
		{TS: ts, CallID: "q\"uote\\back", Agent: "ctl\x00\x01\x1f\b\f\n\r\t", Tool: "<html>&amp;", Status: "x\u2028y\u2029z",
			Error: "bad utf8 \xff\xfe end, emoji 🚀, é", DurationMS: 0},
		{TS: ts, CallID: "p", Agent: "a", Tool: "fake__echo", Source: "mcp:fake", Status: audit.StatusPin, ErrorKind: "pin",
			Error: "withheld", Pin: &audit.PinNote{Action: audit.PinWithheld, Hash: "sha256:ab", Pinned: "sha256:cd", Change: "description"}},
		{TS: ts, CallID: "p", Agent: "a", Tool: "t", Status: audit.StatusPin, Pin: &audit.PinNote{Action: audit.PinPinned, Hash: "sha256:ab"}},
		{TS: ts, CallID: "f", Agent: "a", Tool: "t", Status: "s", DurationMS: 1e-7},
		{TS: ts, CallID: "f", Agent: "a", Tool: "t", Status: "s", DurationMS: 3e21},
		{TS: ts, CallID: "f", Agent: "a", Tool: "t", Status: "s", DurationMS: 1000000.5},
		{TS: time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 3600)), CallID: "z", Agent: "a", Tool: "t", Status: "s"},
	}
	for i, r := range rows {
		got := r.AppendJSON(nil)
		if want := reflected(t, r); !bytes.Equal(got, want) {
			t.Errorf("row %d:\n got %s\nwant %s", i, got, want)
		}
		viaMarshal, err := json.Marshal(&r)
		if err != nil || !bytes.Equal(viaMarshal, got) {
			t.Errorf("row %d: json.Marshal(&row) = %s, %v; want the AppendJSON bytes", i, viaMarshal, err)
		}
	}
}

// TestAppendJSONKeepsRowsOnOneLine: arguments as a client sent them, line
// breaks and indentation included, are compacted, so the NDJSON trail keeps
// one row per line; what is not JSON at all is kept as a string.
func TestAppendJSONKeepsRowsOnOneLine(t *testing.T) {
	t.Parallel()
	for _, args := range []string{
		"{\n  \"text\": \"a\\nb\",\n\t\"list\": [ 1,\r\n 2 ]\n}",
		`{"html":"<b>&</b>"}`,
		"{\"broken\": \n",
	} {
		r := audit.Row{TS: time.Now().UTC(), CallID: "c", Agent: "a", Tool: "t", Status: "ok", Arguments: json.RawMessage(args)}
		b := r.AppendJSON(nil)
		if bytes.ContainsAny(b, "\r\n") {
			t.Fatalf("row spans lines: %q", b)
		}
		var back struct{ Arguments any }
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("row is not JSON: %v: %s", err, b)
		}
		var want any
		if err := json.Unmarshal([]byte(args), &want); err != nil {
			want = args // not JSON: stored as the string it was
		}
		if !reflect.DeepEqual(back.Arguments, want) {
			t.Fatalf("arguments %q came back as %#v, want %#v", args, back.Arguments, want)
		}
	}
}

// FuzzAppendJSONStrings checks the string escaping against encoding/json on
// arbitrary bytes.
func FuzzAppendJSONStrings(f *testing.F) {
	for _, s := range []string{"", "plain", "\"\\/", "\x00\x7f\u2028", "\xff", "<&>", "日本語", "\xed\xa0\x80"} {
		f.Add(s, 1.5)
	}
	f.Fuzz(func(t *testing.T, s string, d float64) {
		if d != d || d > 1e300 || d < -1e300 { // NaN and ±Inf are not JSON numbers
			d = 0
		}
		r := audit.Row{CallID: s, Agent: s, Tool: s, Status: audit.Status(s), Error: s, DurationMS: d}
		if got, want := r.AppendJSON(nil), reflected(t, r); !bytes.Equal(got, want) {
			t.Fatalf("string %q / %v:\n got %s\nwant %s", s, d, got, want)
		}
	})
}
