package bashguard

import (
	"encoding/json"
	"strings"
)

const space = " \t\r\n"

// looksJSON reports whether s is inline JSON as the package doc defines it.
func looksJSON(s string) bool {
	s = strings.Trim(s, space)
	if len(s) < 2 || (s[0] != '{' && s[0] != '[') {
		return false
	}
	if json.Valid([]byte(s)) {
		// "{}" and "[]" are placeholders, not payloads.
		return strings.Trim(s[1:len(s)-1], space) != ""
	}
	return startsLikeValue(s, 0)
}

// startsLikeValue reports whether s clearly starts with a JSON object (a
// quoted key follows "{") or array (a JSON value follows "[").
func startsLikeValue(s string, depth int) bool {
	if depth > 32 || s == "" {
		return false
	}
	rest := strings.TrimLeft(s[1:], space)
	switch s[0] {
	case '{':
		return strings.HasPrefix(rest, `"`)
	case '[':
		if rest == "" {
			return false
		}
		switch c := rest[0]; {
		case c == '"':
			return true
		case c == '{' || c == '[':
			return startsLikeValue(rest, depth+1)
		case c == '-' || c >= '0' && c <= '9':
			return scalarThenSep(rest[numberLen(rest):])
		default:
			for _, lit := range []string{"true", "false", "null"} {
				if r, ok := strings.CutPrefix(rest, lit); ok {
					return scalarThenSep(r)
				}
			}
		}
	}
	return false
}

// scalarThenSep reports whether what follows a scalar inside an array is a
// separator, so "[1, 2" counts but "[1-9]" (a character class) does not.
func scalarThenSep(rest string) bool {
	rest = strings.TrimLeft(rest, space)
	return rest == "" || rest[0] == ',' || rest[0] == ']'
}

// jsonPrefix returns the longest prefix of s (cut at a ';') that is valid
// JSON, for curl -F values such as '{"a":1};type=application/json'.
func jsonPrefix(s string) (payload, suffix string) {
	for i := strings.LastIndexByte(s, ';'); i > 0; i = strings.LastIndexByte(s[:i], ';') {
		if json.Valid([]byte(s[:i])) {
			return s[:i], s[i:]
		}
	}
	return s, ""
}

// numberLen is the length of the JSON number at the start of s (0 if none).
func numberLen(s string) int {
	i := 0
	digits := func() int {
		n := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i, n = i+1, n+1
		}
		return n
	}
	if i < len(s) && s[i] == '-' {
		i++
	}
	if digits() == 0 {
		return 0
	}
	if i < len(s) && s[i] == '.' {
		i++
		digits()
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		digits()
	}
	return i
}
