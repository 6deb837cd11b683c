package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/toolhost/toolhost/internal/audit"
	"github.com/toolhost/toolhost/internal/callctx"
	"github.com/toolhost/toolhost/internal/journal"
	"github.com/toolhost/toolhost/internal/redact"
	"github.com/toolhost/toolhost/internal/session"
)

// Version is set at build time with -ldflags "-X …/cli.Version=…" (make
// build and make release stamp `git describe`); unstampedVersion otherwise.
var Version = unstampedVersion

// unstampedVersion is what a build that stamped no version (a plain go
// build or go install) reports; `toolhost version` then says so.
const unstampedVersion = "0.1.0-dev"

// exitError carries an exit code through cobra; without err nothing is
// printed (the exit status of a command toolhost ran for the caller).
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}
func (e *exitError) Unwrap() error { return e.err }

// usageErr makes err exit with code 2.
func usageErr(err error) error { return &exitError{code: 2, err: err} }

// globals are the flags every command shares.
type globals struct {
	logFormat string
	logLevel  string
	stderr    io.Writer
}

func (g *globals) logger() zerolog.Logger {
	level, err := zerolog.ParseLevel(g.logLevel)
	if err != nil || g.logLevel == "" {
		level = zerolog.InfoLevel
	}
	// Every log line passes the one redactor: a reason quoting a command
	// line, an error quoting a header keeps no credential.
	w := redact.Writer(g.stderr)
	if g.logFormat == "console" {
		w = zerolog.ConsoleWriter{Out: w, TimeFormat: "15:04:05.000"}
	}
	return zerolog.New(w).Level(level).With().Timestamp().Logger()
}

// sessionFlags are the identity flags of serve, call and friends.
type sessionFlags struct {
	id         callctx.Identity
	agentsFile string
	policyFile string
	store      string
	limits     session.Limits
}

func (f *sessionFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.id.ProjectDir, "project-dir", "", "project directory (env TOOLHOST_PROJECT_DIR)")
	fl.StringVar(&f.id.Agent, "agent", "", "agent: pm, architect, coder, tester, integrator, bug-triager or devloop-<agent> (env TOOLHOST_AGENT)")
	fl.StringVar(&f.id.SessionID, "session", "", "session id (env TOOLHOST_SESSION; default: a new id)")
	fl.StringVar(&f.id.UnitID, "unit", "", "unit id (env TOOLHOST_UNIT)")
	fl.StringVar(&f.id.Company, "company", "", "company id (env TOOLHOST_COMPANY)")
	fl.StringVar(&f.id.ProjectID, "pid", "", "project id (env TOOLHOST_PID)")
	fl.StringVar(&f.agentsFile, "agents", "", "agents file (default: the embedded configs/agents.json)")
	fl.StringVar(&f.policyFile, "policy", "", "tool policy file (default: the embedded configs/tools.json)")
	registerStore(fl, &f.store)
	fl.Int64Var(&f.limits.AuditMaxBytes, "audit-max-bytes", audit.DefaultMaxBytes, "rotate .toolhost/audit.ndjson at this size (negative: never)")
	fl.Int64Var(&f.limits.EventsMaxBytes, "events-max-bytes", journal.DefaultEventsMaxBytes, "rotate .toolhost/events.ndjson at this size (negative: never)")
	fl.Int64Var(&f.limits.TimelineMaxBytes, "timeline-max-bytes", journal.DefaultTimelineMaxBytes, "rotate timeline.ndjson at this size (negative: never)")
}

func (f *sessionFlags) options(g *globals) session.Options {
	return session.Options{Identity: envIdentity(f.id), AgentsFile: f.agentsFile, PolicyFile: f.policyFile, Store: f.store, Version: Version, Log: g.logger(), Limits: f.limits}
}

// openSession opens a session, turning launch problems into exit code 2.
func openSession(o session.Options) (*session.Session, error) {
	s, err := session.Open(o)
	var ue *session.UsageError
	if errors.As(err, &ue) {
		return nil, usageErr(err)
	}
	return s, err
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// NewRoot builds the command tree.
func NewRoot(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	g := &globals{stderr: stderr}
	root := &cobra.Command{
		Use:           "toolhost",
		Short:         "toolhost serves the devloop tools to agent CLIs over MCP (JSON-RPC 2.0 on stdio)",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.PersistentFlags().StringVar(&g.logFormat, "log-format", envOr("TOOLHOST_LOG_FORMAT", "json"), "log format on stderr: json or console (env TOOLHOST_LOG_FORMAT)")
	root.PersistentFlags().StringVar(&g.logLevel, "log-level", envOr("TOOLHOST_LOG_LEVEL", "info"), "log level: debug, info, warn, error (env TOOLHOST_LOG_LEVEL)")
	root.AddCommand(
		newServeCmd(g),
		newInitCmd(g),
		newDoctorCmd(g),
		newToolsCmd(g),
		newAgentsCmd(g),
		newCallCmd(g),
		newPhase0Cmd(g),
		newMCPConfigCmd(g),
		newDemoCmd(g),
		newDashboardCmd(g),
		newDemoUnitCmd(),
		newPolicyCmd(),
		newAuditCmd(),
		newApproveCmd(),
		newStoreCmd(),
		newUpstreamCmd(g),
		newGuardCmd(g),
		newHookCmd(g),
		newConfineCmd(g),
		newSandboxCmd(g),
		newVersionCmd(),
	)
	return root
}

// Main runs toolhost with os.Args and returns the exit code.
func Main() int {
	return Run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
}

// Run runs toolhost with args and returns the exit code.
func Run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := NewRoot(stdin, stdout, stderr)
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) && ee.err == nil {
		return ee.code
	}
	fmt.Fprintln(stderr, "toolhost: "+strings.TrimSpace(err.Error()))
	if errors.As(err, &ee) {
		return ee.code
	}
	if strings.Contains(err.Error(), "unknown flag") || strings.Contains(err.Error(), "unknown command") ||
		strings.Contains(err.Error(), "accepts ") || strings.Contains(err.Error(), "required flag") {
		return 2
	}
	return 1
}
