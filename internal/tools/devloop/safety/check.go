package safety

import (
	"context"
	"fmt"

	"github.com/toolhost/toolhost/internal/callctx"
	"github.com/toolhost/toolhost/internal/tool"
)

// SandboxCheckInput names a path and an operation to check.
type SandboxCheckInput struct {
	Path string `json:"path" jsonschema:"minLength=1,maxLength=8192" jsonschema_description:"path relative to the project dir, exactly as you would pass it to a tool that writes or reads it"`
	Op   string `json:"op,omitempty" jsonschema:"enum=write,enum=read" jsonschema_description:"write (default): would this agent's write be allowed; read: may the path be read (anywhere inside the project dir)"`
}

// SandboxCheckOutput is the sandbox's verdict.
type SandboxCheckOutput struct {
	tool.Status
	Allowed bool `json:"allowed" jsonschema_description:"true when the operation would be allowed right now"`
	// Reason shadows Status.Reason: the check itself succeeds (ok is true),
	// reason explains the verdict.
	Reason   string `json:"reason,omitempty" jsonschema_description:"why the operation would be refused, with what to change"`
	Resolved string `json:"resolved,omitempty" jsonschema_description:"absolute path the operation would act on"`
}

// readChecker is the part of the sandbox door that answers read checks.
type readChecker interface {
	CheckRead(rel string) (string, error)
}

// SandboxCheck is the sandbox_check tool.
func SandboxCheck() tool.Tool {
	return tool.New(tool.Spec{
		Name:  "sandbox_check",
		Title: "Check a path against the sandbox",
		Description: "Ask whether writing (op=write, default) or reading (op=read) a project-relative path would be allowed for this agent, " +
			"with the same checks the real write makes (allow-list, symlinks, hard links, dot-directories). Returns {allowed, reason, resolved}; nothing is written.",
		Effect:     tool.ReadOnly,
		Idempotent: true,
	}, sandboxCheck)
}

func sandboxCheck(_ context.Context, c *callctx.Ctx, in SandboxCheckInput) (SandboxCheckOutput, error) {
	var resolved string
	var err error
	switch in.Op {
	case "", "write":
		resolved, err = c.Files.CheckWrite(in.Path)
	case "read":
		rc, ok := c.Files.(readChecker)
		if !ok {
			return SandboxCheckOutput{}, fmt.Errorf("the sandbox door %T cannot check reads", c.Files)
		}
		resolved, err = rc.CheckRead(in.Path)
	}
	if err != nil {
		// A violation, or the I/O error the real operation would hit (a
		// name too long for the file system): either way it would fail.
		return SandboxCheckOutput{Status: tool.Status{OK: true}, Allowed: false, Reason: tool.Explain(c, err)}, nil
	}
	return SandboxCheckOutput{Status: tool.Status{OK: true}, Allowed: true, Resolved: resolved}, nil
}
