package triage

import (
	"strings"
)

// A small JavaScript/TypeScript tokenizer: just enough to find route
// definitions without being fooled by comments, strings, template literals
// or regular expressions that happen to look like one.

type tokKind int

const (
	tokIdent tokKind = iota
	tokString
	tokTemplate // template literal; Str set only when it has no ${…}
	tokPunct
	tokNumber
	tokRegex
)

type jsToken struct {
	Kind tokKind
	Str  string // identifier, punctuator, or a string literal's value
	Line int
	// Dynamic is true for a template literal with substitutions.
	Dynamic bool
}

// regexAllowedAfter are keywords after which "/" starts a regular
// expression rather than a division.
var regexAllowedAfter = map[string]bool{
	"return": true, "typeof": true, "instanceof": true, "in": true, "of": true, "new": true,
	"delete": true, "void": true, "throw": true, "case": true, "do": true, "else": true, "yield": true, "await": true,
}

// tokenizeJS turns source into tokens, dropping comments. It never fails:
// an unterminated literal simply ends at the end of input.
func tokenizeJS(src string) []jsToken {
	var toks []jsToken
	line := 1
	i, n := 0, len(src)
	regexOK := func() bool {
		if len(toks) == 0 {
			return true
		}
		t := toks[len(toks)-1]
		switch t.Kind {
		case tokIdent:
			return regexAllowedAfter[t.Str]
		case tokNumber, tokString, tokTemplate, tokRegex:
			return false
		default:
			return t.Str != ")" && t.Str != "]" && t.Str != "}"
		}
	}
	for i < n {
		ch := src[i]
		switch {
		case ch == '\n':
			line++
			i++
		case ch == ' ' || ch == '\t' || ch == '\r' || ch == '\f' || ch == '\v':
			i++
		case ch == '/' && i+1 < n && src[i+1] == '/':
			for i < n && src[i] != '\n' {
				i++
			}
		case ch == '/' && i+1 < n && src[i+1] == '*':
			end := strings.Index(src[i+2:], "*/")
			if end < 0 {
				end = n - i - 2
			}
			line += strings.Count(src[i:i+2+end], "\n")
			i += end + 4
		case ch == '\'' || ch == '"':
			start := line
			s, j, nl := scanQuoted(src, i)
			toks = append(toks, jsToken{Kind: tokString, Str: s, Line: start})
			line += nl
			i = j
		case ch == '`':
			start := line
			s, dyn, j := scanTemplate(src, i)
			line += strings.Count(src[i:j], "\n")
			toks = append(toks, jsToken{Kind: tokTemplate, Str: s, Line: start, Dynamic: dyn})
			i = j
		case ch == '/' && regexOK():
			j := scanRegex(src, i)
			toks = append(toks, jsToken{Kind: tokRegex, Line: line})
			i = j
		case isIdentStart(ch):
			j := i + 1
			for j < n && isIdentPart(src[j]) {
				j++
			}
			toks = append(toks, jsToken{Kind: tokIdent, Str: src[i:j], Line: line})
			i = j
		case ch >= '0' && ch <= '9':
			j := i + 1
			for j < n && (isIdentPart(src[j]) || src[j] == '.') {
				j++
			}
			toks = append(toks, jsToken{Kind: tokNumber, Str: src[i:j], Line: line})
			i = j
		case ch == '=' && i+1 < n && src[i+1] == '>':
			toks = append(toks, jsToken{Kind: tokPunct, Str: "=>", Line: line})
			i += 2
		default:
			toks = append(toks, jsToken{Kind: tokPunct, Str: string(ch), Line: line})
			i++
		}
	}
	return toks
}

