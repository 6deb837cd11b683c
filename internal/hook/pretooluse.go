package hook

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/rs/zerolog"

	"github.com/toolhost/toolhost/configs"
	"github.com/toolhost/toolhost/internal/agents"
	"github.com/toolhost/toolhost/internal/bashguard"
	"github.com/toolhost/toolhost/internal/claudecode"
	"github.com/toolhost/toolhost/internal/confine"
	"github.com/toolhost/toolhost/internal/fault"
	"github.com/toolhost/toolhost/internal/live"
	"github.com/toolhost/toolhost/internal/policy"
	"github.com/toolhost/toolhost/internal/progid"
	"github.com/toolhost/toolhost/internal/rules"
	"github.com/toolhost/toolhost/internal/sandbox"
	"github.com/toolhost/toolhost/internal/session"
	"github.com/toolhost/toolhost/internal/tool"
	"github.com/toolhost/toolhost/internal/tools/all"
	"github.com/toolhost/toolhost/internal/util/wirejson"
)

// maxHookInput caps the hook JSON read from stdin (a Write carries the
// whole file content).
const maxHookInput = 64 << 20

// hookInput is the Claude CLI PreToolUse hook payload.
type hookInput struct {
	SessionID      string          `json:"session_id"`
	TranscriptPath string          `json:"transcript_path"`
	Cwd            string          `json:"cwd"`
	HookEventName  string          `json:"hook_event_name"`
	ToolName       string          `json:"tool_name"`
	ToolInput      json.RawMessage `json:"tool_input"`
	ToolUseID      string          `json:"tool_use_id"`
	// AgentType names the agent whose thread makes the call: a subagent's
	// name, or the agent of a session started with --agent; empty on the
	// main thread of a plain session.
	AgentType string `json:"agent_type"`
	// AgentID is set only inside a subagent: that run's id.
	AgentID string `json:"agent_id"`
}

// hookDeny is the PreToolUse deny decision printed on stdout.
type hookDeny struct {
	HookSpecificOutput struct {
		HookEventName            string `json:"hookEventName"`
		PermissionDecision       string `json:"permissionDecision"`
		PermissionDecisionReason string `json:"permissionDecisionReason"`
	} `json:"hookSpecificOutput"`
}

// Options are what the hook decides with: the command line's flags, each
// already filled from its TOOLHOST_* variable where it has one.
type Options struct {
	// Agent is the agent the hook was installed for ("" for the project's
	// hook, which takes the agent from the payload's agent_type).
	Agent string
	// Lead is the agent whose rules apply to the main thread (a call
	// whose agent_type names no devloop agent) when Agent is not set; ""
	// leaves such calls to the CLI's own rules.
	Lead string
	// ProjectDir, ProjectID and Store are the project dir the hook decides
	// for, its id (the rules' project, the tenant of a shared store) and
	// the store its decisions are audited in (--store, TOOLHOST_STORE), as
	// every command that writes the project's shared state takes them.
	ProjectDir, ProjectID, Store string
	// AgentsFile and PolicyFile are the agents and tool policy files (""
	// for the embedded ones).
	AgentsFile, PolicyFile string
	// Unit is the unit the agent works on, for the rules' unit.
	Unit string
	// ExitCode denies by returning a *Denied error (the command exits 2
	// with the reason on stderr) instead of printing a JSON decision.
	ExitCode bool
	// Timeout bounds the decision: none reached within it denies.
	Timeout time.Duration
	// ClaudeSettings are settings files the CLI reads beyond the ones the
	// hook finds itself (a --settings file of the CLI's command line).
	ClaudeSettings []string
}

// Denied is the error PreToolUse returns for a denied call with
// Options.ExitCode: its text is the reason.
type Denied struct{ Reason string }

func (d *Denied) Error() string { return d.Reason }

