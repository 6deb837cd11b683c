package all

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// TestToolsReachTheProjectOnlyThroughTheDoor: no tool package reads the
// project dir's absolute path from its call context (c.ProjectDir) or
// reads, lists or walks files with the os package: every read goes through
// the door (c.Files.ReadFile, ReadDir, Walk, Stat, RealDir), which keeps
// symlinks inside the project. The door's ProjectDir() method, for what
// must name the dir to the kernel, is a call and is allowed, and so is
// os.Stat, which stats what is handed to the kernel (a program found on
// PATH, the agent's working directory).
func TestToolsReachTheProjectOnlyThroughTheDoor(t *testing.T) {
	t.Parallel()
	forbidden := map[string]bool{"os.ReadDir": true, "os.ReadFile": true, "os.Open": true,
		"os.OpenFile": true, "filepath.WalkDir": true, "filepath.Walk": true, "filepath.EvalSymlinks": true}
	root := filepath.Join("..", "devloop")
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() && d.Name() == "testdata" {
			if err == nil {
				return filepath.SkipDir
			}
			return err
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			return err
		}
		called := map[ast.Expr]bool{}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if ok {
				called[call.Fun] = true
			}
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if sel.Sel.Name == "ProjectDir" && !called[sel] {
				t.Errorf("%s: reads %s.ProjectDir; reach the project through c.Files", fset.Position(sel.Pos()), exprName(sel.X))
			}
			if name := exprName(sel.X) + "." + sel.Sel.Name; forbidden[name] {
				t.Errorf("%s: %s on the project; use the door (c.Files.ReadFile, ReadDir, Walk, Stat, RealDir)", fset.Position(sel.Pos()), name)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func exprName(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.Ident:
		return x.Name
	case *ast.SelectorExpr:
		return exprName(x.X) + "." + x.Sel.Name
	}
	return "?"
}