func isIdentStart(c byte) bool {
	return c == '_' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

func isIdentPart(c byte) bool { return isIdentStart(c) || c >= '0' && c <= '9' }

// scanQuoted reads a '…' or "…" literal starting at i; it returns the value
// (common escapes resolved), the index after it and the newlines crossed.
func scanQuoted(src string, i int) (string, int, int) {
	q := src[i]
	var b strings.Builder
	nl := 0
	j := i + 1
	for j < len(src) {
		c := src[j]
		switch {
		case c == '\\' && j+1 < len(src):
			if src[j+1] == '\n' {
				nl++
			} else {
				b.WriteByte(src[j+1])
			}
			j += 2
			continue
		case c == q:
			return b.String(), j + 1, nl
		case c == '\n':
			// An unterminated string ends at the line end, as in JS.
			return b.String(), j, nl
		}
		b.WriteByte(c)
		j++
	}
	return b.String(), j, nl
}

// scanTemplate reads a template literal starting at i, skipping nested
// ${ … } expressions (which may hold strings, templates and braces).
func scanTemplate(src string, i int) (string, bool, int) {
	var b strings.Builder
	dyn := false
	j := i + 1
	for j < len(src) {
		c := src[j]
		switch {
		case c == '\\' && j+1 < len(src):
			b.WriteByte(src[j+1])
			j += 2
		case c == '`':
			return b.String(), dyn, j + 1
		case c == '$' && j+1 < len(src) && src[j+1] == '{':
			dyn = true
			j = skipExpr(src, j+2)
		default:
			b.WriteByte(c)
			j++
		}
	}
	return b.String(), dyn, j
}

// skipExpr skips a template substitution up to its closing brace.
func skipExpr(src string, j int) int {
	depth := 1
	for j < len(src) {
		switch c := src[j]; c {
		case '{':
			depth++
			j++
		case '}':
			depth--
			j++
			if depth == 0 {
				return j
			}
		case '\'', '"':
			_, j, _ = scanQuoted(src, j)
		case '`':
			_, _, j = scanTemplate(src, j)
		case '/':
			if j+1 < len(src) && src[j+1] == '/' {
				for j < len(src) && src[j] != '\n' {
					j++
				}
			} else if j+1 < len(src) && src[j+1] == '*' {
				end := strings.Index(src[j+2:], "*/")
				if end < 0 {
					return len(src)
				}
				j += end + 4
			} else {
				j++
			}
		default:
			j++
		}
	}
	return j
}

// scanRegex reads a regular expression literal (with classes and flags).
func scanRegex(src string, i int) int {
	j := i + 1
	inClass := false
	for j < len(src) {
		c := src[j]
		switch {
		case c == '\\':
			j += 2
			continue
		case c == '\n':
			return j
		case c == '[':
			inClass = true
		case c == ']':
			inClass = false
		case c == '/' && !inClass:
			j++
			for j < len(src) && isIdentPart(src[j]) {
				j++
			}
			return j
		}
		j++
	}
	return j
}

// httpMethods are the router methods that define a route (lower case as
// Express/Koa/Hono/Fastify spell them); "del" is koa-router's DELETE, "all"
// matches every method.
var httpMethods = map[string]string{
	"get": "GET", "post": "POST", "put": "PUT", "patch": "PATCH", "delete": "DELETE", "del": "DELETE",
	"head": "HEAD", "options": "OPTIONS", "all": "ALL",
}

// literal returns the value of a string or substitution-free template token.
func literal(t jsToken) (string, bool) {
	if t.Kind == tokString || t.Kind == tokTemplate && !t.Dynamic {
		return t.Str, true
	}
	return "", false
}

// jsRoutes finds the routes defined in one JS/TS source:
//
//	app.get('/x', h)  router.post('/x', a, h)  fastify.get('/x', opts, h)
//	router.get('name', '/x', h)           (koa-router named route)
//	app.on('GET', '/x', h)  app.on(['GET','POST'], '/x', h)   (Hono)
//	router.route('/x').get(h).post(h)     (Express chain)
//	fastify.route({ method: 'GET', url: '/x', handler })
//
// A call counts only when its receiver is a name (app, router, this.api …)
// and the path literal is followed by another argument, so a client call
// such as fetch('/x') or request(app).get('/x') is not a route.
func jsRoutes(file, src string) []implRoute {
	toks := tokenizeJS(src)
	var out []implRoute
	at := func(i int) jsToken {
		if i < len(toks) {
			return toks[i]
		}
		return jsToken{Kind: tokPunct}
	}
	isP := func(i int, s string) bool { t := at(i); return t.Kind == tokPunct && t.Str == s }
	for i := 0; i+3 < len(toks); i++ {
		if toks[i].Kind != tokIdent || !isP(i+1, ".") || at(i+2).Kind != tokIdent {
			continue
		}
		name := at(i + 2).Str
		open := i + 3
		if isP(open, "<") { // TypeScript type arguments: app.get<Params>(…)
			open = skipBalanced(toks, open, "<", ">")
		}
		if !isP(open, "(") {
			continue
		}
		a := open + 1
		switch {
		case httpMethods[name] != "":
			p, ok := literal(at(a))
			if !ok {
				continue
			}
			pathTok := at(a)
			if !strings.HasPrefix(p, "/") && isP(a+1, ",") {
				// koa-router: router.get('name', '/path', handler)
				if p2, ok2 := literal(at(a + 2)); ok2 && strings.HasPrefix(p2, "/") {
					p, pathTok, a = p2, at(a+2), a+2
				}
			}
			if !strings.HasPrefix(p, "/") && p != "*" || !isP(a+1, ",") {
				continue
			}
			out = append(out, implRoute{Method: httpMethods[name], Path: p, File: file, Line: pathTok.Line})
		case name == "on":
			methods, next := methodList(toks, a)
			p, ok := literal(at(next + 1))
			if len(methods) == 0 || !isP(next, ",") || !ok || !strings.HasPrefix(p, "/") {
				continue
			}
			for _, m := range methods {
				out = append(out, implRoute{Method: m, Path: p, File: file, Line: at(next + 1).Line})
			}
		case name == "route":
			if p, ok := literal(at(a)); ok && strings.HasPrefix(p, "/") && isP(a+1, ")") {
				out = append(out, chainRoutes(toks, a+2, p, file, at(a).Line)...)
			} else if isP(a, "{") {
				out = append(out, objectRoute(toks, a, file)...)
			}
		}
	}
	return out
}

// methodList reads 'GET' or ['GET', 'POST'] at i; it returns the methods in
// upper case and the index after them.
func methodList(toks []jsToken, i int) ([]string, int) {
	if i >= len(toks) {
		return nil, i
	}
	if s, ok := literal(toks[i]); ok {
		return []string{strings.ToUpper(s)}, i + 1
	}
	if toks[i].Kind != tokPunct || toks[i].Str != "[" {
		return nil, i
	}
	var out []string
	j := i + 1
	for j < len(toks) && !(toks[j].Kind == tokPunct && toks[j].Str == "]") {
		if s, ok := literal(toks[j]); ok {
			out = append(out, strings.ToUpper(s))
		}
		j++
	}
	return out, j + 1
}

// chainRoutes reads .get(h).post(h)… after router.route('/x').
func chainRoutes(toks []jsToken, i int, p, file string, line int) []implRoute {
	var out []implRoute
	for i+2 < len(toks) && toks[i].Kind == tokPunct && toks[i].Str == "." && toks[i+1].Kind == tokIdent {
		m := httpMethods[toks[i+1].Str]
		if m == "" || toks[i+2].Kind != tokPunct || toks[i+2].Str != "(" {
			break
		}
		out = append(out, implRoute{Method: m, Path: p, File: file, Line: line})
		i = skipBalanced(toks, i+2, "(", ")")
	}
	return out
}

// objectRoute reads fastify.route({ method, url | path }) — only keys at the
// object's top level count.
func objectRoute(toks []jsToken, i int, file string) []implRoute {
	end := skipBalanced(toks, i, "{", "}")
	var methods []string
	var p string
	line := 0
	depth := 0
	for j := i; j < end && j < len(toks); j++ {
		t := toks[j]
		if t.Kind == tokPunct {
			switch t.Str {
			case "{", "[", "(":
				depth++
			case "}", "]", ")":
				depth--
			}
			continue
		}
		if depth != 1 || j+2 >= len(toks) || toks[j+1].Kind != tokPunct || toks[j+1].Str != ":" {
			continue
		}
		key := t.Str
		switch key {
		case "method":
			methods, _ = methodList(toks, j+2)
		case "url", "path":
			if s, ok := literal(toks[j+2]); ok {
				p, line = s, toks[j+2].Line
			}
		}
	}
	if p == "" || !strings.HasPrefix(p, "/") {
		return nil
	}
	var out []implRoute
	for _, m := range methods {
		out = append(out, implRoute{Method: m, Path: p, File: file, Line: line})
	}
	return out
}

// skipBalanced returns the index after the bracket that closes toks[i].
func skipBalanced(toks []jsToken, i int, open, close string) int {
	depth := 0
	for j := i; j < len(toks); j++ {
		if toks[j].Kind != tokPunct {
			continue
		}
		switch toks[j].Str {
		case open:
			depth++
		case close:
			depth--
			if depth == 0 {
				return j + 1
			}
		}
	}
	return len(toks)
}
