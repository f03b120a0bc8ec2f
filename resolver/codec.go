package resolver

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strings"
	"sync"

	"github.com/docshard/docshard/internal/jsontext"
	"github.com/docshard/docshard/partitionkey"
)

// DecodeFunc builds a resolver of one kind from its whole JSON object (the
// "kind" member included). It must reject unknown fields and out-of-range
// settings with a *ConfigError naming the field (see DecodeStrict, Invalid
// and InField).
type DecodeFunc func(data []byte) (Resolver, error)

var (
	registryMu sync.RWMutex
	registry   = map[string]DecodeFunc{}
)

// Register makes a resolver kind known to Unmarshal. It is meant to be called
// from the init function of the package that implements the kind, and panics
// if kind is empty, decode is nil, or the kind is already registered (a
// programming error, as with database/sql.Register).
func Register(kind string, decode DecodeFunc) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if kind == "" || decode == nil {
		panic("resolver: Register with empty kind or nil decoder")
	}
	if _, dup := registry[kind]; dup {
		panic("resolver: Register called twice for kind " + kind)
	}
	registry[kind] = decode
}

// Kinds returns the registered kinds, sorted.
func Kinds() []string {
	registryMu.RLock()
	defer registryMu.RUnlock()
	out := make([]string, 0, len(registry))
	for k := range registry {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// MaxNesting is how deeply objects and arrays may nest in a resolver's
// JSON. Real trees are a few levels deep (each nested resolver adds one to
// three levels). Every nested resolver is decoded from its own part of the
// text, so without a bound a deep tree costs time quadratic in its size: a
// shared state document of a few hundred kilobytes would keep every router
// that reads it busy for seconds.
const MaxNesting = 64

// Unmarshal decodes a resolver tree from its JSON form. The "kind" member
// selects the decoder among the registered kinds. Malformed JSON, an unknown
// kind, an unknown field, a field named twice, a string that is not valid
// UTF-8 (or holds a lone surrogate escape), a bad setting, nesting deeper
// than MaxNesting or a tree costing more than MaxWork yields an error
// wrapping ErrInvalid (a *ConfigError naming the field).
// Cost: linear in len(data) for each level of nested resolvers.
func Unmarshal(data []byte) (Resolver, error) {
	if t := bytes.TrimSpace(data); len(t) > 0 && t[0] != '{' {
		return nil, Invalid("", nil, "a resolver is a JSON object with a \"kind\"")
	}
	if d := nesting(data); d > MaxNesting {
		return nil, Invalid("", nil, fmt.Sprintf("objects and arrays nest %d levels deep; at most %d are allowed", d, MaxNesting))
	}
	if !json.Valid(data) {
		var v any
		return nil, jsonError(json.Unmarshal(data, &v))
	}
	if err := checkTree(data); err != nil {
		return nil, err
	}
	v, err := kindPath.Lookup(data) // the text is valid: ErrNoPartitionKey means no "kind"
	switch {
	case errors.Is(err, ErrNoPartitionKey):
		return nil, Invalid("kind", nil, "missing; "+knownKinds(""))
	case err != nil || v.Kind() != ValueString:
		return nil, Invalid("kind", nil, "want a string naming a kind; "+knownKinds(""))
	}
	kind := string(v.AppendText(nil))
	registryMu.RLock()
	decode := registry[kind]
	registryMu.RUnlock()
	if decode == nil {
		return nil, Invalid("kind", kind, "unknown kind; "+knownKinds(kind))
	}
	r, err := decode(data)
	if err != nil {
		if errors.Is(err, ErrInvalid) {
			return nil, err
		}
		return nil, &ConfigError{Err: err}
	}
	return r, nil
}

// kindPackages names the package that registers each of docshard's own
// kinds, for the error of a kind that is not registered: the codec cannot
// import them (they import it).
var kindPackages = map[string]string{
	"hash":       "hashring",
	"range":      "rangeresolver",
	"lookup":     "lookup",
	"transition": "transition",
	"spillover":  "spillover",
	"managed":    "managed",
}

// knownKinds lists the registered kinds for an error, and says what to
// import when kind is one of docshard's own that is not registered, or
// when none is.
func knownKinds(kind string) string {
	const root = "github.com/docshard/docshard"
	kinds := Kinds()
	if pkg, ok := kindPackages[kind]; ok {
		return fmt.Sprintf("kind %q is registered by %s/%s: import it, or %s, which registers every kind (registered now: %s)", kind, root, pkg, root, orNone(kinds))
	}
	if len(kinds) == 0 {
		return "no kinds are registered: import " + root + ", which registers every kind (hash, range, lookup, transition, ...)"
	}
	return "known kinds: " + strings.Join(kinds, ", ")
}

func orNone(kinds []string) string {
	if len(kinds) == 0 {
		return "none"
	}
	return strings.Join(kinds, ", ")
}

// kindPath is "/kind", where a resolver's JSON names its kind.
var kindPath, _ = partitionkey.ParsePath("/kind")

// nesting returns how deeply objects and arrays nest in data, skipping
// strings; on malformed JSON its answer is only an estimate (the caller
// validates the text afterwards).
func nesting(data []byte) int {
	depth, deepest := 0, 0
	for i := 0; i < len(data); i++ {
		switch data[i] {
		case '{', '[':
			depth++
			deepest = max(deepest, depth)
		case '}', ']':
			depth--
		case '"':
			for i++; i < len(data) && data[i] != '"'; i++ {
				if data[i] == '\\' {
					i++
				}
			}
		}
	}
	return deepest
}

// Marshal encodes a resolver tree to its JSON form: compact, "kind" first,
// every setting written out (defaults included), so Unmarshal(Marshal(r))
// places every key as r does. r must implement json.Marshaler, as every
// resolver in this module does.
func Marshal(r Resolver) ([]byte, error) {
	if r == nil {
		return nil, Invalid("", nil, "nil resolver")
	}
	m, ok := r.(json.Marshaler)
	if !ok {
		return nil, Invalid("", fmt.Sprintf("%T", r), "resolver type does not implement json.Marshaler")
	}
	data, err := m.MarshalJSON()
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, data); err != nil {
		return nil, fmt.Errorf("resolver: %T produced invalid JSON: %w", r, err)
	}
	return buf.Bytes(), nil
}

// DecodeStrict decodes one JSON object into v (a pointer to a struct),
// stricter than encoding/json: a member name must match a field's JSON name
// exactly (encoding/json would also take "Collections" for "collections"),
// and nothing may follow the object. Names are checked through nested
// structs, maps, slices and arrays; a field whose type decodes itself
// (json.Unmarshaler, such as Target and KeyDef) checks its own. A member
// named twice is refused by Unmarshal before any decoder runs. Errors are
// *ConfigError naming the field ("ranges[1].low"). Decoders registered with
// Register use it for their own shape.
func DecodeStrict(data []byte, v any) error {
	if !json.Valid(data) { // trailing data included
		var x any
		return jsonError(json.Unmarshal(data, &x))
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(err)
	}
	if t := reflect.TypeOf(v); t != nil && t.Kind() == reflect.Pointer {
		s := jsontext.NewScanner(data, jsontext.Lenient)
		return checkNames(&s, t.Elem(), "")
	}
	return nil
}

var (
	unmarshalerType     = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// checkNames walks the (valid) JSON value at the scanner alongside Go type
// t, rejecting member names that match no field exactly.
func checkNames(s *jsontext.Scanner, t reflect.Type, at string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	pt := reflect.PointerTo(t)
	if pt.Implements(unmarshalerType) || pt.Implements(textUnmarshalerType) {
		return s.Skip(0)
	}
	switch c := s.Peek(); {
	case c == '{' && (t.Kind() == reflect.Struct || t.Kind() == reflect.Map):
		var fields map[string]field
		if t.Kind() == reflect.Struct {
			fields = infoOf(t).fields
		}
		members, _ := s.Object()
		for {
			n, ok, err := members.Next()
			if err != nil || !ok {
				return err
			}
			name := n.Decode()
			sub := joinField(at, name)
			elem := t.Elem
			if fields != nil {
				f, ok := fields[name]
				if !ok {
					return Invalid(sub, nil, unknownField(fields, name))
				}
				elem = func() reflect.Type { return typeByIndex(t, f.index) }
			}
			if err := checkNames(s, elem(), sub); err != nil {
				return err
			}
		}
	case c == '[' && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array):
		elements, _ := s.Array()
		for i := 0; ; i++ {
			if ok, err := elements.Next(); err != nil || !ok {
				return err
			}
			if err := checkNames(s, t.Elem(), fmt.Sprintf("%s[%d]", at, i)); err != nil {
				return err
			}
		}
	}
	return s.Skip(0)
}

// unknownField explains a member name that matches no field, suggesting
// the field it matches but for case.
func unknownField(fields map[string]field, name string) string {
	for known := range fields {
		if strings.EqualFold(known, name) {
			return fmt.Sprintf("unknown field (field names are case-sensitive: did you mean %q?)", known)
		}
	}
	return "unknown field"
}

// typeByIndex is the type of the field at an index path, through embedded
// pointers.
func typeByIndex(t reflect.Type, index []int) reflect.Type {
	for _, i := range index {
		if t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		t = t.Field(i).Type
	}
	return t
}

// joinField appends a member name to a field path.
func joinField(field, name string) string {
	if field == "" {
		return name
	}
	return field + "." + name
}

// jsonError turns an encoding/json error into a *ConfigError naming the field.
func jsonError(err error) error {
	var ce *ConfigError
	if errors.As(err, &ce) {
		return err
	}
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) {
		return &ConfigError{Field: typeErr.Field, Reason: fmt.Sprintf("want %s, got JSON %s", typeErr.Type, typeErr.Value)}
	}
	var syntaxErr *json.SyntaxError
	if errors.As(err, &syntaxErr) {
		return &ConfigError{Reason: fmt.Sprintf("malformed JSON at byte %d", syntaxErr.Offset), Err: err}
	}
	msg := err.Error()
	if rest, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		return &ConfigError{Field: strings.Trim(rest, `"`), Reason: "unknown field"}
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return &ConfigError{Reason: "malformed JSON: unexpected end of input"}
	}
	return &ConfigError{Reason: "malformed JSON", Err: err}
}

