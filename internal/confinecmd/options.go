package confinecmd

import (
	"flag"
	"os"
	"strconv"
)

// Options are the flags of `toolhost confine` and of toolhost-confine.
type Options struct {
	Agent      string
	ProjectDir string
	AgentsFile string
	Unit       string
	Port       int
	Explain    bool
	// CwdFile is a file CMD may write besides the agent's roots, its path
	// in CMD's TOOLHOST_CWD_FILE (the hook's rewrite has the shell report
	// its last directory there).
	CwdFile string
	// CwdReport is a descriptor (3 or more) to write, once CMD has exited,
	// the directory it reported in a CwdFile confine makes for it (cwd.go).
	CwdReport int
	// Hold runs CMD under a holder that keeps the live registry told
	// while any process of it lives (hold.go).
	Hold bool
	// holder is set in the holder hold.go starts (never by a user).
	holder bool
}

// HolderFlag marks the holder's own invocation (hold.go); not for users.
const HolderFlag = "holder"

// FlagSet is the command's flags bound to o; flag parsing stops at CMD,
// whose own flags are its own.
func (o *Options) FlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.StringVar(&o.Agent, "agent", "", "agent: devloop-coder, coder … (env TOOLHOST_AGENT)")
	fs.StringVar(&o.ProjectDir, "project-dir", "", "project directory (env TOOLHOST_PROJECT_DIR)")
	fs.StringVar(&o.AgentsFile, "agents", "", "agents file (default: the embedded configs/agents.json)")
	fs.StringVar(&o.Unit, "unit", "", "confine a unit started by spawn_units (binds by network.unitBind)")
	fs.IntVar(&o.Port, "port", 0, "the unit's own port (with --unit)")
	fs.BoolVar(&o.Explain, "explain", false, "print the ruleset as JSON instead of running the command")
	fs.StringVar(&o.CwdFile, "cwd-file", "", "an existing regular file (absolute path) CMD may also write, and nothing else there; CMD finds its path in TOOLHOST_CWD_FILE")
	fs.IntVar(&o.CwdReport, "cwd-report", 0, "make a --cwd-file for CMD to write the directory it ends in, and once CMD has exited write that directory (when it is one) to this descriptor: the hook's rewrite of the CLI's Bash")
	fs.BoolVar(&o.Hold, "hold", false, "keep the project's live registry told while any process of CMD lives (the hook's Bash): the exit status comes when CMD exits, a holder in its own session stays until the last process CMD left is gone")
	fs.BoolVar(&o.holder, HolderFlag, false, "be the holder (started by --hold itself)")
	return fs
}

// defaults fills what the flags left empty from the environment.
func (o *Options) defaults() {
	if o.Agent == "" {
		o.Agent = os.Getenv("TOOLHOST_AGENT")
	}
	if o.ProjectDir == "" {
		o.ProjectDir = os.Getenv("TOOLHOST_PROJECT_DIR")
	}
}

// argv is o as flags again, for the holder's command line.
func (o *Options) argv() []string {
	a := []string{"--agent", o.Agent, "--project-dir", o.ProjectDir}
	for _, f := range [][2]string{{"agents", o.AgentsFile}, {"unit", o.Unit}, {"cwd-file", o.CwdFile}} {
		if f[1] != "" {
			a = append(a, "--"+f[0], f[1])
		}
	}
	if o.Port != 0 {
		a = append(a, "--port", strconv.Itoa(o.Port))
	}
	return a
}
