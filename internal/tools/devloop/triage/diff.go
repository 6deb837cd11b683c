package triage

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/toolhost/toolhost/internal/callctx"
	"github.com/toolhost/toolhost/internal/contract"
	"github.com/toolhost/toolhost/internal/fault"
	"github.com/toolhost/toolhost/internal/tool"
)

// maxSourceBytes skips files too large to be hand-written route code
// (bundles, generated output).
const maxSourceBytes = 2 << 20

// implRoute is a route found in a unit's source.
type implRoute struct {
	Method string // upper case; ALL matches any method
	Path   string
	File   string
	Line   int
	pos    int // offset in the parsed source, to keep the source's order within a line
}

// contractRoute is one endpoint of a contract with where it is declared.
type contractRoute struct {
	ID, Method, Path, Norm string
	File                   string
	Line                   int
	// Status is the success status the contract declares (0 when none).
	Status int
}

// normalizePath rewrites every path parameter (:id, :id?, :id(\d+), {id},
// {id...}, <id>, <int:id>, [id]) to {} and drops a trailing slash and Go's
// {$} end anchor, so the same route written for different routers compares
// equal.
func normalizePath(p string) string {
	if i := strings.IndexAny(p, "?#"); i >= 0 && !strings.Contains(p[:i], ":") {
		p = p[:i]
	}
	p = strings.TrimSuffix(p, "{$}")
	segs := strings.Split(p, "/")
	for i, s := range segs {
		switch {
		case strings.HasPrefix(s, ":"),
			strings.HasPrefix(s, "{") && strings.HasSuffix(s, "}"),
			strings.HasPrefix(s, "<") && strings.HasSuffix(s, ">"),
			strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]"):
			segs[i] = "{}"
		}
	}
	out := strings.Join(segs, "/")
	if len(out) > 1 {
		out = strings.TrimRight(out, "/")
	}
	if out == "" {
		out = "/"
	}
	return out
}

// loadContract reads the named contract (any format the contract package
// reads) with the line of each endpoint.
func loadContract(c *callctx.Ctx, name string) (*contract.Contract, []contractRoute, error) {
	p, data, err := contract.Locate(func(rel string) ([]byte, error) { return readRel(c, rel) }, name)
	if err != nil {
		return nil, nil, err
	}
	ct, err := contract.Load(func(rel string) ([]byte, error) { return readRel(c, rel) }, p, data, name)
	if err != nil {
		return nil, nil, fault.Content(fmt.Errorf("%s: %w", p, err))
	}
	var rs []contractRoute
	for _, e := range ct.Endpoints {
		rs = append(rs, contractRoute{ID: e.ID, Method: e.Method, Path: e.Path, Norm: normalizePath(e.Path), File: e.File, Line: e.Line, Status: e.Status})
	}
	return ct, rs, nil
}

// contractFiles lists the contract files in contracts/ (not the hash
// record), sorted.
func contractFiles(c *callctx.Ctx) ([]string, error) {
	return walkFiles(c, contract.Dir, func(rel string) bool { return contract.NameOf(rel) != "" })
}

// loadContractRoutes reads every contract in contracts/; broken ones are
// skipped (the contract tools report them).
func loadContractRoutes(c *callctx.Ctx) ([]contractRoute, error) {
	files, err := contractFiles(c)
	if err != nil {
		return nil, err
	}
	var out []contractRoute
	seen := map[string]bool{}
	for _, f := range files {
		name := contract.NameOf(f)
		if seen[name] {
			continue
		}
		seen[name] = true
		if _, rs, err := loadContract(c, name); err == nil {
			out = append(out, rs...)
		}
	}
	return out, nil
}

// DiffInput names the contract and the unit to compare.
type DiffInput struct {
	Contract string `json:"contract" jsonschema:"pattern=^[a-z0-9][a-z0-9_-]{0\\,63}$" jsonschema_description:"contract name: contracts/<contract>.json, .yaml or .yml (the toolhost format or OpenAPI 3.0/3.1)"`
	UnitID   string `json:"unit_id" jsonschema:"pattern=^[A-Za-z0-9_][A-Za-z0-9._-]{0\\,63}$" jsonschema_description:"the unit whose source (units/<unit_id>/, tests and node_modules excluded) is scanned for routes"`
	tool.Page
}

