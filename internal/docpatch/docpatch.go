// Package docpatch evaluates Cosmos DB's partial document update (patch):
// the one implementation of its operations, limits and condition, used by
// the embedded store (memstore's store.Patcher), docshard serve (its
// answer to PATCH and to a batch's patch operations) and the router (a
// patch of a document a reshard or a spillover moves). Errors are
// *store.Error wrapping store.ErrBadRequest (malformed, or not applicable
// to the document) or store.ErrPreconditionFailed (the condition is false).
package docpatch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/docshard/docshard/partitionkey"
	"github.com/docshard/docshard/query"
	"github.com/docshard/docshard/store"
)

// Spec is a checked patch: its operations with their decoded values, and
// its compiled condition, if any. It is immutable, so one Spec may be
// applied to several versions of a document (and concurrently).
type Spec struct {
	ops      []store.PatchOp
	values   []any
	cond     *query.Program
	condText string
}

// bad is the error of a malformed or inapplicable patch.
func bad(l, id, format string, args ...any) error {
	return store.Errorf(store.ErrBadRequest, "patch", l, id, format, args...)
}

// Compile checks a patch before any document is read: 1 to
// store.MaxPatchOperations operations, each a known operation with a
// well-formed path (and from), not touching a system property, with a
// JSON value where it takes one; and a condition ("FROM c WHERE ...")
// that compiles. l and id name the document in errors.
func Compile(l, id string, ops []store.PatchOp, condition string) (*Spec, error) {
	if n := len(ops); n == 0 || n > store.MaxPatchOperations {
		return nil, bad(l, id, "a patch holds 1 to %d operations, got %d", store.MaxPatchOperations, n)
	}
	p := &Spec{ops: ops, values: make([]any, len(ops))}
	for i, op := range ops {
		if err := checkOp(op); err != nil {
			return nil, bad(l, id, "patch operation %d (%s %s): %v", i, op.Op, op.Path, err)
		}
		if op.Op != store.PatchRemove && op.Op != store.PatchMove {
			v, err := decodeNumbers(op.Value)
			if err != nil {
				return nil, bad(l, id, "patch operation %d (%s %s): the value is not JSON: %v", i, op.Op, op.Path, err)
			}
			if _, isNum := v.(json.Number); op.Op == store.PatchIncrement && !isNum {
				return nil, bad(l, id, "patch operation %d (%s %s): incr needs a number, got %.40s", i, op.Op, op.Path, op.Value)
			}
			p.values[i] = v
		}
	}
	if strings.TrimSpace(condition) != "" {
		p.condText = condition
		var err error
		if p.cond, err = query.Prepare("SELECT VALUE 1 "+condition, nil); err != nil {
			return nil, bad(l, id, "patch condition %q (want \"FROM c WHERE ...\"): %v", condition, err)
		}
	}
	return p, nil
}

// Decode reads a patch in its REST form: {"condition": ..., "operations":
// [...]}, or a bare JSON Patch array (as the Node.js SDK sends a patch
// without a condition).
func Decode(raw []byte) (ops []store.PatchOp, condition string, err error) {
	var body struct {
		Condition  *string         `json:"condition"`
		Operations []store.PatchOp `json:"operations"`
	}
	if t := bytes.TrimSpace(raw); len(t) > 0 && t[0] == '[' {
		err = json.Unmarshal(t, &body.Operations)
	} else {
		err = json.Unmarshal(t, &body)
	}
	if err != nil {
		return nil, "", store.Errorf(store.ErrBadRequest, "patch", "", "", "the patch is not {\"condition\": ..., \"operations\": [...]} or an array of operations: %v", err)
	}
	if body.Condition != nil {
		condition = *body.Condition
	}
	return body.Operations, condition, nil
}

// Encode writes a patch in its REST form, {"condition": ..., "operations":
// [...]} (no condition when empty).
func Encode(ops []store.PatchOp, condition string) ([]byte, error) {
	body := struct {
		Condition  string          `json:"condition,omitempty"`
		Operations []store.PatchOp `json:"operations"`
	}{condition, ops}
	return json.Marshal(body)
}

