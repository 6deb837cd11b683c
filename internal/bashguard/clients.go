package bashguard

import (
	"net/url"
	"slices"
	"strings"
)

// httpClients are the programs that send HTTP requests; gh counts only as
// gh api. rawClients send their standard input over a raw connection.
var (
	httpClients = map[string]bool{"curl": true, "curlie": true, "wget": true, "wget2": true, "http": true, "https": true,
		"xh": true, "xhs": true, "grpcurl": true}
	rawClients = map[string]bool{"nc": true, "ncat": true, "netcat": true, "socat": true, "telnet": true}
)

// finding is inline JSON found in one command line, with the edits that
// turn the line into the allowed form.
type finding struct {
	prog    string
	line    []string // the whole command line, wrappers included
	off     int      // index of the client in line
	payload string
	via     string
	// edits replace fields of line by index; an empty slice removes one.
	edits map[int][]string
	// stdin is true when the allowed form feeds the file on stdin.
	stdin bool
	// producer is the command that printed the payload, when it is not
	// echo of a literal (jq -n '{a:1}').
	producer []string
}

// set records the payload and how it was handed over; it returns true so
// that a check can return its result.
func (f *finding) set(payload, via string) bool {
	f.payload, f.via = strings.Trim(payload, space), via
	return true
}

// edit replaces field argIndex of the client's arguments.
func (f *finding) edit(argIndex int, repl ...string) { f.edits[f.off+argIndex] = repl }

func (f *finding) allowed() string {
	out := make([]string, 0, len(f.line)+2)
	for i, fl := range f.line {
		if e, ok := f.edits[i]; ok {
			out = append(out, e...)
			continue
		}
		out = append(out, fl)
	}
	return allowedForm(shown(f.payload), f.producer, shownAll(out), f.stdin)
}

// client checks an HTTP client's command line and returns its output.
func (c *checker) client(name string, fields []string, idx int, o runOpts) stream {
	use := &HTTPUse{}
	c.a.Commands[idx].HTTP = use
	f := &finding{prog: name, line: o.line, off: o.off, edits: map[int][]string{}}
	var found bool
	var out stream
	switch name {
	case "curl", "curlie":
		found, out = c.curl(f, fields, use)
	case "wget", "wget2":
		found = c.wget(f, fields, use)
	case "http", "https", "xh", "xhs":
		found = c.httpie(f, fields, use)
	case "grpcurl":
		found = c.grpcurl(f, fields, use)
	case "gh":
		found = c.ghAPI(f, fields, use)
	default: // nc, socat …: whatever reaches stdin goes over the wire
		use.ReadsStdin = true
		for _, a := range fields[1:] {
			if !strings.HasPrefix(a, "-") {
				use.Hosts = append(use.Hosts, shown(a))
				break
			}
		}
		found = c.stdinBody(f, c.in.readAll(), func() { f.stdin = true })
	}
	if found {
		c.a.Findings = append(c.a.Findings, Finding{Program: name, Via: f.via, Payload: shown(f.payload), Allowed: f.allowed(), Line: c.line, Col: c.col})
	}
	if out == nil {
		out = stream{{kind: segProgram, via: "the output of " + name}}
	}
	return out
}

// body judges one value a client sends (an option value, a form field):
// inline JSON is a finding, text the guard could not follow is an Unknown.
func (c *checker) body(f *finding, val, via string, edit func()) bool {
	if isJSONValue(val) {
		edit()
		return f.set(val, via)
	}
	if strings.ContainsRune(val, markDerived) {
		c.unknownData(f.prog, via)
	}
	return false
}

func (c *checker) unknownData(prog, via string) {
	c.unknown(Unknown{Kind: UnknownData, What: prog + " " + via,
		Reason:  "what " + prog + " sends via " + via + " is made at run time by a program from text of the command that could hold JSON",
		Instead: "write the body to a file first (echo '…' > " + FileHint + ") and pass the file (" + prog + " -d @" + FileHint + ")", ReachesHTTP: true})
}

