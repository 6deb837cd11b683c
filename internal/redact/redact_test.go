package redact

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// Fake credentials of each well-known format (built from pieces, so that
// no scanner mistakes this file for a leak).
var (
	ghToken   = "ghp_" + strings.Repeat("A1b2", 9)
	ghPAT     = "github_pat_" + strings.Repeat("11AB22cd", 4)
	antKey    = "sk-ant-api03-" + strings.Repeat("xY9_", 10)
	oaiKey    = "sk-proj-" + strings.Repeat("Zq8w", 10)
	awsKey    = "AKIA" + "IOSFODNN7EXAMPLE"
	awsSecret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCY" + "EXAMPLEKEY"
	slackTok  = "xoxb-" + "123456789012-1234567890123-" + strings.Repeat("aB3", 8)
	jwt       = "eyJhbGciOiJIUzI1NiJ9" + ".eyJzdWIiOiIxMjM0NTY3ODkwIn0" + ".dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
	bearer    = "abc123.def456-ghi789"
)

func TestString(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, in string
		secret   string // must not survive
		keep     string // must survive
	}{
		{"bearer in a curl header", `curl -H "Authorization: Bearer ` + bearer + `" https://api/x`, bearer, `Authorization: Bearer [REDACTED]`},
		{"bearer in prose", "use Bearer " + bearer + " for it", bearer, "Bearer [REDACTED]"},
		{"basic", `-H 'Authorization: Basic dXNlcjpwYXNz'`, "dXNlcjpwYXNz", "Basic [REDACTED]"},
		{"api key header", `curl -H 'X-Api-Key: k3y-v4lue' u`, "k3y-v4lue", "X-Api-Key: [REDACTED]"},
		{"cookie header", "Cookie: sid=s3cr3t; theme=dark", "s3cr3t", "Cookie: [REDACTED]"},
		{"url userinfo", "git clone https://deploy:hunter2@github.com/o/r.git", "hunter2", "https://deploy:[REDACTED]@github.com/o/r.git"},
		{"url userinfo in postgres", "DATABASE_URL=postgres://app:pa55w0rd@db:5432/app", "pa55w0rd", "postgres://app:"},
		{"curl -u", "curl -u admin:s3cret http://x", "s3cret", "-u admin:[REDACTED]"},
		{"--user=", "curl --user=admin:s3cret http://x", "s3cret", "admin:[REDACTED]"},
		{"DB_PASS env", "DB_PASS=hunter2 npm start", "hunter2", "DB_PASS=[REDACTED] npm start"},
		{"db_pass lower", "export db_pass='hunter 2'", "hunter 2", "db_pass='[REDACTED]'"},
		{"pin", `{"pin": "1234", "mapping": "a"}`, "1234", `"mapping": "a"`},
		{"PIN upper", "PIN=9876", "9876", "PIN=[REDACTED]"},
		{"userPin camel", "userPin: 4321", "4321", "userPin: [REDACTED]"},
		{"secret_key", "SECRET_KEY=abcdef", "abcdef", "SECRET_KEY=[REDACTED]"},
		{"Secret_Key mixed", "Secret_Key: qwerty", "qwerty", "[REDACTED]"},
		{"aws secret", "aws_secret_access_key = " + awsSecret, awsSecret, "aws_secret_access_key = [REDACTED]"},
		{"password option", "mysql --password hunter2 db", "hunter2", "--password [REDACTED] db"},
		{"token option", "gh auth login --with-token=" + "t0k3n", "t0k3n", "--with-token=[REDACTED]"},
		{"query token", "https://api/x?access_token=zzz999&page=2", "zzz999", "page=2"},
		{"github", "GH=" + ghToken, ghToken, "GH="},
		{"github pat", "token " + ghPAT, ghPAT, ""},
		{"anthropic", "ANTHROPIC_KEY " + antKey + " end", antKey, "end"},
		{"openai", "key is " + oaiKey, oaiKey, "key is"},
		{"aws access key", "id " + awsKey + " ok", awsKey, " ok"},
		{"slack", "hook " + slackTok, slackTok, "hook"},
		{"slack webhook", "https://hooks.slack.com/services/T000/B000/XXXXXXXX", "XXXXXXXX", "hooks.slack.com/services/"},
		{"jwt", "got " + jwt + " back", jwt, " back"},
		{"private key", "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----", "MIIEow", ""},
		{"json string inside text", `body {"token":"abc","name":"x"}`, "abc", `"name":"x"`},
	}
	for _, tc := range cases {
		got := String(tc.in)
		if strings.Contains(got, tc.secret) || !strings.Contains(got, Redacted) || !strings.Contains(got, tc.keep) {
			t.Errorf("%s: String(%q) = %q; want %q gone and %q kept", tc.name, tc.in, got, tc.secret, tc.keep)
		}
	}
	for _, harmless := range []string{
		"npm test -- --reporter=json", "mapping spinner bypass passed ping", "task-12 desk_3", "see https://example.com/a?b=1",
		"git log --format='{%H}'", "the basic idea", "units/todo-be/src/index.ts", `{"path":"prd/index.html","key":"notes"}`,
		"author: Ann", "tokenless", "sk-short",
	} {
		if got := String(harmless); got != harmless {
			t.Errorf("String(%q) = %q, want it unchanged", harmless, got)
		}
	}
}

