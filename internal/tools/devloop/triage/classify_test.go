package triage

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/internal/tool"
)

// ruleCases gives every rule of the table a realistic input of its own.
// Text inputs are classified as text; bug inputs (for rules that need a
// test's history) name a fixture bug.
var ruleCases = []struct {
	rule, text, bug, where string
}{
	{rule: "contract_status", text: "step \"create todo\": status: expected 201, got 200\nbody: {\"id\":1}"},
	{rule: "contract_status", text: "Error: expected 201 \"Created\", got 200 \"OK\"\n    at Test._assertStatus (node_modules/supertest/lib/test.js:252:14)"},
	{rule: "contract_status_declared", text: "AssertionError: expected 200 to be 201 // Object.is equality\n    at /app/src/todos.test.ts:21:28"},
	{rule: "contract_status_declared", text: "POST /todos\nexpect(received).toBe(expected)\n\nExpected: 201\nReceived: 200"},
	{rule: "runtime_panic", text: "panic: runtime error: index out of range [5] with length 2\n\ngoroutine 1 [running]:\nmain.pick(...)\n\t/app/main.go:9"},
	{rule: "runtime_panic", text: "2026/12/01 20:55:25 http: panic serving 127.0.0.1:44424: runtime error: invalid memory address or nil pointer dereference\ngoroutine 24 [running]:"},
	{rule: "runtime_panic", text: "thread 'main' (19238) panicked at src/main.rs:4:21:\nindex out of bounds: the len is 3 but the index is 10"},
	{rule: "contract_field", text: "json_subset: $.todo.done: missing required field done (contract todos, endpoint get-todo)"},
	{rule: "contract_route_404", text: "GET /todos/17 -> 404 Not Found", where: "text"},
	{rule: "assertion_expected_received", text: "AssertionError: expected 3 to be 4 // Object.is equality\n    at /repo/src/sum.js:3:10"},
	{rule: "assertion_expected_received", text: "expect(received).toEqual(expected)\n\nExpected: \"done\"\nReceived: \"open\""},
	{rule: "eaddrinuse", text: "Error: listen EADDRINUSE: address already in use :::3000\n    at Server.setupListenHandle [as _listen2] (node:net:1908:16)"},
	{rule: "econnrefused", text: "FetchError: request to http://127.0.0.1:5432/ failed, reason: connect ECONNREFUSED 127.0.0.1:5432"},
	{rule: "missing_env_var", text: "Error: missing environment variable DATABASE_URL\n    at loadConfig (/app/src/config.js:12:11)"},
	{rule: "missing_env_var", text: "config error: env var JWT_SECRET is not set"},
	{rule: "permission_denied", text: "Error: EACCES: permission denied, open '/var/log/todo.log'"},
	{rule: "passed_and_failed", bug: "BUG-0004", where: "reports/vitest-2.json, reports/vitest-1.json"},
	{rule: "error_in_test_file", text: "TypeError: Cannot read properties of undefined (reading 'items')\n    at /work/units/todo-be/tests/todos.test.js:14:20\n    at file:///work/node_modules/@vitest/runner/dist/chunk-hooks.js:155:11"},
	{rule: "module_not_found", text: "Error: Cannot find module 'left-pad'\nRequire stack:\n- /app/src/server.js\n  code: 'MODULE_NOT_FOUND'"},
	{rule: "local_module_missing", text: "Error: Cannot find module './db' imported from /app/src/server.js\n  code: 'ERR_MODULE_NOT_FOUND'"},
	{rule: "timeout", text: "Error: Test timed out in 5000ms.\nIf this is a long-running test, pass a timeout value as the last argument or configure it globally with \"testTimeout\"."},
	{rule: "snapshot_mismatch", text: "Error: Snapshot `todos > keeps the list shape 1` mismatched"},
	{rule: "runtime_type_error", text: "TypeError: cb is not a function\n    at notify (/app/src/todos.ts:18:3)\n    at /app/src/todos.test.ts:20:5"},
	{rule: "html_for_json", text: "SyntaxError: Unexpected token '<', \"<!doctype \"... is not valid JSON\n    at JSON.parse (<anonymous>)"},
	{rule: "typescript_error", text: "src/todos.ts(3,7): error TS2322: Type 'string' is not assignable to type 'number'."},
	{rule: "unhandled_rejection", text: "Vitest caught 1 unhandled error during the test run.\n⎯⎯ Unhandled Rejection ⎯⎯\nError: write failed: disk quota exceeded"},
	{rule: "syntax_error_in_test_file", text: "Transform failed with 1 error:\n/app/src/syntax.test.ts:4:18: ERROR: Expected \")\" but found \";\""},
	{rule: "syntax_error_in_source", text: "Transform failed with 1 error:\n/app/src/todos.ts:4:18: ERROR: Expected \")\" but found \";\""},
	{rule: "version_mismatch", text: "npm ERR! code ERESOLVE\nnpm ERR! ERESOLVE unable to resolve dependency tree\nnpm ERR! Could not resolve dependency: peer react@\"^17\" from react-dom@17.0.2"},
}

func ruleByID(id string) (rule, bool) {
	for _, r := range rules() {
		if r.ID == id {
			return r, true
		}
	}
	return rule{}, false
}