// stdinBody judges a stream a client sends (its standard input, a file it
// reads that the command fed). edit turns the reference into the file.
func (c *checker) stdinBody(f *finding, s stream, edit func()) bool {
	for _, g := range s {
		if p, ok := g.jsonPayload(); ok {
			edit()
			if g.json {
				// jq -n built it: the allowed form keeps jq.
				f.producer = g.producer
			}
			return f.set(p, g.via)
		}
		if g.kind == segDerived {
			c.unknownData(f.prog, g.via)
		}
	}
	return false
}

// jsonPayload is the JSON a segment carries, if any.
func (g seg) jsonPayload() (string, bool) {
	if g.json {
		return g.text, true
	}
	if g.kind != segText {
		return "", false
	}
	return jsonIn(g.text)
}

// jsonIn finds JSON in text that reaches a program's stdin: the whole text
// or, for multi-line input, its first JSON line.
func jsonIn(text string) (string, bool) {
	if isJSONValue(text) {
		return strings.Trim(text, space), true
	}
	for _, line := range strings.Split(text, "\n") {
		if isJSONValue(line) {
			return strings.Trim(line, space), true
		}
	}
	return "", false
}

// url records a URL handed to a client and reports JSON in its query.
func (c *checker) url(f *finding, use *HTTPUse, u string, argIndex int) bool {
	use.URLs = append(use.URLs, shown(u))
	if h := hostOf(u); h != "" {
		use.Hosts = append(use.Hosts, h)
	}
	name, v, ok := queryJSON(u)
	if !ok {
		return false
	}
	if f.prog == "curl" || f.prog == "curlie" {
		f.edit(argIndex, "-G", "--data-urlencode", name+"@"+FileHint, dropQuery(u, name))
	} else {
		f.edit(argIndex, dropQuery(u, name))
		f.line = []string{"curl", "-G", "--data-urlencode", name + "@" + FileHint, dropQuery(u, name)}
		f.off = 0
		f.edits = map[int][]string{}
	}
	return f.set(v, "a URL query ("+name+"=)")
}

// hostOf returns a URL's host ("" for a shorthand without one).
func hostOf(u string) string {
	if !strings.Contains(u, "://") {
		if strings.HasPrefix(u, ":") {
			return "localhost"
		}
		u = "http://" + u
	}
	p, err := url.Parse(shown(u))
	if err != nil {
		return ""
	}
	return p.Hostname()
}

// queryJSON finds a query parameter whose value is JSON, as written or
// percent-decoded.
func queryJSON(u string) (name, val string, ok bool) {
	_, q, found := strings.Cut(u, "?")
	if !found {
		return "", "", false
	}
	q, _, _ = strings.Cut(q, "#")
	for _, kv := range strings.Split(q, "&") {
		n, v, _ := strings.Cut(kv, "=")
		if isJSONValue(v) {
			return n, v, true
		}
		if d, err := url.QueryUnescape(v); err == nil && isJSONValue(d) {
			return n, d, true
		}
	}
	return "", "", false
}

// dropQuery removes parameter name from u's query.
func dropQuery(u, name string) string {
	base, q, _ := strings.Cut(u, "?")
	var keep []string
	for _, kv := range strings.Split(q, "&") {
		if n, _, _ := strings.Cut(kv, "="); n != name {
			keep = append(keep, kv)
		}
	}
	if len(keep) == 0 {
		return base
	}
	return base + "?" + strings.Join(keep, "&")
}

// formJSON finds a field of an application/x-www-form-urlencoded body
// (a=1&j={…}) whose value is JSON, as written or percent-decoded.
func formJSON(body string) (name, val string, rest []string, ok bool) {
	parts := strings.Split(body, "&")
	for i, kv := range parts {
		n, v, has := strings.Cut(kv, "=")
		if !has {
			continue
		}
		if !isJSONValue(v) {
			d, err := url.QueryUnescape(v)
			if err != nil || !isJSONValue(d) {
				continue
			}
			v = d
		}
		rest = append(slices.Clone(parts[:i]), parts[i+1:]...)
		return n, v, rest, true
	}
	return "", "", nil, false
}

