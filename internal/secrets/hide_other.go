//go:build !linux

package secrets

// HideProcess is a no-op where the kernel offers no per-process switch.
func HideProcess() error { return nil }
