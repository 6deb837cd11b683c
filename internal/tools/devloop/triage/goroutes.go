package triage

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path"
	"sort"
	"strconv"
	"strings"
)

// The routes of a Go unit are read from the syntax trees (go/parser) of its
// packages, following the routers as the code builds them: net/http's
// ServeMux with Go 1.22 "METHOD /path/{id}" patterns and http.StripPrefix
// mounts, chi (Route, Group, Mount), gin and echo groups, gorilla/mux
// (PathPrefix().Subrouter(), .Methods()), and functions of the unit that are
// handed a router. A route whose pattern is not a string the code spells out
// (a literal or a constant) is unresolved, with its file and line.

// goObj is a router: a ServeMux, a chi/gin/echo/gorilla router or group.
type goObj struct {
	prefix  string
	routes  []goRoute
	mounts  []goMount
	mounted bool
}

type goRoute struct {
	method, path, dynamic, file string
	line                        int
}

type goMount struct {
	prefix, dynamic, unknown, file string
	line                           int
	target                         *goObj
}

// goPkg is the files of one package directory.
type goPkg struct {
	dir     string
	fset    *token.FileSet
	files   map[string]*ast.File // project-relative path → file
	funcs   map[string]*ast.FuncDecl
	methods []*ast.FuncDecl
	consts  map[string]string
	// fields are routers kept in struct fields (s.router = chi.NewRouter()),
	// by field name: a method reads what the constructor stored.
	fields map[string]*goObj
	// varTypes are the types of the package's variables that hold a value
	// of a type of the unit (h := &orderHandler{}), by name, so a method
	// call on one finds its method.
	varTypes map[string]string
}

type goUnit struct {
	pkgs  map[string]*goPkg // by directory
	objs  []*goObj
	roots map[*goObj]bool
	// seen keeps a function from being walked twice with the same
	// router (recursion, several callers).
	seen map[string]bool
	// reached are the methods walked with the routers a call handed them
	// (or left unread because the call's receiver type is not known): they
	// are not walked again as entries with routers of their own.
	reached map[*ast.FuncDecl]bool
}

// goAnalyze reads the routes of a unit's Go files (project-relative path →
// content).
func goAnalyze(files map[string][]byte) *analysis {
	u := &goUnit{pkgs: map[string]*goPkg{}, roots: map[*goObj]bool{}, seen: map[string]bool{}, reached: map[*ast.FuncDecl]bool{}}
	var unparsed []Unparsed
	var rels []string
	for rel := range files {
		rels = append(rels, rel)
	}
	sort.Strings(rels)
	for _, rel := range rels {
		dir := path.Dir(rel)
		p := u.pkgs[dir]
		if p == nil {
			p = &goPkg{dir: dir, fset: token.NewFileSet(), files: map[string]*ast.File{}, funcs: map[string]*ast.FuncDecl{}, consts: map[string]string{}, fields: map[string]*goObj{}, varTypes: map[string]string{}}
			u.pkgs[dir] = p
		}
		f, err := parser.ParseFile(p.fset, rel, files[rel], parser.SkipObjectResolution)
		if err != nil {
			unparsed = append(unparsed, Unparsed{File: rel, Reason: err.Error()})
			continue
		}
		p.files[rel] = f
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					p.funcs[d.Name.Name] = d
				} else {
					p.methods = append(p.methods, d)
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					vs, ok := s.(*ast.ValueSpec)
					if !ok || d.Tok != token.CONST && d.Tok != token.VAR {
						continue
					}
					for i, n := range vs.Names {
						if i < len(vs.Values) {
							if s, ok := stringLit(vs.Values[i]); ok {
								p.consts[n.Name] = s
							}
						}
					}
				}
			}
		}
	}
	var dirs []string
	for d := range u.pkgs {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	// The entries are main and init (every function when the unit has no
	// main: a library of handlers), then the methods, which read the
	// routers the constructors kept in fields; a function reached through a
	// call is walked with the routers it is given.
	hasMain := false
	for _, p := range u.pkgs {
		hasMain = hasMain || p.funcs["main"] != nil
	}
	for _, d := range dirs {
		p := u.pkgs[d]
		var names []string
		for n := range p.funcs {
			if !hasMain || n == "main" || n == "init" {
				names = append(names, n)
			}
		}
		sort.Strings(names)
		for _, n := range names {
			u.walkFunc(p, p.funcs[n], u.routerParams(p.funcs[n]), p.dir+"."+n)
		}
	}
	// Methods handed no router first: they may hand theirs to the others
	// (s.routes() calling h.register(s.router.Group("/x"))).
	for _, handed := range []bool{false, true} {
		for _, d := range dirs {
			p := u.pkgs[d]
			for _, m := range p.methods {
				if !u.reached[m] && hasRouterParams(m) == handed {
					u.walkFunc(p, m, u.routerParams(m), "")
				}
			}
		}
	}
	un := u.unresolved()
	sortUnresolved(un)
	a := &analysis{routes: u.resolve(), unresolved: un, unparsed: unparsed, routers: len(u.objs)}
	for _, p := range u.pkgs {
		for _, f := range p.files {
			for _, imp := range f.Imports {
				if ip, err := strconv.Unquote(imp.Path.Value); err == nil && strings.Contains(strings.Split(ip, "/")[0], ".") {
					a.packages = append(a.packages, ip)
				}
			}
		}
	}
	return a
}

