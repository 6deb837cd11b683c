package bashguard

import (
	"slices"
	"strings"
	"testing"
)

// TestAnalyze checks the facts an Analysis gives: the commands that run,
// their arguments, how they are reached, their input and redirections,
// the URLs and hosts handed to HTTP clients, the shell code they run and
// the parts the guard cannot know.
func TestAnalyze(t *testing.T) {
	t.Parallel()
	find := func(a *Analysis, name string) *Command {
		for i := range a.Commands {
			if a.Commands[i].Name == name {
				return &a.Commands[i]
			}
		}
		return nil
	}
	t.Run("wrapper, client, pipe", func(t *testing.T) {
		a := mustAnalyze(t, `cd /app && timeout 5 curl -s -H 'X-A: b' 'https://api.example.com/v1/items?x=1' | jq -r '.[0].id' > id.txt 2>&1`)
		var names []string
		for _, c := range a.Commands {
			names = append(names, c.Name)
		}
		if !slices.Equal(names, []string{"cd", "timeout", "curl", "jq"}) {
			t.Fatalf("commands = %q", names)
		}
		curl := find(a, "curl")
		if !slices.Equal(curl.Via, []string{"timeout"}) || !slices.Equal(curl.Args, []string{"curl", "-s", "-H", "X-A: b", "https://api.example.com/v1/items?x=1"}) {
			t.Errorf("curl = %+v", curl)
		}
		if curl.HTTP == nil || !slices.Equal(curl.HTTP.URLs, []string{"https://api.example.com/v1/items?x=1"}) || !slices.Equal(curl.HTTP.Hosts, []string{"api.example.com"}) || curl.HTTP.ReadsStdin {
			t.Errorf("curl.HTTP = %+v", curl.HTTP)
		}
		jq := find(a, "jq")
		if jq.Stdin != "the output of curl" || !slices.Equal(jq.Redirects, []Redirect{{Op: ">", Target: "id.txt"}, {Op: "2>&", Target: "1"}}) {
			t.Errorf("jq = %+v", jq)
		}
		if curl.Line != 1 || curl.Col != 12 {
			t.Errorf("curl at %d:%d, want 1:12", curl.Line, curl.Col)
		}
		if len(a.Findings) != 0 || len(a.Unknowns) != 0 || a.Verdict() != nil {
			t.Errorf("findings %v unknowns %v", a.Findings, a.Unknowns)
		}
	})
	t.Run("nested shell and stdin body", func(t *testing.T) {
		a := mustAnalyze(t, "echo ok\nbash -c 'curl -d @- http://127.0.0.1:3000/x <<< \"{\\\"a\\\":1}\"'")
		bash, curl := find(a, "bash"), find(a, "curl")
		if bash.Shell == nil || bash.Shell.From != "argument" || !bash.Shell.Known || bash.Line != 2 {
			t.Errorf("bash = %+v shell %+v", bash, bash.Shell)
		}
		if !slices.Equal(curl.Via, []string{"bash -c"}) || curl.Stdin != "a here-string" || !curl.HTTP.ReadsStdin || curl.Line != 2 {
			t.Errorf("curl = %+v http %+v", curl, curl.HTTP)
		}
		if len(a.Findings) != 1 || a.Findings[0].Payload != `{"a":1}` || a.Findings[0].Via != "a here-string" || a.Findings[0].Line != 2 {
			t.Errorf("findings = %+v", a.Findings)
		}
	})
	t.Run("unknown parts", func(t *testing.T) {
		a := mustAnalyze(t, `"$TOOL" --version; curl -s https://x.example/install.sh | sh`)
		if c := a.Commands[0]; !c.Dynamic || c.Name != "" || !slices.Equal(c.Args, []string{"…", "--version"}) {
			t.Errorf("first command = %+v", c)
		}
		sh := find(a, "sh")
		if sh.Shell == nil || sh.Shell.From != "stdin" || sh.Shell.Known {
			t.Errorf("sh = %+v", sh.Shell)
		}
		if len(a.Unknowns) != 1 || a.Unknowns[0].Kind != UnknownCode || !a.Unknowns[0].ReachesShell || !strings.Contains(a.Unknowns[0].Reason, "the output of curl") {
			t.Errorf("unknowns = %+v", a.Unknowns)
		}
	})
	t.Run("a shell reading a file on disk", func(t *testing.T) {
		for _, cmd := range []string{"sh < script.sh", "cat script.sh | sh", "bash script.sh", "source script.sh"} {
			a := mustAnalyze(t, cmd)
			c := a.Commands[len(a.Commands)-1]
			if c.Shell == nil || c.Shell.Known {
				t.Errorf("%s: shell %+v: the guard reads no files, so it does not know the code", cmd, c.Shell)
			}
			if a.Verdict() != nil {
				t.Errorf("%s refused: a script on disk is allowed", cmd)
			}
		}
	})
	t.Run("function and alias bodies", func(t *testing.T) {
		a := mustAnalyze(t, "post(){ curl -s \"$1\"; }\npost http://h/a")
		var defined, called int
		for _, c := range a.Commands {
			if c.Name == "curl" && c.Defined {
				defined++
			}
			if c.Name == "curl" && !c.Defined && slices.Equal(c.Via, []string{"function post"}) && slices.Equal(c.HTTP.URLs, []string{"http://h/a"}) {
				called++
			}
		}
		if defined != 1 || called != 1 {
			t.Errorf("curl defined %d, called %d times: %+v", defined, called, a.Commands)
		}
	})
	t.Run("argv", func(t *testing.T) {
		a, err := AnalyzeArgv([]string{"/bin/sh", "-c", `curl -d '{"a":1}' http://x`}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(a.Findings) != 1 || find(a, "curl") == nil || find(a, "sh").Shell.From != "argument" {
			t.Errorf("analysis = %+v", a)
		}
		if err := CheckArgv([]string{"node", "server.js", "--config", `{"port":3000}`}, nil); err != nil {
			t.Errorf("a unit's own argv with JSON is not handed to an HTTP client: %v", err)
		}
		if err := CheckArgv([]string{"curl", "-d", `{"a":1}`, "http://x"}, nil); err == nil {
			t.Error("curl with inline JSON as argv passed")
		}
		if err := CheckArgv([]string{"sh", "-c", `curl -d "$BODY" http://x`}, map[string]string{"BODY": `{"a":1}`}); err == nil {
			t.Error("a shell handing the unit's env value to curl passed")
		}
	})
}

func mustAnalyze(t *testing.T, cmd string) *Analysis {
	t.Helper()
	a, err := Analyze(cmd)
	if err != nil {
		t.Fatalf("Analyze(%q): %v", cmd, err)
	}
	return a
}
