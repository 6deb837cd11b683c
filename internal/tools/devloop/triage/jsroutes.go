//go:build !bench_no_routes

package triage

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"
	"unsafe"

	"github.com/evanw/esbuild/pkg/api"
	"github.com/tdewolff/parse/v2"
	"github.com/tdewolff/parse/v2/js"
)

// The routes of a JavaScript/TypeScript unit are read from the syntax tree
// of every source file: TypeScript is turned into JavaScript by esbuild
// (types stripped, a source map kept for the lines), JavaScript is parsed by
// tdewolff/parse. On that tree the analysis follows what the frameworks do
// at run time, statically: apps and routers (express(), express.Router(),
// new Hono(), fastify(), new Koa(), koa-router's new Router()), the routes
// declared on them, and where each router is mounted — app.use('/v2',
// router), router.use(...) nested, Hono's app.route('/v2', sub), Fastify's
// register(plugin, {prefix}), koa-router's prefix and .routes() — across
// files through require/import and module.exports/export. A route whose path
// or mount prefix is not a string the code spells out is unresolved, with
// its file and line.

// jsObj is an app or router object.
type jsObj struct {
	root    bool   // an app (express(), new Hono(), fastify(), new Koa())
	implied bool   // a receiver the analysis did not see created (a parameter, a global)
	prefix  string // koa-router {prefix}, Hono basePath
	routes  []jsRoute
	mounts  []jsMount
	mounted bool
}

type jsRoute struct {
	method, path string
	dynamic      string // why the path is unknown ("" when known)
	file         string
	line, pos    int
}

type jsMount struct {
	prefix  string
	dynamic string
	target  *jsObj
	unknown string // what could not be followed (target nil)
	file    string
	line    int
}

// jsFunc is a function whose parameters can receive routers.
type jsFunc struct {
	params []*js.Var
}

// jsModule is one parsed source file.
type jsModule struct {
	rel    string
	buf    []byte // the JavaScript parsed (esbuild's output for TypeScript)
	lineOf func(off int) int
	ast    *js.AST
	objs   map[*js.Var]*jsObj
	funcs  map[*js.Var]*jsFunc
	consts map[*js.Var]string
	// imports: local binding → module and the name imported ("default",
	// "*" for a namespace or a whole require, or a named export).
	imports map[*js.Var]jsImport
	// exports: name → the local binding ("default" for export default and
	// module.exports = x); exportObjs for values that are not bindings.
	exports    map[string]*js.Var
	exportObjs map[string]*jsObj
	exportFns  map[string]*jsFunc
}

type jsImport struct{ module, name string }

// jsUnit is the analysis of a unit's JavaScript/TypeScript sources.
type jsUnit struct {
	mods  map[string]*jsModule
	order []string
	// implied are objects of receivers the analysis did not see created:
	// function parameters (bound to what callers pass), globals.
	implied map[*js.Var]*jsObj
	// unreadable are the NestJS controllers found: routes declared by
	// decorators, which are not read.
	unreadable []string
	nestRoute  string
	// created is the object each creating expression made (new Hono(),
	// express(), a chain on one), so the declarations and the walk over
	// the calls see the same object.
	created map[js.IExpr]*jsObj
}

// jsParse turns one source file into a module; TypeScript and JSX go
// through esbuild first, with the decorators the unit's tsconfig enables
// (experimentalDecorators: TypeScript's, else the standard ones), lowered
// to the calls they stand for.
func jsParse(rel string, src []byte, experimentalDecorators bool) (*jsModule, error) {
	code := src
	var lineMap func(line, col int) int
	loader := map[string]api.Loader{".ts": api.LoaderTS, ".mts": api.LoaderTS, ".cts": api.LoaderTS, ".tsx": api.LoaderTSX, ".jsx": api.LoaderJSX}[path.Ext(rel)]
	if loader == api.LoaderNone && bytes.Contains(src, []byte("@")) {
		// JavaScript with decorators: the JS parser reads no decorator,
		// so they are lowered first, like TypeScript's.
		loader = api.LoaderJS
	}
	if loader != api.LoaderNone {
		opts := api.TransformOptions{Loader: loader, Sourcefile: rel, Sourcemap: api.SourceMapExternal, Target: api.ESNext,
			Supported: map[string]bool{"decorators": false}}
		if experimentalDecorators {
			opts.TsconfigRaw = `{"compilerOptions":{"experimentalDecorators":true}}`
		}
		res := api.Transform(string(src), opts)
		if len(res.Errors) > 0 {
			e := res.Errors[0]
			if e.Location != nil {
				return nil, fmt.Errorf("line %d: %s", e.Location.Line, e.Text)
			}
			return nil, fmt.Errorf("%s", e.Text)
		}
		code = res.Code
		m, err := decodeSourceMap(res.Map)
		if err != nil {
			return nil, fmt.Errorf("esbuild source map: %w", err)
		}
		lineMap = m.originalLine
	}
	// A buffer with room for the parser's terminating NUL, so the parser
	// keeps it in place and every literal it returns is a slice of it: the
	// slice's offset is where the literal is written.
	buf := make([]byte, len(code), len(code)+1)
	copy(buf, code)
	ast, err := js.Parse(parse.NewInputBytes(buf), js.Options{})
	if err != nil {
		msg := err.Error()
		if pe, ok := err.(*parse.Error); ok {
			line := pe.Line
			if lineMap != nil {
				line = lineMap(line, pe.Column-1)
			}
			msg = fmt.Sprintf("line %d: %s", line, pe.Message)
		}
		return nil, fmt.Errorf("does not parse as JavaScript: %s", msg)
	}
	starts := []int{0}
	for i, b := range buf {
		if b == '\n' {
			starts = append(starts, i+1)
		}
	}
	m := &jsModule{rel: rel, buf: buf, ast: ast, objs: map[*js.Var]*jsObj{}, funcs: map[*js.Var]*jsFunc{},
		consts: map[*js.Var]string{}, imports: map[*js.Var]jsImport{}, exports: map[string]*js.Var{},
		exportObjs: map[string]*jsObj{}, exportFns: map[string]*jsFunc{}}
	m.lineOf = func(off int) int {
		if off < 0 {
			return 0
		}
		line := sort.Search(len(starts), func(i int) bool { return starts[i] > off })
		if lineMap != nil {
			return lineMap(line, off-starts[line-1])
		}
		return line
	}
	return m, nil
}

