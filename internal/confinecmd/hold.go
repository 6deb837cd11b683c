package confinecmd

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/toolhost/toolhost/internal/live"
	"github.com/toolhost/toolhost/internal/procs"
)

// With --hold the project's live registry (internal/live) knows while any
// process of CMD lives. The process the agent CLI waits on (runHeld)
// starts a holder (runHolder: this binary again, in a session of its own),
// which becomes CMD's child subreaper, takes the agent's lock and runs CMD
// confined with the CLI's streams; the held process exits with CMD's
// status as soon as CMD exits, the holder only once the last process CMD
// left behind is gone. The holder is outside CMD's Landlock domain: CMD
// cannot signal or trace it.

// holderDied is the held process's status when the holder ended before
// reporting CMD's.
const holderDied = 125

// runHeld starts the holder and exits as CMD does: the holder reports
// CMD's exit status on a pipe (its descriptor 3).
func runHeld(self []string, o Options, args []string) int {
	if o.Agent == "" || o.ProjectDir == "" {
		return fail(Usage, errors.New("--hold needs --agent and --project-dir (or TOOLHOST_AGENT and TOOLHOST_PROJECT_DIR)"))
	}
	exe, err := os.Executable()
	if err != nil {
		return fail(Refused, err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return fail(Refused, err)
	}
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, relayed...)
	argv := append([]string{exe}, self[1:]...)
	argv = append(append(append(argv, "--"+HolderFlag), o.argv()...), "--")
	h, err := procs.Spawn(procs.Spec{Name: "holder", Argv: append(argv, args...),
		Env: os.Environ(), Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, ExtraFiles: []*os.File{w}, Detached: true})
	w.Close()
	if err != nil {
		return fail(Refused, err)
	}
	status := make(chan int, 1)
	go func() {
		line, err := bufio.NewReader(r).ReadString('\n')
		code, cerr := strconv.Atoi(strings.TrimSpace(line))
		if err != nil || cerr != nil {
			code = holderDied
		}
		status <- code
	}()
	for {
		select {
		case s := <-sigs:
			_ = syscall.Kill(h.PID, s.(syscall.Signal))
		case code := <-status:
			return code
		}
	}
}

// runHolder is the holder: CMD's child subreaper holding the agent's live
// lock until the whole subtree is gone, then removing CMD's temp dir.
func runHolder(o Options, args []string) int {
	report := os.NewFile(3, "status")
	// Only the held process reads the status: no child of this one gets
	// the pipe (procs hands on descriptors 0-2 only; this makes sure).
	unix.CloseOnExec(3)
	if err := procs.AdoptOrphans(); err != nil {
		fmt.Fprintln(report, fail(Refused, err))
		return 0
	}
	lock, err := live.Hold(o.ProjectDir, o.Agent)
	if err != nil {
		fmt.Fprintln(report, fail(Refused, err))
		return 0
	}
	defer lock.Close()
	r, code := start(o, args)
	if r == nil {
		fmt.Fprintln(report, code)
		return 0
	}
	// CMD has the streams now: the agent CLI sees their end when CMD's
	// processes close them, not this holder.
	procs.HandOverStdio()
	code, _ = r.wait()
	fmt.Fprintln(report, code)
	report.Close()
	signal.Stop(r.sigs)
	procs.ReapAll(r.child.Group())
	r.close()
	return 0
}
