package bashguard

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"strings"

	"mvdan.cc/sh/v3/expand"
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

// Marks stand in an expanded word or a stream for what the guard cannot
// know. They are runes from Unicode's private use area, so no command text
// the guard analyses can hold them: Analyze refuses input that does.
const (
	// markExternal: a value from outside the command (the environment, a
	// file on disk, a program's output that did not come from the
	// command's own text).
	markExternal = '\uE000'
	// markDerived: text of the command transformed by a program the guard
	// does not follow (sed, tr, python …) when that text could hold JSON.
	markDerived = '\uE001'
	// markJSON: JSON a program builds from the command's text (jq -n
	// '{a:1}'), or a value that may be the JSON after the mark.
	markJSON = '\uE002'
	// markSplit: the field holding it may be several words or none (a
	// file name pattern, an unquoted value the analysis does not know).
	markSplit = '\uE003'
	marks     = "\uE000\uE001\uE002\uE003"
)

// hasMarks reports whether s holds a mark.
func hasMarks(s string) bool { return strings.ContainsAny(s, marks) }

// shown renders s for a message or a fact: each mark becomes "…".
func shown(s string) string {
	if !hasMarks(s) {
		return s
	}
	return strings.NewReplacer(string(markExternal), "…", string(markDerived), "…", string(markJSON), "", string(markSplit), "").Replace(s)
}

// shownArg renders an argument for the facts: one whose number of words
// is not known is "…" as a whole.
func shownArg(s string) string {
	if strings.ContainsRune(s, markSplit) {
		return "…"
	}
	if strings.ContainsRune(s, markJSON) {
		return "…" // a value that may be this JSON, or something else
	}
	return shown(s)
}

// isJSONValue reports whether a value handed to a program is inline JSON:
// JSON text (with unknown parts inside it, such as "{\"a\":\"$X\"}"), or
// JSON a program built from the command's text.
func isJSONValue(s string) bool {
	if strings.ContainsRune(s, markJSON) {
		return true
	}
	return looksJSON(strings.NewReplacer(string(markExternal), "x", string(markSplit), "").Replace(s))
}

// mayHoldJSON reports whether literal text could turn into JSON in the
// hands of a program: it holds JSON somewhere, or escapes (\x7b, \173,
// \u007b, %7B), base64 or hex that decode to text holding JSON. Only such
// text makes a program's output "derived" (markDerived).
func mayHoldJSON(s string) bool {
	if s == "" {
		return false
	}
	if strings.ContainsAny(s, string(markDerived)+string(markJSON)) || containsJSON(s) {
		return true
	}
	for _, d := range decodings(s) {
		if containsJSON(d) {
			return true
		}
	}
	return false
}

// containsJSON reports whether some "{" or "[" in s starts something that
// looks like JSON.
func containsJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		if (s[i] == '{' || s[i] == '[') && startsLikeValue(s[i:], 0) {
			return true
		}
	}
	return false
}

// decodings are the readings of s that programs commonly decode: backslash
// escapes (echo -e, printf %b), percent-encoding, base64 and hex of each
// word.
func decodings(s string) []string {
	var out []string
	if strings.Contains(s, `\`) {
		if d, _, err := expandFormat(s); err == nil && d != s {
			out = append(out, d)
		}
	}
	if strings.Contains(s, "%") {
		if d, err := url.PathUnescape(strings.ReplaceAll(s, "+", " ")); err == nil && d != s {
			out = append(out, d)
		}
	}
	for _, w := range strings.Fields(s) {
		if len(w) < 8 {
			continue
		}
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
			if b, err := enc.DecodeString(w); err == nil {
				out = append(out, string(b))
				break
			}
		}
		if b, err := hex.DecodeString(w); err == nil {
			out = append(out, string(b))
		}
	}
	return out
}

// expandFormat decodes the backslash escapes of s as printf's %b does.
// It passes a config of its own: with nil, expand.Format prepares (writes)
// a package-level one, a data race between concurrent checks.
func expandFormat(s string) (string, int, error) { return expand.Format(&expand.Config{}, s, nil) }