// lineOfBytes is the line of a literal the parser returned: its offset in
// the parsed buffer (0 when it is not a slice of it).
func (m *jsModule) lineOfBytes(b []byte) int { return m.lineOf(m.offset(b)) }

// offset is where a literal the parser returned sits in the parsed buffer,
// or -1.
func (m *jsModule) offset(b []byte) int {
	if len(b) == 0 || len(m.buf) == 0 {
		return -1
	}
	off := int(uintptr(unsafe.Pointer(unsafe.SliceData(b))) - uintptr(unsafe.Pointer(unsafe.SliceData(m.buf))))
	if off < 0 || off >= len(m.buf) {
		return -1
	}
	return off
}

func resolveVar(v *js.Var) *js.Var {
	for v != nil && v.Link != nil {
		v = v.Link
	}
	return v
}

// jsAnalyze reads the routes of a unit's sources (project-relative path →
// content), each compiled with the nearest of the unit's tsconfig.json
// files (path → content) above it. Files that do not parse are returned
// as unparsed.
func jsAnalyze(files, configs map[string][]byte) *analysis {
	u := &jsUnit{mods: map[string]*jsModule{}, implied: map[*js.Var]*jsObj{}, created: map[js.IExpr]*jsObj{}}
	var unparsed []Unparsed
	for rel := range files {
		u.order = append(u.order, rel)
	}
	sort.Strings(u.order)
	var kept []string
	for _, rel := range u.order {
		m, err := jsParse(rel, files[rel], experimentalDecorators(configs, rel))
		if err != nil {
			unparsed = append(unparsed, Unparsed{File: rel, Reason: err.Error()})
			continue
		}
		u.mods[rel] = m
		kept = append(kept, rel)
	}
	u.order = kept
	for _, rel := range u.order {
		u.declare(u.mods[rel])
	}
	for _, rel := range u.order {
		m := u.mods[rel]
		js.Walk(&jsVisitor{u: u, m: m}, m.ast)
	}
	routes, unresolved := u.resolve()
	sortUnresolved(unresolved)
	a := &analysis{routes: routes, unresolved: unresolved, unparsed: unparsed, unreadable: u.unreadable}
	if len(a.unreadable) == 0 && u.nestRoute != "" {
		a.unreadable = []string{u.nestRoute}
	}
	for _, o := range u.created {
		if o != nil {
			a.routers++
		}
	}
	for _, rel := range u.order {
		for _, imp := range u.mods[rel].imports {
			if !strings.HasPrefix(imp.module, ".") {
				a.packages = append(a.packages, imp.module)
			}
		}
	}
	return a
}

// experimentalDecorators reports whether the tsconfig.json nearest above
// rel (or one it extends, within the unit) turns TypeScript's experimental
// decorators on.
func experimentalDecorators(configs map[string][]byte, rel string) bool {
	for dir := path.Dir(rel); ; dir = path.Dir(dir) {
		if cfg, ok := configs[path.Join(dir, tsconfigName)]; ok {
			return tsconfigEnables(configs, path.Join(dir, tsconfigName), cfg, 0)
		}
		if dir == "." || dir == "/" || strings.Count(dir, "/") < 2 {
			return false // units/<unit> is the highest a unit's config sits
		}
	}
}

// tsconfigEnables reads compilerOptions.experimentalDecorators of a
// tsconfig (JSON with comments and trailing commas, as tsc reads it),
// following a relative extends.
func tsconfigEnables(configs map[string][]byte, rel string, data []byte, depth int) bool {
	var cfg struct {
		Extends         string `json:"extends"`
		CompilerOptions struct {
			ExperimentalDecorators *bool `json:"experimentalDecorators"`
		} `json:"compilerOptions"`
	}
	if json.Unmarshal(jsonc(data), &cfg) != nil {
		return false
	}
	if v := cfg.CompilerOptions.ExperimentalDecorators; v != nil {
		return *v
	}
	if strings.HasPrefix(cfg.Extends, ".") && depth < 5 {
		base := path.Join(path.Dir(rel), cfg.Extends)
		if path.Ext(base) != ".json" {
			base += ".json"
		}
		if b, ok := configs[base]; ok {
			return tsconfigEnables(configs, base, b, depth+1)
		}
	}
	return false
}