// goRouterTypes are the type names of routers a function may be handed.
var goRouterTypes = map[string]bool{"ServeMux": true, "Router": true, "Mux": true, "Engine": true, "RouterGroup": true,
	"Echo": true, "Group": true, "IRouter": true, "IRoutes": true, "App": true}

// routerParams binds an entry function's router-typed parameters to routers
// of their own: where they come from is outside what the unit shows.
func (u *goUnit) routerParams(fn *ast.FuncDecl) map[string]*goObj {
	env := map[string]*goObj{}
	if fn.Type.Params == nil {
		return env
	}
	for _, f := range fn.Type.Params.List {
		if !goRouterTypes[typeName(f.Type)] {
			continue
		}
		for _, n := range f.Names {
			env[n.Name] = u.newObj(true)
		}
	}
	return env
}

// hasRouterParams reports whether a function takes a router.
func hasRouterParams(fn *ast.FuncDecl) bool {
	for _, f := range fn.Type.Params.List {
		if goRouterTypes[typeName(f.Type)] {
			return true
		}
	}
	return false
}

// newObj records a router.
func (u *goUnit) newObj(root bool) *goObj {
	o := &goObj{}
	u.objs = append(u.objs, o)
	if root {
		u.roots[o] = true
	}
	return o
}

// defaultMux is http.Handle/HandleFunc's DefaultServeMux.
func (u *goUnit) defaultMux(env map[string]*goObj) *goObj {
	if env["\x00default"] == nil {
		env["\x00default"] = u.newObj(true)
	}
	return env["\x00default"]
}

// walkFunc walks a function body with env binding names to routers; key
// names the (function, bound routers) pair already walked.
func (u *goUnit) walkFunc(p *goPkg, fn *ast.FuncDecl, env map[string]*goObj, key string) *goObj {
	if fn.Body == nil || key != "" && u.seen[key] {
		return nil
	}
	if key != "" {
		u.seen[key] = true
	}
	return u.walkBlock(p, fn.Body, env)
}

