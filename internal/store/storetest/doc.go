// Package storetest is the contract every store.Store implementation
// passes: one source of tests, run against the file store and the database
// store (Run). Each test opens several stores on one project, as several
// toolhost processes (or machines) would, and checks what a user sees:
// nothing lost, nothing doubled, sequences strictly increasing, one chain
// that verifies, one bug per fingerprint, one use per approval.
//
// It is imported by tests only.
package storetest
