package claudecode

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// GlobalConfig is the file where Claude Code keeps its per-project records,
// the trust decision among them: $CLAUDE_CONFIG_DIR/.claude.json when that
// variable is set, else ~/.claude.json.
func GlobalConfig(getenv func(string) string) (string, error) {
	if dir := getenv("CLAUDE_CONFIG_DIR"); dir != "" {
		return filepath.Join(dir, ".claude.json"), nil
	}
	home := getenv("HOME")
	if home == "" {
		var err error
		if home, err = os.UserHomeDir(); err != nil {
			return "", err
		}
	}
	return filepath.Join(home, ".claude.json"), nil
}

// Trust is what Claude Code's records say about a project folder.
type Trust struct {
	// Config is the file read.
	Config string
	// Folder is the folder whose record trusts the project (the project
	// dir or one of its parents); "" when none does.
	Folder string
}

// Trusted reports whether a record trusts the project.
func (t Trust) Trusted() bool { return t.Folder != "" }

// TrustOf looks up whether Claude Code trusts dir: it does when
// projects[<dir or a parent>].hasTrustDialogAccepted is true in its global
// config, with the folder as written and with its symlinks resolved. A
// missing config trusts nothing; one that does not parse is an error.
func TrustOf(dir string, getenv func(string) string) (Trust, error) {
	cfg, err := GlobalConfig(getenv)
	if err != nil {
		return Trust{}, err
	}
	t := Trust{Config: cfg}
	data, err := os.ReadFile(cfg)
	if errors.Is(err, fs.ErrNotExist) {
		return t, nil
	}
	if err != nil {
		return t, err
	}
	var doc struct {
		Projects map[string]struct {
			HasTrustDialogAccepted bool `json:"hasTrustDialogAccepted"`
		} `json:"projects"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return t, fmt.Errorf("%s is not valid JSON: %v", cfg, err)
	}
	starts := []string{filepath.Clean(dir)}
	if real, err := filepath.EvalSymlinks(dir); err == nil && real != starts[0] {
		starts = append(starts, real)
	}
	for _, d := range starts {
		for {
			if doc.Projects[d].HasTrustDialogAccepted {
				t.Folder = d
				return t, nil
			}
			parent := filepath.Dir(d)
			if parent == d {
				break
			}
			d = parent
		}
	}
	return t, nil
}

// TrustFix says how to trust dir, for a message.
func TrustFix(dir, config string) string {
	return fmt.Sprintf("run claude in %s once and accept the trust prompt, or set projects[%q].hasTrustDialogAccepted to true in %s "+
		"(Claude Code loads a project agent's MCP servers and hooks only in a trusted folder)", dir, dir, config)
}
