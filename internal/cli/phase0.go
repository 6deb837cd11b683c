package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/toolhost/toolhost/internal/journal"
	"github.com/toolhost/toolhost/internal/ndjson"
	"github.com/toolhost/toolhost/internal/stdioclient"
	"github.com/toolhost/toolhost/internal/store"
	"github.com/toolhost/toolhost/internal/tools/all"
)

// CriticalTools are the tools seed 000 §⑩ requires before Phase 0 passes.
var CriticalTools = []string{
	"write_todolist", "update_todo_item", "hash_contract", "bug_open",
	"archive_doc", "update_search_index", "validate_prd_site",
}

func newPhase0Cmd(_ *globals) *cobra.Command {
	var keep bool
	cmd := &cobra.Command{
		Use:   "phase0-verify",
		Short: "Check the critical tools are registered, then run one real call loop over JSON-RPC",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			w := cmd.OutOrStdout()
			reg := all.Registry()
			missing := 0
			for _, name := range CriticalTools {
				if _, ok := reg.Lookup(name); ok {
					fmt.Fprintf(w, "✓ %s registered\n", name)
				} else {
					fmt.Fprintf(w, "✗ %s missing\n", name)
					missing++
				}
			}
			loopErr := phase0Loop(cmd.Context(), w, keep)
			if loopErr != nil {
				fmt.Fprintf(w, "✗ call loop: %v\n", loopErr)
			}
			if missing > 0 || loopErr != nil {
				return fmt.Errorf("phase 0 not passed: %d critical tool(s) missing, call loop %s", missing, okWord(loopErr == nil))
			}
			fmt.Fprintln(w, "phase 0 passed")
			return nil
		},
	}
	cmd.Flags().BoolVar(&keep, "keep", false, "keep the temp project dir")
	return cmd
}

func okWord(ok bool) string {
	if ok {
		return "passed"
	}
	return "failed"
}

// phase0Loop starts `toolhost serve` over pipes on a temp project, writes a
// todolist through JSON-RPC and checks the file and the event on disk.
func phase0Loop(ctx context.Context, w io.Writer, keep bool) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	self, err := os.Executable()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "toolhost-phase0-")
	if err != nil {
		return err
	}
	if !keep {
		defer os.RemoveAll(dir)
	} else {
		fmt.Fprintf(w, "project dir: %s\n", dir)
	}
	c, err := stdioclient.Start(self, []string{"serve", "--agent", "devloop-pm", "--project-dir", dir, "--session", "phase0"}, os.Environ())
	if err != nil {
		return fmt.Errorf("start server: %w", err)
	}
	defer c.Close(5 * time.Second)
	if _, err := c.Initialize(ctx, "2025-06-18", nil); err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	fmt.Fprintln(w, "✓ initialize answered over stdio")
	res, err := c.CallTool(ctx, "write_todolist", map[string]any{"items": []map[string]any{
		{"id": "step-001", "description": "bootstrap the PRD site"},
		{"id": "step-002", "description": "write the first chapter", "depends_on": []string{"step-001"}},
	}}, map[string]any{"call_id": "phase0-call"})
	if err != nil {
		return fmt.Errorf("tools/call write_todolist: %w", err)
	}
	if res.IsError {
		return fmt.Errorf("write_todolist failed: %s", res.Text())
	}
	fmt.Fprintln(w, "✓ write_todolist called over JSON-RPC")
	b, err := os.ReadFile(filepath.Join(dir, "agent-state", "pm-todo.json"))
	if err != nil {
		return fmt.Errorf("todolist not on disk: %w", err)
	}
	var tl struct {
		Items []struct{ ID, Status string } `json:"items"`
	}
	if err := json.Unmarshal(b, &tl); err != nil || len(tl.Items) != 2 || tl.Items[0].Status != "todo" {
		return fmt.Errorf("todolist on disk is wrong: %s", b)
	}
	fmt.Fprintln(w, "✓ agent-state/pm-todo.json written with 2 items")
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	found := false
	bad, err := journal.ReadEvents(root, ndjson.Options{}, func(e store.Event, _ ndjson.Pos) error {
		found = found || e.Kind == "agent.todolist"
		return nil
	})
	if err != nil {
		return fmt.Errorf("events not on disk: %w", err)
	}
	if bad.Count > 0 {
		return fmt.Errorf(".toolhost/events.ndjson: %s", bad)
	}
	if !found {
		return fmt.Errorf("no agent.todolist event in .toolhost/events.ndjson")
	}
	fmt.Fprintln(w, "✓ agent.todolist event emitted")
	return nil
}
