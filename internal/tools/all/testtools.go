//go:build testtools

package all

import (
	"context"
	"time"

	"github.com/toolhost/toolhost/internal/callctx"
	"github.com/toolhost/toolhost/internal/tool"
)

// Binaries built with -tags testtools carry four extra tools the protocol
// tests need (a slow call, a hung one, a panic, a cheap echo). Release
// builds never do.
func init() { extraTools = append(extraTools, debugSleep(), debugHang(), debugPanic(), debugEcho()) }

type sleepIn struct {
	MS int `json:"ms" jsonschema:"minimum=0,maximum=600000" jsonschema_description:"how long to sleep"`
}

type sleepOut struct {
	tool.Status
	SleptMS int64 `json:"slept_ms"`
}

func debugSleep() tool.Tool {
	return tool.New(tool.Spec{Name: "debug_sleep", Description: "Sleep for ms milliseconds, or until cancelled (test builds only).", Effect: tool.ReadOnly},
		func(ctx context.Context, c *callctx.Ctx, in sleepIn) (sleepOut, error) {
			start := time.Now()
			steps := 4
			for i := 1; i <= steps; i++ {
				select {
				case <-ctx.Done():
					return sleepOut{}, ctx.Err()
				case <-time.After(time.Duration(in.MS) * time.Millisecond / time.Duration(steps)):
					c.Progress(float64(i), float64(steps), "sleeping")
				}
			}
			return sleepOut{Status: tool.Status{OK: true}, SleptMS: time.Since(start).Milliseconds()}, nil
		})
}

// debugHang blocks for ms milliseconds whatever its context says: the
// tool that overruns its deadline (a 200 ms default timeout).
func debugHang() tool.Tool {
	return tool.New(tool.Spec{Name: "debug_hang", Description: "Block for ms milliseconds, ignoring cancellation and the deadline (test builds only).", Effect: tool.Additive, Timeout: 200 * time.Millisecond},
		func(_ context.Context, _ *callctx.Ctx, in sleepIn) (sleepOut, error) {
			time.Sleep(time.Duration(in.MS) * time.Millisecond)
			return sleepOut{Status: tool.Status{OK: true}, SleptMS: int64(in.MS)}, nil
		})
}

type panicIn struct {
	Message string `json:"message" jsonschema_description:"the panic value"`
}

func debugPanic() tool.Tool {
	return tool.New(tool.Spec{Name: "debug_panic", Description: "Panic with message (test builds only).", Effect: tool.ReadOnly},
		func(_ context.Context, _ *callctx.Ctx, in panicIn) (tool.Status, error) {
			panic(in.Message)
		})
}

type echoIn struct {
	Text string `json:"text" jsonschema:"maxLength=65536" jsonschema_description:"text to echo"`
}

type echoOut struct {
	tool.Status
	Text string `json:"text"`
}

func debugEcho() tool.Tool {
	return tool.New(tool.Spec{Name: "debug_echo", Description: "Echo text back (test builds only).", Effect: tool.ReadOnly, Idempotent: true},
		func(_ context.Context, _ *callctx.Ctx, in echoIn) (echoOut, error) {
			return echoOut{Status: tool.Status{OK: true}, Text: in.Text}, nil
		})
}
