// Command chi is the shop API on chi 5, for diff_contract_vs_impl's tests:
// a router a function returns, mounted inside a Route.
package main

import (
	"net/http"
	"os"

	"github.com/go-chi/chi/v5"
)

func ok(w http.ResponseWriter, r *http.Request) { w.Write([]byte("{}")) }

func main() {
	r := chi.NewRouter()
	r.Get("/health", ok)
	r.Route("/api/v1", func(r chi.Router) {
		r.Mount("/orders", ordersRouter())
	})
	if err := http.ListenAndServe("127.0.0.1:"+os.Args[1], r); err != nil {
		panic(err)
	}
}

func ordersRouter() chi.Router {
	r := chi.NewRouter()
	r.Get("/", ok)
	r.Post("/", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusCreated) })
	r.Route("/{id}", func(r chi.Router) {
		r.Get("/", ok)
		r.Put("/status", ok)
		r.Get("/attachments", ok)
		r.Get("/items", ok)
	})
	return r
}
