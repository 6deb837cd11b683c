package confine

import (
	"os"
	"os/signal"
	"syscall"

	"github.com/toolhost/toolhost/internal/procs"
)

// relayed are the signals a supervising `toolhost confine` passes on to the
// command's process group: the command has its own session, so the
// terminal's and the agent CLI's signals reach toolhost only.
var relayed = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT,
	syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGWINCH, syscall.SIGCONT}

// Run starts the program at path with argv confined by the plan, with this
// process's standard streams and working directory, passes on the signals
// this process gets, and waits for it. It returns the command's exit code,
// or the signal that ended it. The command's own background jobs are left
// running (confined) when it exits, as they would be after an exec.
func (p *Plan) Run(path string, argv []string) (code int, sig syscall.Signal, err error) {
	spec := p.Command("command", argv, "")
	spec.Path = path
	spec.Stdin, spec.Stdout, spec.Stderr = os.Stdin, os.Stdout, os.Stderr
	spec.KeepGroup = true
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, relayed...)
	defer signal.Stop(sigs)
	child, err := procs.Spawn(spec)
	if err != nil {
		return -1, 0, err
	}
	for {
		select {
		case s := <-sigs:
			_ = syscall.Kill(-child.PGID, s.(syscall.Signal))
		case <-child.Done():
			code, _, err := child.Exit()
			return code, child.ExitSignal(), err
		}
	}
}
