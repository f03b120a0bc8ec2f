package resolver

import (
	"encoding/json"
	"reflect"
	"strings"
	"sync"
	"time"
)

// fieldCache maps a struct type to its fields by JSON name.
var fieldCache sync.Map // reflect.Type -> map[string][]int

var (
	timeType      = reflect.TypeFor[time.Time]()
	marshalerType = reflect.TypeFor[json.Marshaler]()
)

// jsonFields returns the fields of struct type t by the names encoding/json
// gives them: the json tag's name, or the field name; fields of embedded
// structs are promoted; among fields with one name the shallowest wins, then
// the tagged one; a name left ambiguous is dropped, as encoding/json does.
func jsonFields(t reflect.Type) map[string][]int {
	if m, ok := fieldCache.Load(t); ok {
		return m.(map[string][]int)
	}
	type cand struct {
		index  []int
		depth  int
		tagged bool
	}
	byName := map[string][]cand{}
	type level struct {
		t     reflect.Type
		index []int
	}
	queue := []level{{t, nil}}
	visited := map[reflect.Type]bool{}
	for depth := 0; len(queue) > 0; depth++ {
		var next []level
		for _, lv := range queue {
			if visited[lv.t] {
				continue
			}
			visited[lv.t] = true
			for i := 0; i < lv.t.NumField(); i++ {
				f := lv.t.Field(i)
				tag := f.Tag.Get("json")
				if tag == "-" {
					continue
				}
				name, _, _ := strings.Cut(tag, ",")
				index := append(append([]int(nil), lv.index...), i)
				ft := f.Type
				if ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if f.Anonymous && name == "" && ft.Kind() == reflect.Struct {
					next = append(next, level{ft, index})
					continue
				}
				if !f.IsExported() {
					continue
				}
				tagged := name != ""
				if !tagged {
					name = f.Name
				}
				byName[name] = append(byName[name], cand{index, depth, tagged})
			}
		}
		queue = next
	}
	out := make(map[string][]int, len(byName))
	for name, cs := range byName {
		best := cs[0].depth
		for _, c := range cs {
			best = min(best, c.depth)
		}
		var shallow []cand
		for _, c := range cs {
			if c.depth == best {
				shallow = append(shallow, c)
			}
		}
		if len(shallow) > 1 {
			var tagged []cand
			for _, c := range shallow {
				if c.tagged {
					tagged = append(tagged, c)
				}
			}
			shallow = tagged
		}
		if len(shallow) == 1 {
			out[name] = shallow[0].index
		}
	}
	fieldCache.Store(t, out)
	return out
}

// indirect follows pointers and interfaces; ok is false at a nil.
func indirect(v reflect.Value) (reflect.Value, bool) {
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return v, false
		}
		v = v.Elem()
	}
	return v, v.IsValid()
}

func extractReflect(v reflect.Value, p Path) (any, error) {
	for _, seg := range p.segments {
		var ok bool
		if v, ok = indirect(v); !ok {
			return nil, missing(p)
		}
		switch v.Kind() {
		case reflect.Struct:
			index, found := jsonFields(v.Type())[seg]
			if !found {
				return nil, missing(p)
			}
			for _, i := range index {
				if v.Kind() == reflect.Pointer {
					if v.IsNil() {
						return nil, missing(p)
					}
					v = v.Elem()
				}
				v = v.Field(i)
			}
		case reflect.Map:
			kt := v.Type().Key()
			if kt.Kind() != reflect.String {
				return nil, missing(p)
			}
			v = v.MapIndex(reflect.ValueOf(seg).Convert(kt))
			if !v.IsValid() {
				return nil, missing(p)
			}
		default:
			return nil, missing(p)
		}
	}
	return extractReflectScalar(v, p)
}

// extractReflectScalar converts the value found at the path to a key.
func extractReflectScalar(v reflect.Value, p Path) (any, error) {
	v, ok := indirect(v)
	if !ok {
		return Null, nil
	}
	if v.Type() == timeType {
		return v.Interface(), nil
	}
	if v.Type().Implements(marshalerType) || reflect.PointerTo(v.Type()).Implements(marshalerType) {
		if v.CanAddr() {
			v = v.Addr()
		}
		data, err := json.Marshal(v.Interface())
		if err != nil {
			return nil, &KeyError{Path: p.text, Err: ErrKeyType, Reason: "the value does not marshal to JSON: " + err.Error()}
		}
		s := scanner{data: data}
		k, err := s.scalar()
		if err != nil {
			return nil, &KeyError{Path: p.text, Err: ErrKeyType, Reason: "the value's JSON is not a scalar"}
		}
		return k, nil
	}
	switch v.Kind() {
	case reflect.String:
		return v.String(), nil
	case reflect.Bool:
		return v.Bool(), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int(), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return v.Uint(), nil
	case reflect.Float32:
		return float32(v.Float()), nil
	case reflect.Float64:
		return v.Float(), nil
	}
	return nil, &KeyError{Path: p.text, Err: ErrKeyType, Reason: "the value is a " + v.Kind().String() + ", not a string, number or bool"}
}
