package e2e

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/internal/testutil/claudecli"
	"github.com/toolhost/toolhost/internal/tool"
	"github.com/toolhost/toolhost/internal/vitest/vitesttest"
)

// TestRealClaudeBashKeepsCwd: the CLI's Bash keeps its working directory
// from one call to the next, and so it does under toolhost's rewrite (each
// command runs confined, audited by the hook): cd, then pwd in the next
// call, then a relative write there, then cd .. and pwd.
func TestRealClaudeBashKeepsCwd(t *testing.T) {
	t.Parallel()
	claudecli.Binary(t)
	bin := testutil.Toolhost(t)
	project := initProject(t, bin)
	if err := os.MkdirAll(filepath.Join(project, "units/u1/tests"), 0o755); err != nil {
		t.Fatal(err)
	}
	calls := []struct{ command, want string }{
		{"cd units/u1 && pwd", project + "/units/u1\n"},
		{"pwd", project + "/units/u1\n"},
		{"cd tests && echo here > here.txt && pwd", project + "/units/u1/tests\n"},
		{"cat here.txt && pwd", "here\n" + project + "/units/u1/tests\n"},
		{"cd ../.. && pwd", project + "/units\n"},
	}
	var turns []claudecli.Turn
	for i, c := range calls {
		turns = append(turns, claudecli.Turn{ToolUses: []claudecli.ToolUse{{ID: fmt.Sprintf("toolu_cwd_%d", i), Name: "Bash",
			Input: map[string]any{"command": c.command, "description": "step"}}}})
	}
	m := claudecli.NewModel(t, turns...)
	res := claudecli.Run(t, m, claudecli.RunOptions{Dir: project, Trust: []string{project}, AllowedTools: []string{"Bash"},
		Args: []string{"--agent", "devloop-coder"}})
	if res.ExitCode != 0 {
		t.Fatalf("claude: %s", res)
	}
	rows := auditRows(t, project)
	for i, c := range calls {
		id := fmt.Sprintf("toolu_cwd_%d", i)
		tr := m.ToolResult(t, id)
		if tr.IsError || strings.TrimSpace(tr.Text) != strings.TrimSpace(c.want) {
			t.Errorf("call %d %q: %q (error %v), want %q", i, c.command, tr.Text, tr.IsError, c.want)
		}
		if hook := rowsFor(rows, id); len(hook) != 1 || hook[0]["source"] != "hook" {
			t.Errorf("call %d did not go through the hook's rewrite: %v", i, hook)
		}
	}
	if _, err := os.Stat(filepath.Join(project, "units/u1/tests/here.txt")); err != nil {
		t.Errorf("the relative write did not land where the shell was: %v", err)
	}
}

