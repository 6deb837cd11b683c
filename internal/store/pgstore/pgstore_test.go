package pgstore_test

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/store"
	"github.com/toolhost/toolhost/internal/store/pgstore"
	"github.com/toolhost/toolhost/internal/store/storetest"
	"github.com/toolhost/toolhost/internal/testutil/pgtest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	pgtest.StopShared()
	os.Exit(code)
}

type project struct {
	url, pid string
}

var projects atomic.Int64

func (p project) Open(t testing.TB) store.Store {
	t.Helper()
	s, err := pgstore.Open(context.Background(), p.url, pgstore.Options{ProjectID: p.pid, Poll: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestContract: the database store passes the store contract. The
// projects share one database, each its own tenant (pid), as projects do.
func TestContract(t *testing.T) {
	_, url := pgtest.Shared(t)
	storetest.Run(t, func(t testing.TB) storetest.Project {
		return project{url: url, pid: fmt.Sprintf("proj-%d", projects.Add(1))}
	})
}
