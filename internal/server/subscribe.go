package server

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/toolhost/toolhost/internal/rpc"
)

// subscriptions are the clients told when the tool list changes: 2025
// sessions (stdio, or an HTTP session's GET stream) once they initialized
// or listed tools, and the 2026-07-28 subscriptions/listen streams that
// asked for toolsListChanged.
type subscriptions struct {
	mu         sync.Mutex
	negotiated map[rpc.Peer]struct{}
	listen     map[*listener]struct{}
	// closing is closed when shutdown starts: every listen stream ends
	// with its graceful result.
	closing   chan struct{}
	closeOnce sync.Once
}

// listener is one subscriptions/listen request.
type listener struct {
	peer rpc.Peer
	id   json.RawMessage
}

func (s *subscriptions) init() {
	s.negotiated = map[rpc.Peer]struct{}{}
	s.listen = map[*listener]struct{}{}
	s.closing = make(chan struct{})
}

func (s *subscriptions) addNegotiated(p rpc.Peer) {
	s.mu.Lock()
	s.negotiated[p] = struct{}{}
	s.mu.Unlock()
}

func (s *subscriptions) removeNegotiated(p rpc.Peer) {
	s.mu.Lock()
	delete(s.negotiated, p)
	s.mu.Unlock()
}

func (s *subscriptions) close() { s.closeOnce.Do(func() { close(s.closing) }) }

func (s *subscriptions) toolsChanged(log zerolog.Logger) {
	s.mu.Lock()
	negotiated := make([]rpc.Peer, 0, len(s.negotiated))
	for p := range s.negotiated {
		negotiated = append(negotiated, p)
	}
	listen := make([]*listener, 0, len(s.listen))
	for l := range s.listen {
		listen = append(listen, l)
	}
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, p := range negotiated {
		if err := p.Notify(ctx, "notifications/tools/list_changed", nil); err != nil {
			log.Debug().Err(err).Msg("tools/list_changed not delivered")
		}
	}
	for _, l := range listen {
		if err := l.peer.Notify(ctx, "notifications/tools/list_changed", subscriptionMeta(l.id)); err != nil {
			log.Debug().Err(err).Msg("tools/list_changed not delivered to a subscription")
		}
	}
}

func subscriptionMeta(id json.RawMessage) map[string]any {
	return map[string]any{"_meta": map[string]any{MetaSubscriptionID: id}}
}

// listen serves subscriptions/listen: the acknowledgement with the filter
// toolhost honours (only toolsListChanged: it has no prompts or
// resources), then the stream stays open until the client cancels it or
// shutdown ends it with a result.
func (s *Server) listen(ctx context.Context, peer rpc.Peer, id json.RawMessage, params json.RawMessage) (any, error) {
	var p struct {
		Notifications struct {
			ToolsListChanged bool `json:"toolsListChanged"`
		} `json:"notifications"`
	}
	if err := json.Unmarshal(orEmpty(params), &p); err != nil {
		return nil, rpc.NewError(rpc.CodeInvalidParams, "subscriptions/listen: "+TypeError("params", err))
	}
	ack := map[string]any{}
	if p.Notifications.ToolsListChanged {
		ack["toolsListChanged"] = true
	}
	ackParams := subscriptionMeta(id)
	ackParams["notifications"] = ack
	if err := peer.Notify(ctx, "notifications/subscriptions/acknowledged", ackParams); err != nil {
		return nil, err
	}
	l := &listener{peer: peer, id: id}
	if p.Notifications.ToolsListChanged {
		s.subs.mu.Lock()
		s.subs.listen[l] = struct{}{}
		s.subs.mu.Unlock()
		defer func() {
			s.subs.mu.Lock()
			delete(s.subs.listen, l)
			s.subs.mu.Unlock()
		}()
	}
	select {
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	case <-s.subs.closing:
	}
	return map[string]any{"resultType": "complete",
		"_meta": map[string]any{MetaSubscriptionID: id, MetaServerInfo: s.serverInfo}}, nil
}