// TestRealClaudeLargeVitestReport: parse_vitest on a real 5,000-failure
// Vitest report, called by the Tester through the real CLI, answers within
// what the CLI hands the model (without the bound the CLI answered "result
// exceeds maximum allowed tokens" and kept the result in a file of its
// own), grouped by cause, and the next page is one call away.
func TestRealClaudeLargeVitestReport(t *testing.T) {
	t.Parallel()
	claudecli.Binary(t)
	bin := testutil.Toolhost(t)
	project := initProject(t, bin)
	run := vitesttest.Run(t, 3, filepath.Join(project, "units/cart"), vitesttest.LargeSuite(5000))
	if err := os.MkdirAll(filepath.Join(project, "reports"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(project, "reports/cart.json"), run.Report, 0o644); err != nil {
		t.Fatal(err)
	}
	const parse = "mcp__toolhost-tester__parse_vitest"
	m := claudecli.NewScriptedModel(t, func(r claudecli.Request) claudecli.Turn {
		results := allResults(r)
		switch len(results) {
		case 0:
			return claudecli.Turn{ToolUses: []claudecli.ToolUse{{ID: "toolu_page1", Name: parse, Input: map[string]any{"report_path": "reports/cart.json"}}}}
		case 1:
			next := field(results[0], "truncated", "next_page")
			return claudecli.Turn{ToolUses: []claudecli.ToolUse{{ID: "toolu_page2", Name: parse, Input: map[string]any{"report_path": "reports/cart.json", "page": next}}}}
		}
		return claudecli.Turn{Text: "read two pages"}
	})
	res := claudecli.Run(t, m, claudecli.RunOptions{Dir: project, Trust: []string{project}, Args: []string{"--agent", "devloop-tester"}, Timeout: 6 * time.Minute})
	if res.ExitCode != 0 {
		t.Fatalf("claude: %s", res)
	}
	for i, id := range []string{"toolu_page1", "toolu_page2"} {
		tr := m.ToolResult(t, id)
		if tr.IsError || len(tr.Text) > tool.ResultBudget || strings.Contains(tr.Text, "exceeds maximum allowed tokens") {
			t.Fatalf("%s: error %v, %d characters: %.300s", id, tr.IsError, len(tr.Text), tr.Text)
		}
		if got := field(tr, "truncated", "page"); got != float64(i+1) || field(tr, "failed") != float64(5000) {
			t.Errorf("%s: page %v, failed %v; want page %d of the 5,000 failures", id, got, field(tr, "failed"), i+1)
		}
	}
	first := m.ToolResult(t, "toolu_page1")
	causes, _ := field(first, "causes").([]any)
	full, _ := field(first, "truncated", "full_result").(string)
	if len(causes) != 3 || full == "" {
		t.Fatalf("page 1: %d causes, full_result %q", len(causes), full)
	}
	// The whole result is in the Tester's own area, and the two pages are
	// its first failures, in order, none repeated.
	if !strings.HasPrefix(full, "agent-state/tester-") {
		t.Errorf("full_result %s is not in the Tester's agent-state/tester-*", full)
	}
	var whole struct {
		Failures []json.RawMessage `json:"failures"`
	}
	if b, err := os.ReadFile(filepath.Join(project, full)); err != nil || json.Unmarshal(b, &whole) != nil || len(whole.Failures) != 5000 {
		t.Fatalf("the whole result %s: %d failures, %v", full, len(whole.Failures), err)
	}
	var shown []json.RawMessage
	for _, id := range []string{"toolu_page1", "toolu_page2"} {
		var page struct {
			Failures []json.RawMessage `json:"failures"`
		}
		if err := json.Unmarshal([]byte(m.ToolResult(t, id).Text), &page); err != nil || len(page.Failures) == 0 {
			t.Fatalf("%s: %d failures, %v", id, len(page.Failures), err)
		}
		shown = append(shown, page.Failures...)
	}
	for i, f := range shown {
		var a, b any
		_ = json.Unmarshal(f, &a)
		_ = json.Unmarshal(whole.Failures[i], &b)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("failure %d of pages 1-2 is not the whole result's failure %d:\n%s\n%s", i, i, f, whole.Failures[i])
		}
	}
	t.Logf("the CLI handed the model %d and %d characters for the 5,000-failure report", len(first.Text), len(m.ToolResult(t, "toolu_page2").Text))
}