// RouteRef is a route with where it is declared (the contract for missing
// routes, the source for extra ones).
type RouteRef struct {
	Method     string `json:"method" jsonschema_description:"HTTP method; ALL for a route that accepts any method"`
	Path       string `json:"path" jsonschema_description:"the path as written there"`
	EndpointID string `json:"endpoint_id,omitempty" jsonschema_description:"the contract endpoint's id"`
	File       string `json:"file" jsonschema_description:"project-relative file"`
	Line       int    `json:"line" jsonschema_description:"1-based line"`
	Hedge      string `json:"hedge,omitempty" jsonschema_description:"for a missing route: the unresolved routes (only their method known) that may serve it after all"`
}

// MethodMismatch is a contract path the unit serves with another method.
type MethodMismatch struct {
	Path           string `json:"path" jsonschema_description:"the contract's path"`
	EndpointID     string `json:"endpoint_id" jsonschema_description:"the contract endpoint's id"`
	ContractMethod string `json:"contract_method" jsonschema_description:"the method the contract declares"`
	ImplMethod     string `json:"impl_method" jsonschema_description:"the method the unit implements on that path"`
	ContractFile   string `json:"contract_file" jsonschema_description:"the contract file"`
	ContractLine   int    `json:"contract_line" jsonschema_description:"line of the endpoint in the contract"`
	File           string `json:"file" jsonschema_description:"source file of the implemented route"`
	Line           int    `json:"line" jsonschema_description:"line of the implemented route"`
}

// UnresolvedRoute is a route (or a mount) in the source whose path the
// analysis cannot know without running the code.
type UnresolvedRoute struct {
	Method string `json:"method" jsonschema_description:"HTTP method; ALL for a mount or a route of any method"`
	Path   string `json:"path" jsonschema_description:"what is known of the path: the prefixes it is mounted under, * for the part that is computed"`
	File   string `json:"file" jsonschema_description:"project-relative file of the route or mount"`
	Line   int    `json:"line" jsonschema_description:"1-based line"`
	Reason string `json:"reason" jsonschema_description:"why it cannot be resolved statically"`
}

// Unparsed is a source file that could not be read as code.
type Unparsed struct {
	File   string `json:"file" jsonschema_description:"project-relative file"`
	Reason string `json:"reason" jsonschema_description:"why it was skipped"`
}

// DiffOutput is the result of diff_contract_vs_impl.
type DiffOutput struct {
	tool.Status
	Contract     string `json:"contract,omitempty" jsonschema_description:"the contract compared"`
	UnitID       string `json:"unit_id,omitempty" jsonschema_description:"the unit compared"`
	FilesScanned int    `json:"files_scanned" jsonschema_description:"source files read"`
	RoutesFound  int    `json:"routes_found" jsonschema_description:"routes found in the unit's source"`
	// A large result's pages show what is wrong before what matches.
	Matched        []RouteRef        `json:"matched" page:"7" jsonschema_description:"contract endpoints the unit implements (where in the source)"`
	Missing        []RouteRef        `json:"missing" page:"1" jsonschema_description:"contract endpoints the unit does not implement (where in the contract)"`
	Extra          []RouteRef        `json:"extra" page:"3" jsonschema_description:"routes the unit implements that the contract does not declare (where in the source)"`
	MethodMismatch []MethodMismatch  `json:"method_mismatch" page:"2" jsonschema_description:"contract paths the unit serves with a different method"`
	Unresolved     []UnresolvedRoute `json:"unresolved" page:"5" jsonschema_description:"routes and mounts whose path is computed at run time (or a router no app mounts): neither missing nor extra, each with its file and line to read"`
	Undecided      []RouteRef        `json:"undecided,omitempty" page:"4" jsonschema_description:"contract endpoints no resolved route serves but an unresolved one may (same method, path under its known prefix): not reported missing"`
	Unparsed       []Unparsed        `json:"unparsed,omitempty" page:"6" jsonschema_description:"source files skipped, with the reason"`
	Truncated      *tool.Truncated   `json:"truncated,omitempty" jsonschema_description:"set when the result was too large to return at once: which page this is, how to get the next, and the file holding the whole result"`
}

