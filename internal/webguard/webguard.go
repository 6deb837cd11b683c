package webguard

import (
	"crypto/subtle"
	"net"
	"net/url"
	"slices"
	"strings"
)

// Guard checks requests against the server's own origin and the origins
// allowed besides it. Bind it to the listener before serving.
type Guard struct {
	allowed []string
	// port is the listening port, for the server's own origin; loopback
	// is set when the listener is on a loopback address.
	port     string
	loopback bool
}

// New returns a guard that also serves the browser origins allowed
// (scheme://host[:port]).
func New(allowed []string) *Guard {
	g := &Guard{}
	for _, o := range allowed {
		g.allowed = append(g.allowed, NormOrigin(o))
	}
	return g
}

// Bind takes the server's own origin from the address it listens on.
func (g *Guard) Bind(addr net.Addr) {
	if host, port, err := net.SplitHostPort(addr.String()); err == nil {
		g.port = port
		ip := net.ParseIP(host)
		g.loopback = ip != nil && ip.IsLoopback()
	}
}

// Loopback reports whether the server listens on a loopback address.
func (g *Guard) Loopback() bool { return g.loopback }

// Port is the listening port.
func (g *Guard) Port() string { return g.port }

// HostAllowed checks a request's Host header: a server on a loopback
// address serves only loopback names, so a page on a rebound DNS name is
// refused. A server on another address is reached by whatever name people
// use, and its bearer token protects it instead.
func (g *Guard) HostAllowed(host string) bool {
	return !g.loopback || IsLoopbackHost(HostOnly(host))
}

// OriginAllowed: a request without Origin is not from a browser page and
// passes; one with Origin only when that is the server's own loopback
// origin (http://127.0.0.1:PORT, http://localhost:PORT, http://[::1]:PORT)
// or one allowed. A page on any other origin — the DNS rebinding and the
// cross-site attack — is refused.
func (g *Guard) OriginAllowed(origin string) bool {
	if origin == "" {
		return true
	}
	o := NormOrigin(origin)
	if slices.Contains(g.allowed, o) {
		return true
	}
	u, err := url.Parse(o)
	if err != nil || u.Scheme != "http" || u.Path != "" || u.User != nil {
		return false
	}
	return g.port != "" && u.Port() == g.port && IsLoopbackHost(u.Hostname())
}

// IsLoopbackHost reports whether host (a name or an address, without
// port or brackets) names this machine's loopback: localhost or a loopback
// IP. The HTTP servers' Host and Origin checks, the serve and dashboard
// commands' refusal to listen elsewhere without a token, and the upstream
// client's proxy bypass all ask this one function.
func IsLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// BearerOK reports whether an Authorization header carries the token, in
// constant time.
func BearerOK(authorization, token string) bool {
	return subtle.ConstantTimeCompare([]byte(authorization), []byte("Bearer "+token)) == 1
}

// HostOnly is the host of a Host header, without port or brackets.
func HostOnly(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return strings.Trim(hostport, "[]")
}

// NormOrigin is an origin in the form origins are compared in.
func NormOrigin(o string) string {
	return strings.TrimSuffix(strings.ToLower(strings.TrimSpace(o)), "/")
}
