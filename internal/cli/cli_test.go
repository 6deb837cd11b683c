package cli

import (
	"os"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// The CLI is tested as a user runs it: testscript files under
// testdata/script run the toolhost command (this package's Main, installed
// as a program by testscript) and check stdout, stderr and exit codes.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"toolhost": func() { os.Exit(Main()) },
	})
}

func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Setup: func(env *testscript.Env) error {
			env.Setenv("TOOLHOST_AGENT", "")
			env.Setenv("TOOLHOST_PROJECT_DIR", "")
			return nil
		},
	})
}
