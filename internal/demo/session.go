package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/toolhost/toolhost/internal/stdioclient"
)

// protocolVersion is the MCP revision the demo negotiates, as Claude CLI
// does today.
const protocolVersion = "2025-06-18"

// closeTimeout is how long a server gets to finish after its stdin closes
// (it stops its units first: SIGTERM, 3 s, SIGKILL) before its process
// group is killed.
const closeTimeout = 15 * time.Second

// status is the {ok, reason} every tool result carries.
type status struct {
	OK     bool   `json:"ok"`
	Reason string `json:"reason"`
}

// agentSession is one `toolhost serve` subprocess playing one agent.
type agentSession struct {
	r     *runner
	ctx   context.Context
	agent string // short name: pm, coder …
	c     *stdioclient.Client
}

// startSession launches `toolhost serve` for agent over pipes and performs
// the MCP handshake, as an agent CLI would.
func (r *runner) startSession(ctx context.Context, agent, unit string) (*agentSession, error) {
	args := []string{"serve", "--agent", agent, "--project-dir", r.dir, "--session", "demo-" + agent}
	if unit != "" {
		args = append(args, "--unit", unit)
	}
	if r.o.AgentsFile != "" {
		args = append(args, "--agents", r.o.AgentsFile)
	}
	c, err := stdioclient.Start(r.o.Bin, args, r.env)
	if err != nil {
		return nil, fmt.Errorf("start %s %s: %w", r.o.Bin, strings.Join(args, " "), err)
	}
	s := &agentSession{r: r, ctx: ctx, agent: agent, c: c}
	raw, err := c.Initialize(ctx, protocolVersion, nil)
	if err != nil {
		_ = s.close()
		return nil, fmt.Errorf("initialize: %w%s", err, stderrTail(c.Stderr()))
	}
	var init struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if err := json.Unmarshal(raw, &init); err != nil || init.ProtocolVersion == "" {
		_ = s.close()
		return nil, fmt.Errorf("initialize answered without a protocolVersion: %s", raw)
	}
	r.sum.Servers++
	return s, nil
}

// close ends the session the way an agent CLI does: stdin closed, then
// wait for the server to stop its units and exit.
func (s *agentSession) close() error {
	if err := s.c.Close(closeTimeout); err != nil {
		return fmt.Errorf("toolhost serve did not exit cleanly: %w%s", err, stderrTail(s.c.Stderr()))
	}
	return nil
}

// identityEnv are the variables serve and hook read an identity from when a
// flag is absent; the demo's processes get their identity from flags only.
var identityEnv = []string{"TOOLHOST_AGENT", "TOOLHOST_PROJECT_DIR", "TOOLHOST_SESSION", "TOOLHOST_UNIT", "TOOLHOST_COMPANY", "TOOLHOST_PID"}

// childEnv is the environment of the demo's toolhost processes: the
// caller's, without an identity that would leak into the scripted agents
// (a TOOLHOST_UNIT would give the PM a unit).
func childEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(identityEnv, name) {
			env = append(env, kv)
		}
	}
	return env
}

// stderrTail is the end of a server's log, for error messages.
func stderrTail(log string) string {
	lines := strings.Split(strings.TrimSpace(log), "\n")
	if len(lines) == 0 || lines[0] == "" {
		return ""
	}
	if len(lines) > 5 {
		lines = lines[len(lines)-5:]
	}
	return "; server log ends:\n  " + strings.Join(lines, "\n  ")
}

// invoke sends one tools/call. With progress on (a terminal), long calls
// carry a progressToken and their notifications are drawn on one updating
// line.
func (s *agentSession) invoke(name string, args any, long bool) (*stdioclient.ToolResult, error) {
	s.r.sum.Calls++
	if !long || !s.r.o.Progress {
		return s.c.CallTool(s.ctx, name, args, nil)
	}
	token := fmt.Sprintf("demo-%s-%d", s.agent, s.r.sum.Calls)
	done := make(chan struct{})
	drawn := make(chan int)
	go func() {
		n := 0
		show := func(m stdioclient.Message) {
			var p struct {
				ProgressToken json.RawMessage `json:"progressToken"`
				Progress      float64         `json:"progress"`
				Total         float64         `json:"total"`
				Message       string          `json:"message"`
			}
			if m.Method != "notifications/progress" || json.Unmarshal(m.Params, &p) != nil {
				return
			}
			var got string
			if json.Unmarshal(p.ProgressToken, &got) != nil || got != token {
				return
			}
			n++
			s.r.progressLine(s.agent, name, p.Progress, p.Total, p.Message)
		}
		for {
			select {
			case m := <-s.c.Notifications():
				show(m)
			case <-done:
				// Notifications sent before the response were queued before
				// it was delivered, so a non-blocking drain sees them all.
				for {
					select {
					case m := <-s.c.Notifications():
						show(m)
					default:
						drawn <- n
						return
					}
				}
			}
		}
	}()
	res, err := s.c.CallTool(s.ctx, name, args, map[string]any{"progressToken": token})
	close(done)
	s.r.sum.ProgressNotes += <-drawn
	s.r.clearProgress()
	return res, err
}