// walkBlock walks statements; it returns the router a return statement
// gives back (for func ordersRouter() chi.Router { r := chi.NewRouter(); …; return r }).
func (u *goUnit) walkBlock(p *goPkg, body *ast.BlockStmt, env map[string]*goObj) *goObj {
	var ret *goObj
	ast.Inspect(body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit:
			return false // walked when it is passed to Route/Group/Handle
		case *ast.AssignStmt:
			for i, rhs := range n.Rhs {
				if i >= len(n.Lhs) {
					break
				}
				o := u.eval(p, rhs, env)
				if o == nil {
					continue
				}
				switch lhs := n.Lhs[i].(type) {
				case *ast.Ident:
					env[lhs.Name] = o
				case *ast.SelectorExpr:
					p.fields[lhs.Sel.Name] = o
				}
			}
			for i, rhs := range n.Rhs {
				if id, ok := n.Lhs[min(i, len(n.Lhs)-1)].(*ast.Ident); ok && len(n.Lhs) == len(n.Rhs) {
					if typ := u.typeOf(p, rhs); typ != "" {
						p.varTypes[id.Name] = typ
					}
				}
			}
		case *ast.ValueSpec:
			for i, rhs := range n.Values {
				if i < len(n.Names) {
					if o := u.eval(p, rhs, env); o != nil {
						env[n.Names[i].Name] = o
					}
				}
			}
		case *ast.ReturnStmt:
			for _, r := range n.Results {
				if o := u.eval(p, r, env); o != nil {
					ret = o
				}
			}
			return false
		case *ast.ExprStmt:
			u.eval(p, n.X, env)
			return false
		}
		return true
	})
	return ret
}

// goRouterMakers create a root router: pkg.Func.
var goRouterMakers = map[string]bool{
	"http.NewServeMux": true, "chi.NewRouter": true, "chi.NewMux": true, "gin.New": true, "gin.Default": true,
	"echo.New": true, "mux.NewRouter": true, "httprouter.New": true, "fiber.New": true,
}

// goMethodFuncs are router methods named after an HTTP method (chi, echo,
// gin, fiber): r.Get("/x", h), e.GET("/x", h).
var goMethodFuncs = map[string]string{
	"get": "GET", "post": "POST", "put": "PUT", "patch": "PATCH", "delete": "DELETE",
	"head": "HEAD", "options": "OPTIONS", "any": "ALL", "connect": "CONNECT", "trace": "TRACE",
}

// eval evaluates an expression for the routers it makes or declares on,
// returning the router it yields (nil for none).
func (u *goUnit) eval(p *goPkg, e ast.Expr, env map[string]*goObj) *goObj {
	switch e := e.(type) {
	case *ast.Ident:
		return env[e.Name]
	case *ast.ParenExpr:
		return u.eval(p, e.X, env)
	case *ast.UnaryExpr:
		return u.eval(p, e.X, env)
	case *ast.CallExpr:
		return u.call(p, e, env)
	case *ast.SelectorExpr:
		// s.router: a router kept in a field.
		if id, ok := e.X.(*ast.Ident); ok && env[id.Name] == nil && u.pkgNamed(p, id.Name) != nil {
			return nil
		}
		return p.fields[e.Sel.Name]
	}
	return nil
}

func selName(e ast.Expr) (recv ast.Expr, pkg, name string) {
	sel, ok := e.(*ast.SelectorExpr)
	if !ok {
		return nil, "", ""
	}
	if id, ok := sel.X.(*ast.Ident); ok {
		pkg = id.Name
	}
	return sel.X, pkg, sel.Sel.Name
}