// curl short options that take a value, and long ones.
const curlShortArg = "AbcCdDeEFHKmoPQrtTuUwxXyYz"

var curlLongArg = map[string]bool{}

func init() {
	for _, o := range strings.Fields(`abstract-unix-socket alt-svc aws-sigv4 cacert capath cert cert-type ciphers config
		connect-timeout connect-to continue-at cookie cookie-jar create-file-mode crlfile curves data data-ascii data-binary
		data-raw data-urlencode delegation dns-interface dns-ipv4-addr dns-ipv6-addr dns-servers doh-url dump-header
		egd-file engine etag-compare etag-save expect100-timeout form form-string ftp-account ftp-alternative-to-user
		ftp-method ftp-port ftp-ssl-ccc-mode happy-eyeballs-timeout-ms header help hostpubmd5 hostpubsha256 hsts interface
		json keepalive-time key key-type krb libcurl limit-rate local-port login-options mail-auth mail-from mail-rcpt
		max-filesize max-redirs max-time netrc-file noproxy oauth2-bearer output output-dir parallel-max pass pinnedpubkey
		preproxy proto proto-default proto-redir proxy proxy-cacert proxy-capath proxy-cert proxy-cert-type proxy-ciphers
		proxy-crlfile proxy-header proxy-key proxy-key-type proxy-pass proxy-pinnedpubkey proxy-service-name
		proxy-tls13-ciphers proxy-tlsauthtype proxy-tlspassword proxy-tlsuser proxy-user pubkey quote random-file range
		rate referer request request-target resolve retry retry-delay retry-max-time sasl-authzid service-name socks4
		socks4a socks5 socks5-gssapi-service socks5-hostname speed-limit speed-time stderr telnet-option tftp-blksize
		time-cond tls-max tls13-ciphers tlsauthtype tlspassword tlsuser trace trace-ascii unix-socket upload-file url
		url-query user user-agent write-out variable ip-tos vlan-priority ech ipfs-gateway max-filesize knownhosts
		proxy-ca-native ca-native etag-save`) {
		curlLongArg["--"+o] = true
	}
}

// curlBody is how curl sends an option's value.
var curlBody = map[string]string{
	"-d": "data", "--data": "data", "--data-ascii": "data", "--data-binary": "data", "--json": "data",
	"--data-raw": "raw", "--data-urlencode": "urlencode", "--url-query": "urlencode",
	"-F": "form", "--form": "form", "--form-string": "formstring",
	"-T": "upload", "--upload-file": "upload", "-K": "config", "--config": "config",
	"-w": "writeout", "--write-out": "writeout", "--url": "url", "--variable": "variable",
}

// curl checks a curl command line. curl reads a long option's value from
// the next argument only (--data=… is an unknown option, and curl sends
// nothing), short options take theirs attached or next.
func (c *checker) curl(f *finding, args []string, use *HTTPUse) (bool, stream) {
	var out stream
	found := false
	endOpts := false
	for i := 1; i < len(args); i++ {
		a := args[i]
		if !endOpts && a == "--" {
			endOpts = true
			continue
		}
		if endOpts || !strings.HasPrefix(a, "-") || a == "-" {
			if !found && c.curlPositional(f, use, a, i) {
				found = true
			}
			continue
		}
		if strings.HasPrefix(a, "--") {
			if !curlLongArg[a] || i+1 >= len(args) {
				continue
			}
			kind := curlBody[a]
			i++
			if !found && kind != "" && c.curlValue(f, use, kind, a, args[i], i, "", &out) {
				found = true
			}
			continue
		}
		for j := 1; j < len(a); j++ {
			ch := a[j]
			if !strings.ContainsRune(curlShortArg, rune(ch)) {
				continue
			}
			val, at, cluster := a[j+1:], i, a[:j+1]
			if val == "" {
				if i+1 >= len(args) {
					break
				}
				val, at, cluster = args[i+1], i+1, ""
			}
			if kind := curlBody["-"+string(ch)]; kind != "" && !found && c.curlValue(f, use, kind, "-"+string(ch), val, at, cluster, &out) {
				found = true
			}
			i = at
			break
		}
	}
	return found, out
}