// result calls a tool and decodes its structured result into out. A
// protocol error or an isError result is an error; ok:false is left to the
// caller (run_case reports a failed step that way).
func (s *agentSession) result(name string, args, out any, long bool) (status, error) {
	res, err := s.invoke(name, args, long)
	if err != nil {
		return status{}, fmt.Errorf("tools/call %s: %w", name, err)
	}
	if res.IsError {
		return status{}, fmt.Errorf("%s returned isError: %s", name, res.Text())
	}
	if len(res.StructuredContent) == 0 {
		return status{}, fmt.Errorf("%s returned no structuredContent: %s", name, res.Text())
	}
	var st status
	if err := json.Unmarshal(res.StructuredContent, &st); err != nil {
		return status{}, fmt.Errorf("%s: decode result: %w", name, err)
	}
	if out != nil {
		if err := json.Unmarshal(res.StructuredContent, out); err != nil {
			return st, fmt.Errorf("%s: decode result: %w", name, err)
		}
	}
	return st, nil
}

// call is result for a call that must succeed with ok:true.
func (s *agentSession) call(name string, args, out any) error {
	return s.callLong(name, args, out, false)
}

func (s *agentSession) callLong(name string, args, out any, long bool) error {
	st, err := s.result(name, args, out, long)
	if err != nil {
		return err
	}
	if !st.OK {
		return fmt.Errorf("%s returned ok:false: %s", name, st.Reason)
	}
	return nil
}

// refused makes a call the gate must refuse with an isError result whose
// message contains want, and records the refusal.
func (s *agentSession) refused(gate, name string, args any, want string) (string, error) {
	res, err := s.invoke(name, args, false)
	if err != nil {
		return "", fmt.Errorf("tools/call %s: %w", name, err)
	}
	msg := res.Text()
	if !res.IsError {
		return "", fmt.Errorf("%s was not refused (isError false): %s", name, msg)
	}
	if !strings.Contains(msg, want) {
		return "", fmt.Errorf("%s was refused for the wrong reason: want %q in %q", name, want, msg)
	}
	s.r.sum.Refused = append(s.r.sum.Refused, Refusal{Agent: s.agent, Gate: gate, Message: msg})
	return msg, nil
}

// cliWrite plays the agent CLI's own Write tool: it asks the PreToolUse
// hook first, with the payload Claude CLI sends, and writes rel only when
// the hook allows it (prints nothing).
func (r *runner) cliWrite(ctx context.Context, agent, rel string, content []byte) error {
	abs := filepath.Join(r.dir, filepath.FromSlash(rel))
	payload, err := json.Marshal(map[string]any{
		"session_id":      "demo-" + agent,
		"transcript_path": filepath.Join(r.dir, ".claude", "transcripts", "demo-"+agent+".jsonl"),
		"cwd":             r.dir,
		"permission_mode": "default",
		"hook_event_name": "PreToolUse",
		"tool_name":       "Write",
		"tool_input":      map[string]any{"file_path": abs, "content": string(content)},
	})
	if err != nil {
		return err
	}
	args := []string{"hook", "pretooluse", "--agent", "devloop-" + agent, "--project-dir", r.dir}
	if r.o.AgentsFile != "" {
		args = append(args, "--agents", r.o.AgentsFile)
	}
	cmd := exec.CommandContext(ctx, r.o.Bin, args...)
	cmd.Env = r.env
	cmd.Stdin = bytes.NewReader(payload)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	r.sum.HookChecks++
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("toolhost hook pretooluse: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	if out := strings.TrimSpace(stdout.String()); out != "" {
		var d struct {
			HookSpecificOutput struct {
				PermissionDecisionReason string `json:"permissionDecisionReason"`
			} `json:"hookSpecificOutput"`
		}
		if json.Unmarshal([]byte(out), &d) == nil && d.HookSpecificOutput.PermissionDecisionReason != "" {
			return fmt.Errorf("the PreToolUse hook denied Write %s: %s", rel, d.HookSpecificOutput.PermissionDecisionReason)
		}
		return fmt.Errorf("the PreToolUse hook printed %q; an allowed Write prints nothing", out)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		return err
	}
	return os.WriteFile(abs, content, 0o644)
}

// guard runs `toolhost guard COMMAND` and returns its exit code and stderr.
func (r *runner) guard(ctx context.Context, command string) (int, string, error) {
	cmd := exec.CommandContext(ctx, r.o.Bin, "guard", command)
	cmd.Env = r.env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	r.sum.GuardRuns++
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, stderr.String(), nil
	case errors.As(err, &ee):
		return ee.ExitCode(), stderr.String(), nil
	}
	return -1, "", fmt.Errorf("toolhost guard: %w", err)
}
