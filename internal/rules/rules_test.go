package rules_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/rules"
	"github.com/toolhost/toolhost/internal/tool"
	"github.com/toolhost/toolhost/internal/tools/all"
	"github.com/toolhost/toolhost/internal/util/wirejson"
)

// catalog is what serve compiles rules against: toolhost's built-ins and
// Claude CLI's.
func catalog() []rules.Tool {
	var specs []*tool.Spec
	for _, t := range all.Tools() {
		specs = append(specs, t.Spec())
	}
	return rules.Catalog(specs)
}

func spec(name string) *tool.Spec {
	for _, t := range all.Tools() {
		if t.Spec().Name == name {
			return t.Spec()
		}
	}
	return nil
}

func compile(t *testing.T, dir string, rs ...rules.Rule) *rules.Set {
	t.Helper()
	set, err := rules.Compile(rs, rules.Options{Tools: catalog(), ProjectDir: dir})
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	return set
}

// call decides a call of name with args (JSON), the commands it would run
// taken from the tool's spec as the engine takes them (or the hook's Bash
// command).
func call(t *testing.T, set *rules.Set, name, args string) rules.Verdict {
	t.Helper()
	tr := set.For(name)
	if tr == nil {
		return rules.Verdict{Index: -1}
	}
	doc, err := wirejson.DecodeAny([]byte(args))
	if err != nil {
		t.Fatalf("args %s: %v", args, err)
	}
	in := &rules.Input{Tool: name, Agent: "devloop-coder", Unit: "todo-be", Project: "p-1",
		Now: time.Date(2026, 12, 1, 22, 30, 0, 0, time.UTC), Args: doc}
	if s := spec(name); s != nil && s.Commands != nil {
		in.Commands = func() []tool.Command { return s.Commands(json.RawMessage(args)) }
	}
	if name == "Bash" {
		var b struct{ Command string }
		_ = json.Unmarshal([]byte(args), &b)
		in.Commands = func() []tool.Command { return []tool.Command{{Script: b.Command}} }
	}
	return tr.Decide(in)
}

func TestCompileErrors(t *testing.T) {
	t.Parallel()
	ok := rules.Rule{ID: "ok", Tool: "bash", When: "true", Effect: rules.Allow}
	cases := []struct {
		name string
		rule rules.Rule
		// index, line and col of the problem; want is part of its message.
		index, line, col int
		want             string
	}{
		{"id missing", rules.Rule{Tool: "bash", Effect: rules.Allow}, 1, 0, 0, "id must be"},
		{"id reused", rules.Rule{ID: "ok", Tool: "bash", Effect: rules.Allow}, 1, 0, 0, "also used by rules[0]"},
		{"tool missing", rules.Rule{ID: "r", Effect: rules.Allow}, 1, 0, 0, "tool is missing"},
		{"tool glob invalid", rules.Rule{ID: "r", Tool: "git[", Effect: rules.Allow}, 1, 0, 0, "not a valid glob"},
		{"effect unknown", rules.Rule{ID: "r", Tool: "bash", Effect: "block"}, 1, 0, 0, `effect "block" must be deny, confirm or allow`},
		{"deny without reason", rules.Rule{ID: "r", Tool: "bash", Effect: rules.Deny}, 1, 0, 0, "needs a reason: the model reads it"},
		{"confirm without reason", rules.Rule{ID: "r", Tool: "bash", Effect: rules.Confirm, Reason: " "}, 1, 0, 0, "the human reads it"},
		{"syntax", rules.Rule{ID: "r", Tool: "bash", When: "args.command ==", Effect: rules.Allow}, 1, 1, 16, "Syntax error"},
		{"undeclared variable", rules.Rule{ID: "r", Tool: "bash", When: "true && cmnd.programs.size() > 0", Effect: rules.Allow}, 1, 1, 9, "undeclared reference to 'cmnd'"},
		{"misspelt field of a typed tool", rules.Rule{ID: "r", Tool: "bash", When: "args.comand == 'x'", Effect: rules.Allow}, 1, 1, 5, "undefined field 'comand'"},
		{"misspelt nested field", rules.Rule{ID: "r", Tool: "spawn_units", When: "args.units.exists(u, u.agrv.size() > 0)", Effect: rules.Allow}, 1, 1, 23, "undefined field 'agrv'"},
		{"misspelt cmd fact", rules.Rule{ID: "r", Tool: "*", When: "cmd.progams.size() > 0", Effect: rules.Allow}, 1, 1, 4, "undefined field 'progams'"},
		{"type mismatch", rules.Rule{ID: "r", Tool: "bash", When: "args.timeout_ms == '5'", Effect: rules.Allow}, 1, 1, 17, "no matching overload for '_==_' applied to '(int, string)'"},
		{"not a boolean", rules.Rule{ID: "r", Tool: "bash", When: "args.command", Effect: rules.Allow}, 1, 1, 1, "must be a boolean expression, not string"},
		{"cmd of a tool that runs none", rules.Rule{ID: "r", Tool: "write_chapter", When: "args.site == 'prd' || cmd.unknowable", Effect: rules.Allow}, 1, 1, 23, "write_chapter runs no command, so it has no cmd"},
		{"invalid glob pattern", rules.Rule{ID: "r", Tool: "Write", When: "glob(args.file_path, 'units/[')", Effect: rules.Allow}, 1, 1, 22, `glob pattern "units/[" is not a valid glob`},
		{"too long", rules.Rule{ID: "r", Tool: "bash", When: strings.Repeat("true && ", 600) + "true", Effect: rules.Allow}, 1, 0, 0, "over the 4096-byte limit"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := rules.Compile([]rules.Rule{ok, tc.rule}, rules.Options{Tools: catalog()})
			ce, isCE := err.(*rules.CompileError)
			if !isCE || len(ce.Problems) == 0 {
				t.Fatalf("err = %v, want a CompileError", err)
			}
			p := ce.Problems[0]
			if p.Index != tc.index || p.ID != tc.rule.ID || p.Line != tc.line || p.Col != tc.col || !strings.Contains(p.Msg, tc.want) {
				t.Fatalf("problem = %+v (%s), want index %d at %d:%d with %q", p, p, tc.index, tc.line, tc.col, tc.want)
			}
		})
	}
	t.Run("every broken rule is named", func(t *testing.T) {
		t.Parallel()
		_, err := rules.Compile([]rules.Rule{
			{ID: "a", Tool: "bash", When: "args.x", Effect: rules.Deny, Reason: "r"},
			ok,
			{ID: "b", Tool: "bash", When: "cmd.programs.exists(p, p == 1)", Effect: rules.Deny, Reason: "r"},
		}, rules.Options{Tools: catalog()})
		msg := err.Error()
		if !strings.Contains(msg, `rules[0] (id "a"): when 1:5: undefined field 'x'`) || !strings.Contains(msg, `rules[2] (id "b"): when 1:26:`) {
			t.Fatalf("err = %s", msg)
		}
	})
}

