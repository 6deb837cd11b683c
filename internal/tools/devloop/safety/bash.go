package safety

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/toolhost/toolhost/internal/callctx"
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
	// killed, in case a process that left the group keeps the pipes open.
	waitDelay = 2 * time.Second
)

// BashInput is a shell command to run.
type BashInput struct {
	Command   string `json:"command" jsonschema:"minLength=1,maxLength=65536" jsonschema_description:"the command line, run with bash -c in this agent's working directory; inline JSON for HTTP clients is refused: write it to a file and pass the file (curl -d @file)"`
	TimeoutMS int    `json:"timeout_ms,omitempty" jsonschema:"minimum=1,maximum=600000" jsonschema_description:"kill the command (and everything it started) after this many milliseconds; default 120000, at most 600000"`
}

// BashOutput is what the command did.
type BashOutput struct {
	tool.Status
	ExitCode   int    `json:"exit_code" jsonschema_description:"the exit status; -1 when the command was killed"`
	Stdout     string `json:"stdout" jsonschema_description:"standard output (head and tail kept when longer than 64 KiB)"`
	Stderr     string `json:"stderr" jsonschema_description:"standard error (head and tail kept when longer than 64 KiB)"`
	Truncated  bool   `json:"truncated" jsonschema_description:"true when stdout or stderr was cut to the cap"`
	DurationMS int64  `json:"duration_ms" jsonschema_description:"wall time of the command"`
	TimedOut   bool   `json:"timed_out" jsonschema_description:"true when the timeout killed the command"`
}

// Bash is the bash tool.
func Bash() tool.Tool {
	return tool.New(tool.Spec{
		Name:  "bash",
		Title: "Run a shell command",
		Description: "Run a command with bash -c in this agent's working directory, stdin closed. The Bash guard runs first: inline JSON handed to curl, wget, httpie, grpcurl or gh api is refused (write the JSON to a file and pass the file), and so is a command whose effect it cannot read (a program name or shell code computed at run time); the refusal says what to write instead. " +
			"Returns exit_code, stdout, stderr (each capped at 64 KiB, head and tail kept), duration_ms; ok is false on a non-zero exit or a timeout. " +
			"The command's whole process group is killed on timeout or cancel, and background jobs do not outlive the call (use spawn_units for servers).",
		Effect:   tool.Destructive,
		Timeout:  MaxBashTimeout + 10*time.Second,
		Commands: tool.ScriptField("command"),
	}, runBash)
}

func runBash(ctx context.Context, c *callctx.Ctx, in BashInput) (BashOutput, error) {
	dir := c.Settings.Cwd
	if dir == "" {
		dir = c.ProjectDir
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		if err == nil || errors.Is(err, fs.ErrNotExist) {
			return BashOutput{}, tool.Fail("the working directory %s does not exist; create it first (write a file under it) or ask for the right unit", dir)
		}
		return BashOutput{}, err
	}
	timeout := DefaultBashTimeout
	if in.TimeoutMS > 0 {
		timeout = time.Duration(in.TimeoutMS) * time.Millisecond
	}
	stdout, stderr := &capped{}, &capped{}
	cmd := exec.Command("bash", "-c", in.Command)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// Own pipes (not io.Writers) so that Wait returns when bash exits, not
	// when the last background job closes its copy of the pipe: the group is
	// killed right after, and the readers then see EOF.
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
	cmd.Stdout, cmd.Stderr = outW, errW
	start := time.Now()
	err = cmd.Start()
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return BashOutput{}, fmt.Errorf("start bash: %w", err)
	}
	var readers sync.WaitGroup
	readers.Go(func() { _, _ = io.Copy(stdout, outR) })
	readers.Go(func() { _, _ = io.Copy(stderr, errR) })
	pgid := cmd.Process.Pid
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	timedOut, cancelled := false, false
	select {
	case <-done:
	case <-timer.C:
		timedOut = true
		killGroup(pgid)
		<-done
	case <-ctx.Done():
		cancelled = true
		killGroup(pgid)
		<-done
	}
	// Background jobs the command left behind go with it.
	killGroup(pgid)
	drain(&readers, outR, errR)
	if cancelled {
		return BashOutput{}, ctx.Err()
	}
	out := BashOutput{
		ExitCode:   cmd.ProcessState.ExitCode(),
		Stdout:     stdout.String(),
		Stderr:     stderr.String(),
		Truncated:  stdout.dropped > 0 || stderr.dropped > 0,
		DurationMS: time.Since(start).Milliseconds(),
		TimedOut:   timedOut,
	}
	switch {
	case timedOut:
		out.Reason = fmt.Sprintf("timed out after %d ms and was killed with its process group; raise timeout_ms (at most 600000) or run long-lived processes with spawn_units", timeout.Milliseconds())
	case out.ExitCode != 0:
		out.Reason = fmt.Sprintf("exit status %d; see stderr", out.ExitCode)
	default:
		out.OK = true
	}
	return out, nil
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

// killGroup kills every process in the group; ESRCH (already gone) is fine.
func killGroup(pgid int) {
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
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
