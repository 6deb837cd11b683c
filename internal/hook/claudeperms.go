package hook

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/toolhost/toolhost/internal/bashguard"
)

// The hook rewrites an allowed Bash command to run under `toolhost
// confine`, and the Claude CLI matches its settings' Bash(…) rules against
// the command it runs — the rewritten one. A user's "deny":
// ["Bash(curl:*)"] would stop matching. So the hook applies the settings'
// Bash deny and ask rules to the command as written, before the rewrite.
// (The CLI's allow rules stop matching too; that only makes the CLI ask
// where it would not have, and is documented in docs/confine.md.)

// managedSettingsDir is where Linux installs keep the administrator's
// settings (a variable for tests).
var managedSettingsDir = "/etc/claude-code"

// claudeSettingsFiles are the settings files whose permission rules the
// Claude CLI applies in a session in proj (and cwd, where the CLI runs
// now): managed, the user's, the project's shared and local ones.
func claudeSettingsFiles(proj, cwd string) []string {
	files := []string{filepath.Join(managedSettingsDir, "managed-settings.json")}
	dropIns, _ := filepath.Glob(filepath.Join(managedSettingsDir, "managed-settings.d", "*.json"))
	slices.Sort(dropIns)
	files = append(files, dropIns...)
	config := os.Getenv("CLAUDE_CONFIG_DIR")
	if config == "" {
		if home, err := os.UserHomeDir(); err == nil {
			config = filepath.Join(home, ".claude")
		}
	}
	if config != "" {
		files = append(files, filepath.Join(config, "settings.json"))
	}
	dirs := []string{proj}
	if cwd != "" && filepath.IsAbs(cwd) && filepath.Clean(cwd) != proj {
		dirs = append(dirs, filepath.Clean(cwd))
	}
	for _, d := range dirs {
		files = append(files, filepath.Join(d, ".claude", "settings.json"), filepath.Join(d, ".claude", "settings.local.json"))
	}
	return files
}

// claudeRule is one Bash rule of a settings file.
type claudeRule struct {
	text string // as written, e.g. Bash(curl:*)
	file string
	// match reports whether a command text matches the rule.
	match func(string) bool
}

// claudePermissions are the Bash deny and ask rules of the settings.
type claudePermissions struct {
	deny, ask []claudeRule
}

// loadClaudePermissions reads the Bash rules of the files found (one that
// does not exist is skipped) and of the files named (--claude-settings:
// each must exist). A file that cannot be read or parsed is an error,
// since its deny rules cannot be applied.
func loadClaudePermissions(found, named []string) (claudePermissions, error) {
	var p claudePermissions
	for i, file := range append(slices.Clip(found), named...) {
		data, err := os.ReadFile(file)
		if errors.Is(err, fs.ErrNotExist) && i < len(found) {
			continue
		}
		if err != nil {
			return p, fmt.Errorf("cannot read the Claude CLI settings %s: %v", file, err)
		}
		var s struct {
			Permissions struct {
				Deny []string `json:"deny"`
				Ask  []string `json:"ask"`
			} `json:"permissions"`
		}
		if err := json.Unmarshal(data, &s); err != nil {
			return p, fmt.Errorf("the Claude CLI settings %s are not valid (%v)", file, err)
		}
		for _, list := range []struct {
			rules []string
			into  *[]claudeRule
		}{{s.Permissions.Deny, &p.deny}, {s.Permissions.Ask, &p.ask}} {
			for _, text := range list.rules {
				if m, ok := bashRuleMatcher(text); ok {
					*list.into = append(*list.into, claudeRule{text: text, file: file, match: m})
				}
			}
		}
	}
	return p, nil
}

// bashRuleMatcher reads a rule the way the CLI does for Bash: "Bash" (or
// "Bash(*)") is every command; "Bash(prefix:*)" the prefix alone or
// followed by a space and anything; a pattern with "*" a wildcard match in
// which "*" is any text (a single trailing " *" may match nothing: "ls *"
// matches "ls"); anything else the exact command. Rules of other tools are
// not Bash's (ok false).
func bashRuleMatcher(rule string) (func(string) bool, bool) {
	rule = strings.TrimSpace(rule)
	if rule == "Bash" {
		return func(string) bool { return true }, true
	}
	content, ok := strings.CutPrefix(rule, "Bash(")
	if !ok || !strings.HasSuffix(content, ")") {
		return nil, false
	}
	content = strings.TrimSpace(strings.TrimSuffix(content, ")"))
	switch {
	case content == "" || content == "*":
		return func(string) bool { return true }, true
	case strings.HasSuffix(content, ":*"):
		prefix := strings.TrimSuffix(content, ":*")
		return func(c string) bool { return c == prefix || strings.HasPrefix(c, prefix+" ") }, true
	case strings.Contains(content, "*"):
		parts := strings.Split(content, "*")
		for i, part := range parts {
			parts[i] = regexp.QuoteMeta(part)
		}
		pattern := strings.Join(parts, ".*")
		if len(parts) == 2 && strings.HasSuffix(content, " *") {
			pattern = regexp.QuoteMeta(strings.TrimSuffix(content, " *")) + "(?: .*)?"
		}
		re := regexp.MustCompile(`(?s)\A` + pattern + `\z`)
		return re.MatchString, true
	}
	return func(c string) bool { return c == content }, true
}

// bash is the verdict of the rules on a command as written: deny when a
// deny rule matches the whole command or any simple command in it (the
// CLI splits compound commands too; the guard's analysis also reaches
// commands behind wrappers and nested shells), else ask when an ask rule
// does; otherwise no rule decided.
func (p claudePermissions) bash(command string, a *bashguard.Analysis) hookVerdict {
	if len(p.deny) == 0 && len(p.ask) == 0 {
		return hookVerdict{}
	}
	texts := commandTexts(command, a)
	for _, set := range []struct {
		rules []claudeRule
		verb  string
	}{{p.deny, "deny"}, {p.ask, "ask"}} {
		for _, r := range set.rules {
			for _, text := range texts {
				if !r.match(text) {
					continue
				}
				reason := fmt.Sprintf("the Claude CLI settings (%s) %s this command: rule %s matches %q. "+
					"toolhost runs Bash confined under a rewritten command, which the CLI's own rules no longer see, so the hook applies them to the command as written",
					r.file, map[string]string{"deny": "deny", "ask": "ask for a confirmation of"}[set.verb], r.text, text)
				v := hookVerdict{rule: "claude:" + r.text}
				if set.verb == "deny" {
					v.deny = reason + "."
				} else {
					v.ask = reason + "."
				}
				return v
			}
		}
	}
	return hookVerdict{}
}

// commandTexts are the texts a rule is matched against: the whole command,
// and each simple command of the guard's analysis a of it as argv joined by
// spaces, with the program also named by its base name (\curl and
// /usr/bin/curl are curl).
func commandTexts(command string, a *bashguard.Analysis) []string {
	texts := []string{strings.TrimSpace(command)}
	for _, c := range a.Commands {
		if len(c.Args) == 0 {
			continue
		}
		texts = append(texts, strings.Join(c.Args, " "))
		if c.Name != "" && c.Name != c.Args[0] {
			texts = append(texts, strings.Join(append([]string{c.Name}, c.Args[1:]...), " "))
		}
	}
	return texts
}
