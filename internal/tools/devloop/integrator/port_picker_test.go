package integrator

import (
	"context"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/procs"
	"github.com/toolhost/toolhost/internal/testutil"
)

func TestPortPickerReservesAndKeepsPorts(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	out, err := portPicker(context.Background(), e.c, PortPickerInput{Units: []string{"api", "web"}})
	if err != nil || !out.OK {
		t.Fatalf("port_picker = %+v, %v", out, err)
	}
	if out.Ports["api"] == out.Ports["web"] || out.Ports["api"] == 0 {
		t.Fatalf("ports = %v, want two distinct ports", out.Ports)
	}
	var pf PortsFile
	e.readJSON(t, PortsPath, &pf)
	if pf.Reservations["api"].Port != out.Ports["api"] || pf.Reservations["web"].Port != out.Ports["web"] {
		t.Fatalf("ports.json = %+v, want the returned ports", pf)
	}
	again, err := portPicker(context.Background(), e.c, PortPickerInput{Units: []string{"api"}})
	if err != nil || again.Ports["api"] != out.Ports["api"] {
		t.Fatalf("second pick for api = %v, %v; want the same port %d", again.Ports, err, out.Ports["api"])
	}
}

func TestPortPickerNeverHandsOutAPortTwiceAcrossProcesses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// Two sessions on one project stand for two toolhost processes: the
	// reservation file is shared under its cross-process lock.
	a, b := newEnvAt(t, dir), newEnvAt(t, dir)
	var wg sync.WaitGroup
	results := make([]map[string]int, 20)
	for i := range results {
		e := a
		if i%2 == 1 {
			e = b
		}
		wg.Go(func() {
			out, err := portPicker(context.Background(), e.c, PortPickerInput{Units: []string{"u" + string(rune('a'+i))}})
			if err != nil || !out.OK {
				t.Errorf("pick %d: %+v %v", i, out, err)
			}
			results[i] = out.Ports
		})
	}
	wg.Wait()
	seen := map[int]string{}
	for _, r := range results {
		for u, p := range r {
			if other, dup := seen[p]; dup {
				t.Fatalf("port %d handed to %s and %s", p, other, u)
			}
			seen[p] = u
		}
	}
	var pf PortsFile
	a.readJSON(t, PortsPath, &pf)
	if len(pf.Reservations) != len(results) {
		t.Fatalf("ports.json holds %d reservations, want %d (a lost update)", len(pf.Reservations), len(results))
	}
}

func TestPickPortSkipsHeldPorts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		candidates []int
		taken      map[int]bool
		want       int
		wantErr    bool
	}{
		{"first candidate free", []int{5000}, nil, 5000, false},
		{"held port skipped", []int{5000, 5001}, map[int]bool{5000: true}, 5001, false},
		{"every candidate held", []int{5000}, map[int]bool{5000: true}, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			i := 0
			next := func() (int, error) {
				p := tt.candidates[min(i, len(tt.candidates)-1)]
				i++
				return p, nil
			}
			got, err := pickPort(tt.taken, next)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Fatalf("pickPort = %d, %v; want %d (error %v)", got, err, tt.want, tt.wantErr)
			}
		})
	}
	if _, err := pickPort(nil, func() (int, error) { return 0, errors.New("no sockets") }); err == nil {
		t.Fatal("a failing candidate source was not reported")
	}
}

func TestReservationHeld(t *testing.T) {
	t.Parallel()
	self, err := procs.ReadStat(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	c := testutil.NewCtx(t, testutil.CtxOptions{Agent: "integrator"})
	tests := []struct {
		name string
		r    Reservation
		want bool
	}{
		{"young reservation", Reservation{ReservedAt: now.Add(-time.Minute)}, true},
		{"lapsed reservation", Reservation{ReservedAt: now.Add(-ReservationTTL - time.Second)}, false},
		{"lapsed but its unit lives", Reservation{ReservedAt: now.Add(-time.Hour), UnitPID: self.PID, UnitStartTicks: self.StartTicks}, true},
		{"lapsed and the pid belongs to another process", Reservation{ReservedAt: now.Add(-time.Hour), UnitPID: self.PID, UnitStartTicks: self.StartTicks + 7}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := tt.r.held(c, now); got != tt.want {
				t.Fatalf("held = %v, want %v", got, tt.want)
			}
		})
	}
}
