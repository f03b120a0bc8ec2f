package cosmos

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/tidwall/gjson"

	"github.com/docshard/docshard/internal/opt"
	"github.com/docshard/docshard/partitionkey"
	"github.com/docshard/docshard/store"
)

// partitionKey converts a store partition-key value to the SDK's: a
// composite key (a hierarchical key, whole or a prefix) part by part, each
// as a scalar is converted (a None part must go through sdkKey).
func partitionKey(v any) (azcosmos.PartitionKey, error) {
	if parts, ok := partitionkey.Parts(v); ok {
		pk := azcosmos.NewPartitionKey()
		for _, p := range parts {
			switch x := p.(type) {
			case string:
				pk = pk.AppendString(x)
			case bool:
				pk = pk.AppendBool(x)
			case nil:
				pk = pk.AppendNull()
			default:
				if p == partitionkey.Null {
					pk = pk.AppendNull()
					continue
				}
				f, err := finite(p)
				if err != nil {
					return azcosmos.PartitionKey{}, err
				}
				pk = pk.AppendNumber(f)
			}
		}
		return pk, nil
	}
	switch x := v.(type) {
	case string:
		return azcosmos.NewPartitionKeyString(x), nil
	case bool:
		return azcosmos.NewPartitionKeyBool(x), nil
	case nil:
		return azcosmos.NullPartitionKey, nil
	}
	if v == partitionkey.Null {
		return azcosmos.NullPartitionKey, nil
	}
	f, err := finite(v)
	if err != nil {
		return azcosmos.PartitionKey{}, err
	}
	return azcosmos.NewPartitionKeyNumber(f), nil
}

// finite returns the number a key value is, refusing other types, NaN and
// the infinities.
func finite(v any) (float64, error) {
	f, ok, err := partitionkey.Number(v)
	switch {
	case !ok:
		return 0, fmt.Errorf("partition key of type %T: want a string, number, bool or null", v)
	case err == nil && (math.IsNaN(f) || math.IsInf(f, 0)):
		err = fmt.Errorf("partition key %v is not a finite number", f)
	}
	return f, err
}

// keyIdentity returns the text a key value is compared and bound by: a
// scalar's partitionkey.IdentityText, a composite key's (a hierarchical
// key, whole or a prefix) partitionkey.AppendCompositeIdentity text. An
// error wraps store.ErrBadRequest.
func keyIdentity(op, l string, key any) (string, error) {
	var text []byte
	var err error
	if parts, ok := partitionkey.Parts(key); ok {
		text, err = partitionkey.AppendCompositeIdentity(nil, parts)
	} else {
		text, err = partitionkey.AppendIdentity(nil, key)
	}
	if err != nil {
		return "", &store.Error{Kind: store.ErrBadRequest, Op: op, Link: l, Err: store.BadPartitionKey(err)}
	}
	return string(text), nil
}

// keyMatcher returns what tells whether a document's raw JSON is under key:
// its key equal to key, or for a prefix of a hierarchical key (fewer
// values than the container's paths; a lone scalar is one value), its key
// starting with it. An error wraps store.ErrBadRequest.
func (cs *containerSpec) keyMatcher(op, l string, key any) (func(raw []byte) bool, error) {
	if !cs.paths.Hierarchical() {
		want, err := keyIdentity(op, l, key)
		if err != nil {
			return nil, err
		}
		return func(raw []byte) bool {
			v, err := bodyKey(cs.paths, raw)
			t, _ := partitionkey.IdentityText(v)
			return err == nil && t == want
		}, nil
	}
	parts, err := store.KeyParts(key, len(cs.paths), true)
	if err != nil {
		return nil, &store.Error{Kind: store.ErrBadRequest, Op: op, Link: l, Err: err}
	}
	want, err := keyIdentity(op, l, parts)
	if err != nil {
		return nil, err
	}
	prefix := len(parts) < len(cs.paths)
	if prefix {
		want = partitionkey.CompositePrefix(want)
	}
	return func(raw []byte) bool {
		t, err := cs.paths.AppendDocIdentity(nil, raw)
		if prefix {
			return err == nil && strings.HasPrefix(string(t), want)
		}
		return err == nil && string(t) == want
	}, nil
}

