package integrator

import (
	"context"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/toolhost/toolhost/internal/callctx"
	"github.com/toolhost/toolhost/internal/sandbox"
	"github.com/toolhost/toolhost/internal/tool"
)

// PortPickerInput asks for a port per unit.
type PortPickerInput struct {
	Units []string `json:"units" jsonschema:"minItems=1,maxItems=50,uniqueItems=true,pattern=^[A-Za-z0-9][A-Za-z0-9._-]{0\\,63}$" jsonschema_description:"unit ids that need a loopback port; a unit that already holds a reservation gets the same port again"`
}

// PortPickerOutput maps each unit to its reserved port.
type PortPickerOutput struct {
	tool.Status
	Ports map[string]int `json:"ports,omitempty" jsonschema_description:"unit id -> reserved port on 127.0.0.1; spawn_units passes it to the unit as PORT and {{port:<unit>}} expands to it"`
	Path  string         `json:"path,omitempty" jsonschema_description:"where the reservations are kept"`
}

// PortPicker is the port_picker tool.
func PortPicker() tool.Tool {
	return tool.New(tool.Spec{
		Name:  "port_picker",
		Title: "Reserve loopback ports",
		Description: "Reserve a free 127.0.0.1 port for each unit in .toolhost/ports.json. A port reserved by a running unit, " +
			"or reserved less than 10 minutes ago, is never handed to another unit, even by another toolhost process. " +
			"spawn_units start uses the reservation as the unit's PORT; spawn_units stop releases it.",
		Effect:     tool.Additive,
		Idempotent: true,
	}, portPicker)
}

// maxPickTries bounds the search for a port no live reservation holds.
const maxPickTries = 64

func portPicker(_ context.Context, c *callctx.Ctx, in PortPickerInput) (PortPickerOutput, error) {
	now := c.Clock.Now()
	ports := map[string]int{}
	err := sandbox.UpdateJSON(c.Shared, PortsPath, func(pf *PortsFile, _ bool) error {
		if pf.Reservations == nil {
			pf.Reservations = map[string]Reservation{}
		}
		taken := map[int]bool{}
		for _, r := range pf.Reservations {
			if r.held(c, now) {
				taken[r.Port] = true
			}
		}
		for _, u := range in.Units {
			if r, ok := pf.Reservations[u]; ok && r.held(c, now) {
				r.ReservedAt = now
				pf.Reservations[u] = r
				ports[u] = r.Port
				continue
			}
			p, err := pickPort(taken, freePort)
			if err != nil {
				return err
			}
			// A lapsed reservation of another unit on this port is void now.
			for other, r := range pf.Reservations {
				if other != u && r.Port == p {
					delete(pf.Reservations, other)
				}
			}
			pf.Reservations[u] = Reservation{Port: p, ReservedAt: now, OwnerPID: os.Getpid(), SessionID: c.SessionID}
			taken[p] = true
			ports[u] = p
		}
		return nil
	})
	if err != nil {
		return PortPickerOutput{}, err
	}
	return PortPickerOutput{Status: tool.Status{OK: true}, Ports: ports, Path: PortsPath}, nil
}

// freePort asks the kernel for a port that is free on 127.0.0.1 right now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free loopback port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// pickPort takes candidates until one is not in taken.
func pickPort(taken map[int]bool, candidate func() (int, error)) (int, error) {
	for range maxPickTries {
		p, err := candidate()
		if err != nil {
			return 0, err
		}
		if !taken[p] {
			return p, nil
		}
	}
	return 0, fmt.Errorf("no loopback port free of reservations after %d tries; stop units or wait for old reservations to lapse", maxPickTries)
}

// bindPort records that a started unit uses port, so the reservation holds
// while the unit lives. It refuses a port another unit holds.
func bindPort(c *callctx.Ctx, unit string, port, pid int, ticks uint64) error {
	now := c.Clock.Now()
	return sandbox.UpdateJSON(c.Shared, PortsPath, func(pf *PortsFile, _ bool) error {
		if pf.Reservations == nil {
			pf.Reservations = map[string]Reservation{}
		}
		r := pf.Reservations[unit]
		if r.Port != port {
			r = Reservation{Port: port, ReservedAt: now, OwnerPID: os.Getpid(), SessionID: c.SessionID}
		}
		r.UnitPID, r.UnitStartTicks = pid, ticks
		pf.Reservations[unit] = r
		return nil
	})
}

// holder returns the unit (other than unit) whose live reservation holds
// port, or "".
func (pf PortsFile) holder(c *callctx.Ctx, unit string, port int, now time.Time) string {
	for other, r := range pf.Reservations {
		if other != unit && r.Port == port && r.held(c, now) {
			return other
		}
	}
	return ""
}

// releasePort drops the unit's reservation, unless it now belongs to a
// newer process of the unit than pid (0 releases unconditionally).
func releasePort(c *callctx.Ctx, unit string, pid int) error {
	return sandbox.UpdateJSON(c.Shared, PortsPath, func(pf *PortsFile, existed bool) error {
		r, ok := pf.Reservations[unit]
		if !existed || !ok {
			return sandbox.ErrUnchanged
		}
		if pid != 0 && r.UnitPID != 0 && r.UnitPID != pid {
			return sandbox.ErrUnchanged
		}
		delete(pf.Reservations, unit)
		return nil
	})
}
