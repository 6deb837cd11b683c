package visible

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Hidden reports whether r would act on the text around it, or not show,
// when printed: a control character, a format character (category Cf: the
// bidirectional controls, zero-width characters, U+FEFF, tags), a line or
// paragraph separator, or a lone surrogate.
func Hidden(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == 0x2028 || r == 0x2029 || (r >= 0xD800 && r <= 0xDFFF)
}

// Line renders s for one line: every Hidden character, newlines and tabs
// included, and each invalid UTF-8 byte, as an escape.
func Line(s string) string { return render(s, false) }

// Text renders s keeping its newlines and tabs; everything else Line
// escapes is escaped (a carriage return too, which would let a line
// overwrite itself on a terminal).
func Text(s string) string { return render(s, true) }

func render(s string, keepLines bool) string {
	clean := true
	for i, r := range s {
		if r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD") || Hidden(r) && !(keepLines && (r == '\n' || r == '\t')) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD"):
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case keepLines && (r == '\n' || r == '\t'):
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case Hidden(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