// hookCall is one PreToolUse call as the hook resolved it: the input, the
// agent and project dir it was installed for, and tool_input's fields.
type hookCall struct {
	in   hookInput
	ag   *agents.Agent
	proj string
	ti   map[string]json.RawMessage
	// progs finds the files the command's words run, for the guard and
	// the rules alike.
	progs *progid.Finder
}

// hookVerdict is what the hook decided about one call.
type hookVerdict struct {
	// deny is the reason the call is refused; "" when it is not.
	deny string
	// ask is the reason the CLI's user is asked first; "" when not asked.
	ask string
	// rule names what decided: a policy rule's id, or a rule of the
	// Claude CLI's settings (claude:Bash(…)).
	rule string
	// kind is what refused a denied call (the audit row's error_kind).
	kind fault.Kind
	// none is set when toolhost has nothing to decide: a call of the main
	// thread (or of an agent that is not one of the devloop's) with no
	// lead agent named; the CLI's own rules decide it.
	none bool
}

func (v hookVerdict) decision() string {
	switch {
	case v.none:
		return "none"
	case v.deny != "":
		return "deny"
	case v.ask != "":
		return "ask"
	}
	return "allow"
}

// PreToolUse answers one PreToolUse call: it reads the hook JSON from r,
// decides, writes the answer on w, logs the decision on log and audits it
// in the project's trail. A call toolhost decides nothing about gets no
// answer; a denied call with f.ExitCode returns a *Denied.
func PreToolUse(r io.Reader, w io.Writer, f Options, log zerolog.Logger) error {
	start := time.Now()
	c, v := decideWithin(r, f)
	var updated map[string]json.RawMessage
	if !v.none && v.deny == "" && c.in.ToolName == "Bash" {
		// A command that cannot be confined where the agent
		// requires it is denied.
		var why string
		if updated, why = confinedBashInput(f, c); why != "" {
			v = hookVerdict{deny: why, kind: fault.Sandbox}
		}
	}
	in := c.in
	agent := f.Agent
	if c.ag != nil {
		agent = c.ag.Name
	}
	ev := log.Info()
	if v.deny != "" {
		ev = log.Warn()
	}
	ev = ev.Str("event", "hook_decision").Str("hook", "PreToolUse").Str("agent", agent).
		Str("agent_type", in.AgentType).Str("agent_id", in.AgentID).Str("tool_use_id", in.ToolUseID).
		Str("tool", in.ToolName).Str("session_id", in.SessionID).Str("decision", v.decision()).
		Str("rule", v.rule).Str("reason", v.deny+v.ask)
	if v.none {
		ev.Msg("pretooluse: no devloop agent makes this call and no --lead agent is named, so toolhost decides nothing; the CLI's own permission rules decide (toolhost init --lead AGENT checks the main thread as that agent)")
		return nil
	}
	ev.Msg("pretooluse " + v.decision())
	err := answerPreToolUse(w, f, c, v, updated)
	auditHook(c, v, f, time.Since(start), log)
	return err
}

// decideWithin is decidePreToolUse bounded by f.Timeout: input that never
// ends, or a check that hangs, is denied before the agent CLI gives up on
// the hook and allows the call.
func decideWithin(r io.Reader, f Options) (hookCall, hookVerdict) {
	type decision struct {
		c hookCall
		v hookVerdict
	}
	if f.Timeout <= 0 {
		return hookCall{}, hookVerdict{deny: "toolhost hook: --timeout must be positive; denied"}
	}
	done := make(chan decision, 1)
	go func() {
		c, v := decidePreToolUse(r, f)
		done <- decision{c, v}
	}()
	t := time.NewTimer(f.Timeout)
	defer t.Stop()
	select {
	case d := <-done:
		return d.c, d.v
	case <-t.C:
		return hookCall{}, hookVerdict{deny: fmt.Sprintf("toolhost hook: no decision within %v (the input did not end, or a check hung); denied", f.Timeout)}
	}
}

