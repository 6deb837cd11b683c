package stdioclient

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"testing"
	"time"
)

// TestMain doubles as a fake server when TOOLHOST_FAKE_SERVER is set: it
// answers nothing and reports every line it reads as a "seen" notification.
func TestMain(m *testing.M) {
	if os.Getenv("TOOLHOST_FAKE_SERVER") == "1" {
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "seen", "params": json.RawMessage(sc.Bytes())})
			fmt.Println(string(b))
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestCallCancelled: a Call whose context ends tells the server
// (notifications/cancelled with its id) and forgets the pending request.
func TestCallCancelled(t *testing.T) {
	t.Parallel()
	c, err := Start(os.Args[0], []string{"-test.run=^$"}, append(os.Environ(), "TOOLHOST_FAKE_SERVER=1"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(10 * time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { _, err := c.Call(ctx, "slow", nil); errc <- err }()
	waitSeen(t, c, "slow")
	cancel()
	if err := <-errc; err != context.Canceled {
		t.Fatalf("want context.Canceled, got %v", err)
	}
	m := waitSeen(t, c, "notifications/cancelled")
	var p struct {
		Params struct {
			RequestID json.RawMessage `json:"requestId"`
		} `json:"params"`
	}
	_ = json.Unmarshal(m, &p)
	if string(p.Params.RequestID) != "1" {
		t.Fatalf("cancel names request %s, want 1: %s", p.Params.RequestID, m)
	}
	c.mu.Lock()
	n := len(c.pending)
	c.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d requests still pending after the cancel", n)
	}
}

// waitSeen returns the first line the fake server saw with this method.
// Notifications() is never closed, so the wait is bounded by a timer.
func waitSeen(t *testing.T, c *Client, method string) json.RawMessage {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case m := <-c.Notifications():
			var line struct {
				Method string `json:"method"`
			}
			_ = json.Unmarshal(m.Params, &line)
			if line.Method == method {
				return m.Params
			}
		case <-deadline:
			t.Fatalf("the server never saw %s", method)
		}
	}
}