// jsonc strips the comments and trailing commas tsconfig files may hold,
// outside strings.
func jsonc(data []byte) []byte {
	var out []byte
	inStr := false
	for i := 0; i < len(data); i++ {
		c := data[i]
		switch {
		case inStr:
			out = append(out, c)
			if c == '\\' && i+1 < len(data) {
				i++
				out = append(out, data[i])
			} else if c == '"' {
				inStr = false
			}
		case c == '"':
			inStr = true
			out = append(out, c)
		case c == '/' && i+1 < len(data) && data[i+1] == '/':
			for i < len(data) && data[i] != '\n' {
				i++
			}
			out = append(out, '\n')
		case c == '/' && i+1 < len(data) && data[i+1] == '*':
			i += 2
			for i+1 < len(data) && !(data[i] == '*' && data[i+1] == '/') {
				i++
			}
			i++
		case c == ',':
			j := i + 1
			for j < len(data) && strings.ContainsRune(" \t\r\n", rune(data[j])) {
				j++
			}
			if j < len(data) && (data[j] == '}' || data[j] == ']') {
				continue
			}
			out = append(out, c)
		default:
			out = append(out, c)
		}
	}
	return out
}

// declare records a module's objects, functions, string constants, imports
// and exports (top-level and nested declarations alike).
func (u *jsUnit) declare(m *jsModule) {
	js.Walk(&declVisitor{u: u, m: m}, m.ast)
}

type declVisitor struct {
	u *jsUnit
	m *jsModule
}

func (d *declVisitor) Exit(js.INode) {}

func (d *declVisitor) Enter(n js.INode) js.IVisitor {
	m := d.m
	switch n := n.(type) {
	case *js.ImportStmt:
		mod := string(unquote(n.Module))
		// The bindings are matched by name when they are used (imports
		// bind module-scope variables, found in the walk by their name).
		if n.Default != nil {
			d.bindImport(n.Default, mod, "default")
		}
		for _, a := range n.List {
			name, local := string(a.Name), string(a.Binding)
			if name == "" {
				name = local
			}
			if name == "*" {
				name = "*"
			}
			d.bindImport([]byte(local), mod, name)
		}
	case *js.VarDecl:
		for _, el := range n.List {
			d.binding(el.Binding, el.Default)
		}
	case *js.FuncDecl:
		if n.Name != nil {
			m.funcs[resolveVar(n.Name)] = funcOf(n.Params)
		}
	case *js.ExportStmt:
		d.export(n)
	case *js.ExprStmt:
		d.assignExport(n.Value)
	}
	return d
}

// bindImport binds an import's local name: the parser keeps no variable
// for an import, so its uses are the module scope's variables of that name
// (declared or not).
func (d *declVisitor) bindImport(local []byte, mod, name string) {
	for _, v := range d.m.moduleVars(string(local)) {
		d.m.imports[v] = jsImport{module: mod, name: name}
	}
}

// moduleVars returns the module scope's variables called name.
func (m *jsModule) moduleVars(name string) []*js.Var {
	var out []*js.Var
	sc := m.ast.BlockStmt.Scope
	for _, list := range []js.VarArray{sc.Declared, sc.Undeclared} {
		for _, v := range list {
			if string(v.Data) == name {
				out = append(out, resolveVar(v))
			}
		}
	}
	return out
}

func funcOf(p js.Params) *jsFunc {
	f := &jsFunc{}
	for _, el := range p.List {
		if v, ok := el.Binding.(*js.Var); ok {
			f.params = append(f.params, resolveVar(v))
		} else {
			f.params = append(f.params, nil)
		}
	}
	return f
}

// binding records `const x = <init>` (and destructured requires).
func (d *declVisitor) binding(b js.IBinding, init js.IExpr) {
	m := d.m
	switch b := b.(type) {
	case *js.Var:
		v := resolveVar(b)
		if init == nil {
			return
		}
		if s, ok := stringValue(m, init); ok {
			m.consts[v] = s
		}
		if o := d.u.create(m, init); o != nil {
			m.objs[v] = o
		}
		if f := funcExpr(init); f != nil {
			m.funcs[v] = f
		}
		if mod, ok := requireOf(init); ok {
			m.imports[v] = jsImport{module: mod, name: "*"}
		}
		if dot, ok := init.(*js.DotExpr); ok {
			if mod, ok := requireOf(dot.X); ok {
				m.imports[v] = jsImport{module: mod, name: propName(dot)}
			}
		}
	case *js.BindingObject:
		// const { ordersRouter, router: r } = require('./orders')
		mod, ok := requireOf(init)
		if !ok {
			return
		}
		for _, it := range b.List {
			v, ok := it.Value.Binding.(*js.Var)
			if !ok || it.Key == nil {
				continue
			}
			m.imports[resolveVar(v)] = jsImport{module: mod, name: string(it.Key.Literal.Data)}
		}
	}
}

func funcExpr(e js.IExpr) *jsFunc {
	switch f := e.(type) {
	case *js.ArrowFunc:
		return funcOf(f.Params)
	case *js.FuncDecl:
		return funcOf(f.Params)
	}
	return nil
}

// export records ES exports.
func (d *declVisitor) export(n *js.ExportStmt) {
	m := d.m
	if n.Default {
		switch e := n.Decl.(type) {
		case *js.Var:
			m.exports["default"] = resolveVar(e)
		case *js.FuncDecl:
			if e.Name != nil {
				m.exports["default"] = resolveVar(e.Name)
			} else {
				m.exportFns["default"] = funcOf(e.Params)
			}
		case *js.ArrowFunc:
			m.exportFns["default"] = funcOf(e.Params)
		default:
			if o := d.u.create(m, n.Decl); o != nil {
				m.exportObjs["default"] = o
			}
		}
		return
	}
	switch decl := n.Decl.(type) {
	case *js.VarDecl:
		for _, el := range decl.List {
			if v, ok := el.Binding.(*js.Var); ok {
				m.exports[string(v.Data)] = resolveVar(v)
			}
		}
	case *js.FuncDecl:
		if decl.Name != nil {
			m.exports[string(decl.Name.Data)] = resolveVar(decl.Name)
		}
	}
	for _, a := range n.List {
		name, local := string(a.Name), string(a.Binding)
		if a.Binding == nil {
			local = name
		}
		if name == "" {
			name = local
		}
		for _, v := range m.moduleVars(local) {
			m.exports[name] = v
		}
	}
}