// decidePreToolUse returns the parsed input and the hook's verdict: the
// policy's rules, then the guard or the sandbox, then for Bash the Claude
// CLI's own settings rules on the command as written. Anything it cannot
// read or resolve is denied.
func decidePreToolUse(r io.Reader, f Options) (hookCall, hookVerdict) {
	var c hookCall
	in := &c.in
	deny := func(reason string) (hookCall, hookVerdict) {
		return c, hookVerdict{deny: reason, kind: fault.Validation}
	}
	raw, err := io.ReadAll(io.LimitReader(r, maxHookInput+1))
	switch {
	case err != nil:
		return deny("toolhost hook: cannot read the hook input: " + err.Error())
	case len(raw) > maxHookInput:
		return deny(fmt.Sprintf("toolhost hook: the hook input is larger than %d bytes; denied because it cannot be checked", maxHookInput))
	}
	if err := decodeExact(raw, in); err != nil {
		return deny("toolhost hook: malformed hook input (" + err.Error() + "); toolhost denies what it cannot read")
	}
	switch {
	case in.HookEventName != "" && in.HookEventName != "PreToolUse":
		return deny(fmt.Sprintf("toolhost hook: hook_event_name is %q; this hook only handles PreToolUse", in.HookEventName))
	case in.ToolName == "":
		return deny("toolhost hook: the hook input has no tool_name; denied because it cannot be checked")
	}
	ti, err := exactFields(in.ToolInput)
	if err != nil {
		return deny(fmt.Sprintf("toolhost hook: %s tool_input is not an object (%v); denied because it cannot be checked", in.ToolName, err))
	}
	c.ti = ti
	set, ag, proj, reason := hookAgent(f, *in)
	switch {
	case reason != "":
		return c, hookVerdict{deny: reason, kind: fault.Policy}
	case ag == nil:
		return c, hookVerdict{none: true}
	}
	c.ag, c.proj = ag, proj
	cwd := in.Cwd
	if !filepath.IsAbs(cwd) {
		cwd = filepath.Join(proj, cwd)
	}
	c.progs = progid.ForProject(set, proj, cwd, "")
	// The policy's rules first, as in the engine (before the guard and the
	// sandbox): a deny ends here; a confirm still needs the checks below
	// to pass, and then asks.
	rv, reason := hookRules(f, ag, proj, *in, ti, c.progs)
	if reason != "" {
		return c, hookVerdict{deny: reason, rule: rv.Rule, kind: fault.Policy}
	}
	// What decides below is the check that refused, not a rule.
	var command string
	var analysis *bashguard.Analysis
	kind := fault.Guard
	if in.ToolName == "Bash" {
		command, analysis, reason = decideBash(ti, c.progs)
	} else {
		kind = fault.Sandbox
		reason = decideWrite(set, ag, proj, *in, ti)
	}
	if reason != "" {
		return c, hookVerdict{deny: reason, kind: kind}
	}
	v := hookVerdict{rule: rv.Rule}
	if rv.Effect == rules.Confirm {
		v.ask = rv.Ask()
	}
	if in.ToolName == "Bash" {
		perms, err := loadClaudePermissions(claudeSettingsFiles(proj, in.Cwd), f.ClaudeSettings)
		if err != nil {
			return c, hookVerdict{deny: "toolhost hook: " + err.Error() + "; denied because the Claude CLI's own rules for Bash cannot be applied (fix or remove the file)", kind: fault.Policy}
		}
		// A deny of the settings beats a policy rule's confirm, as the
		// CLI's deny beats its ask.
		if cv := perms.bash(command, analysis); cv.deny != "" || (cv.ask != "" && v.ask == "") {
			return c, cv
		}
	}
	return c, v
}