// Target is where a key goes: one collection link, or a nested resolver that
// chooses among its own collections. In JSON a target is a string (the link)
// or an object (a resolver of any registered kind).
type Target struct {
	Link     string   // the collection link, when the target is one collection
	Resolver Resolver // the nested resolver, when it is not a single link
}

// LinkTarget returns a target that is one collection.
func LinkTarget(link string) Target { return Target{Link: link} }

// ResolverTarget returns a target that delegates to a nested resolver.
func ResolverTarget(r Resolver) Target { return Target{Resolver: r} }

// IsZero reports whether the target is unset.
func (t Target) IsZero() bool { return t.Link == "" && t.Resolver == nil }

// ResolveForCreate returns the link itself, or the nested resolver's choice.
func (t Target) ResolveForCreate(key any) (string, error) {
	if t.Resolver != nil {
		return t.Resolver.ResolveForCreate(key)
	}
	if t.Link == "" {
		return "", &KeyError{Key: key, Err: ErrNoTarget}
	}
	return t.Link, nil
}

// ResolveForRead returns the link itself, or the nested resolver's links for
// the key (all of them for a nil key).
func (t Target) ResolveForRead(key any) ([]string, error) {
	if t.Resolver != nil {
		return t.Resolver.ResolveForRead(key)
	}
	if t.Link == "" {
		return nil, nil
	}
	return []string{t.Link}, nil
}