// bodyKey reads the partition-key value from a document body: a string, a
// float64, a bool, partitionkey.Null, or partitionkey.None when the body
// has no value at the path; of a hierarchical key, the
// partitionkey.CompositeKey of those values.
func bodyKey(paths partitionkey.Paths, body []byte) (any, error) {
	if paths.Hierarchical() {
		key := make(partitionkey.CompositeKey, len(paths))
		for i, p := range paths {
			v, err := bodyValue(p, body)
			if err != nil {
				return nil, err
			}
			key[i] = v
		}
		return key, nil
	}
	return bodyValue(paths[0], body)
}

// bodyValue reads the value at one path of a document body (see bodyKey).
func bodyValue(path partitionkey.Path, body []byte) (any, error) {
	raw, err := path.Lookup(body)
	var v any
	if err == nil {
		v, err = raw.Value()
	}
	switch {
	case errors.Is(err, partitionkey.ErrNoPartitionKey):
		return partitionkey.None, nil
	case err != nil:
		var ke *partitionkey.KeyError
		if errors.As(err, &ke) {
			err = errors.New(ke.Reason) // "the value is an object or array, ..."
		}
		return nil, fmt.Errorf("the partition-key value at %s: %w", path, err)
	}
	return v, nil
}

// checkDoc validates a document before sending it: JSON object, string id
// by Cosmos DB's rules, size. It returns the id.
func checkDoc(op, l string, doc []byte) (string, error) {
	if len(doc) > store.MaxDocumentSize {
		return "", &store.Error{Kind: store.ErrTooLarge, Op: op, Link: l, Message: fmt.Sprintf("the document is %d bytes, more than %d", len(doc), store.MaxDocumentSize)}
	}
	t := bytes.TrimSpace(doc)
	if len(t) == 0 || t[0] != '{' || !gjson.ValidBytes(t) {
		if len(t) > 0 && gjson.ValidBytes(t) {
			return "", &store.Error{Kind: store.ErrBadRequest, Op: op, Link: l, Message: "a document is a JSON object, got " + gjson.ParseBytes(t).Type.String()}
		}
		return "", &store.Error{Kind: store.ErrBadRequest, Op: op, Link: l, Message: "malformed JSON document"}
	}
	id := gjson.GetBytes(t, "id")
	if !id.Exists() {
		return "", &store.Error{Kind: store.ErrBadRequest, Op: op, Link: l, Message: `the document has no "id"`}
	}
	if id.Type != gjson.String {
		return "", &store.Error{Kind: store.ErrBadRequest, Op: op, Link: l, Message: `"id" must be a string, got ` + id.Raw}
	}
	if err := store.ValidateID(id.String()); err != nil {
		se := err.(*store.Error)
		se.Op, se.Link = op, l
		return "", se
	}
	return id.String(), nil
}

// document builds a store.Document from a response body.
func document(body []byte, etag azcore.ETag) *store.Document {
	d := &store.Document{Body: body, ETag: string(etag)}
	d.ID = gjson.GetBytes(body, "id").String()
	if d.ETag == "" {
		d.ETag = gjson.GetBytes(body, "_etag").String()
	}
	d.Timestamp = gjson.GetBytes(body, "_ts").Int()
	return d
}

func itemOptions(ifMatch string) *azcosmos.ItemOptions {
	o := &azcosmos.ItemOptions{EnableContentResponseOnWrite: true}
	if ifMatch != "" {
		e := azcore.ETag(ifMatch)
		o.IfMatchEtag = &e
	}
	return o
}