// assignExport records CommonJS exports: module.exports = x,
// module.exports = { a, b: c }, exports.a = x, module.exports.a = x.
func (d *declVisitor) assignExport(e js.IExpr) {
	m := d.m
	as, ok := e.(*js.BinaryExpr)
	if !ok || as.Op != js.EqToken {
		return
	}
	target := exportTarget(as.X)
	if target == "" {
		return
	}
	bind := func(name string, val js.IExpr) {
		switch v := val.(type) {
		case *js.Var:
			m.exports[name] = resolveVar(v)
		default:
			if f := funcExpr(val); f != nil {
				m.exportFns[name] = f
			} else if o := d.u.create(m, val); o != nil {
				m.exportObjs[name] = o
			}
		}
	}
	if target == "default" {
		if obj, ok := as.Y.(*js.ObjectExpr); ok {
			for _, p := range obj.List {
				if p.Name == nil || p.Name.IsComputed() {
					if v, ok := p.Value.(*js.Var); ok && p.Name == nil {
						m.exports[string(v.Data)] = resolveVar(v)
					}
					continue
				}
				bind(string(p.Name.Literal.Data), p.Value)
			}
			return
		}
	}
	bind(target, as.Y)
}

// exportTarget names what an assignment exports: "default" for
// module.exports, the property for exports.x / module.exports.x.
func exportTarget(x js.IExpr) string {
	dot, ok := x.(*js.DotExpr)
	if !ok {
		return ""
	}
	if v, ok := dot.X.(*js.Var); ok {
		switch {
		case string(v.Data) == "module" && propName(dot) == "exports":
			return "default"
		case string(v.Data) == "exports":
			return propName(dot)
		}
	}
	if inner, ok := dot.X.(*js.DotExpr); ok {
		if v, ok := inner.X.(*js.Var); ok && string(v.Data) == "module" && propName(inner) == "exports" {
			return propName(dot)
		}
	}
	return ""
}

func propName(dot *js.DotExpr) string { return string(literalData(dot.Y)) }

// requireOf reports require('<mod>').
func requireOf(e js.IExpr) (string, bool) {
	call, ok := e.(*js.CallExpr)
	if !ok || len(call.Args.List) != 1 {
		return "", false
	}
	if v, ok := call.X.(*js.Var); !ok || string(v.Data) != "require" {
		return "", false
	}
	lit, ok := call.Args.List[0].Value.(*js.LiteralExpr)
	if !ok || lit.TokenType != js.StringToken {
		return "", false
	}
	return string(unquote(lit.Data)), true
}

func unquote(b []byte) []byte {
	if len(b) >= 2 && (b[0] == '"' || b[0] == '\'' || b[0] == '`') {
		return b[1 : len(b)-1]
	}
	return b
}

// stringValue is the value of a string the code spells out: a literal, a
// template without substitutions, a string constant, or + of those.
func stringValue(m *jsModule, e js.IExpr) (string, bool) {
	switch e := e.(type) {
	case *js.LiteralExpr:
		if e.TokenType == js.StringToken {
			return string(unquote(e.Data)), true
		}
	case *js.TemplateExpr:
		if e.Tag != nil {
			return "", false
		}
		var b strings.Builder
		for _, p := range e.List {
			b.Write(templatePart(p.Value))
			s, ok := stringValue(m, p.Expr)
			if !ok {
				return "", false
			}
			b.WriteString(s)
		}
		tail := strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(string(e.Tail), "}"), "`"), "`")
		b.WriteString(tail)
		return b.String(), true
	case *js.Var:
		s, ok := m.consts[resolveVar(e)]
		return s, ok
	case *js.BinaryExpr:
		if e.Op == js.AddToken {
			a, ok1 := stringValue(m, e.X)
			b, ok2 := stringValue(m, e.Y)
			return a + b, ok1 && ok2
		}
	case *js.GroupExpr:
		return stringValue(m, e.X)
	}
	return "", false
}

// templatePart strips the template delimiters (` and ${ / } and ${).
func templatePart(b []byte) []byte {
	b = []byte(strings.TrimPrefix(string(b), "`"))
	b = []byte(strings.TrimPrefix(string(b), "}"))
	return []byte(strings.TrimSuffix(string(b), "${"))
}

// create returns the app or router object an expression creates, or nil:
// a creation (express(), new Hono(), new Router({prefix})), or a chain of
// calls on one (new Hono().get(…).post(…)), which is the object itself.
// Each expression creates its object once, however often it is asked.
func (u *jsUnit) create(m *jsModule, e js.IExpr) *jsObj {
	switch e.(type) {
	case *js.CallExpr, *js.NewExpr:
	default:
		return nil
	}
	if o, ok := u.created[e]; ok {
		return o
	}
	o := u.creation(m, e)
	u.created[e] = o
	return o
}

