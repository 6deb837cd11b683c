package triage

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"strings"
)

// goMethodFuncs are router methods named after an HTTP method (chi, echo,
// gin, gorilla-style wrappers): r.Get("/x", h), e.GET("/x", h).
var goMethodFuncs = map[string]string{
	"get": "GET", "post": "POST", "put": "PUT", "patch": "PATCH", "delete": "DELETE",
	"head": "HEAD", "options": "OPTIONS", "any": "ALL", "handle": "", "handlefunc": "",
}

// goRoutes parses one Go file with go/parser and returns its routes:
//
//	mux.HandleFunc("GET /items/{id}", h)       (Go 1.22 ServeMux pattern)
//	http.Handle("/health", h)                  (any method)
//	r.HandleFunc("/items", h).Methods("POST")  (gorilla/mux)
//	r.Get("/items", h), e.GET("/items", h)     (chi, echo, gin)
//
// Only string literals count; a route in a comment or built at run time is
// not seen, which is what a reader of the code would conclude too.
func goRoutes(file string, src []byte) ([]implRoute, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	var out []implRoute
	// Calls wrapped by .Methods(…) are handled at the outer call, which
	// ast.Inspect visits first (pre-order).
	wrapped := map[*ast.CallExpr]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		if sel.Sel.Name == "Methods" {
			if inner, ok := sel.X.(*ast.CallExpr); ok {
				if p, line, ok := goRouteCall(fset, inner); ok {
					wrapped[inner] = true
					for _, a := range call.Args {
						if m, ok := stringLit(a); ok {
							out = append(out, implRoute{Method: strings.ToUpper(m), Path: p, File: file, Line: line})
						}
					}
				}
			}
			return true
		}
		if wrapped[call] {
			return true
		}
		m, known := goMethodFuncs[strings.ToLower(sel.Sel.Name)]
		if !known || len(call.Args) < 2 {
			return true
		}
		pat, ok := stringLit(call.Args[0])
		if !ok {
			return true
		}
		line := fset.Position(call.Args[0].Pos()).Line
		method, p := m, pat
		if m == "" { // Handle/HandleFunc: "[METHOD ][HOST]/path"
			method = "ALL"
			if sp := strings.IndexAny(pat, " \t"); sp > 0 {
				method, p = strings.ToUpper(pat[:sp]), strings.TrimSpace(pat[sp+1:])
			}
			if slash := strings.Index(p, "/"); slash > 0 {
				p = p[slash:] // drop a host
			}
		}
		if strings.HasPrefix(p, "/") {
			out = append(out, implRoute{Method: method, Path: p, File: file, Line: line})
		}
		return true
	})
	return out, nil
}

// goRouteCall reads the path of a HandleFunc/Handle/Path call.
func goRouteCall(fset *token.FileSet, call *ast.CallExpr) (string, int, bool) {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok || len(call.Args) == 0 {
		return "", 0, false
	}
	switch sel.Sel.Name {
	case "HandleFunc", "Handle", "Path":
	default:
		return "", 0, false
	}
	p, ok := stringLit(call.Args[0])
	if !ok || !strings.HasPrefix(p, "/") {
		return "", 0, false
	}
	return p, fset.Position(call.Args[0].Pos()).Line, true
}

func stringLit(e ast.Expr) (string, bool) {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(lit.Value)
	return s, err == nil
}
