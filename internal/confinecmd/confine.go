package confinecmd

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/toolhost/toolhost/internal/agents"
	"github.com/toolhost/toolhost/internal/confine"
	"github.com/toolhost/toolhost/internal/procs"
	"github.com/toolhost/toolhost/internal/sandbox"
)

// Exit statuses of the command's own making, the shell's.
const (
	// Usage is a command line confine cannot run.
	Usage = 2
	// Refused is a command confine would not run ("found but cannot
	// execute"): the kernel cannot confine it as the agent requires, or
	// it could not be started.
	Refused = 126
	// NotFound is a command that is not on PATH.
	NotFound = 127
)

// Main runs the command line after the flags (o parsed from FlagSet; args
// the rest: CMD ARGS…) and returns the exit status. self is how this
// binary runs confine again, for the holder: [toolhost, "confine"] or
// [toolhost-confine]. Errors go to stderr after "toolhost confine: ".
func Main(self []string, o Options, args []string) int {
	o.defaults()
	if len(args) == 0 && !o.Explain {
		return fail(Usage, errors.New("confine needs the command to run after --, e.g. toolhost confine --agent coder --project-dir . -- make test"))
	}
	switch {
	case o.Explain:
		return explain(o)
	case o.holder:
		return runHolder(o, args)
	}
	reported, err := makeCwdReport(&o)
	if err != nil {
		return fail(Usage, err)
	}
	if o.Hold {
		code := runHeld(self, o, args)
		reported()
		return code
	}
	r, code := start(o, args)
	if r == nil {
		reported()
		return code
	}
	code, sig := r.wait()
	r.close()
	reported()
	if sig != 0 {
		// Die the way the command died, so the caller sees the signal,
		// not an exit status; a signal whose default is not to end a
		// process leaves the shell's 128+n.
		procs.DieBy(sig)
	}
	return code
}

// exitErr is an error with the exit status it ends confine with.
type exitErr struct {
	code int
	err  error
}

func (e *exitErr) Error() string { return e.err.Error() }

func fail(code int, err error) int {
	fmt.Fprintln(os.Stderr, "toolhost confine:", err)
	return code
}

// failed reports err and returns its exit status (Refused unless it says).
func failed(err error) int {
	if ee, ok := errors.AsType[*exitErr](err); ok {
		return fail(ee.code, ee.err)
	}
	return fail(Refused, err)
}

func explain(o Options) int {
	plan, err := prepare(o)
	if err != nil {
		return failed(err)
	}
	defer plan.Close()
	plan.RemoveTempDir()
	if err := writeJSON(os.Stdout, plan); err != nil {
		return fail(1, err)
	}
	return 0
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// running is CMD started confined, supervised by this process.
type running struct {
	plan  *confine.Plan
	child *procs.Child
	sigs  chan os.Signal
}

// start runs CMD confined with this process's streams and working
// directory. It returns nil and the exit status when CMD cannot be run.
func start(o Options, args []string) (*running, int) {
	plan, err := prepare(o)
	if err != nil {
		return nil, failed(err)
	}
	path, err := exec.LookPath(args[0])
	if err != nil {
		plan.Close()
		plan.RemoveTempDir()
		return nil, fail(NotFound, err)
	}
	if !plan.Confined() {
		fmt.Fprintf(os.Stderr, "toolhost confine: running unconfined: %s\n", plan.Unconfined)
	}
	spec := plan.Command("command", args, "")
	spec.Path = path
	spec.Stdin, spec.Stdout, spec.Stderr = os.Stdin, os.Stdout, os.Stderr
	// The command's own background jobs are left running (confined) when it
	// exits, as they would be after an exec.
	spec.KeepGroup = true
	r := &running{plan: plan, sigs: make(chan os.Signal, 16)}
	signal.Notify(r.sigs, relayed...)
	if r.child, err = procs.Spawn(spec); err != nil {
		r.close()
		return nil, fail(Refused, err)
	}
	return r, 0
}

// wait passes on the signals this process gets to CMD's process group
// until CMD exits, and returns its exit status, or 128+n and the signal n
// that ended it.
func (r *running) wait() (int, syscall.Signal) {
	for {
		select {
		case s := <-r.sigs:
			_ = syscall.Kill(-r.child.PGID, s.(syscall.Signal))
		case <-r.child.Done():
			code, _, err := r.child.Exit()
			if err != nil {
				return fail(Refused, err), 0
			}
			if sig := r.child.ExitSignal(); sig != 0 {
				return 128 + int(sig), sig
			}
			return code, 0
		}
	}
}

// close ends the supervision and removes CMD's temp dir: once CMD's
// processes are gone, or are left to themselves.
func (r *running) close() {
	signal.Stop(r.sigs)
	r.plan.Close()
	r.plan.RemoveTempDir()
}

// relayed are the signals confine passes on to the command's process
// group (and the held process to the holder): the command has its own
// session, so the terminal's and the agent CLI's signals reach confine
// only.
var relayed = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT,
	syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGWINCH, syscall.SIGCONT}

// prepare builds the plan for CMD exactly as the bash tool does for its
// commands, with a private temp dir named after this process, which
// supervises CMD for as long as its temp dir is in use.
func prepare(o Options) (*confine.Plan, error) {
	usage := func(err error) error { return &exitErr{code: Usage, err: err} }
	set, err := agents.Load(o.AgentsFile)
	if err != nil {
		return nil, usage(err)
	}
	if o.Agent == "" {
		return nil, usage(fmt.Errorf("--agent is required (known: %v)", set.Names()))
	}
	ag, err := set.Find(o.Agent)
	if err != nil {
		return nil, usage(err)
	}
	if o.ProjectDir == "" {
		return nil, usage(errors.New("--project-dir is required (or TOOLHOST_PROJECT_DIR)"))
	}
	proj, err := filepath.Abs(o.ProjectDir)
	if err != nil {
		return nil, err
	}
	if fi, err := os.Stat(proj); err != nil || !fi.IsDir() {
		return nil, usage(fmt.Errorf("--project-dir %s is not a directory", o.ProjectDir))
	}
	door, err := sandbox.New(proj, ag.Name, ag.Sandbox.WriteAllowList)
	if err != nil {
		return nil, err
	}
	defer door.Close()
	confine.RemoveStaleTempDirs()
	self, err := procs.Self()
	if err != nil {
		return nil, err
	}
	return confine.Prepare(confine.Request{
		Agent: ag.Name, Sandbox: ag.Sandbox, ProjectDir: proj, Unit: o.Unit, Port: o.Port,
		TempFor: &self, Mkdir: door.MkdirAll, ReportFile: o.CwdFile, SetEnv: cwdFileEnv(o.CwdFile),
	})
}
