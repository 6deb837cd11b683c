package engine

import (
	"context"
	"errors"
	"math/rand/v2"
	"syscall"
	"time"

	"github.com/toolhost/toolhost/internal/policy"
	"github.com/toolhost/toolhost/internal/tool"
)

// HTTPStatuser is implemented by errors that carry an upstream's HTTP
// status (the upstream MCP client's errors); 502, 503 and 504 are transient.
type HTTPStatuser interface {
	HTTPStatus() int
}

// Transient reports whether err is a fault worth another attempt of a read
// tool: a tool.TransientError, a deadline the tool hit on its own while the
// call still had time, a refused or reset connection, or an upstream
// 502/503/504.
func Transient(err error) bool {
	if err == nil {
		return false
	}
	if _, ok := errors.AsType[*tool.TransientError](err); ok {
		return true
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return true
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET):
		return true
	}
	if hs, ok := errors.AsType[interface {
		error
		HTTPStatuser
	}](err); ok {
		s := hs.HTTPStatus()
		return s == 502 || s == 503 || s == 504
	}
	return false
}

// retry makes up to 1+max_retries attempts of a read tool while they fail
// transiently; a write tool gets exactly one attempt whatever the policy
// says, because repeating a write that may have half happened is not safe.
func (e *Engine) retry(next Handler) Handler {
	return func(ctx context.Context, c *Call) error {
		attempts := 1
		if c.Decision.Permission == policy.Read {
			attempts += c.Decision.MaxRetries
		}
		for i := 0; ; i++ {
			c.Result = tool.Result{}
			err := next(ctx, c)
			if err == nil || err == errAnswered || i+1 >= attempts || !(c.timedOut || Transient(err)) {
				return err
			}
			if ctx.Err() != nil {
				c.timedOut = false
				return ctx.Err()
			}
			e.Log.Debug().Str("event", "tool_retry").Str("tool", c.Tool).Str("call_id", c.Meta.CallID).
				Int("attempt", i+1).Err(err).Msg("transient fault; retrying")
			t := time.NewTimer(e.backoff(i))
			select {
			case <-ctx.Done():
				t.Stop()
				c.timedOut = false
				return ctx.Err()
			case <-t.C:
			}
			c.Retries++
		}
	}
}

// backoff is the wait before retry n+1: exponential from RetryBase, capped
// at RetryCap, with "equal jitter" (half fixed, half random) so processes
// that failed together do not retry in lockstep.
func (e *Engine) backoff(n int) time.Duration {
	d := e.RetryCap
	if n < 30 {
		d = min(e.RetryBase<<n, e.RetryCap)
	}
	half := d / 2
	return half + rand.N(half+1)
}
