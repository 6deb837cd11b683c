// Command fiber is the shop API on fiber 2, for diff_contract_vs_impl's
// tests: groups of groups.
package main

import (
	"os"

	"github.com/gofiber/fiber/v2"
)

func main() {
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	ok := func(c *fiber.Ctx) error { return c.JSON(fiber.Map{}) }
	app.Get("/health", ok)
	api := app.Group("/api/v1")
	orders := api.Group("/orders")
	orders.Get("/", ok)
	orders.Post("/", func(c *fiber.Ctx) error { return c.Status(fiber.StatusCreated).JSON(fiber.Map{"id": "1"}) })
	orders.Get("/:id", ok)
	orders.Put("/:id/status", ok)
	orders.Get("/:id/attachments", ok)
	orders.Get("/:id/items", ok)
	if err := app.Listen("127.0.0.1:" + os.Args[1]); err != nil {
		panic(err)
	}
}
