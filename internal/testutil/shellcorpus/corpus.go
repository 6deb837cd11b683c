// Package shellcorpus is the corpus of shell commands that check the
// policy rules' cmd facts against what real bash runs: each command runs
// under bash with recording stubs on PATH (stubs.go), and what the stubs
// recorded is compared with what cmd claims. The rules package judges the
// facts and the rules in process; the e2e package judges the same
// commands by their effect through `toolhost serve` and `toolhost hook
// pretooluse`.
package shellcorpus

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// BuiltinNames are bash builtins among the stubs: bash runs them itself,
// unless a program (env, xargs, find) runs them.
func BuiltinNames() []string { return slices.Clone(builtinNames) }

// Case is one corpus command.
type Case struct {
	// Class is the technique (glob, subshell, branch …), Name the
	// variant.
	Class, Name string
	// Cmd is the command; {{stubs}} stands for the stubs' directory.
	Cmd string
	// Files are written into the directory the command runs in; Exec
	// are made executable.
	Files map[string]string
	Exec  []string
	// Unran are programs cmd may show although bash does not run them
	// here (a branch not taken, an alias not used).
	Unran []string
	// Ordinary marks an everyday command: every program it runs must be
	// known, no rule over cmd.programs may be unsure of it, the guard
	// must allow it.
	Ordinary bool
	// Guard says what the Bash guard must answer when it is not allow
	// ("json", "unknown").
	Guard string
}

// Title names the case in a test.
func (c Case) Title() string { return c.Class + "/" + c.Name }

// Command is Cmd for stubs in dir.
func (c Case) Command(stubs string) string { return strings.ReplaceAll(c.Cmd, "{{stubs}}", stubs) }

// Setup writes the case's files into dir.
func (c Case) Setup(t testing.TB, dir string) {
	t.Helper()
	for name, body := range c.Files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if slices.Contains(c.Exec, name) {
			mode = 0o755
		}
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
	}
}

// Run runs the case under bash in dir with only the stubs on PATH and
// returns what bash ran.
func Run(t testing.TB, bash string, c Case, s *Stubs, dir string) []Invocation {
	t.Helper()
	log := filepath.Join(t.TempDir(), "calls")
	cmd := exec.Command(bash, "-c", c.Command(s.Dir))
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + s.Dir, "HOME=" + dir, "SHELLCORPUS_LOG=" + log, "LC_ALL=C"}
	cmd.Stdin = nil
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Logf("bash: %v: %s", err, out)
	}
	return ReadLog(t, log)
}

// Forbidden are the programs the corpus's deny and confirm rules are
// about; Safe the ones its allow rule lets run without a human.
var (
	Forbidden = []string{"curl", "wget", "nc", "ncat", "rm", "python3", "perl", "node", "ssh"}
	Safe      = []string{"git", "npm", "npx", "go", "gofmt", "make", "jq", "awk", "grep", "find", "ls", "cat", "head", "tail", "wc",
		"sort", "uniq", "cut", "echo", "printf", "mkdir", "touch", "test", "true", "false", "cd", "sed", "tee", "xargs", "env",
		"docker", "date", "basename", "dirname", "tr", "pytest", "tsc", "vitest", "eslint", "[", "export", "set", "read", "pwd",
		"exit", "cp", "mv", "ln", "chmod", "mapfile", "gofmt", "shopt", "wait", ":", "trap"}
)

func celList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = "'" + n + "'"
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// Rules are the corpus's rules as policy JSON (the "rules" list): deny
// or confirm when a forbidden program may run, allow when only safe ones
// do. tool is the rules' tool glob.
func Rules(effect, tool string) string {
	var r map[string]string
	switch effect {
	case "deny", "confirm":
		r = map[string]string{"id": "forbidden-" + effect, "tool": tool, "effect": effect, "reason": "a forbidden program (" + strings.Join(Forbidden, ", ") + ") may run",
			"when": "cmd.programs.exists(p, p in " + celList(Forbidden) + ")"}
	case "allow":
		r = map[string]string{"id": "safe-allow", "tool": tool, "effect": "allow", "when": "cmd.programs.all(p, p in " + celList(Safe) + ")"}
	default:
		panic("shellcorpus: effect " + effect)
	}
	b, _ := json.Marshal([]any{r})
	return string(b)
}

