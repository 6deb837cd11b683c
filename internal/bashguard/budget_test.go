package bashguard

import (
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"
)

// budgetCases are commands built to exhaust the guard: each must be
// refused, never allowed, quickly and in bounded memory.
var budgetCases = map[string]string{
	"doubling a variable":         "a=xxxxxxxx; " + strings.Repeat("a=$a$a; ", 30) + "echo $a",
	"nested groups":               strings.Repeat("{ ", 16000) + "true; " + strings.Repeat("} ", 16000),
	"nested substitutions":        strings.Repeat("$( ", 10000) + "true " + strings.Repeat(")", 10000),
	"nested ifs":                  strings.Repeat("if :; then ", 4000) + ":; " + strings.Repeat("fi; ", 4000),
	"nested quotes":               strings.Repeat(`"$(`, 5000) + strings.Repeat(`)"`, 5000),
	"nested subshells":            strings.Repeat("(", 20000) + "true" + strings.Repeat(")", 20000),
	"nested arithmetic":           "echo $((" + strings.Repeat("(", 20000) + "1" + strings.Repeat(")", 20000) + "))",
	"nested defaults":             "echo " + strings.Repeat("${x:-", 5000) + "y" + strings.Repeat("}", 5000),
	"brace groups":                "echo " + strings.Repeat("{a,b}", 40),
	"brace range":                 "echo {1..999999999}",
	"many references":             "a=" + strings.Repeat("x", 60000) + "; echo " + strings.Repeat("$a", 1000),
	"replacement multiplies":      "a=" + strings.Repeat("x", 1000) + `; echo "${a//?/$a}"`,
	"growing by appending":        "a=" + strings.Repeat("x", 30000) + "; " + strings.Repeat("a+=$a; ", 100),
	"nested eval":                 strings.Repeat("eval ", 20) + "true",
	"many function calls":         "f(){ g; g; g; g; }; g(){ h; h; h; h; }; h(){ :; :; }; " + strings.Repeat("f; ", 100),
	"array index beyond":          `B[99999999]='{"a":1}'; curl -d "${B[99999999]}" http://x`,
	"statements beyond the steps": strings.Repeat("for i in 1 2 3 4 5 6 7 8; do ", 2) + strings.Repeat(":;", 6000) + strings.Repeat(" done;", 2),
}

func TestBudget(t *testing.T) {
	for name, cmd := range budgetCases {
		t.Run(name, func(t *testing.T) {
			if len(cmd) > MaxCommandLen {
				t.Fatalf("the case is %d bytes; keep it under MaxCommandLen so that it tests the budget, not the length limit", len(cmd))
			}
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			start := time.Now()
			err := Check(cmd)
			took := time.Since(start)
			runtime.ReadMemStats(&after)
			if !errors.Is(err, ErrTooComplex) {
				t.Fatalf("Check = %.200v, want ErrTooComplex", err)
			}
			if !strings.Contains(err.Error(), "run the inner command directly") {
				t.Errorf("message does not say what to do: %v", err)
			}
			// These are refused by the size, nesting and step limits in
			// milliseconds and a few MiB, never by the clock (MaxTime, the
			// backstop a loaded machine may reach first); the bound on the
			// time is generous so that the shared machine never makes this
			// flake.
			if strings.Contains(err.Error(), "longer than") {
				t.Errorf("refused by the clock, not by the budget: %v", err)
			}
			if took > 2*MaxTime {
				t.Errorf("took %v, want under %v", took, 2*MaxTime)
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 256<<20 {
				t.Errorf("allocated %d MiB, want under 256 MiB", alloc>>20)
			}
			t.Logf("refused in %v, %.1f MiB allocated", took.Round(time.Millisecond), float64(after.TotalAlloc-before.TotalAlloc)/(1<<20))
		})
	}
}

// TestBudgetAllowsRealCommands: long but ordinary commands stay within the
// budget.
func TestBudgetAllowsRealCommands(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"a long script":     strings.Repeat("go test ./internal/... -run TestX && echo ok\n", 400),
		"a big heredoc":     "cat > data.txt <<'EOF'\n" + strings.Repeat("line of text with {braces} and \"quotes\"\n", 1300) + "EOF",
		"a loop over items": "for f in " + strings.Repeat("file.go ", 2000) + "; do gofmt -l \"$f\"; done",
		"nested loops":      "for a in 1 2 3; do for b in 1 2 3; do for c in 1 2 3; do echo $a$b$c; done; done; done",
		"a brace list":      "mkdir -p dir/{a,b,c}/{x,y,z}/{1..9}",
	}
	for name, cmd := range cases {
		if err := Check(cmd); err != nil {
			t.Errorf("%s: refused: %.300v", name, err)
		}
	}
}
