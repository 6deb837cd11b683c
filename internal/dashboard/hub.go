package dashboard

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
)

// message is one Server-Sent Event: a change of the state, numbered.
type message struct {
	id    uint64
	event string
	data  []byte
}

// Bounds of the hub: they keep the server's memory flat however long it
// runs and however many pages connect.
const (
	// replayMessages are kept for pages that reconnect (Last-Event-ID);
	// one that missed more gets a new snapshot.
	replayMessages = 2048
	// clientBuffer is how many messages may wait for a slow page; one that
	// falls further behind is disconnected, reconnects and catches up.
	clientBuffer = 1024
	// maxClients bounds the event streams open at once.
	maxClients = 64
)

// hub numbers the changes, keeps the newest for replay and fans them out
// to the connected pages. Its lock also orders a page's snapshot before
// every change sent after it, so no change falls between the two.
type hub struct {
	mu      sync.Mutex
	epoch   string // this process's stream: ids of another one mean a new snapshot
	seq     uint64
	ring    []message // the last replayMessages, oldest first, circular
	head    int
	clients map[*client]struct{}
}

type client struct {
	ch     chan message
	closed bool
}

func newHub(epoch string) *hub {
	return &hub{epoch: epoch, clients: map[*client]struct{}{}}
}

// publish sends a change to every page; the caller holds h.mu.
func (h *hub) publishLocked(event string, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		data, _ = json.Marshal(map[string]string{"error": err.Error()})
	}
	h.seq++
	m := message{id: h.seq, event: event, data: data}
	if len(h.ring) < replayMessages {
		h.ring = append(h.ring, m)
	} else {
		h.ring[h.head] = m
		h.head = (h.head + 1) % replayMessages
	}
	for c := range h.clients {
		select {
		case c.ch <- m:
		default:
			h.dropLocked(c)
		}
	}
}

func (h *hub) dropLocked(c *client) {
	if !c.closed {
		c.closed = true
		close(c.ch)
	}
	delete(h.clients, c)
}

// id is the SSE id of message seq.
func (h *hub) id(seq uint64) string { return h.epoch + "-" + strconv.FormatUint(seq, 10) }

// since returns the messages after the one named by lastID (a
// Last-Event-ID), or ok false when they cannot all be replayed: another
// process's id, or one older than the ring. The caller holds h.mu.
func (h *hub) sinceLocked(lastID string) (msgs []message, ok bool) {
	epoch, n, found := strings.Cut(lastID, "-")
	if !found || epoch != h.epoch {
		return nil, false
	}
	seq, err := strconv.ParseUint(n, 10, 64)
	if err != nil || seq > h.seq {
		return nil, false
	}
	if seq == h.seq {
		return nil, true
	}
	oldest := h.seq - uint64(len(h.ring)) + 1
	if seq+1 < oldest {
		return nil, false
	}
	for i := range h.ring {
		m := h.ring[(h.head+i)%len(h.ring)]
		if m.id > seq {
			msgs = append(msgs, m)
		}
	}
	return msgs, true
}

// subscribe registers a page; the caller holds h.mu. It fails when
// maxClients are connected.
func (h *hub) subscribeLocked() (*client, error) {
	if len(h.clients) >= maxClients {
		return nil, fmt.Errorf("%d dashboard pages are connected already; close one", maxClients)
	}
	c := &client{ch: make(chan message, clientBuffer)}
	h.clients[c] = struct{}{}
	return c, nil
}

func (h *hub) unsubscribe(c *client) {
	h.mu.Lock()
	h.dropLocked(c)
	h.mu.Unlock()
}
