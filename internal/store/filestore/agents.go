package filestore

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"slices"

	"github.com/toolhost/toolhost/internal/fault"
	"github.com/toolhost/toolhost/internal/sandbox"
	"github.com/toolhost/toolhost/internal/store"
)

// agentState is agent-state/<agent>-todo.json and -runtime.json, each
// replaced atomically under its own cross-process lock.
type agentState struct{ s *Store }

func (a *agentState) Todolist(_ context.Context, agent string) (*store.Todolist, error) {
	var tl store.Todolist
	ok, err := a.read(store.TodoPath(agent), &tl)
	if !ok {
		return nil, err
	}
	return &tl, nil
}

func (a *agentState) UpdateTodolist(_ context.Context, agent string, fn func(*store.Todolist, bool) error) error {
	return sandbox.UpdateJSON(a.s.door, store.TodoPath(agent), fn)
}

func (a *agentState) Runtime(_ context.Context, agent string) (*store.RuntimeState, error) {
	var rs store.RuntimeState
	ok, err := a.read(store.RuntimePath(agent), &rs)
	if !ok {
		return nil, err
	}
	return &rs, nil
}

func (a *agentState) UpdateRuntime(_ context.Context, agent string, fn func(*store.RuntimeState, bool) error) error {
	return sandbox.UpdateJSON(a.s.door, store.RuntimePath(agent), fn)
}

func (a *agentState) Agents(context.Context) ([]string, error) {
	names, err := a.s.agentFiles()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, n := range names {
		if agent, ok := agentOfFile(n); ok && !slices.Contains(out, agent) {
			out = append(out, agent)
		}
	}
	slices.Sort(out)
	return out, nil
}

// read decodes a state file; ok is false when it is missing (err nil) or
// unreadable (err set).
func (a *agentState) read(rel string, v any) (bool, error) {
	b, err := a.s.door.ReadFile(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return false, &fault.CorruptFile{Path: rel, Format: "JSON", Err: err}
	}
	return true, nil
}
