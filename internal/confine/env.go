package confine

import (
	"path"
	"slices"
	"strings"
)

// A confined process gets a new environment, never toolhost's own: the
// person who started toolhost may hold API keys and cloud credentials in
// theirs (ANTHROPIC_API_KEY, AWS_SECRET_ACCESS_KEY), and a command is the
// agent's, not theirs. What passes:
//
//   - the variables of its kind (Kind): for commands what a shell and a
//     build need to behave as on the user's machine (PATH, HOME, the
//     locale, the terminal type); for units and upstream servers less;
//   - the names and patterns of the sandbox's env list (sandbox.env of an
//     agent, an upstream entry's sandbox.env). A pattern never passes a
//     name that looks like a credential (a word such as KEY, TOKEN,
//     SECRET, PASSWORD in it): name such a variable exactly to pass it;
//   - the values the caller sets (a unit's env and PORT, an upstream
//     entry's env), then the private temp dir under TMPDIR, TMP and TEMP.

// Kind is what sort of process a plan confines; it selects the variables
// passed from toolhost's environment by default.
type Kind int

const (
	// KindCommand is a shell command: the bash tool's, or one the hook
	// rewrote to run under `toolhost confine`.
	KindCommand Kind = iota
	// KindUnit is a unit started by spawn_units.
	KindUnit
	// KindUpstream is a stdio upstream MCP server.
	KindUpstream
)

// baseEnv are the variables each kind receives from toolhost's
// environment (a trailing * is a prefix).
func (k Kind) baseEnv() []string {
	switch k {
	case KindUnit:
		return []string{"PATH", "HOME", "LANG", "TZ"}
	case KindUpstream:
		return []string{"PATH", "HOME", "LANG"}
	}
	return []string{"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "LC_*", "TZ",
		"TERM", "COLORTERM", "NO_COLOR", "CI"}
}

// credentialWords are the words (between underscores, any case) that make
// a variable look like a credential, which no pattern passes.
var credentialWords = []string{"key", "token", "secret", "passw", "credential", "cookie", "session", "auth"}

// looksLikeCredential reports whether a variable name contains a
// credential word: ANTHROPIC_API_KEY, GITHUB_TOKEN, npm_config__authToken.
func looksLikeCredential(name string) bool {
	for _, w := range strings.Split(strings.ToLower(name), "_") {
		for _, c := range credentialWords {
			if c == "auth" {
				// AUTH alone, or as the start of authToken: not AUTHOR.
				if w == "auth" || strings.HasPrefix(w, "authtoken") {
					return true
				}
				continue
			}
			if strings.Contains(w, c) {
				return true
			}
		}
	}
	return false
}

// passes reports whether the variable name passes the list: named exactly,
// or matched by a pattern when it does not look like a credential.
func passes(name string, list []string) bool {
	for _, p := range list {
		if p == name {
			return true
		}
	}
	if looksLikeCredential(name) {
		return false
	}
	for _, p := range list {
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}

// buildEnv is the environment of one process: what passes from environ,
// then set (K=V, later entries win), then the temp dir (if any).
func buildEnv(environ []string, kind Kind, extra []string, set []string, tempDir string) []string {
	allow := append(kind.baseEnv(), extra...)
	out := make([]string, 0, len(allow)+len(set)+3)
	index := map[string]int{}
	put := func(k, kv string) {
		if i, ok := index[k]; ok {
			out[i] = kv
			return
		}
		index[k] = len(out)
		out = append(out, kv)
	}
	for _, kv := range environ {
		k, _, ok := strings.Cut(kv, "=")
		if ok && k != "" && passes(k, allow) {
			put(k, kv)
		}
	}
	for _, kv := range set {
		if k, _, ok := strings.Cut(kv, "="); ok && k != "" {
			put(k, kv)
		}
	}
	if tempDir != "" {
		for _, k := range []string{TempDirVar, "TMP", "TEMP"} {
			put(k, k+"="+tempDir)
		}
	}
	return out
}

// envNames are the names of an environment, sorted.
func envNames(env []string) []string {
	names := make([]string, 0, len(env))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}
