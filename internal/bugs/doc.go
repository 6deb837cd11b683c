// Package bugs defines the bug record (bugs/BUG-NNNN.json) shared by the
// tester tools that write it and the triager tools that read it, and the
// read side of the store (Load, List).
//
// The write side (id allocation under a lock, dedupe, transitions) belongs to
// the bug tools; this package must never write.
package bugs
