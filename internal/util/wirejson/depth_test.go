package wirejson

import "testing"

// nestedDeeperThanByByte is the byte-at-a-time walk nestedDeeperThan must
// agree with.
func nestedDeeperThanByByte(b []byte, limit int) bool {
	depth, inString, escaped := 0, false, false
	for _, c := range b {
		switch {
		case escaped:
			escaped = false
		case inString:
			switch c {
			case '\\':
				escaped = true
			case '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			if depth++; depth > limit {
				return true
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return false
}

func FuzzNestedDeeperThan(f *testing.F) {
	for _, s := range []string{`[[["\\"]]]`, `{"a":"[[[[\"]]"}`, `["\\\"[[["]`, `[[[`, `"[[[`, `[["]\\"]]`} {
		f.Add([]byte(s), 2)
	}
	f.Fuzz(func(t *testing.T, b []byte, limit int) {
		if limit < 0 || limit > 100 {
			return
		}
		if got, want := nestedDeeperThan(b, limit), nestedDeeperThanByByte(b, limit); got != want {
			t.Fatalf("nestedDeeperThan(%q, %d) = %v, want %v", b, limit, got, want)
		}
	})
}