// Links returns every link the target can name: the link, or the nested
// resolver's ResolveForRead(nil).
func (t Target) Links() []string {
	links, err := t.ResolveForRead(nil)
	if err != nil {
		return nil
	}
	return links
}

// MarshalJSON writes a link as a JSON string and a resolver in its tagged
// object form.
func (t Target) MarshalJSON() ([]byte, error) {
	if t.Resolver != nil {
		return Marshal(t.Resolver)
	}
	return json.Marshal(t.Link)
}

// UnmarshalJSON reads a link (a JSON string, validated as a collection link)
// or a nested resolver (a JSON object).
func (t *Target) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	if len(data) > 0 && data[0] == '{' {
		r, err := Unmarshal(data)
		if err != nil {
			return err
		}
		*t = Target{Resolver: r}
		return nil
	}
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return Invalid("", string(data), "a target is a collection link (string) or a resolver (object)")
	}
	if err := ValidateLink(s); err != nil {
		return err
	}
	*t = Target{Link: s}
	return nil
}

// DecodeTarget reads an optional target field of a resolver's JSON form:
// absent or null gives the zero Target; a malformed one is a *ConfigError
// under field.
func DecodeTarget(field string, raw json.RawMessage) (Target, error) {
	var t Target
	if len(raw) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return t, nil
	}
	if err := t.UnmarshalJSON(raw); err != nil {
		return Target{}, InField(field, err)
	}
	return t, nil
}
