package dashboard

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
	"golang.org/x/net/html"

	"github.com/toolhost/toolhost/internal/confirm"
	"github.com/toolhost/toolhost/internal/redact"
	"github.com/toolhost/toolhost/internal/store"
)

// Bounds of a confirmation's diff.
const (
	maxDiffInput = 1 << 20 // bytes of either side
	maxDiffLines = 400
)

// diffOf computes what a pending call would change, for the writes where
// that can be known from its arguments: a file and its new content (the
// {path, content} of an upstream file tool, record_memory's note), a
// todolist, a chapter's article. Both sides are redacted, as the
// arguments are. Nil when the call is not such a write.
func (d *Dashboard) diffOf(e *confirm.Entry) *Diff {
	var args map[string]any
	if json.Unmarshal(e.Arguments, &args) != nil {
		return nil
	}
	str := func(k string) string { s, _ := args[k].(string); return s }
	agent := shortAgent(e.Agent)
	switch {
	case e.Tool == "record_memory" && str("key") != "":
		content := str("content")
		if !strings.HasSuffix(content, "\n") {
			content += "\n"
		}
		return d.fileDiff("memory/devloop/"+agent+"/"+str("key")+".md", content)
	case e.Tool == "write_todolist":
		return d.todoDiff(agent, args["items"])
	case e.Tool == "write_chapter" && str("site") != "" && str("chapter_id") != "":
		return d.chapterDiff(path.Join(str("site"), str("chapter_id")+".html"), str("html"))
	}
	for _, pk := range []string{"path", "file_path", "file"} {
		p := str(pk)
		if p == "" {
			continue
		}
		for _, ck := range []string{"content", "contents", "text"} {
			if c, ok := args[ck].(string); ok {
				return d.fileDiff(p, c)
			}
		}
	}
	return nil
}

// relPath turns a path an argument names into a project-relative one; an
// absolute path counts only inside the project.
func (d *Dashboard) relPath(p string) (string, bool) {
	if filepath.IsAbs(p) {
		rel, err := filepath.Rel(d.dir, p)
		if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
			return "", false
		}
		p = filepath.ToSlash(rel)
	}
	return p, true
}

// current reads a file's content for a diff: ok false (with a note) when
// it cannot be shown.
func (d *Dashboard) current(rel string) (content string, exists bool, note string) {
	f, fi, err := d.read.OpenRead(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, ""
	}
	if err != nil {
		return "", false, "the current file cannot be read: " + err.Error()
	}
	defer f.Close()
	if fi.Size() > maxDiffInput {
		return "", true, fmt.Sprintf("the current file is %d bytes; no diff is shown over %d", fi.Size(), maxDiffInput)
	}
	var b bytes.Buffer
	if _, err := b.ReadFrom(f); err != nil {
		return "", true, "the current file cannot be read: " + err.Error()
	}
	return b.String(), true, ""
}

func (d *Dashboard) fileDiff(p, content string) *Diff {
	rel, ok := d.relPath(p)
	if !ok {
		return &Diff{Path: p, Note: "the path is outside the project; no diff is shown"}
	}
	if err := shownPath(rel); err != nil {
		return &Diff{Path: rel, Note: err.Error() + "; no diff is shown"}
	}
	old, exists, note := d.current(rel)
	if note != "" {
		return &Diff{Path: rel, Note: note}
	}
	return unified(rel, old, content, !exists)
}

func (d *Dashboard) todoDiff(agent string, items any) *Diff {
	rel := store.TodoPath(agent)
	old, err := d.store.Agents().Todolist(context.Background(), agent)
	if err != nil {
		return &Diff{Path: rel, Note: "the current todolist cannot be read: " + err.Error()}
	}
	exists := old != nil
	if old == nil {
		old = &store.Todolist{}
	}
	var a, b strings.Builder
	for _, it := range old.Items {
		fmt.Fprintf(&a, "%s %s%s  [%s]\n", it.ID, it.Description, deps(it.DependsOn), it.Status)
	}
	list, _ := items.([]any)
	for _, v := range list {
		m, _ := v.(map[string]any)
		id, _ := m["id"].(string)
		desc, _ := m["description"].(string)
		var dep []string
		if ds, ok := m["depends_on"].([]any); ok {
			for _, x := range ds {
				s, _ := x.(string)
				dep = append(dep, s)
			}
		}
		fmt.Fprintf(&b, "%s %s%s  [todo]\n", id, desc, deps(dep))
	}
	df := unified(rel, a.String(), b.String(), !exists)
	df.Note = "the steps, one per line, with their status after the call"
	return df
}

func deps(d []string) string {
	if len(d) == 0 {
		return ""
	}
	return " (after " + strings.Join(d, ", ") + ")"
}

// chapterDiff compares the chapter's current article with the new one,
// one element per line.
func (d *Dashboard) chapterDiff(rel, body string) *Diff {
	old, exists, note := d.current(rel)
	if note != "" {
		return &Diff{Path: rel, Note: note}
	}
	if exists {
		old = articleBody(old)
	}
	df := unified(rel, markupLines(old), markupLines(body), !exists)
	df.Note = "the chapter's article, before sanitising; one element per line"
	return df
}

// articleBody is the inner HTML of a page's <article class="body">.
func articleBody(page string) string {
	doc, err := html.Parse(strings.NewReader(page))
	if err != nil {
		return ""
	}
	var found *html.Node
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if found != nil {
			return
		}
		if n.Type == html.ElementNode && n.Data == "article" {
			for _, a := range n.Attr {
				if a.Key == "class" && strings.Contains(" "+a.Val+" ", " body ") {
					found = n
					return
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	if found == nil {
		return ""
	}
	var b bytes.Buffer
	for c := found.FirstChild; c != nil; c = c.NextSibling {
		_ = html.Render(&b, c)
	}
	return b.String()
}

// markupLines puts each tag of an HTML text on a line of its own.
func markupLines(s string) string {
	var b strings.Builder
	for _, line := range strings.Split(strings.ReplaceAll(s, "><", ">\n<"), "\n") {
		if t := strings.TrimSpace(line); t != "" {
			b.WriteString(t)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// unified is the unified diff of two redacted texts, cut at maxDiffLines.
func unified(rel, old, cur string, newFile bool) *Diff {
	if len(cur) > maxDiffInput || len(old) > maxDiffInput {
		return &Diff{Path: rel, New: newFile, Note: fmt.Sprintf("over %d bytes; no diff is shown", maxDiffInput)}
	}
	from := "a/" + rel
	if newFile {
		from = "/dev/null"
	}
	text, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: difflib.SplitLines(redact.PreviewString(old)), B: difflib.SplitLines(redact.PreviewString(cur)),
		FromFile: from, ToFile: "b/" + rel, Context: 3,
	})
	if err != nil {
		return &Diff{Path: rel, New: newFile, Note: err.Error()}
	}
	df := &Diff{Path: rel, New: newFile, Unified: text}
	if text == "" {
		df.Note = "no change: the file already has this content"
	}
	if lines := strings.Split(text, "\n"); len(lines) > maxDiffLines {
		df.Unified = strings.Join(lines[:maxDiffLines], "\n") + "\n"
		df.Note = fmt.Sprintf("%d more lines of the diff are not shown", len(lines)-maxDiffLines)
	}
	return df
}