// chainsOn are the router methods that return their receiver, so a call
// of one is the router again: route methods (with a path and a handler),
// use, Hono's on and route(path, sub), Fastify's register and hooks,
// koa-router's prefix.
func chainsOn(call *js.CallExpr) bool {
	dot, ok := call.X.(*js.DotExpr)
	if !ok {
		return false
	}
	n := len(call.Args.List)
	switch name := propName(dot); {
	case httpMethods[name] != "":
		return n >= 2
	case name == "route":
		return n == 2
	case name == "use", name == "on", name == "register", name == "prefix", name == "addHook", name == "decorate", name == "param":
		return n >= 1
	}
	return false
}

func (u *jsUnit) creation(m *jsModule, e js.IExpr) *jsObj {
	switch e := e.(type) {
	case *js.CallExpr:
		if chainsOn(e) {
			return u.create(m, e.X.(*js.DotExpr).X)
		}
		switch callee := e.X.(type) {
		case *js.Var:
			switch string(callee.Data) {
			case "express", "fastify", "Fastify":
				return &jsObj{root: true}
			case "Router":
				return &jsObj{}
			}
		case *js.DotExpr:
			name := propName(callee)
			switch name {
			case "Router":
				return &jsObj{}
			case "basePath":
				// new Hono().basePath('/api')
				if base := u.create(m, callee.X); base != nil && len(e.Args.List) == 1 {
					if p, ok := stringValue(m, e.Args.List[0].Value); ok {
						base.prefix = joinRoute(base.prefix, p)
					}
					return base
				}
			}
		case *js.CallExpr:
			// require('express')()
			if mod, ok := requireOf(callee); ok && (mod == "express" || mod == "fastify") {
				return &jsObj{root: true}
			}
		}
	case *js.NewExpr:
		v, ok := e.X.(*js.Var)
		if !ok {
			return nil
		}
		switch string(v.Data) {
		case "Hono", "Koa", "Elysia":
			return &jsObj{root: true}
		case "Router", "KoaRouter":
			o := &jsObj{}
			if e.Args != nil && len(e.Args.List) == 1 {
				if obj, ok := e.Args.List[0].Value.(*js.ObjectExpr); ok {
					for _, p := range obj.List {
						if p.Name != nil && !p.Name.IsComputed() && string(p.Name.Literal.Data) == "prefix" {
							if s, ok := stringValue(m, p.Value); ok {
								o.prefix = s
							}
						}
					}
				}
			}
			return o
		}
	}
	return nil
}

// moduleOf resolves an import specifier from module m to a module of the
// unit: relative paths, with the extensions and index files Node and
// bundlers try.
func (u *jsUnit) moduleOf(m *jsModule, spec string) *jsModule {
	if !strings.HasPrefix(spec, ".") {
		return nil
	}
	base := path.Join(path.Dir(m.rel), spec)
	cands := []string{base}
	for _, ext := range []string{".ts", ".tsx", ".js", ".mjs", ".cjs", ".mts", ".cts", ".jsx"} {
		cands = append(cands, base+ext, base+"/index"+ext)
	}
	// import './x.js' from TypeScript names x.ts.
	if ext := path.Ext(base); ext == ".js" || ext == ".mjs" || ext == ".cjs" {
		stem := strings.TrimSuffix(base, ext)
		cands = append(cands, stem+".ts", stem+".tsx", stem+".mts", stem+".cts")
	}
	for _, c := range cands {
		if mod, ok := u.mods[c]; ok {
			return mod
		}
	}
	return nil
}

// exported resolves a module's export name to an object or a function.
func (u *jsUnit) exported(m *jsModule, name string, depth int) (*jsObj, *jsFunc) {
	if m == nil || depth > 20 {
		return nil, nil
	}
	if name == "*" {
		name = "default"
	}
	if o := m.exportObjs[name]; o != nil {
		return o, nil
	}
	if f := m.exportFns[name]; f != nil {
		return nil, f
	}
	if v := m.exports[name]; v != nil {
		return u.binding(m, v, depth+1)
	}
	return nil, nil
}

// binding resolves a variable of module m to the object or function it
// holds, through imports.
func (u *jsUnit) binding(m *jsModule, v *js.Var, depth int) (*jsObj, *jsFunc) {
	v = resolveVar(v)
	if o := m.objs[v]; o != nil {
		return o, nil
	}
	if f := m.funcs[v]; f != nil {
		return nil, f
	}
	if o := u.implied[v]; o != nil {
		return o, nil
	}
	if imp, ok := m.imports[v]; ok {
		return u.exported(u.moduleOf(m, imp.module), imp.name, depth+1)
	}
	return nil, nil
}

// objOf resolves the receiver or argument e to a router object: a binding,
// an imported one, require('./x'), require('./x').name, x.routes() (koa).
func (u *jsUnit) objOf(m *jsModule, e js.IExpr, implied bool) (*jsObj, *jsFunc) {
	switch e := e.(type) {
	case *js.Var:
		if o, f := u.binding(m, e, 0); o != nil || f != nil {
			return o, f
		}
		if !implied {
			return nil, nil
		}
		// A receiver never seen created (a parameter, a global): its own
		// object, mounted where callers pass one.
		return u.impliedObj(resolveVar(e)), nil
	case *js.CallExpr:
		if mod, ok := requireOf(e); ok {
			return u.exported(u.moduleOf(m, mod), "default", 0)
		}
		if dot, ok := e.X.(*js.DotExpr); ok && (propName(dot) == "routes" || propName(dot) == "middleware") {
			return u.objOf(m, dot.X, false)
		}
	case *js.DotExpr:
		if mod, ok := requireOf(e.X); ok {
			return u.exported(u.moduleOf(m, mod), propName(e), 0)
		}
		if v, ok := e.X.(*js.Var); ok {
			if imp, ok := m.imports[resolveVar(v)]; ok && imp.name == "*" {
				return u.exported(u.moduleOf(m, imp.module), propName(e), 0)
			}
		}
	}
	return nil, nil
}

