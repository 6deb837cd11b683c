package filestore_test

import (
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/store"
	"github.com/toolhost/toolhost/internal/store/filestore"
	"github.com/toolhost/toolhost/internal/store/storetest"
)

type project struct{ dir string }

func (p project) Open(t testing.TB) store.Store {
	t.Helper()
	s, err := filestore.Open(p.dir, filestore.Options{ProjectID: "p1", Poll: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestContract: the file store passes the store contract.
func TestContract(t *testing.T) {
	storetest.Run(t, func(t testing.TB) storetest.Project { return project{dir: t.TempDir()} })
}
