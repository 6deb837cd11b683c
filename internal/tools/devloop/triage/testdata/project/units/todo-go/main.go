package main

import (
	"log"
	"net/http"
)

func main() {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /todos", listTodos)
	mux.HandleFunc("POST /todos", createTodo)
	mux.HandleFunc("GET /todos/{id}", getTodo)
	mux.HandleFunc("PUT /todos/{id}", updateTodo)
	// mux.HandleFunc("DELETE /todos/{id}", deleteTodo)
	mux.HandleFunc("/healthz", health)
	log.Println("routes: \"DELETE /todos/{id}\" is not served yet")
	log.Fatal(http.ListenAndServe(":8080", mux))
}

func listTodos(w http.ResponseWriter, r *http.Request)  {}
func createTodo(w http.ResponseWriter, r *http.Request) {}
func getTodo(w http.ResponseWriter, r *http.Request)    {}
func updateTodo(w http.ResponseWriter, r *http.Request) {}
func health(w http.ResponseWriter, r *http.Request)     {}
