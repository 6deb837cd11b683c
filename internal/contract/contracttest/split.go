package contracttest

// ShopRoutes are the routes both split shop contracts declare, as served
// ("METHOD path": the servers' base path, /api/v1, in front of every path
// but /health, whose path item has a server of its own at the root).
var ShopRoutes = []string{
	"GET /health",
	"GET /api/v1/orders", "POST /api/v1/orders",
	"GET /api/v1/orders/{id}", "DELETE /api/v1/orders/{id}",
	"PATCH /api/v1/orders/{id}/status",
	"GET /api/v1/orders/{id}/attachments",
}

// ShopParts are the files of the shop API that both roots refer to, as a
// team splits a contract: path items, request bodies, responses,
// parameters and schemas each in their own file, referring to each other
// by relative paths (and, in responses.yaml, within the file).
var ShopParts = map[string]string{
	"contracts/shop/paths/orders.yaml": `get:
  operationId: listOrders
  responses:
    '200':
      description: the orders
      content:
        application/json:
          schema:
            type: array
            items: { $ref: '../schemas/order.yaml' }
post:
  operationId: createOrder
  requestBody:
    $ref: '../bodies.yaml#/NewOrder'
  responses:
    '201':
      $ref: '../responses.yaml#/Order'
    '400':
      $ref: '../responses.yaml#/Invalid'
`,
	"contracts/shop/paths/order.yaml": `parameters:
  - $ref: '../parameters.yaml#/OrderId'
get:
  operationId: getOrder
  responses:
    '200': { $ref: '../responses.yaml#/Order' }
    '404': { $ref: '../responses.yaml#/NotFound' }
delete:
  operationId: deleteOrder
  responses:
    '204': { description: deleted }
`,
	"contracts/shop/paths/attachments.yaml": `get:
  operationId: listAttachments
  parameters:
    - $ref: '../parameters.yaml#/OrderId'
  responses:
    '200':
      description: the attachments
      content:
        application/json:
          schema:
            type: array
            items: { $ref: '../schemas/attachment.yaml' }
`,
	"contracts/shop/bodies.yaml": `NewOrder:
  required: true
  content:
    application/json:
      schema: { $ref: './schemas/new-order.yaml' }
StatusChange:
  required: true
  content:
    application/json:
      schema:
        type: object
        required: [status]
        properties:
          status: { $ref: './schemas/status.yaml' }
`,
	"contracts/shop/responses.yaml": `Order:
  description: one order
  content:
    application/json:
      schema: { $ref: './schemas/order.yaml' }
NotFound:
  description: no such order
  content:
    application/json:
      schema: { $ref: '#/Error' }
Invalid:
  description: the order is not valid
  content:
    application/json:
      schema: { $ref: '#/Error' }
Error:
  type: object
  required: [message]
  properties:
    message: { type: string }
`,
	"contracts/shop/parameters.yaml": `OrderId:
  name: id
  in: path
  required: true
  schema: { type: string, pattern: '^[0-9]+$' }
`,
	"contracts/shop/schemas/order.yaml": `type: object
required: [id, status, items]
properties:
  id: { type: string }
  status: { $ref: './status.yaml' }
  items:
    type: array
    items: { $ref: './item.yaml' }
  note: { type: string, nullable: true }
`,
	"contracts/shop/schemas/new-order.yaml": `type: object
required: [items]
properties:
  items:
    type: array
    minItems: 1
    items: { $ref: './item.yaml' }
  note: { type: string, nullable: true }
`,
	"contracts/shop/schemas/item.yaml": `type: object
required: [sku, quantity]
properties:
  sku: { type: string }
  quantity: { type: integer, minimum: 1 }
`,
	"contracts/shop/schemas/status.yaml": `type: string
enum: [open, paid, shipped]
`,
	"contracts/shop/schemas/attachment.yaml": `type: object
required: [name, url]
properties:
  name: { type: string }
  url: { type: string, format: uri }
`,
}

// Shop30YAML is contracts/shop.yaml: OpenAPI 3.0.3 whose first server is
// an absolute URL with the base path /api/v1, path items in other files,
// and an operation whose parameter, body and response are refs to files.
const Shop30YAML = `openapi: 3.0.3
info:
  title: Shop orders
  version: 3.0.0
servers:
  - url: https://shop.example.com/api/v1
    description: production
  - url: http://localhost:8080/api/v1
paths:
  /health:
    servers:
      - url: https://shop.example.com/
    get:
      operationId: health
      responses:
        '200': { description: up }
  /orders:
    $ref: './shop/paths/orders.yaml'
  /orders/{id}:
    $ref: './shop/paths/order.yaml'
  /orders/{id}/status:
    patch:
      operationId: setOrderStatus
      parameters:
        - $ref: './shop/parameters.yaml#/OrderId'
      requestBody:
        $ref: './shop/bodies.yaml#/StatusChange'
      responses:
        '200':
          $ref: './shop/responses.yaml#/Order'
  /orders/{id}/attachments:
    $ref: './shop/paths/attachments.yaml'
components:
  schemas:
    Order:
      $ref: './shop/schemas/order.yaml'
`

// Shop31JSON is contracts/shop.json: the same API as OpenAPI 3.1.0 in
// JSON, whose server is relative with its base path in a variable, and
// whose path items are refs to components.pathItems that are refs to the
// files.
const Shop31JSON = `{
  "openapi": "3.1.0",
  "info": { "title": "Shop orders", "version": "3.0.0" },
  "servers": [ { "url": "{base}", "variables": { "base": { "default": "/api/v1" } } } ],
  "paths": {
    "/health": {
      "servers": [ { "url": "/" } ],
      "get": { "operationId": "health", "responses": { "200": { "description": "up" } } }
    },
    "/orders": { "$ref": "./shop/paths/orders.yaml" },
    "/orders/{id}": { "$ref": "#/components/pathItems/Order" },
    "/orders/{id}/status": {
      "patch": {
        "operationId": "setOrderStatus",
        "parameters": [ { "$ref": "./shop/parameters.yaml#/OrderId" } ],
        "requestBody": { "$ref": "./shop/bodies.yaml#/StatusChange" },
        "responses": { "200": { "$ref": "./shop/responses.yaml#/Order" } }
      }
    },
    "/orders/{id}/attachments": { "$ref": "#/components/pathItems/Attachments" }
  },
  "components": {
    "pathItems": {
      "Order": { "$ref": "./shop/paths/order.yaml" },
      "Attachments": { "$ref": "./shop/paths/attachments.yaml" }
    },
    "schemas": { "Order": { "$ref": "./shop/schemas/order.yaml" } }
  }
}
`
