package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/internal/testutil"
)

// TestHumanSeesWhatRuns: a confirmed bash call whose command hides a
// substitution under a secret-looking name is asked about with the command
// whole — in the needs_confirmation answer, `approve --list` and `approve
// --show` — and runs, once approved, exactly as shown; a call carrying
// bidirectional and other invisible characters is listed with them
// escaped, never raw.
func TestHumanSeesWhatRuns(t *testing.T) {
	t.Parallel()
	bin := testutil.Toolhost(t)
	project := t.TempDir()
	if err := os.MkdirAll(filepath.Join(project, "units/a"), 0o755); err != nil {
		t.Fatal(err)
	}
	policy := policyFile(t, `{"tools":{"bash":{"confirm":true},"append_coder_log":{"confirm":true}}}`)
	coder := testutil.Serve(t, "--project-dir", project, "--agent", "coder", "--unit", "a", "--session", "sess-preview", "--policy", policy)
	command := `API_TOKEN="$(touch hidden)" touch shown`
	r := testutil.CallTool(t, coder, "bash", map[string]any{"command": command})
	id := regexp.MustCompile(`cf-[0-9A-Z]+`).FindString(r.Text())
	if !r.IsError || id == "" || !strings.Contains(r.Text(), `$(touch hidden)`) || strings.Contains(r.Text(), "REDACTED") {
		t.Fatalf("needs_confirmation does not show the command whole: %s", r.Text())
	}
	approve := func(args ...string) string {
		out, err := exec.Command(bin, append([]string{"approve", "--project-dir", project}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("approve %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	if show := approve("--show", id); !strings.Contains(show, `API_TOKEN=\"$(touch hidden)\" touch shown`) || strings.Contains(show, "REDACTED") {
		t.Fatalf("approve --show:\n%s", show)
	}
	if list := approve("--list"); !strings.Contains(list, "$(touch hidden)") {
		t.Fatalf("approve --list:\n%s", list)
	}

	bidi := "ok \u202etxt.exe\u202c \u2066x\u2069 \u200fz\u200b"
	r = testutil.CallTool(t, coder, "append_coder_log", map[string]any{"message": bidi})
	bidiID := regexp.MustCompile(`cf-[0-9A-Z]+`).FindString(r.Text())
	if !r.IsError || bidiID == "" {
		t.Fatalf("append_coder_log did not wait: %s", r.Text())
	}
	for _, out := range []string{approve("--list"), approve("--show", bidiID), r.Text()} {
		if strings.ContainsAny(out, "\u202e\u202c\u2066\u2069\u200f\u200b") || !strings.Contains(out, `\u202e`) {
			t.Fatalf("bidi characters shown raw (or not at all):\n%q", out)
		}
	}

	approve(id)
	r = testutil.CallTool(t, coder, "bash", map[string]any{"command": command})
	if r.IsError {
		t.Fatalf("the approved command: %s", r.Text())
	}
	for _, f := range []string{"hidden", "shown"} {
		if _, err := os.Stat(filepath.Join(project, "units/a", f)); err != nil {
			t.Errorf("the approved command ran otherwise than shown: %s missing", f)
		}
	}
}
