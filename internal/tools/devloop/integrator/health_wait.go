package integrator

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/toolhost/toolhost/internal/callctx"
	"github.com/toolhost/toolhost/internal/fault"
	"github.com/toolhost/toolhost/internal/procs"
	"github.com/toolhost/toolhost/internal/tool"
)

// HealthTarget is one URL to wait for.
type HealthTarget struct {
	Unit string `json:"unit,omitempty" jsonschema:"pattern=^[A-Za-z0-9][A-Za-z0-9._-]{0\\,63}$" jsonschema_description:"unit serving the URL; if its process exits, the wait for this target ends at once with the exit code and the stderr tail"`
	URL  string `json:"url" jsonschema:"minLength=1,maxLength=2048" jsonschema_description:"http(s) URL on 127.0.0.0/8, ::1 or localhost, e.g. http://127.0.0.1:{{port:api}}/health; placeholders as in run_case ({{port:<unit>}}, {{env:<NAME>}}); a 2xx answer means ready"`
}

// HealthWaitInput is the health_wait request.
type HealthWaitInput struct {
	Targets    []HealthTarget `json:"targets" jsonschema:"minItems=1,maxItems=20" jsonschema_description:"the URLs to wait for, polled in parallel"`
	TimeoutMS  int            `json:"timeout_ms,omitempty" jsonschema:"minimum=100,maximum=110000" jsonschema_description:"how long to wait for every target, in ms (default 30000)"`
	IntervalMS int            `json:"interval_ms,omitempty" jsonschema:"minimum=20,maximum=10000" jsonschema_description:"pause between attempts on one target, in ms (default 250)"`
}

// TargetResult is the outcome for one target.
type TargetResult struct {
	Unit       string   `json:"unit,omitempty" jsonschema_description:"the target's unit"`
	URL        string   `json:"url" jsonschema_description:"the URL polled, placeholders resolved"`
	Ready      bool     `json:"ready" jsonschema_description:"true when the URL answered 2xx"`
	Status     int      `json:"status,omitempty" jsonschema_description:"HTTP status of the last answer"`
	Attempts   int      `json:"attempts" jsonschema_description:"requests sent"`
	ElapsedMS  int64    `json:"elapsed_ms" jsonschema_description:"time until ready or until the wait for this target ended"`
	Error      string   `json:"error,omitempty" jsonschema_description:"why the target is not ready (last connection error, timeout, exit)"`
	Exited     bool     `json:"exited,omitempty" jsonschema_description:"the unit's process exited before the target was ready"`
	ExitCode   *int     `json:"exit_code,omitempty" jsonschema_description:"the unit's exit code when known"`
	Signal     string   `json:"signal,omitempty" jsonschema_description:"signal that ended the unit, if any"`
	StderrTail []string `json:"stderr_tail,omitempty" jsonschema_description:"last lines the unit wrote to stderr in this run"`
}

// HealthWaitOutput is the health_wait result.
type HealthWaitOutput struct {
	tool.Status
	Targets []TargetResult `json:"targets" jsonschema_description:"one entry per target, in request order"`
}

// HealthWait is the health_wait tool.
func HealthWait() tool.Tool {
	return tool.New(tool.Spec{
		Name:  "health_wait",
		Title: "Wait for units to answer",
		Description: "Poll each loopback URL ({{port:<unit>}} and {{env:<NAME>}} placeholders resolved as in run_case) until it answers 2xx or timeout_ms passes; per target ready, status, attempts, " +
			"elapsed_ms and error. When a target names a unit whose process exits first, that target ends at once with the " +
			"exit code and the unit's stderr tail. Requests never go through a proxy from the environment; only 127.0.0.0/8, " +
			"::1 and localhost are allowed. Sends progress notifications and stops when the call is cancelled.",
		Effect: tool.ReadOnly,
	}, healthWait)
}

// stderrTailLines is how much stderr a failed target carries.
const stderrTailLines = 20

// unitWatch tells whether a target's unit has exited.
type unitWatch struct {
	// done is closed when a unit of this session exits (nil otherwise).
	done <-chan struct{}
	// exited reports the exit and what is known about it.
	exited func() (bool, *int, string)
}

func watchUnit(c *callctx.Ctx, id string, uf UnitsFile) (*unitWatch, string) {
	rec := uf.Units[id]
	if p, ok := c.Procs.Get(id); ok && (rec == nil || rec.PID == p.PID) {
		return &unitWatch{done: p.Done(), exited: func() (bool, *int, string) {
			select {
			case <-p.Done():
			default:
				return false, nil, ""
			}
			_, code, sig := p.Exit()
			return true, &code, sig
		}}, ""
	}
	if rec == nil {
		return nil, fmt.Sprintf("unit %s is not in %s; start it with spawn_units or leave unit out", id, UnitsPath)
	}
	return &unitWatch{exited: func() (bool, *int, string) {
		if c.Procs.Alive(procs.Process{PID: rec.PID, StartTicks: rec.StartTicks}) {
			return false, nil, ""
		}
		if fresh, err := loadUnits(c); err == nil && fresh.Units[id] != nil && fresh.Units[id].PID == rec.PID {
			return true, fresh.Units[id].ExitCode, fresh.Units[id].Signal
		}
		return true, rec.ExitCode, rec.Signal
	}}, ""
}