func (u *goUnit) call(p *goPkg, call *ast.CallExpr, env map[string]*goObj) *goObj {
	recvExpr, pkgName, name := selName(call.Fun)
	if recvExpr == nil {
		// A function of this package handed a router.
		if id, ok := call.Fun.(*ast.Ident); ok {
			return u.callFunc(p, p.funcs[id.Name], call, env)
		}
		return nil
	}
	if goRouterMakers[pkgName+"."+name] && env[pkgName] == nil {
		return u.newObj(true)
	}
	if pkgName == "http" && env["http"] == nil && (name == "HandleFunc" || name == "Handle") {
		u.handle(p, u.defaultMux(env), call, env)
		return nil
	}
	// pkg.F(r) with pkg a package of the unit.
	if env[pkgName] == nil && pkgName != "" {
		if q := u.pkgNamed(p, pkgName); q != nil {
			return u.callFunc(q, q.funcs[name], call, env)
		}
	}
	// x.Methods("GET") after x.HandleFunc(…): gorilla.
	if name == "Methods" {
		if inner, ok := recvExpr.(*ast.CallExpr); ok {
			if o, r := u.gorillaRoute(p, inner, env); o != nil {
				for _, a := range call.Args {
					if m, ok := stringLit(a); ok {
						r.method = strings.ToUpper(m)
						o.routes = append(o.routes, r)
					}
				}
			}
			return nil
		}
	}
	o := u.eval(p, recvExpr, env)
	if o == nil {
		args := make([]*goObj, len(call.Args))
		handed := false
		for i, a := range call.Args {
			args[i] = u.eval(p, a, env)
			handed = handed || args[i] != nil
		}
		if handed {
			// h.register(api.Group("/orders")): a method of a type of the
			// unit handed routers declares its routes on them.
			return u.callMethod(p, recvExpr, name, call, args)
		}
		return nil
	}
	line := p.fset.Position(call.Pos()).Line
	file := p.fset.Position(call.Pos()).Filename
	switch {
	case goMethodFuncs[strings.ToLower(name)] != "" && len(call.Args) >= 2:
		r := goRoute{method: goMethodFuncs[strings.ToLower(name)], file: file, line: line}
		if s, ok := u.str(p, call.Args[0]); ok {
			r.path = s
		} else {
			r.dynamic = "the path is computed at run time"
		}
		o.routes = append(o.routes, r)
	case name == "HandleFunc" || name == "Handle" || name == "Method" || name == "MethodFunc":
		u.handle(p, o, call, env)
	case name == "Route" && len(call.Args) == 2:
		// chi: r.Route("/v2", func(r chi.Router) { … })
		child := u.newObj(false)
		u.mount(p, o, child, call.Args[0], file, line)
		u.walkLit(p, call.Args[1], child, env)
	case name == "Group" && len(call.Args) >= 1:
		if lit, ok := call.Args[0].(*ast.FuncLit); ok {
			// chi: r.Group(func(r chi.Router) { … }): same prefix.
			child := u.newObj(false)
			o.mounts = append(o.mounts, goMount{prefix: "/", target: child, file: file, line: line})
			child.mounted = true
			u.walkLit(p, lit, child, env)
			return child
		}
		// gin/echo: g := r.Group("/v2", mw…)
		child := u.newObj(false)
		u.mount(p, o, child, call.Args[0], file, line)
		return child
	case name == "Mount" && len(call.Args) == 2:
		// chi: r.Mount("/v2", ordersRouter())
		sub := u.eval(p, call.Args[1], env)
		if sub == nil {
			o.mounts = append(o.mounts, goMount{prefix: u.strOr(p, call.Args[0]), unknown: "a handler built elsewhere", file: file, line: line})
			return nil
		}
		delete(u.roots, sub)
		u.mount(p, o, sub, call.Args[0], file, line)
	case name == "PathPrefix" && len(call.Args) == 1:
		// gorilla: r.PathPrefix("/v2").Subrouter()
		child := u.newObj(false)
		u.mount(p, o, child, call.Args[0], file, line)
		return child
	case name == "Subrouter" || name == "StrictSlash" || name == "Use" || name == "With":
		return o
	}
	return nil
}

// handle reads Handle/HandleFunc: a ServeMux pattern "[METHOD ][HOST]/path"
// (chi and gorilla take a plain path), and a handler that is another router
// (http.StripPrefix("/api", sub), or sub itself) mounted there.
func (u *goUnit) handle(p *goPkg, o *goObj, call *ast.CallExpr, env map[string]*goObj) {
	pos := p.fset.Position(call.Pos())
	args := call.Args
	method := "ALL"
	_, _, name := selName(call.Fun)
	if (name == "Method" || name == "MethodFunc") && len(args) == 3 {
		// chi: r.Method("GET", "/x", h)
		if m, ok := u.str(p, args[0]); ok {
			method = strings.ToUpper(m)
		}
		args = args[1:]
	}
	if len(args) < 2 {
		return
	}
	pat, ok := u.str(p, args[0])
	if !ok {
		o.routes = append(o.routes, goRoute{method: method, dynamic: "the pattern is computed at run time", file: pos.Filename, line: pos.Line})
		return
	}
	pth := pat
	if sp := strings.IndexAny(pat, " \t"); sp > 0 && method == "ALL" {
		method, pth = strings.ToUpper(pat[:sp]), strings.TrimSpace(pat[sp+1:])
	}
	if slash := strings.Index(pth, "/"); slash > 0 {
		pth = pth[slash:] // drop a host
	}
	if !strings.HasPrefix(pth, "/") {
		return
	}
	// The handler may be a router: mounted at the pattern.
	h := args[1]
	strip := ""
	if c, ok := h.(*ast.CallExpr); ok {
		if _, pkg, n := selName(c.Fun); pkg == "http" && n == "StripPrefix" && len(c.Args) == 2 {
			strip, _ = u.str(p, c.Args[0])
			h = c.Args[1]
		}
	}
	if sub := u.eval(p, h, env); sub != nil {
		delete(u.roots, sub)
		// Without StripPrefix the sub-router sees the whole path, so its
		// patterns already carry the prefix.
		mountAt := "/"
		if strip != "" {
			mountAt = strip
		}
		o.mounts = append(o.mounts, goMount{prefix: mountAt, target: sub, file: pos.Filename, line: pos.Line})
		sub.mounted = true
		return
	}
	o.routes = append(o.routes, goRoute{method: method, path: pth, file: pos.Filename, line: pos.Line})
}

