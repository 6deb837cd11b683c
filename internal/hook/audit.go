package hook

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/toolhost/toolhost/internal/audit"
	"github.com/toolhost/toolhost/internal/callctx"
	"github.com/toolhost/toolhost/internal/claudecode"
	"github.com/toolhost/toolhost/internal/journal"
	"github.com/toolhost/toolhost/internal/redact"
	"github.com/toolhost/toolhost/internal/sandbox"
	storeopen "github.com/toolhost/toolhost/internal/store/open"
)

// hookAuditMargin is what the audit write leaves of the CLI's wait for the
// hook (claudecode.HookTimeout in every hook entry toolhost writes) for the
// hook to exit: the decision is already on stdout, but a hook the CLI cuts
// off loses it, and the CLI then lets the call through.
const hookAuditMargin = time.Second

// hookAuditBudget is how long the audit write of a decision reached after
// took may take: the rest of the CLI's wait, less the margin. The decision
// is bounded by --timeout (5 s by default, under the CLI's 10 s), so on a
// loaded machine the write still has seconds (a fixed second lost rows at
// load 30, the call's tool_use_id already claimed so the other hook wrote
// none either).
func hookAuditBudget(took time.Duration) time.Duration {
	return max(claudecode.HookTimeout*time.Second-hookAuditMargin-took, 0)
}

// auditHook stores the hook's decision as a row of the project's audit
// trail (source "hook"), with the CLI's own ids for the call, so a hook's
// decision and the calls of the same Claude session's agents can be put
// together. A call the hook could not tie to a project (the decision came
// before the project dir was known) is only in the log; a trail that
// cannot be written is logged, never fatal: the decision stands.
//
// The claim of a call (below) is machine-local, like the hooks that make
// it; the row goes to the project's store.
//
// A devloop agent's call reaches two toolhost hooks: its definition's own
// and the project's (which alone holds in a folder the CLI does not trust,
// the former alone under --bare). Both decide alike; the first to claim
// the call's tool_use_id writes its row.
func auditHook(c hookCall, v hookVerdict, f Options, took time.Duration, log zerolog.Logger) {
	if c.proj == "" || c.ag == nil {
		return
	}
	row := &audit.Row{
		TS: time.Now().UTC(), CallID: callctx.NewCallID(), ProjectID: f.ProjectID,
		Agent: c.ag.Short, UnitID: f.Unit, Tool: c.in.ToolName, Source: "hook",
		Arguments: audit.RedactArguments(c.in.ToolInput), Status: audit.StatusOK, Rule: v.rule,
		DurationMS:      float64(took.Microseconds()) / 1000,
		ClientSessionID: c.in.SessionID, ClientAgentID: c.in.AgentID, ToolUseID: c.in.ToolUseID,
	}
	switch {
	case v.deny != "":
		row.Status, row.ErrorKind, row.Error = audit.StatusRejected, v.kind.String(), redact.String(v.deny)
	case v.ask != "":
		row.Status, row.Error = audit.StatusAsked, redact.String(v.ask)
	}
	done := make(chan error, 1)
	go func() {
		door, err := sandbox.New(c.proj, "toolhost", journal.ServiceAllowList)
		if err != nil {
			done <- err
			return
		}
		defer door.Close()
		if first, err := claimHookCall(door, row.ToolUseID); err != nil || !first {
			done <- err
			return
		}
		// The trail of the store serve writes to (--store, TOOLHOST_STORE).
		st, err := storeopen.Open(storeopen.Options{Spec: f.Store, ProjectDir: c.proj, ProjectID: row.ProjectID, Log: log})
		if err != nil {
			done <- err
			return
		}
		err = st.Audit().Write(row)
		if cerr := st.Close(); err == nil {
			err = cerr
		}
		done <- err
	}()
	var err error
	budget := hookAuditBudget(took)
	select {
	case err = <-done:
	case <-time.After(budget):
		err = fmt.Errorf("the audit trail did not answer within %v (what is left of the CLI's %d s wait for the hook)", budget.Round(time.Millisecond), claudecode.HookTimeout)
	}
	if err != nil {
		b, _ := row.MarshalJSON()
		log.Error().Str("event", "audit_write_failed").Str("tool", row.Tool).RawJSON("row", b).Err(err).
			Msg("the hook's decision stands; its audit row is only in this log")
	}
}

// hookCallsPath keeps the tool_use ids of the calls the hooks audited
// last, newest last.
const hookCallsPath = ".toolhost/hook-calls"

// hookCallsKept is how many ids it keeps: far more than the calls of one
// turn that can be in flight at once.
const hookCallsKept = 256

// claimHookCall records id as audited and reports whether this hook is the
// first to do so (under the file's cross-process lock). A call without an
// id is always its own.
func claimHookCall(door *sandbox.Sandbox, id string) (bool, error) {
	if id == "" {
		return true, nil
	}
	first := false
	err := door.Update(hookCallsPath, func(old []byte) ([]byte, error) {
		ids := strings.Fields(string(old))
		if slices.Contains(ids, id) {
			return old, nil
		}
		first = true
		ids = append(ids, id)
		if len(ids) > hookCallsKept {
			ids = ids[len(ids)-hookCallsKept:]
		}
		return []byte(strings.Join(ids, "\n") + "\n"), nil
	})
	return first, err
}
