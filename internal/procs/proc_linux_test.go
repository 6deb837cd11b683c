package procs

import "testing"

func TestParseStat(t *testing.T) {
	t.Parallel()
	line := "4242 (my (odd) name) S 1 4240 4240 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 10\n"
	st, err := parseStat(4242, []byte(line))
	if err != nil {
		t.Fatal(err)
	}
	if st.State != 'S' || st.PGID != 4240 || st.StartTicks != 987654 {
		t.Fatalf("parsed %+v", st)
	}
	if _, err := parseStat(1, []byte("1 (x) S 1")); err == nil {
		t.Fatal("short stat line parsed without error")
	}
}