// DiffContractVsImpl is the diff_contract_vs_impl tool.
func DiffContractVsImpl() tool.Tool {
	return tool.New(tool.Spec{
		Name:  "diff_contract_vs_impl",
		Title: "Diff contract vs implementation",
		Description: "Compare a contract's endpoints with the routes a unit implements, read from the syntax trees of its JS/TS source " +
			"(Express apps and routers mounted with use() across files through require/import, route() chains and chained calls, Fastify register with prefix, nested and inline, " +
			"Hono route() of chained sub-apps, Koa and @koa/router with prefix) and Go source (net/http ServeMux with Go 1.22 \"GET /path/{id}\" patterns and " +
			"StripPrefix, chi Route/Group/Mount, gin, echo and fiber groups, gorilla subrouters, methods of handler types handed a group), against the contract's " +
			"routes under its servers' base path. Path parameters (:id, {id}, <id>) are normalised first. " +
			"Returns missing, extra and method_mismatch routes with file and line; a route whose path is computed at run time is unresolved " +
			"(with file and line), never missing or extra, and the contract routes it may serve are undecided or hedged. A unit whose routes the tool cannot read " +
			"(NestJS decorators, no known framework) is ok:false \"routes not readable\".",
		Effect: tool.ReadOnly, Timeout: 30 * time.Second,
	}, diffContractVsImpl)
}

var jsExts = map[string]bool{".js": true, ".mjs": true, ".cjs": true, ".jsx": true, ".ts": true, ".mts": true, ".cts": true, ".tsx": true}

// testDirs hold tests, whose client calls (request(app).get('/x')) are not
// routes.
var testDirs = map[string]bool{"test": true, "tests": true, "__tests__": true, "e2e": true, "testdata": true}

func isSource(rel string) bool {
	ext := path.Ext(rel)
	if !jsExts[ext] && ext != ".go" {
		return false
	}
	if strings.HasSuffix(rel, ".d.ts") || strings.HasSuffix(rel, "_test.go") || testFilePattern().MatchString(rel) {
		return false
	}
	for _, seg := range strings.Split(path.Dir(rel), "/") {
		if testDirs[seg] {
			return false
		}
	}
	return true
}

func diffContractVsImpl(_ context.Context, c *callctx.Ctx, in DiffInput) (DiffOutput, error) {
	if !callctx.ValidUnit(in.UnitID) {
		return DiffOutput{}, &tool.ValidationError{Field: "unit_id", Reason: fmt.Sprintf("%q is not a unit id; use the directory name under units/", in.UnitID)}
	}
	_, croutes, err := loadContract(c, in.Contract)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return DiffOutput{}, tool.Fail(nil, "no contract %s: contracts/%s.json, .yaml or .yml does not exist; contracts here: %s", in.Contract, in.Contract, listOrNone(contractNames(c)))
		}
		return DiffOutput{}, tool.Fail(err, "contract %s cannot be read", in.Contract)
	}
	unitDir := "units/" + in.UnitID
	files, err := walkFiles(c, unitDir, func(rel string) bool { return isSource(rel) || path.Base(rel) == tsconfigName })
	if err != nil {
		return DiffOutput{}, err
	}
	configs := map[string][]byte{}
	files = slices.DeleteFunc(files, func(rel string) bool {
		if path.Base(rel) != tsconfigName {
			return false
		}
		if data, err := readRel(c, rel); err == nil {
			configs[rel] = data
		}
		return true
	})
	if len(files) == 0 {
		if _, statErr := readRel(c, unitDir); errors.Is(statErr, fs.ErrNotExist) {
			return DiffOutput{}, tool.Fail(nil, "no unit %s: %s/ does not exist", in.UnitID, unitDir)
		}
		return DiffOutput{}, tool.Fail(nil, "%s/ has no JS/TS or Go source outside tests and node_modules; nothing to compare", unitDir)
	}
	out := DiffOutput{Status: tool.Status{OK: true}, Contract: in.Contract, UnitID: in.UnitID,
		Matched: []RouteRef{}, Missing: []RouteRef{}, Extra: []RouteRef{}, MethodMismatch: []MethodMismatch{}}
	var impl []implRoute
	jsFiles, goFiles := map[string][]byte{}, map[string][]byte{}
	for _, f := range files {
		data, err := readRel(c, f)
		if err != nil {
			out.Unparsed = append(out.Unparsed, Unparsed{File: f, Reason: readReason(c, err)})
			continue
		}
		if len(data) > maxSourceBytes {
			out.Unparsed = append(out.Unparsed, Unparsed{File: f, Reason: fmt.Sprintf("%d bytes: too large to be hand-written routes", len(data))})
			continue
		}
		out.FilesScanned++
		if path.Ext(f) == ".go" {
			goFiles[f] = data
		} else {
			jsFiles[f] = data
		}
	}
	found := jsAnalyze(jsFiles, configs)
	found.add(goAnalyze(goFiles))
	impl, out.Unresolved, out.Unparsed = found.routes, found.unresolved, append(out.Unparsed, found.unparsed...)
	// Routes the tool cannot read are never an app without routes.
	if len(found.unreadable) > 0 {
		return DiffOutput{}, tool.Fail(nil, "routes not readable: %s declares its routes with NestJS decorators (%s), which this tool does not read, so it cannot say which contract routes the unit serves; "+
			"start the unit (spawn_units) and probe the contract's routes (run_case) instead", unitDir, strings.Join(found.unreadable, ", "))
	}
	if found.routers == 0 && len(impl) == 0 && len(out.Unresolved) == 0 {
		return DiffOutput{}, tool.Fail(nil, "routes not readable: %s creates no app or router this tool reads (Express, Fastify, Hono, Koa and koa-router, net/http's ServeMux, chi, gin, echo, gorilla/mux, fiber)%s, so it cannot say which contract routes the unit serves; "+
			"start the unit (spawn_units) and probe the contract's routes (run_case) instead", unitDir, importsSeen(found.packages))
	}
	if out.Unresolved == nil {
		out.Unresolved = []UnresolvedRoute{}
	}
	sortUnresolved(out.Unresolved)
	out.RoutesFound = len(impl)
	compareRoutes(croutes, impl, &out)
	undecide(&out)
	return out, nil
}

