package cli

import (
	"errors"
	"os"

	"github.com/spf13/pflag"

	"github.com/toolhost/toolhost/internal/callctx"
	"github.com/toolhost/toolhost/internal/store"
	"github.com/toolhost/toolhost/internal/store/filestore"
	storeopen "github.com/toolhost/toolhost/internal/store/open"
)

// registerStore adds --store, the flag of every command that reads or
// writes the project's shared state.
func registerStore(fl *pflag.FlagSet, spec *string) {
	fl.StringVar(spec, "store", "", "the project's shared state: files (the project dir's, the default) or postgres://USER@HOST:PORT/DB (several machines; --pid is the tenant) (env "+storeopen.EnvStore+", and PG*)")
}

// envIdentity is id with the fields its flags left empty filled from the
// TOOLHOST_* variables a session's agent CLI hands its hooks and commands;
// callctx.Identity.FromEnv is their one reader, so every command falls back
// alike.
func envIdentity(id callctx.Identity) callctx.Identity {
	id.FromEnv(os.Getenv)
	return id
}

// stateFlags name a project's shared state outside a session: its dir
// (always: documents and machine-local state live there), its id (the
// tenant in a shared database) and the store.
type stateFlags struct {
	projectDir string
	projectID  string
	store      string
}

func (f *stateFlags) register(fl *pflag.FlagSet, dirDefault string) {
	fl.StringVar(&f.projectDir, "project-dir", "", "project directory (env TOOLHOST_PROJECT_DIR"+dirDefault+")")
	fl.StringVar(&f.projectID, "pid", "", "project id (env TOOLHOST_PID)")
	registerStore(fl, &f.store)
}

// resolve fills the flags from TOOLHOST_* and checks the project dir; dot
// makes "." the default dir.
func (f *stateFlags) resolve(dot bool) error {
	id := envIdentity(callctx.Identity{ProjectDir: f.projectDir, ProjectID: f.projectID})
	f.projectDir, f.projectID = id.ProjectDir, id.ProjectID
	if f.projectDir == "" && dot {
		f.projectDir = "."
	}
	if f.projectDir == "" {
		return usageErr(errors.New("--project-dir is required (or TOOLHOST_PROJECT_DIR)"))
	}
	if fi, err := os.Stat(f.projectDir); err != nil || !fi.IsDir() {
		return usageErr(&missingDirError{dir: f.projectDir})
	}
	if _, err := storeopen.KindOf(storeopen.SpecFrom(f.store, os.Getenv)); err != nil {
		return usageErr(err)
	}
	return nil
}

// open opens the project's store for access.
func (f *stateFlags) open(access filestore.Access) (store.Store, error) {
	return storeopen.Open(storeopen.Options{Spec: f.store, ProjectDir: f.projectDir, ProjectID: f.projectID, Access: access})
}

// missingDirError is a --project-dir that is not a directory.
type missingDirError struct{ dir string }

func (e *missingDirError) Error() string { return "--project-dir " + e.dir + " is not a directory" }
