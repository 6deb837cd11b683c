// Package vitesttest runs a real Vitest suite at test time, for the tests of
// the tools that read Vitest reports: it writes a small TypeScript unit with
// every kind of failure real suites produce, runs one of the Vitest versions
// scripts/deps/60-vitest.sh installs, and returns the JSON report and what
// Vitest printed. Nothing here is a fixture: each report is made by Vitest
// in the test that reads it.
//
// It is imported by tests only.
package vitesttest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/internal/vitest"
)

// Versions are the Vitest major versions the tests run.
var Versions = []int{1, 3, 4}

const install = "make deps (or bash scripts/deps/60-vitest.sh)"

// NodeModules returns .deps/vitest<major>/node_modules, skipping the test
// (failing it under CI) when that Vitest is not installed.
func NodeModules(t testing.TB, major int) string {
	t.Helper()
	bin := testutil.NeedDeps(t, fmt.Sprintf(".deps/vitest%d/node_modules/.bin/vitest", major), install)
	return filepath.Dir(filepath.Dir(bin))
}

// Result is one Vitest run.
type Result struct {
	Major int
	// Dir is where the suite was written and run.
	Dir string
	// Report is the JSON report Vitest wrote.
	Report []byte
	// Console is what the default reporter printed, colour codes removed.
	Console string
}

// Run writes files (paths relative to dir) into dir, links node_modules to
// the given Vitest and runs `vitest run` with the JSON and the default
// reporter; env is added to the environment. Vitest exits non-zero when
// tests fail; that is expected and not an error here.
func Run(t testing.TB, major int, dir string, files map[string]string, env ...string) Result {
	t.Helper()
	nm := NodeModules(t, major)
	for rel, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(nm, filepath.Join(dir, "node_modules")); err != nil && !os.IsExist(err) {
		t.Fatal(err)
	}
	report := filepath.Join(t.TempDir(), "report.json")
	// A bound against a hang, not a speed check: the 5,000-test
	// LargeSuite takes minutes on a loaded machine.
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(nm, ".bin", "vitest"), "run",
		"--reporter=json", "--reporter=default", "--outputFile.json="+report)
	cmd.Dir = dir
	// CI=true keeps Vitest from writing mismatched inline snapshots back
	// into the test files, so a snapshot failure stays a failure.
	cmd.Env = append(os.Environ(), append([]string{"CI=true", "NO_COLOR=1", "FORCE_COLOR=0"}, env...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	_ = cmd.Run()
	data, err := os.ReadFile(report)
	if err != nil || len(data) == 0 {
		t.Fatalf("vitest %d wrote no report (%v):\n%s", major, err, out.String())
	}
	return Result{Major: major, Dir: dir, Report: data, Console: vitest.StripANSI(out.String())}
}

// DeadPort returns a loopback port nothing listens on.
func DeadPort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return port
}

// Counts is the "Tests" summary line Vitest printed.
type Counts struct{ Failed, Passed, Skipped, Todo, Total int }

var (
	testsLine = regexp.MustCompile(`(?m)^\s*Tests\s+(.*)\((\d+)\)\s*$`)
	countPart = regexp.MustCompile(`(\d+) (failed|passed|skipped|todo)`)
)

// ConsoleCounts reads the "Tests  1 failed | 2 passed (3)" line.
func (r Result) ConsoleCounts(t testing.TB) Counts {
	t.Helper()
	m := testsLine.FindStringSubmatch(r.Console)
	if m == nil {
		t.Fatalf("vitest %d printed no Tests line:\n%s", r.Major, r.Console)
	}
	var c Counts
	c.Total, _ = strconv.Atoi(m[2])
	for _, p := range countPart.FindAllStringSubmatch(m[1], -1) {
		n, _ := strconv.Atoi(p[1])
		switch p[2] {
		case "failed":
			c.Failed = n
		case "passed":
			c.Passed = n
		case "skipped":
			c.Skipped = n
		case "todo":
			c.Todo = n
		}
	}
	return c
}

// Printed reports whether Vitest printed s (colour codes removed).
func (r Result) Printed(s string) bool { return strings.Contains(r.Console, s) }

// UnitRun is Suite run inside a project, as a tester would: the unit at
// units/<unit>/, the report copied to ReportRel.
type UnitRun struct {
	Result
	// ReportRel is the project-relative report path: reports/vitest<major>.json.
	ReportRel string
	// UnitDir is the project-relative unit directory.
	UnitDir string
	// DeadPort is where the orders test's beforeAll found nothing listening.
	DeadPort int
}

// RunUnit runs Suite in projectDir/units/<unit>/ with the given Vitest and
// stores the report under projectDir/reports/.
func RunUnit(t testing.TB, major int, projectDir, unit string) UnitRun {
	t.Helper()
	port := DeadPort(t)
	unitDir := "units/" + unit
	res := Run(t, major, filepath.Join(projectDir, filepath.FromSlash(unitDir)), Suite, fmt.Sprintf("PGPORT=%d", port))
	rel := fmt.Sprintf("reports/vitest%d.json", major)
	p := filepath.Join(projectDir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, res.Report, 0o644); err != nil {
		t.Fatal(err)
	}
	return UnitRun{Result: res, ReportRel: rel, UnitDir: unitDir, DeadPort: port}
}
