package resolver

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/docshard/docshard/internal/jsontext"
)

// MaxWork bounds what decoding one resolver tree may cost, in units of
// about one hash each (a ring's point is one unit), summed over every
// resolver in the tree: a lookup or range of many rings pays for all of
// them. Kinds say what they cost with RegisterWork; hashring charges a
// ring's points, and for the bounded strategy also partitions × points /
// 4096, a bound on the library's placement walk. 2^22 units decode in
// about a second. A tree past it is refused with a *ConfigError that names
// MaxWork, what the tree's cost is made of (each kind's Work.Shape) and the
// JSON settings to lower (Work.Lower).
const MaxWork = 1 << 22

// WorkFunc estimates, from a resolver's own JSON object, what building it
// costs in MaxWork's units, not counting nested resolvers (each is charged
// for itself). Malformed input costs nothing: the decoder reports it.
type WorkFunc func(data []byte) Work

// Work is what building one resolver costs, as its WorkFunc estimates it,
// and how to say so when a tree costs more than MaxWork.
type Work struct {
	// Units is the cost in MaxWork's units.
	Units int64
	// Shape is what the units pay for, in the kind's JSON terms, for the
	// error that refuses a tree: "a ring of 2 collections × 65536
	// virtualNodes". Resolvers of one kind, shape and cost are counted
	// together in it.
	Shape string
	// Lower names what makes the resolver cheaper, by its JSON field, in
	// the order to try: "virtualNodes", "partitionCount", "the number of
	// collections".
	Lower []string
}

var work = map[string]WorkFunc{}

// RegisterWork says what building a resolver of kind costs, for the
// tree-wide MaxWork bound; like Register it is called from an init
// function, and panics when called twice for a kind or with a nil func.
// A kind without one costs nothing.
func RegisterWork(kind string, fn WorkFunc) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if kind == "" || fn == nil {
		panic("resolver: RegisterWork with empty kind or nil func")
	}
	if _, dup := work[kind]; dup {
		panic("resolver: RegisterWork called twice for kind " + kind)
	}
	work[kind] = fn
}

// checkTree walks a resolver tree's JSON text (valid, nested at most
// MaxNesting deep) once before anything is built: it refuses a member
// named twice in one object (encoding/json would keep the last), a string
// that is not valid UTF-8 or holds a lone surrogate escape (encoding/json
// would turn either into U+FFFD, silently naming another collection), and a
// tree whose resolvers together cost more than MaxWork.
func checkTree(data []byte) error {
	s := jsontext.NewScanner(data, jsontext.Lenient)
	var total treeWork
	return walkValue(&s, data, "", &total)
}

// treeWork is the work of the resolvers of a tree walked so far: the total,
// and the resolvers that cost something, grouped by kind, shape and cost,
// in the order first met (at most maxWorkGroups groups; the rest are
// counted together).
type treeWork struct {
	total  int64
	groups []workGroup
	rest   struct{ n, units int64 }
}

type workGroup struct {
	kind string
	w    Work
	n    int64
}

const maxWorkGroups = 4

// add charges the resolver of kind at field at for w, refusing it when
// the tree then costs more than MaxWork, with an error that names the limit,
// what the tree's cost is made of and what to lower.
func (t *treeWork) add(at, kind string, w Work) error {
	if w.Units == 0 {
		return nil
	}
	if w.Units > 0 && w.Units <= MaxWork-t.total {
		t.total += w.Units
		t.count(kind, w)
		return nil
	}
	where := at
	if where == "" {
		where = "the resolver"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "the tree costs more than resolver.MaxWork = %d units of work (about a second) to build: %s, %s (kind %s), costs %d", MaxWork, where, w.Shape, kind, w.Units)
	if t.total > 0 {
		fmt.Fprintf(&b, " on top of the %d units of ", t.total)
		for i, g := range t.groups {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%d × %s (kind %s, %d units each)", g.n, g.w.Shape, g.kind, g.w.Units)
		}
		if t.rest.n > 0 {
			fmt.Fprintf(&b, " and %d more resolvers (%d units)", t.rest.n, t.rest.units)
		}
	}
	lower := w.Lower
	for _, g := range t.groups {
		for _, l := range g.w.Lower {
			if !slices.Contains(lower, l) {
				lower = append(lower[:len(lower):len(lower)], l)
			}
		}
	}
	if len(lower) > 0 {
		fmt.Fprintf(&b, ". Lower %s, or nest fewer resolvers in the tree", orList(lower))
	} else {
		b.WriteString(". Nest fewer resolvers in the tree")
	}
	return Invalid(at, nil, b.String())
}

func (t *treeWork) count(kind string, w Work) {
	for i := range t.groups {
		if g := &t.groups[i]; g.kind == kind && g.w.Shape == w.Shape && g.w.Units == w.Units {
			g.n++
			return
		}
	}
	if len(t.groups) < maxWorkGroups {
		t.groups = append(t.groups, workGroup{kind: kind, w: w, n: 1})
		return
	}
	t.rest.n++
	t.rest.units += w.Units
}

// orList is "a", "a or b", "a, b or c".
func orList(xs []string) string {
	if len(xs) < 2 {
		return strings.Join(xs, "")
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " or " + xs[len(xs)-1]
}

func walkValue(s *jsontext.Scanner, data []byte, at string, total *treeWork) error {
	switch s.Peek() {
	case '{':
		start := s.Pos()
		members, err := s.Object()
		if err != nil {
			return err
		}
		seen := map[string]bool{}
		kind := ""
		for {
			name, ok, err := members.Next()
			if err != nil {
				return err
			}
			if !ok {
				break
			}
			if err := checkString(name, at); err != nil {
				return err
			}
			n := name.Decode()
			sub := joinField(at, n)
			if seen[n] {
				return Invalid(sub, nil, "named twice in one object; a resolver's JSON names each field once")
			}
			seen[n] = true
			if n == "kind" && s.Peek() == '"' {
				t, err := s.Scalar()
				if err != nil {
					return err
				}
				if err := checkString(t.Quoted(), sub); err != nil {
					return err
				}
				kind = t.Quoted().Decode()
				continue
			}
			if err := walkValue(s, data, sub, total); err != nil {
				return err
			}
		}
		registryMu.RLock()
		fn := work[kind]
		registryMu.RUnlock()
		if fn != nil {
			return total.add(at, kind, fn(data[start:s.Pos()]))
		}
		return nil
	case '[':
		elements, err := s.Array()
		if err != nil {
			return err
		}
		for i := 0; ; i++ {
			ok, err := elements.Next()
			if err != nil || !ok {
				return err
			}
			if err := walkValue(s, data, at+"["+strconv.Itoa(i)+"]", total); err != nil {
				return err
			}
		}
	case '"':
		t, err := s.Scalar()
		if err != nil {
			return err
		}
		return checkString(t.Quoted(), at)
	}
	return s.Skip(0)
}

// checkString refuses a string that is not valid UTF-8 or holds a lone
// surrogate escape (\ud800 without its pair).
func checkString(q jsontext.Quoted, at string) error {
	if !utf8.Valid(q.Body) {
		return Invalid(at, nil, "a string that is not valid UTF-8")
	}
	if q.Escaped && jsontext.HasLoneSurrogate(q.Body) {
		return Invalid(at, string(q.Body), `a \u escape of a lone surrogate (\ud800-\udfff without its pair), which has no UTF-8 form`)
	}
	return nil
}
