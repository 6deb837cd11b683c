package pgtest

import (
	"os"
	"os/exec"
	"testing"
)

// TestClusterStartsStopsAndCleansUp: a cluster answers on its port, a
// restart keeps its data, and Remove leaves nothing behind.
func TestClusterStartsStopsAndCleansUp(t *testing.T) {
	c := Start(t)
	url := c.CreateDB(t, "t1")
	psql := func(sql string) (string, error) {
		out, err := exec.Command("psql", "-X", "-A", "-t", "-c", sql, url).CombinedOutput()
		return string(out), err
	}
	if out, err := psql("CREATE TABLE k (v int); INSERT INTO k VALUES (7)"); err != nil {
		t.Fatalf("psql: %v %s", err, out)
	}
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	if out, err := psql("SELECT v FROM k"); err != nil || out != "7\n" {
		t.Fatalf("after a restart: %q %v", out, err)
	}
	c.Remove()
	if _, err := os.Stat(c.dir); !os.IsNotExist(err) {
		t.Fatalf("the cluster's dir is still there: %v", err)
	}
}