// tsconfigName is the TypeScript config a unit's sources are compiled
// with: it says whether decorators are TypeScript's experimental ones.
const tsconfigName = "tsconfig.json"

// analysis is what the route readers found in a unit's sources.
type analysis struct {
	routes     []implRoute
	unresolved []UnresolvedRoute
	unparsed   []Unparsed
	// routers counts the apps and routers the sources create.
	routers int
	// unreadable are the places that declare routes in a way no reader
	// reads (NestJS's @Controller), "file:line @Controller('orders')".
	unreadable []string
	// packages are the packages the sources import, sorted.
	packages []string
}

func (a *analysis) add(b *analysis) {
	a.routes = append(a.routes, b.routes...)
	a.unresolved = append(a.unresolved, b.unresolved...)
	a.unparsed = append(a.unparsed, b.unparsed...)
	a.routers += b.routers
	a.unreadable = append(a.unreadable, b.unreadable...)
	a.packages = append(a.packages, b.packages...)
}

// importsSeen names the packages a unit imports, for a reason that says
// what the unit is built with.
func importsSeen(pkgs []string) string {
	if len(pkgs) == 0 {
		return " (it imports no package)"
	}
	sort.Strings(pkgs)
	pkgs = slices.Compact(pkgs)
	if len(pkgs) > 12 {
		pkgs = append(pkgs[:12], "…")
	}
	return " (it imports " + strings.Join(pkgs, ", ") + ")"
}

// compareRoutes pairs contract endpoints with implemented routes by
// normalised path: same method → matched; on a path both sides have,
// unpaired methods are method mismatches; the rest is missing or extra.
func compareRoutes(croutes []contractRoute, impl []implRoute, out *DiffOutput) {
	byPath := map[string][]implRoute{}
	seen := map[string]bool{}
	for _, r := range impl {
		n := normalizePath(r.Path)
		if key := r.Method + " " + n; !seen[key] {
			seen[key] = true
			byPath[n] = append(byPath[n], r)
		}
	}
	cByPath := map[string][]contractRoute{}
	var order []string
	for _, r := range croutes {
		if _, ok := cByPath[r.Norm]; !ok {
			order = append(order, r.Norm)
		}
		cByPath[r.Norm] = append(cByPath[r.Norm], r)
	}
	for _, n := range order {
		used := make([]bool, len(byPath[n]))
		var unC []contractRoute
		for _, cr := range cByPath[n] {
			idx := -1
			for i, ir := range byPath[n] {
				if ir.Method == cr.Method && !used[i] {
					idx = i
					break
				}
			}
			if idx < 0 {
				for i, ir := range byPath[n] {
					if ir.Method == "ALL" {
						idx = i
						break
					}
				}
			}
			if idx < 0 {
				unC = append(unC, cr)
				continue
			}
			used[idx] = true
			ir := byPath[n][idx]
			out.Matched = append(out.Matched, RouteRef{Method: cr.Method, Path: cr.Path, EndpointID: cr.ID, File: ir.File, Line: ir.Line})
		}
		var unI []implRoute
		for i, ir := range byPath[n] {
			if !used[i] {
				unI = append(unI, ir)
			}
		}
		for k, cr := range unC {
			if k < len(unI) {
				ir := unI[k]
				out.MethodMismatch = append(out.MethodMismatch, MethodMismatch{Path: cr.Path, EndpointID: cr.ID,
					ContractMethod: cr.Method, ImplMethod: ir.Method, ContractFile: cr.File, ContractLine: cr.Line, File: ir.File, Line: ir.Line})
				continue
			}
			out.Missing = append(out.Missing, RouteRef{Method: cr.Method, Path: cr.Path, EndpointID: cr.ID, File: cr.File, Line: cr.Line})
		}
		for k := len(unC); k < len(unI); k++ {
			out.Extra = append(out.Extra, toRef(unI[k]))
		}
		delete(byPath, n)
	}
	var rest []implRoute
	for _, rs := range byPath {
		rest = append(rest, rs...)
	}
	sort.Slice(rest, func(i, j int) bool {
		if rest[i].File != rest[j].File {
			return rest[i].File < rest[j].File
		}
		return rest[i].Line < rest[j].Line
	})
	for _, r := range rest {
		out.Extra = append(out.Extra, toRef(r))
	}
}