func (u *jsUnit) impliedObj(v *js.Var) *jsObj {
	if u.implied[v] == nil {
		u.implied[v] = &jsObj{implied: true}
	}
	return u.implied[v]
}

// httpMethods are the router methods that define a route; "del" is
// koa-router's DELETE, "all" matches every method.
var httpMethods = map[string]string{
	"get": "GET", "post": "POST", "put": "PUT", "patch": "PATCH", "delete": "DELETE", "del": "DELETE",
	"head": "HEAD", "options": "OPTIONS", "all": "ALL",
}

type jsVisitor struct {
	u *jsUnit
	m *jsModule
}

func (v *jsVisitor) Exit(js.INode) {}

func (v *jsVisitor) Enter(n js.INode) js.IVisitor {
	call, ok := n.(*js.CallExpr)
	if !ok {
		return v
	}
	v.call(call)
	return v
}

func (v *jsVisitor) call(call *js.CallExpr) {
	u, m := v.u, v.m
	args := call.Args.List
	dot, ok := call.X.(*js.DotExpr)
	if !ok {
		v.decorator(call)
		v.passObjects(call)
		return
	}
	name := propName(dot)
	line := m.lineOfBytes(literalData(dot.Y))
	// x.route('/p').get(h).post(h): the chain's receiver is the route call.
	if inner, ok := dot.X.(*js.CallExpr); ok && httpMethods[name] != "" {
		if route := routeCallOf(inner); route != nil {
			idot := route.X.(*js.DotExpr)
			if o, _ := u.objOf(m, idot.X, true); o != nil {
				v.addRoute(o, name, route.Args.List[0].Value, m.lineOfBytes(literalData(idot.Y)), m.offset(literalData(dot.Y)))
			}
			return
		}
	}
	o := u.recvObj(m, dot.X)
	if o == nil {
		// request(app).get('/x'), this.api.get(…): not a router the
		// unit declares.
		return
	}
	switch {
	case httpMethods[name] != "":
		if len(args) < 2 {
			return
		}
		pathArg := args[0].Value
		// koa-router: router.get('name', '/path', handler)
		if s, ok := stringValue(m, pathArg); ok && !strings.HasPrefix(s, "/") && len(args) >= 3 {
			if s2, ok := stringValue(m, args[1].Value); ok && strings.HasPrefix(s2, "/") {
				pathArg = args[1].Value
			}
		}
		v.addRoute(o, name, pathArg, line, m.offset(literalData(dot.Y)))
	case name == "on" && len(args) >= 3:
		// Hono: app.on('GET' | ['GET', 'POST'], '/p', h)
		for _, meth := range methodsOf(m, args[0].Value) {
			v.addRoute(o, strings.ToLower(meth), args[1].Value, line, m.offset(literalData(dot.Y)))
		}
	case name == "route" && len(args) == 1:
		// Fastify: app.route({ method, url, handler })
		if obj, ok := args[0].Value.(*js.ObjectExpr); ok {
			var methods []string
			var url js.IExpr
			for _, p := range obj.List {
				if p.Name == nil || p.Name.IsComputed() {
					continue
				}
				switch string(p.Name.Literal.Data) {
				case "method":
					methods = methodsOf(m, p.Value)
				case "url", "path":
					url = p.Value
				}
			}
			for _, meth := range methods {
				if url != nil {
					v.addRoute(o, strings.ToLower(meth), url, line, m.offset(literalData(dot.Y)))
				}
			}
		}
	case name == "route" && len(args) == 2:
		// Hono: app.route('/v2', sub)
		v.addMount(o, args[0].Value, args[1].Value, line)
	case name == "use":
		// Express/Koa: x.use([prefix,] ...middleware and routers)
		var prefix js.IExpr
		rest := args
		if len(args) > 1 && isPrefix(u, m, args[0].Value) {
			prefix, rest = args[0].Value, args[1:]
		}
		for _, a := range rest {
			if sub, _ := u.objOf(m, a.Value, false); sub != nil || isRouterLike(a.Value) && !u.routerMiddleware(m, a.Value) {
				v.addMount(o, prefix, a.Value, line)
			}
		}
	case name == "register" && len(args) >= 1:
		// Fastify: app.register(plugin, { prefix: '/v2' })
		var prefix js.IExpr
		if len(args) >= 2 {
			if obj, ok := args[1].Value.(*js.ObjectExpr); ok {
				for _, p := range obj.List {
					if p.Name != nil && !p.Name.IsComputed() && string(p.Name.Literal.Data) == "prefix" {
						prefix = p.Value
					}
				}
			}
		}
		v.addMount(o, prefix, args[0].Value, line)
	case name == "prefix" && len(args) == 1:
		// koa-router: router.prefix('/v2')
		if s, ok := stringValue(m, args[0].Value); ok {
			o.prefix = joinRoute(o.prefix, s)
		}
	default:
		v.passObjects(call)
	}
}

