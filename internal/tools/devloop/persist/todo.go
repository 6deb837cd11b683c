package persist

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/toolhost/toolhost/internal/callctx"
	"github.com/toolhost/toolhost/internal/store"
	"github.com/toolhost/toolhost/internal/tool"
)

// TodoItemInput is one step of a todolist as the agent writes it.
type TodoItemInput struct {
	ID          string   `json:"id" jsonschema:"pattern=^step-\\d{3}$" jsonschema_description:"step id, step-001 ... step-999"`
	Description string   `json:"description" jsonschema:"minLength=1,maxLength=2000" jsonschema_description:"what this step does"`
	DependsOn   []string `json:"depends_on,omitempty" jsonschema_description:"ids of steps that must be done before this one starts"`
}

// WriteTodolistInput replaces the agent's todolist.
type WriteTodolistInput struct {
	Items []TodoItemInput `json:"items" jsonschema:"minItems=1,maxItems=500" jsonschema_description:"the steps, in order"`
}

// WriteTodolistOutput is the result of write_todolist.
type WriteTodolistOutput struct {
	tool.Status
	Total int    `json:"total,omitempty" jsonschema_description:"number of steps written"`
	Path  string `json:"path,omitempty" jsonschema_description:"project-relative path of the todolist"`
}

// WriteTodolist is the write_todolist tool.
func WriteTodolist() tool.Tool {
	return tool.New(tool.Spec{
		Name:        "write_todolist",
		Title:       "Write todolist",
		Description: "Replace this agent's todolist (agent-state/<agent>-todo.json) with the given steps, all in status todo. Step ids are step-001...; depends_on must name other steps and must not form a cycle.",
		Effect:      tool.Destructive,
		Idempotent:  true,
	}, writeTodolist)
}

func writeTodolist(ctx context.Context, c *callctx.Ctx, in WriteTodolistInput) (WriteTodolistOutput, error) {
	if reason := checkGraph(in.Items); reason != "" {
		return WriteTodolistOutput{Status: tool.Status{Reason: reason}}, nil
	}
	now := c.Clock.Now()
	// time.Time has no empty value for omitempty: a step never updated
	// since the list was written was last changed now.
	tl := store.Todolist{Agent: c.Agent, CallID: c.CallID, CreatedAt: now, UpdatedAt: now, Items: make([]store.TodoItem, len(in.Items))}
	for i, it := range in.Items {
		tl.Items[i] = store.TodoItem{ID: it.ID, Description: it.Description, DependsOn: it.DependsOn, Status: "todo", UpdatedAt: now}
	}
	recompute(&tl)
	p := store.TodoPath(c.Agent)
	err := c.Agents.UpdateTodolist(ctx, c.Agent, func(cur *store.Todolist, _ bool) error {
		*cur = tl
		return nil
	})
	if err != nil {
		return WriteTodolistOutput{}, err
	}
	if err := c.Emit(ctx, "agent.todolist", map[string]any{"total": len(tl.Items), "path": p, "current": tl.Current}); err != nil {
		return WriteTodolistOutput{}, err
	}
	return WriteTodolistOutput{Status: tool.Status{OK: true}, Total: len(tl.Items), Path: p}, nil
}

// checkGraph returns why the steps are not a valid todolist, or "".
func checkGraph(items []TodoItemInput) string {
	index := map[string]int{}
	for i, it := range items {
		if _, dup := index[it.ID]; dup {
			return fmt.Sprintf("duplicate step id %s (items[%d]); give every step its own id", it.ID, i)
		}
		index[it.ID] = i
	}
	for i, it := range items {
		for _, d := range it.DependsOn {
			if _, ok := index[d]; !ok {
				return fmt.Sprintf("items[%d] (%s) depends on unknown step %s; depends_on may only name steps in this list", i, it.ID, d)
			}
			if d == it.ID {
				return fmt.Sprintf("%s depends on itself; remove it from its own depends_on", it.ID)
			}
		}
	}
	// Depth-first search for a cycle, reporting its path.
	const (
		white = iota
		grey
		black
	)
	color := make([]int, len(items))
	var stack []string
	var cycle []string
	var visit func(i int) bool
	visit = func(i int) bool {
		color[i] = grey
		stack = append(stack, items[i].ID)
		for _, d := range items[i].DependsOn {
			j := index[d]
			if color[j] == grey {
				cycle = append(slices.Clone(stack[slices.Index(stack, d):]), d)
				return true
			}
			if color[j] == white && visit(j) {
				return true
			}
		}
		stack = stack[:len(stack)-1]
		color[i] = black
		return false
	}
	for i := range items {
		if color[i] == white && visit(i) {
			return "depends_on forms a cycle: " + strings.Join(cycle, " → ") + "; break the cycle"
		}
	}
	return ""
}

