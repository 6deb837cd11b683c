package audit

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"github.com/toolhost/toolhost/internal/redact"
)

// MaxArguments is the largest argument document stored in a row; bigger ones
// are replaced by their size and sha256 so one huge call cannot bloat the
// trail.
const MaxArguments = 64 << 10

// RedactArguments returns args as they should be stored in a row: valid
// JSON, size capped, secrets redacted by toolhost's one redactor (by key
// and by value, see internal/redact). Arguments without anything to redact
// are returned as they are.
func RedactArguments(args json.RawMessage) json.RawMessage {
	if len(args) == 0 {
		return nil
	}
	if len(args) > MaxArguments {
		sum := sha256.Sum256(args)
		b, _ := json.Marshal(map[string]any{"truncated": true, "bytes": len(args), "sha256": hex.EncodeToString(sum[:])})
		return b
	}
	if !json.Valid(args) {
		b, _ := json.Marshal(map[string]any{"invalid_json": redact.String(string(args))})
		return b
	}
	return redact.JSON(args)
}
