package testutil

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/toolhost/toolhost/internal/bugs"
)

// BugCorpus returns n bugs (BUG-0001 on) whose titles and evidence (a test
// name, a log line) are made of a small realistic vocabulary of subjects,
// actions and faults, the same for the same n: what the similarity
// benchmarks search. Only ID, Title and Evidence are set.
func BugCorpus(n int) []bugs.Bug {
	subjects := []string{"todo", "user", "session", "order", "invoice", "cart", "token", "report", "upload", "search", "profile", "webhook"}
	verbs := []string{"create", "update", "delete", "list", "fetch", "export", "import", "sync", "login", "logout", "paginate", "filter"}
	faults := []string{"returns 404", "returns 500", "times out", "EADDRINUSE on start", "ECONNREFUSED to db", "assertion expected true received false",
		"Cannot find module", "status expected 201 got 200", "missing field id", "TypeError undefined", "flaky on CI", "permission denied"}
	r := rand.New(rand.NewPCG(1, 2))
	out := make([]bugs.Bug, 0, n)
	for i := 1; i <= n; i++ {
		s, v, f := subjects[r.IntN(len(subjects))], verbs[r.IntN(len(verbs))], faults[r.IntN(len(faults))]
		out = append(out, bugs.Bug{
			ID:    bugs.FormatID(i),
			Title: fmt.Sprintf("%s %s %s (case %d)", v, s, f, r.IntN(300)),
			Evidence: []bugs.Evidence{{
				Test: fmt.Sprintf("%s api %s %s", s, v, subjects[r.IntN(len(subjects))]),
				Log:  fmt.Sprintf("Error: %s while handling %s /%ss/%d", f, strings.ToUpper(v), s, r.IntN(1000)),
			}},
		})
	}
	return out
}
