package safety

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/toolhost/toolhost/internal/callctx"
	"github.com/toolhost/toolhost/internal/confine"
	"github.com/toolhost/toolhost/internal/tool"
)

// Limits of the bash tool.
const (
	DefaultBashTimeout = 120 * time.Second
	MaxBashTimeout     = 600 * time.Second
	// OutputCap is how much of each stream is kept: the first and the last
	// OutputCap/2 bytes, with a marker saying how much was dropped between.
	OutputCap = 64 << 10
	// waitDelay bounds how long output is still read after the group is
	// stopped, in case a process that left the group keeps the pipes open.
	waitDelay = 2 * time.Second
	// bashGrace is what the command's group gets between SIGTERM and
	// SIGKILL on a timeout, a cancel, or for jobs it left behind.
	bashGrace = time.Second
)

// BashInput is a shell command to run.
type BashInput struct {
	Command   string `json:"command" jsonschema:"minLength=1,maxLength=65536" jsonschema_description:"the command line, run with bash -c in this agent's working directory; inline JSON for HTTP clients is refused: write it to a file and pass the file (curl -d @file)"`
	TimeoutMS int    `json:"timeout_ms,omitempty" jsonschema:"minimum=1,maximum=600000" jsonschema_description:"stop the command (and everything it started) after this many milliseconds; default 120000, at most 600000"`
}

// BashOutput is what the command did.
type BashOutput struct {
	tool.Status
	ExitCode   int            `json:"exit_code" jsonschema_description:"the exit status; -1 when the command was killed"`
	Stdout     string         `json:"stdout" jsonschema_description:"standard output (head and tail kept when longer than 64 KiB)"`
	Stderr     string         `json:"stderr" jsonschema_description:"standard error (head and tail kept when longer than 64 KiB)"`
	Truncated  bool           `json:"truncated" jsonschema_description:"true when stdout or stderr was cut to the cap"`
	DurationMS int64          `json:"duration_ms" jsonschema_description:"wall time of the command"`
	TimedOut   bool           `json:"timed_out" jsonschema_description:"true when the timeout stopped the command"`
	Sandbox    confine.Report `json:"sandbox" jsonschema_description:"how the kernel confined the command: where it could write, which TCP ports it could use"`
	// sandbox is the same in one line, for the audit row.
	sandbox string
}

// AuditSandbox implements tool.Confined.
func (o BashOutput) AuditSandbox() string { return o.sandbox }

// Bash is the bash tool.
func Bash() tool.Tool {
	return tool.New(tool.Spec{
		Name:  "bash",
		Title: "Run a shell command",
		Description: "Run a command with bash -c in this agent's working directory, stdin closed. The Bash guard runs first: inline JSON handed to curl, wget, httpie, grpcurl or gh api is refused (write the JSON to a file and pass the file), and so is a command whose effect it cannot read (a program name or shell code computed at run time); the refusal says what to write instead. " +
			"The kernel (Landlock) confines the command and everything it starts: it can write only where this agent's writeAllowList allows (never toolhost's own stores .toolhost/, timeline.ndjson, bugs/) and in its private $TMPDIR, removed afterwards; sandbox in the result lists where. " +
			"Returns exit_code, stdout, stderr (each capped at 64 KiB, head and tail kept), duration_ms; ok is false on a non-zero exit or a timeout. " +
			"The command's whole process group is stopped on timeout or cancel, and background jobs do not outlive the call (use spawn_units for servers).",
		Effect:   tool.Destructive,
		Timeout:  MaxBashTimeout + 10*time.Second,
		Commands: tool.ScriptField("command"),
	}, runBash)
}

