package otlp

import (
	"context"
	"errors"
	"os"
	"strconv"
	"sync"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// batcher is the span processor: an ended span is appended to a bounded
// buffer under a mutex, and one goroutine exports a batch once the buffer
// holds a full one or the schedule delay has passed. The SDK's batch
// processor hands every span to its goroutine over a channel, which wakes
// that goroutine per span (three per call here, each a cross-CPU wake-up
// that costs more than the span); here a span costs an append and the
// goroutine wakes once per batch. It reads the SDK's OTEL_BSP_* variables.
// A full buffer drops spans (counted), so a collector that is down or
// hangs costs bounded memory and never blocks a call.
type batcher struct {
	exp      sdktrace.SpanExporter
	delay    time.Duration
	timeout  time.Duration
	maxQueue int
	maxBatch int
	onDrop   func(n int)

	mu     sync.Mutex
	buf    []sdktrace.ReadOnlySpan
	closed bool

	// exporting is held by the one export running (the goroutine's or a
	// flush's); a flush waits for it only as long as its context allows.
	exporting chan struct{}
	kick      chan struct{}
	stop      chan struct{}
	done      chan struct{}
	once      sync.Once
}

// newBatcher starts the processor's goroutine; onDrop counts the spans a
// full buffer refused.
func newBatcher(exp sdktrace.SpanExporter, onDrop func(int)) *batcher {
	b := &batcher{
		exp: exp, onDrop: onDrop,
		delay:     envMillis("OTEL_BSP_SCHEDULE_DELAY", 5000),
		timeout:   envMillis("OTEL_BSP_EXPORT_TIMEOUT", 30000),
		maxQueue:  envInt("OTEL_BSP_MAX_QUEUE_SIZE", 2048),
		maxBatch:  envInt("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", 512),
		exporting: make(chan struct{}, 1), kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
	}
	// As the specification says, a batch is never larger than the queue.
	b.maxBatch = min(b.maxBatch, b.maxQueue)
	go b.run()
	return b
}

func envMillis(key string, def int) time.Duration {
	return time.Duration(envInt(key, def)) * time.Millisecond
}

func envInt(key string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(key)); err == nil && n > 0 {
		return n
	}
	return def
}

// OnStart implements sdktrace.SpanProcessor.
func (b *batcher) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

// OnEnd implements sdktrace.SpanProcessor.
func (b *batcher) OnEnd(s sdktrace.ReadOnlySpan) {
	if !s.SpanContext().IsSampled() {
		return
	}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return
	}
	if len(b.buf) >= b.maxQueue {
		b.mu.Unlock()
		b.onDrop(1)
		return
	}
	b.buf = append(b.buf, s)
	full := len(b.buf) == b.maxBatch
	b.mu.Unlock()
	if full {
		select {
		case b.kick <- struct{}{}:
		default:
		}
	}
}

func (b *batcher) run() {
	defer close(b.done)
	t := time.NewTimer(b.delay)
	defer t.Stop()
	for {
		all := false
		select {
		case <-b.stop:
			return
		case <-b.kick:
		case <-t.C:
			all = true
		}
		b.export(context.Background(), all)
		t.Reset(b.delay)
	}
}

// export sends the buffer in batches: every span when all is set, else
// only full batches (the rest waits for the schedule delay).
func (b *batcher) export(ctx context.Context, all bool) error {
	select {
	case b.exporting <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-b.exporting }()
	var errs []error
	for {
		b.mu.Lock()
		n := min(len(b.buf), b.maxBatch)
		if n == 0 || (!all && n < b.maxBatch) {
			b.mu.Unlock()
			return errors.Join(errs...)
		}
		batch := make([]sdktrace.ReadOnlySpan, n)
		copy(batch, b.buf)
		b.buf = append(b.buf[:0], b.buf[n:]...)
		b.mu.Unlock()
		ectx, cancel := context.WithTimeout(ctx, b.timeout)
		err := b.exp.ExportSpans(ectx, batch)
		cancel()
		if err != nil {
			errs = append(errs, err)
		}
		if ctx.Err() != nil {
			return errors.Join(append(errs, ctx.Err())...)
		}
	}
}

// ForceFlush implements sdktrace.SpanProcessor: everything buffered is
// exported within ctx.
func (b *batcher) ForceFlush(ctx context.Context) error {
	return b.export(ctx, true)
}

// Shutdown implements sdktrace.SpanProcessor: it takes no more spans,
// exports what is buffered within ctx and shuts the exporter down.
func (b *batcher) Shutdown(ctx context.Context) error {
	var err error
	b.once.Do(func() {
		b.mu.Lock()
		b.closed = true
		b.mu.Unlock()
		close(b.stop)
		// An export still running (a collector that hangs) holds the
		// flush off until ctx ends; the exporter's shutdown then cancels it.
		err = errors.Join(b.export(ctx, true), b.exp.Shutdown(ctx))
	})
	return err
}
