// Command fakemcp is a small MCP server over stdio, built by the upstream
// tests with the go-sdk. Its behaviour is chosen with environment variables:
//
//	FAKEMCP_READY_FILE  exit at once (status 1) unless this file exists: a
//	                    server that is down until the test "brings it back"
//	FAKEMCP_HANG        never answer anything (discovery must time out)
//	FAKEMCP_STDERR      a line written to stderr at start
//	FAKEMCP_DESC_FILE   the description of echo is this file's content when
//	                    it exists; the redescribe tool writes it
//	FAKEMCP_CALLS_FILE  every tools/call appends a line "TOOL PID STARTTICKS"
//	                    here: how often a call reached the server, and which
//	                    process (pid and start time) served it
//
// The probe tool runs a program (the confinement tests' probe) as the
// server's child, handing it every descriptor the server holds, and answers
// with what it printed: what a hostile server could do.
//
// The wedge tool makes the process misbehave the ways a real server can:
// hang (this call and every later request never answered), hang_later (this
// call answered, then nothing), close_stdout (stdout closed, the process
// stays) — in every mode the process ignores SIGTERM from then on, so only
// SIGKILL ends it.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/internal/procs"
)

func main() {
	if f := os.Getenv("FAKEMCP_READY_FILE"); f != "" {
		if _, err := os.Stat(f); err != nil {
			fmt.Fprintln(os.Stderr, "fakemcp: not ready:", err)
			os.Exit(1)
		}
	}
	if s := os.Getenv("FAKEMCP_STDERR"); s != "" {
		fmt.Fprintln(os.Stderr, s)
	}
	if os.Getenv("FAKEMCP_HANG") != "" {
		time.Sleep(time.Hour)
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "fakemcp", Version: "1"}, nil)
	// wedged makes every request that arrives afterwards block forever.
	var wedged atomic.Bool
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if wedged.Load() {
				select {}
			}
			if method == "tools/call" {
				if f := os.Getenv("FAKEMCP_CALLS_FILE"); f != "" {
					if p, ok := req.GetParams().(*mcp.CallToolParamsRaw); ok {
						appendLine(f, fmt.Sprintf("%s %d %d", p.Name, os.Getpid(), startTicks()))
					}
				}
			}
			return next(ctx, method, req)
		}
	})
	obj := func(props string, required ...string) json.RawMessage {
		req := ""
		if len(required) > 0 {
			b, _ := json.Marshal(required)
			req = `,"required":` + string(b)
		}
		return json.RawMessage(`{"type":"object","properties":{` + props + `}` + req + `,"additionalProperties":false}`)
	}
	text := func(format string, args ...any) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf(format, args...)}}}
	}
	args := func(req *mcp.CallToolRequest) map[string]any {
		m := map[string]any{}
		_ = json.Unmarshal(req.Params.Arguments, &m)
		return m
	}
	addEcho := func(desc string) {
		s.AddTool(&mcp.Tool{Name: "echo", Description: desc, InputSchema: obj(`"text":{"type":"string","minLength":1}`, "text"),
			// Upstream annotations claim read-only; toolhost must not trust them.
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
			func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				t := args(req)["text"]
				r := text("echo: %v", t)
				r.StructuredContent = map[string]any{"echo": t}
				return r, nil
			})
	}
	desc := "Echo text back."
	if f := os.Getenv("FAKEMCP_DESC_FILE"); f != "" {
		if b, err := os.ReadFile(f); err == nil {
			desc = string(b)
		}
	}
	addEcho(desc)
	s.AddTool(&mcp.Tool{Name: "redescribe", Description: "Change the description of echo (the server then announces tools/list_changed).",
		InputSchema: obj(`"description":{"type":"string"}`, "description")},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			d, _ := args(req)["description"].(string)
			if f := os.Getenv("FAKEMCP_DESC_FILE"); f != "" {
				if err := os.WriteFile(f, []byte(d), 0o644); err != nil {
					return nil, err
				}
			}
			addEcho(d)
			return text("echo is now: %s", d), nil
		})
	s.AddTool(&mcp.Tool{Name: "wedge", Description: "Make the server misbehave.",
		InputSchema: obj(`"mode":{"enum":["hang","hang_later","close_stdout"]}`, "mode")},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			signal.Ignore(syscall.SIGTERM)
			switch args(req)["mode"] {
			case "hang":
				wedged.Store(true)
				select {}
			case "close_stdout":
				wedged.Store(true)
				_ = os.Stdout.Close()
				select {}
			}
			wedged.Store(true)
			return text("wedged"), nil
		})
	s.AddTool(&mcp.Tool{Name: "write_note", Description: "Pretend to store a note.", InputSchema: obj(`"note":{"type":"string"}`, "note")},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return text("stored %v", args(req)["note"]), nil
		})
	s.AddTool(&mcp.Tool{Name: "fail", Description: "Always report a tool error.", InputSchema: obj(``)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			r := text("fake failure: the widget is broken")
			r.IsError = true
			return r, nil
		})
	s.AddTool(&mcp.Tool{Name: "crash", Description: "Exit the server in the middle of the call.", InputSchema: obj(``)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			os.Exit(3)
			return nil, nil
		})
	s.AddTool(&mcp.Tool{Name: "pid", Description: "Report the server's pid.", InputSchema: obj(``)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			r := text("%d", os.Getpid())
			r.StructuredContent = map[string]any{"pid": os.Getpid()}
			return r, nil
		})
	s.AddTool(&mcp.Tool{Name: "spawn_child", Description: "Start a long-running child process and report its pid.", InputSchema: obj(``)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			c := exec.Command("sleep", "300")
			if err := c.Start(); err != nil {
				return nil, err
			}
			r := text("%d", c.Process.Pid)
			r.StructuredContent = map[string]any{"pid": c.Process.Pid}
			return r, nil
		})
	s.AddTool(&mcp.Tool{Name: "slow", Description: "Sleep ms milliseconds.", InputSchema: obj(`"ms":{"type":"integer","minimum":0}`, "ms")},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			ms, _ := args(req)["ms"].(float64)
			select {
			case <-time.After(time.Duration(ms) * time.Millisecond):
			case <-ctx.Done():
			}
			return text("slept"), nil
		})
	s.AddTool(&mcp.Tool{Name: "draft2020", Description: "A schema that declares draft 2020-12.",
		InputSchema: json.RawMessage(`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return text("n=%v", args(req)["n"]), nil
		})
	s.AddTool(&mcp.Tool{Name: "broken_schema", Description: "A schema no validator can compile.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"x":{"type":"no-such-type"}}}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return text("unreachable"), nil
		})
	s.AddTool(&mcp.Tool{Name: "a_tool_name_that_is_much_too_long_to_fit_once_the_server_prefix_is_added", Description: "Long name.", InputSchema: obj(``)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return text("long"), nil })
	s.AddTool(&mcp.Tool{Name: "probe", Description: "Run a program with the server's descriptors and report its output.",
		InputSchema: obj(`"argv":{"type":"array","items":{"type":"string"},"minItems":1}`, "argv")},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct{ Argv []string }
			if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
				return nil, err
			}
			c := exec.Command(in.Argv[0], in.Argv[1:]...)
			c.ExtraFiles = ownFiles()
			out, err := c.Output()
			r := text("%s", out)
			if err != nil {
				r = text("%s\nerror: %v", out, err)
			}
			return r, nil
		})
	s.AddTool(&mcp.Tool{Name: "env", Description: "Report an environment variable.", InputSchema: obj(`"name":{"type":"string"}`, "name")},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			n, _ := args(req)["name"].(string)
			return text("%s=%s", n, strings.TrimSpace(os.Getenv(n))), nil
		})
	s.AddTool(&mcp.Tool{Name: "traceparent", Description: "Report the W3C traceparent the call's _meta carried.", InputSchema: obj(``)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			tp, _ := req.Params.Meta["traceparent"].(string)
			r := text("%s", tp)
			r.StructuredContent = map[string]any{"traceparent": tp}
			return r, nil
		})
	s.AddTool(&mcp.Tool{Name: "add_tool", Description: "Add a tool named extra_<suffix> (the server then announces tools/list_changed).",
		InputSchema: obj(`"suffix":{"type":"string","pattern":"^[a-z0-9]+$"}`, "suffix")},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			name := fmt.Sprintf("extra_%v", args(req)["suffix"])
			s.AddTool(&mcp.Tool{Name: name, Description: "Added at run time.", InputSchema: obj(``)},
				func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					return text("%s here", name), nil
				})
			return text("added %s", name), nil
		})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Fatal(err)
	}
}

// startTicks is this process's start time (field 22 of /proc/self/stat),
// which with the pid names it uniquely.
func startTicks() uint64 {
	st, err := procs.ReadStat(os.Getpid())
	if err != nil {
		return 0
	}
	return st.StartTicks
}

func appendLine(path, line string) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return
	}
	_, _ = f.WriteString(line + "\n")
	_ = f.Close()
}

// held keeps the *os.File of every descriptor handed to a probe referenced:
// collected, it would close a descriptor the server still uses.
var held []*os.File

// ownFiles are the server's open descriptors above stderr.
func ownFiles() []*os.File {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return nil
	}
	var files []*os.File
	for _, e := range entries {
		fd, err := strconv.Atoi(e.Name())
		if err == nil && fd > 2 {
			files = append(files, os.NewFile(uintptr(fd), e.Name()))
		}
	}
	held = append(held, files...)
	return files
}
