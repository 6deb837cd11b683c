package cli_test

import (
	"strings"
	"testing"

	"github.com/toolhost/toolhost/internal/testutil"
)

func TestGuardCommand(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		args   []string
		stdin  string
		code   int
		stderr string
	}{
		{name: "allowed arg", args: []string{"guard", `curl -d @body.json http://localhost:3000/x`}, code: 0},
		{name: "blocked arg", args: []string{"guard", `curl -d '{"a":1}' http://localhost:3000/x`}, code: 2,
			stderr: `echo '{"a":1}' > "$TMPDIR/x.json" && curl -d @"$TMPDIR/x.json" http://localhost:3000/x`},
		{name: "allowed stdin", args: []string{"guard"}, stdin: "awk '{print $1}' f | sort\n", code: 0},
		{name: "blocked stdin", args: []string{"guard"}, stdin: "echo '{\"a\":1}' | http POST :3000/x\n", code: 2, stderr: "Bash guard: blocked inline JSON handed to http"},
		{name: "unparsable", args: []string{"guard", `echo "unterminated`}, code: 2, stderr: "cannot be parsed"},
		{name: "too long on stdin", args: []string{"guard"}, stdin: strings.Repeat("x", 70000), code: 2, stderr: "over the 65536-byte limit"},
		{name: "two args is a usage error", args: []string{"guard", "a", "b"}, code: 2, stderr: "accepts at most 1 arg"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			stdout, stderr, code := testutil.Run(t, tc.stdin, nil, tc.args...)
			if code != tc.code || !strings.Contains(stderr, tc.stderr) || stdout != "" {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit %d, empty stdout, stderr ~%q", code, stdout, stderr, tc.code, tc.stderr)
			}
		})
	}
}