// decideWrite is the sandbox's verdict on a CLI write (Write, Edit,
// MultiEdit, NotebookEdit): the deny reason, "" to allow. Other tools are
// not writes.
func decideWrite(set *agents.Set, ag *agents.Agent, proj string, in hookInput, ti map[string]json.RawMessage) string {
	switch in.ToolName {
	case "Write", "Edit", "MultiEdit", "NotebookEdit":
		// Every path field present is checked: NotebookEdit writes
		// notebook_path, the others file_path, and a payload carrying both
		// must not get one checked and the other written.
		var paths []string
		for _, key := range []string{"file_path", "notebook_path"} {
			v, ok := ti[key]
			if !ok {
				continue
			}
			var p string
			if err := json.Unmarshal(v, &p); err != nil {
				return fmt.Sprintf("toolhost hook: %s tool_input.%s is not a string; denied because it cannot be checked", in.ToolName, key)
			}
			paths = append(paths, p)
		}
		if len(paths) == 0 || slices.Contains(paths, "") {
			return fmt.Sprintf("toolhost hook: %s tool_input has no file_path; denied because it cannot be checked", in.ToolName)
		}
		for _, p := range paths {
			// A command still running that may change the path is the
			// refusal's reason even when the check also failed: what the
			// check saw (a directory missing mid-swap, a link) is that
			// command's doing, and the racing refusal says how to write
			// instead.
			if reason := racingCommand(set, proj, in.Cwd, p, in.ToolName); reason != "" {
				return reason
			}
			if reason := checkHookWrite(ag, proj, in.Cwd, p); reason != "" {
				return reason
			}
		}
	}
	return ""
}

// racingCommand is why a CLI write of p could land elsewhere than the
// check above saw: the CLI writes after this hook answered, unconfined, so
// a confined command still running (internal/live: the kernel's process
// tree says so) that may change a directory of the path could swap it, or
// the file, for a symbolic link in between — nothing checked now holds
// then. Such a write is refused with the way to write instead; "" when no
// such command runs.
func racingCommand(set *agents.Set, proj, cwd, p, tool string) string {
	abs := p
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(cmp.Or(cwd, proj), p)
	}
	rel, ok := sandbox.Within(proj, filepath.Clean(abs))
	if !ok {
		return "" // outside the project: refused by the check itself
	}
	holders, err := live.Running(proj)
	if err != nil {
		return "toolhost hook: cannot tell whether a command of the project is still running (" + err.Error() + "); denied because the write could be redirected"
	}
	if len(holders) == 0 {
		return ""
	}
	// The directories a running command would have to change to redirect
	// the write: each one on the path, from the project dir down.
	var dirs []string
	for d := path.Dir(rel); ; d = path.Dir(d) {
		dirs = append(dirs, d)
		if d == "." {
			break
		}
	}
	for _, h := range holders {
		for _, d := range dirs {
			if !mayChange(set, h, d) {
				continue
			}
			return fmt.Sprintf("toolhost hook: %s of %s refused: %s started earlier is still running (held by process %d), and it may change %s "+
				"while the CLI writes — swap a directory of the path, or the file, for a symbolic link after this check — so the write could land elsewhere. "+
				"Write the file with Bash instead, where the kernel checks the write itself (for example: cat > %s <<'TOOLHOST_EOF' … TOOLHOST_EOF), "+
				"or try again once that command has ended (a unit: stop it with spawn_units)",
				tool, p, h.What(), h.PID, cmp.Or(strings.TrimPrefix(d, "."), "the project dir"), claudecode.ShellJoin([]string{p}))
		}
	}
	return ""
}

// mayChange reports whether the running commands of h may create, remove or
// rename entries in project-relative directory d ("." for the project dir):
// by the write roots the kernel grants them when the registration records
// them, else by their agent's allow-list (an agent the agents file does not
// know: assume the worst).
func mayChange(set *agents.Set, h live.Entry, d string) bool {
	if h.Write != nil {
		for _, w := range h.Write {
			if w == "." || d == w || strings.HasPrefix(d, w+"/") {
				return true
			}
		}
		return false
	}
	allow := []string{"**"}
	if set != nil {
		if b, err := set.Find(h.Agent); err == nil {
			allow = b.Sandbox.WriteAllowList
		}
	}
	return mayCreateIn(allow, d)
}

