package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"time"

	"github.com/spf13/cobra"

	"github.com/toolhost/toolhost/internal/audit"
	"github.com/toolhost/toolhost/internal/callctx"
	"github.com/toolhost/toolhost/internal/engine"
	"github.com/toolhost/toolhost/internal/fault"
)

func newCallCmd(g *globals) *cobra.Command {
	var sf sessionFlags
	var args string
	var unit string
	var traceArgs bool
	cmd := &cobra.Command{
		Use:   "call TOOL --args JSON --agent X --project-dir D",
		Short: "Run one tool call through the full pipeline, without a client",
		Long: "call runs TOOL once, in-process, through the same pipeline as serve (policy, validation, sandbox, audit)\n" +
			"and prints the structured result. Exit 0 when the tool did it (ok: true); 1 when it could not (ok: false,\n" +
			"printed with its reason), failed, timed out or was cancelled; 2 when a gate refused the call (unknown tool,\n" +
			"policy, schema, sandbox, guard, confirmation) or the command line is wrong.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, pos []string) error {
			raw := json.RawMessage(args)
			if !json.Valid(raw) {
				return usageErr(fmt.Errorf("--args is not valid JSON: %s", args))
			}
			o := sf.options(g)
			tp, flush := telemetry(o.Log, traceArgs, 10*time.Second)
			defer flush()
			o.Trace = tp
			s, err := openSession(o)
			if err != nil {
				return err
			}
			defer s.Close()
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
			defer stop()
			out := s.Engine.Call(ctx, engine.Request{Tool: pos[0], Args: raw, Meta: callctx.Meta{UnitID: unit}})
			switch {
			case out.Kind == fault.UnknownTool:
				return usageErr(fmt.Errorf("unknown tool %q; toolhost tools list shows the tools (--agent %s for this agent's)", pos[0], s.Agent.Name))
			case out.IsError && out.Status == audit.StatusRejected:
				return usageErr(fmt.Errorf("%s (%s/%s)", out.Message, out.Status, out.Kind))
			case out.IsError:
				return fmt.Errorf("%s (%s/%s)", out.Message, out.Status, out.Kind)
			}
			if out.Result.UpstreamError {
				return fmt.Errorf("upstream tool reported an error: %s", out.Result.Reason)
			}
			res := out.Result.Structured
			if len(res) == 0 {
				// An upstream result without structuredContent: show it whole.
				res = out.Result.Raw
			}
			var v any
			_ = json.Unmarshal(res, &v)
			if err := writeJSON(cmd.OutOrStdout(), v); err != nil {
				return err
			}
			if out.Result.Failed {
				return &exitError{code: 1, err: fmt.Errorf("%s: ok: false: %s", pos[0], out.Result.Reason)}
			}
			return nil
		},
	}
	sf.register(cmd)
	cmd.Flags().StringVar(&args, "args", "{}", "tool arguments as a JSON object")
	cmd.Flags().StringVar(&unit, "call-unit", "", "unit id for this call only (like _meta.unit_id)")
	cmd.Flags().BoolVar(&traceArgs, "trace-args", false, "put the arguments and result, redacted as in the audit trail, on the OpenTelemetry span")
	return cmd
}