// gorillaRoute reads r.HandleFunc("/x", h) under .Methods(…).
func (u *goUnit) gorillaRoute(p *goPkg, call *ast.CallExpr, env map[string]*goObj) (*goObj, goRoute) {
	recv, _, name := selName(call.Fun)
	if recv == nil || name != "HandleFunc" && name != "Handle" && name != "Path" || len(call.Args) == 0 {
		return nil, goRoute{}
	}
	o := u.eval(p, recv, env)
	if o == nil {
		return nil, goRoute{}
	}
	pos := p.fset.Position(call.Pos())
	r := goRoute{file: pos.Filename, line: pos.Line}
	if s, ok := u.str(p, call.Args[0]); ok {
		r.path = s
	} else {
		r.dynamic = "the path is computed at run time"
	}
	return o, r
}

func (u *goUnit) mount(p *goPkg, parent, child *goObj, prefix ast.Expr, file string, line int) {
	mt := goMount{target: child, file: file, line: line}
	if s, ok := u.str(p, prefix); ok {
		mt.prefix = s
	} else {
		mt.dynamic = "the prefix is computed at run time"
	}
	child.mounted = true
	parent.mounts = append(parent.mounts, mt)
}

// walkLit walks a func literal whose first parameter is the router child.
func (u *goUnit) walkLit(p *goPkg, e ast.Expr, child *goObj, outer map[string]*goObj) {
	lit, ok := e.(*ast.FuncLit)
	if !ok || lit.Type.Params == nil || len(lit.Type.Params.List) == 0 || len(lit.Type.Params.List[0].Names) == 0 {
		return
	}
	env := map[string]*goObj{}
	for k, v := range outer {
		env[k] = v
	}
	env[lit.Type.Params.List[0].Names[0].Name] = child
	u.walkBlock(p, lit.Body, env)
}

// callFunc walks a function of the unit with the routers its arguments
// carry bound to its parameters; it returns the router it returns.
func (u *goUnit) callFunc(p *goPkg, fn *ast.FuncDecl, call *ast.CallExpr, env map[string]*goObj) *goObj {
	if fn == nil || fn.Type.Params == nil {
		return nil
	}
	inner := map[string]*goObj{}
	key := p.dir + "." + fn.Name.Name
	i := 0
	for _, field := range fn.Type.Params.List {
		for _, n := range field.Names {
			if i < len(call.Args) {
				if o := u.eval(p, call.Args[i], env); o != nil {
					inner[n.Name] = o
					key += "/" + strconv.Itoa(indexOf(u.objs, o))
				}
			}
			i++
		}
	}
	if len(inner) == 0 && len(fn.Type.Params.List) > 0 {
		return nil
	}
	return u.walkFunc(p, fn, inner, key)
}