// mayCreateIn reports whether an agent with allow-list allow may create an
// entry in project-relative directory d ("." for the project dir), which
// is what changing d takes.
func mayCreateIn(allow []string, d string) bool {
	probe := path.Join(d, "toolhost-probe")
	for _, g := range allow {
		if ok, _ := doublestar.Match(g, probe); ok {
			return true
		}
	}
	return false
}

// hookRules applies the policy file's rules to the CLI's tool call: the
// verdict, and the deny reason of a deny rule. A policy that cannot be
// read or whose rules do not compile denies every call: the hook cannot
// apply the policy, and a running serve would not use such a file either.
func hookRules(f Options, ag *agents.Agent, proj string, in hookInput, ti map[string]json.RawMessage, progs bashguard.Programs) (rules.Verdict, string) {
	var data []byte
	name := "the embedded default policy"
	if f.PolicyFile != "" {
		var err error
		if data, err = os.ReadFile(f.PolicyFile); err != nil {
			return rules.Verdict{}, "toolhost hook: cannot read the policy file: " + err.Error() + "; denied because its rules cannot be applied"
		}
		name = f.PolicyFile
	} else {
		data = configs.ToolsJSON
	}
	pf, err := policy.ParseWith(data, session.RuleOptions(all.Registry(), proj))
	if err != nil {
		return rules.Verdict{}, fmt.Sprintf("toolhost hook: %s: %v; denied because its rules cannot be applied (toolhost policy check says what to fix)", name, err)
	}
	tr := pf.RuleSet().For(in.ToolName)
	if tr == nil {
		return rules.Verdict{}, ""
	}
	args := any(map[string]any{})
	if len(in.ToolInput) > 0 && string(in.ToolInput) != "null" {
		if args, err = wirejson.DecodeAny(in.ToolInput); err != nil {
			return rules.Verdict{}, "toolhost hook: " + in.ToolName + " tool_input is not JSON; denied because it cannot be checked"
		}
	}
	input := &rules.Input{Tool: in.ToolName, Agent: ag.Name, Unit: f.Unit, Project: f.ProjectID, Args: args}
	if in.ToolName == "Bash" {
		var command string
		_ = json.Unmarshal(ti["command"], &command)
		input.Commands = func() []tool.Command { return []tool.Command{{Script: command}} }
		input.Programs = progs
	}
	v := tr.Decide(input)
	if v.Effect == rules.Deny {
		return v, (&rules.Refusal{Tool: in.ToolName, Verdict: v}).Error()
	}
	return v, ""
}

