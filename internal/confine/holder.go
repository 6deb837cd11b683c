package confine

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/toolhost/toolhost/internal/live"
	"github.com/toolhost/toolhost/internal/procs"
)

// Hold selects the holder a plan's command runs under (Request.Hold): a
// process of the helper beside this binary (Helper) or of this binary,
// confined like the command, that is the command's
// child subreaper and holds its registration in the project's live registry
// (internal/live) until the last process of the command is gone. The hook
// reads the registry before the agent CLI writes a file itself, unconfined:
// a command still running could swap a directory of the path for a
// symbolic link in between.
//
// The command is kept in reach of both:
//
//   - It runs in a Landlock domain nested in the holder's (signals and
//     abstract sockets scoped, ABI ≥ 6), so it can neither signal nor
//     ptrace its holder: only toolhost, the warden or the human can end the
//     holder, and they stop its whole group.
//   - It cannot leave the holder's process group: setsid and setpgid do
//     nothing (a seccomp filter answers them with success), so a group stop
//     reaches every process of the command, and the holder is never killed
//     while a process that escaped the group lives on.
//   - Whatever it forks stays beneath the subreaper, however its parents
//     exit.
type Hold string

const (
	// HoldNone runs the command directly: the confinement probe, and
	// `toolhost confine` (whose own --hold holds its command: internal/confinecmd).
	HoldNone Hold = ""
	// HoldCall is the bash tool's: once the command exits, what it left
	// running is stopped (SIGTERM, holdGrace, SIGKILL), and the holder
	// exits with the command's status when nothing of it is left.
	HoldCall Hold = "call"
	// HoldKeep is for units and upstream servers: the holder exits once the
	// last process of the command has ended by itself or been stopped with
	// the group.
	HoldKeep Hold = "keep"
)

// holderArg, as the first argument, makes this binary a holder: then the
// mode, the layers to add ("scope"; "exclude" or "exclude-logged", the
// ruleset on descriptor 4, which scopes too; "pin"; comma-separated, or
// "-"), "--" and the command. An argument, not an environment variable, so that no
// command can become a holder by inheriting it.
const holderArg = "toolhost-holder"

// holdGrace is what a HoldCall command's leftovers get between SIGTERM and
// SIGKILL once the command has exited.
const holdGrace = time.Second

func init() {
	// Before any other code: a holder never runs the program it was
	// re-executed from (a test binary would run its tests).
	if len(os.Args) > 5 && os.Args[1] == holderArg && os.Args[4] == "--" {
		os.Exit(runHolder(Hold(os.Args[2]), os.Args[3], os.Args[5:]))
	}
}

// register records the plan's command in the project's live registry; the
// holder inherits the registration's descriptor.
func (p *Plan) register(req Request) error {
	if req.ProjectDir == "" {
		return fmt.Errorf("a held command needs the project dir")
	}
	f, err := live.Register(req.ProjectDir, live.Entry{Agent: req.Agent, Unit: req.Unit, Write: p.liveWrite(req.ProjectDir)})
	if err != nil {
		return err
	}
	p.hold, p.live = req.Hold, f
	return nil
}

// liveWrite are the project directories beneath which the command may
// change entries: its directory write roots, or the whole project when it
// is not confined.
func (p *Plan) liveWrite(proj string) []string {
	if !p.Confined() {
		return []string{"."}
	}
	out := []string{}
	for _, w := range p.Write {
		d, ok := strings.CutSuffix(w, "/")
		if !ok {
			continue // a file: writing it redirects nothing
		}
		if filepath.IsAbs(d) {
			rel, err := filepath.Rel(proj, d)
			if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
				continue
			}
			d = rel
		}
		out = append(out, filepath.ToSlash(filepath.Clean(d)))
	}
	return out
}

