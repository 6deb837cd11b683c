package cli

import (
	"context"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/toolhost/toolhost/internal/rpc"
)

func newServeCmd(g *globals) *cobra.Command {
	var sf sessionFlags
	var framing string
	var pageSize, maxMessage int
	var grace time.Duration
	var cpuProfile string
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve one agent session over MCP on stdin/stdout",
		Long: "serve is what an agent CLI launches: JSON-RPC 2.0 on stdin/stdout (newline-delimited by default,\n" +
			"--framing lsp for Content-Length headers). stdout carries protocol messages only; logs go to stderr.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if framing != "ndjson" && framing != "lsp" {
				return usageErr(errorf("--framing must be ndjson or lsp, not %q", framing))
			}
			if cpuProfile != "" {
				stopProfile, err := startCPUProfile(cpuProfile)
				if err != nil {
					return err
				}
				defer stopProfile()
			}
			o := sf.options(g)
			o.PageSize = pageSize
			s, err := openSession(o)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
			defer stop()
			// Deferred after stop so it runs first: closing the session stops
			// its units, and a second SIGTERM meanwhile must not cut that short.
			defer s.Close()
			log := o.Log
			log.Info().Str("event", "serve").Str("agent", s.Agent.Name).Str("project_dir", s.Files.ProjectDir()).
				Str("session", s.Engine.Identity.SessionID).Str("framing", framing).Msg("serving")
			err = rpc.Serve(ctx, cmd.InOrStdin(), cmd.OutOrStdout(), s.Server, rpc.Options{
				LSP: framing == "lsp", MaxMessage: maxMessage, Grace: grace, Log: log,
			})
			log.Info().Str("event", "exit").Int64("audit_write_failures", s.Engine.AuditFailures()).Msg("session ended")
			return err
		},
	}
	sf.register(cmd)
	cmd.Flags().StringVar(&framing, "framing", "ndjson", "message framing: ndjson (MCP stdio) or lsp (Content-Length headers)")
	cmd.Flags().IntVar(&pageSize, "page-size", 0, "tools per tools/list page (default 100)")
	cmd.Flags().IntVar(&maxMessage, "max-message-bytes", rpc.DefaultMaxMessage, "largest accepted message")
	cmd.Flags().DurationVar(&grace, "grace", 10*time.Second, "how long in-flight calls may finish after EOF or SIGTERM")
	cmd.Flags().StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the session to this file (for performance work)")
	return cmd
}

func startCPUProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); _ = f.Close() }, nil
}
