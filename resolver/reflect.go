package resolver

import (
	"encoding"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"
)

// field is a struct field as encoding/json writes it.
type field struct {
	name      string
	tagged    bool
	index     []int
	omitEmpty bool
	omitZero  bool
	quoted    bool // ",string": the value is written as a JSON string
}

// typeInfo is what extraction needs to know of a Go type, computed once per
// type and cached.
type typeInfo struct {
	marshal    uint8            // marshalNone, marshalValue, marshalPointer
	fields     map[string]field // struct types: fields by JSON name
	textKeys   bool             // map types: keys written by MarshalText
	byteSlice  bool             // []byte (not a marshaler): written in base64
	zeroMethod uint8            // types with IsZero() bool: marshalValue or marshalPointer
}

const (
	marshalNone = iota
	marshalValue
	marshalPointer // only *T has the method: used when the value is addressable
)

var typeCache sync.Map // reflect.Type -> *typeInfo

var (
	marshalerType     = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
	isZeroerType      = reflect.TypeFor[interface{ IsZero() bool }]()
	numberType        = reflect.TypeFor[json.Number]()
	mapStringAnyType  = reflect.TypeFor[map[string]any]()
)

func methodKind(t, iface reflect.Type) uint8 {
	switch {
	case t.Implements(iface):
		return marshalValue
	case t.Kind() != reflect.Pointer && reflect.PointerTo(t).Implements(iface):
		return marshalPointer
	}
	return marshalNone
}

func infoOf(t reflect.Type) *typeInfo {
	if ti, ok := typeCache.Load(t); ok {
		return ti.(*typeInfo)
	}
	ti := &typeInfo{marshal: methodKind(t, marshalerType), zeroMethod: methodKind(t, isZeroerType)}
	if ti.marshal == marshalNone {
		ti.marshal = methodKind(t, textMarshalerType)
	}
	switch t.Kind() {
	case reflect.Struct:
		ti.fields = structFields(t)
	case reflect.Map:
		kt := t.Key()
		ti.textKeys = kt.Kind() != reflect.String && kt.Implements(textMarshalerType)
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			p := reflect.PointerTo(t.Elem())
			ti.byteSlice = !p.Implements(marshalerType) && !p.Implements(textMarshalerType)
		}
	}
	actual, _ := typeCache.LoadOrStore(t, ti)
	return actual.(*typeInfo)
}

// custom reports whether encoding/json writes v through a MarshalJSON or
// MarshalText method (a pointer method only when v is addressable).
func (ti *typeInfo) custom(v reflect.Value) bool {
	return ti.marshal == marshalValue || (ti.marshal == marshalPointer && v.CanAddr())
}