// Apply returns the document text cur (of the document id in collection
// l, keyed at paths) as the patch leaves it: an error wrapping
// store.ErrPreconditionFailed when the condition is false for it, and
// store.ErrBadRequest when an operation does not apply or would change the
// id or the partition key (nil paths: the caller checks the key). cur
// is not modified. The result holds cur's
// system properties as they were (a store replaces them when it writes).
func (p *Spec) Apply(ctx context.Context, l, id string, cur []byte, paths partitionkey.Paths) ([]byte, error) {
	if p.cond != nil {
		d, err := query.NewDoc(cur)
		if err != nil {
			return nil, bad(l, id, "the stored document: %v", err)
		}
		out, err := p.cond.Execute(ctx, func(yield func(query.Doc) bool) { yield(d) })
		if err != nil {
			return nil, bad(l, id, "patch condition %q: %v", p.condText, err)
		}
		if len(out) == 0 {
			return nil, store.Errorf(store.ErrPreconditionFailed, "patch", l, id, "the patch condition %q is false", p.condText)
		}
	}
	doc, err := decodeNumbers(cur)
	if err != nil {
		return nil, bad(l, id, "the stored document: %v", err)
	}
	for i, op := range p.ops {
		if doc, err = apply(doc, op, p.values[i]); err != nil {
			return nil, bad(l, id, "patch operation %d (%s %s): %v", i, op.Op, op.Path, err)
		}
	}
	next, err := encodeJSON(doc)
	if err != nil {
		return nil, bad(l, id, "%v", err)
	}
	m, _ := doc.(map[string]any)
	if newID, _ := m["id"].(string); newID != id {
		return nil, bad(l, id, "a patch cannot change the document's id")
	}
	if keyText(next, paths) != keyText(cur, paths) {
		return nil, bad(l, id, "a patch cannot change the document's partition key (%s)", paths)
	}
	return next, nil
}

// keyText is the identity text of a document's key at paths.
func keyText(body []byte, paths partitionkey.Paths) string {
	text, err := paths.AppendDocIdentity(nil, body)
	if err != nil {
		return store.NoneText
	}
	return string(text)
}

// Repeatable reports whether sending the patch ops again after it was
// applied leaves what applying it once did: true when every operation
// sets a value (set, replace), false for add (an array insertion
// inserts again), remove and move (refused the second time) and incr.
func Repeatable(ops []store.PatchOp) bool {
	for _, op := range ops {
		if op.Op != store.PatchSet && op.Op != store.PatchReplace {
			return false
		}
	}
	return true
}

// checkOp validates an operation before any document is read.
func checkOp(op store.PatchOp) error {
	switch op.Op {
	case store.PatchAdd, store.PatchSet, store.PatchReplace, store.PatchIncrement:
		if op.Value == nil {
			return errors.New(`it has no "value"`)
		}
	case store.PatchRemove:
	case store.PatchMove:
		if _, err := pointer(op.From); err != nil {
			return fmt.Errorf("from: %w", err)
		}
		if op.Path == op.From || strings.HasPrefix(op.Path, op.From+"/") {
			return errors.New("cannot move a value into itself")
		}
	default:
		return errors.New("unknown operation: want add, set, replace, remove, incr or move")
	}
	toks, err := pointer(op.Path)
	if err != nil {
		return err
	}
	if op.Op == store.PatchMove {
		from, _ := pointer(op.From)
		if err := notSystem(from[0]); err != nil {
			return fmt.Errorf("from: %w", err)
		}
	}
	return notSystem(toks[0])
}

// notSystem refuses a top-level property the store owns.
func notSystem(name string) error {
	switch name {
	case "_rid", "_self", "_etag", "_ts", "_attachments":
		return fmt.Errorf("%s is a system property", name)
	}
	return nil
}

