// Package open chooses and opens a project's store from the --store flag
// or TOOLHOST_STORE: empty or "files" is the project dir's files
// (internal/store/filestore), the embedded default; a postgres:// URL (or
// "postgres", with the PG* variables) is a PostgreSQL database shared by
// several machines (internal/store/pgstore), the project id (--pid) its
// tenant key. Every command that reads or writes the shared state opens it
// here, so the choice exists once.
package open

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/rs/zerolog"

	"github.com/toolhost/toolhost/internal/store"
	"github.com/toolhost/toolhost/internal/store/filestore"
	"github.com/toolhost/toolhost/internal/store/pgstore"
)

// EnvStore is the environment variable --store defaults to.
const EnvStore = "TOOLHOST_STORE"

// Options say which project to open and for what.
type Options struct {
	// Spec is --store ("" means TOOLHOST_STORE, then files).
	Spec string
	// ProjectDir is the project's directory (the file store's home, and
	// where machine-local state lives with any store).
	ProjectDir string
	// ProjectID is the project's id (--pid).
	ProjectID string
	// Access is what the caller may write.
	Access filestore.Access
	// Limits are the log rotation sizes of the file store.
	AuditMaxBytes, EventsMaxBytes, TimelineMaxBytes int64
	// Session marks the store of a serving session, which repairs what a
	// killed writer left before it starts.
	Session bool
	Log     zerolog.Logger
}

// SpecFrom returns the store spec a command uses: its flag, else
// TOOLHOST_STORE.
func SpecFrom(flag string, getenv func(string) string) string {
	if flag != "" {
		return flag
	}
	return getenv(EnvStore)
}

// Kind of a spec.
const (
	KindFiles    = "files"
	KindPostgres = "postgres"
)

// KindOf tells which implementation a spec names, or an error saying what
// a spec may be.
func KindOf(spec string) (string, error) {
	switch s := strings.TrimSpace(spec); {
	case s == "" || s == KindFiles:
		return KindFiles, nil
	case pgstore.IsSpec(s):
		return KindPostgres, nil
	default:
		return "", fmt.Errorf("--store %q: want files (the project dir's files, the default) or a PostgreSQL address (postgres://user@host:5432/db, or postgres with the PG* variables)", spec)
	}
}

// Open opens the store o names.
func Open(o Options) (store.Store, error) {
	spec := SpecFrom(o.Spec, os.Getenv)
	kind, err := KindOf(spec)
	if err != nil {
		return nil, err
	}
	switch kind {
	case KindPostgres:
		return pgstore.Open(context.Background(), strings.TrimSpace(spec), pgstore.Options{ProjectID: o.ProjectID})
	default:
		fs, err := filestore.Open(o.ProjectDir, filestore.Options{
			ProjectID: o.ProjectID, Access: o.Access,
			AuditMaxBytes: o.AuditMaxBytes, EventsMaxBytes: o.EventsMaxBytes, TimelineMaxBytes: o.TimelineMaxBytes,
		})
		if err != nil {
			return nil, err
		}
		if o.Session {
			if cut, err := fs.Repair(); err != nil || cut > 0 {
				o.Log.Warn().Str("event", "log_tail_repaired").Int64("cut_bytes", cut).AnErr("problem", err).
					Msg("cut the torn last line a killed writer left in the events or the timeline")
			}
		}
		return fs, nil
	}
}