// recvObj resolves the receiver of a router call: a binding (or a
// receiver never seen created, which gets an object of its own), a
// creation, or a chain of calls that return their receiver
// (router.get(…).post(…), app.use(a.routes()).use(a.allowedMethods())).
func (u *jsUnit) recvObj(m *jsModule, e js.IExpr) *jsObj {
	switch e := e.(type) {
	case *js.Var:
		o, _ := u.objOf(m, e, true)
		return o
	case *js.GroupExpr:
		return u.recvObj(m, e.X)
	case *js.NewExpr:
		return u.create(m, e)
	case *js.CallExpr:
		if chainsOn(e) {
			return u.recvObj(m, e.X.(*js.DotExpr).X)
		}
		return u.create(m, e)
	}
	return nil
}

// routerMiddleware reports a call of a method of a router the unit
// declares that is not its routes (koa-router's allowedMethods()): a
// middleware it makes, not a router to mount.
func (u *jsUnit) routerMiddleware(m *jsModule, e js.IExpr) bool {
	call, ok := e.(*js.CallExpr)
	if !ok {
		return false
	}
	dot, ok := call.X.(*js.DotExpr)
	if !ok {
		return false
	}
	switch propName(dot) {
	case "routes", "middleware":
		return false
	}
	if v, ok := dot.X.(*js.Var); ok {
		o, _ := u.objOf(m, v, false)
		return o != nil
	}
	return u.recvObj(m, dot.X) != nil
}

// routeCallOf finds x.route('/p') under a chain of .get(h).post(h) calls.
func routeCallOf(call *js.CallExpr) *js.CallExpr {
	for range 20 {
		dot, ok := call.X.(*js.DotExpr)
		if !ok {
			return nil
		}
		switch name := propName(dot); {
		case name == "route" && len(call.Args.List) == 1:
			return call
		case httpMethods[name] != "":
			next, ok := dot.X.(*js.CallExpr)
			if !ok {
				return nil
			}
			call = next
		default:
			return nil
		}
	}
	return nil
}

// literalData is a literal's bytes (the parser gives a property name as a
// LiteralExpr value, other literals as pointers).
func literalData(e js.IExpr) []byte {
	switch l := e.(type) {
	case *js.LiteralExpr:
		return l.Data
	case js.LiteralExpr:
		return l.Data
	}
	return nil
}

// isPrefix reports whether use()'s first argument is a path (a string, or
// an expression that is neither a router, a function nor a call).
func isPrefix(u *jsUnit, m *jsModule, e js.IExpr) bool {
	if _, ok := stringValue(m, e); ok {
		return true
	}
	switch e.(type) {
	case *js.ArrowFunc, *js.FuncDecl, *js.CallExpr:
		return false
	case *js.TemplateExpr, *js.BinaryExpr:
		return true
	}
	o, f := u.objOf(m, e, false)
	return o == nil && f == nil && !isImported(m, e)
}

func isImported(m *jsModule, e js.IExpr) bool {
	v, ok := e.(*js.Var)
	if !ok {
		return false
	}
	_, imp := m.imports[resolveVar(v)]
	return imp
}

// isRouterLike reports an argument of use() that is a router the analysis
// cannot follow: a call (makeRouter()), not a middleware function.
func isRouterLike(e js.IExpr) bool {
	call, ok := e.(*js.CallExpr)
	if !ok {
		return false
	}
	if dot, ok := call.X.(*js.DotExpr); ok {
		switch propName(dot) {
		case "json", "urlencoded", "static", "raw", "text":
			return false // express.json() and friends
		}
	}
	if v, ok := call.X.(*js.Var); ok {
		switch string(v.Data) {
		case "cors", "helmet", "morgan", "compression", "cookieParser", "bodyParser", "require":
			return false
		}
	}
	return true
}

// nestRouteDecorators are NestJS's decorators that declare routes.
var nestRouteDecorators = map[string]bool{"Controller": true, "Get": true, "Post": true, "Put": true, "Patch": true, "Delete": true, "All": true}

// decorator records a NestJS route decorator (lowered to a call of the
// decorator imported from @nestjs/common): routes no reader here reads.
func (v *jsVisitor) decorator(call *js.CallExpr) {
	fn, ok := call.X.(*js.Var)
	if !ok {
		return
	}
	imp, ok := v.m.imports[resolveVar(fn)]
	if !ok || imp.module != "@nestjs/common" || !nestRouteDecorators[imp.name] {
		return
	}
	if imp.name != "Controller" {
		// A route decorator outside a controller still declares a
		// route; inside one, the controller names the place.
		if v.u.nestRoute == "" {
			v.u.nestRoute = fmt.Sprintf("%s:%d @%s", v.m.rel, v.m.lineOfBytes(fn.Data), imp.name)
		}
		return
	}
	arg := ""
	if len(call.Args.List) > 0 {
		if s, ok := stringValue(v.m, call.Args.List[0].Value); ok {
			arg = strconv.Quote(s)
		}
	}
	v.u.unreadable = append(v.u.unreadable, fmt.Sprintf("%s:%d @%s(%s)", v.m.rel, v.m.lineOfBytes(fn.Data), imp.name, arg))
}

// passObjects handles f(app) where f is a function of the unit: its
// parameters receive the objects passed, so the routes it declares on them
// land on those objects.
func (v *jsVisitor) passObjects(call *js.CallExpr) {
	u, m := v.u, v.m
	_, f := u.objOf(m, call.X, false)
	if f == nil {
		return
	}
	for i, a := range call.Args.List {
		if i >= len(f.params) || f.params[i] == nil {
			break
		}
		o, _ := u.objOf(m, a.Value, false)
		if o == nil {
			continue
		}
		// The parameter's routes are the passed object's: a mount with no
		// prefix, wherever the function body was read.
		sub := u.impliedObj(f.params[i])
		if sub != o {
			o.mounts = append(o.mounts, jsMount{prefix: "/", target: sub, file: m.rel})
			sub.mounted = true
		}
	}
}

