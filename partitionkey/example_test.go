package partitionkey_test

import (
	"fmt"

	"github.com/docshard/docshard/partitionkey"
)

// A key's placement text is what a hash ring hashes; its identity text is
// what a store compares: "1" and 1 are placed alike but are two keys.
func Example() {
	for _, key := range []any{"1", 1, 1.0, int64(1), partitionkey.CompositeKey{"eu", 7}, partitionkey.None} {
		place, err := partitionkey.PlacementText(key)
		if err != nil {
			place = "-"
		}
		identity, err := partitionkey.IdentityText(key)
		if err != nil {
			identity = "-"
		}
		fmt.Printf("%-22T placement %-8s identity %s\n", key, place, identity)
	}
	// Output:
	// string                 placement 1        identity "1"
	// int                    placement 1        identity 1
	// float64                placement 1        identity 1
	// int64                  placement 1        identity 1
	// partitionkey.CompositeKey placement ["eu",7] identity -
	// partitionkey.noneKey   placement -        identity undefined
}

// Lookup finds a key in raw JSON without decoding the document.
func ExamplePath_Lookup() {
	path, _ := partitionkey.ParsePath(`/address/"post code"`)
	doc := []byte(`{"id":"1","address":{"city":"Paris","post code":75001},"notes":"…"}`)
	v, err := path.Lookup(doc)
	fmt.Println(v.Kind(), string(v.JSON()), err)
	text, _ := v.AppendIdentity(nil)
	fmt.Println(string(text))
	// Output:
	// number 75001 <nil>
	// 75001
}
