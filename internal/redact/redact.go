package redact

import (
	"bytes"
	"encoding/json"
	"io"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/toolhost/toolhost/internal/util/lazyre"
)

// Redacted replaces a secret.
const Redacted = "[REDACTED]"

// keyFragments are the fragments that make a key secret wherever they
// appear in it (lower-cased, '-', '.' and ' ' read as '_'): access_token,
// X-Api-Key, client_secret, aws_secret_access_key.
var keyFragments = []string{"password", "passwd", "passphrase", "secret", "token", "authorization", "api_key", "apikey",
	"cookie", "private_key", "credential", "access_key"}

// keyWords are short words that make a key secret only as a whole word of
// it (DB_PASS, pin, userPwd, auth_header), so that mapping, spinner and
// bypass stay readable.
var keyWords = []string{"pass", "pwd", "pin", "auth", "otp", "cvv"}

// IsSecretKey reports whether values under key are redacted. Over-redacting
// a harmless field costs less than a leaked credential.
func IsSecretKey(key string) bool {
	k := strings.ToLower(key)
	k = strings.NewReplacer("-", "_", ".", "_", " ", "_").Replace(k)
	for _, f := range keyFragments {
		if strings.Contains(k, f) {
			return true
		}
	}
	for _, w := range words(key) {
		for _, kw := range keyWords {
			if w == kw {
				return true
			}
		}
	}
	return false
}

// words splits a key at non-letters and digits and at camelCase humps,
// lower-cased: "DB_PASS" → db, pass; "userPin" → user, pin.
func words(key string) []string {
	var out []string
	start := -1
	prev := rune(0)
	flush := func(end int) {
		if start >= 0 && end > start {
			out = append(out, strings.ToLower(key[start:end]))
		}
		start = -1
	}
	for i, r := range key {
		switch {
		case !unicode.IsLetter(r) && !unicode.IsDigit(r):
			flush(i)
		case start >= 0 && unicode.IsUpper(r) && unicode.IsLower(prev):
			flush(i)
			start = i
		case start < 0:
			start = i
		}
		prev = r
	}
	flush(len(key))
	return out
}

// secretish matches what a secret-looking key holds somewhere.
const secretish = `(?i:password|passwd|passphrase|secret|token|authorization|api[_-]?key|apikey|cookie|private[_-]?key|credential|access[_-]?key|pass|pwd|pin|auth|otp|cvv)`

// Patterns of secrets found by value. Each replaces group "s" (the secret)
// and keeps the rest.
var (
	privateKey = lazyre.New(`-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(?s:.*?)(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|$)`)
	// scheme://user:password@host
	userinfo = lazyre.New(`(?i)\b([a-z][a-z0-9+.-]*://[^/\s:@'"]*:)([^/\s@'"]+)(@)`)
	// Authorization: Bearer x, Basic x — the credential has a digit or a
	// symbol, so "basic example" stays.
	scheme = lazyre.New(`(?i)\b(bearer|basic|digest|negotiate)(\s+)([A-Za-z0-9._~+/=-]*[0-9._~+/=-][A-Za-z0-9._~+/=-]*)`)
	// Well-known token formats.
	tokens = lazyre.New(`\b(` +
		`gh[pousr]_[A-Za-z0-9]{20,}` + // GitHub
		`|github_pat_[A-Za-z0-9_]{20,}` +
		`|sk-ant-[A-Za-z0-9_-]{10,}` + // Anthropic
		`|sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}` + // OpenAI
		`|(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}` + // AWS access key id
		`|xox[abposr]-[A-Za-z0-9-]{10,}` + // Slack
		`|xapp-[0-9]-[A-Za-z0-9-]{10,}` +
		`|eyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}` + // JWT
		`|AIza[0-9A-Za-z_-]{35}` + // Google API key
		`|(?:sk|rk)_live_[0-9A-Za-z]{16,}` + // Stripe
		`|glpat-[A-Za-z0-9_-]{20,}` + // GitLab
		`|npm_[A-Za-z0-9]{36}` +
		`|hf_[A-Za-z0-9]{30,}` +
		`)`)
	authScheme = lazyre.New(`(?i)^(?:bearer|basic|digest|negotiate|token)\s+`)
	slackHook  = lazyre.New(`(https://hooks\.slack\.com/services/)([A-Za-z0-9/]+)`)
	// Header lines whose whole value is a credential.
	header = lazyre.New(`(?i)\b((?:proxy-)?authorization|cookie|set-cookie|x-api-key|api-key|x-auth-token|x-amz-security-token)(["']?[ \t]*:[ \t]*)([^\r\n"']+)`)
	// NAME=value, NAME: value, "NAME": "value", --name value: the regular
	// expressions find candidate names (IsSecretKey decides), so that a
	// harmless name never swallows a secret one after it (url=…?token=…).
	keyValue = lazyre.New(`([A-Za-z0-9_.-]*` + secretish + `[A-Za-z0-9_.-]*)(["']?[ \t]*[:=][ \t]*)("(?:[^"\\\n]|\\.)*"|'[^'\n]*'|[^\s"'&;,)}\]]+)`)
	option   = lazyre.New(`(--?[A-Za-z0-9_-]*` + secretish + `[A-Za-z0-9_-]*)([ \t]+)("(?:[^"\\]|\\.)*"|'[^']*'|[^\s"'-][^\s"']*)`)
	// curl -u user:password, --user user:password.
	userFlag = lazyre.New(`((?:^|\s)(?:-u|--user|--proxy-user|-U)[ \t=]*['"]?[^\s:'"]+:)([^\s'"]+)`)
)