// pointer splits a JSON Pointer ("/a/b~1c/0") into its unescaped tokens.
func pointer(p string) ([]string, error) {
	if !strings.HasPrefix(p, "/") || p == "/" {
		return nil, fmt.Errorf("path %q: want /property[/property or index...]", p)
	}
	toks := strings.Split(p[1:], "/")
	for i, t := range toks {
		toks[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
	}
	return toks, nil
}

// apply applies one operation to a decoded document and returns it.
func apply(doc any, op store.PatchOp, value any) (any, error) {
	toks, _ := pointer(op.Path)
	if op.Op == store.PatchMove {
		from, _ := pointer(op.From)
		var moved any
		doc, err := edit(doc, from, func(parent any, tok string) (any, error) {
			var err error
			moved, parent, err = remove(parent, tok)
			return parent, err
		})
		if err != nil {
			return doc, fmt.Errorf("from %s: %w", op.From, err)
		}
		return edit(doc, toks, func(parent any, tok string) (any, error) { return put(parent, tok, moved, store.PatchAdd) })
	}
	return edit(doc, toks, func(parent any, tok string) (any, error) {
		switch op.Op {
		case store.PatchRemove:
			_, parent, err := remove(parent, tok)
			return parent, err
		case store.PatchIncrement:
			return increment(parent, tok, value)
		}
		return put(parent, tok, value, op.Op)
	})
}

// edit walks to the parent of the last token and replaces it by what f
// returns for it; every container on the way must exist.
func edit(node any, toks []string, f func(parent any, tok string) (any, error)) (any, error) {
	if len(toks) == 1 {
		return f(node, toks[0])
	}
	switch n := node.(type) {
	case map[string]any:
		child, ok := n[toks[0]]
		if !ok {
			return node, fmt.Errorf("%q does not exist", toks[0])
		}
		c, err := edit(child, toks[1:], f)
		n[toks[0]] = c
		return n, err
	case []any:
		i, err := index(toks[0], len(n)-1)
		if err != nil {
			return node, err
		}
		c, err := edit(n[i], toks[1:], f)
		n[i] = c
		return n, err
	}
	return node, fmt.Errorf("%q is inside a value that is not an object or array", toks[0])
}

// index parses an array index from 0 to most.
func index(tok string, most int) (int, error) {
	i, err := strconv.Atoi(tok)
	if err != nil || i < 0 || i > most || strconv.Itoa(i) != tok {
		return 0, fmt.Errorf("array index %q out of range 0..%d", tok, most)
	}
	return i, nil
}

// put adds, sets or replaces the value at tok in parent: in an object
// replace needs the property to exist; in an array add inserts, set and
// replace overwrite ("-" and, for add and set, the length append).
func put(parent any, tok string, v any, op store.PatchOpKind) (any, error) {
	switch p := parent.(type) {
	case map[string]any:
		if _, ok := p[tok]; !ok && op == store.PatchReplace {
			return parent, fmt.Errorf("%q does not exist", tok)
		}
		p[tok] = v
		return p, nil
	case []any:
		if tok == "-" && op != store.PatchReplace {
			return append(p, v), nil
		}
		most := len(p) - 1
		if op != store.PatchReplace {
			most = len(p)
		}
		i, err := index(tok, most)
		if err != nil {
			return parent, err
		}
		if i == len(p) {
			return append(p, v), nil
		}
		if op == store.PatchAdd {
			p = append(p[:i], append([]any{v}, p[i:]...)...)
			return p, nil
		}
		p[i] = v
		return p, nil
	}
	return parent, errors.New("the parent is not an object or array")
}

// remove takes out the value at tok, which must exist.
func remove(parent any, tok string) (any, any, error) {
	switch p := parent.(type) {
	case map[string]any:
		v, ok := p[tok]
		if !ok {
			return nil, parent, fmt.Errorf("%q does not exist", tok)
		}
		delete(p, tok)
		return v, p, nil
	case []any:
		i, err := index(tok, len(p)-1)
		if err != nil {
			return nil, parent, err
		}
		v := p[i]
		return v, append(p[:i], p[i+1:]...), nil
	}
	return nil, parent, errors.New("the parent is not an object or array")
}

// increment adds a number to the number at tok (creating it when the
// property is missing). Integers stay integers while they fit in 64 bits.
func increment(parent any, tok string, v any) (any, error) {
	by, ok := v.(json.Number)
	if !ok {
		return parent, errors.New("incr needs a number")
	}
	var cur any
	var found bool
	switch p := parent.(type) {
	case map[string]any:
		cur, found = p[tok]
	case []any:
		i, err := index(tok, len(p)-1)
		if err != nil {
			return parent, err
		}
		cur, found = p[i], true
	default:
		return parent, errors.New("the parent is not an object or array")
	}
	sum := by
	if found {
		n, ok := cur.(json.Number)
		if !ok {
			return parent, fmt.Errorf("%q is not a number", tok)
		}
		var err error
		if sum, err = addNumbers(n, by); err != nil {
			return parent, err
		}
	}
	return put(parent, tok, sum, store.PatchSet)
}

// addNumbers adds exactly while both are integers and the sum fits in 64
// bits, in floating point otherwise.
func addNumbers(a, b json.Number) (json.Number, error) {
	x, errX := a.Int64()
	y, errY := b.Int64()
	if errX == nil && errY == nil {
		if s := x + y; (s > x) == (y > 0) {
			return json.Number(strconv.FormatInt(s, 10)), nil
		}
	}
	fx, _ := a.Float64()
	fy, _ := b.Float64()
	f := fx + fy
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return "", fmt.Errorf("%s + %s is not a finite number", a, b)
	}
	return json.Number(strconv.FormatFloat(f, 'g', -1, 64)), nil
}

// decodeNumbers decodes JSON keeping numbers as their text; trailing
// data is an error.
func decodeNumbers(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("data after the value")
	}
	return v, nil
}

// encodeJSON writes a decoded document without HTML escaping.
func encodeJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}
