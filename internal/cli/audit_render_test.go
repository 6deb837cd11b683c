package cli

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"
	"unicode"

	"github.com/toolhost/toolhost/internal/testutil"
)

func TestCell(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   string
		n    int
		want string
	}{
		{"01M8RFBWE2F7YEJXVYE89KRNZW", 64, "01M8RFBWE2F7YEJXVYE89KRNZW"},
		{"id\nTIME  AGENT forged row", 64, `id\nTIME  AGENT forged row`},
		{"a\tb\rc", 64, `a\tb\rc`},
		{"\x1b[31mred\x1b[0m", 64, `\x1b[31mred\x1b[0m`},
		{"\x00\x07\x7f", 64, `\x00\x07\x7f`},
		{"abc\u202egnp.exe", 64, `abc\u202egnp.exe`},
		{"zero\u200bwidth\u2066iso", 64, `zero\u200bwidth\u2066iso`},
		{"line\u2028sep", 64, `line\u2028sep`},
		{"c1\u009bcsi", 64, `c1\u009bcsi`},
		{"bad\xffutf8", 64, `bad\xffutf8`},
		{"ü→✓ and a \\ stay", 64, "ü→✓ and a \\ stay"},
		{strings.Repeat("x", 100), 10, strings.Repeat("x", 9) + "…"},
		{strings.Repeat("x", 10), 10, strings.Repeat("x", 10)},
		{strings.Repeat("\n", 14), 10, strings.Repeat(`\n`, 9) + "…"},
	}
	for _, tc := range cases {
		if got := cell(tc.in, tc.n); got != tc.want {
			t.Errorf("cell(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}

// TestAuditRendersFieldsSafely writes audit rows through the real binary
// with tool names that carry a newline, terminal escapes, a bidi override
// and tabs, and reads them back with toolhost audit: one table line per
// row, every control and format character escaped.
func TestAuditRendersFieldsSafely(t *testing.T) {
	t.Parallel()
	bin := testutil.Toolhost(t)
	proj := t.TempDir()
	names := []string{"x\nTIME  coder  forged  ok", "x\x1b[2J\x1b[31mred", "x\u202egnp.exe", "a\tb\tc", strings.Repeat("long", 100)}
	for _, n := range names {
		cmd := exec.Command(bin, "call", n, "--args", "{}", "--agent", "devloop-coder", "--project-dir", proj)
		_ = cmd.Run() // an unknown tool: exit 1, audited as rejected
	}
	for _, args := range [][]string{{"audit"}, {"audit", "stats"}, {"audit", "--status", "rejected"}} {
		cmd := exec.Command(bin, append(args, "--project-dir", proj)...)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("toolhost %v: %v\n%s", args, err, errb.String())
		}
		text := out.String()
		lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
		if len(lines) != len(names)+1 {
			t.Errorf("toolhost %v printed %d lines for %d rows:\n%s", args, len(lines), len(names), text)
		}
		for _, r := range text {
			if r != '\n' && (unicode.IsControl(r) || unicode.Is(unicode.Cf, r)) {
				t.Errorf("toolhost %v printed a raw %U:\n%q", args, r, text)
			}
		}
		for _, want := range []string{`x\nTIME  coder  forged  ok`, `x\x1b[2J\x1b[31mred`, `x\u202egnp.exe`, `a\tb\tc`, "glon…  "} {
			if !strings.Contains(text, want) {
				t.Errorf("toolhost %v output lacks %q:\n%s", args, want, text)
			}
		}
	}
}