// hookAgent resolves the agents, the agent a call is checked for, and the
// project dir.
// The payload's agent_type says which agent's thread makes the call: with
// --agent (the hook of one agent's own definition), a call another devloop
// agent makes is a misconfiguration and denied; without it (the project's
// hook), agent_type chooses the agent, and a call no devloop agent makes
// (the main thread, a built-in subagent) is checked as the --lead agent or,
// with none named, not at all (a nil agent and no reason). An agent that
// cannot be resolved, or a missing --project-dir, denies: a broken hook must
// not turn into an allow-all.
func hookAgent(f Options, in hookInput) (*agents.Set, *agents.Agent, string, string) {
	set, err := agents.Load(f.AgentsFile)
	if err != nil {
		return nil, nil, "", "toolhost hook: " + err.Error() + "; denied because nothing can be checked without the agents file"
	}
	// agent_type is the definition's name, which toolhost init writes as
	// the template name; a short name could be any agent of the user's.
	var caller *agents.Agent
	for _, a := range set.List {
		if in.AgentType != "" && a.Name == in.AgentType {
			caller = a
		}
	}
	var ag *agents.Agent
	switch {
	case f.Agent != "":
		if ag, err = set.Find(f.Agent); err != nil {
			return nil, nil, "", "toolhost hook: " + err.Error() + "; fix --agent in the hook command (toolhost init, or toolhost mcp-config --settings, writes it)"
		}
		if caller != nil && caller != ag {
			return nil, nil, "", fmt.Sprintf("toolhost hook: this hook is installed for %s (--agent), but the call is made by %s (agent_type); "+
				"denied as a misconfiguration: an agent's definition must carry its own hook (toolhost init writes .claude/agents/%s.md with it)", ag.Name, caller.Name, caller.Name)
		}
	case caller != nil:
		ag = caller
	case f.Lead != "":
		if ag, err = set.Find(f.Lead); err != nil {
			return nil, nil, "", "toolhost hook: --lead: " + err.Error() + "; fix --lead in the hook command (toolhost init --lead writes it)"
		}
	default:
		return set, nil, "", ""
	}
	if f.ProjectDir == "" {
		return nil, nil, "", "toolhost hook: --project-dir (or TOOLHOST_PROJECT_DIR) is required; denied because nothing can be checked without it"
	}
	proj, err := filepath.Abs(f.ProjectDir)
	if err == nil {
		var fi os.FileInfo
		if fi, err = os.Stat(proj); err == nil && !fi.IsDir() {
			err = errors.New("not a directory")
		}
	}
	if err != nil {
		return nil, nil, "", fmt.Sprintf("toolhost hook: project dir %s is not usable (%v); denied because nothing can be checked without it", f.ProjectDir, err)
	}
	return set, ag, proj, ""
}

// decideBash is the guard's verdict on a Bash call: the command must be a
// JSON string (null, a number, an array or a missing key is denied), and
// the Bash guard must allow it. It returns the command and the guard's
// analysis of it (for the settings' rules), or the deny reason.
func decideBash(ti map[string]json.RawMessage, progs bashguard.Programs) (string, *bashguard.Analysis, string) {
	raw := bytes.TrimSpace(ti["command"])
	var command string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &command) != nil {
		what := "missing"
		if len(raw) > 0 {
			what = "not a string (" + jsonKind(raw) + ")"
		}
		return "", nil, "toolhost hook: Bash tool_input.command is " + what + "; denied because it cannot be checked. Send the command as a JSON string."
	}
	a, err := bashguard.AnalyzeWith(command, bashguard.Options{Programs: progs})
	if err == nil {
		err = a.Verdict()
	}
	if err != nil {
		return "", nil, err.Error()
	}
	return command, a, ""
}

// jsonKind names the JSON type of raw for a message.
func jsonKind(raw []byte) string {
	switch raw[0] {
	case 'n':
		return "null"
	case 't', 'f':
		return "a boolean"
	case '[':
		return "an array"
	case '{':
		return "an object"
	}
	return "a number"
}

// decodeExact decodes the first JSON value of raw into v (a struct with
// json tags) with keys matched exactly: encoding/json matches keys without
// regard to case, so {"tool_name":"Bash","Tool_Name":"Read"} would
// otherwise be read as Read while the CLI runs Bash.
func decodeExact(raw []byte, v *hookInput) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	var m map[string]json.RawMessage
	if err := dec.Decode(&m); err != nil {
		return err
	}
	if m == nil {
		return errors.New("the hook input is not a JSON object")
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("data follows the JSON object")
	}
	for key, dst := range map[string]*string{
		"session_id": &v.SessionID, "transcript_path": &v.TranscriptPath, "cwd": &v.Cwd,
		"hook_event_name": &v.HookEventName, "tool_name": &v.ToolName, "tool_use_id": &v.ToolUseID,
		"agent_type": &v.AgentType, "agent_id": &v.AgentID,
	} {
		if b, ok := m[key]; ok {
			if err := json.Unmarshal(b, dst); err != nil {
				return fmt.Errorf("%s: %w", key, err)
			}
		}
	}
	v.ToolInput = m["tool_input"]
	return nil
}