// String returns s with the secrets in it replaced by Redacted: values
// that look like credentials (bearer and basic credentials, GitHub,
// Anthropic, OpenAI, AWS, Slack, Google, Stripe, GitLab tokens, JWTs,
// private keys, URL userinfo passwords) and values given to secret-looking
// keys and options (DB_PASS=…, "token": "…", --password …, -u user:…,
// Authorization: …).
func String(s string) string { return redactString(s, false) }

// PreviewString is String for text a human decides on: a secret is hidden
// only when it is plain (Plain), so that nothing but a literal word piece
// is ever covered — a value such as "$(touch x)" under a secret-looking
// name, which would run something, is shown as it is.
func PreviewString(s string) string { return redactString(s, true) }

// redactString replaces the secrets of s; with plainOnly, only those that
// are Plain.
func redactString(s string, plainOnly bool) string {
	h := scan(s)
	if !h.any() {
		return s
	}
	// hide returns Redacted for a secret that may be hidden, the secret
	// itself otherwise.
	hide := func(secret string) string {
		if plainOnly && !Plain(secret) {
			return secret
		}
		return Redacted
	}
	// groups rewrites each match of re, replacing group n with hide's
	// answer and keeping the rest.
	groups := func(re *regexp.Regexp, n int) {
		s = re.ReplaceAllStringFunc(s, func(m string) string {
			idx := re.FindStringSubmatchIndex(m)
			return m[:idx[2*n]] + hide(m[idx[2*n]:idx[2*n+1]]) + m[idx[2*n+1]:]
		})
	}
	if h&hPrivate != 0 {
		groups(privateKey(), 0)
	}
	if h&hURL == hURL {
		groups(userinfo(), 2)
	}
	if h&hHeader != 0 {
		s = header().ReplaceAllStringFunc(s, func(m string) string {
			g := header().FindStringSubmatch(m)
			if sch := authScheme().FindString(g[3]); sch != "" {
				return g[1] + g[2] + sch + hide(g[3][len(sch):])
			}
			return g[1] + g[2] + hide(g[3])
		})
	}
	if h&hScheme != 0 {
		groups(scheme(), 3)
	}
	if h&hSlack != 0 {
		groups(slackHook(), 2)
	}
	if h&hToken != 0 {
		groups(tokens(), 0)
	}
	if h&hUserFlag != 0 {
		groups(userFlag(), 2)
	}
	if h&hKey != 0 {
		s = replaceValues(keyValue(), s, IsSecretKey, hide)
		s = replaceValues(option(), s, func(opt string) bool { return IsSecretKey(strings.TrimLeft(opt, "-")) }, hide)
	}
	return s
}

