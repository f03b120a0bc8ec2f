package resolver_test

import (
	"crypto/md5"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/docshard/docshard/resolver"
)

func ExampleKeyDef_Extract() {
	key := resolver.MustKeyDef(`/"department name"`)
	type employee struct {
		ID         string `json:"id"`
		Department string `json:"department name"`
	}
	for _, doc := range []any{
		[]byte(`{"id":"1","department name":"sales"}`),
		map[string]any{"id": "1", "department name": "sales"},
		employee{ID: "1", Department: "sales"},
	} {
		v, err := key.Extract(doc)
		fmt.Printf("%T: %v %v\n", doc, v, err)
	}
	_, err := key.Extract([]byte(`{"id":"2"}`))
	fmt.Println(errors.Is(err, resolver.ErrNoPartitionKey), err)
	// Output:
	// []uint8: sales <nil>
	// map[string]interface {}: sales <nil>
	// resolver_test.employee: sales <nil>
	// true resolver: no partition key at path /"department name"
}

func ExampleKeyDef_Extract_composite() {
	key := resolver.MustKeyDef("/region", "/shard")
	v, _ := key.Extract([]byte(`{"shard":7,"region":"eu","id":"x"}`))
	text, _ := resolver.KeyString(v)
	fmt.Printf("%#v %s\n", v, text)
	// Output:
	// partitionkey.CompositeKey{"eu", 7} ["eu",7]
}

// AppendKey reads the key's canonical text into a reused buffer: hashing a
// raw document's key allocates nothing.
func ExampleKeyDef_AppendKey() {
	key := resolver.MustKeyDef("/userId")
	buf := make([]byte, 0, 64)
	for _, doc := range []string{`{"userId":"alice"}`, `{"userId":1e21}`, `{"userId":"\u00e9"}`} {
		var err error
		buf, err = key.AppendKey(buf[:0], []byte(doc))
		fmt.Printf("%s %x %v\n", buf, md5.Sum(buf), err)
	}
	// Output:
	// alice 6384e2b2184bcbf58eccf10ca7a6563c <nil>
	// 1e+21 38a923a3cb27e544925237630940729f <nil>
	// é 66ddcd97cfdeabb2f6fb8a999b4bc76f <nil>
}

func ExampleParsePath() {
	p, err := resolver.ParsePath(`/address/"zip code"`)
	fmt.Printf("%q %v\n", p.Segments(), err)
	_, err = resolver.ParsePath("/tags[0]")
	fmt.Println(err)
	// Output:
	// ["address" "zip code"] <nil>
	// resolver: invalid definition: partitionKey = "/tags[0]": at byte 5: '[': array indexes are not part of a partition-key path (a key is a scalar)
}

func ExampleUnmarshal_errors() {
	_, err := resolver.Unmarshal([]byte(`{"kind":"no-such-kind"}`))
	var ce *resolver.ConfigError
	fmt.Println(errors.As(err, &ce), ce.Field)
	var k resolver.KeyDef
	err = json.Unmarshal([]byte(`["/region","/region"]`), &k)
	fmt.Println(err)
	// Output:
	// true kind
	// resolver: invalid definition: partitionKey[1] = "/region": repeats partitionKey[0] /region
}