func TestEachRule(t *testing.T) {
	t.Parallel()
	dir := copyProject(t)
	for _, tc := range ruleCases {
		t.Run(tc.rule, func(t *testing.T) {
			r, ok := ruleByID(tc.rule)
			if !ok {
				t.Fatalf("no rule %q in the table", tc.rule)
			}
			out, err := classify(context.Background(), newCtx(t, dir), ClassifyInput{Text: tc.text, BugID: tc.bug})
			if err != nil {
				t.Fatal(err)
			}
			if out.Category != r.Category {
				t.Errorf("category %s, want %s (signals %+v)", out.Category, r.Category, out.Signals)
			}
			var hit *Signal
			for i, s := range out.Signals {
				if s.Rule == tc.rule {
					hit = &out.Signals[i]
				}
			}
			if hit == nil {
				t.Fatalf("rule %s did not match; signals %+v", tc.rule, out.Signals)
			}
			if hit.Excerpt == "" || hit.Category != r.Category || hit.Weight != r.Weight {
				t.Errorf("signal %+v", hit)
			}
			if tc.where != "" && hit.Where != tc.where {
				t.Errorf("signal found at %q, want %q", hit.Where, tc.where)
			}
			if out.Confidence <= 0 || out.Confidence > 1 {
				t.Errorf("confidence %v", out.Confidence)
			}
		})
	}
}

// Every row of the table has its own case above.
func TestEveryRuleHasACase(t *testing.T) {
	t.Parallel()
	covered := map[string]bool{}
	for _, tc := range ruleCases {
		covered[tc.rule] = true
	}
	for _, r := range rules() {
		if !covered[r.ID] {
			t.Errorf("rule %s has no case in ruleCases", r.ID)
		}
		if (r.Pattern == nil) == (r.Check == nil) {
			t.Errorf("rule %s must have exactly one of Pattern and Check", r.ID)
		}
	}
}

func TestClassifyBugs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		bug, category, signalWhere string
	}{
		{"BUG-0001", CatLogicError, "reports/vitest-2.json:10"},
		{"BUG-0002", CatEnvConfig, "integration/logs/todo-be.err.log:6"},
		{"BUG-0003", CatContractMismatch, "integration/runs/run-0001.json:15"},
		{"BUG-0004", CatFlaky, "reports/vitest-2.json, reports/vitest-1.json"},
		{"BUG-0005", CatTestError, "reports/vitest-2.json:14"},
		{"BUG-0006", CatDependency, "units/todo-be/reports/vitest-deps.json"},
		{"BUG-0009", CatUnknown, ""},
	}
	for _, tt := range tests {
		t.Run(tt.bug, func(t *testing.T) {
			t.Parallel()
			dir := copyProject(t)
			out, err := classify(context.Background(), newCtx(t, dir), ClassifyInput{BugID: tt.bug})
			if err != nil {
				t.Fatal(err)
			}
			if out.Category != tt.category || out.BugID != tt.bug {
				t.Fatalf("%s classified %s, want %s; signals %+v", tt.bug, out.Category, tt.category, out.Signals)
			}
			found := tt.signalWhere == ""
			for _, s := range out.Signals {
				if s.Category == tt.category && s.Where == tt.signalWhere {
					found = true
				}
			}
			if !found {
				t.Errorf("no %s signal at %q: %+v", tt.category, tt.signalWhere, out.Signals)
			}
			var sum Summary
			readJSON(t, dir, SummaryPath, &sum)
			if e := sum.Bugs[tt.bug]; e == nil || e.Category != tt.category || e.Confidence != out.Confidence {
				t.Errorf("summary entry %+v, want category %s confidence %v", e, tt.category, out.Confidence)
			}
		})
	}
}

func TestClassifyNoise(t *testing.T) {
	t.Parallel()
	for _, text := range []string{
		"the settings header looks a bit too blue compared with the mockup",
		"please add dark mode",
		"Expected behaviour: the list scrolls smoothly",
	} {
		out, err := classify(context.Background(), newCtx(t, copyProject(t)), ClassifyInput{Text: text})
		if err != nil {
			t.Fatal(err)
		}
		if out.Category != CatUnknown || out.Confidence != 0 || len(out.Signals) != 0 {
			t.Errorf("%q: %+v", text, out)
		}
	}
}

// When rules of several categories match, the strongest wins and the
// confidence says how contested it was.
func TestClassifyMixedSignals(t *testing.T) {
	t.Parallel()
	text := "Error: listen EADDRINUSE: address already in use :::3000\nAssertionError: expected 500 to be 200"
	out, err := classify(context.Background(), newCtx(t, copyProject(t)), ClassifyInput{Text: text})
	if err != nil {
		t.Fatal(err)
	}
	if out.Category != CatEnvConfig || out.Scores[CatLogicError] != 0.7 || out.Confidence >= 0.9 || out.Confidence <= 0.3 {
		t.Errorf("%+v", out)
	}
}

func TestClassifyNeedsExactlyOneInput(t *testing.T) {
	t.Parallel()
	dir := copyProject(t)
	for _, in := range []ClassifyInput{{}, {Text: "   "}, {BugID: "BUG-0001", Text: "EADDRINUSE"}} {
		_, err := classify(context.Background(), newCtx(t, dir), in)
		var ve *tool.ValidationError
		if !errors.As(err, &ve) || !strings.Contains(ve.Error(), "exactly one of bug_id") {
			t.Errorf("%+v: %v", in, err)
		}
	}
	_, err := classify(context.Background(), newCtx(t, dir), ClassifyInput{BugID: "BUG-0404"})
	if r := failReason(t, err); !strings.Contains(r, "no bug BUG-0404") {
		t.Errorf("reason %q", r)
	}
}