func methodsOf(m *jsModule, e js.IExpr) []string {
	if s, ok := stringValue(m, e); ok {
		return []string{strings.ToUpper(s)}
	}
	var out []string
	if arr, ok := e.(*js.ArrayExpr); ok {
		for _, el := range arr.List {
			if s, ok := stringValue(m, el.Value); ok {
				out = append(out, strings.ToUpper(s))
			}
		}
	}
	return out
}

func (v *jsVisitor) addRoute(o *jsObj, method string, pathArg js.IExpr, line, pos int) {
	m := v.m
	meth := httpMethods[method]
	if meth == "" {
		meth = strings.ToUpper(method)
	}
	r := jsRoute{method: meth, file: m.rel, line: line, pos: pos}
	if lit, ok := pathArg.(*js.LiteralExpr); ok {
		r.line = m.lineOfBytes(lit.Data)
	}
	s, ok := stringValue(m, pathArg)
	switch {
	case !ok && o.implied:
		return // an unknown receiver with a computed argument: not a route
	case !ok:
		r.dynamic = "the path is computed at run time"
	case !strings.HasPrefix(s, "/") && s != "*":
		return
	default:
		r.path = s
	}
	o.routes = append(o.routes, r)
}

func (v *jsVisitor) addMount(o *jsObj, prefix, target js.IExpr, line int) {
	u, m := v.u, v.m
	mt := jsMount{file: m.rel, line: line, prefix: "/"}
	if prefix != nil {
		if s, ok := stringValue(m, prefix); ok {
			mt.prefix = s
		} else {
			mt.dynamic = "the mount prefix is computed at run time"
		}
	}
	sub, f := u.objOf(m, target, false)
	if sub == nil && f == nil {
		// An inline plugin: register(async (app) => { … }, opts).
		f = funcExpr(target)
	}
	if sub == nil && f != nil && len(f.params) > 0 && f.params[0] != nil {
		// A Fastify plugin (or any function handed the router): its first
		// parameter is the router it declares routes on.
		sub = u.impliedObj(f.params[0])
	}
	if sub == nil {
		mt.unknown = "a router built at run time"
	} else {
		sub.mounted = true
	}
	mt.target = sub
	o.mounts = append(o.mounts, mt)
}

// resolve walks every root object's mounts and returns each route with its
// full path, and what could not be resolved.
func (u *jsUnit) resolve() ([]implRoute, []UnresolvedRoute) {
	var objs []*jsObj
	seen := map[*jsObj]bool{}
	add := func(o *jsObj) {
		if o != nil && !seen[o] {
			seen[o] = true
			objs = append(objs, o)
		}
	}
	for _, rel := range u.order {
		m := u.mods[rel]
		for _, o := range m.objs {
			add(o)
		}
		for _, o := range m.exportObjs {
			add(o)
		}
	}
	for _, o := range u.implied {
		add(o)
	}
	hasRoot := false
	for _, o := range objs {
		hasRoot = hasRoot || o.root && !o.mounted
	}
	var routes []implRoute
	var unresolved []UnresolvedRoute
	var walk func(o *jsObj, prefix, dynamic string, depth int, stack map[*jsObj]bool)
	walk = func(o *jsObj, prefix, dynamic string, depth int, stack map[*jsObj]bool) {
		if depth > 20 || stack[o] {
			return
		}
		stack[o] = true
		defer delete(stack, o)
		prefix = joinRoute(prefix, o.prefix)
		for _, r := range o.routes {
			why := dynamic
			if why == "" {
				why = r.dynamic
			}
			if why != "" {
				unresolved = append(unresolved, UnresolvedRoute{Method: r.method, Path: unknownPath(prefix, r.path),
					File: r.file, Line: r.line, Reason: why})
				continue
			}
			routes = append(routes, implRoute{Method: r.method, Path: joinRoute(prefix, r.path), File: r.file, Line: r.line, pos: r.pos})
		}
		for _, mt := range o.mounts {
			why := dynamic
			if why == "" {
				why = mt.dynamic
			}
			next := joinRoute(prefix, mt.prefix)
			if mt.dynamic != "" {
				// What is known of the path ends where the prefix is
				// computed.
				next = joinRoute(prefix, "*")
			}
			if mt.target == nil {
				unresolved = append(unresolved, UnresolvedRoute{Method: "ALL", Path: joinRoute(next, "*"), File: mt.file, Line: mt.line,
					Reason: "mounts " + mt.unknown + ": its routes cannot be read statically"})
				continue
			}
			walk(mt.target, next, why, depth+1, stack)
		}
	}
	for _, o := range objs {
		if o.mounted {
			continue
		}
		if o.root || o.implied || !hasRoot {
			walk(o, "", "", 0, map[*jsObj]bool{})
			continue
		}
		// A router the unit's app never mounts: where it is served is not
		// in the code scanned.
		for _, r := range o.routes {
			unresolved = append(unresolved, UnresolvedRoute{Method: r.method, Path: r.path, File: r.file, Line: r.line,
				Reason: "declared on a router that no app of the unit mounts"})
		}
	}
	sort.SliceStable(routes, func(i, j int) bool {
		if routes[i].File != routes[j].File {
			return routes[i].File < routes[j].File
		}
		if routes[i].Line != routes[j].Line {
			return routes[i].Line < routes[j].Line
		}
		return routes[i].pos < routes[j].pos
	})
	return routes, unresolved
}
