// Command gin is the shop API on gin, for diff_contract_vs_impl's tests:
// groups nested through a function of the unit.
package main

import (
	"net/http"
	"os"

	"github.com/gin-gonic/gin"
)

func main() {
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.GET("/health", func(c *gin.Context) { c.JSON(http.StatusOK, gin.H{"ok": true}) })
	api := r.Group("/api/v1")
	registerOrders(api.Group("/orders"))
	if err := r.Run("127.0.0.1:" + os.Args[1]); err != nil {
		panic(err)
	}
}

func registerOrders(g *gin.RouterGroup) {
	ok := func(c *gin.Context) { c.JSON(http.StatusOK, gin.H{}) }
	g.GET("", ok)
	g.POST("", func(c *gin.Context) { c.JSON(http.StatusCreated, gin.H{"id": "1"}) })
	g.GET("/:id", ok)
	g.PUT("/:id/status", ok)
	g.GET("/:id/attachments", ok)
	g.GET("/:id/items", ok)
}
