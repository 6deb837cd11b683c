package upstream

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/toolhost/toolhost/internal/policy"
	"github.com/toolhost/toolhost/internal/upstream/upstreamtest"
)

// Short names for the fixtures used throughout this package's tests.
var (
	fakeMCP       = upstreamtest.FakeMCP
	freeAddr      = upstreamtest.FreeAddr
	startHTTPFake = upstreamtest.StartHTTPFake
	writeConfigs  = upstreamtest.WriteConfigs
	writePolicy   = upstreamtest.WritePolicy
)

// fakeFile is a file the fake may write (FAKEMCP_CALLS_FILE …): in
// dir/fake/, which fakeWrites grants it.
func fakeFile(t testing.TB, dir, name string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, "fake"), 0o755); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "fake", name)
}

// fakeWrites is the sandbox of a fake that writes the files of fakeFile.
func fakeWrites(dir string) policy.UpstreamSandbox {
	return policy.UpstreamSandbox{Write: []string{filepath.Join(dir, "fake") + "/**"}}
}
