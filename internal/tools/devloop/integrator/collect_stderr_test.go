package integrator

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/internal/testutil/crash"
)

func TestCollectStderrSignatures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		log   string
		kinds []string
		lines []int
	}{
		{"go panic", "starting\npanic: runtime error: index out of range [3] with length 2\n\ngoroutine 1 [running]:\nmain.main()\n",
			[]string{"go_panic"}, []int{2}},
		{"node error with stack and EADDRINUSE, once", "Server starting\nError: listen EADDRINUSE: address already in use 127.0.0.1:3000\n    at Server.setupListenHandle [as _listen2] (node:net:1817:16)\n    at listenInCluster (node:net:1865:12)\n",
			[]string{"eaddrinuse"}, []int{2}},
		{"node TypeError with code", "/app/src/x.js:3\nTypeError [ERR_INVALID_ARG_TYPE]: bad\n\n    at f (/app/src/x.js:3:9)\n",
			[]string{"node_error"}, []int{2}},
		{"error without a stack is not a node error", "Error: config missing\nbye\n", nil, nil},
		{"unhandled rejection", "[UnhandledPromiseRejection: This error originated either by throwing inside of an async function]\n",
			[]string{"unhandled_rejection"}, []int{1}},
		{"python traceback", "Traceback (most recent call last):\n  File \"app.py\", line 3, in <module>\n    main()\nValueError: bad port\n",
			[]string{"python_traceback"}, []int{1}},
		{"rust panic as Debian's rustc prints it, and before 1.73", "thread 'main' panicked at src/main.rs:4:20:\nindex out of bounds\nnote: run with `RUST_BACKTRACE=1`\n" +
			"thread 'worker' panicked at 'called `Option::unwrap()` on a `None` value', src/db.rs:9:5\n", []string{"rust_panic", "rust_panic"}, []int{1, 4}},
		{"go trace with elided frames and a runtime stack", "fatal error: stack overflow\n\nruntime stack:\nruntime.throw({0x4b2, 0x0})\n\t/go/src/runtime/panic.go:1101 +0x48\n\ngoroutine 1 gp=0xc000002380 m=0 [running]:\nmain.f(...)\n\t/app/main.go:5\n...additional frames elided...\nserving again\n",
			[]string{"go_panic"}, []int{1}},
		{"a shell's signal reports", "bash: line 1:  4242 Segmentation fault      (core dumped) ./native\nKilled\n", []string{"killed", "killed"}, []int{1, 2}},
		{"only the current run counts", "panic: old crash\n" + startMarker + "api at now: x ===\nall good\n", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			if err := e.c.Files.WriteFile(ErrLog("api"), []byte(tt.log)); err != nil {
				t.Fatal(err)
			}
			out, err := collectStderr(context.Background(), e.c, CollectStderrInput{Units: []string{"api"}, TailLines: 2})
			if err != nil || !out.OK || len(out.Units) != 1 {
				t.Fatalf("collect_stderr = %+v, %v", out, err)
			}
			u := out.Units[0]
			if len(u.Signatures) != len(tt.kinds) {
				t.Fatalf("signatures = %+v, want kinds %v", u.Signatures, tt.kinds)
			}
			for i, s := range u.Signatures {
				if s.Kind != tt.kinds[i] || s.Line != tt.lines[i] {
					t.Fatalf("signature %d = %+v, want %s at line %d", i, s, tt.kinds[i], tt.lines[i])
				}
			}
			lines := strings.Split(strings.TrimSuffix(tt.log, "\n"), "\n")
			if u.TotalLines != len(lines) || len(u.Tail) != min(2, len(lines)) || u.Tail[len(u.Tail)-1].N != len(lines) {
				t.Fatalf("tail = %+v (total %d), want the last 2 of %d lines", u.Tail, u.TotalLines, len(lines))
			}
			if tt.name == "python traceback" && u.Signatures[0].Summary != "ValueError: bad port" {
				t.Fatalf("summary = %q", u.Signatures[0].Summary)
			}
		})
	}
}

