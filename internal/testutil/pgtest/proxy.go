package pgtest

import (
	"bytes"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
)

// Proxy stands between clients and a cluster, on a loopback port of its
// own, to make at will what a restart makes only by chance: a commit whose
// answer is lost (the statement reaches the server, which commits, and the
// reply never comes back), and a database that refuses every connection
// for exactly as long as a test needs.
type Proxy struct {
	c *Cluster
	l net.Listener

	mu    sync.Mutex
	conns map[*proxyConn]struct{}
	down  bool
	// lose is the armed LoseAnswerAfter: the markers still to be seen on
	// one connection, and the channel closed once its replies are dropped.
	lose     [][]byte
	loseDone chan struct{}
}

type proxyConn struct {
	client, server net.Conn
	mu             sync.Mutex
	// armed: the armed LoseAnswerAfter is this connection's; want is the
	// markers it still has to send before it is muted.
	armed bool
	want  [][]byte
	// muted: the server's replies are dropped.
	muted bool
	tail  []byte // the end of what it sent last, for a marker split in two
}

// Proxy starts a proxy to c, closed when t ends.
func (c *Cluster) Proxy(t testing.TB) *Proxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{c: c, l: l, conns: map[*proxyConn]struct{}{}}
	go p.accept()
	t.Cleanup(func() {
		_ = l.Close()
		p.Down()
	})
	return p
}

// URL is the address of database db through the proxy.
func (p *Proxy) URL(db string) string {
	return fmt.Sprintf("postgres://toolhost@%s/%s?sslmode=disable", p.l.Addr(), db)
}

// Down drops every connection and refuses new ones (closed as soon as they
// are accepted, before the server sees them) until Up.
func (p *Proxy) Down() {
	p.mu.Lock()
	p.down = true
	conns := p.conns
	p.conns = map[*proxyConn]struct{}{}
	p.mu.Unlock()
	for pc := range conns {
		pc.close()
	}
}

// Up lets connections through again.
func (p *Proxy) Up() {
	p.mu.Lock()
	p.down = false
	p.mu.Unlock()
}

// LoseAnswerAfter arms the proxy: the first connection whose client sends
// markers[0], then markers[1] … (in messages of its own or one), has every
// reply of the server dropped from the moment the last one is forwarded.
// For a statement that commits by itself its text is marker enough; for a
// transaction, a marker of its statements and then "commit". The channel
// is closed when the last marker has gone to the server.
func (p *Proxy) LoseAnswerAfter(markers ...string) <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lose = nil
	for _, m := range markers {
		p.lose = append(p.lose, []byte(m))
	}
	p.loseDone = make(chan struct{})
	return p.loseDone
}

func (p *Proxy) accept() {
	for {
		client, err := p.l.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		down := p.down
		p.mu.Unlock()
		if down {
			_ = client.Close()
			continue
		}
		server, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", p.c.Port()))
		if err != nil {
			_ = client.Close()
			continue
		}
		pc := &proxyConn{client: client, server: server}
		p.mu.Lock()
		p.conns[pc] = struct{}{}
		p.mu.Unlock()
		go p.toServer(pc)
		go pc.toClient()
	}
}

func (pc *proxyConn) close() {
	_ = pc.client.Close()
	_ = pc.server.Close()
}

// toServer forwards what the client sends, muting the connection once it
// has sent the armed markers.
func (p *Proxy) toServer(pc *proxyConn) {
	defer pc.close()
	buf := make([]byte, 64<<10)
	for {
		n, err := pc.client.Read(buf)
		if n > 0 {
			p.watch(pc, buf[:n])
			if _, werr := pc.server.Write(buf[:n]); werr != nil {
				return
			}
			pc.mu.Lock()
			muted := pc.muted
			pc.mu.Unlock()
			if muted {
				p.mu.Lock()
				if p.loseDone != nil {
					close(p.loseDone)
					p.loseDone = nil
				}
				p.mu.Unlock()
			}
		}
		if err != nil {
			return
		}
	}
}

// watch looks for the armed markers in what the client sends; the
// connection is muted before the chunk with the last one goes out, so not
// a byte of the server's answer to it reaches the client.
func (p *Proxy) watch(pc *proxyConn, chunk []byte) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if pc.muted {
		return
	}
	seen := append(pc.tail, chunk...)
	if !pc.armed {
		p.mu.Lock()
		if len(p.lose) > 0 && bytes.Contains(seen, p.lose[0]) {
			pc.armed, pc.want, p.lose = true, p.lose, nil
		}
		p.mu.Unlock()
	}
	for pc.armed && len(pc.want) > 0 {
		i := bytes.Index(seen, pc.want[0])
		if i < 0 {
			break
		}
		seen, pc.want = seen[i+len(pc.want[0]):], pc.want[1:]
	}
	pc.muted = pc.armed && len(pc.want) == 0
	const keep = 256
	pc.tail = append([]byte(nil), seen[max(0, len(seen)-keep):]...)
}

// toClient forwards the server's replies unless the connection is muted.
func (pc *proxyConn) toClient() {
	defer pc.close()
	buf := make([]byte, 64<<10)
	for {
		n, err := pc.server.Read(buf)
		pc.mu.Lock()
		muted := pc.muted
		pc.mu.Unlock()
		if n > 0 && !muted {
			if _, werr := pc.client.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// Route returns url (an address of the cluster, as URL and Shared give)
// through the proxy.
func (p *Proxy) Route(url string) string {
	return strings.Replace(url, fmt.Sprintf("127.0.0.1:%d", p.c.Port()), p.l.Addr().String(), 1)
}
