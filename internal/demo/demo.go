package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/toolhost/toolhost/internal/audit"
)

// Options configure one demo run.
type Options struct {
	// Bin is the toolhost binary every agent session, hook, guard and the
	// unit run as; default: the running executable.
	Bin string
	// ProjectDir is where the project is built. Empty: a new temp dir,
	// removed at the end unless Keep. A given dir is always kept and must be
	// empty or absent.
	ProjectDir string
	// Keep keeps the temp project dir.
	Keep bool
	// AgentsFile replaces the embedded agents file (serve and hook --agents).
	AgentsFile string
	// Out receives the timeline and the summary; default io.Discard.
	Out io.Writer
	// Progress passes a progressToken on the long calls (spawn_units,
	// health_wait, run_case) and draws their notifications on one updating
	// line; meant for a terminal.
	Progress bool
	// Timeout bounds the whole run; default 3 minutes.
	Timeout time.Duration
	// Started, when set, is called with the project dir once it exists and
	// before any agent starts (toolhost demo --dashboard opens the
	// dashboard on it there); an error stops the demo.
	Started func(projectDir string) error
}

// ErrProjectDir marks a --project-dir the demo cannot build in (not empty,
// not a directory).
var ErrProjectDir = errors.New("unusable project dir")

// Refusal is a call a gate refused, as the demo expected.
type Refusal struct {
	Agent   string // short agent name
	Gate    string // sandbox, policy or guard
	Message string // what the gate said
}

// Summary is what a finished demo reports.
type Summary struct {
	ProjectDir    string    // the project dir (gone unless Kept)
	Kept          bool      // whether ProjectDir is still there
	Servers       int       // toolhost serve processes started
	Calls         int       // tools/call requests sent
	HookChecks    int       // PreToolUse hook runs
	GuardRuns     int       // toolhost guard runs
	Refused       []Refusal // refusals the demo provoked on purpose
	AuditRows     int       // lines of .toolhost/audit.ndjson
	AuditRejected int       // audit rows with status rejected
	ProgressNotes int       // progress notifications drawn
	Artifacts     []string  // key project-relative files, all present
	Bugs          []string  // bug ids opened
	RunFile       string    // project-relative run_case record
	PRDIndex      string    // file:// URL of prd/index.html
}

// StepError is a step that did not do what it should.
type StepError struct {
	Agent string
	Step  string
	Err   error
}

func (e *StepError) Error() string {
	return fmt.Sprintf("demo step [%s] %s failed: %v", e.Agent, e.Step, e.Err)
}

func (e *StepError) Unwrap() error { return e.Err }

// runner holds one run's state: the facts agents hand to each other and
// the counters of the summary.
type runner struct {
	o   Options
	dir string
	env []string // childEnv, for every process the demo starts
	sum Summary
	mu  sync.Mutex // serialises writes to o.Out (progress is drawn from a goroutine)

	prdUnits    map[string][]string // PRD chapter page → its unit ids, as write_chapter returned them
	contractSHA string
	unit        unitRun
	failures    []vitestFailure
	hookFailure vitestFailure // the beforeAll that cannot reach its database
	testerBugs  []string
	hookBug     string
	deleteBug   string
}

// unitRun is what the Integrator learned about the running unit.
type unitRun struct {
	port  int
	pgid  int
	runID string
}

// Run plays the scripted devloop and returns its summary. The error is a
// *StepError naming the first step that did not do what it should.
func Run(ctx context.Context, o Options) (*Summary, error) {
	if o.Out == nil {
		o.Out = io.Discard
	}
	if o.Timeout <= 0 {
		o.Timeout = 3 * time.Minute
	}
	if o.Bin == "" {
		bin, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("find the toolhost binary: %w", err)
		}
		o.Bin = bin
	}
	if o.AgentsFile != "" {
		abs, err := filepath.Abs(o.AgentsFile)
		if err != nil {
			return nil, err
		}
		o.AgentsFile = abs
	}
	dir, cleanup, err := projectDir(o)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	r := &runner{o: o, dir: dir, env: slices.Clip(childEnv()), prdUnits: map[string][]string{}}
	r.sum.ProjectDir = dir
	if o.Started != nil {
		if err := o.Started(dir); err != nil {
			if cleanup != nil {
				_ = cleanup()
			}
			return nil, err
		}
	}
	fmt.Fprintf(o.Out, "toolhost demo: a scripted devloop, six agents over MCP stdio\nproject dir: %s\n\n", dir)
	err = r.play(ctx)
	if cleanup != nil {
		if cerr := cleanup(); cerr != nil && err == nil {
			err = fmt.Errorf("remove the temp project dir: %w", cerr)
		}
	} else {
		r.sum.Kept = true
	}
	if err != nil {
		if !r.sum.Kept {
			err = fmt.Errorf("%w (rerun with --keep to inspect the project)", err)
		}
		return &r.sum, err
	}
	r.printSummary()
	return &r.sum, nil
}

