// Package gopool runs short functions on long-lived goroutines. A new
// goroutine starts with a small stack that every call on the hot path
// (JSON decoding, the pipeline, the audit row) grows again by copying; a
// worker that stays alive keeps its grown stack. Work never waits for a
// worker: when none is idle, a new one starts, so a slow function never
// delays another.
//
// It must never bound concurrency (callers rely on every Go running at
// once, as with the go statement).
package gopool
