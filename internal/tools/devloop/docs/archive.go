package docs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/toolhost/toolhost/internal/callctx"
	"github.com/toolhost/toolhost/internal/fault"
	"github.com/toolhost/toolhost/internal/sandbox"
	"github.com/toolhost/toolhost/internal/tool"
)

// Version is one archived version of a document.
type Version struct {
	Version int       `json:"version"`
	SHA256  string    `json:"sha256"`
	Size    int       `json:"size"`
	Time    time.Time `json:"time"`
	Agent   string    `json:"agent"`
	CallID  string    `json:"call_id,omitempty"`
}

// Versions is archive/<path>/versions.json.
type Versions struct {
	Path     string    `json:"path"`
	Versions []Version `json:"versions"`
}

func (v *Versions) latest() *Version {
	if len(v.Versions) == 0 {
		return nil
	}
	return &v.Versions[len(v.Versions)-1]
}

func (v *Versions) find(n int) *Version {
	for i := range v.Versions {
		if v.Versions[i].Version == n {
			return &v.Versions[i]
		}
	}
	return nil
}

func archiveDir(rel string) string   { return path.Join("archive", rel) }
func versionsPath(rel string) string { return path.Join(archiveDir(rel), "versions.json") }
func versionPath(rel string, n int) string {
	return path.Join(archiveDir(rel), fmt.Sprintf("v%d.html", n))
}
func sha256Hex(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }
func notFound(err error) bool   { return errors.Is(err, fs.ErrNotExist) }

// docPath cleans a document path. The archive lives at archive/<path>, so
// a path that is absolute or climbs out of the project would put it
// elsewhere; such paths are refused here, before the sandbox sees them.
func docPath(p string) (string, error) {
	c := path.Clean(filepath.ToSlash(p))
	if path.IsAbs(c) || c == "." || c == ".." || strings.HasPrefix(c, "../") || strings.ContainsRune(c, 0) {
		return "", &tool.ValidationError{Field: "path", Reason: fmt.Sprintf("path %q must be relative to the project dir and stay inside it, e.g. prd/goals.html", p)}
	}
	return c, nil
}

func readVersions(files callctx.Files, rel string) (*Versions, error) {
	var v Versions
	b, err := files.ReadFile(versionsPath(rel))
	if notFound(err) {
		return &Versions{Path: rel}, nil
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, &fault.CorruptFile{Path: versionsPath(rel), Format: "JSON", Err: err}
	}
	return &v, nil
}

// archive stores data as the next version of rel unless it equals the
// newest archived version. It returns the version that holds data and
// whether it was created now.
func archive(c *callctx.Ctx, rel string, data []byte) (int, bool, error) {
	sum := sha256Hex(data)
	var version int
	var created bool
	err := sandbox.UpdateJSON(c.Files, versionsPath(rel), func(v *Versions, _ bool) error {
		v.Path = rel
		if l := v.latest(); l != nil && l.SHA256 == sum {
			version = l.Version
			return sandbox.ErrUnchanged
		}
		version = 1
		if l := v.latest(); l != nil {
			version = l.Version + 1
		}
		// The version file is written before versions.json names it, so a
		// crash in between leaves an unlisted file, never a dangling entry.
		if err := c.Files.WriteFile(versionPath(rel, version), data); err != nil {
			return err
		}
		v.Versions = append(v.Versions, Version{
			Version: version, SHA256: sum, Size: len(data), Time: c.Clock.Now(), Agent: c.Agent, CallID: c.CallID,
		})
		created = true
		return nil
	})
	return version, created, err
}

// ArchiveInput names the document to archive.
type ArchiveInput struct {
	Path string `json:"path" jsonschema:"minLength=1,maxLength=512" jsonschema_description:"project-relative path of the document, e.g. prd/goals.html"`
}

// ArchiveOutput is the result of archive_doc.
type ArchiveOutput struct {
	tool.Status
	Version int    `json:"version,omitempty" jsonschema_description:"the archived version holding the document's current content"`
	Created bool   `json:"created" jsonschema_description:"false when the content equals the newest archived version, so no new version was made"`
	File    string `json:"file,omitempty" jsonschema_description:"project-relative path of the archived copy"`
}

// ArchiveDoc is the archive_doc tool.
func ArchiveDoc() tool.Tool {
	return tool.New(tool.Spec{
		Name:  "archive_doc",
		Title: "Archive document version",
		Description: "Keep the current content of a document as its next version: archive/<path>/v<N>.html plus archive/<path>/versions.json (hash, size, time, agent). " +
			"Archiving content identical to the newest version creates nothing and returns that version.",
		Effect:     tool.Additive,
		Idempotent: true,
	}, archiveDoc)
}

func archiveDoc(_ context.Context, c *callctx.Ctx, in ArchiveInput) (ArchiveOutput, error) {
	rel, err := docPath(in.Path)
	if err != nil {
		return ArchiveOutput{}, err
	}
	data, err := c.Files.ReadFile(rel)
	if notFound(err) {
		return ArchiveOutput{}, tool.Fail("path %s does not exist; give the project-relative path of an existing document, e.g. prd/<chapter>.html", in.Path)
	}
	if err != nil {
		return ArchiveOutput{}, err
	}
	v, created, err := archive(c, rel, data)
	if err != nil {
		return ArchiveOutput{}, err
	}
	return ArchiveOutput{Status: tool.Status{OK: true}, Version: v, Created: created, File: versionPath(rel, v)}, nil
}
