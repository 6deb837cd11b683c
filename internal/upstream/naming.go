package upstream

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/toolhost/toolhost/internal/tool"
)

// maxName is the longest tool name clients accept (tool.NamePattern()).
const maxName = 64

// ToolName is the name an upstream tool is served under: "<server>__<tool>"
// when that is a valid tool name. Otherwise (too long, or characters such as
// '.' or '/'), invalid characters become '_', the name is cut to fit and a
// hash of the full original name is appended, so the result is stable across
// runs and two different upstream names never map to the same one. renamed
// reports whether the plain form could not be used.
func ToolName(server, remote string) (name string, renamed bool) {
	full := server + "__" + remote
	if tool.ValidName(full) {
		return full, false
	}
	sum := sha256.Sum256([]byte(full))
	suffix := "_" + hex.EncodeToString(sum[:4])
	clean := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			return r
		}
		return '_'
	}, full)
	if len(clean) > maxName-len(suffix) {
		clean = clean[:maxName-len(suffix)]
	}
	return clean + suffix, true
}
