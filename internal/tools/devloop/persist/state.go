package persist

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/toolhost/toolhost/internal/callctx"
	"github.com/toolhost/toolhost/internal/redact"
	"github.com/toolhost/toolhost/internal/sandbox"
	"github.com/toolhost/toolhost/internal/store"
	"github.com/toolhost/toolhost/internal/tool"
)

// UpdateRuntimeStateInput is merged into the agent's runtime state.
type UpdateRuntimeStateInput struct {
	Phase   string         `json:"phase,omitempty" jsonschema:"maxLength=200" jsonschema_description:"the loop phase the agent is in"`
	Status  string         `json:"status,omitempty" jsonschema:"maxLength=200" jsonschema_description:"short status word, e.g. working, waiting, blocked"`
	Message string         `json:"message,omitempty" jsonschema:"maxLength=4000" jsonschema_description:"a sentence for the humans watching"`
	Data    map[string]any `json:"data,omitempty" jsonschema_description:"keys merged into the stored data object (a null value removes the key)"`
}

// UpdateRuntimeStateOutput is the result of update_runtime_state.
type UpdateRuntimeStateOutput struct {
	tool.Status
	Path  string              `json:"path,omitempty" jsonschema_description:"project-relative path of the runtime state"`
	State *store.RuntimeState `json:"state,omitempty" jsonschema_description:"the state after the merge"`
}

// UpdateRuntimeState is the update_runtime_state tool.
func UpdateRuntimeState() tool.Tool {
	return tool.New(tool.Spec{
		Name:        "update_runtime_state",
		Title:       "Update runtime state",
		Description: "Merge phase, status, message and data keys into this agent's runtime state (agent-state/<agent>-runtime.json); fields left out keep their value.",
		Effect:      tool.Additive,
		Idempotent:  true,
	}, updateRuntimeState)
}

func updateRuntimeState(ctx context.Context, c *callctx.Ctx, in UpdateRuntimeStateInput) (UpdateRuntimeStateOutput, error) {
	p := store.RuntimePath(c.Agent)
	var st store.RuntimeState
	err := c.Agents.UpdateRuntime(ctx, c.Agent, func(s *store.RuntimeState, _ bool) error {
		s.Agent = c.Agent
		if in.Phase != "" {
			s.Phase = in.Phase
		}
		if in.Status != "" {
			s.Status = in.Status
		}
		// The state file keeps no credential an agent put in it.
		if in.Message != "" {
			s.Message = redact.String(in.Message)
		}
		for k, v := range in.Data {
			if s.Data == nil {
				s.Data = map[string]any{}
			}
			switch {
			case v == nil:
				delete(s.Data, k)
			case redact.IsSecretKey(k):
				s.Data[k] = redact.Redacted
			default:
				s.Data[k] = redact.Value(v)
			}
		}
		s.CallID, s.UpdatedAt = c.CallID, c.Clock.Now()
		st = *s
		return nil
	})
	if err != nil {
		return UpdateRuntimeStateOutput{}, err
	}
	if err := c.Emit(ctx, "agent.runtime", map[string]any{"phase": st.Phase, "status": st.Status, "message": st.Message}); err != nil {
		return UpdateRuntimeStateOutput{}, err
	}
	return UpdateRuntimeStateOutput{Status: tool.Status{OK: true}, Path: p, State: &st}, nil
}

// TimelineAppendInput is one entry for the shared timeline.
type TimelineAppendInput struct {
	Kind    string         `json:"kind" jsonschema:"pattern=^[a-z][a-z0-9_.-]{0\\,63}$" jsonschema_description:"entry kind, lower case, e.g. prd.chapter or test.run"`
	Message string         `json:"message" jsonschema:"minLength=1,maxLength=4000" jsonschema_description:"what happened, in one sentence"`
	Data    map[string]any `json:"data,omitempty" jsonschema_description:"structured details"`
}

// TimelineAppendOutput is the result of timeline_append.
type TimelineAppendOutput struct {
	tool.Status
	Seq int64 `json:"seq,omitempty" jsonschema_description:"the entry's sequence number, strictly increasing across all agents"`
}

