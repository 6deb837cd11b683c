package wirejson

import (
	"bytes"
	"encoding/json"
	"reflect"
	"unicode/utf8"

	segjson "github.com/segmentio/encoding/json"
)

// Unmarshal decodes b into v (a non-nil pointer) as json.Unmarshal does.
func Unmarshal(b []byte, v any) error {
	if fastPath(b) && segjson.Unmarshal(b, v) == nil {
		return nil
	}
	// Start again from the zero value: the fast parser may have filled
	// part of v before it stopped.
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Pointer && !rv.IsNil() {
		rv.Elem().SetZero()
	}
	return json.Unmarshal(b, v)
}

// Valid reports whether b is one valid JSON document, as json.Valid does.
func Valid(b []byte) bool {
	if fastPath(b) && segjson.Valid(b) {
		return true
	}
	return json.Valid(b)
}

// DecodeAny decodes one JSON document into the generic form (maps, slices,
// strings, bools, nil) with numbers as json.Number, as a json.Decoder with
// UseNumber does: what gojsonschema validates. Bytes after the first value
// are ignored, as the decoder does.
func DecodeAny(b []byte) (any, error) {
	if fastPath(b) {
		var v any
		if _, err := segjson.Parse(b, &v, segjson.UseNumber); err == nil {
			return v, nil
		}
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// maxFastDepth bounds the nesting the fast parser is given: it recurses
// without a limit (encoding/json stops at 10,000 levels with an error), and
// a 4 MiB line of brackets must not grow a goroutine stack toward the
// runtime's fatal 1 GB limit.
const maxFastDepth = 64

// fastPath reports whether b may go to the fast parser: valid UTF-8 and
// nested at most maxFastDepth deep. Counting brackets (a vectorised scan)
// settles it for nearly every message; only one with more opening brackets
// than that is walked, strings skipped.
func fastPath(b []byte) bool {
	if bytes.Count(b, []byte("{"))+bytes.Count(b, []byte("[")) > maxFastDepth && nestedDeeperThan(b, maxFastDepth) {
		return false
	}
	return utf8.Valid(b)
}

func nestedDeeperThan(b []byte, limit int) bool {
	depth := 0
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '"':
			// Jump over the string to its closing quote (one not preceded
			// by an odd run of backslashes), a vectorised search at a time:
			// a large document is mostly strings.
			j := i + 1
			for {
				k := bytes.IndexByte(b[j:], '"')
				if k < 0 {
					return false
				}
				j += k
				n := 0
				for p := j - 1; p > i && b[p] == '\\'; p-- {
					n++
				}
				if n%2 == 0 {
					break
				}
				j++
			}
			i = j
		case '{', '[':
			if depth++; depth > limit {
				return true
			}
		case '}', ']':
			depth--
		}
	}
	return false
}