// curlPositional checks an argument curl takes as a URL.
func (c *checker) curlPositional(f *finding, use *HTTPUse, a string, i int) bool {
	if isJSONValue(a) {
		f.edit(i, "-d", "@"+FileHint)
		return f.set(a, "an argument")
	}
	return c.url(f, use, a, i)
}

// curlValue checks one option value. cluster is set when the value is
// attached to a cluster of short options (-sSd'{…}'); the edit then keeps
// the cluster.
func (c *checker) curlValue(f *finding, use *HTTPUse, kind, opt, val string, at int, cluster string, out *stream) bool {
	editVal := func(v string, newOpt ...string) {
		switch {
		case cluster != "":
			f.edit(at, cluster+v)
		case len(newOpt) > 0:
			f.edit(at-1, newOpt...)
			f.edit(at, v)
		default:
			f.edit(at, v)
		}
	}
	file := func(ref string) bool {
		s, ok := c.fed(ref, true)
		if !ok {
			return false
		}
		use.ReadsStdin = use.ReadsStdin || ref == "-" || isStdinPath(ref)
		return c.stdinBody(f, s, func() { editVal("@" + FileHint) })
	}
	switch kind {
	case "data", "raw":
		if kind == "data" && strings.HasPrefix(val, "@") {
			return file(val[1:])
		}
		newOpt := []string(nil)
		if kind == "raw" {
			newOpt = []string{"--data-binary"}
		}
		if c.body(f, val, opt, func() { editVal("@"+FileHint, newOpt...) }) {
			return true
		}
		if name, v, rest, ok := formJSON(val); ok {
			repl := []string{"--data-urlencode", name + "@" + FileHint}
			if len(rest) > 0 {
				repl = append(repl, opt, strings.Join(rest, "&"))
			}
			if cluster != "" {
				repl = append([]string{strings.TrimSuffix(cluster, "d")}, repl...)
			}
			f.edits[f.off+at] = repl
			if cluster == "" {
				f.edits[f.off+at-1] = nil
			}
			return f.set(v, opt)
		}
	case "urlencode":
		content, name := val, ""
		if n, v, ok := strings.Cut(val, "="); ok {
			name, content = n, v
		} else if n, ref, ok := strings.Cut(val, "@"); ok {
			_ = n
			return file(ref)
		}
		return c.body(f, content, opt, func() { editVal(name + "@" + FileHint) })
	case "form", "formstring":
		name, content, ok := strings.Cut(val, "=")
		if !ok {
			return false
		}
		if kind == "form" && (strings.HasPrefix(content, "@") || strings.HasPrefix(content, "<")) {
			ref, _, _ := strings.Cut(content[1:], ";")
			return file(ref)
		}
		payload, suffix := formValue(content, kind == "form")
		newOpt := []string(nil)
		if kind == "formstring" {
			newOpt = []string{"--form"}
		}
		return c.body(f, payload, opt, func() { editVal(name+"=<"+FileHint+suffix, newOpt...) })
	case "upload":
		if val == "." {
			val = "-"
		}
		if s, ok := c.fed(val, true); ok {
			use.ReadsStdin = use.ReadsStdin || val == "-" || isStdinPath(val)
			return c.stdinBody(f, s, func() { editVal(FileHint) })
		}
	case "config":
		s, _ := c.fed(val, true)
		use.ReadsStdin = use.ReadsStdin || val == "-" || isStdinPath(val)
		for _, g := range s {
			if g.kind != segText {
				continue
			}
			if payload, ok := curlConfigJSON(g.text); ok {
				editVal("@" + FileHint)
				if cluster == "" {
					f.edit(at-1, "-d")
				} else {
					f.edit(at, strings.TrimSuffix(cluster, "K")+"d@"+FileHint)
				}
				return f.set(payload, "a curl config (-K)")
			}
		}
	case "url":
		return c.url(f, use, val, at)
	case "writeout":
		// An output format: nothing of it is sent, but it is printed.
		if mayHoldJSON(val) {
			*out = stream{{kind: segDerived, via: "the output of curl -w"}}
		}
	}
	return false
}

