package cli

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestToolsListCutsOnCharacters: descriptions with arrows and ellipses are
// shortened without splitting a UTF-8 character.
func TestToolsListCutsOnCharacters(t *testing.T) {
	var out, errb bytes.Buffer
	if code := Run([]string{"tools", "list", "--agent", "tester"}, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !utf8.Valid(out.Bytes()) {
		t.Fatalf("tools list printed invalid UTF-8:\n%q", out.String())
	}
	if !strings.Contains(out.String(), "bug_transition") {
		t.Fatalf("tester's tools missing:\n%s", out.String())
	}
}