// find returns the step with id, or nil: O(n) in the steps.
func find(tl *store.Todolist, id string) *store.TodoItem {
	for i := range tl.Items {
		if tl.Items[i].ID == id {
			return &tl.Items[i]
		}
	}
	return nil
}

// statusByID maps step ids to their statuses: O(n), built once per call so
// that dependency checks are O(1) each.
func statusByID(tl *store.Todolist) map[string]string {
	m := make(map[string]string, len(tl.Items))
	for _, it := range tl.Items {
		m[it.ID] = it.Status
	}
	return m
}

// openDeps returns the dependencies of it that are not done: O(deps).
func openDeps(it *store.TodoItem, status map[string]string) []string {
	var open []string
	for _, d := range it.DependsOn {
		if st, ok := status[d]; ok && st != "done" {
			open = append(open, d)
		}
	}
	return open
}

// recompute sets progress_pct (done+skipped over total) and current (the
// first step not done whose dependencies are done): O(n + edges).
func recompute(tl *store.Todolist) {
	status := statusByID(tl)
	finished := 0
	tl.Current = ""
	for i := range tl.Items {
		it := &tl.Items[i]
		done := it.Status == "done" || it.Status == "skipped"
		if done {
			finished++
		}
		if !done && tl.Current == "" && len(openDeps(it, status)) == 0 {
			tl.Current = it.ID
		}
	}
	if len(tl.Items) > 0 {
		tl.ProgressPct = finished * 100 / len(tl.Items)
	}
}

// UpdateTodoItemInput changes one step's status.
type UpdateTodoItemInput struct {
	ID     string `json:"id" jsonschema:"pattern=^step-\\d{3}$" jsonschema_description:"the step to update"`
	Status string `json:"status" jsonschema:"enum=todo,enum=doing,enum=done,enum=blocked,enum=skipped" jsonschema_description:"new status; doing and done need every dependency done"`
	Note   string `json:"note,omitempty" jsonschema:"maxLength=2000" jsonschema_description:"why, for the humans reading the todolist"`
}

// UpdateTodoItemOutput is the result of update_todo_item.
type UpdateTodoItemOutput struct {
	tool.Status
	ProgressPct int    `json:"progress_pct" jsonschema_description:"done and skipped steps over all steps, in percent"`
	Current     string `json:"current" jsonschema_description:"the first step not done whose dependencies are done"`
}

// UpdateTodoItem is the update_todo_item tool.
func UpdateTodoItem() tool.Tool {
	return tool.New(tool.Spec{
		Name:        "update_todo_item",
		Title:       "Update todo item",
		Description: "Set the status of one step of this agent's todolist (todo, doing, done, blocked, skipped). doing and done are refused while a dependency is not done. Returns the new progress and current step.",
		Effect:      tool.Additive,
		Idempotent:  true,
	}, updateTodoItem)
}

func updateTodoItem(ctx context.Context, c *callctx.Ctx, in UpdateTodoItemInput) (UpdateTodoItemOutput, error) {
	var out UpdateTodoItemOutput
	p := store.TodoPath(c.Agent)
	err := c.Agents.UpdateTodolist(ctx, c.Agent, func(tl *store.Todolist, existed bool) error {
		if !existed {
			return tool.Fail(nil, "no todolist yet at %s; call write_todolist first", p)
		}
		it := find(tl, in.ID)
		if it == nil {
			ids := make([]string, len(tl.Items))
			for i, x := range tl.Items {
				ids[i] = x.ID
			}
			return tool.Fail(nil, "unknown step %s; the todolist has %s", in.ID, strings.Join(ids, ", "))
		}
		if in.Status == "doing" || in.Status == "done" {
			if open := openDeps(it, statusByID(tl)); len(open) > 0 {
				return tool.Fail(nil, "%s cannot be %s while %s not done; finish those first", in.ID, in.Status, strings.Join(open, ", "))
			}
		}
		it.Status, it.Note, it.UpdatedAt = in.Status, in.Note, c.Clock.Now()
		tl.UpdatedAt = it.UpdatedAt
		recompute(tl)
		out = UpdateTodoItemOutput{Status: tool.Status{OK: true}, ProgressPct: tl.ProgressPct, Current: tl.Current}
		return nil
	})
	if err != nil {
		return out, err
	}
	if err := c.Emit(ctx, "agent.todo_item", map[string]any{"id": in.ID, "status": in.Status, "progress_pct": out.ProgressPct, "current": out.Current}); err != nil {
		return out, err
	}
	return out, nil
}
