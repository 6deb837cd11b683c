package sandbox_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/toolhost/toolhost/internal/sandbox"
)

// A Sandbox is one agent's door into a project: writes only inside its
// allow-list, reads and listings anywhere inside the project, every name
// project-relative, and a symlink followed only while it stays inside.
func Example() {
	dir, err := os.MkdirTemp("", "sandbox-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	door, err := sandbox.New(dir, "devloop-pm", []string{"prd/**"})
	if err != nil {
		panic(err)
	}
	defer door.Close()

	fmt.Println(door.WriteFile("prd/goals.html", []byte("<p>goals</p>")))
	err = door.WriteFile("units/api/main.go", []byte("package main"))
	var refused *sandbox.Error
	fmt.Println(errors.As(err, &refused), err)

	// A symlink that leaves the project is refused on every read.
	_ = os.Symlink(os.TempDir(), filepath.Join(dir, "prd", "tmp"))
	_, err = door.ReadDir("prd/tmp")
	fmt.Println(errors.As(err, &refused), refused.Detail)

	_ = door.Walk("prd", func(rel string, d fs.DirEntry, err error) error {
		fmt.Println(rel, d.Type()&fs.ModeSymlink != 0)
		return err
	})
	// Output:
	// <nil>
	// true Sandbox violation: devloop-pm tried to write units/api/main.go (allowed: prd/**)
	// true it resolves outside the project dir through a symlink
	// prd false
	// prd/goals.html false
	// prd/tmp true
}