// structFields lists the fields of struct type t by the names encoding/json
// gives them: the json tag's name, or the Go name; fields of embedded
// structs are promoted breadth first; of several fields with one name the
// shallowest wins, then the one tagged; a name still ambiguous (and every
// field of a struct type embedded twice at one depth) is dropped, as
// encoding/json drops it.
func structFields(t reflect.Type) map[string]field {
	type level struct {
		t     reflect.Type
		index []int
	}
	var all []field
	next := []level{{t: t}}
	nextCount := map[reflect.Type]int{}
	visited := map[reflect.Type]bool{}
	for len(next) > 0 {
		current, count := next, nextCount
		next, nextCount = nil, map[reflect.Type]int{}
		for _, lv := range current {
			if visited[lv.t] {
				continue
			}
			visited[lv.t] = true
			for i := 0; i < lv.t.NumField(); i++ {
				sf := lv.t.Field(i)
				if sf.Anonymous {
					et := sf.Type
					if et.Kind() == reflect.Pointer {
						et = et.Elem()
					}
					if !sf.IsExported() && et.Kind() != reflect.Struct {
						continue
					}
				} else if !sf.IsExported() {
					continue
				}
				tag := sf.Tag.Get("json")
				if tag == "-" {
					continue
				}
				name, opts, _ := strings.Cut(tag, ",")
				if !validTagName(name) {
					name = ""
				}
				index := append(slices.Clone(lv.index), i)
				ft := sf.Type
				if ft.Name() == "" && ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if name == "" && sf.Anonymous && ft.Kind() == reflect.Struct {
					nextCount[ft]++
					if nextCount[ft] == 1 {
						next = append(next, level{t: ft, index: index})
					}
					continue
				}
				f := field{name: name, tagged: name != "", index: index}
				if f.name == "" {
					f.name = sf.Name
				}
				for opt := range strings.SplitSeq(opts, ",") {
					switch opt {
					case "omitempty":
						f.omitEmpty = true
					case "omitzero":
						f.omitZero = true
					case "string":
						switch ft.Kind() {
						case reflect.Bool, reflect.String,
							reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
							reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
							reflect.Float32, reflect.Float64:
							f.quoted = true
						}
					}
				}
				all = append(all, f)
				if count[lv.t] > 1 {
					// Embedded twice at this depth: a duplicate makes the
					// name ambiguous, so it is dropped below.
					all = append(all, f)
				}
			}
		}
	}
	byName := map[string][]field{}
	for _, f := range all {
		byName[f.name] = append(byName[f.name], f)
	}
	out := make(map[string]field, len(byName))
	for name, fs := range byName {
		slices.SortStableFunc(fs, func(a, b field) int {
			if len(a.index) != len(b.index) {
				return len(a.index) - len(b.index)
			}
			if a.tagged != b.tagged {
				if a.tagged {
					return -1
				}
				return 1
			}
			return slices.Compare(a.index, b.index)
		})
		if len(fs) > 1 && len(fs[0].index) == len(fs[1].index) && fs[0].tagged == fs[1].tagged {
			continue
		}
		out[name] = fs[0]
	}
	return out
}

// validTagName is encoding/json's rule for a usable json tag name.
func validTagName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c):
		case !unicode.IsLetter(c) && !unicode.IsDigit(c):
			return false
		}
	}
	return true
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

// extractReflect walks p's names from the from-th on from v: structs by
// their JSON field names, maps by key; a value with its own JSON form is
// marshalled and scanned.
func extractReflect(v reflect.Value, p *Path, from int) (any, error) {
	quoted := false
	for i := from; i < p.Len(); i++ {
		seg := p.Segment(i)
		var ok bool
		if v, ok = indirect(v); !ok {
			return nil, missing(p)
		}
		ti := infoOf(v.Type())
		if ti.custom(v) {
			return marshalScan(v, p, i)
		}
		switch v.Kind() {
		case reflect.Struct:
			f, found := ti.fields[seg]
			if !found {
				return nil, &KeyError{Path: p.String(), Err: ErrNoPartitionKey, Reason: noFieldHint(v.Type(), ti, seg)}
			}
			if v, ok = fieldByIndex(v, f.index); !ok || omitted(v, f) {
				return nil, missing(p)
			}
			quoted = f.quoted
		case reflect.Map:
			if v.Type() == mapStringAnyType && v.CanInterface() {
				return walkMap(v.Interface().(map[string]any), p, i)
			}
			if v = mapIndex(v, ti, seg); !v.IsValid() {
				return nil, missing(p)
			}
			quoted = false
		default:
			return nil, missing(p)
		}
		if quoted && i < p.Len()-1 {
			return nil, missing(p) // a ",string" field is a JSON string
		}
	}
	return reflectScalar(v, p, quoted)
}

// fieldByIndex follows an index path through embedded structs; ok is false
// at a nil embedded pointer (encoding/json writes none of its fields).
func fieldByIndex(v reflect.Value, index []int) (reflect.Value, bool) {
	for n, i := range index {
		if n > 0 && v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return v, false
			}
			v = v.Elem()
		}
		v = v.Field(i)
	}
	return v, true
}

