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

// archivePlan is what archiving some contents of a document will write:
// the new version files, then versions.json naming them.
type archivePlan struct {
	// Versions[i] is the archived version that holds the i-th content.
	Versions []int
	// Created[i] is true when that version is made by this plan.
	Created []bool
	Files   []sandbox.File
}

// lockVersions takes the lock of rel's versions.json, under which its
// archive is read and planned: the same lock Update would take on that file.
func lockVersions(c *callctx.Ctx, rel string) (func(), error) {
	return c.Files.Lock(versionsPath(rel))
}

// planArchive plans to store each of contents, in order, as the next version
// of rel, except a content equal to the newest archived version at that
// point, which that version already holds. The caller holds lockVersions and
// writes plan.Files in one batch (sandbox WriteFiles) together with whatever
// else the call writes, so the archive and the page change together or not
// at all.
func planArchive(c *callctx.Ctx, rel string, contents ...[]byte) (*archivePlan, error) {
	vs, err := readVersions(c.Files, rel)
	if err != nil {
		return nil, err
	}
	vs.Path = rel
	plan := &archivePlan{}
	for _, data := range contents {
		sum := sha256Hex(data)
		if l := vs.latest(); l != nil && l.SHA256 == sum {
			plan.Versions = append(plan.Versions, l.Version)
			plan.Created = append(plan.Created, false)
			continue
		}
		n := 1
		if l := vs.latest(); l != nil {
			n = l.Version + 1
		}
		vs.Versions = append(vs.Versions, Version{
			Version: n, SHA256: sum, Size: len(data), Time: c.Clock.Now(), Agent: c.Agent, CallID: c.CallID,
		})
		// The version file comes before versions.json in the batch, so a
		// crash between the renames leaves an unlisted file, never a
		// dangling entry.
		plan.Files = append(plan.Files, sandbox.File{Path: versionPath(rel, n), Data: data})
		plan.Versions = append(plan.Versions, n)
		plan.Created = append(plan.Created, true)
	}
	if len(plan.Files) > 0 {
		b, err := sandbox.MarshalJSON(vs)
		if err != nil {
			return nil, err
		}
		plan.Files = append(plan.Files, sandbox.File{Path: versionsPath(rel), Data: b})
	}
	return plan, nil
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
		return ArchiveOutput{}, tool.Fail(nil, "path %s does not exist; give the project-relative path of an existing document, e.g. prd/<chapter>.html", in.Path)
	}
	if err != nil {
		return ArchiveOutput{}, err
	}
	unlock, err := lockVersions(c, rel)
	if err != nil {
		return ArchiveOutput{}, err
	}
	defer unlock()
	plan, err := planArchive(c, rel, data)
	if err != nil {
		return ArchiveOutput{}, err
	}
	if err := c.Files.WriteFiles(plan.Files); err != nil {
		return ArchiveOutput{}, err
	}
	v := plan.Versions[0]
	return ArchiveOutput{Status: tool.Status{OK: true}, Version: v, Created: plan.Created[0], File: versionPath(rel, v)}, nil
}