func TestIsSecretKey(t *testing.T) {
	t.Parallel()
	for k, want := range map[string]bool{
		"password": true, "DB_PASS": true, "db-pass": true, "pin": true, "PIN": true, "userPin": true, "secret_key": true,
		"SECRET_KEY": true, "X-Api-Key": true, "access_token": true, "Authorization": true, "client_secret": true,
		"aws_secret_access_key": true, "auth": true, "pwd": true, "Cookie": true, "credentials": true, "passphrase": true,
		"mapping": false, "spinner": false, "path": false, "passed": false, "author": false, "key": false, "name": false,
		"session_id": false, "call_id": false, "bypass": false, "ping": false,
	} {
		if got := IsSecretKey(k); got != want {
			t.Errorf("IsSecretKey(%q) = %v, want %v", k, got, want)
		}
	}
}

func TestJSON(t *testing.T) {
	t.Parallel()
	in := `{"z":1, "Password":"p","nested":{"DB_PASS":{"a":[1,2]},"list":["Bearer ` + bearer + `","ok"]},"n":12.50,"url":"https://u:pw1@h/x","pin":4321,"empty":null,"a":"<&>"}`
	got := string(JSON([]byte(in)))
	want := `{"z":1,"Password":"[REDACTED]","nested":{"DB_PASS":"[REDACTED]","list":["Bearer [REDACTED]","ok"]},"n":12.50,"url":"https://u:[REDACTED]@h/x","pin":"[REDACTED]","empty":null,"a":"<&>"}`
	if got != want {
		t.Errorf("JSON =\n%s\nwant\n%s", got, want)
	}
	clean := `{"b": 2, "a": [1, "x"]}`
	if got := string(JSON([]byte(clean))); got != clean {
		t.Errorf("a document without secrets changed: %s", got)
	}
	if got := string(JSON([]byte(`not json token=abc`))); got != "not json token=[REDACTED]" {
		t.Errorf("text = %s", got)
	}
	var v any
	_ = json.Unmarshal([]byte(in), &v)
	b, _ := json.Marshal(Value(v))
	if strings.Contains(string(b), bearer) || strings.Contains(string(b), `"p"`) || strings.Contains(string(b), "pw1") {
		t.Errorf("Value left a secret: %s", b)
	}
}

func TestWriter(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	w := Writer(&buf)
	lines := []string{
		`{"level":"warn","event":"hook_decision","reason":"curl -H 'Authorization: Bearer ` + bearer + `' u","time":"t"}` + "\n",
		`{"level":"info","event":"initialize","client":"claude"}` + "\n",
		"09:00:00 WRN hook reason=\"DB_PASS=hunter2\"\n",
	}
	for _, l := range lines {
		if n, err := w.Write([]byte(l)); err != nil || n != len(l) {
			t.Fatalf("Write = %d, %v", n, err)
		}
	}
	out := buf.String()
	if strings.Contains(out, bearer) || strings.Contains(out, "hunter2") || strings.Count(out, "\n") != 3 || !strings.Contains(out, lines[1]) {
		t.Errorf("written:\n%s", out)
	}
	if !strings.HasPrefix(out, `{"level":"warn","event":"hook_decision","reason":`) {
		t.Errorf("the log line's key order changed:\n%s", out)
	}
}

func BenchmarkJSONClean(b *testing.B) {
	doc := []byte(`{"text":"GET http://127.0.0.1:{{port:api}}/items/{{var:id}}","vars":{"id":"item-1","name":"pen"}}`)
	for b.Loop() {
		_ = JSON(doc)
	}
}

