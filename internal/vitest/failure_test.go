package vitest

import "testing"

func TestClassify(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"AssertionError: expected 1 to be 2":                                             KindAssertion,
		"expected [ 1 ] to have length 2":                                                KindAssertion,
		"\x1b[31mTypeError: x is not a function\x1b[39m":                                 KindTypeError,
		"cb is not a function":                                                           KindTypeError, // Vitest 1 keeps only the message
		"Cannot read properties of undefined (reading 'title')":                          KindTypeError,
		"ReferenceError: y is not defined":                                               KindReferenceError,
		"formatTodo is not defined":                                                      KindReferenceError,
		"Error: Test timed out in 5000ms.":                                               KindTimeout,
		"Error: Hook timed out in 10000ms.":                                              KindTimeout,
		"Error: STACK_TRACE_ERROR":                                                       KindTimeout,
		"Error: Snapshot `a 1` mismatched":                                               KindSnapshot,
		"Error: Cannot find module './x' imported from '/a.ts'":                          KindImportError,
		"Failed to load url ./nope (resolved id: ./nope) in /a.ts":                       KindImportError,
		"SyntaxError: The requested module './a' does not provide an export named 'b'":   KindImportError,
		`SyntaxError: Unexpected token '<', "<!doctype "... is not valid JSON`:           KindSyntaxError,
		"TypeCheckError: Type 'string' is not assignable to type 'number'.":              KindTypeCheck,
		"src/a.ts(3,7): error TS2322: Type 'string' is not assignable to type 'number'.": KindTypeCheck,
		"Error: boom": KindError,
	}
	for msg, want := range cases {
		if got := Classify(msg); got != want {
			t.Errorf("Classify(%q) = %s, want %s", msg, got, want)
		}
	}
}

func TestFramesAndThrown(t *testing.T) {
	t.Parallel()
	text := "TypeError: x\n    at parseUser (/p/src/math.ts:7:28)\n    at /p/src/math.test.ts:9:10\n" +
		"    at file:///p/node_modules/@vitest/runner/dist/index.js:155:11\n    at new Promise (<anonymous>)\n    at node:internal/process/task_queues:95:5"
	fr := Frames(text)
	if len(fr) != 4 || fr[0].Func != "parseUser" || fr[0].File != "/p/src/math.ts" || fr[0].Line != 7 || fr[2].File != "/p/node_modules/@vitest/runner/dist/index.js" {
		t.Fatalf("frames = %+v", fr)
	}
	if got := thrownAt(fr, "/p/src/math.test.ts"); got != "/p/src/math.ts:7" {
		t.Errorf("thrown = %q", got)
	}
	if got := frameLineIn(fr, "src/math.test.ts"); got != 9 {
		t.Errorf("line in the test file = %d", got)
	}
	if got := thrownAt(fr[1:], "/p/src/math.test.ts"); got != "" {
		t.Errorf("an error thrown in the test itself has no other place: %q", got)
	}
}