// writeKey decides a write's partition key: the caller's, checked against
// the body's, or the body's (store.None when the body has none). It returns
// the context to send the write with (see sdkKey).
func (s *Store) writeKey(ctx context.Context, op, l, id string, cc *azcosmos.ContainerClient, doc []byte, given any) (context.Context, azcosmos.PartitionKey, error) {
	_, c, _ := s.container(op, l)
	cs, err := s.spec(ctx, op, cc, c, l)
	if err != nil {
		return ctx, azcosmos.PartitionKey{}, err
	}
	v, err := bodyKey(cs.paths, doc)
	if err != nil {
		return ctx, azcosmos.PartitionKey{}, &store.Error{Kind: store.ErrBadRequest, Op: op, Link: l, ID: id, Message: err.Error()}
	}
	if given != nil {
		if given, err = cs.pointKey(op, l, id, given); err != nil {
			return ctx, azcosmos.PartitionKey{}, err
		}
		gt, err := keyIdentity(op, l, given)
		if err != nil {
			return ctx, azcosmos.PartitionKey{}, withID(err, id)
		}
		if bt, _ := keyIdentity(op, l, v); gt != bt {
			return ctx, azcosmos.PartitionKey{}, &store.Error{Kind: store.ErrBadRequest, Op: op, Link: l, ID: id,
				Message: fmt.Sprintf("the partition key given (%s) differs from the document's (%s at %s)", gt, bt, cs.paths)}
		}
	}
	ctx, pk, err := sdkKey(ctx, v)
	if err != nil {
		return ctx, azcosmos.PartitionKey{}, &store.Error{Kind: store.ErrBadRequest, Op: op, Link: l, ID: id, Err: err}
	}
	return ctx, pk, nil
}

// Create adds a document.
func (s *Store) Create(ctx context.Context, l string, doc []byte, opts *store.WriteOptions) (*store.Document, error) {
	return s.write(ctx, "create", l, "", doc, opts)
}

// Upsert creates or replaces a document.
func (s *Store) Upsert(ctx context.Context, l string, doc []byte, opts *store.WriteOptions) (*store.Document, error) {
	return s.write(ctx, "upsert", l, "", doc, opts)
}

// Replace overwrites a document.
func (s *Store) Replace(ctx context.Context, l, id string, doc []byte, opts *store.WriteOptions) (*store.Document, error) {
	return s.write(ctx, "replace", l, id, doc, opts)
}

func (s *Store) write(ctx context.Context, op, l, id string, doc []byte, opts *store.WriteOptions) (*store.Document, error) {
	cc, _, err := s.container(op, l)
	if err != nil {
		return nil, err
	}
	bodyID, err := checkDoc(op, l, doc)
	if err != nil {
		return nil, err
	}
	if op == "replace" && bodyID != id {
		return nil, &store.Error{Kind: store.ErrBadRequest, Op: op, Link: l, ID: id, Message: fmt.Sprintf("the document's id is %q", bodyID)}
	}
	o := opt.Of(opts)
	ctx, pk, err := s.writeKey(ctx, op, l, bodyID, cc, doc, o.PartitionKey)
	if err != nil {
		return nil, err
	}
	var resp azcosmos.ItemResponse
	ctx = s.stamp(ctx, o.Epoch)
	switch op {
	case "create":
		resp, err = cc.CreateItem(ctx, pk, doc, itemOptions(o.IfMatch))
	case "upsert":
		resp, err = cc.UpsertItem(ctx, pk, doc, itemOptions(o.IfMatch))
	default:
		resp, err = cc.ReplaceItem(ctx, pk, id, doc, itemOptions(o.IfMatch))
	}
	if err != nil {
		return nil, mapErr(op, l, bodyID, err)
	}
	return document(resp.Value, resp.ETag), nil
}

// readKey decides a point operation's partition key and the context to
// send it with (see sdkKey). Without a key, it finds the document by id
// with a cross-partition query, as the embedded store does, and refuses an
// id that exists under several keys.
func (s *Store) readKey(ctx context.Context, op, l, id string, cc *azcosmos.ContainerClient, given any) (context.Context, azcosmos.PartitionKey, error) {
	if err := store.ValidateID(id); err != nil {
		se := err.(*store.Error)
		se.Op, se.Link = op, l
		return ctx, azcosmos.PartitionKey{}, se
	}
	if given == nil {
		var err error
		if given, err = s.findKey(ctx, op, l, id, cc); err != nil {
			return ctx, azcosmos.PartitionKey{}, err
		}
	} else if _, ok := partitionkey.Parts(given); ok {
		_, c, _ := s.container(op, l)
		cs, err := s.spec(ctx, op, cc, c, l)
		if err == nil {
			_, err = cs.pointKey(op, l, id, given)
		}
		if err != nil {
			return ctx, azcosmos.PartitionKey{}, err
		}
	}
	ctx, pk, err := sdkKey(ctx, given)
	if err != nil {
		return ctx, pk, &store.Error{Kind: store.ErrBadRequest, Op: op, Link: l, ID: id, Err: err}
	}
	return ctx, pk, nil
}

