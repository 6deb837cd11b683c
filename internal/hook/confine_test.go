package hook_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/internal/testutil"
)

// rewriteBash feeds an allowed Bash call to the hook and returns the
// updatedInput it answers with (nil when it answers nothing).
func rewriteBash(t *testing.T, proj string, input map[string]any, extra ...string) (map[string]any, string) {
	t.Helper()
	args := append([]string{"hook", "pretooluse", "--agent", "devloop-coder", "--project-dir", proj}, extra...)
	stdout, stderr, code := testutil.Run(t, testutil.PreToolUsePayload(proj, "Bash", input), nil, args...)
	if code != 0 {
		t.Fatalf("hook exit %d: %s", code, stderr)
	}
	if stdout == "" {
		return nil, ""
	}
	var out struct {
		HookSpecificOutput map[string]json.RawMessage `json:"hookSpecificOutput"`
	}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatalf("hook output %q: %v", stdout, err)
	}
	if d, ok := out.HookSpecificOutput["permissionDecision"]; ok {
		var decision, reason string
		_ = json.Unmarshal(d, &decision)
		_ = json.Unmarshal(out.HookSpecificOutput["permissionDecisionReason"], &reason)
		return nil, decision + ": " + reason
	}
	var updated map[string]any
	if err := json.Unmarshal(out.HookSpecificOutput["updatedInput"], &updated); err != nil {
		t.Fatalf("updatedInput in %q: %v", stdout, err)
	}
	return updated, ""
}

// runShell runs a Bash tool command the way the CLI does (bash -c) in dir.
func runShell(t *testing.T, dir, command string, env []string) (string, string, int) {
	t.Helper()
	cmd := exec.Command("bash", "-c", command)
	cmd.Dir = dir
	cmd.Env = env
	return testutil.RunCommand(t, cmd, "")
}

// TestHookRewritesBashToConfine: an allowed Bash call comes back as an
// updatedInput that keeps every field the CLI sent and changes only the
// command, with no permissionDecision (the CLI's own permission check still
// decides); the rewritten command is confined to the agent's allow-list.
func TestHookRewritesBashToConfine(t *testing.T) {
	t.Parallel()
	proj := t.TempDir()
	unit := filepath.Join(proj, "units/a")
	if err := os.MkdirAll(unit, 0o755); err != nil {
		t.Fatal(err)
	}
	in := map[string]any{"command": "echo in > in.txt; echo out > ../../prd.txt", "description": "d", "timeout": 5000, "run_in_background": false}
	updated, refused := rewriteBash(t, proj, in)
	if refused != "" || updated == nil {
		t.Fatalf("no rewrite (%s)", refused)
	}
	for k, v := range in {
		got, _ := json.Marshal(updated[k])
		want, _ := json.Marshal(v)
		if k != "command" && !bytes.Equal(got, want) {
			t.Errorf("updatedInput.%s = %s, want %s as sent", k, got, want)
		}
	}
	command := updated["command"].(string)
	if !strings.Contains(command, "confine --hold --agent devloop-coder --project-dir "+proj+" --cwd-report 3 -- bash -c ") {
		t.Fatalf("rewritten command %q does not run under toolhost confine", command)
	}
	stdout, stderr, code := runShell(t, unit, command, os.Environ())
	if code != 1 || !strings.Contains(stderr, "../../prd.txt: Permission denied") {
		t.Fatalf("exit %d stdout %q stderr %q; want the write outside refused", code, stdout, stderr)
	}
	if _, err := os.Stat(filepath.Join(unit, "in.txt")); err != nil {
		t.Error("the write inside the allow-list did not happen")
	}
	if _, err := os.Stat(filepath.Join(proj, "prd.txt")); err == nil {
		t.Error("the rewritten command wrote outside the allow-list")
	}

	// Without Landlock an agent that requires confinement is refused by
	// the hook, with the reason; with sandbox.commands off nothing changes.
	env := append(os.Environ(), "TOOLHOST_LANDLOCK_ABI=0")
	cmd := exec.Command(testutil.Toolhost(t), "hook", "pretooluse", "--agent", "devloop-coder", "--project-dir", proj)
	cmd.Env, cmd.Stdin = env, strings.NewReader(testutil.PreToolUsePayload(proj, "Bash", in))
	out, err := cmd.Output()
	if err != nil || !strings.Contains(string(out), `"permissionDecision":"deny"`) || !strings.Contains(string(out), `sandbox.commands is \"require\"`) {
		t.Fatalf("hook without Landlock: %s (%v), want a deny naming sandbox.commands", out, err)
	}
	agents := filepath.Join(t.TempDir(), "agents.json")
	b, _ := os.ReadFile(filepath.Join(testutil.RepoRoot(t), "configs/agents.json"))
	if err := os.WriteFile(agents, bytes.ReplaceAll(b, []byte(`"commands": "require"`), []byte(`"commands": "off"`)), 0o644); err != nil {
		t.Fatal(err)
	}
	if updated, refused := rewriteBash(t, proj, in, "--agents", agents); updated != nil || refused != "" {
		t.Fatalf("sandbox.commands off: updatedInput %v %q, want no answer", updated, refused)
	}
}

