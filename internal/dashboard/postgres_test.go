package dashboard_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/internal/testutil/pgtest"
)

// TestDashboardOnPostgres: two machines (two checkouts of one project)
// share a PostgreSQL store. Machine A's dashboard runs as a role made with
// `toolhost store grant-decisions`, and says the database holds it to
// decisions; it shows machine B's server live on its event stream (the
// agent serving, its timeline entry); B's call that needs a human appears
// on A's stream, is approved with the page's POST, and B's identical call
// then runs once.
func TestDashboardOnPostgres(t *testing.T) {
	t.Parallel()
	pg := pgtest.Start(t)
	url := pg.CreateDB(t, "dashboard")
	const pid, role = "dash-on-pg", "dashboard_viewer"
	machineA, machineB := t.TempDir(), t.TempDir()
	policy := confirmPolicy(t, t.TempDir())
	toolhost := func(args ...string) (string, error) {
		out, err := exec.Command(testutil.Toolhost(t), args...).CombinedOutput()
		return string(out), err
	}

	// The decisions role: made by the database's admin, granted by toolhost.
	if out, err := toolhost("store", "migrate", "--project-dir", machineA, "--store", url, "--pid", pid); err != nil {
		t.Fatalf("store migrate: %v\n%s", err, out)
	}
	if out, err := toolhost("store", "grant-decisions", role, "--project-dir", machineA, "--store", url, "--pid", pid); err == nil || !strings.Contains(out, "does not exist") {
		t.Fatalf("grant-decisions to a missing role = %v\n%s", err, out)
	}
	if out, err := toolhost("store", "grant-decisions", role, "--project-dir", machineA); err == nil || !strings.Contains(out, "PostgreSQL") {
		t.Fatalf("grant-decisions on the file store = %v\n%s", err, out)
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE ROLE `+role+` LOGIN`); err != nil {
		t.Fatal(err)
	}
	if out, err := toolhost("store", "grant-decisions", role, "--project-dir", machineA, "--store", url, "--pid", pid); err != nil || !strings.Contains(out, role+" may now read") {
		t.Fatalf("grant-decisions: %v\n%s", err, out)
	}
	roleURL := strings.Replace(url, "toolhost@", role+"@", 1)

	// An owner's dashboard is told only the code keeps it to decisions; the
	// role's, that the database does.
	owners := runDashboard(t, "--project-dir", machineA, "--store", url, "--pid", pid, "--policy", policy)
	if _, ok := owners.proc.WaitFor(time.Minute, func(l string) bool { return strings.Contains(l, "may write more than the confirmations") }); !ok {
		t.Errorf("the owner's dashboard logged:\n%s", owners.proc.Log())
	}
	owners.stop(t)
	d := runDashboard(t, "--project-dir", machineA, "--store", roleURL, "--pid", pid, "--policy", policy)
	if _, ok := d.proc.WaitFor(time.Minute, func(l string) bool {
		return strings.Contains(l, "the database lets the dashboard write the confirmations alone")
	}); !ok {
		t.Errorf("the decisions role's dashboard logged:\n%s", d.proc.Log())
	}
	stream := openSSE(t, d.URL+"api/events", "")
	stream.next(t, "snapshot")

	// B's server, on the other checkout, as the store's owner.
	env := append(os.Environ(), "TOOLHOST_STORE="+url, "TOOLHOST_PID="+pid)
	coder := testutil.ServeEnv(t, env, "--project-dir", machineB, "--agent", "coder", "--session", "sess-b-coder", "--policy", policy)
	if r := testutil.CallTool(t, coder, "timeline_append", map[string]any{"kind": "note", "message": "written on B"}); r.IsError {
		t.Fatalf("timeline_append on B: %s", r.Text())
	}
	var sawServing, sawEntry bool
	for !sawServing || !sawEntry {
		ev := stream.next(t, "agent", "timeline")
		switch ev.name {
		case "agent":
			var card struct {
				Short   string            `json:"short"`
				Serving []json.RawMessage `json:"serving"`
			}
			if err := json.Unmarshal([]byte(ev.data), &card); err != nil {
				t.Fatal(err)
			}
			sawServing = sawServing || card.Short == "coder" && len(card.Serving) == 1
		case "timeline":
			sawEntry = sawEntry || strings.Contains(ev.data, "written on B")
		}
	}

	// B's call waits for a human; A's dashboard shows it and approves it.
	mem := map[string]any{"key": "shared", "content": "from B"}
	r := testutil.CallTool(t, coder, "record_memory", mem)
	id := regexp.MustCompile(`cf-[0-9A-Za-z]+`).FindString(r.Text())
	if !r.IsError || id == "" {
		t.Fatalf("B's first record_memory = %s, want needs_confirmation with an id", r.Text())
	}
	for {
		ev := stream.next(t, "approvals")
		var v struct {
			Pending []struct {
				ID string `json:"id"`
			} `json:"pending"`
		}
		if err := json.Unmarshal([]byte(ev.data), &v); err != nil {
			t.Fatal(err)
		}
		if slices.ContainsFunc(v.Pending, func(p struct {
			ID string `json:"id"`
		}) bool {
			return p.ID == id
		}) {
			break
		}
	}
	// The human signs in with the code on the dashboard's terminal.
	cookie, token := d.signIn(t)
	hdr := map[string]string{"Content-Type": "application/json", "X-Toolhost-Page-Token": token, "Cookie": cookie}
	if status, body := do(t, http.MethodPost, d.URL+"api/confirmations/"+id+"/approve", hdr, "{}"); status != http.StatusOK || !strings.Contains(body, "approved") {
		t.Fatalf("approve on A's dashboard = %d %s", status, body)
	}
	if r := testutil.CallTool(t, coder, "record_memory", mem); r.IsError {
		t.Fatalf("B's call after A's approval: %s", r.Text())
	}
	if r := testutil.CallTool(t, coder, "record_memory", mem); !r.IsError || !strings.Contains(r.Text(), "needs_confirmation") {
		t.Fatalf("the approval was used twice: %s", r.Text())
	}
	// The decision is the database's: it lets the dashboard's role write
	// nothing else (whatever a dashboard's code would try).
	if _, err := conn.Exec(ctx, `SET ROLE `+role); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`DELETE FROM audit`, `UPDATE timeline SET line = 'forged'`, `DELETE FROM bugs`} {
		if _, err := conn.Exec(ctx, q); err == nil || !strings.Contains(err.Error(), "permission denied") {
			t.Errorf("%s as the dashboard's role = %v, want permission denied", q, err)
		}
	}
}
