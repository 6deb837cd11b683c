package integrator

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// ErrNotLoopback is matched by every refused non-loopback target.
var ErrNotLoopback = errors.New("not a loopback address")

// checkLoopbackURL accepts only http(s) URLs on 127.0.0.0/8, ::1 or
// localhost.
func checkLoopbackURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("url %q does not parse: %v", raw, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("url %q: scheme must be http or https", raw)
	}
	host := u.Hostname()
	if strings.EqualFold(host, "localhost") {
		return u, nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return u, nil
	}
	return nil, fmt.Errorf("url %q: host %q is %w; only 127.0.0.0/8, ::1 and localhost are allowed (use the unit's port on 127.0.0.1)", raw, host, ErrNotLoopback)
}

// dialLoopbackOnly refuses any connection whose resolved address is not a
// loopback address, whatever the name resolved to.
func dialLoopbackOnly(_, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return err
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("connect to %s: %w", address, ErrNotLoopback)
	}
	return nil
}

// loopbackClient is the HTTP client of health_wait and run_case. Proxy is
// nil on purpose: HTTP_PROXY, HTTPS_PROXY and ALL_PROXY in toolhost's
// environment must never carry a request to a local unit (seed 003: a proxy
// once forwarded loopback calls and hid a dead server). Redirects are not
// followed so a case sees the status the unit sent.
func loopbackClient() *http.Client {
	d := &net.Dialer{Timeout: 5 * time.Second, Control: dialLoopbackOnly}
	return &http.Client{
		Transport: &http.Transport{
			Proxy:               nil,
			DialContext:         d.DialContext,
			DisableKeepAlives:   true,
			TLSHandshakeTimeout: 5 * time.Second,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}