// equivalenceCorpus are commands whose output a confined run must not
// change: quoting of every kind, newlines, here-docs, $'…', unicode,
// exit statuses, stderr, and writes inside the allow-list.
var equivalenceCorpus = []string{
	`echo hello`,
	`echo 'single quoted' "double quoted"`,
	`printf '%s\n' a b c`,
	`echo "it's"`,
	`echo 'it'"'"'s'`,
	`echo $'tab\there\nnewline'`,
	`echo $'\x41\u00e9\''`,
	`echo "unicode: héllo wörld 日本語 🚀"`,
	`echo -n no-newline`,
	`printf 'a\0b' | od -c | head -1`,
	`echo $((6*7))`,
	`x=5; echo $((x+1))`,
	`for i in 1 2 3; do echo $i; done`,
	`i=0; while [ $i -lt 3 ]; do echo w$i; i=$((i+1)); done`,
	`if true; then echo yes; else echo no; fi`,
	`case foo in f*) echo matched;; esac`,
	`f() { echo "in f: $1"; }; f arg`,
	`arr=(a b c); echo "${arr[1]}" "${#arr[@]}"`,
	`echo "${HOME:+home set}"`,
	`s=hello; echo "${s^^}" "${s:1:3}" "${s/l/L}"`,
	`echo out; echo err >&2`,
	`echo err1 >&2; exit 3`,
	`exit 42`,
	`false`,
	`(exit 7)`,
	`set -e; false; echo not reached`,
	"cat <<EOF\nline1 $((1+1))\nline2\nEOF",
	"cat <<'EOF'\n$not expanded `either`\nEOF",
	"cat <<-EOF\n\tindented\n\tEOF",
	`tr a-z A-Z <<< "here string"`,
	`echo a | tr a b`,
	`seq 3 | sort -r | head -2`,
	`echo $(echo nested $(echo deeper))`,
	"echo `echo backticks`",
	`{ echo grouped; echo twice; } | wc -l`,
	"echo \"multi\nline\nstring\"",
	`echo \\backslash\\ "\$dollar" '\n'`,
	`echo "quote \" inside"`,
	`echo 'a  b   c' | awk '{print $2}'`,
	`ls nonexistent-file`,
	`echo file > f.txt && cat f.txt && rm f.txt`,
	`mkdir -p d/e && touch d/e/x && ls d/e && rm -r d`,
	`printf 'x%.0s' {1..5}; echo`,
	`echo {a,b,c}.txt`,
	`shopt -s nullglob; echo none*.zzz end`,
	`trap 'echo trapped' EXIT; echo body`,
	`read -r a b <<< "one two"; echo "$b $a"`,
	`echo "$0" "$#"`,
	`test -d . && echo isdir`,
	`umask; id -u`,
	`echo ~ | grep -c /`,
	`exec 3>&1; echo via fd3 >&3`,
	`kill -0 $$ && echo self-signal-ok`,
	`sleep 0.05; echo slept`,
	"  echo spaced  \n\n",
	`echo "$(basename "$PWD")"`,
	`echo line > log.txt; echo more >> log.txt; wc -l < log.txt; rm log.txt`,
	`cat /etc/hostname > /dev/null && echo read-anywhere`,
	`echo $'semi;colon' && echo 'pipe|bar' || echo never`,
	`printf '%q\n' "a b" 'c$d'`,
}

// TestHookRewriteEquivalence: for every command of the corpus, running the
// hook's rewritten command gives the same stdout, stderr and exit status as
// running the command itself.
func TestHookRewriteEquivalence(t *testing.T) {
	t.Parallel()
	if len(equivalenceCorpus) < 50 {
		t.Fatalf("corpus has %d commands, want at least 50", len(equivalenceCorpus))
	}
	proj := t.TempDir()
	work := filepath.Join(proj, "units/a/w")
	fresh := func() {
		if err := os.RemoveAll(work); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(work, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	env := os.Environ()
	for _, command := range equivalenceCorpus {
		updated, refused := rewriteBash(t, proj, map[string]any{"command": command, "description": "corpus"})
		if updated == nil {
			t.Errorf("%q: not rewritten (%s)", command, refused)
			continue
		}
		fresh()
		wantOut, wantErr, wantCode := runShell(t, work, command, env)
		fresh()
		gotOut, gotErr, gotCode := runShell(t, work, updated["command"].(string), env)
		if gotOut != wantOut || gotErr != wantErr || gotCode != wantCode {
			t.Errorf("%q:\n confined: exit %d stdout %q stderr %q\n original: exit %d stdout %q stderr %q",
				command, gotCode, gotOut, gotErr, wantCode, wantOut, wantErr)
		}
	}
}
