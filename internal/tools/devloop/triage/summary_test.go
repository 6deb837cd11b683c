package triage

import (
	"context"
	"fmt"
	"sync"
	"testing"
)

// Several triager sessions (each with its own sandbox, as separate
// processes have) classifying at once never lose each other's entries in
// triage/triage.json.
func TestSummaryConcurrentUpdates(t *testing.T) {
	t.Parallel()
	dir := copyProject(t)
	ids := []string{"BUG-0001", "BUG-0002", "BUG-0003", "BUG-0004", "BUG-0005", "BUG-0006", "BUG-0007", "BUG-0010"}
	var wg sync.WaitGroup
	errs := make(chan error, len(ids)*2)
	for _, id := range ids {
		c1, c2 := newCtx(t, dir), newCtx(t, dir)
		for _, run := range []func() error{
			func() error {
				_, err := classify(context.Background(), c1, ClassifyInput{BugID: id})
				return err
			},
			func() error {
				_, err := findSimilar(context.Background(), c2, FindSimilarInput{BugID: id})
				return err
			},
		} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := run(); err != nil {
					errs <- fmt.Errorf("%s: %w", id, err)
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	var sum Summary
	readJSON(t, dir, SummaryPath, &sum)
	for _, id := range ids {
		e := sum.Bugs[id]
		if e == nil || e.Category == "" || e.Similar == nil {
			t.Errorf("%s lost an update: %+v", id, e)
		}
	}
}
