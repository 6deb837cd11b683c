package cli

import (
	"encoding/json"
	"fmt"
	"io"
)

func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