// formValue reads a curl -F value: "quoted" with backslash escapes, or up
// to ;type=… (form) — the content and what follows it.
func formValue(content string, form bool) (payload, suffix string) {
	if form && strings.HasPrefix(content, `"`) {
		var b strings.Builder
		i := 1
		for ; i < len(content) && content[i] != '"'; i++ {
			if content[i] == '\\' && i+1 < len(content) {
				i++
			}
			b.WriteByte(content[i])
		}
		if i < len(content) {
			return b.String(), content[i+1:]
		}
	}
	if !form {
		return content, ""
	}
	return jsonPrefix(content)
}

// curlConfigData are the curl config options whose value is sent as the
// body (or a query or form part).
var curlConfigData = map[string]bool{
	"d": true, "data": true, "data-ascii": true, "data-binary": true, "data-raw": true, "json": true,
	"data-urlencode": true, "url-query": true, "F": true, "form": true, "form-string": true,
}

// curlConfigJSON finds inline JSON in the text of a curl config file: lines
// "data = \"…\"", "--json {…}", "data-raw: '…'".
func curlConfigJSON(text string) (string, bool) {
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimLeft(line, space)
		if line == "" || line[0] == '#' {
			continue
		}
		line = strings.TrimPrefix(strings.TrimPrefix(line, "-"), "-")
		end := strings.IndexAny(line, "=: \t")
		if end < 0 || !curlConfigData[line[:end]] {
			continue
		}
		val := strings.TrimLeft(line[end:], "=: \t")
		switch {
		case strings.HasPrefix(val, `"`):
			var b strings.Builder
			for i := 1; i < len(val) && val[i] != '"'; i++ {
				if val[i] == '\\' && i+1 < len(val) {
					i++
				}
				b.WriteByte(val[i])
			}
			val = b.String()
		case strings.HasPrefix(val, "'"):
			val = strings.Trim(val, "'")
		}
		if strings.HasPrefix(val, "@") {
			continue
		}
		if isJSONValue(val) {
			return strings.Trim(val, space), true
		}
		if _, v, ok := strings.Cut(val, "="); ok && isJSONValue(v) {
			return strings.Trim(v, space), true
		}
	}
	return "", false
}

// wget short options that take a value.
const wgetShortArg = "eoaiBtOTwQPUlARDIX"