// projectDir returns the dir to build in and, for a temp dir not kept, the
// function that removes it.
func projectDir(o Options) (string, func() error, error) {
	if o.ProjectDir == "" {
		dir, err := os.MkdirTemp("", "toolhost-demo-")
		if err != nil {
			return "", nil, err
		}
		if dir, err = filepath.EvalSymlinks(dir); err != nil {
			return "", nil, err
		}
		if o.Keep {
			return dir, nil, nil
		}
		return dir, func() error { return os.RemoveAll(dir) }, nil
	}
	dir, err := filepath.Abs(o.ProjectDir)
	if err != nil {
		return "", nil, err
	}
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", nil, fmt.Errorf("%w: --project-dir %s: %w", ErrProjectDir, o.ProjectDir, err)
		}
	case err != nil:
		return "", nil, fmt.Errorf("%w: --project-dir %s: %w", ErrProjectDir, o.ProjectDir, err)
	case len(entries) > 0:
		return "", nil, fmt.Errorf("%w: --project-dir %s is not empty; give an empty or new directory (the demo builds a whole project there), or leave the flag out for a temp dir", ErrProjectDir, o.ProjectDir)
	}
	return dir, nil, nil
}

// play runs the six agents in devloop order, then checks the project.
func (r *runner) play(ctx context.Context) error {
	for _, a := range []struct {
		agent, unit string
		steps       func(*agentSession) []step
	}{
		{"pm", "", r.pmSteps},
		{"architect", "", r.architectSteps},
		{"coder", "todo-be", r.coderSteps},
		{"tester", "todo-be", r.testerSteps},
		{"integrator", "todo-be", r.integratorSteps},
		{"bug-triager", "", r.triagerSteps},
	} {
		if err := r.session(ctx, a.agent, a.unit, a.steps); err != nil {
			return err
		}
	}
	return r.step("demo", "check the project", r.checkProject)
}

// step is one line of the timeline.
type step struct {
	name string
	run  func() (string, error)
}

// session runs one agent's steps in its own `toolhost serve`, and stops
// the server however the steps end.
func (r *runner) session(ctx context.Context, agent, unit string, steps func(*agentSession) []step) (err error) {
	s, err := r.startSession(ctx, agent, unit)
	if err != nil {
		r.line(agent, "✗", "toolhost serve", err.Error())
		return &StepError{Agent: agent, Step: "toolhost serve", Err: err}
	}
	r.line(agent, "✓", "toolhost serve", fmt.Sprintf("pid %d, --agent %s%s, initialized", s.c.Process().PID, agent, unitFlag(unit)))
	defer func() {
		if cerr := s.close(); cerr != nil && err == nil {
			r.line(agent, "✗", "stop serve", cerr.Error())
			err = &StepError{Agent: agent, Step: "stop serve", Err: cerr}
		}
	}()
	for _, st := range steps(s) {
		if err := r.step(agent, st.name, st.run); err != nil {
			return err
		}
	}
	return nil
}

func unitFlag(unit string) string {
	if unit == "" {
		return ""
	}
	return " --unit " + unit
}

func (r *runner) step(agent, name string, run func() (string, error)) error {
	detail, err := run()
	if err != nil {
		r.line(agent, "✗", name, err.Error())
		return &StepError{Agent: agent, Step: name, Err: err}
	}
	r.line(agent, "✓", name, detail)
	return nil
}

// line prints one timeline line: agent, mark, step, detail.
func (r *runner) line(agent, mark, name, detail string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fmt.Fprintf(r.o.Out, "%-13s %s %-24s %s\n", "["+agent+"]", mark, name, detail)
}

// progressLine redraws the progress line of a long call.
func (r *runner) progressLine(agent, tool string, progress, total float64, msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if msg == "" {
		msg = fmt.Sprintf("%g", progress)
		if total > 0 {
			msg += fmt.Sprintf("/%g", total)
		}
	}
	// Clipped so the line never wraps on a common terminal: a wrapped line
	// cannot be redrawn with \r.
	fmt.Fprintf(r.o.Out, "\r\033[K%-13s … %-24s %s", "["+agent+"]", tool, clip(msg, 40))
}

