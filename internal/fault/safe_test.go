package fault

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
)

// TestExplain feeds Explain real errors of each class and checks what the
// model would read: the class's words, and none of the error's own text.
func TestExplain(t *testing.T) {
	t.Parallel()
	var syntax *json.SyntaxError
	jsonErr := json.Unmarshal([]byte("{oops"), &struct{}{})
	if !errors.As(jsonErr, &syntax) {
		t.Fatalf("not a JSON syntax error: %v", jsonErr)
	}
	_, absErr := os.ReadFile("/nonexistent-toolhost-dir/secret.txt")
	_, dialErr := net.Dial("tcp", "127.0.0.1:1")
	cases := []struct {
		name string
		err  error
		want []string
		// never are fragments of the raw error that must not reach the model.
		never []string
	}{
		{"a safe message, even wrapped", fmt.Errorf("load: %w", Wrap(errors.New("EOF at byte 12"), "upstream gh is not reachable")),
			[]string{"upstream gh is not reachable"}, []string{"EOF", "load:"}},
		{"a corrupt file", fmt.Errorf("update: %w", &CorruptFile{Path: "agent-state/pm-runtime.json", Format: "JSON", Err: jsonErr}),
			[]string{"the file agent-state/pm-runtime.json is corrupt (not valid JSON) and was left as it is", "repair it or move it away", "then call again"},
			[]string{"invalid character", "update:"}},
		{"a full disk, relative name", &fs.PathError{Op: "write", Path: "prd/goals.html", Err: syscall.ENOSPC},
			[]string{"the disk is full (prd/goals.html)", "retrying will not help", "cite the error id"}, []string{"no space left", "write"}},
		{"a missing file by absolute name", absErr,
			[]string{"a file the tool needs does not exist", "call once more"}, []string{"/nonexistent-toolhost-dir", "secret", "no such file"}},
		{"a name that climbs out", &fs.PathError{Op: "open", Path: "../../etc/shadow", Err: syscall.EACCES},
			[]string{"the operating system does not let toolhost access a file;"}, []string{"shadow", "permission denied"}},
		{"a refused connection", dialErr, []string{"a connection was refused"}, []string{"127.0.0.1", "dial", "connect:"}},
		{"a deadline inside the tool", fmt.Errorf("waiting for lock: %w", context.DeadlineExceeded),
			[]string{"gave up waiting"}, []string{"lock", "deadline exceeded"}},
		{"a rejection, its own message", fmt.Errorf("check: %w", testRejection("prd/x.html is outside the allow-list")),
			[]string{"prd/x.html is outside the allow-list"}, []string{"check:"}},
		{"a parser's verdict on a document", fmt.Errorf("load: %w", Content(errors.New("line 3: endpoints[0] needs id\nsee\x1b[2J"))),
			[]string{"line 3: endpoints[0] needs id\nsee?[2J"}, []string{"load:", "\x1b"}},
		{"a verdict that holds an OS error", Content(&fs.PathError{Op: "open", Path: "/home/u/secret", Err: syscall.EACCES}),
			[]string{"does not let toolhost access a file"}, []string{"/home/u", "secret"}},
		{"anything else", errors.New("pq: password authentication failed for user admin (password=hunter2)"),
			[]string{"an internal error; the arguments may well be fine"}, []string{"hunter2", "admin", "pq:"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := Explain(tc.err)
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("Explain(%v) = %q; want it to contain %q", tc.err, got, w)
				}
			}
			for _, n := range tc.never {
				if strings.Contains(got, n) {
					t.Errorf("Explain(%v) = %q leaks %q", tc.err, got, n)
				}
			}
		})
	}
}

type testRejection string

func (r testRejection) Error() string     { return string(r) }
func (testRejection) RejectionKind() Kind { return Sandbox }

// TestWithheld: an error id is owed exactly when the words stand in for
// text only the log has.
func TestWithheld(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{testRejection("refused"), false},
		{Content(errors.New("line 1: bad")), false},
		{Safef("no such bug"), false},
		{Wrap(errors.New("EOF"), "upstream gh is not reachable"), true},
		{&CorruptFile{Path: "a.json", Format: "JSON", Err: errors.New("x")}, true},
		{Content(&fs.PathError{Op: "open", Path: "a", Err: syscall.EIO}), true},
		{context.DeadlineExceeded, true},
		{errors.New("internal"), true},
	} {
		if got := Withheld(tc.err); got != tc.want {
			t.Errorf("Withheld(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

func TestSafeKeepsTheWholeErrorForTheLog(t *testing.T) {
	t.Parallel()
	inner := errors.New("connection reset by peer")
	err := Wrap(inner, "upstream %s is not reachable", "gh")
	if !errors.Is(err, inner) || err.Error() != "upstream gh is not reachable: connection reset by peer" {
		t.Fatalf("Wrap = %q, unwraps to inner: %v", err, errors.Is(err, inner))
	}
	cf := &CorruptFile{Path: "bugs/BUG-0001.json", Format: "JSON", Err: inner}
	if !errors.Is(cf, inner) || !strings.Contains(cf.Error(), "connection reset") {
		t.Fatalf("CorruptFile = %q", cf)
	}
}
