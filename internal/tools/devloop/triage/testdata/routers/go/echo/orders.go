package main

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

type orderHandler struct{}

func (h *orderHandler) register(g *echo.Group) {
	g.GET("", h.list)
	g.POST("", h.create)
	g.GET("/:id", h.show)
	g.PUT("/:id/status", h.show)
	g.GET("/:id/attachments", h.list)
	g.GET("/:id/items", h.list)
}

func (h *orderHandler) list(c echo.Context) error { return c.JSON(http.StatusOK, []string{}) }

func (h *orderHandler) create(c echo.Context) error {
	return c.JSON(http.StatusCreated, map[string]string{"id": "1"})
}

func (h *orderHandler) show(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]string{"id": c.Param("id")})
}
