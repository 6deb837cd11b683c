package demo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// The demo's unit under test: a small todo API that implements most of the
// demo contract (assets/todo-contract.json). It runs as the hidden
// `toolhost demo-unit` subcommand so the demo needs neither Go nor Node at
// run time. Its source is also what the Coder "wrote" into the demo project,
// so the triager's contract diff reads the code that actually runs. It
// deliberately lacks DELETE /todos/{id}, which the contract promises: the
// bug the demo's Tester, Integrator and Triager find.

type todo struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	Done  bool   `json:"done"`
}

type store struct {
	mu    sync.Mutex
	next  int
	todos map[string]*todo
}

func newUnitMux() *http.ServeMux {
	s := &store{todos: map[string]*todo{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("GET /todos", s.list)
	mux.HandleFunc("POST /todos", s.create)
	mux.HandleFunc("GET /todos/{id}", s.get)
	mux.HandleFunc("PATCH /todos/{id}", s.update)
	return mux
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (s *store) list(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []*todo{}
	for i := 1; i <= s.next; i++ {
		if t, ok := s.todos[strconv.Itoa(i)]; ok {
			out = append(out, t)
		}
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *store) create(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Title string `json:"title"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Title == "" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "title is required"})
		return
	}
	s.mu.Lock()
	s.next++
	t := &todo{ID: strconv.Itoa(s.next), Title: in.Title}
	s.todos[t.ID] = t
	s.mu.Unlock()
	writeJSON(w, http.StatusCreated, t)
}

func (s *store) get(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	t, ok := s.todos[r.PathValue("id")]
	s.mu.Unlock()
	if !ok {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "no such todo"})
		return
	}
	writeJSON(w, http.StatusOK, t)
}

func (s *store) update(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Done *bool `json:"done"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Done == nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "done is required"})
		return
	}
	s.mu.Lock()
	t, ok := s.todos[r.PathValue("id")]
	if ok {
		t.Done = *in.Done
	}
	s.mu.Unlock()
	if !ok {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "no such todo"})
		return
	}
	writeJSON(w, http.StatusOK, t)
}

// RunUnit serves the todo API on 127.0.0.1:port until SIGTERM/SIGINT.
func RunUnit(port int) error {
	if port <= 0 {
		p, err := strconv.Atoi(os.Getenv("PORT"))
		if err != nil || p <= 0 {
			return errors.New("demo-unit needs --port or PORT")
		}
		port = p
	}
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	srv := &http.Server{Handler: newUnitMux(), ReadHeaderTimeout: 5 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	fmt.Fprintf(os.Stdout, "todo unit listening on 127.0.0.1:%d\n", port)
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