// treeHashes returns the sha256 of every file under dir/.claude.
func treeHashes(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(filepath.Join(dir, ".claude"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		sum := sha256.Sum256(b)
		out[p] = fmt.Sprintf("%x", sum)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// runToolhost runs the binary and returns its output and exit code.
func runToolhost(t *testing.T, bin string, env []string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), code
}

// TestInitIsIdempotentAndKeepsUserKeys: init merges into a settings file a
// person wrote without dropping or reordering a key; run again it leaves
// every file byte for byte as it was; --check says so, and after a hand
// edit names the edited file and exits 1; init then leaves the edit alone
// until --force; a definition init did not write is never replaced
// without --force either.
func TestInitIsIdempotentAndKeepsUserKeys(t *testing.T) {
	t.Parallel()
	bin := testutil.Toolhost(t)
	project, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(project, ".claude/agents"), 0o755); err != nil {
		t.Fatal(err)
	}
	user := `{"model": "opus", "permissions": {"deny": ["Bash(curl:*)"], "allow": ["Read(./docs/**)"]},
  "env": {"FOO": "1"}, "hooks": {"PostToolUse": [{"matcher": "Edit", "hooks": [{"type": "command", "command": "echo edited"}]}]}, "number": 1.50}`
	if err := os.WriteFile(filepath.Join(project, ".claude/settings.json"), []byte(user), 0o644); err != nil {
		t.Fatal(err)
	}
	mine := "---\nname: devloop-pm\ndescription: my own PM\n---\nI wrote this.\n"
	if err := os.WriteFile(filepath.Join(project, ".claude/agents/devloop-pm.md"), []byte(mine), 0o644); err != nil {
		t.Fatal(err)
	}
	out, code := runToolhost(t, bin, nil, "init", "--project-dir", project, "--lead", "architect")
	if code != 0 || !strings.Contains(out, "left alone .claude/agents/devloop-pm.md (not written by toolhost init") {
		t.Fatalf("init: exit %d\n%s", code, out)
	}
	settings, err := os.ReadFile(filepath.Join(project, ".claude/settings.json"))
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	dec := json.NewDecoder(strings.NewReader(string(settings)))
	depth := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		default:
			if s, ok := tok.(string); ok && depth == 1 && dec.More() {
				keys = append(keys, s)
				// Skip the value.
				var v json.RawMessage
				_ = dec.Decode(&v)
			}
		}
	}
	if strings.Join(keys, ",") != "model,permissions,env,hooks,number" {
		t.Errorf("top-level keys %v, want the user's, in their order", keys)
	}
	for _, want := range []string{`"Bash(curl:*)"`, `"Read(./docs/**)"`, `"mcp__toolhost-coder"`, `"echo edited"`, `1.50`, `"FOO": "1"`,
		`hook pretooluse --project-dir ` + project + ` --lead devloop-architect`, `"timeout": 10`} {
		if !strings.Contains(string(settings), want) {
			t.Errorf("settings lack %s:\n%s", want, settings)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(project, ".claude/agents/devloop-pm.md")); string(b) != mine {
		t.Error("init replaced a definition it did not write")
	}

	before := treeHashes(t, project)
	if out, code := runToolhost(t, bin, nil, "init", "--project-dir", project, "--lead", "architect"); code != 0 {
		t.Fatalf("second init: exit %d\n%s", code, out)
	}
	after := treeHashes(t, project)
	if len(before) != 7 || fmt.Sprint(before) != fmt.Sprint(after) {
		t.Fatalf("the second init changed files:\n%v\n%v", before, after)
	}
	// --check: only the PM's own file differs.
	out, code = runToolhost(t, bin, nil, "init", "--check", "--project-dir", project, "--lead", "architect")
	if code != 1 || strings.TrimSpace(out) != ".claude/agents/devloop-pm.md: not written by toolhost init\ntoolhost: 1 file(s) differ from what toolhost init would write" {
		t.Errorf("--check with a foreign definition: exit %d\n%s", code, out)
	}
	if out, code := runToolhost(t, bin, nil, "init", "--force", "--project-dir", project, "--lead", "architect"); code != 0 || !strings.Contains(out, "updated    .claude/agents/devloop-pm.md") {
		t.Fatalf("init --force: exit %d\n%s", code, out)
	}
	if out, code := runToolhost(t, bin, nil, "init", "--check", "--project-dir", project, "--lead", "architect"); code != 0 {
		t.Fatalf("--check after init: exit %d\n%s", code, out)
	}
	// A hand edit: --check names it; init leaves it alone.
	tester := filepath.Join(project, ".claude/agents/devloop-tester.md")
	b, _ := os.ReadFile(tester)
	edited := strings.Replace(string(b), "## How to work", "## How to work\n\nAlways run the slow suite too.", 1)
	if err := os.WriteFile(tester, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	out, code = runToolhost(t, bin, nil, "init", "--check", "--project-dir", project, "--lead", "architect")
	if code != 1 || !strings.Contains(out, ".claude/agents/devloop-tester.md: edited since toolhost init wrote it") || strings.Contains(out, "devloop-pm") {
		t.Errorf("--check after a hand edit: exit %d\n%s", code, out)
	}
	if out, code := runToolhost(t, bin, nil, "init", "--project-dir", project, "--lead", "architect"); code != 0 || !strings.Contains(out, "left alone .claude/agents/devloop-tester.md (edited since") {
		t.Errorf("init after a hand edit: exit %d\n%s", code, out)
	}
	if b, _ := os.ReadFile(tester); string(b) != edited {
		t.Error("init replaced a hand-edited definition")
	}
}

// TestInitTwiceOnAFreshProject: on a project with no .claude/ yet, init
// writes the six agents and the settings; run again it writes nothing (each
// file "unchanged", the same bytes, not even rewritten in place: the same
// inode and modification time) and --check agrees.
func TestInitTwiceOnAFreshProject(t *testing.T) {
	t.Parallel()
	bin := testutil.Toolhost(t)
	project := initProject(t, bin, "--lead", "architect")
	type stamp struct {
		sum   string
		ino   uint64
		mtime int64
	}
	stamps := func() map[string]stamp {
		out := map[string]stamp{}
		for p, sum := range treeHashes(t, project) {
			fi, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			out[p] = stamp{sum, fi.Sys().(*syscall.Stat_t).Ino, fi.ModTime().UnixNano()}
		}
		return out
	}
	before := stamps()
	if len(before) != 7 {
		t.Fatalf("init wrote %d files, want the six agents and the settings: %v", len(before), before)
	}
	out, code := runToolhost(t, bin, nil, "init", "--project-dir", project, "--lead", "architect")
	if code != 0 || strings.Count(out, "unchanged  ") != 7 || strings.Contains(out, "wrote") || strings.Contains(out, "updated") {
		t.Fatalf("second init: exit %d\n%s", code, out)
	}
	if after := stamps(); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("the second init changed or rewrote files:\n%v\n%v", before, after)
	}
	if out, code := runToolhost(t, bin, nil, "init", "--check", "--project-dir", project, "--lead", "architect"); code != 0 || !strings.Contains(out, "every file is what toolhost init would write (7 files)") {
		t.Errorf("--check after init: exit %d\n%s", code, out)
	}
}