// callMethod walks the method name of the receiver's type with the
// routers the call hands it (args, by position). The method is found by
// the receiver's type when the unit shows it (h := &orderHandler{},
// h := newOrderHandler(), a parameter or field of that type) or by its
// name when one type of the unit has it; when several do and the type is
// not known, the routers the call hands get an unresolved mount each,
// and none of those methods is read as if it served elsewhere.
func (u *goUnit) callMethod(p *goPkg, recv ast.Expr, name string, call *ast.CallExpr, args []*goObj) *goObj {
	typ := u.typeOf(p, recv)
	var cands []*ast.FuncDecl
	var cpkg *goPkg
	for _, q := range u.pkgList(p) {
		for _, m := range q.methods {
			if m.Name.Name != name || typ != "" && recvTypeName(m) != typ {
				continue
			}
			if cpkg == nil || cpkg == q {
				cands, cpkg = append(cands, m), q
			}
		}
	}
	pos := p.fset.Position(call.Pos())
	if len(cands) != 1 {
		if len(cands) > 1 {
			var types []string
			for _, m := range cands {
				u.reached[m] = true
				types = append(types, recvTypeName(m))
			}
			for _, o := range args {
				if o != nil {
					o.mounts = append(o.mounts, goMount{prefix: "/", file: pos.Filename, line: pos.Line,
						unknown: "routes of method " + name + " of one of " + strings.Join(types, ", ") + " (the receiver's type is not known)"})
				}
			}
		}
		return nil
	}
	m := cands[0]
	u.reached[m] = true
	inner := map[string]*goObj{}
	key := cpkg.dir + "." + recvTypeName(m) + "." + name
	i := 0
	for _, field := range m.Type.Params.List {
		for _, n := range field.Names {
			if i < len(args) && args[i] != nil {
				inner[n.Name] = args[i]
				key += "/" + strconv.Itoa(indexOf(u.objs, args[i]))
			}
			i++
		}
	}
	return u.walkFunc(cpkg, m, inner, key)
}

// pkgList is p first, then the unit's other packages in directory order.
func (u *goUnit) pkgList(p *goPkg) []*goPkg {
	out := []*goPkg{p}
	var dirs []string
	for d := range u.pkgs {
		if d != p.dir {
			dirs = append(dirs, d)
		}
	}
	sort.Strings(dirs)
	for _, d := range dirs {
		out = append(out, u.pkgs[d])
	}
	return out
}

// recvTypeName is the name of a method's receiver type (orderHandler for
// func (h *orderHandler) …).
func recvTypeName(m *ast.FuncDecl) string {
	if m.Recv == nil || len(m.Recv.List) == 0 {
		return ""
	}
	return typeName(m.Recv.List[0].Type)
}

// typeName is the name of a type expression: T, *T, pkg.T, T[X].
func typeName(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.Ident:
		return t.Name
	case *ast.StarExpr:
		return typeName(t.X)
	case *ast.SelectorExpr:
		return t.Sel.Name
	case *ast.IndexExpr:
		return typeName(t.X)
	case *ast.IndexListExpr:
		return typeName(t.X)
	}
	return ""
}

// typeOf is the type of the unit's an expression holds, when the source
// shows it: a composite literal (&T{}), a variable assigned one, a call of
// a function of the unit that returns one (newT(), pkg.NewT()).
func (u *goUnit) typeOf(p *goPkg, e ast.Expr) string {
	switch e := e.(type) {
	case *ast.UnaryExpr:
		return u.typeOf(p, e.X)
	case *ast.ParenExpr:
		return u.typeOf(p, e.X)
	case *ast.CompositeLit:
		return typeName(e.Type)
	case *ast.Ident:
		return p.varTypes[e.Name]
	case *ast.CallExpr:
		var fn *ast.FuncDecl
		switch f := e.Fun.(type) {
		case *ast.Ident:
			fn = p.funcs[f.Name]
		case *ast.SelectorExpr:
			if id, ok := f.X.(*ast.Ident); ok {
				if q := u.pkgNamed(p, id.Name); q != nil {
					fn = q.funcs[f.Sel.Name]
				}
			}
		}
		if fn != nil && fn.Type.Results != nil && len(fn.Type.Results.List) > 0 {
			return typeName(fn.Type.Results.List[0].Type)
		}
	}
	return ""
}

