// Command echo is the shop API on echo 4, for diff_contract_vs_impl's
// tests: the orders routes are registered by a method of a handler type,
// handed a group.
package main

import (
	"net/http"
	"os"

	"github.com/labstack/echo/v4"
)

func main() {
	e := echo.New()
	e.HideBanner = true
	e.HidePort = true
	e.GET("/health", func(c echo.Context) error { return c.JSON(http.StatusOK, map[string]bool{"ok": true}) })
	api := e.Group("/api/v1")
	h := &orderHandler{}
	h.register(api.Group("/orders"))
	if err := e.Start("127.0.0.1:" + os.Args[1]); err != nil {
		panic(err)
	}
}