func runBash(ctx context.Context, c *callctx.Ctx, in BashInput) (BashOutput, error) {
	dir := c.Settings.Cwd
	if dir == "" {
		dir = c.Files.ProjectDir()
	}
	fi, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		// A unit's directory does not exist before its first file: the
		// agent's first command creates it, when its allow-list holds it.
		if rel, rerr := filepath.Rel(c.Files.ProjectDir(), dir); rerr == nil && c.Files.MkdirAll(filepath.ToSlash(rel)) == nil {
			fi, err = os.Stat(dir)
		}
	}
	if err != nil || !fi.IsDir() {
		if err == nil || errors.Is(err, fs.ErrNotExist) {
			return BashOutput{}, tool.Fail(nil, "the working directory %s does not exist and is outside this agent's allow-list, so it was not created; ask for the right unit", dir)
		}
		return BashOutput{}, err
	}
	if c.Procs == nil {
		return BashOutput{}, errors.New("this session has no process owner")
	}
	timeout := DefaultBashTimeout
	if in.TimeoutMS > 0 {
		timeout = time.Duration(in.TimeoutMS) * time.Millisecond
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		return BashOutput{}, fmt.Errorf("bash: %w", err)
	}
	self := c.Procs.Self()
	plan, err := confine.Prepare(confine.Request{
		Agent: c.AgentName, Sandbox: c.Settings.Sandbox, ProjectDir: c.Files.ProjectDir(),
		TempFor: &self, Mkdir: c.Files.MkdirAll, Hold: confine.HoldCall,
	})
	if err != nil {
		return BashOutput{}, err
	}
	defer plan.Close()
	defer plan.RemoveTempDir()
	stdout, stderr := &capped{}, &capped{}
	// Own pipes (not io.Writers) so that the child's exit is seen when bash
	// exits, not when the last background job closes its copy of the pipe:
	// the group is stopped right after, and the readers then see EOF.
	outR, outW, err := os.Pipe()
	if err != nil {
		return BashOutput{}, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return BashOutput{}, err
	}
	start := time.Now()
	spec := plan.Command("bash", []string{bash, "-c", in.Command}, dir)
	spec.Stdout, spec.Stderr, spec.Grace = outW, errW, bashGrace
	child, err := c.Procs.Spawn(spec)
	outW.Close()
	errW.Close()
	plan.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return BashOutput{}, err
	}
	var readers sync.WaitGroup
	readers.Go(func() { _, _ = io.Copy(stdout, outR) })
	readers.Go(func() { _, _ = io.Copy(stderr, errR) })
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	timedOut, cancelled := false, false
	select {
	case <-child.Done():
	case <-timer.C:
		timedOut = true
		_, _ = child.Stop(context.Background())
	case <-ctx.Done():
		cancelled = true
		_, _ = child.Stop(context.Background())
	}
	// Jobs the command left behind went with it (Spawn stops the group
	// when the leader exits).
	<-child.Done()
	drain(&readers, outR, errR)
	if cancelled {
		return BashOutput{}, ctx.Err()
	}
	code, _, _ := child.Exit()
	out := BashOutput{
		ExitCode:   code,
		Stdout:     stdout.String(),
		Stderr:     stderr.String(),
		Truncated:  stdout.dropped > 0 || stderr.dropped > 0,
		DurationMS: time.Since(start).Milliseconds(),
		TimedOut:   timedOut,
		Sandbox:    plan.Report(),
		sandbox:    plan.String(),
	}
	switch {
	case timedOut:
		out.Reason = fmt.Sprintf("timed out after %d ms and was stopped with its process group; raise timeout_ms (at most 600000) or run long-lived processes with spawn_units", timeout.Milliseconds())
	case out.ExitCode != 0:
		out.Reason = fmt.Sprintf("exit status %d; see stderr", out.ExitCode)
		if plan.Confined() && refused(out.Stderr) {
			out.Reason += ". " + refusalHint(c, plan)
		}
	default:
		out.OK = true
	}
	return out, nil
}

// refused reports whether stderr shows a refused file or socket operation
// (EACCES, EPERM), which under confinement is most likely the kernel
// refusing a write outside the allow-list.
func refused(stderr string) bool {
	s := strings.ToLower(stderr)
	return strings.Contains(s, "permission denied") || strings.Contains(s, "operation not permitted")
}

// refusalHint tells the model where its commands may write.
func refusalHint(c *callctx.Ctx, plan *confine.Plan) string {
	return fmt.Sprintf("If that was a write outside %s's allow-list: the sandbox (Landlock) refused it; commands may write only under %s "+
		"(toolhost's own stores and patterns like agent-state/*.json are written by toolhost's tools, not by commands)",
		c.AgentName, strings.Join(plan.Write, ", "))
}

// drain waits for the output readers; a process that left the group (setsid)
// may still hold the pipes, so after waitDelay the read ends are closed.
func drain(readers *sync.WaitGroup, pipes ...*os.File) {
	finished := make(chan struct{})
	go func() { readers.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(waitDelay):
		for _, p := range pipes {
			p.Close()
		}
		<-finished
	}
	for _, p := range pipes {
		p.Close()
	}
}

// capped keeps the first and the last OutputCap/2 bytes written to it.
type capped struct {
	mu      sync.Mutex
	head    []byte
	tail    []byte // ring of the last bytes once head is full
	dropped int64
}

func (w *capped) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(p)
	const half = OutputCap / 2
	if room := half - len(w.head); room > 0 {
		k := min(room, len(p))
		w.head = append(w.head, p[:k]...)
		p = p[k:]
	}
	w.tail = append(w.tail, p...)
	if extra := len(w.tail) - half; extra > 0 {
		w.dropped += int64(extra)
		w.tail = append(w.tail[:0], w.tail[extra:]...)
	}
	return n, nil
}

func (w *capped) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.dropped == 0 {
		return string(w.head) + string(w.tail)
	}
	return fmt.Sprintf("%s\n…[%d bytes omitted]…\n%s", w.head, w.dropped, w.tail)
}
