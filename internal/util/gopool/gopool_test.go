package gopool

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestGoNeverWaits: a blocked function does not hold up the next one, and
// every function runs exactly once.
func TestGoNeverWaits(t *testing.T) {
	t.Parallel()
	p := New(time.Second)
	release := make(chan struct{})
	var ran atomic.Int32
	var wg sync.WaitGroup
	for range 50 {
		wg.Add(1)
		p.Go(func() { defer wg.Done(); <-release; ran.Add(1) })
	}
	done := make(chan struct{})
	p.Go(func() { close(done) })
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("a function waited behind blocked ones")
	}
	close(release)
	wg.Wait()
	if ran.Load() != 50 {
		t.Fatalf("ran %d, want 50", ran.Load())
	}
}

// TestWorkersAreReusedAndExit: sequential work reuses one idle worker
// instead of starting a goroutine each time, and idle workers exit.
func TestWorkersAreReusedAndExit(t *testing.T) {
	p := New(50 * time.Millisecond)
	before := runtime.NumGoroutine()
	for range 200 {
		done := make(chan struct{})
		p.Go(func() { close(done) })
		<-done
		time.Sleep(100 * time.Microsecond) // let the worker go idle
	}
	if n := runtime.NumGoroutine() - before; n > 2 {
		t.Fatalf("%d goroutines left after 200 sequential functions; workers are not reused", n)
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			t.Fatalf("idle workers did not exit: %d goroutines, %d before", runtime.NumGoroutine(), before)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
