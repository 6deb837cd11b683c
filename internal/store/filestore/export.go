package filestore

import (
	"bufio"
	"context"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"

	"github.com/toolhost/toolhost/internal/audit"
	"github.com/toolhost/toolhost/internal/bugs"
	"github.com/toolhost/toolhost/internal/confirm"
	"github.com/toolhost/toolhost/internal/journal"
	"github.com/toolhost/toolhost/internal/ndjson"
	"github.com/toolhost/toolhost/internal/sandbox"
	"github.com/toolhost/toolhost/internal/store"
)

// Export writes a project's state into a directory in the file store's
// layout (store.Importer): the target of `toolhost store export --to DIR`.
// Lines are written as they come, byte for byte, into the file each names
// (the audit trail's rotated files keep their names), so the chain
// verifies in the copy; the checkpoint is the chain's last line.
type Export struct {
	door  *sandbox.Sandbox
	files map[string]*exportFile
	order []string

	chain    string
	last     []byte
	lastSeq  int64
	maxBug   int
	confirms confirm.File
}

type exportFile struct {
	f *os.File
	w *bufio.Writer
}

// NewExport starts an export into dir, which must exist and hold no
// project state (an export never mixes two projects).
func NewExport(dir string) (*Export, error) {
	for _, p := range []string{journal.TimelinePath, journal.EventsPath, audit.Path, bugs.Dir, store.AgentStateDir, confirm.Path} {
		if _, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(p))); err == nil {
			return nil, fmt.Errorf("%s already holds %s: export into an empty directory", dir, p)
		}
	}
	door, err := sandbox.New(dir, "toolhost", AllowList())
	if err != nil {
		return nil, err
	}
	return &Export{door: door, files: map[string]*exportFile{}}, nil
}

func (x *Export) appendLine(rel string, line []byte) error {
	f := x.files[rel]
	if f == nil {
		if dir := filepath.Dir(filepath.FromSlash(rel)); dir != "." {
			if err := x.door.MkdirAll(filepath.ToSlash(dir)); err != nil {
				return err
			}
		}
		of, err := x.door.OpenAppend(rel)
		if err != nil {
			return err
		}
		f = &exportFile{f: of, w: bufio.NewWriterSize(of, 64<<10)}
		x.files[rel] = f
		x.order = append(x.order, rel)
	}
	if _, err := f.w.Write(line); err != nil {
		return err
	}
	return f.w.WriteByte('\n')
}

func (x *Export) TimelineLine(_ context.Context, line []byte) error {
	return x.appendLine(journal.TimelinePath, line)
}

func (x *Export) EventLine(_ context.Context, line []byte) error {
	return x.appendLine(journal.EventsPath, line)
}

func (x *Export) AuditLine(_ context.Context, file string, line []byte) error {
	if file != audit.Path && !isRotatedAudit(file) {
		return fmt.Errorf("audit line of %q: not a file of the trail", file)
	}
	if seq, rec := audit.ChainOf(line); seq > 0 {
		x.last, x.lastSeq = append(x.last[:0], line...), seq
		if rec != nil && rec.ID != "" {
			x.chain = rec.ID
		}
	}
	return x.appendLine(file, line)
}

// isRotatedAudit reports whether file is a rotated file of the trail.
func isRotatedAudit(file string) bool {
	return ndjson.IsRotation(audit.Path, file)
}

func (x *Export) Bug(_ context.Context, b *bugs.Bug) error {
	x.maxBug = max(x.maxBug, bugs.IDNumber(b.ID))
	data, err := sandbox.MarshalJSON(b)
	if err != nil {
		return err
	}
	if err := x.door.MkdirAll(bugs.Dir); err != nil {
		return err
	}
	return x.door.WriteFile(bugs.Path(b.ID), data)
}

func (x *Export) Todolist(_ context.Context, agent string, tl *store.Todolist) error {
	return x.writeJSON(store.TodoPath(agent), tl)
}

func (x *Export) Runtime(_ context.Context, agent string, rs *store.RuntimeState) error {
	return x.writeJSON(store.RuntimePath(agent), rs)
}

func (x *Export) writeJSON(rel string, v any) error {
	if err := x.door.MkdirAll(filepath.ToSlash(filepath.Dir(rel))); err != nil {
		return err
	}
	return x.door.WriteJSON(rel, v)
}

func (x *Export) Confirmation(_ context.Context, e *confirm.Entry) error {
	x.confirms.Confirmations = append(x.confirms.Confirmations, e)
	return nil
}

func (x *Export) RequestStateKey(_ context.Context, key []byte) error {
	if err := x.door.MkdirAll(".toolhost"); err != nil {
		return err
	}
	return x.door.WriteFile(KeyPath, []byte(hex.EncodeToString(key)+"\n"))
}

// Done flushes the logs and writes the bug counter, the confirmations and
// the audit checkpoint (the chain's last line, which the copy holds).
func (x *Export) Done(context.Context) error {
	defer x.door.Close()
	for _, rel := range x.order {
		f := x.files[rel]
		if err := f.w.Flush(); err != nil {
			return err
		}
		if err := f.f.Sync(); err != nil {
			return err
		}
		if err := f.f.Close(); err != nil {
			return err
		}
	}
	if x.maxBug > 0 {
		data, err := sandbox.MarshalJSON(map[string]int{"next": x.maxBug + 1})
		if err != nil {
			return err
		}
		if err := x.door.WriteFile(bugs.CounterPath, data); err != nil {
			return err
		}
	}
	if len(x.confirms.Confirmations) > 0 {
		if err := x.writeJSON(confirm.Path, &x.confirms); err != nil {
			return err
		}
	}
	if x.lastSeq > 0 {
		h := audit.LineHash(x.last)
		cp := audit.Checkpoint{ID: x.chain, Seq: x.lastSeq, SHA256: hex.EncodeToString(h[:])}
		if err := x.writeJSON(audit.CheckpointPath, &cp); err != nil {
			return err
		}
	}
	return nil
}
