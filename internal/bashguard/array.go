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
// or by key for declare -A. An element that holds JSON is never replaced:
// as with scalars, the guard does not know which branch of the command ran.
type array struct {
	assoc bool
	elems map[string]string // decimal index or key → value
	next  int               // where the next element without an index goes
}

// array returns name's array, making one (a scalar assigned before
// becomes element 0, as in bash).
func (c *checker) array(name string, assoc bool) *array {
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
		for k, v := range a.elems {
			if !sticky(v) {
				delete(a.elems, k)
			}
		}
		a.next = 0
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
			a.put(strconv.Itoa(a.next), f)
			a.next++
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
		a.put(key, val)
		return
	}
	cfg := c.cfg()
	i, err := expand.Arithm(cfg, index)
	c.release(cfg)
	if err != nil {
		i = a.next
	}
	if i < 0 || i > maxArrayIndex {
		c.b.over(fmt.Sprintf("an array index of %d (the guard follows indexes up to %d)", i, maxArrayIndex))
		return
	}
	a.put(strconv.Itoa(i), val)
	a.next = i + 1
}

func (a *array) put(key, val string) {
	if sticky(a.elems[key]) {
		return
	}
	a.elems[key] = val
}

// variable is the array as the expander sees it.
func (a *array) variable() expand.Variable {
	if a.assoc {
		return expand.Variable{Set: true, Kind: expand.Associative, Map: maps.Clone(a.elems)}
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
	return expand.Variable{Set: true, Kind: expand.Indexed, List: list}
}