// TestDoctor: on a project set up by init, doctor reports a folder the CLI
// does not trust and a missing CLI, each with its fix, and exits 1; with
// the CLI and the trust it passes every check, each agent's server and
// hook included.
func TestDoctor(t *testing.T) {
	t.Parallel()
	claude := claudecli.Binary(t)
	bin := testutil.Toolhost(t)
	project := initProject(t, bin)
	config := t.TempDir()
	env := []string{"CLAUDE_CONFIG_DIR=" + config, "PATH=/usr/bin:/bin"}
	out, code := runToolhost(t, bin, env, "doctor", "--project-dir", project)
	for _, want := range []string{"FAIL claude: no claude on PATH", "fix: install the Claude CLI",
		"FAIL trusted folder: Claude Code does not trust " + project, `fix: run claude in ` + project + ` once and accept the trust prompt, or set projects["` + project + `"].hasTrustDialogAccepted to true in ` + config + "/.claude.json",
		"ok   devloop-tester server toolhost-tester: starts and lists 12 tools", "ok   devloop-bug-triager hook: answers in"} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor without the CLI and the trust lacks %q:\n%s", want, out)
		}
	}
	if code != 1 {
		t.Errorf("doctor with failures exited %d, want 1", code)
	}
	trust, _ := json.Marshal(map[string]any{"projects": map[string]any{project: map[string]any{"hasTrustDialogAccepted": true}}})
	if err := os.WriteFile(filepath.Join(config, ".claude.json"), trust, 0o600); err != nil {
		t.Fatal(err)
	}
	out, code = runToolhost(t, bin, env, "doctor", "--project-dir", project, "--claude", claude)
	if code != 0 || strings.Contains(out, "FAIL") || !strings.Contains(out, "ok   claude: "+claudecli.Version(t)) {
		t.Errorf("doctor on a good setup: exit %d\n%s", code, out)
	}
}

// TestCoderUnitDirOnFirstUse: `serve --unit todo-be` on a fresh project
// (no units/todo-be yet): the Coder's first bash call runs in its unit's
// directory, which it creates (it is in the Coder's allow-list), and the
// audit row carries the session id the CLI gives its servers.
func TestCoderUnitDirOnFirstUse(t *testing.T) {
	t.Parallel()
	project, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c := testutil.ServeEnv(t, append(os.Environ(), "CLAUDE_CODE_SESSION_ID=claude-sess-9"), "--agent", "coder", "--unit", "todo-be", "--project-dir", project)
	r := testutil.CallToolMeta(t, c, "bash", map[string]any{"command": "pwd"}, map[string]any{"claudecode/toolUseId": "toolu_first"})
	var out struct {
		OK     bool   `json:"ok"`
		Reason string `json:"reason"`
		Stdout string `json:"stdout"`
	}
	testutil.DecodeResult(t, "bash", r, &out)
	if !out.OK || strings.TrimSpace(out.Stdout) != project+"/units/todo-be" {
		t.Fatalf("first bash call: %+v", out)
	}
	rows := rowsFor(auditRows(t, project), "toolu_first")
	if len(rows) != 1 || rows[0]["client_session_id"] != "claude-sess-9" || rows[0]["tool"] != "bash" {
		t.Errorf("audit rows of the call: %v", rows)
	}
}