// Plain reports whether hiding secret covers nothing but a literal word
// piece in any shell context: letters, digits and _ . : / + @ % , ^ - =
// only (no quote, space, expansion, substitution, glob or operator), and no
// NAME= that could turn a word into an assignment.
func Plain(secret string) bool {
	for _, r := range secret {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && !strings.ContainsRune("_.:/+@%,^-=", r) {
			return false
		}
	}
	if i := strings.IndexByte(secret, '='); i >= 0 && identifier(secret[:i]) {
		return false
	}
	return true
}

// identifier reports whether s is a shell variable name.
func identifier(s string) bool {
	for i, c := range []byte(s) {
		if !(c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || i > 0 && '0' <= c && c <= '9') {
			return false
		}
	}
	return s != ""
}

// replaceValues redacts group 3 of each match whose group 1 is secret,
// keeping the value's quotes; hide says what the value becomes.
func replaceValues(re *regexp.Regexp, s string, secret func(string) bool, hide func(string) string) string {
	return re.ReplaceAllStringFunc(s, func(m string) string {
		g := re.FindStringSubmatch(m)
		v := strings.Trim(g[3], `"'`)
		if !secret(g[1]) || strings.HasPrefix(v, Redacted[:len(Redacted)-1]) || authScheme().MatchString(v+" ") {
			return m
		}
		switch v = g[3]; {
		case len(v) >= 2 && strings.HasPrefix(v, `"`) && strings.HasSuffix(v, `"`):
			v = `"` + hide(v[1:len(v)-1]) + `"`
		case len(v) >= 2 && strings.HasPrefix(v, `'`) && strings.HasSuffix(v, `'`):
			v = `'` + hide(v[1:len(v)-1]) + `'`
		default:
			v = hide(v)
		}
		return g[1] + g[2] + v
	})
}

// hits are the families of patterns whose triggers a text holds; String
// runs only their regular expressions, and none for text with no trigger.
type hits uint16

const (
	hColon    hits = 1 << iota // "://"
	hAt                        // "@"
	hScheme                    // bearer, basic …
	hToken                     // a token format's prefix
	hHeader                    // a credential header's name
	hKey                       // a secret-looking key fragment or word
	hPrivate                   // BEGIN … PRIVATE KEY
	hUserFlag                  // -u, --user
	hSlack                     // a Slack webhook
	hURL      = hColon | hAt
	hAll      = hits(1<<16 - 1)
)

// trigger is a lower-cased substring (with '-', '.' and ' ' read as '_');
// start: only at the start of a word (task-1 is not sk-…); word: only as a
// whole word, camelCase humps included (userPin, not mapping).
type trigger struct {
	text        string
	fam         hits
	start, word bool
}

var byFirst = func() (t [256][]trigger) {
	add := func(fam hits, start, word bool, texts ...string) {
		for _, x := range texts {
			t[x[0]] = append(t[x[0]], trigger{text: x, fam: fam, start: start, word: word})
		}
	}
	add(hColon, false, false, "://")
	add(hAt, false, false, "@")
	add(hScheme, true, false, "bearer", "basic", "digest", "negotiate")
	add(hToken, true, false, "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat", "sk_", "akia", "asia", "abia", "acca",
		"xox", "xapp", "eyj", "aiza", "rk_live", "glpat", "npm_", "hf_")
	add(hHeader, false, false, "authorization", "cookie", "api_key", "auth_token", "security_token")
	add(hKey, false, false, keyFragments...)
	add(hKey, false, true, keyWords...)
	add(hPrivate, false, false, "begin")
	add(hUserFlag, false, false, "_u_", "_u=", "_user", "_proxy_user")
	add(hSlack, false, false, "hooks_slack")
	return t
}()

// any reports whether some pattern may match: "://" and "@" count only
// together (URL userinfo).
func (h hits) any() bool { return h&^hURL != 0 || h&hURL == hURL }