// omitted reports whether encoding/json leaves field f with value v out.
func omitted(v reflect.Value, f field) (out bool) {
	if f.omitEmpty {
		switch v.Kind() {
		case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
			if v.Len() == 0 {
				return true
			}
		case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
			reflect.Float32, reflect.Float64, reflect.Interface, reflect.Pointer:
			if v.IsZero() {
				return true
			}
		}
	}
	if !f.omitZero {
		return false
	}
	defer func() {
		if recover() != nil {
			out = false // an IsZero that panics: encoding/json would panic; keep the field
		}
	}()
	switch ti := infoOf(v.Type()); {
	case (v.Kind() == reflect.Interface || v.Kind() == reflect.Pointer) && ti.zeroMethod == marshalValue:
		if v.IsNil() || (v.Kind() == reflect.Interface && v.Elem().Kind() == reflect.Pointer && v.Elem().IsNil()) {
			return true
		}
		return v.Interface().(interface{ IsZero() bool }).IsZero()
	case ti.zeroMethod == marshalValue && v.CanInterface():
		return v.Interface().(interface{ IsZero() bool }).IsZero()
	case ti.zeroMethod == marshalPointer:
		if !v.CanAddr() {
			c := reflect.New(v.Type()).Elem()
			c.Set(v)
			v = c
		}
		if v.Addr().CanInterface() {
			return v.Addr().Interface().(interface{ IsZero() bool }).IsZero()
		}
	}
	return v.IsZero()
}

// mapIndex returns the element of map m whose key encoding/json writes as
// name: a string key as is, a key with MarshalText by its text, an integer
// key in decimal. The result is invalid when there is none.
func mapIndex(m reflect.Value, ti *typeInfo, name string) reflect.Value {
	kt := m.Type().Key()
	switch {
	case kt.Kind() == reflect.String:
		return m.MapIndex(reflect.ValueOf(name).Convert(kt))
	case ti.textKeys:
		iter := m.MapRange()
		for iter.Next() {
			k := iter.Key()
			if k.Kind() == reflect.Pointer && k.IsNil() {
				if name == "" {
					return iter.Value()
				}
				continue
			}
			text, err := k.Interface().(encoding.TextMarshaler).MarshalText()
			if err == nil && string(text) == name {
				return iter.Value()
			}
		}
		return reflect.Value{}
	}
	k := reflect.New(kt).Elem()
	switch kt.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := strconv.ParseInt(name, 10, 64)
		if err != nil || strconv.FormatInt(n, 10) != name || k.OverflowInt(n) {
			return reflect.Value{}
		}
		k.SetInt(n)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		n, err := strconv.ParseUint(name, 10, 64)
		if err != nil || strconv.FormatUint(n, 10) != name || k.OverflowUint(n) {
			return reflect.Value{}
		}
		k.SetUint(n)
	default:
		return reflect.Value{}
	}
	return m.MapIndex(k)
}

// marshalScan writes v, the value at p's first from names, as
// encoding/json does and reads the rest of p from the JSON.
func marshalScan(v reflect.Value, p *Path, from int) (key any, err error) {
	if !v.CanInterface() {
		return nil, &KeyError{Path: p.String(), Err: ErrKeyType, Reason: "the value is not readable (reached through an unexported field)"}
	}
	target := v.Interface()
	if v.CanAddr() {
		target = v.Addr().Interface() // so pointer methods are called, as encoding/json calls them
	}
	defer func() {
		if r := recover(); r != nil {
			key, err = nil, &KeyError{Path: p.String(), Err: ErrKeyType, Reason: fmt.Sprintf("marshalling the %s panicked: %v", v.Type(), r)}
		}
	}()
	data, err := json.Marshal(target)
	if err != nil {
		return nil, &KeyError{Path: p.String(), Err: ErrKeyType, Reason: "the value does not marshal to JSON: " + err.Error()}
	}
	rv, err := p.LookupAt(data, from)
	if err != nil {
		return nil, err
	}
	return scalarKey(rv, p, false)
}

// objectKey explains an object or array where a key was expected.
const objectKey = "the value is an object or array, not a string, number, boolean or null"

