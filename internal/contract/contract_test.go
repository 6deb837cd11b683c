package contract

import "testing"

func TestHashIgnoresFormattingButNotContent(t *testing.T) {
	t.Parallel()
	a := []byte(`{"name":"todo","version":"1","endpoints":[{"id":"list","method":"GET","path":"/todos","status":200,"response":{"type":"array"}}]}`)
	b := []byte("{\n  \"version\": \"1\",\n  \"name\": \"todo\",\n  \"endpoints\": [ { \"status\": 200, \"path\": \"/todos\", \"method\": \"GET\", \"id\": \"list\", \"response\": { \"type\": \"array\" } } ]\n}\n")
	c := []byte(`{"name":"todo","version":"1","endpoints":[{"id":"list","method":"GET","path":"/todos","status":201,"response":{"type":"array"}}]}`)
	ha, err := Hash(a)
	if err != nil {
		t.Fatal(err)
	}
	hb, _ := Hash(b)
	hc, _ := Hash(c)
	if ha != hb {
		t.Errorf("reformatting changed the hash: %s vs %s", ha, hb)
	}
	if ha == hc {
		t.Errorf("changing status did not change the hash")
	}
	if n1, _ := Hash([]byte(`{"x":1.0}`)); n1 == func() string { h, _ := Hash([]byte(`{"x":1}`)); return h }() {
		t.Errorf("numbers must be hashed as written")
	}
	if _, err := Hash([]byte(`{"x":1} {"y":2}`)); err == nil {
		t.Errorf("trailing data must be rejected")
	}
}