func fold(c byte) byte {
	switch {
	case 'A' <= c && c <= 'Z':
		return c + 'a' - 'A'
	case c == '-' || c == '.' || c == ' ':
		return '_'
	}
	return c
}

func alnum(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' }

// bigrams holds the first two bytes of every trigger, so that scan looks
// at the triggers only where a pair matches.
var bigrams = func() (b [1 << 16 / 64]uint64) {
	for _, ts := range byFirst {
		for _, t := range ts {
			if len(t.text) > 1 {
				k := uint16(t.text[0])<<8 | uint16(t.text[1])
				b[k>>6] |= 1 << (k & 63)
			}
		}
	}
	return b
}()

// scan returns the families whose triggers s holds, in one pass.
func scan[T string | []byte](s T) hits {
	var h hits
	if len(s) == 0 {
		return 0
	}
	next := fold(s[0])
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf {
			// Unicode case folding (the Kelvin sign lowers to k): every
			// pattern runs.
			return hAll
		}
		if c == '@' {
			h |= hAt
		}
		f0 := next
		if i+1 >= len(s) {
			break
		}
		next = fold(s[i+1])
		if k := uint16(f0)<<8 | uint16(next); bigrams[k>>6]&(1<<(k&63)) == 0 {
			continue
		}
		for _, t := range byFirst[f0] {
			if h&t.fam != 0 || i+len(t.text) > len(s) {
				continue
			}
			match := true
			for k := 1; k < len(t.text); k++ {
				if fold(s[i+k]) != t.text[k] {
					match = false
					break
				}
			}
			if !match || !bounded(t, s, i) {
				continue
			}
			h |= t.fam
		}
	}
	return h
}

// bounded reports whether a match of t at s[i:] starts (and, for a word,
// ends) where t must: a camelCase hump counts as a word's edge.
func bounded[T string | []byte](t trigger, s T, i int) bool {
	hump := func(j int) bool { return 'A' <= s[j] && s[j] <= 'Z' && 'a' <= s[j-1] && s[j-1] <= 'z' }
	if (t.start || t.word) && i > 0 && alnum(s[i-1]) && !(t.word && hump(i)) {
		return false
	}
	if j := i + len(t.text); t.word && j < len(s) && alnum(s[j]) && !hump(j) {
		return false
	}
	return true
}

// JSON returns the JSON document doc with its secrets redacted at any
// depth: the whole value under a secret-looking key, and secrets String
// finds in every other string. The result is compact; a document without
// anything to redact comes back as it was. Text that is not JSON is
// redacted as a string.
func JSON(doc []byte) []byte { return redactJSON(doc, &walker{}) }

// PreviewJSON is JSON for the arguments a human decides on: a secret is
// hidden only when it is Plain (a value under a secret-looking key too, at
// any depth), so what the human reads is what the call does; and a string
// for which verbatim reports true (the shell script or argv of a command
// the call runs) is shown whole, never redacted, since hiding any part of a
// command hides what runs.
func PreviewJSON(doc []byte, verbatim func(string) bool) []byte {
	if verbatim == nil {
		verbatim = func(string) bool { return false }
	}
	return redactJSON(doc, &walker{plainOnly: true, verbatim: verbatim})
}

func redactJSON(doc []byte, w *walker) []byte {
	if !scan(doc).any() {
		return doc
	}
	if !json.Valid(doc) {
		return []byte(redactString(string(doc), w.plainOnly))
	}
	w.src = doc
	w.value(skip(doc, 0), false)
	if !w.changed {
		return doc
	}
	return w.out
}

// walker rewrites a valid JSON document, copying what needs no change.
type walker struct {
	src     []byte
	out     []byte
	changed bool
	// plainOnly and verbatim make it a preview's walker (PreviewJSON).
	plainOnly bool
	verbatim  func(string) bool
}

