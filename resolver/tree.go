package resolver

import (
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/docshard/docshard/internal/jsontext"
)

// MaxWork bounds what decoding one resolver tree may cost, in units of
// about one hash each (a ring's point is one unit), summed over every
// resolver in the tree: a lookup or range of many rings pays for all of
// them. Kinds say what they cost with RegisterWork; hashring charges a
// ring's points, and for the bounded strategy also partitions × points /
// 4096, a bound on the library's placement walk. 2^22 units decode in
// about a second.
const MaxWork = 1 << 22

// WorkFunc estimates, from a resolver's own JSON object, what building it
// costs in MaxWork's units, not counting nested resolvers (each is charged
// for itself). Malformed input costs 0: the decoder reports it.
type WorkFunc func(data []byte) int64

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
	var total int64
	return walkValue(&s, data, "", &total)
}

func walkValue(s *jsontext.Scanner, data []byte, at string, total *int64) error {
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
			w := fn(data[start:s.Pos()])
			if *total += w; w < 0 || *total > MaxWork {
				where := at
				if where == "" {
					where = "the resolver"
				}
				return Invalid(at, nil, fmt.Sprintf("the tree costs more than %d units of work to build (%s: %d, the tree so far %d); use fewer collections, virtual nodes or partitions", MaxWork, where, w, *total))
			}
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