// holderSpec turns the command's spec into its holder's.
func (p *Plan) holderSpec(spec procs.Spec) procs.Spec {
	// The helper beside toolhost, when there is one of this build: a
	// holder does nothing a whole toolhost start is needed for.
	exe := Helper()
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			exe = "/proc/self/exe"
		}
	}
	var layers []string
	var extra []*os.File
	switch {
	case p.Confined() && p.exclByHolder:
		// The servers' exclusion, which scopes too, on descriptor 4.
		layer := "exclude"
		if p.ABI >= abiLogs {
			layer = "exclude-logged"
		}
		layers = append(layers, layer)
		if p.exclFile == nil {
			p.exclFile = os.NewFile(uintptr(p.exclFD), "excluding ruleset")
		}
		extra = append(extra, p.exclFile)
	case p.Confined() && p.scoped != 0:
		layers = append(layers, "scope")
	}
	if p.Confined() && p.canFilter {
		layers = append(layers, "pin")
	}
	if len(layers) == 0 {
		layers = []string{"-"}
	}
	argv := spec.Argv
	if spec.Path != "" {
		argv = append([]string{spec.Path}, argv[1:]...)
	}
	if spec.Program == "" && len(argv) > 0 {
		spec.Program = argv[0]
	}
	spec.Argv = append([]string{exe, holderArg, string(p.hold), strings.Join(layers, ","), "--"}, argv...)
	spec.Path = exe
	spec.ExtraFiles = append(append([]*os.File{p.live}, extra...), spec.ExtraFiles...)
	return spec
}

// runHolder is the holder: it announces itself in its registration (fd 3),
// becomes the child subreaper, starts the command in a nested domain and
// in its own group, and exits with the command's status once nothing of it
// is left.
func runHolder(mode Hold, layers string, argv []string) int {
	reg := os.NewFile(3, "live registration")
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "toolhost holder:", err)
		return 126
	}
	if mode != HoldCall && mode != HoldKeep {
		return fail(fmt.Errorf("unknown mode %q", mode))
	}
	// Its group is the command's to stop: a holder that does not lead its
	// own (not started by procs) would stop its starter's.
	if syscall.Getpgrp() != os.Getpid() {
		return fail(fmt.Errorf("not the leader of its own process group"))
	}
	if err := procs.AdoptOrphans(); err != nil {
		return fail(err)
	}
	if err := live.Announce(reg, os.Getpid()); err != nil {
		return fail(err)
	}
	// The group's stoppers signal every process of it; the holder stays
	// until the last one is gone (a handler, not SIG_IGN, which the command
	// would inherit).
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	go func() {
		for range sigs {
		}
	}()
	c, err := procs.Spawn(procs.Spec{Name: "held command", Argv: argv, Env: os.Environ(),
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, KeepGroup: true, InGroup: true,
		Confine: func() error { return nest(strings.Split(layers, ",")) }})
	if err != nil {
		return fail(err)
	}
	procs.HandOverStdio()
	<-c.Done()
	if mode == HoldCall && hasChildren() {
		stopLeftovers(holdGrace)
	}
	procs.ReapAll(c.Group())
	code, _, _ := c.Exit()
	if s := c.ExitSignal(); s != 0 {
		// Ended as the command did, so the caller reports its signal (a
		// signal whose default is not to end a process leaves 128+n); no
		// core of the holder for a command that dumped one.
		_ = unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{})
		procs.DieBy(s)
		return 128 + int(s)
	}
	return code
}

// hasChildren reaps the children that have exited and reports whether any
// is left. A subreaper with no child has an empty subtree: a process of it
// whose parent is gone is the subreaper's child.
func hasChildren() bool {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		switch {
		case errors.Is(err, syscall.EINTR) || pid > 0:
		case err != nil:
			return false // ECHILD
		default:
			return true
		}
	}
}

// stopLeftovers stops what the command left running: every process of the
// holder's group and every child reparented to it, SIGTERM first, SIGKILL
// after grace, until none is left.
func stopLeftovers(grace time.Duration) {
	if signalLeftovers(syscall.SIGTERM) == 0 {
		return
	}
	for deadline := time.Now().Add(grace); time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
		if signalLeftovers(0) == 0 {
			return
		}
	}
	for signalLeftovers(syscall.SIGKILL) > 0 {
		time.Sleep(10 * time.Millisecond)
	}
}