// TestToolArguments runs rules over the real arguments of toolhost's and
// Claude CLI's tools, typed from their schemas.
func TestToolArguments(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cases := []struct {
		name, tool, when, args string
		match                  bool
	}{
		{"string field", "write_chapter", "args.site == 'sdd' && args.chapter_id.startsWith('api')", `{"site":"sdd","chapter_id":"api-auth","html":"<section></section>"}`, true},
		{"enum field, other value", "write_chapter", "args.site == 'sdd'", `{"site":"prd","chapter_id":"intro","html":""}`, false},
		{"integer field is an int", "bash", "args.timeout_ms > 300000 && args.timeout_ms % 2 == 0", `{"command":"make","timeout_ms":400000}`, true},
		{"absent integer reads 0", "bash", "!has(args.timeout_ms) && args.timeout_ms == 0", `{"command":"make"}`, true},
		{"absent string reads empty", "bug_list", "args.status == '' && !has(args.status)", `{}`, true},
		{"nested object field", "bug_open", "args.evidence.log_line > 10 && args.severity == 'blocker'", `{"title":"crash","severity":"blocker","evidence":{"log":"x","log_line":42}}`, true},
		{"absent nested object reads empty", "bug_open", "args.evidence.log_line == 0 && !has(args.evidence)", `{"title":"t","severity":"minor"}`, true},
		{"list of objects", "write_todolist", "args.items.size() > 2 && args.items.exists(i, i.depends_on.exists(d, d == 'step-001'))",
			`{"items":[{"id":"step-001","description":"a"},{"id":"step-002","description":"b","depends_on":["step-001"]},{"id":"step-003","description":"c"}]}`, true},
		{"list of strings", "port_picker", "'todo-be' in args.units", `{"units":["todo-fe","todo-be"]}`, true},
		{"map of strings", "spawn_units", "args.units.exists(u, 'NODE_OPTIONS' in u.env && u.env['NODE_OPTIONS'].contains('inspect'))",
			`{"action":"start","units":[{"id":"be","argv":["node","server.js"],"env":{"NODE_OPTIONS":"--inspect=0.0.0.0:9229"}}]}`, true},
		{"free-form object is dyn", "update_runtime_state", "args.data.retries > 2.5 && args.data.tags[0] == 'x'", `{"status":"working","data":{"retries":3,"tags":["x"]}}`, true},
		{"object without properties, absent", "timeline_append", "args.data.size() == 0", `{"kind":"note","message":"m"}`, true},
		{"a run_case step", "run_case", "args.case.steps.exists(s, s.method == 'DELETE')",
			`{"case":{"id":"c1","steps":[{"name":"drop","method":"DELETE","url":"http://127.0.0.1:3000/x","expect":{"status":204}}]}}`, true},
		{"health_wait targets", "health_wait", "args.targets.all(t, t.url.startsWith('http://127.0.0.1'))", `{"targets":[{"unit":"be","url":"http://localhost:3000/health"}],"timeout_ms":1000,"interval_ms":100}`, false},
		{"glob over a tool's path", "archive_doc", "glob(args.path, 'prd/**')", `{"path":"./prd/../prd/intro.html"}`, true},
		{"tool, agent, unit, project, now", "record_memory", "tool == 'record_memory' && agent == 'devloop-coder' && unit == 'todo-be' && project == 'p-1' && now.getHours() >= 22",
			`{"key":"k","content":"c"}`, true},
		{"spawn_units argv is a command", "spawn_units", "cmd.programs.exists(p, p == 'node') && cmd.commands.exists(c, c.name == 'curl')",
			`{"action":"start","units":[{"id":"be","argv":["node","server.js"]},{"id":"probe","argv":["sh","-c","curl -s http://127.0.0.1:1/x"]}]}`, true},
		{"spawn_units stop runs nothing", "spawn_units", "cmd.programs.size() > 0", `{"action":"stop","units":[{"id":"be"}]}`, false},
		{"Claude Write path", "Write", "glob(args.file_path, 'contracts/**') && args.content.size() > 3", `{"file_path":"` + dir + `/contracts/api.json","content":"{\"a\":1}"}`, true},
		{"Claude Edit outside", "Edit", "glob(args.file_path, 'contracts/**')", `{"file_path":"/etc/contracts/a.json","old_string":"a","new_string":"b"}`, false},
		{"Claude MultiEdit edits", "MultiEdit", "args.edits.exists(e, e.replace_all)", `{"file_path":"` + dir + `/units/a.ts","edits":[{"old_string":"a","new_string":"b"},{"old_string":"c","new_string":"d","replace_all":true}]}`, true},
		{"Claude NotebookEdit", "NotebookEdit", "glob(args.notebook_path, '**/*.ipynb') && args.edit_mode == 'delete'", `{"notebook_path":"` + dir + `/n/a.ipynb","new_source":"","edit_mode":"delete"}`, true},
		{"Claude WebFetch", "WebFetch", "!args.url.startsWith('https://docs.example.com/')", `{"url":"https://evil.example.net/x","prompt":"summarise"}`, true},
		{"Claude WebSearch", "WebSearch", "args.blocked_domains.size() == 0", `{"query":"x"}`, true},
		{"a property that is a reserved word", "contract_bridge", "args.`package` == 'api'", `{"contract":"todo","lang":"go","package":"api"}`, true},
		{"Claude Grep flags are a map", "Grep", "'-i' in args && args['-i'] == true", `{"pattern":"x","-i":true}`, true},
		{"Claude Bash cmd", "Bash", "cmd.hosts.exists(h, h.endsWith('.example.net'))", `{"command":"curl -s https://api.example.net/v1 -o out.json","description":"d"}`, true},
		{"Claude Bash args", "Bash", "args.run_in_background && args.timeout == 120000", `{"command":"npm start","run_in_background":true,"timeout":120000}`, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			set := compile(t, dir, rules.Rule{ID: "r", Tool: tc.tool, When: tc.when, Effect: rules.Deny, Reason: "because"})
			v := call(t, set, tc.tool, tc.args)
			if v.Decided() != tc.match || v.Unsure != "" {
				t.Fatalf("%s on %s: verdict %+v, want match %t", tc.when, tc.args, v, tc.match)
			}
		})
	}
}

