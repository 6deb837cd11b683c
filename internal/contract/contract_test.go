package contract

import "testing"

func TestHashIgnoresFormattingButNotContent(t *testing.T) {
	t.Parallel()
	a := []byte(`{"name":"todo","version":"1","endpoints":[{"id":"list","method":"GET","path":"/todos","status":200,"response":{"type":"array"}}]}`)
	b := []byte("{\n  \"version\": \"1\",\n  \"name\": \"todo\",\n  \"endpoints\": [ { \"status\": 200, \"path\": \"/todos\", \"method\": \"GET\", \"id\": \"list\", \"response\": { \"type\": \"array\" } } ]\n}\n")
	c := []byte(`{"name":"todo","version":"1","endpoints":[{"id":"list","method":"GET","path":"/todos","status":201,"response":{"type":"array"}}]}`)
	hash := func(doc []byte) string {
		t.Helper()
		h, err := Hash(doc)
		if err != nil {
			t.Fatalf("Hash(%s): %v", doc, err)
		}
		return h
	}
	ha, hb, hc := hash(a), hash(b), hash(c)
	if ha != hb {
		t.Errorf("reformatting changed the hash: %s vs %s", ha, hb)
	}
	if ha == hc {
		t.Errorf("changing status did not change the hash")
	}
	if hash([]byte(`{"x":1.0}`)) == hash([]byte(`{"x":1}`)) {
		t.Errorf("numbers must be hashed as written")
	}
	if _, err := Hash([]byte(`{"x":1} {"y":2}`)); err == nil {
		t.Errorf("trailing data must be rejected")
	}
}