// reflectScalar converts the value found at the path to a key.
func reflectScalar(v reflect.Value, p *Path, quoted bool) (any, error) {
	v, ok := indirect(v)
	if !ok {
		return Null, nil
	}
	t := v.Type()
	if t.PkgPath() != "" || t.Kind() > reflect.Complex128 && t.Kind() != reflect.String {
		// Not a predeclared type: it may have methods of its own.
		ti := infoOf(t)
		switch {
		case ti.custom(v):
			return marshalScan(v, p, p.Len())
		case ti.byteSlice:
			if v.IsNil() {
				return Null, nil
			}
			return base64.StdEncoding.EncodeToString(v.Bytes()), nil
		case t == numberType:
			return goScalar(json.Number(v.String()), p)
		}
	}
	if quoted {
		if !v.CanInterface() {
			return nil, &KeyError{Path: p.String(), Err: ErrKeyType, Reason: "the value is not readable (reached through an unexported field)"}
		}
		// ",string": the JSON value written inside a JSON string.
		data, err := json.Marshal(v.Interface())
		if err != nil {
			return nil, &KeyError{Path: p.String(), Err: ErrKeyType, Reason: "the value does not marshal to JSON: " + err.Error()}
		}
		return string(data), nil
	}
	switch v.Kind() {
	case reflect.String:
		return v.String(), nil
	case reflect.Bool:
		return v.Bool(), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return float64(v.Int()), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return float64(v.Uint()), nil
	case reflect.Float32, reflect.Float64:
		f := v.Float()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, &KeyError{Path: p.String(), Key: f, Err: ErrKeyType, Reason: "NaN and infinities have no JSON form"}
		}
		if v.Kind() == reflect.Float32 {
			f, _, _ = Number(float32(f))
		}
		return f, nil
	case reflect.Map, reflect.Struct, reflect.Slice, reflect.Array:
		if (v.Kind() == reflect.Map || v.Kind() == reflect.Slice) && v.IsNil() {
			return Null, nil
		}
		return nil, &KeyError{Path: p.String(), Err: ErrKeyType, Reason: objectKey}
	}
	return nil, &KeyError{Path: p.String(), Err: ErrKeyType, Reason: "a " + v.Type().String() + " has no JSON form"}
}

// walkMap walks p's names from the from-th on through nested
// map[string]any; any other value on the way is walked by reflection.
func walkMap(m map[string]any, p *Path, from int) (any, error) {
	var cur any = m
	for i := from; i < p.Len(); i++ {
		obj, ok := cur.(map[string]any)
		if !ok {
			return extractReflect(reflect.ValueOf(cur), p, i)
		}
		if cur, ok = obj[p.Segment(i)]; !ok {
			return nil, missing(p)
		}
	}
	return goScalar(cur, p)
}

// goScalar converts a Go value found at the path to a key.
func goScalar(v any, p *Path) (any, error) {
	switch x := v.(type) {
	case nil:
		return Null, nil
	case string, bool:
		return v, nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, &KeyError{Path: p.String(), Key: x, Err: ErrKeyType, Reason: "NaN and infinities have no JSON form"}
		}
		return v, nil
	case map[string]any, []any:
		return nil, &KeyError{Path: p.String(), Err: ErrKeyType, Reason: objectKey}
	case json.Number:
		f, _, err := Number(x)
		if err != nil {
			if ke, ok := err.(*KeyError); ok {
				ke.Path = p.String()
			}
			return nil, err
		}
		return f, nil
	}
	return reflectScalar(reflect.ValueOf(v), p, false)
}

// noFieldHint explains why a struct has no field at a path's segment: a
// JSON name that differs only in case (a field without a json tag is
// encoded by its Go name, UserID rather than userId), or the names it has.
// It runs on the error path only.
func noFieldHint(t reflect.Type, ti *typeInfo, seg string) string {
	names := make([]string, 0, len(ti.fields))
	for name := range ti.fields {
		if strings.EqualFold(name, seg) {
			return fmt.Sprintf("%s has no field encoded as %q, but one encoded as %q: JSON names are case-sensitive; tag the field `json:\"%s\"`", t, seg, name, seg)
		}
		names = append(names, name)
	}
	slices.Sort(names)
	if len(names) > 8 {
		names = append(names[:8], "...")
	}
	return fmt.Sprintf("%s has no field encoded as %q (its JSON names: %s); tag the key's field `json:\"%s\"`", t, seg, strings.Join(names, ", "), seg)
}