func TestCollectStderrDefaultsToKnownUnits(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, u := range []string{"web", "api"} {
		if err := e.c.Files.WriteFile(ErrLog(u), []byte("line\n")); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.c.Shared.WriteJSON(UnitsPath, UnitsFile{Units: map[string]*UnitRecord{"db": {ID: "db"}}}); err != nil {
		t.Fatal(err)
	}
	out, err := collectStderr(context.Background(), e.c, CollectStderrInput{})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, u := range out.Units {
		ids = append(ids, u.Unit)
	}
	if strings.Join(ids, ",") != "api,db,web" || out.Units[1].Exists || !out.Units[0].Exists {
		t.Fatalf("units = %+v", out.Units)
	}
}

// TestCollectStderrOnRealCrashes: the stderr of real crashed processes —
// Node with a missing module, Node on a port in use, Node with an unhandled
// rejection, a Go panic in a goroutine, a Python traceback — gives each
// error once, at the line it starts, with its trace.
func TestCollectStderrOnRealCrashes(t *testing.T) {
	t.Parallel()
	inUse, port := crash.NodeAddrInUse(t)
	cases := []struct {
		name, stderr, kind string
		text, trace        string // in the signature's Text and in its Trace
	}{
		{"node missing module", crash.NodeMissingModule(t), "module_not_found", "Error: Cannot find module 'pg-pool-missing'", "/db.js"},
		{"node port in use", inUse, "eaddrinuse", fmt.Sprintf("EADDRINUSE: address already in use 127.0.0.1:%d", port), "at Server.setupListenHandle"},
		{"node unhandled rejection", crash.NodeUnhandledRejection(t), "unhandled_rejection", "UnhandledPromiseRejection", "ERR_UNHANDLED_REJECTION"},
		{"go panic", crash.GoPanic(t), "go_panic", "panic: runtime error: index out of range", "main.pick("},
		{"python traceback", crash.PythonTraceback(t), "python_traceback", "Traceback (most recent call last):", "return int(v)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			log := "starting\n" + tc.stderr
			if err := e.c.Files.WriteFile(ErrLog("api"), []byte(log)); err != nil {
				t.Fatal(err)
			}
			out, err := collectStderr(context.Background(), e.c, CollectStderrInput{Units: []string{"api"}})
			if err != nil || !out.OK {
				t.Fatalf("collect_stderr = %+v, %v", out, err)
			}
			sigs := out.Units[0].Signatures
			if len(sigs) != 1 {
				t.Fatalf("signatures = %+v; want exactly one %s in:\n%s", sigs, tc.kind, tc.stderr)
			}
			sg := sigs[0]
			lines := strings.Split(log, "\n")
			if sg.Kind != tc.kind || !strings.Contains(sg.Text+" "+sg.Summary, tc.text) || !strings.Contains(strings.Join(sg.Trace, "\n"), tc.trace) ||
				sg.Line < 1 || lines[sg.Line-1] != sg.Text {
				t.Fatalf("signature = %+v; want %s at its line saying %q with %q in the trace, in:\n%s", sg, tc.kind, tc.text, tc.trace, tc.stderr)
			}
			if tc.kind == "python_traceback" && !strings.HasPrefix(sg.Summary, "ValueError: invalid literal for int()") {
				t.Errorf("summary = %q, want the exception line", sg.Summary)
			}
		})
	}
}