func (r *runner) clearProgress() {
	r.mu.Lock()
	defer r.mu.Unlock()
	fmt.Fprint(r.o.Out, "\r\033[K")
}

// checkProject checks what the agents left on disk: every key artifact
// present and one audit row per call.
func (r *runner) checkProject() (string, error) {
	var missing []string
	for _, a := range r.sum.Artifacts {
		if !exists(r.dir, a) {
			missing = append(missing, a)
		}
	}
	if len(missing) > 0 {
		return "", fmt.Errorf("artifacts missing: %s", strings.Join(missing, ", "))
	}
	rows, rejected, err := r.auditRows()
	if err != nil {
		return "", err
	}
	r.sum.AuditRows, r.sum.AuditRejected = rows, rejected
	// Every tools/call is audited, refused ones included (the guard refusal
	// came from the command line, not a call), and so is every decision of
	// the PreToolUse hook on the CLI's own writes.
	if rows != r.sum.Calls+r.sum.HookChecks {
		return "", fmt.Errorf(".toolhost/audit.ndjson has %d rows for %d calls and %d hook decisions; every one must be audited once", rows, r.sum.Calls, r.sum.HookChecks)
	}
	if rejected != 2 {
		return "", fmt.Errorf(".toolhost/audit.ndjson has %d rejected rows; want 2 (the sandbox and the policy refusals)", rejected)
	}
	r.sum.PRDIndex = (&url.URL{Scheme: "file", Path: filepath.ToSlash(filepath.Join(r.dir, "prd", "index.html"))}).String()
	return fmt.Sprintf("%d artifacts present, %d audit rows for %d calls and %d hook decisions", len(r.sum.Artifacts), rows, r.sum.Calls, r.sum.HookChecks), nil
}

// auditRows counts the audit trail's rows and the rejected ones, and checks
// that its hash chain verifies.
func (r *runner) auditRows() (rows, rejected int, err error) {
	bad, err := audit.Each(r.dir, audit.Filter{}, func(row *audit.Row) error {
		rows++
		if row.Status == audit.StatusRejected {
			rejected++
		}
		return nil
	})
	if err != nil {
		return 0, 0, fmt.Errorf("audit trail: %w", err)
	}
	if bad.Count > 0 {
		return 0, 0, fmt.Errorf("audit trail: %s", bad)
	}
	v, err := audit.Verify(r.dir)
	if err != nil {
		return 0, 0, err
	}
	if v.Problem != nil {
		return 0, 0, fmt.Errorf("audit verify: %s: %s", v.Problem.Kind, v.Problem.Error())
	}
	return rows, rejected, nil
}

// artifact records a key file for the summary (checked at the end).
func (r *runner) artifact(rel ...string) {
	r.sum.Artifacts = append(r.sum.Artifacts, rel...)
}

func (r *runner) printSummary() {
	s := &r.sum
	w := r.o.Out
	gates := make([]string, len(s.Refused))
	for i, f := range s.Refused {
		gates[i] = f.Gate + " (" + f.Agent + ")"
	}
	fmt.Fprintf(w, "\nsummary\n")
	fmt.Fprintf(w, "  calls made           %d tools/call over JSON-RPC to %d toolhost serve processes (+ %d PreToolUse hook checks, %d toolhost guard runs)\n",
		s.Calls, s.Servers, s.HookChecks, s.GuardRuns)
	fmt.Fprintf(w, "  refused as expected  %d: %s\n", len(s.Refused), strings.Join(gates, ", "))
	fmt.Fprintf(w, "  audit rows           %d in .toolhost/audit.ndjson (%d rejected)\n", s.AuditRows, s.AuditRejected)
	fmt.Fprintf(w, "  bugs                 %s\n", strings.Join(s.Bugs, ", "))
	fmt.Fprintf(w, "  artifacts written\n")
	for _, a := range s.Artifacts {
		fmt.Fprintf(w, "    %s\n", a)
	}
	if s.Kept {
		fmt.Fprintf(w, "  PRD site             %s\n", s.PRDIndex)
	} else {
		fmt.Fprintf(w, "  PRD site             removed with the temp project dir; run `toolhost demo --keep` to open it\n")
	}
}
