// Package vitest is the shape of the JSON report `vitest run
// --reporter=json` writes (the Jest-compatible one Vitest 1–3 emit). The
// Tester's parse_vitest validates and summarises it; the Bug Triager reads it
// to find cited tests. One model, so the two never disagree on what a
// report says.
//
// It only describes the format; it must never read files.
package vitest

// Report is a whole report. Pointers tell a missing field from a zero one.
type Report struct {
	NumTotalTests *int          `json:"numTotalTests"`
	StartTime     float64       `json:"startTime"`
	TestResults   *[]FileResult `json:"testResults"`
}

// FileResult is one test file of a report.
type FileResult struct {
	Name             *string      `json:"name"`
	Status           string       `json:"status"`
	Message          string       `json:"message"`
	StartTime        float64      `json:"startTime"`
	EndTime          float64      `json:"endTime"`
	AssertionResults *[]Assertion `json:"assertionResults"`
}

// Assertion is one test of a file.
type Assertion struct {
	AncestorTitles  []string  `json:"ancestorTitles"`
	FullName        string    `json:"fullName"`
	Title           string    `json:"title"`
	Status          *string   `json:"status"`
	Duration        float64   `json:"duration"`
	FailureMessages []string  `json:"failureMessages"`
	Location        *Location `json:"location"`
}

// Location is where a test is declared.
type Location struct {
	Line int `json:"line"`
}
