// Package webguard holds the checks a toolhost HTTP server makes before it
// serves a request a browser could have sent: the Host header against DNS
// rebinding (a page on a name the attacker rebound to 127.0.0.1 reaches a
// loopback server with its own name in Host), the Origin against pages of
// other sites, and the bearer token. The MCP transport (internal/httpserve)
// and the dashboard (internal/dashboard) both use it, so their rules cannot
// drift apart.
//
// It only answers whether a request passes; each server words its own
// refusal. It must never serve or change anything.
package webguard
