package cli

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"runtime/pprof"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/toolhost/toolhost/internal/confine"
	"github.com/toolhost/toolhost/internal/httpserve"
	"github.com/toolhost/toolhost/internal/rpc"
	"github.com/toolhost/toolhost/internal/secrets"
	"github.com/toolhost/toolhost/internal/trace"
	"github.com/toolhost/toolhost/internal/webguard"
)

func newServeCmd(g *globals) *cobra.Command {
	var sf sessionFlags
	var framing string
	var pageSize, maxMessage, maxInFlight int
	var grace time.Duration
	var cpuProfile string
	var httpAddr, authToken string
	var allowOrigins []string
	var bodyTimeout time.Duration
	var traceArgs bool
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve one agent session over MCP on stdin/stdout",
		Long: "serve is what an agent CLI launches: JSON-RPC 2.0 on stdin/stdout (newline-delimited by default,\n" +
			"--framing lsp for Content-Length headers). stdout carries protocol messages only; logs go to stderr.\n" +
			"With --http ADDR it serves the same tools, through the same gate, over MCP Streamable HTTP at\n" +
			"http://ADDR/mcp instead. Every HTTP request must carry Authorization: Bearer <token>, loopback included:\n" +
			"the token of this agent and project, made on first use and kept in toolhost's secrets directory\n" +
			"($TOOLHOST_SECRETS_DIR, else $XDG_STATE_HOME/toolhost/secrets or ~/.local/state/toolhost/secrets), which the\n" +
			"agents' confined commands cannot read. `toolhost mcp-config --http URL` gives Claude CLI a headersHelper\n" +
			"that sends it; `toolhost mcp-config --http-headers` prints the header.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if framing != "ndjson" && framing != "lsp" {
				return usageErr(errorf("--framing must be ndjson or lsp, not %q", framing))
			}
			// Signals are caught from the first instant: a SIGTERM that arrives
			// while the session is still opening shuts down cleanly too.
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
			defer stop()
			// A client that closes our stdout must not kill us with SIGPIPE:
			// the write fails with EPIPE instead, the session drains and
			// closes, and the units it started are stopped.
			signal.Ignore(syscall.SIGPIPE)
			if cpuProfile != "" {
				stopProfile, err := startCPUProfile(cpuProfile)
				if err != nil {
					return err
				}
				defer stopProfile()
			}
			if authToken != "" {
				return errSecretInArgv("--auth-token", "serve --http keeps its token in toolhost's secrets directory; toolhost mcp-config --http-headers prints the header")
			}
			var loopback bool
			if httpAddr != "" {
				if err := refuseEnvToken("serve --http keeps its token in toolhost's secrets directory"); err != nil {
					return err
				}
				host, _, err := net.SplitHostPort(httpAddr)
				if err != nil {
					return usageErr(errorf("--http %q: want HOST:PORT, e.g. 127.0.0.1:8765", httpAddr))
				}
				loopback = webguard.IsLoopbackHost(host)
			}
			var ln net.Listener
			if httpAddr != "" {
				// Listening (and registering the port, which confined
				// commands are then refused) before the session opens, so
				// that no process it starts, an upstream server included,
				// can reach it.
				var err error
				if ln, err = net.Listen("tcp", httpAddr); err != nil {
					return err
				}
				defer ln.Close()
				release, err := confine.RegisterServer(ln.Addr())
				if err != nil {
					return err
				}
				defer release()
			}
			o := sf.options(g)
			o.PageSize = pageSize
			// Deferred before the session's Close, so it runs after it: the
			// session's span ends, then everything queued is flushed.
			tp, flush := telemetry(o.Log, traceArgs, grace)
			defer flush()
			o.Trace = tp
			o.Announce = true
			s, err := openSession(o)
			if err != nil {
				return err
			}
			// Deferred after stop so it runs first: closing the session stops
			// its units, and a second SIGTERM meanwhile must not cut that short.
			defer s.Close()
			// The upstream servers are stopped within the same grace as the
			// calls, counted from when shutdown began (a signal, or the end
			// of input), not after the calls drained.
			shutdown := sync.OnceFunc(func() { s.ShuttingDown(grace) })
			defer context.AfterFunc(ctx, shutdown)()
			log := o.Log
			log.Info().Str("event", "serve").Str("agent", s.Agent.Name).Str("project_dir", s.Files.ProjectDir()).
				Str("session", s.Engine.Identity.SessionID).Str("framing", framing).Msg("serving")
			if ln != nil {
				// The token lives in this process's memory: other processes
				// of the user may not read it there either.
				if err := secrets.HideProcess(); err != nil {
					return err
				}
				token, file, err := httpToken(s.Agent.Name, s.Files.ProjectDir())
				if err != nil {
					return fmt.Errorf("the HTTP bearer token: %w", err)
				}
				h := httpserve.New(s.Server, httpserve.Options{AuthToken: token, AllowedOrigins: allowOrigins,
					BodyTimeout: bodyTimeout, MaxMessage: maxMessage, MaxInFlight: maxInFlight, Log: log, Grace: grace})
				ev := log.Info()
				if !loopback {
					ev = log.Warn().Str("warning", "not loopback: the bearer token crosses the network in clear text; put TLS in front")
				}
				ev.Str("event", "http_listening").Str("url", httpserve.URL(ln.Addr())).Str("bearer_file", file).
					Msg("serving MCP over Streamable HTTP; every request needs Authorization: Bearer <the token in bearer_file>")
				err = h.Serve(ctx, ln)
				log.Info().Str("event", "exit").Int64("audit_write_failures", s.Engine.AuditFailures()).Msg("session ended")
				return err
			}
			in, out, restore := pollableStdio(cmd.InOrStdin(), cmd.OutOrStdout())
			defer restore()
			err = rpc.Serve(ctx, &endNotifier{r: in, end: shutdown}, out, s.Server, rpc.Options{
				LSP: framing == "lsp", MaxMessage: maxMessage, MaxInFlight: maxInFlight, Grace: grace, Log: log,
				Values: trace.WithTransport(context.Background(), trace.Transport{Network: "pipe"}),
			})
			log.Info().Str("event", "exit").Int64("audit_write_failures", s.Engine.AuditFailures()).Msg("session ended")
			return err
		},
	}
	sf.register(cmd)
	cmd.Flags().StringVar(&framing, "framing", "ndjson", "message framing: ndjson (MCP stdio) or lsp (Content-Length headers)")
	cmd.Flags().IntVar(&pageSize, "page-size", 0, "tools per tools/list page (default 100)")
	cmd.Flags().IntVar(&maxMessage, "max-message-bytes", rpc.DefaultMaxMessage, "largest accepted message")
	cmd.Flags().IntVar(&maxInFlight, "max-in-flight", rpc.DefaultMaxInFlight, "requests served at once: past it stdio stops reading until one is answered, and HTTP (for the whole server) answers 503 with Retry-After")
	cmd.Flags().DurationVar(&grace, "grace", 10*time.Second, "how long in-flight calls may finish after EOF or SIGTERM")
	cmd.Flags().StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the session to this file (for performance work)")
	cmd.Flags().StringVar(&httpAddr, "http", "", "serve MCP Streamable HTTP on HOST:PORT (path /mcp) instead of stdio")
	// Gone (a secret in argv is readable by every process of the user); kept
	// hidden to say so to whoever still passes it.
	cmd.Flags().StringVar(&authToken, "auth-token", "", "")
	_ = cmd.Flags().MarkHidden("auth-token")
	cmd.Flags().StringSliceVar(&allowOrigins, "allow-origin", nil, "with --http: a browser origin (e.g. http://localhost:3000) served besides the server's own loopback origin; repeatable")
	cmd.Flags().DurationVar(&bodyTimeout, "http-body-timeout", httpserve.DefaultBodyTimeout, "with --http: how long a client may take to send a request's headers or body")
	cmd.Flags().BoolVar(&traceArgs, "trace-args", false, "put tool arguments and results, redacted as in the audit trail, on the OpenTelemetry spans (exported when OTEL_* variables ask for it)")
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

// endNotifier runs end once its reader reports the end of input (or fails).
type endNotifier struct {
	r   io.Reader
	end func()
}

func (e *endNotifier) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil {
		e.end()
	}
	return n, err
}
