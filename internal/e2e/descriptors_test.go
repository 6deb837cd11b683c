package e2e

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/stdioclient"
	"github.com/toolhost/toolhost/internal/testutil"
)

// TestLargeBatchWithinDescriptorLimit: a session limited to 200 open
// files (ulimit -n) bootstraps a 300-chapter PRD site, one write batch of
// over 300 files in one directory, and every page is on disk: a batch
// holds descriptors per directory, not per file.
func TestLargeBatchWithinDescriptorLimit(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c, err := stdioclient.Start("/bin/sh", []string{"-c", `ulimit -n 200 && exec "$0" serve --agent pm --project-dir "$1" --log-level warn`, testutil.Toolhost(t), dir}, os.Environ())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(20 * time.Second) })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := c.Initialize(ctx, "2025-06-18", nil); err != nil {
		t.Fatalf("initialize: %v\n%s", err, c.Stderr())
	}
	var chs []map[string]string
	for i := range 300 {
		chs = append(chs, map[string]string{"id": fmt.Sprintf("ch-%03d", i), "title": fmt.Sprintf("Chapter %d", i)})
	}
	testutil.ResultOK(t, "bootstrap_prd_site", testutil.CallTool(t, c, "bootstrap_prd_site", map[string]any{"title": "Big PRD", "chapters": chs}), nil)
	for i := range 300 {
		if _, err := os.Stat(fmt.Sprintf("%s/prd/ch-%03d.html", dir, i)); err != nil {
			t.Fatal(err)
		}
	}
}