// wget checks a wget command line: --post-data/--body-data, the same as
// wgetrc commands (-e post_data=…), files it posts, and URLs (also those
// read with -i from its input).
func (c *checker) wget(f *finding, args []string, use *HTTPUse) bool {
	found := false
	for i := 1; i < len(args); i++ {
		a := args[i]
		var name, val string
		at, attached := i, false
		switch {
		case strings.HasPrefix(a, "--"):
			n, v, has := strings.Cut(a, "=")
			n = wgetLongName(n)
			name = n
			if has {
				val, attached = v, true
			} else if wgetLongArg[n] && i+1 < len(args) {
				i++
				val, at = args[i], i
			}
		case strings.HasPrefix(a, "-") && len(a) > 1:
			for j := 1; j < len(a); j++ {
				if strings.ContainsRune(wgetShortArg, rune(a[j])) {
					name = "-" + string(a[j])
					if v := a[j+1:]; v != "" {
						val, attached = v, true
					} else if i+1 < len(args) {
						i++
						val, at = args[i], i
					}
					break
				}
			}
		default:
			if !found && c.url(f, use, a, i) {
				found = true
			}
			continue
		}
		if found {
			continue
		}
		switch name {
		case "--post-data", "--body-data":
			file := strings.Replace(name, "-data", "-file", 1)
			found = c.body(f, val, name, func() {
				if attached {
					f.edit(at, file+"="+FileHint)
				} else {
					f.edit(at-1, file)
					f.edit(at, FileHint)
				}
			})
		case "--post-file", "--body-file":
			if s, ok := c.wgetFile(val, use); ok {
				found = c.stdinBody(f, s, func() { f.edit(at, editAttached(attached, name, FileHint)...) })
			}
		case "-e", "--execute":
			found = c.wgetrc(f, val, name, at, attached, use)
		case "--config":
			if s, ok := c.wgetFile(val, use); ok {
				for _, g := range s {
					for _, line := range strings.Split(g.text, "\n") {
						if g.kind == segText && c.wgetrc(f, line, "a wgetrc file (--config)", at, attached, use) {
							found = true
							break
						}
					}
				}
			}
		case "-i", "--input-file":
			if s, ok := c.wgetFile(val, use); ok {
				for _, g := range s {
					for _, line := range strings.Split(g.text, "\n") {
						if g.kind == segText && strings.TrimSpace(line) != "" && !found && c.url(f, use, strings.TrimSpace(line), at) {
							found = true
						}
					}
				}
			}
		}
	}
	return found
}

func editAttached(attached bool, opt, val string) []string {
	if attached {
		return []string{opt + "=" + val}
	}
	return []string{val}
}

// wgetFile returns what wget reads from a file argument the command fed
// (-, /dev/stdin, a process substitution).
func (c *checker) wgetFile(ref string, use *HTTPUse) (stream, bool) {
	use.ReadsStdin = use.ReadsStdin || ref == "-" || isStdinPath(ref)
	return c.fed(ref, true)
}

// wgetrc checks one wgetrc command (post_data = …); wget matches command
// names without regard to case, '-' and '_'.
func (c *checker) wgetrc(f *finding, cmd, opt string, at int, attached bool, use *HTTPUse) bool {
	name, val, ok := strings.Cut(cmd, "=")
	if !ok {
		return false
	}
	key := strings.NewReplacer("_", "", "-", "").Replace(strings.ToLower(strings.TrimSpace(name)))
	val = strings.TrimSpace(val)
	switch key {
	case "postdata", "bodydata":
		file := "--post-file"
		if key == "bodydata" {
			file = "--body-file"
		}
		return c.body(f, val, opt+" "+strings.TrimSpace(name), func() {
			if attached || opt != "-e" && opt != "--execute" {
				f.edit(at, file+"="+FileHint)
			} else {
				f.edit(at-1, file)
				f.edit(at, FileHint)
			}
		})
	case "postfile", "bodyfile":
		if s, ok := c.wgetFile(val, use); ok {
			return c.stdinBody(f, s, func() { f.edit(at, editAttached(attached, opt, name+"="+FileHint)...) })
		}
	}
	return false
}

var wgetLongArg = map[string]bool{}

func init() {
	for _, o := range strings.Fields(`execute output-file append-output report-speed input-file base config rejected-log
		tries retry-on-http-error output-document start-pos progress timeout dns-timeout connect-timeout read-timeout wait
		waitretry quota bind-address limit-rate restrict-file-names prefer-family user password use-askpass local-encoding
		remote-encoding directory-prefix cut-dirs http-user http-password default-page header compression proxy-user
		proxy-password referer user-agent load-cookies save-cookies post-data post-file method body-data body-file
		secure-protocol certificate certificate-type private-key private-key-type ca-certificate ca-directory crl-file
		pinnedpubkey ciphers ftp-user ftp-password warc-file warc-header warc-max-size warc-dedup warc-tempdir level
		backups accept reject accept-regex reject-regex regex-type domains exclude-domains follow-tags ignore-tags
		include-directories exclude-directories`) {
		wgetLongArg["--"+o] = true
	}
}