// exactFields reads a tool_input object with its keys as written (missing
// or null tool_input is an empty object).
func exactFields(raw json.RawMessage) (map[string]json.RawMessage, error) {
	m := map[string]json.RawMessage{}
	if len(raw) == 0 || string(raw) == "null" {
		return m, nil
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	return m, nil
}

// checkHookWrite is the sandbox verdict for a CLI write of path p (absolute
// as the Claude CLI sends it, or relative to the hook's cwd) by agent ag in
// project dir proj.
func checkHookWrite(ag *agents.Agent, proj, cwd, p string) string {
	if slices.Contains(strings.Split(filepath.ToSlash(p), "/"), "..") {
		// The CLI hands the path to the kernel, which resolves each ".."
		// after the symlinks before it (prd/link/../x is the parent of the
		// link's target), while any check here would clean it away first.
		e := &sandbox.Error{Agent: ag.Name, Path: p, Allowed: ag.Sandbox.WriteAllowList, Detail: `the path contains ".." segments; name the file without ".."`}
		return e.Error()
	}
	abs := p
	if !filepath.IsAbs(abs) {
		base := cwd
		if base == "" {
			base = proj
		}
		abs = filepath.Join(base, p)
	}
	rel, ok := sandbox.Within(proj, abs)
	if !ok {
		e := &sandbox.Error{Agent: ag.Name, Path: p, Allowed: ag.Sandbox.WriteAllowList, Detail: "the path is outside the project dir " + proj}
		return e.Error()
	}
	if confine.IsStore(rel) {
		e := &sandbox.Error{Agent: ag.Name, Path: p, Allowed: ag.Sandbox.WriteAllowList, Detail: rel + " is toolhost's own store; only toolhost's tools write it"}
		return e.Error()
	}
	s, err := sandbox.New(proj, ag.Name, ag.Sandbox.WriteAllowList)
	if err != nil {
		return "toolhost hook: " + err.Error()
	}
	defer s.Close()
	if _, err := s.CheckWrite(rel); err != nil {
		return err.Error()
	}
	// A file with several names is also a file somewhere else: the CLI
	// writes it in place, through whichever name it is given.
	if fi, err := os.Lstat(filepath.Join(proj, filepath.FromSlash(rel))); err == nil && fi.Mode().IsRegular() {
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Nlink > 1 {
			e := &sandbox.Error{Agent: ag.Name, Path: p, Allowed: ag.Sandbox.WriteAllowList,
				Detail: fmt.Sprintf("%s has %d names (hard links), so writing it changes a file elsewhere too; write a new file instead, or remove this name first", rel, st.Nlink)}
			return e.Error()
		}
	}
	return ""
}

// answerPreToolUse prints the hook's answer: a denied call's decision (or,
// with --exit-code, exit 2 with the reason on stderr), else what
// allowPreToolUse answers.
func answerPreToolUse(w io.Writer, f Options, c hookCall, v hookVerdict, updated map[string]json.RawMessage) error {
	if v.deny == "" {
		return allowPreToolUse(w, c, v.ask, updated)
	}
	if f.ExitCode {
		return &Denied{Reason: v.deny}
	}
	var d hookDeny
	d.HookSpecificOutput.HookEventName = "PreToolUse"
	d.HookSpecificOutput.PermissionDecision = "deny"
	d.HookSpecificOutput.PermissionDecisionReason = v.deny
	return writeHookJSON(w, d)
}

// hookRewrite is the PreToolUse answer that replaces a Bash call's input.
// It carries no permissionDecision: the CLI's own permission check still
// decides whether the (rewritten) command runs.
type hookRewrite struct {
	HookSpecificOutput struct {
		HookEventName string                     `json:"hookEventName"`
		UpdatedInput  map[string]json.RawMessage `json:"updatedInput"`
	} `json:"hookSpecificOutput"`
}

// hookAsk is the PreToolUse answer that has the CLI ask its user (a
// confirm rule), with the rewritten input for Bash.
type hookAsk struct {
	HookSpecificOutput struct {
		HookEventName            string                     `json:"hookEventName"`
		PermissionDecision       string                     `json:"permissionDecision"`
		PermissionDecisionReason string                     `json:"permissionDecisionReason"`
		UpdatedInput             map[string]json.RawMessage `json:"updatedInput,omitempty"`
	} `json:"hookSpecificOutput"`
}

// allowPreToolUse prints the answer to an allowed call: nothing, except
// for Bash, whose command is rewritten (updated, the confined input), and a
// call a confirm rule holds (ask non-empty), which answers "ask" with the
// rule's reason.
func allowPreToolUse(w io.Writer, c hookCall, ask string, updated map[string]json.RawMessage) error {
	if ask != "" {
		// For Bash the CLI asks its user about the rewritten command:
		// updatedInput goes with ask (docs/claude-cli.md).
		var a hookAsk
		a.HookSpecificOutput.HookEventName = "PreToolUse"
		a.HookSpecificOutput.PermissionDecision = "ask"
		a.HookSpecificOutput.PermissionDecisionReason = ask
		a.HookSpecificOutput.UpdatedInput = updated
		return writeHookJSON(w, a)
	}
	if c.in.ToolName != "Bash" || updated == nil {
		return nil
	}
	var r hookRewrite
	r.HookSpecificOutput.HookEventName = "PreToolUse"
	r.HookSpecificOutput.UpdatedInput = updated
	return writeHookJSON(w, r)
}

func writeHookJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// confinedBashInput is the Bash tool_input with its command wrapped in
// `toolhost confine` for the agent, every other field as the CLI sent it
// (updatedInput replaces the whole input). It is nil when the agent's
// commands are not confined (sandbox.commands off), and a deny reason when
// they must be and cannot.
func confinedBashInput(f Options, c hookCall) (map[string]json.RawMessage, string) {
	if c.ag.Sandbox.Commands == agents.CommandsOff {
		return nil, ""
	}
	// The same plan `toolhost confine` will build, made here only to refuse
	// early, with the reason, a command that would not be run.
	plan, err := confine.Prepare(confine.Request{Agent: c.ag.Name, Sandbox: c.ag.Sandbox, ProjectDir: c.proj, DecideOnly: true})
	if err != nil {
		return nil, err.Error()
	}
	plan.Close()
	exe, err := os.Executable()
	if err != nil {
		return nil, "toolhost hook: cannot name its own binary for the confined command: " + err.Error()
	}
	var command string
	if err := json.Unmarshal(c.ti["command"], &command); err != nil {
		return nil, "toolhost hook: Bash tool_input.command is not a string"
	}
	// --hold keeps, for as long as any process of the command lives,
	// the record a Write's check reads (racingCommand).
	args := []string{"--hold", "--agent", c.ag.Name, "--project-dir", c.proj}
	if f.AgentsFile != "" {
		abs, err := filepath.Abs(f.AgentsFile)
		if err != nil {
			return nil, "toolhost hook: " + err.Error()
		}
		args = append(args, "--agents", abs)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(keepCwd(confineCommand(exe), args, command)); err != nil {
		return nil, "toolhost hook: " + err.Error()
	}
	ti := maps.Clone(c.ti)
	ti["command"] = bytes.TrimSpace(b.Bytes())
	return ti, ""
}

// confineCommand is how the rewrite runs `toolhost confine`: the small
// helper installed beside the running toolhost (make build, the release
// archives; confine.Helper), which each command then pays instead of a
// whole toolhost start, else toolhost's own subcommand.
func confineCommand(exe string) []string {
	if helper := confine.Helper(); helper != "" {
		return []string{helper}
	}
	return []string{exe, "confine"}
}
