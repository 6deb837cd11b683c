package wirejson

import (
	"bytes"
	"encoding/json"
	"reflect"
	"unicode/utf8"
	"unsafe"

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

const hexDigits = "0123456789abcdef"

// AppendString appends s as a JSON string, escaped as encoding/json does
// (HTML characters, U+2028/U+2029 and invalid UTF-8 included).
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// AppendBytes is AppendString for the text in b, read in place (b is not
// kept): a tool's result becomes the text content of its answer this way
// without a copy.
func AppendBytes(dst, b []byte) []byte {
	return AppendString(dst, unsafe.String(unsafe.SliceData(b), len(b)))
}