func BenchmarkJSONNoTrigger(b *testing.B) {
	doc := []byte(`{"items":[{"id":"step-001","description":"write the parser"},{"id":"step-002","description":"test it"}]}`)
	for b.Loop() {
		_ = JSON(doc)
	}
}

// TestPreviewNeverHidesWhatRuns: what a human decides on keeps its plain
// secrets hidden but shows a value that is more than a literal word piece
// (a substitution, an expansion, an operator, a quote or a space), which
// String, for what is stored, hides (stored "" : not compared).
func TestPreviewNeverHidesWhatRuns(t *testing.T) {
	t.Parallel()
	priv := "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----"
	cases := []struct{ in, preview, stored string }{
		{`API_TOKEN="$(touch hidden)" touch shown`, `API_TOKEN="$(touch hidden)" touch shown`, `API_TOKEN="[REDACTED]" touch shown`},
		{"API_TOKEN=`touch hidden` touch shown", "API_TOKEN=`touch hidden` touch shown", ""},
		{`API_TOKEN="abc123" touch shown`, `API_TOKEN="[REDACTED]" touch shown`, `API_TOKEN="[REDACTED]" touch shown`},
		{`API_TOKEN=abc|touch hidden`, `API_TOKEN=abc|touch hidden`, ""},
		{`DB_PASS=${HOME} x`, `DB_PASS=${HOME} x`, ""},
		{`password: 'a b'`, `password: 'a b'`, `password: '[REDACTED]'`},
		{`--password "$(pass show db)" run`, `--password "$(pass show db)" run`, `--password "[REDACTED]" run`},
		{`curl -u me:$(cat pw) http://x`, `curl -u me:$(cat pw) http://x`, ""},
		{`curl https://me:$(cat pw)@h/`, `curl https://me:$(cat pw)@h/`, ""},
		{`curl -H "Authorization: Bearer $(cat t)" x`, `curl -H "Authorization: Bearer $(cat t)" x`, `curl -H "Authorization: Bearer [REDACTED]" x`},
		{`TOKEN=x=y touch`, `TOKEN=x=y touch`, `TOKEN=[REDACTED] touch`},
		{`TOKEN=dXNlcjpwYXNz+/== ok`, `TOKEN=[REDACTED] ok`, `TOKEN=[REDACTED] ok`},
		{"x ghp_" + strings.Repeat("a", 36) + " y", "x [REDACTED] y", "x [REDACTED] y"},
		{"echo " + priv, "echo " + priv, "echo [REDACTED]"},
	}
	for _, c := range cases {
		if got := PreviewString(c.in); got != c.preview {
			t.Errorf("PreviewString(%q) = %q, want %q", c.in, got, c.preview)
		}
		if got := String(c.in); c.stored != "" && got != c.stored {
			t.Errorf("String(%q) = %q, want %q", c.in, got, c.stored)
		}
	}
}

func TestPreviewJSON(t *testing.T) {
	t.Parallel()
	command := `API_TOKEN=sk-live-abcdefghijklmnop curl -d @x http://h`
	cases := []struct{ in, want string }{
		{`{"password":"$(touch x)"}`, `{"password":"$(touch x)"}`},
		{`{"password":"hunter2"}`, `{"password":"[REDACTED]"}`},
		{`{"secret":{"a":"x y","b":"xy","n":5,"z":null}}`, `{"secret":{"a":"x y","b":"[REDACTED]","n":"[REDACTED]","z":null}}`},
		{`{"tokens":["abc","a;b"]}`, `{"tokens":["[REDACTED]","a;b"]}`},
		{`{"note":"API_KEY=$(id) x"}`, `{"note":"API_KEY=$(id) x"}`},
		{`{"command":"` + command + `","timeout_ms":5}`, `{"command":"` + command + `","timeout_ms":5}`},
		{`{"other":"` + command + ` -v"}`, `{"other":"API_TOKEN=[REDACTED] curl -d @x http://h -v"}`},
	}
	verbatim := func(s string) bool { return s == command }
	for _, c := range cases {
		if got := string(PreviewJSON([]byte(c.in), verbatim)); got != c.want {
			t.Errorf("PreviewJSON(%s) = %s, want %s", c.in, got, c.want)
		}
	}
	if got := string(JSON([]byte(`{"secret":{"a":"x y"},"password":"$(touch x)"}`))); got != `{"secret":"[REDACTED]","password":"[REDACTED]"}` {
		t.Errorf("JSON changed: %s", got)
	}
}
