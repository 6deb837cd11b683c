package gopool

import "time"

// Pool hands functions to idle workers, starting one when none is idle.
// The zero value is not usable; call New.
type Pool struct {
	work chan func()
	idle time.Duration
}

// New returns a pool whose workers exit after idle time without work.
func New(idle time.Duration) *Pool {
	return &Pool{work: make(chan func()), idle: idle}
}

// Go runs f on an idle worker, or on a new one.
func (p *Pool) Go(f func()) {
	select {
	case p.work <- f:
	default:
		go p.worker(f)
	}
}

func (p *Pool) worker(f func()) {
	f()
	t := time.NewTimer(p.idle)
	defer t.Stop()
	for {
		select {
		case f := <-p.work:
			f()
			// Reset discards a tick that fired while f ran (Go 1.23
			// timers): no Stop-and-drain needed.
			t.Reset(p.idle)
		case <-t.C:
			return
		}
	}
}
