package claudecode

import (
	"fmt"
	"strings"
)

// role is what the prompt says of an agent of one loop of the devloop.
type role struct {
	// title names the role ("Product manager").
	title string
	// delegate completes "Use it to ...": when the main thread hands work
	// to the agent.
	delegate string
	// job is the role in a paragraph.
	job string
	// steps are the working steps, in order, naming the tools to use.
	steps []string
}

// roles are the six loops of configs/agents.json. An agent of another
// loop (a custom agents file) gets a prompt made of its allow-list, its
// neighbours and its tools alone.
var roles = map[string]role{
	"prd": {
		title:    "Product manager",
		delegate: "write or change the product requirements (the PRD site under prd/: chapters, units, prototype pages), at the start of a feature and whenever the requirements change",
		job: "You turn the user's feature request into the PRD: a static site of chapters whose top-level sections are units with stable ids, " +
			"that the Architect designs from and the Tester tests against.",
		steps: []string{
			"Write your plan with write_todolist and keep it current with update_todo_item.",
			"Create the site once with bootstrap_prd_site (title and chapters); it refuses to overwrite an existing site unless overwrite is true.",
			"Write each chapter with write_chapter (site prd): every top-level <section> with a heading becomes a unit, and its data-unit id stays stable across edits. Prototype pages go through write_mvcp_page.",
			"Before changing a page that exists, its old version is archived for you; diff_units and echo_diff show what changed, unit by unit.",
			"Finish with update_search_index (site prd) and validate_prd_site; fix every error it lists before you hand over.",
			"Record the hand-over with timeline_append (kind handoff) naming the chapters and units the Architect should read.",
		},
	},
	"sdd": {
		title:    "Architect",
		delegate: "design from the PRD: the SDD site under sdd/ and the API contracts under contracts/, after the PRD is written and whenever it changes",
		job: "You design the system from the PRD: the SDD site, whose sections reference the PRD units they implement, and the API contracts " +
			"the Coder implements and the Tester and Integrator check against.",
		steps: []string{
			"Write your plan with write_todolist and keep it current with update_todo_item.",
			"Read the PRD (prd/*.html, prd/site.json) with Read, Glob and Grep.",
			"Create the SDD with bootstrap_sdd_site and write its chapters with write_chapter (site sdd); mark each section with data-prd-ref=\"<page>#<unit>\" for the PRD unit it implements.",
			"Write each contract as contracts/<name>.json with Write: {name, version, endpoints: [{id, method, path, request?, response, status}]}; then record its hash with hash_contract (path contracts/<name>.json).",
			"Check with validate_sdd_consistency: PRD units no section references, contracts the SDD never names, and contracts changed since their hash was recorded.",
			"Record the hand-over with timeline_append (kind handoff) naming the contracts and their sha256.",
		},
	},
	"code": {
		title:    "Coder",
		delegate: "implement a unit under units/<unit>/ from the SDD and its contracts, and fix the bugs the Bug Triager sends back",
		job:      "You implement the design: one unit per service under units/<unit>/, typed from the contracts, built and checked with the unit's own tools.",
		steps: []string{
			"Write your plan with write_todolist and keep it current with update_todo_item.",
			"Generate the contract's types and route constants with contract_bridge (contract, unit_id, lang ts or go) instead of writing them by hand; the header carries the contract's hash.",
			"Write the code with Write and Edit under units/<unit>/ only; sandbox_check tells you beforehand whether a path is yours.",
			"Build and run it with Bash (npm install, npx tsc, go build ...): every command runs confined by the kernel to your allow-list.",
			"Before you hand over, check with hash_contract that the contract did not change under you, and log what you did with append_coder_log.",
			"Record the hand-over with timeline_append (kind handoff) naming the unit and how to start it.",
		},
	},
	"test": {
		title:    "Tester",
		delegate: "write and run the tests of a unit (Vitest) and open a bug per distinct failure, after the Coder hands a unit over",
		job: "You test what the Coder built against the PRD and the contracts: tests under units/<unit>/tests/, Vitest reports under reports/, " +
			"and one bug per distinct cause of failure.",
		steps: []string{
			"Write your plan with write_todolist and keep it current with update_todo_item.",
			"Write the tests under units/<unit>/tests/ with Write and Edit.",
			"Run them with Bash, writing a JSON report: npx vitest run --reporter=json --outputFile=reports/<unit>.json (the command runs confined to your allow-list).",
			"Read the report with parse_vitest (report_path reports/<unit>.json): totals first, then the failures grouped by cause; hint_builder turns them into one hint per cause for the Coder.",
			"Open one bug per distinct cause with bug_open (title, unit_id, severity, evidence: test, report); a duplicate returns the existing id. bug_list shows what is open.",
			"Record the hand-over with timeline_append (kind handoff) naming the bugs opened.",
		},
	},
	"integrate": {
		title:    "Integrator",
		delegate: "start the units together, wait for them to be healthy and run the HTTP cases across them (integration/), after the Coder and the Tester are done",
		job: "You run the units together as the contracts say they work: each unit in its own process group on its own port, " +
			"HTTP cases against them, and a bug for every case that fails.",
		steps: []string{
			"Write your plan with write_todolist and keep it current with update_todo_item.",
			"Reserve ports with port_picker, then start the units with spawn_units (action start, argv without a shell, the port passed as PORT).",
			"Wait with health_wait (targets with a health URL); a unit that exited is reported at once with its exit code and stderr tail.",
			"Run each case with run_case (case_path integration/cases/<case>.json, or an inline case); steps use {{port:<unit>}} and {{var:<name>}} placeholders, parse_placeholder shows how they resolve.",
			"On a failure read collect_stderr for the units' error signatures, then open a bug with bug_open citing the run file.",
			"Stop the units with spawn_units (action stop) when you are done, and record the hand-over with timeline_append (kind handoff).",
		},
	},
	"triage": {
		title:    "Bug triager",
		delegate: "triage the open bugs: verify their evidence, classify each and find duplicates, after the Tester or the Integrator opened bugs",
		job: "You decide what each open bug is before the Coder works on it: whether its evidence holds, what kind of fault it is, " +
			"whether it repeats an earlier bug. You change no code: your findings are the triage records the tools write.",
		steps: []string{
			"Write your plan with write_todolist and keep it current with update_todo_item.",
			"List the open bugs with bug_list (status open).",
			"For each, verify its evidence with extract_evidence (bug_id): what was found where the bug cites it, and what is missing.",
			"Classify it with category_classifier (bug_id): contract_mismatch, logic_error, env_config, flaky, test_error, dependency or unknown, with the signals that decided.",
			"For a contract mismatch, compare the contract with the unit's routes with diff_contract_vs_impl (contract, unit_id); find earlier bugs like it with find_similar_bug.",
			"Move a triaged bug on with bug_transition (to triaged), and record the hand-over to the Coder with timeline_append (kind handoff).",
		},
	},
}