// findKey returns the partition-key value of the one document with this id.
func (s *Store) findKey(ctx context.Context, op, l, id string, cc *azcosmos.ContainerClient) (any, error) {
	_, c, _ := s.container(op, l)
	cs, err := s.spec(ctx, op, cc, c, l)
	if err != nil {
		return nil, err
	}
	var keys []any
	pager := cc.NewQueryItemsPager("SELECT * FROM c WHERE c.id = @id", azcosmos.NewPartitionKey(),
		&azcosmos.QueryOptions{QueryParameters: []azcosmos.QueryParameter{{Name: "@id", Value: id}}})
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return nil, mapErr(op, l, id, err)
		}
		for _, it := range page.Items {
			if gjson.GetBytes(it, "id").String() != id {
				continue
			}
			v, err := bodyKey(cs.paths, it)
			if err != nil {
				return nil, &store.Error{Kind: store.ErrUnavailable, Op: op, Link: l, ID: id, Message: "the service returned a document whose " + err.Error()}
			}
			keys = append(keys, v)
		}
	}
	switch len(keys) {
	case 0:
		return nil, &store.Error{Kind: store.ErrNotFound, Op: op, Link: l, ID: id}
	case 1:
		return keys[0], nil
	}
	return nil, &store.Error{Kind: store.ErrBadRequest, Op: op, Link: l, ID: id,
		Message: fmt.Sprintf("%d documents have this id under different partition-key values; give the partition key", len(keys))}
}

// Read returns a document.
func (s *Store) Read(ctx context.Context, l, id string, opts *store.ReadOptions) (*store.Document, error) {
	const op = "read"
	cc, _, err := s.container(op, l)
	if err != nil {
		return nil, err
	}
	var given any
	if opts != nil {
		given = opts.PartitionKey
	}
	ctx, pk, err := s.readKey(ctx, op, l, id, cc, given)
	if err != nil {
		return nil, err
	}
	resp, err := cc.ReadItem(ctx, pk, id, nil)
	if err != nil {
		return nil, s.itemErr(ctx, op, l, id, cc, err)
	}
	return document(resp.Value, resp.ETag), nil
}

// Delete removes a document.
func (s *Store) Delete(ctx context.Context, l, id string, opts *store.WriteOptions) error {
	const op = "delete"
	cc, _, err := s.container(op, l)
	if err != nil {
		return err
	}
	o := opt.Of(opts)
	ctx, pk, err := s.readKey(ctx, op, l, id, cc, o.PartitionKey)
	if err != nil {
		return err
	}
	if _, err := cc.DeleteItem(s.stamp(ctx, o.Epoch), pk, id, itemOptions(o.IfMatch)); err != nil {
		return s.itemErr(ctx, op, l, id, cc, err)
	}
	return nil
}

// itemErr maps an item error; a 404 is a missing document when the
// container exists, a missing collection otherwise.
func (s *Store) itemErr(ctx context.Context, op, l, id string, cc *azcosmos.ContainerClient, err error) error {
	mapped := mapErr(op, l, id, err)
	if notFound(err) {
		if _, cerr := cc.Read(ctx, nil); notFound(cerr) {
			return &store.Error{Kind: store.ErrCollectionNotFound, Op: op, Link: l, ID: id, Status: 404}
		}
	}
	return mapped
}

// pointKey checks the key of a point operation (or batch) against the
// container: of a hierarchical key, the full key (store.KeyParts), returned
// as its parts; any other key as it is. An error wraps store.ErrBadRequest.
func (cs *containerSpec) pointKey(op, l, id string, key any) (any, error) {
	if !cs.paths.Hierarchical() {
		return key, nil
	}
	parts, err := store.KeyParts(key, len(cs.paths), false)
	if err != nil {
		return nil, &store.Error{Kind: store.ErrBadRequest, Op: op, Link: l, ID: id, Err: err}
	}
	return partitionkey.CompositeKey(parts), nil
}

// withID names the document id in a *store.Error that names none.
func withID(err error, id string) error {
	var se *store.Error
	if errors.As(err, &se) && se.ID == "" {
		se.ID = id
	}
	return err
}