// TestCollectStderrOnRealRuntimes: crashes as the runtimes print them, made
// by the real programs in the test — Go's fatal concurrent map writes,
// net/http recovering a handler's panic on three requests, a Python server
// printing one traceback per request, a chained Python exception, a Rust
// panic with and without a backtrace, V8 out of heap, a process the shell
// saw killed — each one signature, with what names it, where in the
// program's own code it happened and how often it was printed.
func TestCollectStderrOnRealRuntimes(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		stderr func(t testing.TB) string
		want   Signature // Kind, Count and the parts of Text, Summary, Cause and At to find
		trace  string    // in the trace
	}{
		{"go concurrent map writes", crash.GoConcurrentMapWrites,
			Signature{Kind: SigGoPanic, Text: "fatal error: concurrent map writes", At: "main.go:17", Count: 1}, "main.count("},
		{"net/http handler panic, three requests", func(t testing.TB) string { return crash.GoHTTPHandlerPanic(t, 3) },
			Signature{Kind: SigGoPanic, Text: "http: panic serving 127.0.0.1:", Summary: "nil pointer dereference", At: "main.go:14", Count: 3}, "main.show("},
		{"python server, three tracebacks", func(t testing.TB) string { return crash.PythonServerTracebacks(t, 3) },
			Signature{Kind: SigPython, Text: "Traceback (most recent call last):", Summary: "ZeroDivisionError: integer division or modulo by zero", At: "server.py:6", Count: 3}, "pages = 10 // per_page"},
		{"python chained exception", crash.PythonChainedException,
			Signature{Kind: SigPython, Text: "Traceback (most recent call last):", Summary: "NameError: name 'fallback_host' is not defined", Cause: "KeyError: 'host'", At: "config.py:15", Count: 1},
			"During handling of the above exception, another exception occurred:"},
		{"rust panic", func(t testing.TB) string { return crash.RustPanic(t, false) },
			Signature{Kind: SigRustPanic, Text: "panicked at src/main.rs:4:", Summary: "index out of bounds: the len is 2 but the index is 5", At: "src/main.rs:4", Count: 1}, "RUST_BACKTRACE"},
		{"rust panic with a backtrace", func(t testing.TB) string { return crash.RustPanic(t, true) },
			Signature{Kind: SigRustPanic, Text: "panicked at src/main.rs:4:", Summary: "index out of bounds: the len is 2 but the index is 5", At: "src/main.rs:4", Count: 1}, "stack backtrace:"},
		{"v8 heap out of memory", crash.NodeHeapOutOfMemory,
			Signature{Kind: SigOutOfMemory, Summary: "JavaScript heap out of memory", Count: 1}, "Native stack trace"},
		{"shell reports the process killed", crash.ShellKilled,
			Signature{Kind: SigKilledBySignal, Text: "Killed", Summary: "SIGKILL", Count: 1}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			stderr := tc.stderr(t)
			e := newEnv(t)
			log := "starting\n" + stderr
			if err := e.c.Files.WriteFile(ErrLog("api"), []byte(log)); err != nil {
				t.Fatal(err)
			}
			out, err := collectStderr(context.Background(), e.c, CollectStderrInput{Units: []string{"api"}})
			if err != nil || !out.OK {
				t.Fatalf("collect_stderr = %+v, %v", out, err)
			}
			sigs := out.Units[0].Signatures
			if len(sigs) != 1 {
				t.Fatalf("signatures = %+v; want exactly one %s in:\n%s", sigs, tc.want.Kind, stderr)
			}
			sg, w := sigs[0], tc.want
			lines := strings.Split(log, "\n")
			if sg.Kind != w.Kind || sg.Count != w.Count || !strings.Contains(sg.Text, w.Text) || !strings.Contains(sg.Summary, w.Summary) ||
				!strings.Contains(sg.Cause, w.Cause) || (w.Cause == "") != (sg.Cause == "") || !strings.HasSuffix(sg.At, w.At) ||
				!strings.Contains(strings.Join(sg.Trace, "\n"), tc.trace) || sg.Line < 2 || lines[sg.Line-1] != sg.Text {
				t.Fatalf("signature = %+v\nwant %+v with %q in the trace, in:\n%s", sg, w, tc.trace, stderr)
			}
			if w.Count > 1 && (sg.LastLine <= sg.Line || !strings.Contains(lines[sg.LastLine-1], strings.Fields(w.Text)[0])) {
				t.Errorf("last_line = %d; want the line of the last of the %d reports", sg.LastLine, w.Count)
			}
		})
	}
}
