package bugs

// Where the triager keeps what it learnt about the bugs, relative to the
// project dir: documents of the triager's own directory (its allow-list),
// read by the bug views. The triage tools write them; the shapes are
// theirs.
const (
	// TriageSummaryPath is the running summary: {"bugs": {"BUG-0001":
	// {"category", "confidence", "similar": [{"bug_id", "score"}], …}}}.
	TriageSummaryPath = "triage/triage.json"
)

// TriageRecordPath is the evidence record of one bug.
func TriageRecordPath(id string) string { return "triage/" + id + ".json" }