// TimelineAppend is the timeline_append tool.
func TimelineAppend() tool.Tool {
	return tool.New(tool.Spec{
		Name:        "timeline_append",
		Title:       "Append to timeline",
		Description: "Append one entry to the project's shared timeline (timeline.ndjson), stamped with this agent, unit, call and session; returns its sequence number.",
		Effect:      tool.Additive,
	}, timelineAppend)
}

func timelineAppend(ctx context.Context, c *callctx.Ctx, in TimelineAppendInput) (TimelineAppendOutput, error) {
	var data any
	if in.Data != nil {
		data = in.Data
	}
	seq, err := c.AppendTimeline(ctx, in.Kind, in.Message, data)
	if err != nil {
		return TimelineAppendOutput{}, err
	}
	return TimelineAppendOutput{Status: tool.Status{OK: true}, Seq: seq}, nil
}

// RecordMemoryInput stores a memory note.
type RecordMemoryInput struct {
	Key     string   `json:"key" jsonschema:"pattern=^[a-z0-9][a-z0-9_-]{0\\,63}$" jsonschema_description:"note key: lower-case letters, digits, _ and -, up to 64 characters"`
	Content string   `json:"content" jsonschema:"minLength=1,maxLength=262144" jsonschema_description:"the note, as markdown"`
	Tags    []string `json:"tags,omitempty" jsonschema:"maxItems=32" jsonschema_description:"tags for finding the note later"`
}

// RecordMemoryOutput is the result of record_memory.
type RecordMemoryOutput struct {
	tool.Status
	Path    string `json:"path,omitempty" jsonschema_description:"project-relative path of the note"`
	Created bool   `json:"created" jsonschema_description:"true when the key was new, false when an existing note was replaced"`
}

// MemoryIndex is memory/devloop/<agent>/index.json.
type MemoryIndex struct {
	Agent   string                 `json:"agent"`
	Entries map[string]MemoryEntry `json:"entries"`
}

// MemoryEntry describes one note.
type MemoryEntry struct {
	Path      string    `json:"path"`
	Tags      []string  `json:"tags,omitempty"`
	Bytes     int       `json:"bytes"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	CallID    string    `json:"call_id"`
}

// RecordMemory is the record_memory tool.
func RecordMemory() tool.Tool {
	return tool.New(tool.Spec{
		Name:        "record_memory",
		Title:       "Record memory",
		Description: "Create or replace a markdown note memory/devloop/<agent>/<key>.md and its entry in index.json.",
		Effect:      tool.Destructive,
		Idempotent:  true,
	}, recordMemory)
}

func recordMemory(_ context.Context, c *callctx.Ctx, in RecordMemoryInput) (RecordMemoryOutput, error) {
	dir := "memory/devloop/" + c.Agent
	notePath := dir + "/" + in.Key + ".md"
	created := false
	tags := append([]string(nil), in.Tags...)
	sort.Strings(tags)
	err := sandbox.UpdateJSON(c.Files, dir+"/index.json", func(idx *MemoryIndex, _ bool) error {
		idx.Agent = c.Agent
		if idx.Entries == nil {
			idx.Entries = map[string]MemoryEntry{}
		}
		now := c.Clock.Now()
		e, ok := idx.Entries[in.Key]
		created = !ok
		if !ok {
			e.CreatedAt = now
		}
		e.Path, e.Tags, e.Bytes, e.UpdatedAt, e.CallID = notePath, tags, len(in.Content), now, c.CallID
		idx.Entries[in.Key] = e
		// The note is written while the index lock is held, so index and
		// note never disagree about a key.
		content := in.Content
		if len(content) == 0 || content[len(content)-1] != '\n' {
			content += "\n"
		}
		if err := c.Files.WriteFile(notePath, []byte(content)); err != nil {
			return fmt.Errorf("write %s: %w", notePath, err)
		}
		return nil
	})
	if err != nil {
		return RecordMemoryOutput{}, err
	}
	return RecordMemoryOutput{Status: tool.Status{OK: true}, Path: notePath, Created: created}, nil
}
