package policy

import (
	"fmt"

	"github.com/toolhost/toolhost/internal/agents"
	"github.com/toolhost/toolhost/internal/fault"
	"github.com/toolhost/toolhost/internal/tool"
)

// Access is what one agent may do with one tool under a policy file.
type Access struct {
	// Decision is the file's answer for the tool (permission, timeout,
	// retries, confirmation); it applies when the tool is visible.
	Decision
	// Reason is empty when the agent sees the tool and may call it;
	// otherwise it says, to the model, which rule hides the tool.
	Reason string
	// Kind is why the tool is hidden: fault.Policy, or the kind of the
	// tool's Withheld (fault.Pin, fault.Unavailable); fault.None when
	// visible.
	Kind fault.Kind
}

// Visible reports whether the agent sees the tool and may call it.
func (a Access) Visible() bool { return a.Reason == "" }

// Access is the one answer to "does agent ag see tool s under f, and if
// not, why": tools/list (both transports), `tools list --agent`, `tools
// export`, `mcp-config --allowed-tools` and the engine's permission stage
// all ask it, so what an agent is offered and what it may call never
// differ. The agent's toolPolicy is asked first, then the file, then
// whether the tool is withheld (an upstream definition not approved, or its
// server restarting).
func (f *File) Access(ag *agents.Agent, s *tool.Spec) Access {
	d := f.Decide(s)
	a := Access{Decision: d, Kind: fault.Policy}
	switch raw := f.Tools[s.Name].Permission; {
	case !ag.Allows(s.Name):
		a.Reason = fmt.Sprintf("tool %s is not allowed for agent %s", s.Name, ag.Name)
	case d.Allowed() && s.Withheld != nil:
		a.Reason, a.Kind = s.Withheld.Reason, s.Withheld.Kind
	case d.Allowed():
		a.Kind = fault.None
	case !d.Listed:
		a.Reason = fmt.Sprintf("tool %s is not listed in the tool policy, so it is denied", s.Name)
	case raw != Deny:
		a.Reason = fmt.Sprintf("tool %s has permission %q in the tool policy, which is not read, write or deny, so it is denied", s.Name, raw)
	default:
		a.Reason = fmt.Sprintf("tool %s is denied by the tool policy (permission %q)", s.Name, d.Permission)
	}
	return a
}

// Hidden is a tool an agent's toolPolicy names that the policy file (or a
// withheld upstream definition) keeps from it, and why.
type Hidden struct {
	Name   string
	Reason string
}

// Offered sorts specs for agent ag under f, by Access: the tools it is
// offered, in the order given (as tools/list lists them), and the tools its
// toolPolicy names that are hidden from it, with the reason. Tools its
// toolPolicy does not name are in neither.
func (f *File) Offered(ag *agents.Agent, specs []*tool.Spec) (offered []*tool.Spec, hidden []Hidden) {
	for _, s := range specs {
		switch a := f.Access(ag, s); {
		case a.Visible():
			offered = append(offered, s)
		case ag.Allows(s.Name):
			hidden = append(hidden, Hidden{Name: s.Name, Reason: a.Reason})
		}
	}
	return offered, hidden
}
