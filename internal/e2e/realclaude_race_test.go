package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/live"
	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/internal/testutil/claudecli"
)

// raceTries is how many CLI Writes race the swapping command.
const raceTries = 40

// TestRealClaudeWriteRace: the real Claude CLI's Write is checked by the
// hook, but written afterwards by the CLI itself, unconfined. A command the
// agent started with its (confined) Bash keeps swapping the directory of
// the target for a symbolic link to a directory outside the project, and
// back, as fast as it can; the model then writes into that directory again
// and again. Every such Write is refused while the command runs — with the
// way to write instead — and nothing ever lands outside; once the command
// has ended (its last process gone, as the kernel's process tree says), the
// same Write works. A file with another name (a hard link) is refused too.
func TestRealClaudeWriteRace(t *testing.T) {
	t.Parallel()
	claudecli.Binary(t)
	bin := testutil.Toolhost(t)
	project := t.TempDir()
	outside := t.TempDir()
	src := filepath.Join(project, "units/demo/src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "victim.txt"), []byte("keep\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A second name of a file outside the allow-list, made by someone
	// unconfined (the agent's commands cannot link one in).
	if err := os.Link(filepath.Join(outside, "victim.txt"), filepath.Join(project, "units/demo/linked.txt")); err != nil {
		t.Fatal(err)
	}
	swapper := fmt.Sprintf(`cd units/demo && ln -s %s lnk && nohup sh -c 'while [ ! -e stop ]; do mv -T src real.tmp; mv -T lnk src; mv -T src lnk; mv -T real.tmp src; done' >/dev/null 2>&1 &`, outside)
	write := func(i int) claudecli.ToolUse {
		return claudecli.ToolUse{ID: fmt.Sprintf("toolu_w%d", i), Name: "Write",
			Input: map[string]any{"file_path": filepath.Join(src, fmt.Sprintf("f%d.txt", i)), "content": "written\n"}}
	}
	var runningDuringWrites []live.Entry
	m := claudecli.NewScriptedModel(t, func(req claudecli.Request) claudecli.Turn {
		switch {
		case req.Turn == 0:
			return claudecli.Turn{ToolUses: []claudecli.ToolUse{{ID: "toolu_swap", Name: "Bash", Input: map[string]any{"command": swapper, "description": "swap"}}}}
		case req.Turn <= raceTries:
			if req.Turn == raceTries/2 {
				runningDuringWrites, _ = live.Running(project)
			}
			return claudecli.Turn{ToolUses: []claudecli.ToolUse{write(req.Turn)}}
		}
		return claudecli.Turn{Text: "done"}
	})
	res := claudecli.Run(t, m, claudecli.RunOptions{Dir: project, PermissionMode: "bypassPermissions", Timeout: 5 * time.Minute,
		Settings: run(t, bin, "mcp-config", "--agent", "devloop-coder", "--project-dir", project, "--settings")})
	// Whatever happened, the swapper stops.
	_ = os.WriteFile(filepath.Join(project, "units/demo/stop"), nil, 0o644)
	if res.ExitCode != 0 {
		t.Fatalf("claude: %s", res)
	}
	if r := m.ToolResult(t, "toolu_swap"); r.IsError {
		t.Fatalf("the swapper did not start: %+v", r)
	}
	if len(runningDuringWrites) != 1 || runningDuringWrites[0].Agent != "devloop-coder" {
		t.Fatalf("the swapper's holder during the writes: %+v, want the coder's", runningDuringWrites)
	}
	refused := 0
	for i := 1; i <= raceTries; i++ {
		r := m.ToolResult(t, fmt.Sprintf("toolu_w%d", i))
		// Refused as racing a running command, or — when the check
		// caught the swap itself — as a write through a symbolic link.
		racing := strings.Contains(r.Text, "is still running") && strings.Contains(r.Text, "Write the file with Bash instead")
		if r.IsError && (racing || strings.Contains(r.Text, "is a symlink; the sandbox never writes through symlinks")) {
			refused++
		} else {
			t.Errorf("write %d while the swapper runs: %s, want the hook's refusal", i, r.Text)
		}
	}
	assertNothingOutside(t, outside)
	if b, _ := os.ReadFile(filepath.Join(outside, "victim.txt")); string(b) != "keep\n" {
		t.Fatalf("the file outside, reached through its second name, changed: %q", b)
	}
	t.Logf("%d of %d racing writes refused, none landed outside", refused, raceTries)

	// The swapper ends; its holder goes once its last process is gone.
	deadline := time.Now().Add(30 * time.Second)
	for {
		h, err := live.Running(project)
		if err == nil && len(h) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the swapper's holder outlived it: %+v %v", h, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The swapper may have been stopped half-way through a swap: put the
	// directory back.
	restoreSrc(t, filepath.Join(project, "units/demo"))
	// Ordinary use: with nothing running, the coder's Write works.
	m2 := claudecli.NewModel(t, claudecli.Turn{ToolUses: []claudecli.ToolUse{write(0)}},
		claudecli.Turn{ToolUses: []claudecli.ToolUse{{ID: "toolu_link", Name: "Write",
			Input: map[string]any{"file_path": filepath.Join(project, "units/demo/linked.txt"), "content": "overwritten\n"}}}})
	res = claudecli.Run(t, m2, claudecli.RunOptions{Dir: project, PermissionMode: "bypassPermissions",
		Settings: run(t, bin, "mcp-config", "--agent", "devloop-coder", "--project-dir", project, "--settings")})
	if r := m2.ToolResult(t, "toolu_w0"); res.ExitCode != 0 || r.IsError {
		t.Fatalf("a Write with nothing running: %s (%s)", r.Text, res)
	}
	if b, err := os.ReadFile(filepath.Join(src, "f0.txt")); err != nil || string(b) != "written\n" {
		t.Fatalf("f0.txt: %q %v", b, err)
	}
	if r := m2.ToolResult(t, "toolu_link"); !r.IsError || !strings.Contains(r.Text, "hard links") {
		t.Errorf("a Write through a second name of a file outside: %s", r.Text)
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "victim.txt")); string(b) != "keep\n" {
		t.Fatalf("the file outside changed through its second name: %q", b)
	}
}

// TestRealClaudeMCPBashSwapper: the real Claude CLI, connected to toolhost
// serve, starts a swapper through toolhost's own `bash` tool (it leaves its
// session and ignores SIGTERM, and the call returns), then writes into the
// swapped directory with its own Write, checked by the hook, again and
// again. Nothing lands outside the project: the swapper did not outlive the
// call. Every such Write, finding nothing running, lands.
func TestRealClaudeMCPBashSwapper(t *testing.T) {
	t.Parallel()
	claudecli.Binary(t)
	bin := testutil.Toolhost(t)
	project, outside, demo := raceProject(t, "units/demo")
	const tries = 12
	swap := func(i int) claudecli.ToolUse {
		return claudecli.ToolUse{ID: fmt.Sprintf("toolu_swap%d", i), Name: "mcp__toolhost__bash",
			Input: map[string]any{"command": "cd units/demo && " + swapLoop(outside) + " sleep 0.05"}}
	}
	write := func(i int) claudecli.ToolUse {
		return claudecli.ToolUse{ID: fmt.Sprintf("toolu_w%d", i), Name: "Write",
			Input: map[string]any{"file_path": filepath.Join(demo, "src", fmt.Sprintf("f%d.txt", i)), "content": "written\n"}}
	}
	m := claudecli.NewScriptedModel(t, func(req claudecli.Request) claudecli.Turn {
		switch i := req.Turn / 2; {
		case i >= tries:
			return claudecli.Turn{Text: "done"}
		case req.Turn%2 == 0:
			return claudecli.Turn{ToolUses: []claudecli.ToolUse{swap(i)}}
		default:
			// What a swapper stopped half-way left is put back, as a
			// human would, before the next Write.
			restoreSrc(t, demo)
			return claudecli.Turn{ToolUses: []claudecli.ToolUse{write(i)}}
		}
	})
	mcp := run(t, bin, "mcp-config", "--agent", "devloop-coder", "--project-dir", project)
	settings := run(t, bin, "mcp-config", "--agent", "devloop-coder", "--project-dir", project, "--settings")
	allowed := strings.Split(strings.TrimSpace(string(run(t, bin, "mcp-config", "--agent", "devloop-coder", "--project-dir", project, "--allowed-tools"))), ",")
	res := claudecli.Run(t, m, claudecli.RunOptions{Dir: project, MCPConfig: mcp, Settings: settings, AllowedTools: append(allowed, "Write"),
		PermissionMode: "bypassPermissions", Timeout: 5 * time.Minute})
	if res.ExitCode != 0 {
		t.Fatalf("claude: %s", res)
	}
	for i := range tries {
		if r := m.ToolResult(t, fmt.Sprintf("toolu_swap%d", i)); r.IsError {
			t.Fatalf("swapper %d did not start: %s", i, r.Text)
		}
		if r := m.ToolResult(t, fmt.Sprintf("toolu_w%d", i)); r.IsError {
			t.Errorf("write %d, with nothing running: %s", i, r.Text)
		}
	}
	assertNothingOutside(t, outside)
	if b, _ := os.ReadFile(filepath.Join(outside, "victim.txt")); string(b) != "keep\n" {
		t.Fatalf("the file outside changed: %q", b)
	}
}
