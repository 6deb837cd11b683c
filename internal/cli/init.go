package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/toolhost/toolhost/internal/agents"
	"github.com/toolhost/toolhost/internal/claudecode"
	"github.com/toolhost/toolhost/internal/policy"
	"github.com/toolhost/toolhost/internal/sandbox"
	"github.com/toolhost/toolhost/internal/tools/all"
)

// projectFlags name a project and the configuration its agents run with.
type projectFlags struct {
	projectDir string
	agentsFile string
	policyFile string
	lead       string
}

func (f *projectFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.projectDir, "project-dir", ".", "project directory")
	fl.StringVar(&f.agentsFile, "agents", "", "agents file the agents run with (default: the embedded configs/agents.json)")
	fl.StringVar(&f.policyFile, "policy", "", "tool policy file the agents run with (default: the embedded configs/tools.json)")
}

// project builds what toolhost init writes for the flags: every agent of
// the agents file with the tools its server offers it under the policy.
func (f *projectFlags) project() (*claudecode.Project, error) {
	dir, err := filepath.Abs(f.projectDir)
	if err != nil {
		return nil, err
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return nil, usageErr(fmt.Errorf("--project-dir %s is not a directory", f.projectDir))
	}
	p := &claudecode.Project{Dir: dir, Env: otelEnv(os.Environ())}
	for _, path := range []struct{ in, out *string }{{&f.agentsFile, &p.AgentsFile}, {&f.policyFile, &p.PolicyFile}} {
		if *path.in != "" {
			if *path.out, err = filepath.Abs(*path.in); err != nil {
				return nil, err
			}
		}
	}
	if p.Bin, err = os.Executable(); err != nil {
		return nil, err
	}
	if resolved, err := filepath.EvalSymlinks(p.Bin); err == nil {
		p.Bin = resolved
	}
	set, err := agents.Load(p.AgentsFile)
	if err != nil {
		return nil, usageErr(err)
	}
	if f.lead != "" {
		lead, err := set.Find(f.lead)
		if err != nil {
			return nil, usageErr(fmt.Errorf("--lead: %w", err))
		}
		p.Lead = lead.Name
	}
	var pf *policy.File
	if p.PolicyFile != "" {
		if pf, err = readPolicy(p.PolicyFile, dir); err != nil {
			return nil, usageErr(fmt.Errorf("--policy: %w", err))
		}
	} else {
		pf = policy.LoadWith("", zerolog.Nop(), ruleOptions(dir)).Current()
	}
	p.Matcher = hookMatcher(pf)
	reg := all.Registry()
	for _, ag := range set.List {
		a := claudecode.Agent{Agent: ag}
		for _, name := range ag.MCPTools() {
			e, ok := reg.Lookup(name)
			if !ok || !pf.Access(ag, e.Spec).Visible() {
				// An upstream tool (or one the policy hides) reaches the
				// agent only once its server offers it; the definition
				// lists what toolhost serves now.
				continue
			}
			a.Tools = append(a.Tools, claudecode.Tool{Name: name, Title: e.Spec.Title})
		}
		p.Agents = append(p.Agents, a)
	}
	return p, nil
}

// initFile is one file toolhost init writes, and what it found there.
type initFile struct {
	rel  string
	want []byte
	// state is what is on disk: fileMissing, fileSame, fileOurs (written
	// by init, unedited, out of date), fileEdited, fileForeign, or for
	// the settings fileMerge (the user's file, with toolhost's additions
	// missing).
	state string
}

const (
	fileMissing = "missing"
	fileSame    = "up to date"
	fileOurs    = "out of date"
	fileEdited  = "edited since toolhost init wrote it"
	fileForeign = "not written by toolhost init"
	fileMerge   = "lacks toolhost's permission rules or project hook"
)

// planInit reads what is in the project and decides each file's state.
func planInit(p *claudecode.Project) ([]initFile, error) {
	var files []initFile
	for i := range p.Agents {
		a := &p.Agents[i]
		f := initFile{rel: claudecode.AgentPath(a.Agent), want: p.AgentFile(a)}
		have, err := readProjectFile(p.Dir, f.rel)
		switch ours, edited := claudecode.Written(have); {
		case errors.Is(err, fs.ErrNotExist):
			f.state = fileMissing
		case err != nil:
			return nil, err
		case bytes.Equal(have, f.want):
			f.state = fileSame
		case !ours:
			f.state = fileForeign
		case edited:
			f.state = fileEdited
		default:
			f.state = fileOurs
		}
		files = append(files, f)
	}
	have, err := readProjectFile(p.Dir, claudecode.SettingsPath)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	want, err := p.MergeSettings(have)
	if err != nil {
		return nil, usageErr(err)
	}
	f := initFile{rel: claudecode.SettingsPath, want: want, state: fileSame}
	switch {
	case have == nil:
		f.state = fileMissing
	case !bytes.Equal(have, want):
		f.state = fileMerge
	}
	return append(files, f), nil
}

