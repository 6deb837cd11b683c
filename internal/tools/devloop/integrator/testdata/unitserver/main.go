// Command unitserver is a tiny HTTP unit for the integrator tests. It
// listens on 127.0.0.1:$PORT and serves GET /health; -mode picks a
// behaviour:
//
//	healthy   serve at once
//	slow      wait -delay before listening
//	crash     print a message to stderr and exit 3 without listening
//	stubborn  start a child that ignores SIGTERM, then serve
//	echo      serve POST /items (201 {"id", ...body}) and GET /items/{id}
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"
)

func main() {
	mode := flag.String("mode", "healthy", "healthy | slow | crash | stubborn | echo | ignore-term")
	delay := flag.Duration("delay", time.Second, "slow: wait before listening")
	flag.Parse()
	switch *mode {
	case "crash":
		fmt.Fprintln(os.Stderr, "unitserver: cannot open database: DATABASE_URL is not set")
		os.Exit(3)
	case "ignore-term":
		signal.Ignore(syscall.SIGTERM)
		fmt.Println("stubborn child", os.Getpid())
		select {}
	case "slow":
		time.Sleep(*delay)
	case "stubborn":
		child := exec.Command(os.Args[0], "-mode", "ignore-term")
		child.Stdout, child.Stderr = os.Stdout, os.Stderr
		if err := child.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "start child:", err)
			os.Exit(1)
		}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintln(w, `{"ok":true}`)
	})
	if *mode == "echo" {
		echo(mux)
	}
	addr := "127.0.0.1:" + os.Getenv("PORT")
	fmt.Println("unitserver", *mode, "listening on", addr)
	if err := http.ListenAndServe(addr, mux); err != nil {
		fmt.Fprintln(os.Stderr, "unitserver:", err)
		os.Exit(2)
	}
}

func echo(mux *http.ServeMux) {
	var mu sync.Mutex
	items := map[string]map[string]any{}
	next := 0
	reply := func(w http.ResponseWriter, status int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(v)
	}
	mux.HandleFunc("POST /items", func(w http.ResponseWriter, r *http.Request) {
		var item map[string]any
		if err := json.NewDecoder(r.Body).Decode(&item); err != nil {
			reply(w, http.StatusBadRequest, map[string]any{"error": err.Error()})
			return
		}
		mu.Lock()
		next++
		id := "item-" + strconv.Itoa(next)
		item["id"] = id
		items[id] = item
		mu.Unlock()
		reply(w, http.StatusCreated, item)
	})
	mux.HandleFunc("GET /items/{id}", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		item, ok := items[r.PathValue("id")]
		mu.Unlock()
		if !ok {
			reply(w, http.StatusNotFound, map[string]any{"error": "no such item"})
			return
		}
		reply(w, http.StatusOK, item)
	})
}
