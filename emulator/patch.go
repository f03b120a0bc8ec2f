package emulator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/docshard/docshard/partitionkey"
	"github.com/docshard/docshard/query"
	"github.com/docshard/docshard/store"
)

// maxPatchOperations is how many operations one patch may hold, as in
// Cosmos DB.
const maxPatchOperations = 10

// patchOp is one operation of a partial document update (JSON Patch with
// Cosmos DB's "set" and "incr").
type patchOp struct {
	Op    string          `json:"op"`
	Path  string          `json:"path"`
	From  string          `json:"from"`
	Value json.RawMessage `json:"value"`
}

// maxPatchRounds is how many times a patch reads and conditionally
// replaces its document before it gives up with 429: each round lost to a
// concurrent writer starts again on the new version.
const maxPatchRounds = 64

// patchSpec is a parsed partial update: its operations with their decoded
// values, and its condition ("FROM c WHERE ..."), if any.
type patchSpec struct {
	ops      []patchOp
	values   []any
	cond     *query.Program
	condText string
}

// parsePatch reads a patch: {"condition": ..., "operations": [...]}, or a
// bare JSON Patch array (as the Node.js SDK sends a patch without a
// condition). It checks every operation before any document is read.
func parsePatch(raw []byte) (*patchSpec, *apiError) {
	var body struct {
		Condition  *string   `json:"condition"`
		Operations []patchOp `json:"operations"`
	}
	var err error
	if t := bytes.TrimSpace(raw); len(t) > 0 && t[0] == '[' {
		err = json.Unmarshal(t, &body.Operations)
	} else {
		err = json.Unmarshal(t, &body)
	}
	if err != nil {
		return nil, errorf(http.StatusBadRequest, "the patch is not {\"condition\": ..., \"operations\": [...]} or an array of operations: %v", err)
	}
	if n := len(body.Operations); n == 0 || n > maxPatchOperations {
		return nil, errorf(http.StatusBadRequest, "a patch holds 1 to %d operations, got %d", maxPatchOperations, n)
	}
	p := &patchSpec{ops: body.Operations, values: make([]any, len(body.Operations))}
	for i, op := range body.Operations {
		if err := checkPatchOp(op); err != nil {
			return nil, errorf(http.StatusBadRequest, "patch operation %d (%s %s): %v", i, op.Op, op.Path, err)
		}
		if op.Op != "remove" && op.Op != "move" {
			v, err := decodeNumbers(op.Value)
			if err != nil {
				return nil, errorf(http.StatusBadRequest, "patch operation %d (%s %s): the value is not JSON: %v", i, op.Op, op.Path, err)
			}
			p.values[i] = v
		}
	}
	if body.Condition != nil && strings.TrimSpace(*body.Condition) != "" {
		p.condText = *body.Condition
		if p.cond, err = query.Prepare("SELECT VALUE 1 "+p.condText, nil); err != nil {
			return nil, errorf(http.StatusBadRequest, "patch condition %q: %v", p.condText, err)
		}
	}
	return p, nil
}

// apply returns the document body cur (of the document id, in a
// collection keyed at path) as the patch leaves it: 412 when the condition
// is false for it, 400 when an operation does not apply or would change
// the id or the partition key.
func (p *patchSpec) apply(ctx context.Context, id string, cur []byte, path partitionkey.Paths) ([]byte, *apiError) {
	if p.cond != nil {
		d, err := query.NewDoc(cur)
		if err != nil {
			return nil, errorf(http.StatusInternalServerError, "%v", err)
		}
		out, err := p.cond.Execute(ctx, func(yield func(query.Doc) bool) { yield(d) })
		if err != nil {
			return nil, errorf(http.StatusBadRequest, "patch condition: %v", err)
		}
		if len(out) == 0 {
			return nil, errorf(http.StatusPreconditionFailed, "%s the patch condition %q is false", msgPrecondition, p.condText)
		}
	}
	doc, err := decodeNumbers(cur)
	if err != nil {
		return nil, errorf(http.StatusInternalServerError, "%v", err)
	}
	for i, op := range p.ops {
		if doc, err = applyPatch(doc, op, p.values[i]); err != nil {
			return nil, errorf(http.StatusBadRequest, "patch operation %d (%s %s): %v", i, op.Op, op.Path, err)
		}
	}
	next, err := encodeJSON(doc)
	if err != nil {
		return nil, errorf(http.StatusBadRequest, "%v", err)
	}
	m, _ := doc.(map[string]any)
	if newID, _ := m["id"].(string); newID != id {
		return nil, errorf(http.StatusBadRequest, "a patch cannot change the document's id")
	}
	if keyTextOf(next, path) != keyTextOf(cur, path) {
		return nil, errorf(http.StatusBadRequest, "a patch cannot change the document's partition key (%s)", path)
	}
	return next, nil
}

