package progid

import (
	"path/filepath"

	"github.com/toolhost/toolhost/internal/agents"
	"github.com/toolhost/toolhost/internal/confine"
	"github.com/toolhost/toolhost/internal/sandbox"
)

// ForProject is the Finder for commands an agent runs in a project from
// cwd with PATH path ("" for this process's): every agent of set may write
// beneath its write roots and its commands' private temp dirs, and where
// some agent's commands may run unconfined, anywhere this user can.
func ForProject(set *agents.Set, projectDir, cwd, path string) *Finder {
	cfg := Config{Path: path, Dir: cwd, TempPrefix: confine.TempDirPrefix}
	if set != nil {
		for _, a := range set.List {
			bases, err := sandbox.PatternBases(a.Sandbox.WriteAllowList)
			if err != nil {
				// A list the sandbox refuses grants nothing, but the
				// project may be the agent's: take all of it.
				bases = []string{"."}
			}
			for _, b := range bases {
				cfg.Writable = append(cfg.Writable, filepath.Join(projectDir, filepath.FromSlash(b)))
			}
			if a.Sandbox.Commands != agents.CommandsRequire && a.Sandbox.Commands != "" {
				cfg.AnyWritable = true
			}
		}
	}
	if real, err := filepath.EvalSymlinks(projectDir); err == nil && real != projectDir {
		// Paths the command names may go through either spelling.
		for _, w := range slicesClone(cfg.Writable) {
			if rel, err := filepath.Rel(projectDir, w); err == nil {
				cfg.Writable = append(cfg.Writable, filepath.Join(real, rel))
			}
		}
	}
	return New(cfg)
}

func slicesClone(s []string) []string { return append([]string(nil), s...) }
