//go:build !bench_no_rules

package rules

import (
	"fmt"
	"reflect"

	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"
)

// unknown is the value of a fact the shell parser cannot know (a program
// name computed at run time, an argument read from the environment). CEL
// carries it through every operation: a comparison with it is unknown, so
// is a function of it, and && and || decide without it only when the
// other side does (false && unknown is false, true || unknown is true).
func unknown() ref.Val { return types.NewUnknown(0, nil) }

// factList is a list of facts of a command, some of which may be unknown,
// and which may be open: unknown code (eval "$x", curl … | sh) or an
// unknown program could run more than the parser saw, so an open list has
// an unknown number of unknown elements after the known ones. Membership,
// size, iteration and equality answer unknown where the answer depends on
// what is not known — so `'git' in cmd.programs` is unknown, not false, for
// a command that runs code the parser cannot read. (CEL's own lists answer
// false there: they compare a known value with an unknown one as unequal.)
type factList struct {
	elems []ref.Val
	open  bool
	// fixed is how many elements stand at known places, when fewer than
	// all: after an argument that may be several words or none, the
	// places (and the size) are not known, the values still are.
	fixed int
	// floats is set when fixed applies.
	floats bool
}

// settled reports whether index i of l is known to hold elems[i].
func (l *factList) settled(i int) bool { return !l.floats || i < l.fixed }

// factList is also a traits.Mapper, for CEL's index operator alone: that
// operator asks a Mapper to Find an element, while it takes a Lister's
// size as an int, which an open list does not have (a comprehension still
// ranges over its elements: it asks for Foldable first).
var (
	_ traits.Lister   = (*factList)(nil)
	_ traits.Foldable = (*factList)(nil)
	_ traits.Mapper   = (*factList)(nil)
)

// Find is Get for the index operator: an element that may exist is
// found (unknown when it is not known).
func (l *factList) Find(index ref.Val) (ref.Val, bool) {
	v := l.Get(index)
	if types.IsError(v) {
		if _, isInt := index.(types.Int); isInt {
			return nil, false
		}
		return v, true
	}
	return v, true
}

func (l *factList) hasUnknown() bool {
	if l.open || l.floats {
		return true
	}
	for _, e := range l.elems {
		if types.IsUnknown(e) {
			return true
		}
	}
	return false
}

// Fold visits the known elements, then, for an open list, one unknown
// element standing for the rest.
func (l *factList) Fold(f traits.Folder) {
	for i, e := range l.elems {
		if !f.FoldEntry(types.Int(i), e) {
			return
		}
	}
	if l.open {
		f.FoldEntry(types.Int(len(l.elems)), unknown())
	}
}

func (l *factList) Iterator() traits.Iterator {
	return &factIterator{l: l}
}

func (l *factList) Size() ref.Val {
	if l.open || l.floats {
		return unknown()
	}
	return types.Int(len(l.elems))
}

func (l *factList) Get(index ref.Val) ref.Val {
	i, ok := index.(types.Int)
	if !ok {
		return types.ValOrErr(index, "list index must be an int, not %s", index.Type().TypeName())
	}
	switch {
	case i >= 0 && int(i) < len(l.elems) && l.settled(int(i)):
		return l.elems[i]
	case i >= 0 && (l.open || l.floats):
		return unknown()
	}
	return types.NewErr("index %d out of range in a list of size %d", i, len(l.elems))
}

func (l *factList) Contains(v ref.Val) ref.Val {
	if types.IsUnknownOrError(v) {
		return v
	}
	maybe := l.open
	for _, e := range l.elems {
		if types.IsUnknown(e) {
			maybe = true
			continue
		}
		if e.Equal(v) == types.True {
			return types.True
		}
	}
	if maybe {
		return unknown()
	}
	return types.False
}

func (l *factList) Add(other ref.Val) ref.Val {
	out := &factList{elems: append([]ref.Val(nil), l.elems...), open: l.open, fixed: l.fixed, floats: l.floats}
	if l.open {
		return out
	}
	var oe []ref.Val
	switch o := other.(type) {
	case *factList:
		if !out.floats && o.floats {
			out.fixed, out.floats = len(out.elems)+o.fixed, true
		}
		oe, out.open = o.elems, o.open
	case traits.Lister:
		it := o.Iterator()
		for it.HasNext() == types.True {
			oe = append(oe, it.Next())
		}
	default:
		return types.MaybeNoSuchOverloadErr(other)
	}
	out.elems = append(out.elems, oe...)
	return out
}

// Equal is false when a known element differs or (for closed lists) the
// sizes do, unknown when the rest depends on what is not known.
func (l *factList) Equal(other ref.Val) ref.Val {
	var oe []ref.Val
	oOpen, oFloats := false, false
	of, isFacts := other.(*factList)
	switch o := other.(type) {
	case *factList:
		oe, oOpen, oFloats = o.elems, o.open, o.floats
	case traits.Lister:
		it := o.Iterator()
		for it.HasNext() == types.True {
			oe = append(oe, it.Next())
		}
	default:
		return types.False
	}
	if !isFacts {
		of = nil
	}
	if !l.open && !oOpen && !l.floats && !oFloats && len(l.elems) != len(oe) {
		return types.False
	}
	maybe := l.open || oOpen || l.floats || oFloats
	for i := 0; i < min(len(l.elems), len(oe)); i++ {
		if !l.settled(i) || of != nil && !of.settled(i) {
			maybe = true
			break
		}
		if types.IsUnknown(l.elems[i]) || types.IsUnknown(oe[i]) {
			maybe = true
			continue
		}
		switch types.Equal(l.elems[i], oe[i]) {
		case types.False:
			return types.False
		case types.True:
		default:
			maybe = true
		}
	}
	if maybe {
		return unknown()
	}
	return types.True
}

func (l *factList) ConvertToNative(t reflect.Type) (any, error) {
	if l.hasUnknown() {
		return nil, fmt.Errorf("a list with facts the shell parser cannot know has no %v value", t)
	}
	out := make([]any, len(l.elems))
	for i, e := range l.elems {
		out[i] = e.Value()
	}
	if reflect.TypeOf(out).AssignableTo(t) {
		return out, nil
	}
	return nil, fmt.Errorf("a list of facts is not a %v", t)
}

func (l *factList) ConvertToType(t ref.Type) ref.Val {
	switch t {
	case types.ListType:
		return l
	case types.TypeType:
		return types.ListType
	}
	return types.NewErr("type conversion error from list to '%s'", t)
}

func (l *factList) Type() ref.Type { return types.ListType }

func (l *factList) Value() any { return l.elems }

type factIterator struct {
	l    *factList
	i    int
	tail bool
}

func (it *factIterator) HasNext() ref.Val {
	return types.Bool(it.i < len(it.l.elems) || it.l.open && !it.tail)
}

func (it *factIterator) Next() ref.Val {
	if it.i < len(it.l.elems) {
		it.i++
		return it.l.elems[it.i-1]
	}
	it.tail = true
	return unknown()
}

func (it *factIterator) ConvertToNative(reflect.Type) (any, error) {
	return nil, fmt.Errorf("an iterator has no native value")
}
func (it *factIterator) ConvertToType(ref.Type) ref.Val {
	return types.NewErr("an iterator has no type")
}
func (it *factIterator) Equal(ref.Val) ref.Val { return types.False }
func (it *factIterator) Type() ref.Type        { return types.IteratorType }
func (it *factIterator) Value() any            { return it }