// patch applies a partial update: it reads the document, checks If-Match
// and the patch (patchSpec.apply) against it, and replaces the document
// If-Match the version it read. A concurrent write in between makes it
// start again (without a caller's If-Match), so the operations apply to one
// version atomically. A patch that would change the id or the partition
// key, or touch a system property, is refused with 400.
func (s *Server) patch(c *call, ref collRef, id string, key any, ifMatch string) (*store.Document, *apiError) {
	raw, e := c.body()
	if e != nil {
		return nil, e
	}
	spec, e := parsePatch(raw)
	if e != nil {
		return nil, e
	}
	ctx := c.r.Context()
	path, e := s.pathOf(ctx, ref)
	if e != nil {
		return nil, e
	}
	epoch, e := c.epoch()
	if e != nil {
		return nil, e
	}
	// An optimistic read-modify-write, not a retry of a failed call (no
	// failure is retried here: store/retry is the layer that does that, in
	// the client): a concurrent writer that changed the document between
	// the read and the conditional replace makes the patch apply again to
	// its new version, as Cosmos DB's patch applies to the current one. It
	// gives up after maxPatchRounds with a 429, so the client retries later.
	for range maxPatchRounds {
		cur, err := s.st.Read(ctx, ref.link, id, &store.ReadOptions{PartitionKey: key})
		if err != nil {
			return nil, fromStore(err)
		}
		if ifMatch != "" && ifMatch != cur.ETag {
			return nil, errorf(http.StatusPreconditionFailed, "%s If-Match %s, the document's ETag is %s", msgPrecondition, ifMatch, cur.ETag)
		}
		next, e := spec.apply(ctx, id, cur.Body, path)
		if e != nil {
			return nil, e
		}
		d, err := s.st.Replace(ctx, ref.link, id, next, &store.WriteOptions{PartitionKey: key, IfMatch: cur.ETag, Epoch: epoch})
		if err == nil {
			return d, nil
		}
		if !errors.Is(err, store.ErrPreconditionFailed) || ifMatch != "" {
			return nil, fromStore(err)
		}
	}
	return nil, patchContended()
}

// patchContended is the answer to a patch whose document changed under
// every one of its rounds.
func patchContended() *apiError {
	e := errorf(http.StatusTooManyRequests, "the document changed under every attempt to patch it; retry")
	e.retryAfter = 10 * time.Millisecond
	return e
}

// checkPatchOp validates an operation before any document is read.
func checkPatchOp(op patchOp) error {
	switch op.Op {
	case "add", "set", "replace", "incr":
		if op.Value == nil {
			return errors.New(`it has no "value"`)
		}
	case "remove":
	case "move":
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
	switch toks[0] {
	case "_rid", "_self", "_etag", "_ts", "_attachments":
		return fmt.Errorf("%s is a system property", toks[0])
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

// applyPatch applies one operation to a decoded document and returns it.
func applyPatch(doc any, op patchOp, value any) (any, error) {
	toks, _ := pointer(op.Path)
	if op.Op == "move" {
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
		return edit(doc, toks, func(parent any, tok string) (any, error) { return put(parent, tok, moved, "add") })
	}
	return edit(doc, toks, func(parent any, tok string) (any, error) {
		switch op.Op {
		case "remove":
			_, parent, err := remove(parent, tok)
			return parent, err
		case "incr":
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
func put(parent any, tok string, v any, op string) (any, error) {
	switch p := parent.(type) {
	case map[string]any:
		if _, ok := p[tok]; !ok && op == "replace" {
			return parent, fmt.Errorf("%q does not exist", tok)
		}
		p[tok] = v
		return p, nil
	case []any:
		if tok == "-" && op != "replace" {
			return append(p, v), nil
		}
		most := len(p) - 1
		if op != "replace" {
			most = len(p)
		}
		i, err := index(tok, most)
		if err != nil {
			return parent, err
		}
		if i == len(p) {
			return append(p, v), nil
		}
		if op == "add" {
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
	return put(parent, tok, sum, "set")
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

// decodeNumbers decodes JSON keeping numbers as their text.
func decodeNumbers(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
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