// sortUnresolved orders unresolved routes by file and line, as they are
// read.
func sortUnresolved(us []UnresolvedRoute) {
	sort.SliceStable(us, func(i, j int) bool {
		if us[i].File != us[j].File {
			return us[i].File < us[j].File
		}
		if us[i].Line != us[j].Line {
			return us[i].Line < us[j].Line
		}
		return us[i].Method < us[j].Method
	})
}

// undecide moves the missing endpoints an unresolved route may serve (same
// method or ALL, the path matching what is known of it, * standing for
// any segments: /api/*, /*/stats) to Undecided. A route of which nothing
// but the method is known (/*) could be any: it does not hide a missing
// route, which stays missing with a hedge naming it.
func undecide(out *DiffOutput) {
	missing := []RouteRef{}
	for _, m := range out.Missing {
		maybe := false
		var anywhere []string
		for _, u := range out.Unresolved {
			if u.Method != m.Method && u.Method != "ALL" {
				continue
			}
			pattern := normalizePath(u.Path)
			if strings.Trim(pattern, "/*") == "" {
				anywhere = append(anywhere, fmt.Sprintf("%s %s at %s:%d", u.Method, u.Path, u.File, u.Line))
				continue
			}
			if globMatch(strings.Split(strings.Trim(pattern, "/"), "/"), strings.Split(strings.Trim(normalizePath(m.Path), "/"), "/")) {
				maybe = true
				break
			}
		}
		switch {
		case maybe:
			out.Undecided = append(out.Undecided, m)
		case len(anywhere) > 0:
			m.Hedge = "not found among the routes read, but " + strings.Join(anywhere, ", ") + " is computed at run time and may serve it"
			missing = append(missing, m)
		default:
			missing = append(missing, m)
		}
	}
	out.Missing = missing
}

// globMatch matches path segments against a pattern's, where "*" stands
// for any segments (a prefix computed at run time may be empty) and "{}"
// for one.
func globMatch(pattern, segs []string) bool {
	if len(pattern) == 0 {
		return len(segs) == 0
	}
	switch pattern[0] {
	case "*":
		for i := 0; i <= len(segs); i++ {
			if globMatch(pattern[1:], segs[i:]) {
				return true
			}
		}
		return false
	case "{}":
		return len(segs) > 0 && globMatch(pattern[1:], segs[1:])
	}
	return len(segs) > 0 && segs[0] == pattern[0] && globMatch(pattern[1:], segs[1:])
}

func toRef(r implRoute) RouteRef {
	return RouteRef{Method: r.Method, Path: r.Path, File: r.File, Line: r.Line}
}

// contractNames lists the contracts of the project, for error messages.
func contractNames(c *callctx.Ctx) []string {
	files, _ := contractFiles(c)
	var names []string
	for _, f := range files {
		names = append(names, contract.NameOf(f))
	}
	return names
}

// unknownPath is what is known of a route's path: the prefix, then * for a
// path computed at run time.
func unknownPath(prefix, p string) string {
	if p == "" {
		p = "*"
	}
	return joinRoute(prefix, p)
}

// joinRoute joins a mount prefix and a route path as routers do: one slash
// between, none at the end except for the root.
func joinRoute(prefix, p string) string {
	prefix = strings.TrimRight(prefix, "/")
	p = strings.TrimLeft(p, "/")
	if p == "" {
		if prefix == "" {
			return "/"
		}
		return prefix
	}
	return prefix + "/" + p
}
