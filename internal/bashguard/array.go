package bashguard

import (
	"fmt"
	"maps"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// maxArrayIndex bounds the indexes the guard lays out; a command that
// assigns beyond it is blocked as too complex rather than read wrongly.
const maxArrayIndex = 1 << 16

// array is a bash array as far as the guard follows it: elements by index,
// or by key for declare -A.
type array struct {
	assoc bool
	elems map[string]string // decimal index or key → value
	next  int               // where the next element without an index goes
	// lost is set when the array may hold elements the analysis does not
	// know, or not hold some it lists (paths that left it differently).
	lost bool
}

func (a *array) clone() *array {
	n := *a
	n.elems = maps.Clone(a.elems)
	return &n
}

func (a *array) equal(b *array) bool {
	return a.assoc == b.assoc && a.next == b.next && a.lost == b.lost && maps.Equal(a.elems, b.elems)
}

// forget makes every element unknown (keeping the JSON the guard sees).
func (a *array) forget() {
	for k, v := range a.elems {
		a.elems[k] = joinValue(v, string(markExternal))
	}
	a.lost = true
}

// join makes a what a path that left a or one that left b has.
func (a *array) join(b *array) {
	if a.equal(b) {
		return
	}
	for _, k := range unionKeys(a.elems, b.elems) {
		x, ok1 := a.elems[k]
		y, ok2 := b.elems[k]
		if !ok1 {
			x = string(markExternal)
		}
		if !ok2 {
			y = string(markExternal)
		}
		a.elems[k] = joinValue(x, y)
	}
	a.assoc = a.assoc || b.assoc
	a.next = max(a.next, b.next)
	a.lost = true
}

// array returns name's array, making one (a scalar assigned before
// becomes element 0, as in bash).
func (c *checker) array(name string, assoc bool) *array {
	c.shellTable(name)
	a, ok := c.sc.arrays[name]
	if !ok {
		a = &array{elems: map[string]string{}}
		if v, ok := c.sc.vars[name]; ok && !assoc {
			a.elems["0"], a.next = v, 1
		}
		c.sc.arrays[name] = a
	}
	if assoc {
		a.assoc = true
	}
	return a
}

// assignArray applies B=(…) or B+=(…), explicit [i]= indexes included.
func (c *checker) assignArray(as *syntax.Assign) {
	a := c.array(as.Name.Value, false)
	if !as.Append {
		clear(a.elems)
		a.next, a.lost = 0, false
	}
	for _, e := range as.Array.Elems {
		if e.Value == nil {
			continue
		}
		fields := c.fields(e.Value)
		if e.Index != nil {
			a.set(c, e.Index, strings.Join(fields, " "))
			continue
		}
		for _, f := range fields {
			if a.lost {
				// After words of unknown number, no index is known.
				f = joinValue(f, string(markExternal))
			}
			a.put(strconv.Itoa(a.next), f)
			a.next++
			if strings.ContainsRune(f, markSplit) {
				a.lost = true
			}
		}
	}
}

// set applies B[index]=value.
func (a *array) set(c *checker, index syntax.ArithmExpr, val string) {
	if a.assoc {
		key := ""
		if w, ok := index.(*syntax.Word); ok {
			key = strings.Join(c.fields(w), " ")
		}
		if hasMarks(key) {
			// A key only known when the command runs: any element
			// may be the one assigned.
			a.forget()
		}
		a.put(key, val)
		return
	}
	cfg := c.cfg()
	i, err := expand.Arithm(cfg, index)
	c.release(cfg)
	if err != nil || c.arithUnknown(index) {
		// An index only known when the command runs.
		a.forget()
		a.put(string(markExternal), joinValue(val, string(markExternal)))
		return
	}
	if i < 0 || i > maxArrayIndex {
		c.b.over(fmt.Sprintf("an array index of %d (the guard follows indexes up to %d)", i, maxArrayIndex))
		return
	}
	a.put(strconv.Itoa(i), val)
	a.next = i + 1
}

func (a *array) put(key, val string) { a.elems[key] = val }

// variable is the array as the expander sees it.
func (a *array) variable() expand.Variable {
	if a.assoc {
		m := maps.Clone(a.elems)
		if a.lost {
			m["\x00?"] = unknownFields
		}
		return expand.Variable{Set: true, Kind: expand.Associative, Map: m}
	}
	var list []string
	for k, v := range a.elems {
		i, err := strconv.Atoi(k)
		if err != nil || i < 0 || i > maxArrayIndex {
			continue
		}
		for len(list) <= i {
			list = append(list, "")
		}
		list[i] = v
	}
	if a.lost {
		// Elements it may hold: unknown, in unknown number.
		for i := range list {
			if list[i] == "" {
				if _, ok := a.elems[strconv.Itoa(i)]; !ok {
					list[i] = string(markExternal)
				}
			}
		}
		list = append(list, unknownFields)
	}
	return expand.Variable{Set: true, Kind: expand.Indexed, List: list}
}

// arithUnknown reports whether an index reads a value the analysis does
// not know (a variable from the environment or one it lost, a command's
// output): the element it names is then not known either.
func (c *checker) arithUnknown(index syntax.ArithmExpr) bool {
	unknown := false
	syntax.Walk(index, func(n syntax.Node) bool {
		switch x := n.(type) {
		case *syntax.CmdSubst:
			unknown = true
		case *syntax.ParamExp:
			if x.Param != nil && hasMarks(env{c}.Get(x.Param.Value).String()) {
				unknown = true
			}
		case *syntax.Lit:
			if isName(x.Value) && hasMarks(env{c}.Get(x.Value).String()) {
				unknown = true
			}
		}
		return !unknown
	})
	return unknown
}
