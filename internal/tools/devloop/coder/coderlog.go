package coder

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/toolhost/toolhost/internal/callctx"
	"github.com/toolhost/toolhost/internal/tool"
)

// AppendCoderLogInput is one entry of the unit's coder log.
type AppendCoderLogInput struct {
	Message string   `json:"message" jsonschema:"minLength=1,maxLength=8000" jsonschema_description:"what was done or decided, for the tester and the humans"`
	Kind    string   `json:"kind,omitempty" jsonschema:"pattern=^[a-z][a-z0-9_.-]{0\\,39}$" jsonschema_description:"entry kind, e.g. change, decision, fix, note (default note)"`
	Files   []string `json:"files,omitempty" jsonschema:"maxItems=200" jsonschema_description:"project-relative paths the entry is about"`
}

// AppendCoderLogOutput is the result of append_coder_log.
type AppendCoderLogOutput struct {
	tool.Status
	Path string `json:"path,omitempty" jsonschema_description:"project-relative path of the log"`
}

// CoderLogEntry is one line of units/<unit>/coder-log.ndjson.
type CoderLogEntry struct {
	TS      time.Time `json:"ts"`
	CallID  string    `json:"call_id"`
	Unit    string    `json:"unit"`
	Agent   string    `json:"agent"`
	Kind    string    `json:"kind"`
	Message string    `json:"message"`
	Files   []string  `json:"files"`
}

// AppendCoderLog is the append_coder_log tool.
func AppendCoderLog() tool.Tool {
	return tool.New(tool.Spec{
		Name:        "append_coder_log",
		Title:       "Append to coder log",
		Description: "Append one entry {ts, call_id, unit, kind, message, files} to units/<unit>/coder-log.ndjson. The unit is the session's (--unit) or the call's _meta.unit_id.",
		Effect:      tool.Additive,
		Timeout:     10 * time.Second,
	}, appendCoderLog)
}

func appendCoderLog(_ context.Context, c *callctx.Ctx, in AppendCoderLogInput) (AppendCoderLogOutput, error) {
	if c.UnitID == "" {
		return AppendCoderLogOutput{}, tool.Fail(nil, "no unit for this call: start the session with --unit <unit> or send _meta.unit_id, so the entry goes to units/<unit>/coder-log.ndjson")
	}
	kind := in.Kind
	if kind == "" {
		kind = "note"
	}
	files := []string{}
	for i, f := range in.Files {
		clean := path.Clean(strings.ReplaceAll(f, "\\", "/"))
		if f == "" || path.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, "../") || strings.ContainsRune(f, 0) {
			return AppendCoderLogOutput{}, &tool.ValidationError{Field: fmt.Sprintf("files[%d]", i), Reason: fmt.Sprintf("%q must be a path relative to the project dir, inside it (e.g. units/%s/src/app.ts)", f, c.UnitID)}
		}
		files = append(files, clean)
	}
	line, err := json.Marshal(CoderLogEntry{
		TS: c.Clock.Now(), CallID: c.CallID, Unit: c.UnitID, Agent: c.Agent, Kind: kind, Message: in.Message, Files: files,
	})
	if err != nil {
		return AppendCoderLogOutput{}, err
	}
	p := c.UnitDir + "/coder-log.ndjson"
	if err := c.Files.AppendFile(p, append(line, '\n')); err != nil {
		return AppendCoderLogOutput{}, err
	}
	return AppendCoderLogOutput{Status: tool.Status{OK: true}, Path: p}, nil
}