func skip(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// value copies the value at src[i:] and returns the index after it; a
// secret value becomes Redacted.
func (w *walker) value(i int, secret bool) int {
	i = skip(w.src, i)
	start := i
	switch w.src[i] {
	case '{':
		if secret && !w.plainOnly {
			end := w.end(i)
			w.redacted()
			return end
		}
		w.out = append(w.out, '{')
		i = skip(w.src, i+1)
		first := true
		for w.src[i] != '}' {
			if !first {
				w.out = append(w.out, ',')
				i = skip(w.src, i+1) // the comma
			}
			first = false
			kEnd := stringEnd(w.src, i)
			key := w.src[i:kEnd]
			w.out = append(w.out, key...)
			w.out = append(w.out, ':')
			var k string
			_ = json.Unmarshal(key, &k)
			i = skip(w.src, kEnd)
			i = w.value(i+1, secret || IsSecretKey(k)) // after the colon
			i = skip(w.src, i)
		}
		w.out = append(w.out, '}')
		return i + 1
	case '[':
		if secret && !w.plainOnly {
			end := w.end(i)
			w.redacted()
			return end
		}
		w.out = append(w.out, '[')
		i = skip(w.src, i+1)
		first := true
		for w.src[i] != ']' {
			if !first {
				w.out = append(w.out, ',')
				i = skip(w.src, i+1)
			}
			first = false
			i = skip(w.src, w.value(i, secret))
		}
		w.out = append(w.out, ']')
		return i + 1
	case '"':
		end := stringEnd(w.src, i)
		if secret && !w.plainOnly {
			w.redacted()
			return end
		}
		var s string
		_ = json.Unmarshal(w.src[i:end], &s)
		if w.verbatim != nil && w.verbatim(s) {
			w.out = append(w.out, w.src[i:end]...)
			return end
		}
		if secret {
			if Plain(s) {
				w.redacted()
			} else {
				w.out = append(w.out, w.src[i:end]...)
			}
			return end
		}
		if r := redactString(s, w.plainOnly); r != s {
			w.changed = true
			b, _ := marshalString(r)
			w.out = append(w.out, b...)
			return end
		}
		w.out = append(w.out, w.src[i:end]...)
		return end
	}
	// A number, true, false or null.
	for i < len(w.src) && !strings.ContainsRune(",}] \t\r\n", rune(w.src[i])) {
		i++
	}
	if secret && string(w.src[start:i]) != "null" {
		w.redacted()
		return i
	}
	w.out = append(w.out, w.src[start:i]...)
	return i
}

func (w *walker) redacted() {
	w.changed = true
	w.out = append(w.out, `"`+Redacted+`"`...)
}

// end returns the index after the object or array at src[i:].
func (w *walker) end(i int) int {
	depth := 0
	for ; i < len(w.src); i++ {
		switch w.src[i] {
		case '"':
			i = stringEnd(w.src, i) - 1
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return i + 1
			}
		}
	}
	return i
}

// stringEnd returns the index after the JSON string at b[i:].
func stringEnd(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(b)
}

func marshalString(s string) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// Value redacts a decoded JSON value (maps, slices, strings) and returns
// it; maps and slices are changed in place.
func Value(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, val := range t {
			if IsSecretKey(k) && val != nil {
				t[k] = Redacted
				continue
			}
			t[k] = Value(val)
		}
	case []any:
		for i, val := range t {
			t[i] = Value(val)
		}
	case string:
		return String(t)
	}
	return v
}

// Marshal encodes v as compact JSON (HTML characters as they are) and
// redacts it.
func Marshal(v any) (json.RawMessage, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return JSON(bytes.TrimSuffix(buf.Bytes(), []byte("\n"))), nil
}

// Writer redacts what is written to w: each write is one log line, JSON
// (zerolog's format) or text (its console format).
func Writer(w io.Writer) io.Writer { return writer{w} }

type writer struct{ w io.Writer }

func (x writer) Write(p []byte) (int, error) {
	if !scan(p).any() {
		return x.w.Write(p)
	}
	line := bytes.TrimRight(p, "\n")
	var out []byte
	if json.Valid(line) {
		out = append(JSON(line), p[len(line):]...)
	} else {
		out = []byte(String(string(p)))
	}
	if _, err := x.w.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}
