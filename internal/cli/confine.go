package cli

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/toolhost/toolhost/internal/agents"
	"github.com/toolhost/toolhost/internal/callctx"
	"github.com/toolhost/toolhost/internal/confine"
	"github.com/toolhost/toolhost/internal/procs"
	"github.com/toolhost/toolhost/internal/sandbox"
)

// confineRefused is the exit status of a command `toolhost confine` would
// not run (the shell's "found but cannot execute").
const confineRefused = 126

type confineFlags struct {
	agent      string
	projectDir string
	agentsFile string
	unit       string
	port       int
	explain    bool
	// cwdFile is a file CMD may write besides the agent's roots (the
	// hook's rewrite has the shell report its last directory there).
	cwdFile string
}

func newConfineCmd(_ *globals) *cobra.Command {
	var f confineFlags
	cmd := &cobra.Command{
		Use:   "confine --agent X --project-dir D [--unit U --port P] -- CMD ARGS…",
		Short: "Run CMD confined by the kernel (Landlock) to what the agent may write",
		Long: "confine starts CMD confined exactly as the bash tool and spawn_units confine theirs (the same ruleset,\n" +
			"no capabilities, its own session without a controlling terminal, only stdin, stdout and stderr, the\n" +
			"agent's filtered environment) and waits for it: stdin, stdout, stderr, the exit status (or the signal) and\n" +
			"the working directory are CMD's own, and the signals confine gets are passed on to CMD's process group.\n" +
			"CMD may write only the agent's write roots, a private $TMPDIR\n" +
			"and /dev/null-like devices; reads stay open unless the agent sets sandbox.readAllowList.\n" +
			"--unit (with --port) confines a unit: it may bind only that port unless the agent's network.unitBind says\n" +
			"otherwise. --explain prints the ruleset as JSON instead of running CMD. When the kernel cannot confine and\n" +
			"the agent's sandbox.commands is require, CMD is not run and confine exits 126 with the reason.",
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			id := envIdentity(callctx.Identity{Agent: f.agent, ProjectDir: f.projectDir})
			f.agent, f.projectDir = id.Agent, id.ProjectDir
			if len(args) == 0 && !f.explain {
				return usageErr(errors.New("confine needs the command to run after --, e.g. toolhost confine --agent coder --project-dir . -- make test"))
			}
			plan, err := prepareConfine(f)
			if err != nil {
				var ue *confine.UnavailableError
				if errors.As(err, &ue) {
					return &exitError{code: confineRefused, err: err}
				}
				return err
			}
			if f.explain {
				defer plan.Close()
				plan.RemoveTempDir()
				return writeJSON(cmd.OutOrStdout(), plan)
			}
			path, err := exec.LookPath(args[0])
			if err != nil {
				plan.RemoveTempDir()
				plan.Close()
				return &exitError{code: 127, err: err}
			}
			if !plan.Confined() {
				fmt.Fprintf(cmd.ErrOrStderr(), "toolhost confine: running unconfined: %s\n", plan.Unconfined)
			}
			code, sig, err := plan.Run(path, args)
			plan.Close()
			plan.RemoveTempDir()
			if err != nil {
				return &exitError{code: confineRefused, err: err}
			}
			if sig != 0 {
				// Die the way the command died, so the caller sees the
				// signal, not an exit status; a signal whose default is
				// not to end a process leaves the shell's 128+n.
				procs.DieBy(sig)
				return &exitError{code: 128 + int(sig)}
			}
			if code != 0 {
				return &exitError{code: code}
			}
			return nil
		},
	}
	fl := cmd.Flags()
	// The command's own flags are its own: flag parsing stops at CMD.
	fl.SetInterspersed(false)
	fl.StringVar(&f.agent, "agent", "", "agent: devloop-coder, coder … (env TOOLHOST_AGENT)")
	fl.StringVar(&f.projectDir, "project-dir", "", "project directory (env TOOLHOST_PROJECT_DIR)")
	fl.StringVar(&f.agentsFile, "agents", "", "agents file (default: the embedded configs/agents.json)")
	fl.StringVar(&f.unit, "unit", "", "confine a unit started by spawn_units (binds by network.unitBind)")
	fl.IntVar(&f.port, "port", 0, "the unit's own port (with --unit)")
	fl.BoolVar(&f.explain, "explain", false, "print the ruleset as JSON instead of running the command")
	fl.StringVar(&f.cwdFile, "cwd-file", "", "an existing regular file (absolute path) CMD may also write, and nothing else there: the hook's rewrite of the CLI's Bash has the shell report the directory it ended in")
	return cmd
}

// prepareConfine builds the plan for `toolhost confine` exactly as the
// bash tool does for its commands, with a private temp dir named after
// this process, which stays the command's pid across the exec.
func prepareConfine(f confineFlags) (*confine.Plan, error) {
	set, err := agents.Load(f.agentsFile)
	if err != nil {
		return nil, usageErr(err)
	}
	if f.agent == "" {
		return nil, usageErr(fmt.Errorf("--agent is required (known: %v)", set.Names()))
	}
	ag, err := set.Find(f.agent)
	if err != nil {
		return nil, usageErr(err)
	}
	if f.projectDir == "" {
		return nil, usageErr(errors.New("--project-dir is required (or TOOLHOST_PROJECT_DIR)"))
	}
	proj, err := filepath.Abs(f.projectDir)
	if err != nil {
		return nil, err
	}
	if fi, err := os.Stat(proj); err != nil || !fi.IsDir() {
		return nil, usageErr(fmt.Errorf("--project-dir %s is not a directory", f.projectDir))
	}
	door, err := sandbox.New(proj, ag.Name, ag.Sandbox.WriteAllowList)
	if err != nil {
		return nil, err
	}
	defer door.Close()
	confine.RemoveStaleTempDirs()
	st, err := procs.ReadStat(os.Getpid())
	if err != nil {
		return nil, err
	}
	self := procs.Process{PID: st.PID, StartTicks: st.StartTicks}
	return confine.Prepare(confine.Request{
		Agent: ag.Name, Sandbox: ag.Sandbox, ProjectDir: proj, Unit: f.unit, Port: f.port,
		TempFor: &self, Mkdir: door.MkdirAll, ReportFile: f.cwdFile,
	})
}
