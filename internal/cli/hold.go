package cli

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/toolhost/toolhost/internal/live"
	"github.com/toolhost/toolhost/internal/procs"
)

// holdSignals are passed on to the held command.
var holdSignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT}

// newHoldCmd is `toolhost hold`: what the hook puts in front of a command
// the agent CLI runs (and, through it, `toolhost confine`), so that the
// project's live registry (internal/live) knows while any process of that
// command lives. The process the CLI waits on starts a holder in a session
// of its own, which becomes the command's child subreaper, takes the
// agent's lock and runs the command with the CLI's streams; the first
// process exits with the command's status as soon as the command exits,
// the holder only once the last process the command left behind is gone.
func newHoldCmd() *cobra.Command {
	var projectDir, agent string
	var holder bool
	cmd := &cobra.Command{
		Use:    "hold --project-dir D --agent A -- CMD ARGS…",
		Short:  "Run a command so that the project's live registry knows while any process of it lives (the hook's Bash)",
		Hidden: true,
		Args:   cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if projectDir == "" || agent == "" {
				return usageErr(errors.New("--project-dir and --agent are required"))
			}
			if holder {
				os.Exit(runHolder(projectDir, agent, args))
			}
			os.Exit(runHeld(projectDir, agent, args))
			return nil
		},
	}
	cmd.Flags().StringVar(&projectDir, "project-dir", "", "project directory")
	cmd.Flags().StringVar(&agent, "agent", "", "agent whose command it is")
	cmd.Flags().BoolVar(&holder, "holder", false, "be the holder (started by hold itself)")
	_ = cmd.Flags().MarkHidden("holder")
	return cmd
}

// runHeld starts the holder and exits as the command does: the holder
// reports the command's exit status on a pipe.
func runHeld(projectDir, agent string, args []string) int {
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "toolhost hold:", err)
		return 126
	}
	r, w, err := os.Pipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, "toolhost hold:", err)
		return 126
	}
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, holdSignals...)
	h, err := procs.Spawn(procs.Spec{Name: "holder", Argv: append([]string{exe, "hold", "--holder", "--project-dir", projectDir, "--agent", agent, "--"}, args...),
		Env: os.Environ(), Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, ExtraFiles: []*os.File{w}, Detached: true})
	w.Close()
	if err != nil {
		fmt.Fprintln(os.Stderr, "toolhost hold:", err)
		return 126
	}
	status := make(chan int, 1)
	go func() {
		line, err := bufio.NewReader(r).ReadString('\n')
		code, cerr := strconv.Atoi(strings.TrimSpace(line))
		if err != nil || cerr != nil {
			code = 125 // the holder died before the command ended
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

// runHolder is the holder: the command's child subreaper holding the
// agent's live lock until the whole subtree is gone.
func runHolder(projectDir, agent string, args []string) int {
	report := os.NewFile(3, "status")
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "toolhost hold:", err)
		fmt.Fprintln(report, 126)
		return 126
	}
	if err := procs.BecomeSubreaper(); err != nil {
		return fail(err)
	}
	lock, err := live.Hold(projectDir, agent)
	if err != nil {
		return fail(err)
	}
	defer lock.Close()
	path, err := exec.LookPath(args[0])
	if err != nil {
		return fail(err)
	}
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, holdSignals...)
	c, err := procs.Spawn(procs.Spec{Name: "held command", Argv: append([]string{path}, args[1:]...), Env: os.Environ(),
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, KeepGroup: true})
	if err != nil {
		return fail(err)
	}
	// The command has the streams now: the agent CLI sees their end when the
	// command's processes close them, not this holder.
	if null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0); err == nil {
		for _, fd := range []int{0, 1, 2} {
			_ = unix.Dup2(int(null.Fd()), fd)
		}
		null.Close()
	}
	for done := false; !done; {
		select {
		case s := <-sigs:
			_ = syscall.Kill(c.PID, s.(syscall.Signal))
		case <-c.Done():
			done = true
		}
	}
	code, sig, _ := c.Exit()
	if sig != "" {
		code = 128 + int(unix.SignalNum(sig))
	}
	fmt.Fprintln(report, code)
	report.Close()
	signal.Stop(sigs)
	procs.ReapAll()
	return 0
}