func indexOf(objs []*goObj, o *goObj) int {
	for i, x := range objs {
		if x == o {
			return i
		}
	}
	return -1
}

// pkgNamed finds the unit's package a file of p imports under name.
func (u *goUnit) pkgNamed(p *goPkg, name string) *goPkg {
	for _, f := range p.files {
		for _, imp := range f.Imports {
			ip, _ := strconv.Unquote(imp.Path.Value)
			local := path.Base(ip)
			if imp.Name != nil {
				local = imp.Name.Name
			}
			if local != name {
				continue
			}
			// The import path ends with the package's directory.
			for dir, q := range u.pkgs {
				if dir == ip || strings.HasSuffix(ip, "/"+path.Base(dir)) && strings.HasSuffix(ip, strings.TrimPrefix(dir, dirRoot(dir))) {
					return q
				}
			}
		}
	}
	return nil
}

// dirRoot is the unit directory part of a package directory (units/<unit>).
func dirRoot(dir string) string {
	parts := strings.SplitN(dir, "/", 3)
	if len(parts) >= 2 {
		return parts[0] + "/" + parts[1] + "/"
	}
	return ""
}

// str is the value of a string the code spells out: a literal, a constant
// of the package, or + of those.
func (u *goUnit) str(p *goPkg, e ast.Expr) (string, bool) {
	switch e := e.(type) {
	case *ast.BasicLit:
		return stringLit(e)
	case *ast.Ident:
		s, ok := p.consts[e.Name]
		return s, ok
	case *ast.BinaryExpr:
		if e.Op == token.ADD {
			a, ok1 := u.str(p, e.X)
			b, ok2 := u.str(p, e.Y)
			return a + b, ok1 && ok2
		}
	case *ast.ParenExpr:
		return u.str(p, e.X)
	}
	return "", false
}

func (u *goUnit) strOr(p *goPkg, e ast.Expr) string {
	s, _ := u.str(p, e)
	return s
}

func stringLit(e ast.Expr) (string, bool) {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(lit.Value)
	return s, err == nil
}

// resolve returns every route reachable from a root with its full path.
func (u *goUnit) resolve() []implRoute {
	var out []implRoute
	u.walkRoutes(func(r goRoute, prefix, why string) {
		if why == "" && r.dynamic == "" {
			out = append(out, implRoute{Method: r.method, Path: joinRoute(prefix, r.path), File: r.file, Line: r.line})
		}
	}, nil)
	return out
}

func (u *goUnit) unresolved() []UnresolvedRoute {
	var out []UnresolvedRoute
	u.walkRoutes(func(r goRoute, prefix, why string) {
		if why == "" {
			why = r.dynamic
		}
		if why != "" {
			out = append(out, UnresolvedRoute{Method: r.method, Path: unknownPath(prefix, r.path), File: r.file, Line: r.line, Reason: why})
		}
	}, func(mt goMount, prefix string) {
		out = append(out, UnresolvedRoute{Method: "ALL", Path: joinRoute(prefix, mt.prefix) + "/*", File: mt.file, Line: mt.line,
			Reason: "mounts " + mt.unknown + ": its routes cannot be read statically"})
	})
	return out
}

func (u *goUnit) walkRoutes(route func(r goRoute, prefix, why string), unknown func(mt goMount, prefix string)) {
	var walk func(o *goObj, prefix, why string, depth int)
	walk = func(o *goObj, prefix, why string, depth int) {
		if depth > 20 {
			return
		}
		prefix = joinRoute(prefix, o.prefix)
		for _, r := range o.routes {
			route(r, prefix, why)
		}
		for _, mt := range o.mounts {
			w := why
			if w == "" {
				w = mt.dynamic
			}
			if mt.target == nil {
				if unknown != nil {
					unknown(mt, prefix)
				}
				continue
			}
			next := joinRoute(prefix, mt.prefix)
			if mt.dynamic != "" {
				next = joinRoute(prefix, "*")
			}
			walk(mt.target, next, w, depth+1)
		}
	}
	for _, o := range u.objs {
		if u.roots[o] && !o.mounted {
			walk(o, "", "", 0)
		}
	}
}
