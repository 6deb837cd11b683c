// Package bugs defines the bug record (bugs/BUG-NNNN.json) shared by the
// tester tools that write it and the triager tools that read it: the read
// side of the store (Load, Scan), and the store the bug tools use
// (Store.Open with id allocation and dedupe, Store.Transition along the
// bug's state machine (transitions), Store.List), whose index of summaries
// (bugs/index.ndjson, index.go) makes each of them cost the same at any
// number of bugs.
//
// Every write goes through a Door — in toolhost the services' sandbox, whose
// allow-list holds bugs/** — and happens under cross-process locks, so the
// toolhost processes of six agents never allocate the same id, never create
// two bugs for one fingerprint and never lose an appended evidence or a
// history entry. This package must never write with os directly and never
// decide who may call it: the engine's policy does.
package bugs