// readProjectFile reads rel of the project; a file that does not exist is
// fs.ErrNotExist.
func readProjectFile(dir, rel string) ([]byte, error) {
	return os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
}

func newInitCmd(_ *globals) *cobra.Command {
	var f projectFlags
	var force, check bool
	cmd := &cobra.Command{
		Use:   "init [--project-dir D] [--agents F] [--policy F] [--lead A] [--force] [--check]",
		Short: "Write the six devloop agents as Claude Code project agents (.claude/agents/) and merge the project's settings",
		Long: "init writes, for every agent of the agents file, .claude/agents/<agent>.md: its description (when the main thread\n" +
			"should delegate to it), model and tools, its own toolhost MCP server (toolhost serve --agent <agent>), its PreToolUse\n" +
			"hook (toolhost hook pretooluse --agent <agent>) and a system prompt for its role. It merges into .claude/settings.json\n" +
			"the permission rules for the agents' servers and the project's PreToolUse hook (the main thread: checked as the --lead\n" +
			"agent, or left to the CLI's own rules), keeping every key already there. Run again, it changes nothing; a file it did\n" +
			"not write, or one edited since, is left alone unless --force. --check writes nothing and exits 1 naming each file that\n" +
			"differs from what init would write. Then run claude in the project (accept the trust prompt once: Claude Code loads\n" +
			"a project agent's servers and hooks only in a trusted folder) and ask it to run the devloop; toolhost doctor checks the setup.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := f.project()
			if err != nil {
				return err
			}
			files, err := planInit(p)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if check {
				return reportCheck(w, files)
			}
			return applyInit(w, p, files, force)
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&f.lead, "lead", "", "the agent whose rules the project's hook applies to the main thread (default: none, the CLI's own rules decide there)")
	cmd.Flags().BoolVar(&force, "force", false, "also replace agent files init did not write or that were edited since")
	cmd.Flags().BoolVar(&check, "check", false, "write nothing; exit 1 naming each file that differs from what init would write")
	return cmd
}

// reportCheck names every file that is not what init would write.
func reportCheck(w io.Writer, files []initFile) error {
	differ := 0
	for _, f := range files {
		if f.state != fileSame {
			differ++
			fmt.Fprintf(w, "%s: %s\n", f.rel, f.state)
		}
	}
	if differ > 0 {
		return &exitError{code: 1, err: fmt.Errorf("%d file(s) differ from what toolhost init would write", differ)}
	}
	fmt.Fprintf(w, "every file is what toolhost init would write (%d files)\n", len(files))
	return nil
}

// applyInit writes what the plan says, each file atomically through a
// sandbox door on .claude/ (a symlink out of the project is refused).
func applyInit(w io.Writer, p *claudecode.Project, files []initFile, force bool) error {
	door, err := sandbox.New(p.Dir, "toolhost init", []string{".claude/agents/*.md", claudecode.SettingsPath})
	if err != nil {
		return err
	}
	defer door.Close()
	if err := door.MkdirAll(".claude/agents"); err != nil {
		return err
	}
	kept := 0
	for _, f := range files {
		verb := ""
		switch {
		case f.state == fileSame:
			fmt.Fprintf(w, "unchanged  %s\n", f.rel)
			continue
		case (f.state == fileForeign || f.state == fileEdited) && !force:
			kept++
			fmt.Fprintf(w, "left alone %s (%s; --force replaces it)\n", f.rel, f.state)
			continue
		case f.state == fileMissing:
			verb = "wrote"
		default:
			verb = "updated"
		}
		if err := door.WriteFile(f.rel, f.want); err != nil {
			return fmt.Errorf("%s: %w", f.rel, err)
		}
		fmt.Fprintf(w, "%-10s %s\n", verb, f.rel)
	}
	fmt.Fprintf(w, "\nNext: run claude in %s and ask it to run the devloop for a feature; the main thread delegates to the agents in loop order.\n"+
		"Claude Code loads the agents' servers and hooks only in a trusted folder: accept its trust prompt once (headless runs: toolhost doctor says how).\n", p.Dir)
	if kept > 0 {
		fmt.Fprintf(w, "%d file(s) were left alone: those agents run as their files say, not as toolhost init would write them.\n", kept)
	}
	return nil
}
