package rpc

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/rs/zerolog"
)

// Options configure Serve.
type Options struct {
	// LSP selects Content-Length framing instead of newline-delimited JSON.
	LSP bool
	// MaxMessage caps one incoming message, line ending not counted
	// (DefaultMaxMessage if zero).
	MaxMessage int
	// MaxInFlight bounds the requests running or writing their answer
	// (DefaultMaxInFlight if zero). Past it the reader stops reading until
	// one is answered (backpressure: the client's writes block), so a
	// client that pipelines without bound costs a bounded number of
	// goroutines and threads, and every request is served in turn.
	MaxInFlight int
	// Grace bounds how long in-flight calls may run after input ends or
	// shutdown starts (default 10 s).
	Grace time.Duration
	Log   zerolog.Logger
	// Values is as in ConnOptions.
	Values context.Context
}

// errOutputClosed is the cause given to calls cancelled because nothing
// can be written to the client any more.
var errOutputClosed = errors.New("the client closed toolhost's output, so no answer can reach it")

// Serve runs one session over r/w until input ends or ctx is cancelled
// (shutdown). Either way it stops taking new requests, lets in-flight ones
// finish within the grace period, writes their responses and returns nil.
func Serve(ctx context.Context, r io.Reader, w io.Writer, h Handler, opts Options) error {
	var c *Conn
	st := newStream(r, w, opts.LSP, opts.MaxMessage, func() { c.Drain() })
	c = NewConn(h, ConnOptions{Limit: NewLimit(opts.MaxInFlight), Wait: true, Grace: opts.Grace, Log: opts.Log, Session: st, Values: opts.Values})
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		for {
			var m Message
			if err := st.ReadObject(&m); err != nil {
				return
			}
			c.Dispatch(&m, st)
		}
	}()
	select {
	case <-readDone:
	case <-st.failed:
		// Nobody can receive an answer any more: cancel what runs, let it
		// end (its audit rows are written), and stop reading.
		opts.Log.Warn().Str("event", "output_closed").Msg("cannot write to the client; ending the session")
		c.Abort(errOutputClosed)
	case <-ctx.Done():
		opts.Log.Info().Str("event", "shutdown").Msg("shutting down: draining in-flight calls")
		c.Drain()
	}
	c.Close()
	return nil
}
