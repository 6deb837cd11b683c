package dashboard

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/toolhost/toolhost/internal/agents"
	"github.com/toolhost/toolhost/internal/policy"
	"github.com/toolhost/toolhost/internal/registry"
	"github.com/toolhost/toolhost/internal/sandbox"
	"github.com/toolhost/toolhost/internal/session"
	"github.com/toolhost/toolhost/internal/store"
	"github.com/toolhost/toolhost/internal/store/filestore"
	"github.com/toolhost/toolhost/internal/tools/all"
	"github.com/toolhost/toolhost/internal/webguard"
)

// Options configure a dashboard.
type Options struct {
	// ProjectDir is the project shown; it must exist (its documents are
	// shown from it whatever the store).
	ProjectDir string
	// Store is the project's shared state; nil opens the project dir's
	// files. A store given here is the caller's to close. It should take
	// the confirmations' decisions only (filestore.DecisionsOnly).
	Store store.Store
	// AgentsFile and PolicyFile are those the project's servers use
	// (empty: the embedded defaults).
	AgentsFile string
	PolicyFile string
	// Codes is where the one-time sign-in codes are printed: the terminal
	// of the human who started the dashboard, and nowhere else. A decision
	// needs a browser that entered one.
	Codes io.Writer
	Log   zerolog.Logger
	// Registry lists the tools (default: the built-in tool set).
	Registry *registry.Registry
	// Poll is how often the project's documents are checked for changes
	// (default 250ms); a file store follows its logs at the same pace.
	Poll time.Duration
}

// Dashboard serves one project's dashboard.
type Dashboard struct {
	o     Options
	dir   string
	root  *os.Root
	read  *sandbox.Sandbox // reads only: its allow-list is empty
	store store.Store
	// ownStore: the dashboard opened store and closes it.
	ownStore bool
	agents   *agents.Set
	policy   *policy.Policy
	reg      *registry.Registry
	guard    *webguard.Guard
	key      []byte // signs the pages' tokens and the documents' key
	auth     *signIn
	hub      *hub
	ready    chan struct{}
	// refresh asks the pollers to look now (an event said a file changed).
	refresh chan string

	// The state below is guarded by hub.mu.
	st state

	closeOnce sync.Once
}

// New opens a project's dashboard; Serve starts it.
func New(o Options) (*Dashboard, error) {
	if o.Poll <= 0 {
		o.Poll = 250 * time.Millisecond
	}
	abs, err := filepath.Abs(o.ProjectDir)
	if err != nil {
		return nil, err
	}
	if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("project dir %s is not a directory", o.ProjectDir)
	}
	set, err := agents.Load(o.AgentsFile)
	if err != nil {
		return nil, err
	}
	reg := o.Registry
	if reg == nil {
		reg = all.Registry()
	}
	root, err := os.OpenRoot(abs)
	if err != nil {
		return nil, err
	}
	read, err := sandbox.New(abs, "dashboard", nil)
	if err != nil {
		root.Close()
		return nil, err
	}
	// The one thing the dashboard writes is a decision, through the store
	// `toolhost approve` uses; the file store it opens cannot write
	// anything else.
	st, own := o.Store, false
	if st == nil {
		st, err = filestore.Open(abs, filestore.Options{Access: filestore.DecisionsOnly, Poll: o.Poll})
		if err != nil {
			root.Close()
			read.Close()
			return nil, err
		}
		own = true
	}
	key := make([]byte, 32)
	epoch := make([]byte, 6)
	_, _ = rand.Read(key)
	_, _ = rand.Read(epoch)
	d := &Dashboard{
		o: o, dir: abs, root: root, read: read, store: st, ownStore: own, agents: set, reg: reg,
		policy:  policy.LoadWith(o.PolicyFile, o.Log, session.RuleOptions(reg, abs)),
		guard:   webguard.New(nil),
		key:     key,
		auth:    newSignIn(o.Codes, key),
		hub:     newHub(hex.EncodeToString(epoch)),
		ready:   make(chan struct{}),
		refresh: make(chan string, 64),
	}
	d.st.init(d)
	return d, nil
}

// Close releases the project's files.
func (d *Dashboard) Close() error {
	d.closeOnce.Do(func() {
		d.read.Close()
		if d.ownStore {
			_ = d.store.Close()
		}
		d.root.Close()
	})
	return nil
}

// URL is the address to open for a listener. It carries no secret: the
// sign-in code is typed into the page.
func (d *Dashboard) URL(addr net.Addr) string { return "http://" + addr.String() + "/" }

// Serve loads the current state, then serves on ln and follows the
// project until ctx ends. The page is served at once; the event stream
// waits (bounded) for the state to be loaded.
func (d *Dashboard) Serve(ctx context.Context, ln net.Listener) error {
	d.guard.Bind(ln.Addr())
	d.auth.mu.Lock()
	d.auth.announce("")
	d.auth.mu.Unlock()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		d.run(ctx)
	}()
	hs := &http.Server{Handler: d.Handler(), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	var err error
	select {
	case err = <-errc:
	case <-ctx.Done():
		sctx, scancel := context.WithTimeout(context.Background(), 2*time.Second)
		if hs.Shutdown(sctx) != nil {
			_ = hs.Close()
		}
		scancel()
		if e := <-errc; !errors.Is(e, http.ErrServerClosed) {
			err = e
		}
	}
	cancel()
	wg.Wait()
	return err
}
