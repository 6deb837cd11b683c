// Package contracttest holds OpenAPI contracts as architects write them, for
// the tests of the contract tools: the same "orders" API as OpenAPI 3.0 in
// YAML and as OpenAPI 3.1 in JSON. Both declare the same six routes and the
// same types.
//
// It is imported by tests only.
package contracttest

// Routes are the routes both documents declare, "METHOD path".
var Routes = []string{
	"GET /v2/orders", "POST /v2/orders", "GET /v2/orders/{id}", "PATCH /v2/orders/{id}", "DELETE /v2/orders/{id}", "GET /health",
}

// Orders30YAML is the orders API as OpenAPI 3.0.3 in YAML, with $refs to
// components.schemas, .requestBodies and .responses, nullable, enum, allOf,
// a 201 and a 204.
const Orders30YAML = `openapi: 3.0.3
info:
  title: Orders API
  version: 2.1.0
paths:
  /v2/orders:
    get:
      operationId: listOrders
      parameters:
        - in: query
          name: status
          schema: { $ref: '#/components/schemas/OrderStatus' }
      responses:
        200:
          description: the orders
          content:
            application/json:
              schema:
                type: array
                items: { $ref: '#/components/schemas/Order' }
    post:
      operationId: createOrder
      requestBody: { $ref: '#/components/requestBodies/NewOrder' }
      responses:
        '201': { $ref: '#/components/responses/OrderCreated' }
        '400': { description: bad input }
  /v2/orders/{id}:
    parameters:
      - { in: path, name: id, required: true, schema: { type: string } }
    get:
      operationId: getOrder
      responses:
        '200':
          description: one order
          content:
            application/json:
              schema: { $ref: '#/components/schemas/Order' }
        '404': { description: no such order }
    patch:
      operationId: updateOrder
      requestBody:
        content:
          application/json:
            schema:
              type: object
              properties:
                status: { $ref: '#/components/schemas/OrderStatus' }
                note: { type: string, nullable: true }
      responses:
        '200':
          description: updated
          content:
            application/json:
              schema: { $ref: '#/components/schemas/Order' }
    delete:
      operationId: deleteOrder
      responses:
        '204': { description: deleted }
  /health:
    get:
      operationId: health
      responses:
        '200':
          description: up
          content:
            application/json:
              schema:
                type: object
                required: [ok]
                properties: { ok: { type: boolean } }
components:
  requestBodies:
    NewOrder:
      required: true
      content:
        application/json:
          schema: { $ref: '#/components/schemas/NewOrder' }
  responses:
    OrderCreated:
      description: created
      content:
        application/json:
          schema: { $ref: '#/components/schemas/Order' }
  schemas:
    OrderStatus:
      type: string
      enum: [open, paid, shipped, cancelled]
    OrderItem:
      type: object
      required: [sku, quantity]
      properties:
        sku: { type: string }
        quantity: { type: integer, minimum: 1 }
        price: { type: number }
    NewOrder:
      type: object
      required: [items]
      properties:
        items:
          type: array
          items: { $ref: '#/components/schemas/OrderItem' }
        note: { type: string, nullable: true }
    Order:
      allOf:
        - $ref: '#/components/schemas/NewOrder'
        - type: object
          required: [id, status, created_at]
          properties:
            id: { type: string }
            status: { $ref: '#/components/schemas/OrderStatus' }
            created_at: { type: string, format: date-time }
`

// Orders31JSON is the same API as OpenAPI 3.1.0 in JSON: null as a type in
// a type array instead of nullable.
const Orders31JSON = `{
  "openapi": "3.1.0",
  "info": { "title": "Orders API", "version": "2.1.0" },
  "paths": {
    "/v2/orders": {
      "get": { "operationId": "listOrders", "responses": { "200": { "description": "the orders",
        "content": { "application/json": { "schema": { "type": "array", "items": { "$ref": "#/components/schemas/Order" } } } } } } },
      "post": { "operationId": "createOrder",
        "requestBody": { "required": true, "content": { "application/json": { "schema": { "$ref": "#/components/schemas/NewOrder" } } } },
        "responses": { "201": { "description": "created", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Order" } } } } } }
    },
    "/v2/orders/{id}": {
      "get": { "operationId": "getOrder", "responses": { "200": { "description": "one order",
        "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Order" } } } } } },
      "patch": { "operationId": "updateOrder",
        "requestBody": { "content": { "application/json": { "schema": { "type": "object", "properties": {
          "status": { "$ref": "#/components/schemas/OrderStatus" }, "note": { "type": ["string", "null"] } } } } } },
        "responses": { "200": { "description": "updated", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Order" } } } } } },
      "delete": { "operationId": "deleteOrder", "responses": { "204": { "description": "deleted" } } }
    },
    "/health": {
      "get": { "operationId": "health", "responses": { "200": { "description": "up", "content": { "application/json": {
        "schema": { "type": "object", "required": ["ok"], "properties": { "ok": { "type": "boolean" } } } } } } } }
    }
  },
  "components": {
    "schemas": {
      "OrderStatus": { "type": "string", "enum": ["open", "paid", "shipped", "cancelled"] },
      "OrderItem": { "type": "object", "required": ["sku", "quantity"],
        "properties": { "sku": { "type": "string" }, "quantity": { "type": "integer", "minimum": 1 }, "price": { "type": "number" } } },
      "NewOrder": { "type": "object", "required": ["items"], "properties": {
        "items": { "type": "array", "items": { "$ref": "#/components/schemas/OrderItem" } }, "note": { "type": ["string", "null"] } } },
      "Order": { "allOf": [ { "$ref": "#/components/schemas/NewOrder" },
        { "type": "object", "required": ["id", "status", "created_at"], "properties": {
          "id": { "type": "string" }, "status": { "$ref": "#/components/schemas/OrderStatus" }, "created_at": { "type": "string", "format": "date-time" } } } ] }
    }
  }
}
`
