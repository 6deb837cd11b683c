package cli

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/toolhost/toolhost/internal/confine"
	"github.com/toolhost/toolhost/internal/procs"
	"github.com/toolhost/toolhost/internal/secrets"
	"github.com/toolhost/toolhost/internal/store/filestore"
	"github.com/toolhost/toolhost/internal/store/pgstore"
	"github.com/toolhost/toolhost/internal/webguard"
)

// dashboardFlags are the flags of `toolhost dashboard` (and the address of
// `toolhost demo --dashboard`).
type dashboardFlags struct {
	stateFlags
	addr       string
	open       bool
	authToken  string
	agentsFile string
	policyFile string
}

// register adds the flags; the address flag is addrFlag (demo, whose other
// flags are the demo's, calls it --dashboard-addr, and always opens the
// browser).
func (f *dashboardFlags) register(cmd *cobra.Command, addrFlag string, withProject bool) {
	fl := cmd.Flags()
	if withProject {
		f.stateFlags.register(fl, "")
		fl.StringVar(&f.agentsFile, "agents", "", "agents file the project's servers use (default: the embedded configs/agents.json)")
		fl.StringVar(&f.policyFile, "policy", "", "tool policy file the project's servers use (default: the embedded configs/tools.json)")
		fl.BoolVar(&f.open, "open", false, "open the dashboard in the browser, when there is one")
	}
	fl.StringVar(&f.addr, addrFlag, "127.0.0.1:0", "address the dashboard listens on (HOST:PORT; port 0 picks a free one)")
	// Gone (a secret in argv is readable by every process of the user); kept
	// hidden to say so to whoever still passes it.
	fl.StringVar(&f.authToken, "auth-token", "", "")
	_ = fl.MarkHidden("auth-token")
}

func newDashboardCmd(g *globals) *cobra.Command {
	var f dashboardFlags
	cmd := &cobra.Command{
		Use:   "dashboard --project-dir D [--addr 127.0.0.1:0] [--open]",
		Short: "Serve a live dashboard of a project: agents, timeline, bugs, audit, approvals, documents",
		Long: "dashboard serves one page, live through Server-Sent Events, showing the project's agents (todolist, runtime\n" +
			"state, last call, whether a toolhost serve runs for them), the timeline, the bug board, the audit stream\n" +
			"with per-tool durations, the documents, and the calls waiting for a human with Approve and Deny buttons\n" +
			"that do what `toolhost approve ID [--deny]` does. It reads the project's stores and writes nothing but those\n" +
			"decisions. Only a human decides: the buttons work in a browser that entered the one-time code the\n" +
			"dashboard prints here, on its own terminal, and nowhere else (each code works once; the next is printed\n" +
			"when it is used). It listens on loopback unless --addr names another address, where every page but the\n" +
			"sign-in needs the code too. It runs until Ctrl-C.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.resolve(false); err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
			defer stop()
			run, err := startDashboard(ctx, f, cmd.OutOrStdout(), g.logger())
			if err != nil {
				return err
			}
			return run()
		},
	}
	f.register(cmd, "addr", true)
	return cmd
}

// startDashboard checks the flags, opens the project and listens; it prints
// the URL (and opens the browser with --open). The function it returns
// serves until ctx ends.
func startDashboard(ctx context.Context, f dashboardFlags, out io.Writer, log zerolog.Logger) (func() error, error) {
	if f.authToken != "" {
		return nil, errSecretInArgv("--auth-token", "the dashboard prints a one-time code on its terminal instead, which the browser trades for a session")
	}
	if err := refuseEnvToken("the dashboard prints a one-time code on its terminal instead"); err != nil {
		return nil, err
	}
	host, _, err := net.SplitHostPort(f.addr)
	if err != nil {
		return nil, usageErr(fmt.Errorf("address %q: want HOST:PORT, e.g. 127.0.0.1:8766", f.addr))
	}
	// The sessions and the code live in this process's memory: other
	// processes of the user may not read it.
	if err := secrets.HideProcess(); err != nil {
		return nil, err
	}
	st, err := f.stateFlags.open(filestore.DecisionsOnly)
	if err != nil {
		return nil, err
	}
	if pg, ok := st.(*pgstore.Store); ok {
		sayWhoHoldsDecisionsOnly(ctx, pg, log)
	}
	d, err := newDashboard(f, out, log, st)
	if err != nil {
		st.Close()
		return nil, usageErr(err)
	}
	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		d.Close()
		st.Close()
		return nil, err
	}
	// Confined commands are refused the port while it is registered.
	release, err := confine.RegisterServer(ln.Addr())
	if err != nil {
		ln.Close()
		d.Close()
		st.Close()
		return nil, err
	}
	url := d.URL(ln.Addr())
	fmt.Fprintf(out, "toolhost dashboard: %s\n", url)
	if !webguard.IsLoopbackHost(host) {
		fmt.Fprintln(out, "toolhost dashboard: not on loopback: the code and the session cross the network in clear text; put TLS in front")
	}
	if f.open {
		openBrowser(url, out, log)
	}
	return func() error {
		defer release()
		defer st.Close()
		defer d.Close()
		return d.Serve(ctx, ln)
	}, nil
}

// dashboardServer is what startDashboard needs of a *dashboard.Dashboard
// (built by newDashboard, whose file BenchmarkStartCost's builds can leave
// out).
type dashboardServer interface {
	URL(net.Addr) string
	Serve(context.Context, net.Listener) error
	Close() error
}

// openBrowser starts the desktop's browser on url when there is one: the
// program $BROWSER names, else the desktop's opener (desktopOpener).
func openBrowser(url string, out io.Writer, log zerolog.Logger) {
	prog := os.Getenv("BROWSER")
	if prog == "" {
		prog = desktopOpener()
	}
	path, err := exec.LookPath(prog)
	if prog == "" || err != nil {
		fmt.Fprintln(out, "no browser to open here: open the URL above in one")
		return
	}
	// Detached: the browser is the user's, not a child to stop with us.
	if _, err := procs.Spawn(procs.Spec{Name: "browser", Argv: []string{path, url}, Env: os.Environ(), Detached: true}); err != nil {
		log.Warn().Err(err).Str("browser", path).Msg("cannot start the browser")
		fmt.Fprintln(out, "the browser did not start: open the URL above in one")
	}
}

// sayWhoHoldsDecisionsOnly logs whether the database holds the dashboard
// to writing decisions only (its role was made with `toolhost store
// grant-decisions`), or toolhost's code alone does.
func sayWhoHoldsDecisionsOnly(ctx context.Context, pg *pgstore.Store, log zerolog.Logger) {
	only, err := pg.WritesOnlyDecisions(ctx)
	switch {
	case err != nil:
		log.Warn().Err(err).Msg("cannot tell what the dashboard's database role may write")
	case only:
		log.Info().Str("event", "dashboard_role").Msg("the database lets the dashboard write the confirmations alone")
	default:
		log.Warn().Str("event", "dashboard_role").Msg("the dashboard's database role may write more than the confirmations, so only toolhost's code keeps it to decisions; toolhost store grant-decisions ROLE makes a role the database keeps to them (then give the dashboard a --store that connects as ROLE)")
	}
}