func healthWait(ctx context.Context, c *callctx.Ctx, in HealthWaitInput) (HealthWaitOutput, error) {
	// The URLs take the placeholders run_case does, so the port port_picker
	// reserved need not be copied by hand.
	r := newResolver(c, nil)
	for i := range in.Targets {
		in.Targets[i].URL = r.text(in.Targets[i].URL, fmt.Sprintf("/targets/%d/url", i))
	}
	if len(r.unresolved) > 0 {
		return HealthWaitOutput{Status: tool.Status{Reason: r.summary()}, Targets: []TargetResult{}}, nil
	}
	for i, t := range in.Targets {
		if _, err := checkLoopbackURL(t.URL); err != nil {
			return HealthWaitOutput{Status: tool.Status{Reason: fmt.Sprintf("targets[%d]: %v", i, err)}, Targets: []TargetResult{}}, nil
		}
	}
	if c.Procs == nil {
		return HealthWaitOutput{}, fmt.Errorf("this session has no process owner")
	}
	timeout := time.Duration(in.TimeoutMS) * time.Millisecond
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	interval := time.Duration(in.IntervalMS) * time.Millisecond
	if interval == 0 {
		interval = 250 * time.Millisecond
	}
	uf, err := loadUnits(c)
	if err != nil {
		return HealthWaitOutput{}, err
	}
	client := loopbackClient()
	start := time.Now()
	deadline := start.Add(timeout)
	progress := func(msg string) {
		c.Progress(float64(time.Since(start).Milliseconds()), float64(timeout.Milliseconds()), msg)
	}
	results := make([]TargetResult, len(in.Targets))
	var wg sync.WaitGroup
	for i, t := range in.Targets {
		results[i] = TargetResult{Unit: t.Unit, URL: t.URL}
		var w *unitWatch
		if t.Unit != "" {
			var problem string
			if w, problem = watchUnit(c, t.Unit, uf); problem != "" {
				results[i].Error = problem
				continue
			}
		}
		wg.Go(func() { pollTarget(ctx, c, client, &results[i], w, start, deadline, interval, progress) })
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return HealthWaitOutput{}, err
	}
	out := HealthWaitOutput{Status: tool.Status{OK: true}, Targets: results}
	var bad []string
	for _, r := range results {
		if !r.Ready {
			bad = append(bad, r.URL+": "+r.Error)
		}
	}
	if len(bad) > 0 {
		out.OK = false
		out.Reason = fmt.Sprintf("%d of %d targets not ready: %s", len(bad), len(results), strings.Join(bad, "; "))
	} else {
		progress("all targets ready")
	}
	return out, nil
}

// pollTarget polls one URL until it is ready, the unit exits, the deadline
// passes or ctx ends.
func pollTarget(ctx context.Context, c *callctx.Ctx, client *http.Client, r *TargetResult, w *unitWatch,
	start, deadline time.Time, interval time.Duration, progress func(string)) {
	defer func() { r.ElapsedMS = time.Since(start).Milliseconds() }()
	var unitDone <-chan struct{}
	if w != nil {
		unitDone = w.done
	}
	for {
		if w != nil {
			if exited, code, sig := w.exited(); exited {
				r.Exited, r.ExitCode, r.Signal = true, code, sig
				r.StderrTail = stderrTail(c, r.Unit, stderrTailLines)
				r.Error = describeExit(r.Unit, code, sig)
				return
			}
		}
		r.Attempts++
		status, err := probe(ctx, client, r.URL, deadline, unitDone)
		if err == nil && status >= 200 && status < 300 {
			r.Ready, r.Status, r.Error = true, status, ""
			progress(fmt.Sprintf("%s ready (HTTP %d) after %d attempts", r.URL, status, r.Attempts))
			return
		}
		switch {
		case err == nil:
			r.Status, r.Error = status, fmt.Sprintf("HTTP %d", status)
		case r.Error == "" || time.Now().Before(deadline):
			// An attempt cut off by the overall deadline says nothing new;
			// keep the previous answer as the last one. A failed probe is
			// what waiting expects, so its words come without a log line
			// and error id each.
			r.Error = fault.Explain(err)
		}
		if ctx.Err() != nil {
			return
		}
		left := time.Until(deadline)
		if left <= 0 {
			r.Error = fmt.Sprintf("not ready after %d ms (last: %s)", time.Since(start).Milliseconds(), r.Error)
			return
		}
		progress(fmt.Sprintf("%s: attempt %d: %s", r.URL, r.Attempts, r.Error))
		pause := time.NewTimer(min(interval, left))
		select {
		case <-ctx.Done():
			pause.Stop()
			return
		case <-unitDone:
			pause.Stop()
		case <-pause.C:
		}
	}
}

func describeExit(unit string, code *int, sig string) string {
	switch {
	case sig != "":
		return fmt.Sprintf("unit %s was ended by %s before it answered; see stderr_tail", unit, sig)
	case code != nil:
		return fmt.Sprintf("unit %s exited with code %d before it answered; see stderr_tail", unit, *code)
	}
	return fmt.Sprintf("unit %s exited before it answered (exit code unknown: another toolhost process started it); see stderr_tail", unit)
}

// attemptTimeout bounds one request, so a unit that accepts but never
// answers still gets polled again.
const attemptTimeout = 2 * time.Second

// probe sends one GET; it is cut short when the unit exits.
func probe(ctx context.Context, client *http.Client, url string, deadline time.Time, unitDone <-chan struct{}) (int, error) {
	actx, cancel := context.WithDeadline(ctx, minTime(deadline, time.Now().Add(attemptTimeout)))
	defer cancel()
	if unitDone != nil {
		go func() {
			select {
			case <-unitDone:
				cancel()
			case <-actx.Done():
			}
		}()
	}
	req, err := http.NewRequestWithContext(actx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, nil
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