// wgetLongName is the option a long option abbreviates: wget takes any
// prefix of one of its options that takes a value (--post-d=… is
// --post-data=…); one that is no such prefix is left as it is.
func wgetLongName(opt string) string {
	if wgetLongArg[opt] || len(opt) < 4 {
		return opt
	}
	match := ""
	for o := range wgetLongArg {
		if strings.HasPrefix(o, opt) {
			if match != "" {
				return opt // ambiguous: wget refuses it
			}
			match = o
		}
	}
	if match == "" {
		return opt
	}
	return match
}

// httpie options (http, https, xh) that take a value.
var httpieArg = map[string]bool{"--auth": true, "-a": true, "--output": true, "-o": true, "--session": true,
	"--session-read-only": true, "--auth-type": true, "-A": true, "--proxy": true, "--verify": true, "--cert": true,
	"--cert-key": true, "--timeout": true, "--max-redirects": true, "--print": true, "-p": true, "--pretty": true,
	"--style": true, "-s": true, "--format-options": true, "--boundary": true, "--default-scheme": true, "--ssl": true,
	"--ciphers": true, "--response-charset": true, "--response-mime": true, "--history-print": true, "-P": true,
	"--chunked": false}

// httpie checks an httpie/xh command line: --raw, request items (k:=json,
// k=string, k==query, k@file …), URLs, and the body it reads from its
// standard input unless told to ignore it.
func (c *checker) httpie(f *finding, args []string, use *HTTPUse) bool {
	ignoreStdin := false
	sawURL := false
	for i := 1; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--ignore-stdin" || a == "-I":
			ignoreStdin = true
			continue
		case a == "--raw" || strings.HasPrefix(a, "--raw="):
			val, at := "", i
			if v, ok := strings.CutPrefix(a, "--raw="); ok {
				val = v
			} else if i+1 < len(args) {
				i++
				val, at = args[i], i
			}
			if c.body(f, val, "--raw", func() {
				f.edit(i, nil...)
				if at != i {
					f.edit(at, nil...)
				}
				f.stdin = true
			}) {
				return true
			}
			ignoreStdin = true
			continue
		case strings.HasPrefix(a, "-"):
			if httpieArg[a] {
				i++
			}
			continue
		}
		if !sawURL && !isMethod(a) {
			sawURL = true
			if c.url(f, use, a, i) {
				return true
			}
			continue
		}
		if isMethod(a) {
			continue
		}
		for _, sep := range []string{":=@", "=@", "==", ":=", "@", "="} {
			name, val, ok := strings.Cut(a, sep)
			if !ok || strings.Contains(name, ":") && sep != ":=" && sep != ":=@" {
				continue
			}
			switch sep {
			case ":=@", "=@", "@":
				if s, ok := c.fed(val, false); ok {
					return c.stdinBody(f, s, func() { f.edit(i, name+sep+FileHint) })
				}
			case ":=":
				if c.body(f, val, name+":=", func() { f.edit(i, name+":=@"+FileHint) }) {
					return true
				}
			default:
				if c.body(f, val, name+sep, func() { f.edit(i, name+":=@"+FileHint) }) {
					return true
				}
			}
			break
		}
	}
	if !ignoreStdin {
		in := c.in.readAll()
		if len(in) > 0 {
			use.ReadsStdin = true
		}
		return c.stdinBody(f, in, func() { f.stdin = true })
	}
	return false
}

func isMethod(s string) bool {
	switch s {
	case "GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS":
		return true
	}
	return false
}