// roleOf returns a's role; ok is false for a loop the devloop does not
// define.
func roleOf(a *Agent) (role, bool) {
	r, ok := roles[a.Loop]
	return r, ok
}

// description is the frontmatter description: when the main thread should
// delegate to a. Plain ASCII, one line.
func (p *Project) description(a *Agent) string {
	r, ok := roleOf(a)
	step := fmt.Sprintf("step %d of %d", p.step(a), len(p.Agents))
	var b strings.Builder
	if ok {
		fmt.Fprintf(&b, "%s of the toolhost devloop (%s, loop %s). Use it to %s.", r.title, step, a.Loop, r.delegate)
	} else {
		fmt.Fprintf(&b, "Agent %s of the toolhost devloop (%s, loop %s). Use it for the work its allow-list covers: %s.", a.Name, step, a.Loop, strings.Join(a.Sandbox.WriteAllowList, ", "))
	}
	if len(a.Upstream) > 0 {
		fmt.Fprintf(&b, " Comes after %s.", strings.Join(a.Upstream, " and "))
	}
	if len(a.Downstream) > 0 {
		fmt.Fprintf(&b, " Hands its work to %s.", strings.Join(a.Downstream, " and "))
	}
	return b.String()
}

// prompt is the system prompt of a: its role, what it owns, its
// neighbours in the loop, and how to use its tools.
func (p *Project) prompt(a *Agent) string {
	r, known := roleOf(a)
	var b strings.Builder
	para := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n\n", args...) }
	title := a.Name
	if known {
		title = r.title
	}
	para("You are the %s (%s) of the toolhost devloop, step %d of %d: %s.", title, a.Name, p.step(a), len(p.Agents), p.loopLine())
	if known {
		para("%s", r.job)
	}

	b.WriteString("## What is yours\n\n")
	para("You may write only these paths of the project (%s), relative to the project dir: %s. "+
		"toolhost enforces it: a Write or Edit outside them is refused before it runs, your commands run confined by the kernel to them, "+
		"and toolhost's own stores (.toolhost/, timeline.ndjson, bugs/) are written only through its tools. Read anything you need.",
		p.Dir, strings.Join(a.Sandbox.WriteAllowList, ", "))
	if !a.Allows("Bash") {
		para("You have no shell: your tools do the work.")
	}

	b.WriteString("## Your place in the loop\n\n")
	if len(a.Upstream) > 0 {
		para("You start from the work of %s: read what they wrote and the timeline's handoff entries before you begin.", strings.Join(a.Upstream, " and "))
	} else {
		para("You start the loop from the user's request.")
	}
	if len(a.Downstream) > 0 {
		para("When you are done, %s take over: end with a short report of what you produced (paths, ids, hashes) and what they should do next.", strings.Join(a.Downstream, " and "))
	} else {
		para("You end the loop: report what you found.")
	}

	b.WriteString("## How to work\n\n")
	if known {
		for i, s := range r.steps {
			fmt.Fprintf(&b, "%d. %s\n", i+1, s)
		}
		b.WriteString("\n")
	}
	para("Tool results are JSON. ok false means an expected failure: its reason says what to change. A result too large to return whole says so in truncated, " +
		"with the totals and the most useful entries first: call the tool again with the page it names for more, or read the whole result from the file it names.")
	if a.Allows("Bash") {
		para("Never put JSON inline in a command line (curl -d '{...}'): the Bash guard refuses it. Write the JSON to a file first and pass the file: " +
			"echo '{\"k\":\"v\"}' > \"$TMPDIR/body.json\" && curl -d @\"$TMPDIR/body.json\" ... ($TMPDIR is your command's own temp dir).")
	}

	b.WriteString("## Your toolhost tools\n\n")
	for _, t := range a.Tools {
		fmt.Fprintf(&b, "- %s: %s\n", ToolName(a.Agent, t.Name), t.Title)
	}
	if cli := a.CLITools(); len(cli) > 0 {
		fmt.Fprintf(&b, "\nClaude Code's own tools you have: %s.\n", strings.Join(cli, ", "))
	}
	return b.String()
}

// loopLine is the devloop's agents in order.
func (p *Project) loopLine() string {
	names := make([]string, len(p.Agents))
	for i, a := range p.Agents {
		names[i] = a.Name
	}
	return strings.Join(names, " -> ")
}
