package triage

import (
	"errors"
	"io/fs"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/toolhost/toolhost/internal/callctx"
	"github.com/toolhost/toolhost/internal/fault"
)

// cleanRel validates a project-relative path taken from a bug or an input
// and returns its cleaned slash form.
func cleanRel(p string) (string, error) {
	switch {
	case p == "":
		return "", fault.Safef("empty path")
	case strings.ContainsRune(p, 0):
		return "", fault.Safef("NUL byte in path")
	case path.IsAbs(p) || filepath.IsAbs(p) || strings.HasPrefix(p, `\`):
		return "", fault.Safef("%q is absolute; cite a path relative to the project dir", p)
	}
	c := path.Clean(filepath.ToSlash(p))
	if c == "." || c == ".." || strings.HasPrefix(c, "../") {
		return "", fault.Safef("%q leaves the project dir", p)
	}
	return c, nil
}

// readRel reads a cited project-relative file. cleanRel words the refusal
// for a citation; the read itself goes through the sandbox door, which
// refuses symlink escapes, non-regular files and files too large to read.
func readRel(c *callctx.Ctx, rel string) ([]byte, error) {
	clean, err := cleanRel(rel)
	if err != nil {
		return nil, err
	}
	return c.Files.ReadFile(clean)
}

// skipDirs are directories never scanned for reports or sources: installed
// dependencies, build output and VCS metadata.
var skipDirs = map[string]bool{
	"node_modules": true, ".git": true, "dist": true, "build": true, "coverage": true,
	"vendor": true, ".next": true, ".turbo": true, ".cache": true,
}

// walkFiles returns the project-relative paths of regular files under root
// (project-relative) accepted by keep, sorted. A missing root is no files.
func walkFiles(c *callctx.Ctx, root string, keep func(rel string) bool) ([]string, error) {
	var out []string
	err := c.Files.Walk(root, func(rel string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && rel == root {
				return fs.SkipDir
			}
			return err
		}
		if d.IsDir() {
			if rel != root && skipDirs[d.Name()] {
				return fs.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() && keep(rel) {
			out = append(out, rel)
		}
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	sort.Strings(out)
	return out, nil
}

// splitLines splits text into lines without their line endings.
func splitLines(data []byte) []string {
	s := strings.ReplaceAll(string(data), "\r\n", "\n")
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// clip shortens s to at most n bytes on a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
