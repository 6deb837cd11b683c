package demo

import _ "embed"

// The files the demo's agents "write" with their CLI's own Write tool. They
// are embedded so the demo runs from any folder with nothing but the binary.
var (
	// unitSource is unit.go itself: the Coder writes it into the project as
	// units/todo-be/src/server.go, so the triager's contract diff reads the
	// code that actually runs as `toolhost demo-unit`.
	//go:embed unit.go
	unitSource []byte

	// contractJSON is the demo contract the Architect writes to
	// contracts/todo.json; it promises DELETE /todos/{id} → 204, which the
	// unit lacks.
	//go:embed assets/todo-contract.json
	contractJSON []byte

	// vitestReport is a real `vitest run --reporter=json` report (Vitest 3
	// on the suite of internal/vitest/vitesttest, checked against a fresh
	// run by TestVitestReportIsWhatVitestWrites) the Tester writes to
	// reports/.
	//go:embed assets/vitest-report.json
	vitestReport []byte
)
