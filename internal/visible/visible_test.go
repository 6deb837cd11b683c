package visible

import (
	"testing"
	"unicode/utf8"
)

func TestLineAndText(t *testing.T) {
	t.Parallel()
	cases := []struct{ in, line, text string }{
		{"plain café ✓", "plain café ✓", "plain café ✓"},
		{"a\u202eb", `a\u202eb`, `a\u202eb`},
		{"\u2066x\u2069 \u2067\u2068 \u200f\u200e\u061c", `\u2066x\u2069 \u2067\u2068 \u200f\u200e\u061c`, `\u2066x\u2069 \u2067\u2068 \u200f\u200e\u061c`},
		{"zero\u200bwidth\u200d\ufeff", `zero\u200bwidth\u200d\ufeff`, `zero\u200bwidth\u200d\ufeff`},
		{"tag\U000E0041", `tag\ue0041`, `tag\ue0041`},
		{"l1\nl2\tx", `l1\nl2\tx`, "l1\nl2\tx"},
		{"over\rwrite", `over\rwrite`, `over\rwrite`},
		{"\x1b[31mred", `\x1b[31mred`, `\x1b[31mred`},
		{"c1\u0085\u009b", `c1\u0085\u009b`, `c1\u0085\u009b`},
		{"sep\u2028\u2029", `sep\u2028\u2029`, `sep\u2028\u2029`},
		{"bad\xffutf8", `bad\xffutf8`, `bad\xffutf8`},
		{"real \uFFFD stays", "real \uFFFD stays", "real \uFFFD stays"},
	}
	for _, c := range cases {
		if got := Line(c.in); got != c.line {
			t.Errorf("Line(%q) = %q, want %q", c.in, got, c.line)
		}
		if got := Text(c.in); got != c.text {
			t.Errorf("Text(%q) = %q, want %q", c.in, got, c.text)
		}
	}
}

// TestNothingHiddenSurvives: whatever goes in, Line's output has no
// character that Hidden names, and is valid UTF-8.
func TestNothingHiddenSurvives(t *testing.T) {
	t.Parallel()
	var all []rune
	for r := rune(0); r < 0x110000; r++ {
		if Hidden(r) {
			all = append(all, r)
		}
	}
	out := Line(string(all) + "\xc3\x28")
	if !utf8.ValidString(out) {
		t.Fatal("output is not valid UTF-8")
	}
	for _, r := range out {
		if Hidden(r) {
			t.Fatalf("U+%04X survived", r)
		}
	}
}