// grpcurl checks -d (a value, or @ for the standard input).
func (c *checker) grpcurl(f *finding, args []string, use *HTTPUse) bool {
	for i := 1; i < len(args); i++ {
		a := args[i]
		name, val, attached := a, "", false
		if n, v, ok := strings.Cut(a, "="); ok && strings.HasPrefix(a, "-") {
			name, val, attached = n, v, true
		}
		if name != "-d" && name != "--d" {
			if !strings.HasPrefix(a, "-") {
				use.URLs = append(use.URLs, shown(a))
				use.Hosts = append(use.Hosts, shown(strings.Split(a, ":")[0]))
				// The address, then the method.
				if i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
					i++
				}
			}
			continue
		}
		at := i
		if !attached {
			if i+1 >= len(args) {
				return false
			}
			i++
			val, at = args[i], i
		}
		if val == "@" {
			use.ReadsStdin = true
			return c.stdinBody(f, c.in.readAll(), func() { f.stdin = true })
		}
		return c.body(f, val, "-d", func() {
			if attached {
				f.edit(at, name+"=@")
			} else {
				f.edit(at, "@")
			}
			f.stdin = true
		})
	}
	return false
}

// ghAPI checks gh api -f/-F fields and --input.
func (c *checker) ghAPI(f *finding, args []string, use *HTTPUse) bool {
	for i := 2; i < len(args); i++ {
		a := args[i]
		var opt, val string
		at, attached := -1, false
		switch {
		case a == "--input" && i+1 < len(args):
			i++
			if s, ok := c.fed(args[i], true); ok {
				use.ReadsStdin = use.ReadsStdin || args[i] == "-" || isStdinPath(args[i])
				return c.stdinBody(f, s, func() { f.edit(i, FileHint) })
			}
			continue
		case a == "-f" || a == "-F" || a == "--field" || a == "--raw-field":
			if i+1 < len(args) {
				opt, val, at = a, args[i+1], i+1
			}
		case strings.HasPrefix(a, "--field=") || strings.HasPrefix(a, "--raw-field="):
			opt, val, _ = strings.Cut(a, "=")
			at, attached = i, true
		case (strings.HasPrefix(a, "-f") || strings.HasPrefix(a, "-F")) && len(a) > 2:
			opt, val, at, attached = a[:2], a[2:], i, true
		case !strings.HasPrefix(a, "-") && len(use.URLs) == 0:
			use.URLs = append(use.URLs, shown(a))
			use.Hosts = append(use.Hosts, "api.github.com")
			continue
		default:
			continue
		}
		if at < 0 {
			return false
		}
		key, v, ok := strings.Cut(val, "=")
		if ok && !strings.HasPrefix(v, "@") && c.body(f, v, opt, func() {
			if attached {
				f.edit(at, "-F"+key+"=@"+FileHint)
			} else {
				f.edit(at-1, "-F")
				f.edit(at, key+"=@"+FileHint)
			}
		}) {
			return true
		}
		i = at
	}
	return false
}

// network judges what a statement writes to /dev/tcp/HOST/PORT: bash
// opens the connection itself.
func (c *checker) network(path string, out stream) {
	parts := strings.Split(path, "/")
	use := &HTTPUse{}
	if len(parts) > 3 {
		use.Hosts = []string{shown(parts[3])}
	}
	c.record(Command{Name: "/dev/tcp", Args: []string{shown(path)}, HTTP: use})
	f := &finding{prog: "bash " + path, line: []string{"cat", FileHint}, edits: map[int][]string{}}
	if c.stdinBody(f, out, func() {}) {
		allowed := allowedForm(shown(f.payload), f.producer, []string{"cat", FileHint}, false) + " > " + shellQuote(shown(path))
		c.a.Findings = append(c.a.Findings, Finding{Program: "bash " + shown(path), Via: f.via, Payload: shown(f.payload), Allowed: allowed, Line: c.line, Col: c.col})
	}
}