// TestEveryToolIsTyped compiles a rule reading every top-level argument of
// every built-in tool, so each schema converts to CEL types, and a
// misspelt argument is refused for each.
func TestEveryToolIsTyped(t *testing.T) {
	t.Parallel()
	for _, tl := range catalog() {
		var s struct{ Properties map[string]any }
		_ = json.Unmarshal(tl.InputSchema, &s)
		for p := range s.Properties {
			if strings.HasPrefix(p, "-") {
				continue
			}
			if _, err := rules.Compile([]rules.Rule{{ID: "r", Tool: tl.Name, When: "has(args." + p + ")", Effect: rules.Allow}}, rules.Options{Tools: catalog()}); err != nil {
				t.Errorf("%s: has(args.%s): %v", tl.Name, p, err)
			}
		}
		if tl.Name == "Grep" {
			continue
		}
		if _, err := rules.Compile([]rules.Rule{{ID: "r", Tool: tl.Name, When: "has(args.no_such_argument)", Effect: rules.Allow}}, rules.Options{Tools: catalog()}); err == nil {
			t.Errorf("%s: a misspelt argument compiled", tl.Name)
		}
	}
}

func TestFirstMatchDecides(t *testing.T) {
	t.Parallel()
	set := compile(t, "",
		rules.Rule{ID: "ok-ls", Tool: "bash", When: "cmd.programs == ['ls']", Effect: rules.Allow},
		rules.Rule{ID: "no-rm", Tool: "{bash,Bash}", When: "'rm' in cmd.programs", Effect: rules.Deny, Reason: "no rm"},
		rules.Rule{ID: "ask-net", Tool: "bash", When: "cmd.hosts.size() > 0", Effect: rules.Confirm, Reason: "network"},
		rules.Rule{ID: "any-bash", Tool: "bash", Effect: rules.Allow},
		rules.Rule{ID: "never", Tool: "write_chapter", When: "true", Effect: rules.Deny, Reason: "r"},
	)
	cases := []struct {
		tool, command, rule string
		effect              rules.Effect
		unsure              bool
	}{
		{"bash", "ls", "ok-ls", rules.Allow, false},
		{"bash", "ls; rm -rf x", "no-rm", rules.Deny, false},
		{"Bash", "rm x", "no-rm", rules.Deny, false},
		{"bash", "curl -s https://example.com/x -o x", "ask-net", rules.Confirm, false},
		{"bash", "make test", "any-bash", rules.Allow, false},
		// ok-ls is unknown for a program computed at run time: an allow
		// rule needs certainty, so the deny rule after it decides.
		{"bash", "$TOOL -la", "no-rm", rules.Deny, true},
		// Only the first matching rule decides, the others are not asked.
		{"bash", "rm x; curl https://example.com", "no-rm", rules.Deny, false},
	}
	for _, tc := range cases {
		v := call(t, set, tc.tool, `{"command":`+quote(tc.command)+`}`)
		if v.Rule != tc.rule || v.Effect != tc.effect || (v.Unsure != "") != tc.unsure {
			t.Errorf("%s %q: %+v, want %s %s unsure %t", tc.tool, tc.command, v, tc.rule, tc.effect, tc.unsure)
		}
	}
	if set.For("write_todolist") != nil || set.For("github__create_issue") != nil {
		t.Error("rules picked for a tool none of them names")
	}
	if v := call(t, set, "write_chapter", `{"site":"prd","chapter_id":"a","html":""}`); v.Rule != "never" {
		t.Errorf("write_chapter's rule not picked: %+v", v)
	}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestGlobRulesForUpstreamTools(t *testing.T) {
	t.Parallel()
	set := compile(t, "",
		rules.Rule{ID: "gh-write", Tool: "github__*", When: "tool.contains('create') && args.repo == 'prod'", Effect: rules.Confirm, Reason: "prod"},
		rules.Rule{ID: "gh-delete", Tool: "github__delete_repo", Effect: rules.Deny, Reason: "never"},
	)
	if v := call(t, set, "github__create_issue", `{"repo":"prod","n":3}`); v.Rule != "gh-write" {
		t.Errorf("glob rule on an upstream tool: %+v", v)
	}
	if v := call(t, set, "github__create_issue", `{"repo":"dev"}`); v.Decided() {
		t.Errorf("dev repo: %+v", v)
	}
	// An untyped args map has no field repo: the condition fails, so the
	// confirm rule applies, saying why.
	if v := call(t, set, "github__create_thing", `{}`); v.Rule != "gh-write" || !strings.Contains(v.Unsure, "no such key: repo") {
		t.Errorf("absent key: %+v", v)
	}
	if v := call(t, set, "github__delete_repo", `{}`); v.Rule != "gh-delete" {
		t.Errorf("literal rule on an upstream tool: %+v", v)
	}
	if w := compile(t, "", rules.Rule{ID: "typo", Tool: "bsah", Effect: rules.Allow}).Warnings(); len(w) != 1 || !strings.Contains(w[0].Msg, "neither a toolhost nor a Claude CLI built-in") {
		t.Errorf("warnings = %+v", w)
	}
}

func TestAllowNeedsCertainty(t *testing.T) {
	t.Parallel()
	set := compile(t, "",
		rules.Rule{ID: "allow-known", Tool: "Bash", When: "cmd.programs.all(p, p in ['git', 'ls'])", Effect: rules.Allow},
		rules.Rule{ID: "fallback", Tool: "Bash", When: "cmd.unknowable", Effect: rules.Confirm, Reason: "a human reads what toolhost cannot"},
	)
	for command, want := range map[string]string{
		"git status && ls":    "allow-known",
		"git status; $EDITOR": "fallback",
		`eval "$(cat cmd)"`:   "fallback",
		"ls | sh":             "allow-known", // sh is not in the list, but the code it reads (ls' output) is unknown
		"make":                "",
	} {
		v := call(t, set, "Bash", `{"command":`+quote(command)+`}`)
		if command == "ls | sh" {
			// programs holds sh, so all() is false, whatever else runs.
			want = "fallback"
		}
		if v.Rule != want {
			t.Errorf("%q: %+v, want %q", command, v, want)
		}
	}
}

func TestEvaluationErrorsFailClosed(t *testing.T) {
	t.Parallel()
	set := compile(t, "",
		rules.Rule{ID: "allow-div", Tool: "update_runtime_state", When: "1 / (int(args.data.n) - 1) > 0", Effect: rules.Allow},
		rules.Rule{ID: "deny-div", Tool: "update_runtime_state", When: "1 / (int(args.data.n) - 1) > 0", Effect: rules.Deny, Reason: "r"},
	)
	v := call(t, set, "update_runtime_state", `{"data":{"n":1}}`)
	if v.Rule != "deny-div" || !strings.Contains(v.Unsure, "condition failed (division by zero)") {
		t.Fatalf("%+v", v)
	}
	if v := call(t, set, "update_runtime_state", `{"data":{"n":2}}`); v.Rule != "allow-div" || v.Unsure != "" {
		t.Fatalf("%+v", v)
	}
}

func TestEvalTimeout(t *testing.T) {
	t.Parallel()
	set := compile(t, "", rules.Rule{ID: "quadratic", Tool: "port_picker",
		When: "args.units.exists(a, args.units.exists(b, a != b && a == b + 'x'))", Effect: rules.Deny, Reason: "r"})
	units := make([]string, 20000)
	for i := range units {
		units[i] = "u" + strings.Repeat("a", i%7)
	}
	b, _ := json.Marshal(map[string]any{"units": units})
	start := time.Now()
	v := call(t, set, "port_picker", string(b))
	if v.Rule != "quadratic" || !strings.Contains(v.Unsure, "interrupted") {
		t.Fatalf("%+v", v)
	}
	if d := time.Since(start); d > 10*rules.EvalTimeout {
		t.Fatalf("the rule ran %v", d)
	}
}

func TestGlob(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	proj := filepath.Join(root, "proj")
	if err := os.Mkdir(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(root, "link")
	if err := os.Symlink(proj, link); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		path, pattern string
		want          bool
		err           string
	}{
		{"contracts/a.json", "contracts/**", true, ""},
		{"./contracts//a.json", "contracts/*.json", true, ""},
		{"units/../contracts/a.json", "contracts/**", true, ""},
		{proj + "/contracts/a.json", "contracts/**", true, ""},
		{link + "/contracts/a.json", "contracts/**", true, ""},
		{"../proj/contracts/a.json", "contracts/**", true, ""},
		{"../other/contracts/a.json", "contracts/**", false, ""},
		{"/etc/passwd", "contracts/**", false, ""},
		{"/etc/passwd", "/etc/**", true, ""},
		{"contracts/a.json", proj + "/contracts/*", true, ""},
		{"prd-evil/x", "prd/**", false, ""},
		{"", "**", false, ""},
		{proj, "**", false, ""},
		{"a\x00b", "**", false, "NUL byte"},
		{strings.Repeat("a/", 100) + "x", "**", false, "deeper than 64"},
		{"x", "*", true, ""},
	}
	for _, tc := range cases {
		set := compile(t, link, rules.Rule{ID: "g", Tool: "archive_doc", When: "glob(args.path, " + quote(tc.pattern) + ")", Effect: rules.Deny, Reason: "r"})
		v := call(t, set, "archive_doc", `{"path":`+quote(tc.path)+`}`)
		switch {
		case tc.err != "":
			if !strings.Contains(v.Unsure, tc.err) {
				t.Errorf("glob(%q, %q): %+v, want the error %q", tc.path, tc.pattern, v, tc.err)
			}
		case v.Decided() != tc.want || v.Unsure != "":
			t.Errorf("glob(%q, %q) = %+v, want %t", tc.path, tc.pattern, v, tc.want)
		}
	}
}
