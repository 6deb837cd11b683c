package pgstore

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/toolhost/toolhost/internal/store"
)

// change is one notification of the project: what changed (a log's name,
// or a store.Changed* value) and for whom. What "*" says that
// notifications may have been missed (the listener reconnected): look at
// everything.
type change struct{ what, agent string }

const resync = "*"

// listener holds the one LISTEN connection of a Store and hands the
// project's notifications to every subscriber. It starts with the first
// subscriber and reconnects with backoff until the store closes.
type listener struct {
	s *Store

	mu     sync.Mutex
	subs   map[chan change]struct{}
	cancel context.CancelFunc
	done   chan struct{}
}

func newListener(s *Store) *listener {
	return &listener{s: s, subs: map[chan change]struct{}{}}
}

// subscribe returns a channel of changes and its release. A subscriber
// that does not keep up loses changes, never the resync that follows a
// gap: it is sent as its own (coalescing) slot.
func (l *listener) subscribe() (<-chan change, func()) {
	ch := make(chan change, 256)
	l.mu.Lock()
	l.subs[ch] = struct{}{}
	if l.cancel == nil {
		ctx, cancel := context.WithCancel(context.Background())
		l.cancel, l.done = cancel, make(chan struct{})
		go l.run(ctx, l.done)
	}
	l.mu.Unlock()
	return ch, func() {
		l.mu.Lock()
		delete(l.subs, ch)
		l.mu.Unlock()
	}
}

func (l *listener) close() {
	l.mu.Lock()
	cancel, done := l.cancel, l.done
	l.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

func (l *listener) send(c change) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for ch := range l.subs {
		select {
		case ch <- c:
		default:
			// Full: the subscriber looks at everything when it drains.
			select {
			case <-ch:
			default:
			}
			select {
			case ch <- change{what: resync}:
			default:
			}
		}
	}
}

func (l *listener) run(ctx context.Context, done chan struct{}) {
	defer close(done)
	wait := 50 * time.Millisecond
	for ctx.Err() == nil {
		err := l.listen(ctx, func() { wait = 50 * time.Millisecond })
		if ctx.Err() != nil {
			return
		}
		_ = err
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, 2*time.Second)
	}
}

// listen runs one LISTEN connection until it fails; connected is called
// once it listens (after which every subscriber re-reads: what happened
// while no one listened was not heard).
func (l *listener) listen(ctx context.Context, connected func()) error {
	conn, err := l.s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `LISTEN toolhost`); err != nil {
		conn.Conn().Close(ctx)
		return err
	}
	connected()
	l.send(change{what: resync})
	prefix := l.s.pid + "\x1f"
	for {
		n, err := conn.Conn().WaitForNotification(ctx)
		if err != nil {
			// The connection is not reusable for others while LISTENing.
			conn.Conn().Close(context.Background())
			return err
		}
		rest, ok := strings.CutPrefix(n.Payload, prefix)
		if !ok {
			continue
		}
		what, agent, _ := strings.Cut(rest, "\x1f")
		l.send(change{what: what, agent: agent})
	}
}

// Watch reports the changes of the agents' states, the bugs and the
// confirmations, from every machine, as the database notifies them; after
// a gap (the listener reconnected) every kind is reported, with each agent
// that has a state.
func (s *Store) Watch(ctx context.Context, fn func(store.Change)) error {
	ch, release := s.listen.subscribe()
	defer release()
	for {
		select {
		case <-ctx.Done():
			return nil
		case c := <-ch:
			switch c.what {
			case store.ChangedAgent, store.ChangedBugs, store.ChangedConfirmations:
				fn(store.Change{What: c.what, Agent: c.agent})
			case resync:
				fn(store.Change{What: store.ChangedBugs})
				fn(store.Change{What: store.ChangedConfirmations})
				agents, err := s.agents.Agents(ctx)
				if err == nil {
					for _, a := range agents {
						fn(store.Change{What: store.ChangedAgent, Agent: a})
					}
				}
			}
		}
	}
}
