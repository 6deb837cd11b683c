package cli

import (
	"regexp"
	"testing"

	"github.com/toolhost/toolhost/internal/util/lazyre"
)

// TestEveryLazyExpressionCompiles: the regular expressions compiled on first
// use (lazyre) are all valid, including those of code paths no other test
// reaches. This package links every package the binary links, so every
// expression is recorded by the time the test runs.
func TestEveryLazyExpressionCompiles(t *testing.T) {
	exprs := lazyre.Recorded()
	if len(exprs) < 30 {
		t.Fatalf("only %d expressions recorded; the tool packages are not linked into this test", len(exprs))
	}
	for _, e := range exprs {
		if _, err := regexp.Compile(e); err != nil {
			t.Errorf("%s", err)
		}
	}
}