// RanForbidden is the first forbidden program bash ran, if any.
func RanForbidden(ran []Invocation) (string, bool) {
	for _, inv := range ran {
		if slices.Contains(Forbidden, inv.Name) {
			return inv.Name, true
		}
	}
	return "", false
}

// RanUnsafe is the first program bash ran that the allow rule does not
// name, if any.
func RanUnsafe(ran []Invocation) (string, bool) {
	for _, inv := range ran {
		if !slices.Contains(Safe, inv.Name) {
			return inv.Name, true
		}
	}
	return "", false
}

// Facts is the JSON form of cmd (rules.FactsJSON): an unknown fact is
// null, an open list ends in "…".
type Facts struct {
	Programs   []any `json:"programs"`
	Commands   []any `json:"commands"`
	Unknowable bool  `json:"unknowable"`
}

// Open reports whether cmd may hold programs it does not list.
func (f Facts) Open() bool {
	return len(f.Programs) > 0 && f.Programs[len(f.Programs)-1] == "…" || slices.Contains(f.Programs, nil)
}

// FactCommand is one command of cmd.
type FactCommand struct {
	Name     *string   `json:"name"`
	Args     []*string `json:"args"`
	Defined  bool      `json:"defined"`
	Function bool      `json:"function"`
}

// KnownCommands are the commands of f whose program is known.
func (f Facts) KnownCommands() []FactCommand {
	var out []FactCommand
	for _, raw := range f.Commands {
		if raw == "…" {
			continue
		}
		b, _ := json.Marshal(raw)
		var fc FactCommand
		if json.Unmarshal(b, &fc) == nil && fc.Name != nil {
			out = append(out, fc)
		}
	}
	return out
}

// Explains reports whether fc could be inv: the same program, and its
// known arguments where inv has them (an unknown argument stands for any
// number of them).
func (fc FactCommand) Explains(inv Invocation) bool {
	return fc.Name != nil && *fc.Name == inv.Name && matchArgs(fc.Args, inv.Args)
}

func matchArgs(pat []*string, args []string) bool {
	if len(pat) == 0 {
		return len(args) == 0
	}
	if pat[0] == nil {
		for k := 0; k <= len(args); k++ {
			if matchArgs(pat[1:], args[k:]) {
				return true
			}
		}
		return false
	}
	return len(args) > 0 && *pat[0] == args[0] && matchArgs(pat[1:], args[1:])
}

// Judge checks cmd's facts of a case against what bash ran: every
// program bash ran is a command of cmd with its arguments, or cmd is
// open; every program cmd shows as known ran, unless the case says it may
// not (a path not taken), or it is a function's body analysed where it is
// defined, or a builtin.
func Judge(c Case, facts json.RawMessage, ran []Invocation) []string {
	var f Facts
	if err := json.Unmarshal(facts, &f); err != nil {
		return []string{"facts: " + err.Error()}
	}
	var problems []string
	known := f.KnownCommands()
	for _, inv := range ran {
		if !slices.ContainsFunc(known, func(fc FactCommand) bool { return fc.Explains(inv) }) && !f.Open() {
			problems = append(problems, fmt.Sprintf("bash ran %s %q, which cmd does not show, and cmd is not open", inv.Name, inv.Args))
		}
	}
	stubbed := append(slices.Clone(Pass), Record...)
	for _, fc := range known {
		n := *fc.Name
		if fc.Defined || fc.Function || slices.Contains(builtinNames, n) || !slices.Contains(stubbed, n) || slices.Contains(c.Unran, n) {
			continue
		}
		if !slices.ContainsFunc(ran, func(inv Invocation) bool { return inv.Name == n }) {
			problems = append(problems, fmt.Sprintf("cmd shows %s as a program that runs, which bash did not run (ran: %v)", n, ran))
		}
	}
	for _, n := range c.Unran {
		if slices.ContainsFunc(ran, func(inv Invocation) bool { return inv.Name == n }) {
			problems = append(problems, "the case says bash does not run "+n+", but it did")
		}
	}
	if c.Ordinary && f.Open() {
		problems = append(problems, "an everyday command's programs are not all known")
	}
	return problems
}
